"""Snakemake script: every kind's macro-versus-micro gap table in one CSV."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job

import pandas as pd  # noqa: E402

table = pd.concat([pd.read_csv(path) for path in snakemake.input.gaps], ignore_index=True)
table.to_csv(snakemake.output[0], index=False)
print(f"{len(table)} rows from {len(snakemake.input.gaps)} kinds", file=sys.stderr)
