"""Snakemake script: results/findings.md (and its HTML page for the report), the run's
conclusions computed from its tables (spsa_bench.analysis.findings)."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from spsa_bench.analysis.findings import TABLES, write_findings  # noqa: E402

tables = {key: snakemake.input.get(key) for key in TABLES}
write_findings(tables, snakemake.output.md, snakemake.output.html)
print(f"findings: from {', '.join(k for k, v in tables.items() if v)}", file=sys.stderr)
