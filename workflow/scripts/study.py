"""Snakemake script: a study row's job (spsa_bench.studies.STUDIES), the row found by
the rule's name: its dataset, tables and figure."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only, no display: before anything imports pyplot

from spsa_bench.studies import STUDIES  # noqa: E402

(row,) = [row for row in STUDIES.values() if row.rule == snakemake.rule]
row.run_job(snakemake.params.settings, [snakemake.output[o.name] for o in row.outputs])
