"""Snakemake script: each table as an HTML page for the report (Snakemake's report shows
an HTML result inline, a CSV or Markdown one only as a download): the Markdown form of a
table when it has one (its verdicts included), else the CSV, row for row."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

from spsa_bench.analysis.html import TABLE_STYLE, csv_html, markdown_html  # noqa: E402
from spsa_bench.results.atomic import atomic_write  # noqa: E402

for name, source in snakemake.input.items():
    title = snakemake.params.titles[name]
    text = Path(source).read_text()
    if source.endswith(".md"):
        page = markdown_html(text, title, style=TABLE_STYLE)
    else:
        page = csv_html(text, title, intro=f"The table {source}, as written.")
    atomic_write(snakemake.output[name], lambda tmp, page=page: Path(tmp).write_text(page))
    print(f"{snakemake.output[name]}: from {source}", file=sys.stderr)
