"""Snakemake script: the budget study (table, the budget figure and its NetCDF file)."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import json
import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from spsa_bench.cli.budget import write_study  # noqa: E402
from spsa_bench.config.loader import resolve  # noqa: E402
from spsa_bench.engine.budget_study import (  # noqa: E402
    print_progress,
    run_budget_study,
    study_settings,
)

config = resolve(json.loads(snakemake.params.settings))
ds = run_budget_study(config, study_settings(config), config.seed_range(), print_progress)
out = snakemake.output
write_study(ds, [out.nc, out.csv, out.md, out.png, out.svg])
