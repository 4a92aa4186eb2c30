"""Snakemake script: the figures of one figure rule, each as PNG and SVG.

Output names: ``<figure>`` is the PNG and ``<figure>_svg`` the SVG.
"""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(
    0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src")
)  # scriptdir holds ".."

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only, no display: before anything imports pyplot

import pandas as pd  # noqa: E402

from spsa_bench.analysis import figures, tables  # noqa: E402
from spsa_bench.analysis.tuning import select_comparison  # noqa: E402
from spsa_bench.results.combine import (  # noqa: E402
    exit_on_read_error,
    open_benchmark_or_exit,
    open_schedules,
)

with exit_on_read_error("figures"):  # a refused or corrupt file: one line, exit 2
    out, params = snakemake.output, snakemake.params
    drawn = {}
    # With a tuning section, each sweep is drawn at its robust tuned setting only.
    tuning = snakemake.input.get("tuning")
    # lazily: the figures read the trajectories one cell at a time (or the final slice only)
    if snakemake.rule == "convergence_figures":
        ds = select_comparison(
            open_benchmark_or_exit("figures", snakemake.input.benchmark, ["elo_loss"], lazy=True),
            tuning,
        )
        # an arm identical to another (a sweep's hand-set member) is drawn once
        ds = tables.without_duplicates(ds, tables.duplicate_arms(ds))
        drawn["convergence"] = figures.convergence(ds)
        drawn["ecdf"] = figures.ecdf_pairs_to_target(ds, params.targets)
    elif snakemake.rule == "comparison_figures":
        ds = select_comparison(
            open_benchmark_or_exit("figures", snakemake.input.benchmark, ["elo_loss"], lazy=True),
            tuning,
        )
        # an arm identical to another (a sweep's hand-set member) is drawn once
        ds = tables.without_duplicates(ds, tables.duplicate_arms(ds))
        drawn["final_loss"] = figures.final_loss(ds)
        order = [str(v) for v in ds["optimizer"].values]
        table = pd.read_csv(snakemake.input.convergence)
        table = table[table["optimizer"].isin(order)]
        drawn["paired_difference"] = figures.paired_difference(table, params.baseline, order)
    elif snakemake.rule == "async_figures":
        schedules = open_schedules(snakemake.input.schedules, params.modes)
        drawn["async_staleness"] = figures.async_staleness(schedules)
        drawn["async_workers"] = figures.async_workers(schedules)
    else:
        raise ValueError(f"figures.py: no figures for rule {snakemake.rule!r}")
    for name, fig in drawn.items():
        figures.save(fig, out[name], out[f"{name}_svg"])
        print(f"{snakemake.rule}: {out[name]}", file=sys.stderr)
