"""Snakemake script: the tuning protocol (tuning runs, tuned table and Markdown).

The configuration is resolved from the workflow's own config (not from a resolved
copy), so each swept arm keeps the record of its sweep.
"""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from spsa_bench.cli.tune import write_tuned  # noqa: E402
from spsa_bench.config.loader import resolve  # noqa: E402
from spsa_bench.engine.tuning import print_progress, run_tuning, tuning_settings  # noqa: E402
from spsa_bench.results.combine import open_benchmark  # noqa: E402

config = resolve(snakemake.config)
settings = tuning_settings(config)
ds = run_tuning(config, settings, progress=print_progress)
benchmark = open_benchmark(snakemake.input.benchmark, ["elo_loss"])
out = snakemake.output
write_tuned(ds, benchmark, settings.baseline_sweep, [out.nc, out.csv, out.md])
