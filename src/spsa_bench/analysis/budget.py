"""Table and figure of the budget study (:mod:`spsa_bench.studies.budget`).

The table has one row per (scenario, budget, arm, tuning): an unswept arm has one
row (``as configured``), a swept arm one per choice (``oracle``: chosen per
scenario; ``robust``: one setting for every scenario of the study), each with the
setting chosen on the tuning seeds at that budget, the mean final Elo loss on the
test seeds with its 95% Student-t interval, and the paired difference to the
baseline arm (its choice made the same way) with its interval and Holm-adjusted
p-value (the family: every non-baseline row). The figure, the *budget figure*,
shows the final loss and the paired difference against the budget.

The budget check of the main tables applies (:func:`spsa_bench.analysis.relaxation.study_verdicts`):
a (scenario, budget) whose budget is below the predicted need of the grid's reference arm
on that scenario is NOT RANKED (``ranked`` False, ``shortfall`` "budget below need: ..."
with the need and the budget); no winner is read from it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis import relaxation, stats
from spsa_bench.analysis.tables import interval, markdown_table

LEVEL = 0.95
AS_CONFIGURED = "as configured"


def _setting_at_edge(ds: xr.Dataset, index: int) -> bool:
    """Whether setting ``index`` takes the smallest or largest value of its arm's sweep
    in some swept hyperparameter (the best may lie beyond the range swept)."""
    owner = ds["setting_arm"].values
    same = owner == owner[index]
    for name in ds.coords:
        if not str(name).startswith("swept_"):
            continue
        values = ds[name].values
        if values.dtype.kind != "f" or np.isnan(values[index]):
            continue
        sweep = values[same]
        if np.isfinite(sweep).sum() > 1 and values[index] in (np.nanmin(sweep), np.nanmax(sweep)):
            return True
    return False


def _row_choices(ds: xr.Dataset, arm: str) -> list[tuple[int, str]]:
    """The (tuning index, label) rows of an arm: both choices when it is tuned."""
    if int(ds["tuned"].sel(arm=arm)):
        return [(t, str(label)) for t, label in enumerate(ds["tuning"].values)]
    return [(0, AS_CONFIGURED)]


def _cell_row(ds: xr.Dataset, cell: dict, arm: str, t: int, label: str) -> dict:
    """One row: the arm's chosen setting at the cell and its test-seed results."""
    baseline = str(ds.attrs["baseline"])
    loss = ds["final_elo_loss"].sel(**cell)
    values = loss.sel(arm=arm).isel(tuning=t).values
    mean, low, high = stats.t_interval(values, LEVEL)
    index = int(ds["chosen_setting"].sel(arm=arm, **cell).isel(tuning=t))
    tuning_loss = ds["tuning_final_elo_loss"].sel(**cell).isel(setting=index).values
    is_baseline = arm == baseline
    difference = values - loss.sel(arm=baseline).isel(tuning=t).values
    d_mean, d_low, d_high = (np.nan,) * 3 if is_baseline else stats.t_interval(difference, LEVEL)
    tuned = label != AS_CONFIGURED
    return {
        "scenario": cell["scenario"],
        "budget": int(cell["budget"]),
        "games": int(ds["games"].sel(budget=cell["budget"])),
        "arm": arm,
        "kind": str(ds["kind"].sel(arm=arm).values),
        "tuning": label,
        "setting": str(ds["setting_value"].values[index]),
        "at_edge": tuned and _setting_at_edge(ds, index),
        "n_seeds": int(np.isfinite(values).sum()),
        "loss_mean": mean,
        "loss_low": low,
        "loss_high": high,
        "loss_median": float(np.median(values)),
        "tuning_median": float(np.median(tuning_loss)) if tuning_loss.size else np.nan,
        "baseline": baseline,
        "diff_mean": d_mean,
        "diff_low": d_low,
        "diff_high": d_high,
        "p": np.nan if is_baseline else stats.paired_t_pvalue(difference),
    }


def budget_verdicts(ds: xr.Dataset) -> pd.DataFrame:
    """The budget check of every (scenario, budget) of the study."""
    cells = [(s, int(b)) for s in ds["scenario"].values for b in ds["budget"].values]
    return relaxation.study_verdicts(ds, cells)


