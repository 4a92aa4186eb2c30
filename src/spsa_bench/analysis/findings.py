"""The run's own conclusions (``results/findings.md``), computed from its tables.

:func:`findings_markdown` reads the tables' CSV files (:func:`read_tables`) and writes one
sentence per conclusion, each with its numbers and the table it comes from:

- in short: three lines of counts and names from the sections below (ranked and NOT
  RANKED comparisons, the lowest mean rank per batch mode, how often the lowest-loss arm
  beats the baseline after Holm's correction);
- which comparisons (scenario x batch mode) are ranked and which are NOT RANKED and why
  (``convergence.csv``: ``ranked``, ``shortfall``, the reference arm's need);
- the best arms: per batch mode the lowest mean rank over the ranked scenarios with its
  bootstrap interval (``ranks.csv``), and per ranked comparison the arm with the lowest
  mean final loss with its paired difference to the baseline and that difference's 95%
  interval (``convergence.csv``);
- the robust hyperparameters: each sweep's robust setting per batch mode (``tuned.csv``);
- the safe concurrency per scenario and arm, with the budget check (``workers_safe.csv``);
- the c_end and budget studies' answers, only where their budget check ranks them
  (``cend.csv``, ``budget_study.csv``).

The optional tables (tuning, the studies) are ``None`` when the configuration has no
such section; their paragraph then says so. Nothing here is a new measurement: the
numbers are the tables' and inherit their assumptions (docs/benchmark.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

#: The tables findings reads: {key: the file name under results/tables/}.
TABLES = {
    "convergence": "convergence.csv",
    "ranks": "ranks.csv",
    "tuned": "tuned.csv",
    "workers_safe": "workers_safe.csv",
    "cend": "cend.csv",
    "budget": "budget_study.csv",
    "frameworks": "frameworks.csv",
}
#: The tables every run has; the others are optional.
REQUIRED = ("convergence", "ranks")
#: What an optional table's absence means.
MISSING = {
    "tuned": "the configuration has no `tuning` section",
    "workers_safe": "the configuration has no `workers_study` section",
    "cend": "the configuration has no `cend_study` section",
    "budget": "the configuration has no `budget_study` section",
    "frameworks": "the configuration has no `framework_study` section",
}


#: The study tables findings reads: {study row key: (key of TABLES, the row's output name)}.
STUDY_TABLES = {
    "workers_study": ("workers_safe", "safe"),
    "cend_study": ("cend", "csv"),
    "budget_study": ("budget", "csv"),
    "framework_study": ("frameworks", "csv"),
}


def workflow_inputs(tuned: bool, study_keys) -> dict[str, str]:
    """The workflow paths of the tables findings reads ({key of :data:`TABLES`: path}): the
    tuned table when the configuration tunes (``tuned``), each study's table when its row
    key is in ``study_keys``."""
    from spsa_bench.studies import STUDIES

    tables = {key: f"results/tables/{TABLES[key]}" for key in REQUIRED}
    if tuned:
        tables["tuned"] = f"results/tables/{TABLES['tuned']}"
    for key, (name, output) in STUDY_TABLES.items():
        if key in study_keys:
            (tables[name],) = [o.path for o in STUDIES[key].outputs if o.name == output]
    return tables


def read_tables(paths: Mapping[str, str | Path | None]) -> dict[str, pd.DataFrame | None]:
    """The CSV tables at ``paths`` ({key of :data:`TABLES`: path, or None when not run})."""
    tables: dict[str, pd.DataFrame | None] = {}
    for key in TABLES:
        path = paths.get(key)
        if path is None:
            if key in REQUIRED:
                raise ValueError(f"findings need the {TABLES[key]} table")
            tables[key] = None
        else:
            table = pd.read_csv(path)
            if "shortfall" in table:  # empty when ranked: NaN as read back
                table["shortfall"] = (
                    table["shortfall"].astype(object).where(table["shortfall"].notna(), "")
                )
            tables[key] = table
    return tables


def _num(value: float) -> str:
    """A number to 3 significant digits, trailing zeros kept (0.100, not 0.1: a mean is
    not shown coarser than its interval), in plain notation from 0.0001 to 99,999."""
    if math.isinf(value):
        return "∞"
    if math.isnan(value):
        return "–"
    if value == 0:
        return "0"
    if 1e-4 <= abs(value) < 1e5:
        decimals = max(0, 2 - math.floor(math.log10(abs(float(f"{value:.3g}")))))
        return f"{value:.{decimals}f}"
    return f"{value:.2e}"


def _p(value: float) -> str:
    """A p-value: 2 significant digits, and "< 0.001" below 0.001 (more digits of a
    tail probability that far out would be false precision)."""
    if math.isnan(value):
        return "–"
    return "< 0.001" if value < 1e-3 else f"{value:#.2g}".rstrip(".")


def _ci(low: float, high: float) -> str:
    return f"[{_num(low)}, {_num(high)}]"


def _source(name: str) -> str:
    return f"(`results/tables/{name}`)"


def _truthy(values: pd.Series) -> pd.Series:
    """A boolean column as pandas reads it back (bool, or the strings True/False)."""
    return values.astype(str).str.lower() == "true"


#: The family-wise level of the convergence table's ``significant`` column (its
#: default), used when a table has no such column.
ALPHA = 0.05


def _delta_verdict(low: float, high: float, row: pd.Series) -> str:
    """Whether a paired Δ is distinguished from 0: its 95% interval (one comparison's)
    and, when the interval excludes 0, whether it stays significant after Holm's
    correction over the table (the ``significant`` column, or ``p_holm < ALPHA``): an
    interval that excludes 0 in a table of hundreds of comparisons can be chance."""
    if not (low > 0 or high < 0):
        return "includes 0: not distinguished"
    if _significant(row):
        return "excludes 0, and significant after Holm's correction over the table"
    return (
        "excludes 0, but not significant after Holm's correction over the table's "
        "comparisons: not distinguished"
    )


def ranking_section(convergence: pd.DataFrame) -> list[str]:
    """Which comparisons are ranked and which are NOT RANKED, and why."""
    src = _source(TABLES["convergence"])
    comparisons = convergence.drop_duplicates(["scenario", "batch_mode"])
    ranked = comparisons[_truthy(comparisons["ranked"])]
    budget = int(comparisons["budget_pairs"].iloc[0])
    lines = [
        "## Which comparisons are ranked",
        "",
        f"{len(ranked)} of {len(comparisons)} comparisons (scenario × batch mode) are ranked at "
        f"the budget of {budget:,} pairs; a comparison is ranked only when the budget covers the "
        "reference arm's predicted need and its mean loss relaxed (docs/benchmark.md, \"Is the "
        f'budget big enough?") {src}.',
        "",
    ]
    for row in comparisons.itertuples(index=False):
        cell = f"`{row.scenario}` / `{row.batch_mode}`"
        if str(row.ranked).lower() == "true":
            lines.append(
                f"- {cell}: ranked; the budget is {_num(row.reference_budget_fraction)} × the "
                f"{row.reference_need_pairs:,.0f} pairs `{row.need_reference}` needs."
            )
        else:
            lines.append(f"- {cell}: **NOT RANKED**: {row.shortfall}.")
    return lines


def _ranked_bests(convergence: pd.DataFrame) -> list[tuple[tuple[str, str], pd.Series]]:
    """``[((scenario, batch_mode), row)]``: each ranked comparison's arm with the lowest
    mean final loss, in the table's order."""
    ranked = convergence[_truthy(convergence["ranked"])]
    return [
        (key, cells.sort_values("final_loss_mean", kind="stable").iloc[0])
        for key, cells in ranked.groupby(["scenario", "batch_mode"], sort=False)
    ]


def _significant(row: pd.Series) -> bool:
    """Whether a row's paired Δ is significant after Holm's correction (the table's
    ``significant`` column, or ``p_holm < ALPHA`` without one)."""
    if "significant" in row.index and not pd.isna(row["significant"]):
        return str(row["significant"]).lower() == "true"
    return bool(row["p_holm"] < ALPHA)


def _names(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def summary_section(convergence: pd.DataFrame, ranks: pd.DataFrame) -> list[str]:
    """The run's answer in three lines, each a count or a name from the sections below
    it: what the budget lets the run rank, the lowest mean rank per batch mode, and in
    how many ranked comparisons the lowest-loss arm beats the baseline after Holm's
    correction."""
    lines = ["## In short", ""]
    comparisons = convergence.drop_duplicates(["scenario", "batch_mode"])
    ranked = _truthy(comparisons["ranked"])
    modes = list(dict.fromkeys(comparisons["batch_mode"]))
    sentence = f"- **Ranked**: {int(ranked.sum())} of {len(comparisons)} comparisons"
    unranked = comparisons[~ranked]
    if len(unranked):
        everywhere, partly = [], []
        for scenario, rows in unranked.groupby("scenario", sort=False):
            lacking = list(rows["batch_mode"])
            if set(lacking) == set(modes):
                everywhere.append(f"`{scenario}`")
            else:
                partly.append(f"`{scenario}` in " + _names([f"`{m}`" for m in lacking]))
        where = ([f"{_names(everywhere)} in every batch mode"] if everywhere else []) + partly
        relax = unranked["shortfall"].astype(str).str.contains("has not relaxed")
        why = (
            "the budget is below the reference arm's need"
            if not relax.any()
            else "the reference arm's loss has not relaxed within the budget"
            if relax.all()
            else "the budget is below the reference arm's need, or its loss has not relaxed"
        )
        sentence += f"; NOT RANKED: {_names(where)} ({why})"
    lines.append(sentence + '; "Which comparisons are ranked" below.')
    top = ranks[ranks["n_scenarios"] > 0].dropna(subset=["rank"])
    leaders = {
        mode: group.sort_values("rank", kind="stable").iloc[0]
        for mode, group in top.groupby("batch_mode", sort=False)
    }
    if leaders:
        arms = {row["arm"] for row in leaders.values()}
        if len(arms) == 1 and len(leaders) == len(modes):
            said = ", ".join(f"{_num(r['rank'])} in `{m}`" for m, r in leaders.items())
            best = f"`{arms.pop()}` in every batch mode ({said})"
        else:
            best = "; ".join(
                f"`{r['arm']}` in `{m}` ({_num(r['rank'])})" for m, r in leaders.items()
            )
        lines.append(
            f'- **Lowest mean rank** over the ranked scenarios: {best}; "The best arms" below.'
        )
    bests = [row for _, row in _ranked_bests(convergence)]
    if bests:
        own = [row for row in bests if pd.isna(row["diff_elo_ci_low"])]
        beaten = [row for row in bests if not pd.isna(row["diff_elo_ci_low"]) and _significant(row)]
        names = convergence.loc[convergence["diff_elo_ci_low"].isna(), "optimizer"].unique()
        baseline = f"the baseline `{names[0]}`" if len(names) == 1 else "the baseline"
        lines.append(
            f"- **Against {baseline}**: in {len(beaten)} of the {len(bests)} ranked "
            "comparisons the arm with the lowest mean final loss beats it after Holm's "
            f"correction, in {len(bests) - len(beaten) - len(own)} it is not distinguished "
            f"from it, and in {len(own)} the baseline itself has the lowest loss; "
            '"The best arms" below.'
        )
    return lines


def _rank_against(top: pd.Series, group: pd.DataFrame, baselines) -> str:
    """How the rank leader's interval sits against the baseline's (``baselines``: the
    convergence table's baseline, one name) and the runner-up's: separated only when the
    intervals do not overlap."""
    parts = []
    others = group[group["arm"] != top["arm"]].sort_values("rank", kind="stable")
    base = others[others["arm"].isin(list(baselines))]
    if len(baselines) == 1 and len(base):
        row = base.iloc[0]
        apart = top["rank_high"] < row["rank_low"]
        parts.append(
            f"`{row['arm']}` (the baseline) {_num(row['rank'])} "
            f"{_ci(row['rank_low'], row['rank_high'])}: "
            + ("separated" if apart else "the intervals overlap, not separated")
        )
    if len(others):
        row = others.iloc[0]
        if not len(base) or row["arm"] != base.iloc[0]["arm"]:
            apart = top["rank_high"] < row["rank_low"]
            parts.append(
                f"next `{row['arm']}` {_num(row['rank'])} {_ci(row['rank_low'], row['rank_high'])}"
                + ("" if apart else ", overlapping")
            )
    return f"; against {'; '.join(parts)}" if parts else ""


def _runner_up(cells: pd.DataFrame, best: pd.Series) -> str:
    """The arm with the next-lowest mean final loss in a comparison, for scale."""
    rest = cells[cells["optimizer"] != best["optimizer"]].sort_values(
        "final_loss_mean", kind="stable"
    )
    if not len(rest):
        return ""
    row = rest.iloc[0]
    return f" (next: `{row['optimizer']}`, {_num(row['final_loss_mean'])} Elo)"


def best_section(convergence: pd.DataFrame, ranks: pd.DataFrame) -> list[str]:
    """The best arm per batch mode (mean rank) and per ranked comparison (paired Δ)."""
    lines = ["## The best arms (ranked comparisons only)", ""]
    ranked_ranks = ranks[ranks["n_scenarios"] > 0].dropna(subset=["rank"])
    baselines = convergence.loc[convergence["diff_elo_ci_low"].isna(), "optimizer"].unique()
    for mode, group in ranked_ranks.groupby("batch_mode", sort=False):
        top = group.sort_values("rank").iloc[0]
        n = int(top["n_scenarios"])
        lines.append(
            f"- `{mode}`: `{top['arm']}` has the lowest mean rank, {_num(top['rank'])} "
            f"(95% bootstrap interval {_ci(top['rank_low'], top['rank_high'])}) over "
            f"{n} ranked scenario{'' if n == 1 else 's'}, mean final loss "
            f"{_num(top['mean_final_loss'])} Elo"
            f"{_rank_against(top, group, baselines)} {_source(TABLES['ranks'])}."
        )
    for (scenario, mode), best in _ranked_bests(convergence):
        cells = convergence[
            (convergence["scenario"] == scenario) & (convergence["batch_mode"] == mode)
        ]
        own = pd.isna(best["diff_elo_ci_low"])
        sentence = (
            f"- `{scenario}` / `{mode}`: lowest mean final loss `{best['optimizer']}`"
            f"{' (the baseline itself)' if own else ''}, {_num(best['final_loss_mean'])} Elo "
            f"{_ci(best['final_loss_ci_low'], best['final_loss_ci_high'])}"
            f"{_runner_up(cells, best)}"
        )
        if not own:
            low, high = best["diff_elo_ci_low"], best["diff_elo_ci_high"]
            verdict = _delta_verdict(low, high, best)
            sentence += (
                f"; paired Δ vs the baseline {_num(best['diff_elo_mean'])} Elo, 95% CI "
                f"{_ci(low, high)} ({verdict}), Holm p {_p(best['p_holm'])}"
            )
        lines.append(sentence + f" {_source(TABLES['convergence'])}.")
    if len(lines) == 2:
        lines.append(
            "No comparison is ranked (the section above says why), so no arm is named best "
            f"{_source(TABLES['convergence'])}."
        )
        return lines
    intro = (
        "Per batch mode the lowest mean rank over the ranked scenarios; per comparison the "
        "arm with the lowest mean final loss, picked from every arm (each sweep setting "
        "included) on the seeds it is measured on, so its loss is biased low (a winner's "
        "curse: `results/tables/tuned.csv` picks on held-out seeds instead); the next arm is "
        "named beside it for scale."
    )
    return [*lines[:2], intro, "", *lines[2:]]


def tuned_section(tuned: pd.DataFrame | None, convergence: pd.DataFrame | None = None) -> list[str]:
    """Each sweep's robust setting per batch mode, with its losses on the test seeds in
    the tuning family's scenarios: one table, a row per sweep and batch mode; a loss in
    a comparison the budget does not rank (``convergence``) is marked †."""
    lines = ["## Robust hyperparameters", ""]
    unranked: set[tuple[str, str]] = set()
    if convergence is not None:
        cells = convergence.drop_duplicates(["scenario", "batch_mode"])
        cells = cells[~_truthy(cells["ranked"])]
        unranked = set(zip(cells["scenario"], cells["batch_mode"], strict=True))
    if tuned is None:
        return [*lines, f"Not run: {MISSING['tuned']}."]
    robust = tuned[tuned["tuning"] == "robust"]
    family = robust[_truthy(robust["in_family"])]
    scenarios = list(dict.fromkeys(family["scenario"]))
    lines += [
        "Each sweep's robust setting in each batch mode, chosen on the tuning seeds, and its "
        "mean final loss on the test seeds in each scenario of the tuning family (Elo, "
        f"95% interval) {_source(TABLES['tuned'])}; *edge*: the setting is at the edge of "
        "its sweep, so the best may lie beyond it.",
        "",
        "| sweep | batch mode | robust setting | " + " | ".join(f"`{s}`" for s in scenarios) + " |",
        "|---|---|---|" + "---:|" * len(scenarios),
    ]
    marked = False
    for (sweep, mode), rows in robust.groupby(["sweep", "batch_mode"], sort=False):
        first = rows.iloc[0]
        edge = " (*edge*)" if str(first["at_edge"]).lower() == "true" else ""
        by_scenario = {r.scenario: r for r in rows[_truthy(rows["in_family"])].itertuples()}
        losses = [
            f"{_num(r.loss_mean)} {_ci(r.loss_low, r.loss_high)}"
            + (" †" if (name, mode) in unranked else "")
            if r is not None
            else "–"
            for name, r in ((name, by_scenario.get(name)) for name in scenarios)
        ]
        marked |= any(loss.endswith(" †") for loss in losses)
        lines.append(
            f"| `{sweep}` | `{mode}` | {first['setting']}{edge} | " + " | ".join(losses) + " |"
        )
    if marked:
        lines += [
            "",
            '† a comparison the budget does not rank ("Which comparisons are ranked"): its '
            "loss is shown, and it counts in the robust choice as the tuning family says, but "
            "no arm is ranked on it.",
        ]
    return lines


def workers_section(safe: pd.DataFrame | None) -> list[str]:
    """The safe concurrency per scenario and arm, NOT RANKED scenarios withheld."""
    lines = ["## Safe concurrency (workers study)", ""]
    if safe is None:
        return [*lines, f"Not run: {MISSING['workers_safe']}."]
    src = _source(TABLES["workers_safe"])
    if _truthy(safe["ranked"]).any():
        lines += [
            "An arm's safe concurrency W: every tested pool of up to W workers ends within the "
            "study's margin of a synchronous tune of the same games (the upper end of the 95% "
            "interval of its paired Δ vs sync at most the margin); *none*: even the smallest "
            "pool tested fails; in brackets the smallest pool that fails. Within the margin is "
            "not no worse: a pool inside it can still end measurably worse than sync (the "
            "margin, the pools tested and each pool's Δ: `results/tables/workers.md`).",
            "",
        ]
    for scenario, rows in safe.groupby("scenario", sort=False):
        first = rows.iloc[0]
        if str(first["ranked"]).lower() != "true":
            lines.append(
                f"- `{scenario}`: **NOT RANKED**, {first['shortfall']}; no safe concurrency is "
                f"declared for any arm {src}."
            )
            continue
        arms = "; ".join(
            f"`{r.arm}` {r.safe}{_first_failing(r)} (Δ vs sync at {r.max_workers} workers "
            f"{_num(r.diff_at_max)} Elo)"
            for r in rows.itertuples(index=False)
        )
        lines.append(f"- `{scenario}`: safe concurrency {arms} {src}.")
    return lines


def _first_failing(row) -> str:
    """`` [fails at 50]``: the smallest tested pool outside the margin, if any."""
    failing = getattr(row, "first_failing", float("nan"))
    return "" if pd.isna(failing) else f" [fails at {int(failing)}]"


def _arms_and_c_ends(table: pd.DataFrame) -> str:
    """``the arms `a`, `b` at c_end 0.25 and 2`` of a c_end or framework study table."""
    arms = _names([f"`{a}`" for a in dict.fromkeys(table["arm"])])
    c_ends = _names([f"{c:g}" for c in sorted(set(table["c_end"]))])
    return f"the arms {arms} at c_end {c_ends}"


def cend_section(cend: pd.DataFrame | None) -> list[str]:
    """The c_end study's answer: per c_end the arm with the lowest loss, when ranked."""
    lines = ["## The c_end study", ""]
    if cend is None:
        return [*lines, f"Not run: {MISSING['cend']}."]
    src = _source(TABLES["cend"])
    if str(cend["ranked"].iloc[0]).lower() != "true":
        return [
            *lines,
            f"**NOT RANKED** ({_arms_and_c_ends(cend)}, on the study's tune scenario: "
            f"`results/tables/cend.md`), {cend['shortfall'].iloc[0]}; no winner is read {src}.",
        ]
    return [*lines, *_best_per_c_end(cend, src, "the baseline")]


def _best_per_c_end(table: pd.DataFrame, src: str, reference: str, itself: str = "") -> list[str]:
    """One line per c_end of a ranked c_end or framework study table: the arm with the
    lowest mean final loss (the first in table order on a tie) and its paired Δ vs
    ``reference``, or ``itself`` when that arm is the reference."""
    lines = []
    for c_end, rows in table.groupby("c_end", sort=True):
        best = rows.sort_values("loss_mean", kind="stable").iloc[0]
        sentence = (
            f"- c_end {c_end:g}: lowest mean final loss `{best['arm']}`, "
            f"{_num(best['loss_mean'])} Elo {_ci(best['loss_low'], best['loss_high'])}"
        )
        if not pd.isna(best["diff_low"]):
            sentence += (
                f", Δ vs {reference} {_num(best['diff_mean'])} Elo, 95% CI "
                f"{_ci(best['diff_low'], best['diff_high'])}, Holm p {_p(best['p_holm'])}"
            )
        else:
            sentence += itself
        lines.append(f"{sentence} {src}.")
    return lines


def budget_section(budget: pd.DataFrame | None) -> list[str]:
    """The budget study's answer: per ranked (scenario, budget) the arm with the lowest
    loss (oracle or as configured); NOT RANKED cells named with their shortfall."""
    lines = ["## The budget study", ""]
    if budget is None:
        return [*lines, f"Not run: {MISSING['budget']}."]
    src = _source(TABLES["budget"])
    lines += [
        "Per scenario and budget, the arm with the lowest mean final loss. *As configured*: "
        "the arm's own settings; *oracle*: its swept setting chosen for that scenario and "
        "budget on the tuning seeds (the robust choices, one setting across the scenarios, "
        "are in the table). Δ: paired, vs the study's baseline, negative when an arm loses "
        "less.",
        "",
    ]
    shown = budget[budget["tuning"] != "robust"]
    for (scenario, pairs), rows in shown.groupby(["scenario", "budget"], sort=False):
        cell = f"`{scenario}` at {int(pairs):,} pairs"
        first = rows.iloc[0]
        if str(first["ranked"]).lower() != "true":
            lines.append(f"- {cell}: **NOT RANKED**, {first['shortfall']}; no winner {src}.")
            continue
        ordered = rows.sort_values("loss_mean", kind="stable")
        best = ordered.iloc[0]
        # rows with exactly the best mean loss (e.g. `spsa` as configured and the
        # baseline swept at its hand-set value: the same runs) are named together
        tied = ordered.iloc[1:][ordered["loss_mean"].iloc[1:] == best["loss_mean"]]
        sentence = f"- {cell}: lowest mean final loss {_budget_arm(best)}"
        if len(tied):
            sentence += ", tied with " + " and ".join(_budget_arm(r) for _, r in tied.iterrows())
        sentence += f", {_num(best['loss_mean'])} Elo {_ci(best['loss_low'], best['loss_high'])}"
        if not pd.isna(best["diff_low"]):
            if best["diff_low"] == 0 and best["diff_high"] == 0:
                sentence += f", the same loss as `{best['baseline']}` on every seed (Δ 0)"
            else:
                sentence += (
                    f", Δ vs `{best['baseline']}` {_num(best['diff_mean'])} Elo, 95% CI "
                    f"{_ci(best['diff_low'], best['diff_high'])}"
                )
        else:
            sentence += " (the baseline itself)"
        rival = ordered[
            (ordered["loss_mean"] > best["loss_mean"]) & ordered["diff_low"].notna()
            & ~((ordered["diff_low"] == 0) & (ordered["diff_high"] == 0))
        ]  # fmt: skip
        if len(rival):
            other = rival.iloc[0]
            sentence += (
                f"; next {_budget_arm(other)}, {_num(other['loss_mean'])} Elo, Δ vs "
                f"`{other['baseline']}` {_num(other['diff_mean'])} Elo, 95% CI "
                f"{_ci(other['diff_low'], other['diff_high'])}, Holm p {_p(other['p_holm'])}"
            )
        sentence += _robust_choice(budget, scenario, pairs)
        lines.append(f"{sentence} {src}.")
    return lines


def _robust_choice(budget: pd.DataFrame, scenario: str, pairs) -> str:
    """``; robust ...``: the lowest-loss arm of a budget cell among the robust choices
    (one setting for every scenario), with its Δ vs the baseline's robust choice."""
    robust = budget[
        (budget["scenario"] == scenario) & (budget["budget"] == pairs)
        & (budget["tuning"] == "robust")
    ].sort_values("loss_mean", kind="stable")  # fmt: skip
    if not len(robust):
        return ""
    best = robust.iloc[0]
    chosen_on = budget[budget["budget"] == pairs]
    across = (
        "one setting chosen across the study's scenarios, NOT RANKED ones included"
        if not _truthy(chosen_on["ranked"]).all()
        else "one setting for every scenario"
    )
    text = f"; robust ({across}): lowest {_budget_arm(best)}, {_num(best['loss_mean'])} Elo"
    if pd.isna(best["diff_low"]):
        return text + " (the baseline's)"
    return text + (
        f", Δ vs `{best['baseline']}` {_num(best['diff_mean'])} Elo, 95% CI "
        f"{_ci(best['diff_low'], best['diff_high'])}, Holm p {_p(best['p_holm'])}"
    )


def frameworks_section(frameworks: pd.DataFrame | None) -> list[str]:
    """The framework study's answer, only where its budget check ranks it: per c_end the
    rule or framework with the lowest loss and its Δ vs the study's reference arm."""
    lines = ["## The framework study (Fishtest's SPSA beside OpenBench's)", ""]
    if frameworks is None:
        return [*lines, f"Not run: {MISSING['frameworks']}."]
    src = _source(TABLES["frameworks"])
    ranked = frameworks[_truthy(frameworks["ranked"])]
    if not len(ranked):
        return [
            *lines,
            f"**NOT RANKED** ({_arms_and_c_ends(frameworks)}: `results/tables/frameworks.md`), "
            f"{frameworks['shortfall'].iloc[0]}; no framework or rule is read as better {src}.",
        ]
    return [*lines, *_best_per_c_end(ranked, src, "the reference", " (the reference itself)")]


def _budget_arm(row: pd.Series) -> str:
    """A budget study row's arm with how it was set: ``(oracle, r_scale=3)``, or
    ``(as configured)`` once when its setting says the same or nothing."""
    how = [str(row["tuning"])]
    setting = row.get("setting")
    if not pd.isna(setting) and str(setting) not in ("", how[0]):
        how.append(str(setting))
    return f"`{row['arm']}` ({', '.join(how)})"


def findings_markdown(tables: Mapping[str, pd.DataFrame | None]) -> str:
    """``results/findings.md`` from the tables of :func:`read_tables`."""
    convergence = tables["convergence"]
    sections = [
        summary_section(convergence, tables["ranks"]),
        ranking_section(convergence),
        best_section(convergence, tables["ranks"]),
        tuned_section(tables.get("tuned"), convergence),
        workers_section(tables.get("workers_safe")),
        cend_section(tables.get("cend")),
        budget_section(tables.get("budget")),
        frameworks_section(tables.get("frameworks")),
    ]
    head = [
        "# Findings of this run",
        "",
        "Computed by the workflow's `findings` rule from this run's tables (each sentence "
        "names the one its numbers come from); nothing here is measured anew. The numbers "
        "inherit the tables' modelling assumptions (the truth bowls, the noise, the worker "
        "pool), stated in docs/benchmark.md. A loss is the true Elo loss at the end of the "
        "budget, mean over seeds with its 95% interval; a paired Δ vs the baseline is "
        "positive when the arm ends closer to the peak (convergence table) or, in the "
        "studies, negative when it loses less.",
    ]
    body = [line for section in sections for line in ["", *section]]
    return "\n".join(head + body) + "\n"


def write_findings(
    paths: Mapping[str, str | Path | None],
    output: str | Path,
    html_output: str | Path | None = None,
) -> Path:
    """``findings.md`` at ``output`` and, given ``html_output``, its HTML rendering for the
    report (:func:`spsa_bench.analysis.html.markdown_html`), each written atomically, from
    the tables at ``paths``."""
    from spsa_bench.analysis.html import markdown_html
    from spsa_bench.results.atomic import atomic_write

    text = findings_markdown(read_tables(paths))
    output = Path(output)
    atomic_write(output, lambda tmp: Path(tmp).write_text(text))
    if html_output is not None:
        page = markdown_html(text, "Findings of this run")
        atomic_write(Path(html_output), lambda tmp: Path(tmp).write_text(page))
    return output
