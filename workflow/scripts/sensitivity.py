"""Snakemake script: the sensitivity figure and its table."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only, no display: before anything imports pyplot

from spsa_bench.analysis import figures  # noqa: E402
from spsa_bench.analysis.sensitivity import sensitivity_figure, sensitivity_table  # noqa: E402
from spsa_bench.results.atomic import atomic_write  # noqa: E402
from spsa_bench.results.combine import exit_on_read_error, open_benchmark_or_exit  # noqa: E402

with exit_on_read_error("sensitivity"):  # a refused or corrupt file: one line, exit 2
    out = snakemake.output
    ds = open_benchmark_or_exit(
        "sensitivity", snakemake.input.benchmark, ["elo_loss"], lazy=True
    )  # final losses only
    sweeps = {
        name: [(arm, dict(swept)) for arm, swept in arms]
        for name, arms in snakemake.params.sweeps.items()
    }
    table = sensitivity_table(ds, sweeps)
    atomic_write(out.table, lambda tmp: table.to_csv(tmp, index=False))
    figures.save(sensitivity_figure(table), out.sensitivity, out.sensitivity_svg)
    print(f"sensitivity: {len(table)} rows", file=sys.stderr)
