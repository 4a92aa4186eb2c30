"""Snakemake script: the tuning protocol's runs (every swept arm on every scenario and
batch mode at the tuning seeds), written to ``results/fishtest/tuning.nc``.

The sweep jobs replayed the tuning seeds beside their own (extra rows of the same
replays, rule simulate_sweep_<name>) and wrote each share's final Elo losses; this
job gathers them (spsa_bench.studies.tuning.gather_tuning) into the dataset that
``spsa-bench tune`` computes in one process (run_tuning), the same numbers bit for
bit. The configuration is resolved from the workflow's own config (not from a
resolved copy), so each swept arm keeps the record of its sweep.
"""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import json
import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from spsa_bench.config.loader import resolve  # noqa: E402
from spsa_bench.config.sections.tuning import parse as tuning_settings  # noqa: E402
from spsa_bench.results.atomic import write_atomic  # noqa: E402
from spsa_bench.studies.tuning import gather_tuning  # noqa: E402


def read_part(path: str) -> tuple[str, dict]:
    try:
        return path, json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        sys.exit(f"error: {path}: not a tuning part ({' '.join(str(error).split())})")


config = resolve(snakemake.config)
try:
    ds = gather_tuning(
        config, tuning_settings(config), [read_part(path) for path in snakemake.input.parts]
    )
except ValueError as error:
    sys.exit(f"error: {' '.join(str(error).split())}")
write_atomic(ds, snakemake.output.nc)
print(
    f"tuning_runs: {len(snakemake.input.parts)} sweep jobs' tuning losses gathered", file=sys.stderr
)
