"""Snakemake script: the tuned table and Markdown from the tuning runs
(``results/fishtest/tuning.nc``, which alone make the choice) and the benchmark's
final losses on the test seeds.
"""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from spsa_bench.cli.tune import write_tuned_tables  # noqa: E402
from spsa_bench.config.loader import resolve  # noqa: E402
from spsa_bench.config.sections.tuning import parse as tuning_settings  # noqa: E402
from spsa_bench.results.combine import (  # noqa: E402
    exit_on_read_error,
    open_benchmark_or_exit,
    open_tuning,
)

settings = tuning_settings(resolve(snakemake.config))
with exit_on_read_error("tuned"):  # a refused tuning.nc: one line naming it, exit 2
    ds = open_tuning(snakemake.input.tuning, settings)
# eagerly, as before the lazy default: one variable, read whole by the tables
benchmark = open_benchmark_or_exit("tuned", snakemake.input.benchmark, ["elo_loss"], lazy=False)
out = snakemake.output
write_tuned_tables(ds, benchmark, settings.baseline_sweep, out.csv, out.md)
