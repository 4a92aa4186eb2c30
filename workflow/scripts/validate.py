"""Snakemake script: macro-versus-micro validation of every configured arm (its own
hyperparameters) into results/validation/; fails the job if a gate fails."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(
    0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src")
)  # scriptdir holds ".."

from spsa_bench.config.loader import resolve  # noqa: E402
from spsa_bench.validation.run import validate_arms  # noqa: E402

config = resolve(snakemake.config)
output_dir = Path(snakemake.output.nc[0]).parent
outcomes = validate_arms(config, config.optimizers, output_dir)
for outcome in outcomes:
    print(outcome.line(), file=sys.stderr)
failed = [outcome.name for outcome in outcomes if not outcome.passed]
if failed:
    raise SystemExit(f"validation gate failed for {', '.join(failed)} (see {snakemake.log[0]})")
