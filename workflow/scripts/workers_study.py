"""Snakemake script: the workers study (tables, figure and its NetCDF file)."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from spsa_bench.cli.cend import run_study_job  # noqa: E402
from spsa_bench.cli.workers import write_study  # noqa: E402
from spsa_bench.engine import workers_study as study  # noqa: E402

out = snakemake.output
outputs = [out.nc, out.csv, out.md, out.png, out.svg, out.safe]
run_study_job(snakemake.params.settings, study, study.run_workers_study, write_study, outputs)
