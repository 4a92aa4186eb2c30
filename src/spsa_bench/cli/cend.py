"""``spsa-bench cend-study``: the configuration's c_end study (fishtest #1912, #1929).

Runs every arm of ``cend_study`` at every c_end on its parameter-block scenario
(:mod:`spsa_bench.engine.cend_study`) and writes, into ``--output-dir``:
``cend_study.nc`` (final loss and probe KPIs, dims arm x c_end x seed),
``cend.csv`` and ``cend.md`` (the table) and ``cend.png`` / ``cend.svg`` (the figure).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spsa_bench.cli.common import add_config, load, seeds

OUTPUTS = ("cend_study.nc", "cend.csv", "cend.md", "cend.png", "cend.svg")


def add_study_parser(sub, command: str, help_text: str, outputs, run_study) -> None:
    """A study's subcommand: ``--config``, ``--seeds``, ``--output-dir`` and ``--quiet``."""
    p = sub.add_parser(command, help=help_text)
    add_config(p)
    p.add_argument("--seeds", help="FIRST-LAST inclusive, e.g. 0-99 (default: the config's seeds)")
    p.add_argument("--output-dir", required=True, help=f"directory for {', '.join(outputs)}")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run_study)


def add_parser(sub) -> None:
    add_study_parser(
        sub,
        "cend-study",
        "final Elo loss against c_end for classic SPSA, delta: realized and min_c "
        "(the config's cend_study)",
        OUTPUTS,
        run,
    )


def run(args: argparse.Namespace) -> int:
    from spsa_bench.config.loader import ConfigError
    from spsa_bench.engine.cend_study import print_progress, run_cend_study, study_settings

    config = load(args)
    study = study_settings(config)
    if study is None:
        raise ConfigError("cend_study: this configuration has none (see docs/fishtest.md)")
    chosen = seeds(args, config)
    progress = None if args.quiet else print_progress
    ds = run_cend_study(config, study, chosen, progress=progress)
    paths = write_study(ds, [Path(args.output_dir) / name for name in OUTPUTS])
    if not args.quiet:
        print(f"c_end study: wrote {', '.join(str(p) for p in paths)}", file=sys.stderr)
    return 0


def write_outputs(ds, paths, table, markdown: str, figure) -> list[Path]:
    """A study's NetCDF file, CSV table, Markdown text and PNG and SVG figure at
    ``paths`` (in that order), each written atomically."""
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


def write_study(ds, paths) -> list[Path]:
    """The c_end study's NetCDF file, CSV and Markdown table, PNG and SVG figure at
    ``paths`` (in that order), each written atomically."""
    from spsa_bench.analysis.cend import cend_figure, cend_markdown, cend_table

    table = cend_table(ds)
    return write_outputs(ds, paths, table, cend_markdown(table, ds), cend_figure(ds))
