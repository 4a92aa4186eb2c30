"""Snakemake script: the convergence and asynchronous-KPI tables (CSV and markdown)."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(
    0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src")
)  # scriptdir holds ".."

from spsa_bench.analysis import relaxation, tables  # noqa: E402
from spsa_bench.results.atomic import atomic_write  # noqa: E402
from spsa_bench.results.combine import exit_on_read_error, open_benchmark  # noqa: E402

out, baseline, targets = snakemake.output, snakemake.params.baseline, snakemake.params.targets
# lazily: the trajectories are read one cell at a time (memory independent of the grid)
try:
    ds = open_benchmark(snakemake.input[0], ["elo_loss", *tables.SCHEDULE_VARIABLES], lazy=True)
except ValueError as error:  # not a readable benchmark.nc: one line naming it, exit 2
    print(f"tables: {' '.join(str(error).split())}", file=sys.stderr)
    sys.exit(2)

with exit_on_read_error("tables"):  # a refused or corrupt file: one line, exit 2
    # predicted need and relaxation per cell, from the configuration benchmark.nc records
    relax = relaxation.relaxation_table(ds)
    convergence = tables.convergence_table(ds, baseline=baseline, targets=targets, relaxation=relax)
    # an arm identical to another (a sweep's hand-set member) is computed with the others
    # and shown once, with a footnote
    duplicates = tables.duplicate_arms(ds, baseline)
    convergence_md = tables.convergence_markdown(
        convergence, baseline=baseline, targets=targets, duplicates=duplicates
    )
    convergence = tables.shown_once(convergence, duplicates)
    atomic_write(
        out.convergence, lambda tmp: convergence.to_csv(tmp, index=False, float_format="%.6g")
    )
    atomic_write(out.convergence_md, lambda tmp: Path(tmp).write_text(convergence_md))

    kpis = tables.async_table(ds, optimizer=baseline)
    atomic_write(out.kpis, lambda tmp: kpis.to_csv(tmp, index=False, float_format="%.6g"))
    atomic_write(out.kpis_md, lambda tmp: Path(tmp).write_text(tables.async_markdown(kpis)))
    print(
        f"convergence: {len(convergence)} rows, {int(convergence['significant'].sum())} significant, "
        f"{int((~convergence['ranked']).sum())} in comparisons NOT RANKED; "
        f"async: {len(kpis)} batch modes",
        file=sys.stderr,
    )
