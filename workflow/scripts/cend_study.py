"""Snakemake script: the c_end study (table, figure and its NetCDF file)."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import json
import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from spsa_bench.cli.cend import write_study  # noqa: E402
from spsa_bench.config.loader import resolve  # noqa: E402
from spsa_bench.engine.cend_study import print_progress, run_cend_study, study_settings  # noqa: E402

config = resolve(json.loads(snakemake.params.settings))
study = study_settings(config)
ds = run_cend_study(config, study, config.seed_range(), progress=print_progress)
out = snakemake.output
write_study(ds, [out.nc, out.csv, out.md, out.png, out.svg])
