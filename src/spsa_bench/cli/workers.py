"""``spsa-bench workers-study``: the configuration's workers study (fishtest #535).

Runs the ``workers_study`` arms and scenarios under its worker pool at every size
and in the synchronous reference mode (:mod:`spsa_bench.engine.workers_study`) and
writes, into ``--output-dir``: ``workers_study.nc``, ``workers.csv`` (every pool
size), ``workers_safe.csv`` (the safe concurrency), ``workers.md`` and
``workers.png`` / ``workers.svg``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

OUTPUTS = (
    "workers_study.nc", "workers.csv", "workers.md", "workers.png", "workers.svg",
    "workers_safe.csv",
)  # fmt: skip


def add_parser(sub) -> None:
    from spsa_bench.cli.cend import add_study_parser

    add_study_parser(
        sub,
        "workers-study",
        "final Elo loss against the number of Fishtest workers and the safe concurrency of "
        "each arm (the config's workers_study)",
        OUTPUTS,
        run,
    )


def run(args: argparse.Namespace) -> int:
    from spsa_bench.cli.cend import run_study_command
    from spsa_bench.engine import workers_study

    return run_study_command(args, workers_study, workers_study.run_workers_study, write_study,
                             OUTPUTS, "docs/asynchrony.md")  # fmt: skip


def write_study(ds, paths) -> list[Path]:
    """The workers study's NetCDF file, CSV table, Markdown, PNG and SVG figure and the
    safe-concurrency CSV at ``paths`` (in that order), each written atomically."""
    from spsa_bench.analysis.workers import (
        safe_concurrency,
        workers_figure,
        workers_markdown,
        workers_table,
    )
    from spsa_bench.cli.cend import write_outputs
    from spsa_bench.results.atomic import atomic_write

    table = workers_table(ds)
    safe = safe_concurrency(ds, table)
    markdown = workers_markdown(table, safe, ds)
    written = write_outputs(ds, paths[:5], table, markdown, workers_figure(ds))
    safe_path = Path(paths[5])
    atomic_write(safe_path, lambda tmp: safe.to_csv(tmp, index=False))
    return [*written, safe_path]
