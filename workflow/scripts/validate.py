"""Snakemake script: `spsa-bench validate --optimizer KIND` for every kind, into results/validation/."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1] / "src"))

from spsa_bench.cli.main import main  # noqa: E402

output_dir = str(Path(snakemake.output.nc[0]).parent)
for kind in snakemake.params.kinds:
    status = main(["validate", "--optimizer", kind, "--output", output_dir])
    if status != 0:
        raise SystemExit(f"spsa-bench validate --optimizer {kind} failed (status {status})")
