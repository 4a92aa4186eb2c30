"""Snakemake script: performance profile, aggregated runtime ECDF and rank table."""
# ruff: noqa: F821 - `snakemake` is defined by Snakemake's script preamble

import sys
from pathlib import Path

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: SIM115 - lives as long as the job
sys.path.insert(0, str(Path(snakemake.scriptdir).resolve().parents[1] / "src"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # files only, no display: before anything imports pyplot

import numpy as np  # noqa: E402

from spsa_bench.analysis import figures, ranking, relaxation, tables  # noqa: E402
from spsa_bench.analysis.tuning import select_comparison  # noqa: E402
from spsa_bench.results.atomic import atomic_write  # noqa: E402
from spsa_bench.results.combine import exit_on_read_error, open_benchmark_or_exit  # noqa: E402

with exit_on_read_error("ranking"):  # a refused or corrupt file: one line, exit 2
    out = snakemake.output
    # With a tuning section, each sweep takes part at its robust tuned setting only.
    ds = open_benchmark_or_exit("ranking", snakemake.input.benchmark, ["elo_loss"], lazy=True)
    ds = select_comparison(ds, snakemake.input.get("tuning"))
    # The profile and the ranks read the final losses many times: the last checkpoint in
    # memory; the hits and the relaxation read the trajectories one cell at a time.
    final = ds.isel(pairs=[-1]).load()
    # the comparisons the budget supports (the configuration benchmark.nc records), before
    # anything is written: a file without that configuration is refused in one line
    budget = float(ds["pairs"].values[-1])
    cells = relaxation.relaxation_table(ds, curves=False)
    verdicts = relaxation.problem_verdicts(cells, snakemake.params.baseline, budget)
    # an arm identical to another (a sweep's hand-set member) is shown once; it is not
    # another competitor, so the ranks leave it out (counted, it pushed every arm that
    # lost to its twin down one rank: 12 arms shown with ranks up to 13)
    duplicates = tables.duplicate_arms(final, snakemake.params.baseline)
    profile = ranking.performance_profile(final, np.logspace(0, 3, 121))
    profile = tables.shown_once(profile, duplicates, "arm")
    atomic_write(out.profile_csv, lambda tmp: profile.to_csv(tmp, index=False))
    figures.save(
        ranking.profile_figure(profile), out.performance_profile, out.performance_profile_svg
    )
    ecdf = ranking.aggregated_ecdf(
        tables.without_duplicates(ds, duplicates), snakemake.params.targets
    )
    figures.save(
        ranking.aggregated_ecdf_figure(ecdf, snakemake.params.targets),
        out.aggregated_ecdf,
        out.aggregated_ecdf_svg,
    )
    distinct = tables.without_duplicates(final, duplicates)
    ranks = ranking.rank_table(distinct, verdicts=verdicts)
    ranks_md = ranking.rank_markdown(ranks)
    if duplicates:
        counted = "the ranks leave the repeat out (it is not another competitor)"
        ranks_md += "\n" + tables.duplicates_note(duplicates, counted) + "\n"
    atomic_write(out.ranks, lambda tmp: ranks.to_csv(tmp, index=False))
    atomic_write(out.ranks_md, lambda tmp: Path(tmp).write_text(ranks_md))
    print(
        f"ranking: {len(profile)} profile points, {len(ranks)} ranks, "
        f"{int((~verdicts['ranked']).sum())} of {len(verdicts)} comparisons NOT RANKED",
        file=sys.stderr,
    )
