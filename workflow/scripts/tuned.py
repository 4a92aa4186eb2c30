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
from spsa_bench.results.cf import open_labelled  # noqa: E402
from spsa_bench.results.combine import open_benchmark_or_exit  # noqa: E402

settings = tuning_settings(resolve(snakemake.config))
with open_labelled(snakemake.input.tuning) as tuning:
    ds = tuning.load()
# eagerly, as before the lazy default: one variable, read whole by the tables
benchmark = open_benchmark_or_exit("tuned", snakemake.input.benchmark, ["elo_loss"], lazy=False)
out = snakemake.output
write_tuned_tables(ds, benchmark, settings.baseline_sweep, out.csv, out.md)
