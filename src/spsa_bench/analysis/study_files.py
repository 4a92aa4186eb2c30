"""Writing a study's files: its NetCDF dataset, CSV table, Markdown text and PNG and
SVG figure, each atomically (a unique temporary file renamed into place)."""

from __future__ import annotations

from pathlib import Path


def write_study_files(ds, paths, table, markdown: str, figure) -> list[Path]:
    """``ds``, ``table``, ``markdown`` and ``figure`` at ``paths`` (in that order: .nc,
    .csv, .md, .png, .svg), each written atomically; the figure is closed after."""
    import matplotlib.pyplot as plt

    from spsa_bench.results.atomic import atomic_write, write_atomic

    nc, csv, md, png, svg = paths = [Path(path) for path in paths]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(ds, nc)
    atomic_write(csv, lambda tmp: table.to_csv(tmp, index=False))
    atomic_write(md, lambda tmp: Path(tmp).write_text(markdown))
    for path, kind in ((png, "png"), (svg, "svg")):
        atomic_write(path, lambda tmp, kind=kind: figure.savefig(tmp, format=kind, dpi=110))
    plt.close(figure)
    return paths
