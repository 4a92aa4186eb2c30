"""``spsa-bench cend-study``: the configuration's c_end study (fishtest #1912, #1929).

Runs every arm of ``cend_study`` at every c_end on its parameter-block scenario
(:mod:`spsa_bench.engine.cend_study`) and writes, into ``--output-dir``:
``cend_study.nc`` (final loss and probe KPIs, dims arm x c_end x seed),
``cend.csv`` and ``cend.md`` (the table) and ``cend.png`` / ``cend.svg`` (the figure).
"""

from __future__ import annotations

import argparse
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
    from spsa_bench.engine import cend_study

    return run_study_command(args, cend_study, cend_study.run_cend_study, write_study, OUTPUTS,
                             "docs/fishtest.md")  # fmt: skip


def run_study_command(args, module, run_study, write, outputs, doc: str, check=None) -> int:
    """A study's subcommand: the configuration's study (``module.study_settings``; refused
    when it has none, pointing to ``doc``), ``check(study, seeds)`` if given, then
    ``run_study`` on the seeds with ``module.print_progress`` and ``write`` of its
    ``outputs`` into ``--output-dir``."""
    from spsa_bench.config.loader import ConfigError

    config = load(args)
    study = module.study_settings(config)
    if study is None:
        raise ConfigError(f"{module.STUDY_KEY}: this configuration has none (see {doc})")
    chosen = seeds(args, config)
    if check is not None:
        check(study, chosen)
    ds = run_study(config, study, chosen, progress=None if args.quiet else module.print_progress)
    paths = write(ds, [Path(args.output_dir) / name for name in outputs])
    if not args.quiet:
        module.print_progress(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def run_study_job(settings: str, module, run_study, write, outputs) -> list[Path]:
    """A study's workflow job: the study of ``settings`` (the rule's canonical JSON
    configuration) run on its seeds with progress, ``write`` to ``outputs``."""
    import json

    from spsa_bench.config.loader import resolve

    config = resolve(json.loads(settings))
    study = module.study_settings(config)
    ds = run_study(config, study, config.seed_range(), progress=module.print_progress)
    return write(ds, outputs)


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