def budget_table(ds: xr.Dataset, verdicts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The study as a tidy table, one row per (scenario, budget, arm, tuning), with its
    cell's budget check (``need_pairs``, ``budget_fraction``, ``ranked``, ``shortfall``;
    ``verdicts``: :func:`budget_verdicts`, computed when not given)."""
    rows = []
    for scenario in ds["scenario"].values:
        for budget in ds["budget"].values:
            cell = {"scenario": str(scenario), "budget": int(budget)}
            for arm in ds["arm"].values:
                for t, label in _row_choices(ds, str(arm)):
                    rows.append(_cell_row(ds, cell, str(arm), t, label))
    table = pd.DataFrame(rows)
    table["p_holm"] = stats.holm(table["p"].to_numpy())
    verdicts = budget_verdicts(ds) if verdicts is None else verdicts
    check = verdicts.rename(columns={"budget_pairs": "budget"}).set_index(["scenario", "budget"])
    columns = ["need_pairs", "budget_fraction", "ranked", "shortfall"]
    return table.join(check[columns], on=["scenario", "budget"])


def _budget_label(pairs: int) -> str:
    """``10000`` -> ``10k``; budgets below 1000 pairs as they are."""
    return f"{pairs / 1000:g}k" if pairs >= 1000 else str(pairs)


def _summary_markdown(table: pd.DataFrame) -> str:
    """Mean final loss per (scenario, budget), a column per arm (oracle for tuned arms)."""
    shown = table[table["tuning"] != "robust"].copy()
    shown["cell"] = shown["loss_mean"].map(lambda v: f"{v:.3g}")
    shown.loc[shown["at_edge"], "cell"] += " (edge)"
    grid = shown.pivot(index=["scenario", "budget"], columns="arm", values="cell")
    grid = grid.reindex(columns=list(dict.fromkeys(shown["arm"]))).reset_index()
    ranked = shown.drop_duplicates(["scenario", "budget"]).set_index(["scenario", "budget"])
    grid["budget"] = [
        f"{b:,}" if ranked.loc[(s, b), "ranked"] else f"{b:,} (NOT RANKED)"
        for s, b in zip(grid["scenario"], grid["budget"], strict=True)
    ]
    heading = {"scenario": "scenario", "budget": "pairs"}
    heading.update({arm: arm for arm in grid.columns if arm not in heading})
    return markdown_table(grid, heading)


def budget_markdown(
    table: pd.DataFrame, ds: xr.Dataset, verdicts: pd.DataFrame | None = None
) -> str:
    """The table as Markdown, with the budget check, what it measures and under which
    assumptions (``verdicts``: :func:`budget_verdicts`, computed when not given)."""
    verdicts = budget_verdicts(ds) if verdicts is None else verdicts
    baseline = str(ds.attrs["baseline"])
    pct = f"{LEVEL:.0%}"
    t = table.copy()
    t["loss_ci"] = interval(t, "loss_low", "loss_high")
    t["diff_ci"] = interval(t, "diff_low", "diff_high")
    t["at_edge"] = np.where(t["at_edge"], "yes", "")
    first, count = int(ds.attrs["tuning_seeds_first"]), int(ds.attrs["tuning_seeds_count"])
    tuning = f"tuning seeds {first}..{first + count - 1}" if count else "no tuning seeds"
    lines = [
        "# Budget study: final loss against the budget",
        "",
        f"Batch mode **{ds.attrs['batch_mode']}**, {ds.sizes['seed']} test seeds, {tuning}. "
        "Each budget is its own run from the start (a decaying schedule depends on the "
        "budget), and every arm at one seed and budget plays the same schedule, flips and "
        "match draws (common random numbers), so the differences are paired. *loss*: mean "
        f"final true Elo loss on the test seeds with its {pct} t-interval. *Δ vs {baseline}*: "
        "mean per-seed difference to the baseline's setting chosen the same way (negative: "
        f"the row loses less), {pct} t-interval, Holm-adjusted p over all non-baseline rows. "
        "*tuning median*: the setting's median final loss on the tuning seeds. *edge*: the "
        "chosen setting is at an end of its sweep, so the best may lie beyond the range swept.",
        "",
        f"Choice: {ds.attrs['choice']}.",
        "",
        f"Assumption: {ds.attrs['assumption']}.",
        "",
        "## Budget check",
        "",
        'As in the main tables (docs/benchmark.md, "Is the budget big enough?"), a budget '
        "below the predicted need of the grid's reference SPSA arm on the scenario is NOT "
        "RANKED: its rows are shown for the record and no winner is read from them.",
        "",
        *relaxation.study_verdict_lines(verdicts, "winner"),
        "",
        "## Mean final loss (oracle choice for tuned arms)",
        "",
        _summary_markdown(table),
        "",
        "## Every row",
        "",
        markdown_table(
            t,
            {
                "scenario": "scenario",
                "budget": "pairs",
                "arm": "arm",
                "tuning": "tuning",
                "setting": "setting",
                "at_edge": "edge",
                "tuning_median": "tuning median",
                "n_seeds": "seeds",
                "loss_mean": "loss",
                "loss_ci": f"{pct} CI",
                "diff_mean": f"Δ vs {baseline}",
                "diff_ci": f"Δ {pct} CI",
                "p_holm": "Holm p",
            },
        ),
    ]
    return "\n".join(lines) + "\n"


def loss_floor(losses) -> float:
    """The bottom of a log-scale loss panel: half the smallest positive mean loss on it
    (1e-6 if none). A loss interval reaching below it (a normal interval of a few seeds
    can go below 0) is cut there, so that the means, not the band, set the scale."""
    values = np.asarray(losses, dtype=np.float64)
    positive = values[np.isfinite(values) & (values > 0)]
    return float(positive.min()) / 2 if positive.size else 1e-6


def _draw_arm(top, bottom, rows, colour, dash, baseline: bool, floor: float) -> None:
    """One arm on a scenario's panels: the loss (top) and Δ (bottom) against the budget,
    the oracle (or only) choice with its band (cut at ``floor``, :func:`loss_floor`),
    the robust choice dashed."""
    for tuning, group in rows.groupby("tuning", sort=False):
        robust = tuning == "robust"
        style = {"color": colour, "ls": "--" if robust else dash, "lw": 1.0 if robust else 1.6}
        top.plot(group["budget"], group["loss_mean"], marker="o", ms=3.5, **style)
        edge = group[group["at_edge"]]
        top.plot(edge["budget"], edge["loss_mean"], "o", ms=8, mfc="none", color=colour)
        if robust:
            continue
        top.fill_between(group["budget"], np.maximum(group["loss_low"], floor),
                         group["loss_high"], color=colour, alpha=0.18, lw=0)  # fmt: skip
        if not baseline:
            bottom.plot(group["budget"], group["diff_mean"], marker="o", ms=3.5, **style)
            bottom.fill_between(group["budget"], group["diff_low"], group["diff_high"],
                                color=colour, alpha=0.18, lw=0)  # fmt: skip


def budget_figure(ds: xr.Dataset):
    """The budget figure: final loss (top) and paired difference to the baseline
    (bottom) against the budget, log x axis, a column per scenario."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    from spsa_bench.analysis.figures import (
        optimizer_dashes,
        optimizer_palette,
        panel_grid,
        plain_log_ticks,
    )

    table = budget_table(ds)
    baseline = str(ds.attrs["baseline"])
    arms = [str(a) for a in ds["arm"].values]
    scenarios = [str(s) for s in ds["scenario"].values]
    budgets = [int(b) for b in ds["budget"].values]
    palette, dashes = optimizer_palette(arms), optimizer_dashes(arms)
    fig, axes = panel_grid(
        2, len(scenarios), width=4.0, height=3.2, sharex=True, layout="constrained"
    )
    for j, scenario in enumerate(scenarios):
        top, bottom = axes[0, j], axes[1, j]
        start = float(ds["start_elo_gap"].sel(scenario=scenario).mean())
        floor = loss_floor([*table.loc[table["scenario"] == scenario, "loss_mean"], start])
        for arm in arms:
            rows = table[(table["scenario"] == scenario) & (table["arm"] == arm)]
            _draw_arm(top, bottom, rows, palette[arm], dashes[arm], arm == baseline, floor)
        top.axhline(start, color="0.3", lw=0.8, ls=":")
        top.annotate("mean loss at the start", (0.02, start), xycoords=("axes fraction", "data"),
                     va="top", fontsize="small", color="0.3")  # fmt: skip
        top.set_yscale("log")
        top.set_ylim(bottom=floor)
        plain_log_ticks(top, "y")
        top.set_title(scenario)
        bottom.axhline(0.0, color="0.3", lw=0.8)
        bottom.set_xlabel("budget (game pairs, log scale)")
    for ax in axes.ravel():
        ax.set_xscale("log")
        ax.set_xticks(budgets, [_budget_label(b) for b in budgets])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.grid(True, alpha=0.3)
    axes[0, 0].set_ylabel("final Elo loss [Elo] (log scale)")
    axes[1, 0].set_ylabel(f"Δ vs {baseline} [Elo] (paired)")
    handles = [plt.Line2D([], [], color=palette[a], ls=dashes[a], lw=1.6, label=a) for a in arms]
    handles += [
        plt.Line2D([], [], color="0.3", ls="--", lw=1.0, label="robust choice"),
        plt.Line2D([], [], color="0.3", ls="", marker="o", mfc="none", label="at the sweep's edge"),
    ]
    fig.legend(handles=handles, title="arm", fontsize="small", loc="outside right center")
    fig.suptitle(
        f"{ds.attrs['batch_mode']}: final Elo loss against the budget, tuned arms at the "
        f"setting chosen per budget on held-out seeds\n(mean and {LEVEL:.0%} CI over "
        f"{ds.sizes['seed']} test seeds; solid: per-scenario choice)",
        fontsize="medium",
    )
    return fig


def write_report(ds: xr.Dataset, paths) -> list:
    """The budget study's NetCDF file, CSV and Markdown table, PNG and SVG figure at
    ``paths`` (in that order), each written atomically."""
    from spsa_bench.analysis.study_files import write_study_files

    verdicts = budget_verdicts(ds)
    table = budget_table(ds, verdicts)
    markdown = budget_markdown(table, ds, verdicts)
    return write_study_files(ds, paths, table, markdown, budget_figure(ds))
