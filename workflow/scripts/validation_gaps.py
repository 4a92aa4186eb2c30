"""Snakemake script: every kind's macro-versus-micro gap table in one CSV."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(
    0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src")
)  # scriptdir holds ".."

import pandas as pd  # noqa: E402

from spsa_bench.results.atomic import atomic_write  # noqa: E402

table = pd.concat([pd.read_csv(path) for path in snakemake.input.gaps], ignore_index=True)
atomic_write(snakemake.output[0], lambda tmp: table.to_csv(tmp, index=False))
print(f"{len(table)} rows from {len(snakemake.input.gaps)} kinds", file=sys.stderr)
