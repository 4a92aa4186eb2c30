"""Snakemake script: the tuning protocol's runs (every swept arm on every scenario and
batch mode at the tuning seeds), written to ``results/fishtest/tuning.nc``.

They need nothing of the benchmark's seeds, so the rule runs beside the simulations.
The configuration is resolved from the workflow's own config (not from a resolved
copy), so each swept arm keeps the record of its sweep.
"""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from spsa_bench.config.loader import resolve  # noqa: E402
from spsa_bench.config.sections.tuning import parse as tuning_settings  # noqa: E402
from spsa_bench.results.atomic import write_atomic  # noqa: E402
from spsa_bench.studies.tuning import print_progress, run_tuning  # noqa: E402

config = resolve(snakemake.config)
ds = run_tuning(config, tuning_settings(config), progress=print_progress)
write_atomic(ds, snakemake.output.nc)
