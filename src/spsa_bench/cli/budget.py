"""``spsa-bench budget-study``: the configuration's budget study.

Runs every arm of ``budget_study`` at every budget on its scenarios, each swept arm
at the settings chosen on the tuning seeds at that budget
(:mod:`spsa_bench.engine.budget_study`), and writes, into ``--output-dir``:
``budget_study.nc`` (dims arm x tuning x budget x scenario x seed, with the tuning
runs and the choices), ``budget_study.csv`` and ``budget_study.md`` (the table) and
``budget_study.png`` / ``budget_study.svg`` (the budget figure).
"""

from __future__ import annotations

import argparse
from pathlib import Path

OUTPUTS = (
    "budget_study.nc", "budget_study.csv", "budget_study.md", "budget_study.png",
    "budget_study.svg",
)  # fmt: skip


def add_parser(sub) -> None:
    from spsa_bench.cli.cend import add_study_parser

    add_study_parser(
        sub,
        "budget-study",
        "final Elo loss against the budget for every arm, swept arms tuned per budget on "
        "held-out seeds (the config's budget_study)",
        OUTPUTS,
        run,
    )


def run(args: argparse.Namespace) -> int:
    from spsa_bench.cli.cend import run_study_command
    from spsa_bench.engine import budget_study

    return run_study_command(args, budget_study, budget_study.run_budget_study, write_study,
                             OUTPUTS, "docs/benchmark.md", check=_held_out)  # fmt: skip


def _held_out(study, chosen: range) -> None:
    """``--seeds`` may not reach into the tuning seeds: the test seeds stay held out."""
    from spsa_bench.config.loader import ConfigError
    from spsa_bench.engine.tuning import seed_overlap

    shared = seed_overlap(chosen, study.tuning_seeds or range(0))
    if len(shared):
        raise ConfigError(
            f"--seeds = {chosen.start}-{chosen.stop - 1}: overlaps budget_study.tuning_seeds "
            f"(at {shared.start}..{shared.stop - 1}); the test seeds must be held out of the choice"
        )


def write_study(ds, paths) -> list[Path]:
    """The budget study's NetCDF file, CSV and Markdown table, PNG and SVG figure at
    ``paths`` (in that order), each written atomically."""
    from spsa_bench.analysis.budget import budget_figure, budget_markdown, budget_table
    from spsa_bench.cli.cend import write_outputs

    table = budget_table(ds)
    return write_outputs(ds, paths, table, budget_markdown(table, ds), budget_figure(ds))
