"""Snakemake script: the shipped calibration's dataset copy, table and figure."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(
    0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src")
)  # scriptdir holds ".."

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from spsa_bench.analysis.calibration import write_shipped_report  # noqa: E402

out = snakemake.output
write_shipped_report([out.nc, out.csv, out.md, out.png, out.svg])
