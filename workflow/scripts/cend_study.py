"""Snakemake script: the c_end study (table, figure and its NetCDF file)."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from spsa_bench.cli.cend import run_study_job, write_study  # noqa: E402
from spsa_bench.engine import cend_study  # noqa: E402

out = snakemake.output
outputs = [out.nc, out.csv, out.md, out.png, out.svg]
run_study_job(
    snakemake.params.settings, cend_study, cend_study.run_cend_study, write_study, outputs
)
