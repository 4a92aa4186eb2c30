"""Table, safe concurrency and figure of the workers study (Fishtest-scale asynchrony).

The study runs the same arms and scenarios under an asynchronous worker pool of
several sizes and, at the same seeds, in the synchronous reference mode, so the
difference of final Elo loss (async minus sync) is paired seed by seed.

- :func:`workers_table` - one row per (scenario, arm, workers): the mean final
  loss with its 95% Student-t interval, the paired difference to sync with its
  interval and Holm-adjusted p-value (the family: every row), the schedule's
  staleness and pairs in flight, and ``within_margin``: the upper end of the
  difference's interval is at most the study's margin.
- :func:`safe_concurrency` - per (scenario, arm): the largest worker count up to
  which every pool is within the margin (the first failure ends the range).

The budget check of the main tables applies (:func:`spsa_bench.analysis.relaxation.study_verdicts`):
a scenario whose budget is below the predicted need of the grid's reference arm is NOT
RANKED ("budget below need", with the need and the budget in ``shortfall``), and no safe
concurrency is declared from it (``safe_workers`` empty, ``safe`` "NOT RANKED").
- :func:`workers_markdown` and :func:`workers_figure` render both.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis import relaxation, stats
from spsa_bench.analysis.tables import interval, markdown_table

LEVEL = 0.95
#: A panel's y axis becomes symlog when its values span more than this factor.
SPAN = 30.0


def _mean(values) -> float:
    x = np.asarray(values, dtype=np.float64)
    return float(np.nanmean(x)) if np.isfinite(x).any() else np.nan


#: What the safe-concurrency cell of a scenario below its budget's need says.
NOT_RANKED = "NOT RANKED (budget below need)"


def budget_verdicts(ds: xr.Dataset) -> pd.DataFrame:
    """The budget check of every scenario of the study at its budget (``num_pairs``)."""
    budget = int(ds.attrs["num_pairs"])
    return relaxation.study_verdicts(ds, [(s, budget) for s in ds["scenario"].values])


def workers_table(ds: xr.Dataset, verdicts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The study as a tidy table, one row per (scenario, arm, workers), with its
    scenario's budget check (``need_pairs``, ``budget_fraction``, ``ranked``,
    ``shortfall``; ``verdicts``: :func:`budget_verdicts`, computed when not given)."""
    margin = float(ds.attrs["margin"])
    loss = ds["final_elo_loss"]
    sync = ds["sync_final_elo_loss"]
    rows = []
    for scenario in ds["scenario"].values:
        for arm in ds["arm"].values:
            reference = sync.sel(scenario=scenario, arm=arm).values
            for workers in ds["workers"].values:
                values = loss.sel(scenario=scenario, arm=arm, workers=workers).values
                mean, low, high = stats.t_interval(values, LEVEL)
                # async minus sync at the same seed (> 0: the pool ends worse)
                difference = values - reference
                d_mean, d_low, d_high = stats.t_interval(difference, LEVEL)
                rows.append(
                    {
                        "scenario": str(scenario),
                        "arm": str(arm),
                        "kind": str(ds["kind"].sel(arm=arm).values),
                        "workers": int(workers),
                        "n_seeds": int(np.isfinite(values).sum()),
                        "n_paired": int(np.isfinite(difference).sum()),
                        "loss_mean": mean,
                        "loss_low": low,
                        "loss_high": high,
                        "loss_median": float(np.nanmedian(values))
                        if np.isfinite(values).any()
                        else np.nan,
                        "sync_mean": _mean(reference),
                        "diff_mean": d_mean,
                        "diff_low": d_low,
                        "diff_high": d_high,
                        "p": stats.paired_t_pvalue(difference),
                        "staleness_p50": _mean(ds["staleness_p50"].sel(workers=workers)),
                        "in_flight_mean": _mean(ds["in_flight_mean_fraction"].sel(workers=workers)),
                        "in_flight_max": _mean(ds["in_flight_max_fraction"].sel(workers=workers)),
                    }
                )
    table = pd.DataFrame(rows)
    table["p_holm"] = stats.holm(table["p"].to_numpy())
    # NaN (fewer than two paired seeds) compares False: not shown to be within the margin.
    table["within_margin"] = table["diff_high"] <= margin
    verdicts = budget_verdicts(ds) if verdicts is None else verdicts
    check = verdicts.set_index("scenario")[["need_pairs", "budget_fraction", "ranked", "shortfall"]]
    return table.join(check, on="scenario")


def safe_concurrency(ds: xr.Dataset, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (scenario, arm): the safe concurrency and the losses around it.

    ``safe_workers`` is the largest worker count W such that every tested
    count <= W is within the margin. The reading is monotone: the first count
    that fails ends the safe range even when a larger pool is within the margin
    again (those counts are listed in ``within_above``). ``safe_workers = 0``
    (label "none") when even the smallest tested pool fails; when no pool
    fails, W is the largest tested count and the label says so. A scenario NOT
    RANKED by the budget check has none: ``safe_workers`` empty, ``safe``
    :data:`NOT_RANKED`, no first failure read (``ranked`` and ``shortfall`` say why).
    """
    table = workers_table(ds) if table is None else table
    rows = []
    for (scenario, arm), group in table.groupby(["scenario", "arm"], sort=False):
        ranked = bool(group["ranked"].iloc[0])
        group = group.sort_values("workers")
        workers = group["workers"].to_numpy()
        within = group["within_margin"].to_numpy(dtype=bool)
        failing = np.flatnonzero(~within)
        first = int(failing[0]) if failing.size else workers.size
        safe = int(workers[first - 1]) if first > 0 else 0
        if first == 0:
            label = "none"
        elif first == workers.size:
            label = f"{safe} (largest tested)"
        else:
            label = str(safe)
        largest = group.iloc[-1]
        rows.append(
            {
                "scenario": scenario,
                "arm": arm,
                "safe_workers": safe if ranked else pd.NA,
                "safe": label if ranked else NOT_RANKED,
                "first_failing": int(workers[first]) if failing.size and ranked else np.nan,
                "within_above": " ".join(str(w) for w in workers[first + 1 :][within[first + 1 :]])
                if ranked
                else "",
                "sync_mean": float(largest["sync_mean"]),
                "max_workers": int(largest["workers"]),
                "loss_at_max": float(largest["loss_mean"]),
                "diff_at_max": float(largest["diff_mean"]),
                "ranked": ranked,
                "shortfall": str(group["shortfall"].iloc[0]),
            }
        )
    safe = pd.DataFrame(rows)
    safe["safe_workers"] = safe["safe_workers"].astype("Int64")
    return safe


def _safe_markdown(safe: pd.DataFrame, reference: str) -> str:
    """The safe concurrency as an arm x scenario grid, then its details."""
    s = safe.copy()
    s["first_failing"] = [
        "–" if np.isnan(w) else str(int(w)) for w in s["first_failing"].astype(float)
    ]
    s["within_above"] = s["within_above"].replace("", "–")
    grid = s.pivot(index="arm", columns="scenario", values="safe")
    grid = grid.reindex(
        index=list(dict.fromkeys(s["arm"])), columns=list(dict.fromkeys(s["scenario"]))
    ).reset_index()
    details = {
        "scenario": "scenario",
        "arm": "arm",
        "safe": "safe concurrency",
        "first_failing": "first failing",
        "within_above": "within again at",
        "sync_mean": f"{reference} loss",
        "max_workers": "largest pool",
        "loss_at_max": "loss there",
        "diff_at_max": "Δ vs sync there",
    }
    heading = {"arm": "arm", **{c: c for c in grid.columns if c != "arm"}}
    return markdown_table(grid, heading) + "\n\n" + markdown_table(s, details)


def _every_count_markdown(table: pd.DataFrame, reference: str, margin: float, pct: str) -> str:
    """One row per scenario, arm and pool size."""
    t = table.copy()
    t["loss_ci"] = interval(t, "loss_low", "loss_high")
    t["diff_ci"] = interval(t, "diff_low", "diff_high")
    t["within"] = np.where(t["within_margin"], "yes", "no")
    columns = {
        "scenario": "scenario",
        "arm": "arm",
        "workers": "workers",
        "n_seeds": "seeds",
        "loss_mean": "loss mean",
        "loss_ci": f"{pct} CI",
        "loss_median": "median",
        "sync_mean": f"{reference} loss",
        "diff_mean": "Δ vs sync",
        "diff_ci": f"Δ {pct} CI",
        "p_holm": "Holm p",
        "within": f"within {margin:g} Elo",
        "staleness_p50": "staleness p50",
        "in_flight_mean": "in flight mean",
        "in_flight_max": "in flight max",
    }
    return markdown_table(t, columns)


def workers_markdown(
    table: pd.DataFrame, safe: pd.DataFrame, ds: xr.Dataset, verdicts: pd.DataFrame | None = None
) -> str:
    """The budget check, safe concurrency, then the whole table, as Markdown with what they
    measure (``verdicts``: :func:`budget_verdicts`, computed when not given)."""
    verdicts = budget_verdicts(ds) if verdicts is None else verdicts
    reference = str(ds.attrs["reference"])
    margin = float(ds.attrs["margin"])
    pct = f"{LEVEL:.0%}"
    counts = ", ".join(str(int(w)) for w in ds["workers"].values)
    lines = [
        f"# Workers study: how many Fishtest workers a tune can use ({ds.attrs['batch_mode']})",
        "",
        f"Each arm tunes each scenario for {int(ds.attrs['num_pairs']):,} game pairs, once with an "
        f"asynchronous pool of {counts} workers (batch mode **{ds.attrs['batch_mode']}**) and "
        f"once in the synchronous reference mode **{reference}**, over {ds.sizes['seed']} seeds. "
        "At one seed both runs tune the same truth instance with the same games (common random "
        "numbers), so the difference is paired. *Δ vs sync*: mean over seeds of the final true "
        "Elo loss with the pool minus the same in the synchronous mode (> 0: the pool ends "
        f"worse), {pct} t-interval, Holm-adjusted p over all rows. *staleness p50*: median over "
        "jobs of the pairs that arrived while a job ran; *in flight*: pairs dispatched but not "
        "yet back at a job's dispatch, as a share of the budget (mean and max over jobs); both "
        "are means over seeds.",
        "",
        f"Margin rule: a pool is **within the margin** when the upper end of the {pct} interval "
        f"of Δ vs sync is at most **{margin:g} Elo**, i.e. the benchmark rules out, by a one-sided "
        "test at 2.5% (not adjusted for the number of rows), that it ends more than the margin "
        "worse than a synchronous tune of the same games. A pool with too few seeds for an "
        "interval is not within the margin.",
        "",
        f"Assumption: {ds.attrs['assumption']}.",
        "",
        "## Budget check",
        "",
        'As in the main tables (docs/benchmark.md, "Is the budget big enough?"), a '
        "scenario whose budget is below the predicted need of the grid's reference SPSA arm is "
        "NOT RANKED: its rows below are shown for the record and no safe concurrency is read "
        "from them.",
        "",
        *relaxation.study_verdict_lines(verdicts, "safe concurrency"),
        "",
        "## Safe concurrency",
        "",
        "*Safe concurrency* W: every tested pool of up to W workers is within the margin. The "
        "reading is monotone: the first worker count that fails ends the safe range, even if a "
        "larger pool is within the margin again (listed under *within again at*; such a recovery "
        "is read as noise). *none*: even the smallest pool tested fails; *(largest tested)*: no "
        "pool fails, so the safe range may go further than the study looked. With more workers "
        f"than W, expect the tune may end more than {margin:g} Elo worse than a synchronous tune "
        "of the same games: the benchmark cannot rule it out, and where the whole interval of Δ "
        "lies above the margin it is measurably worse.",
        "",
        _safe_markdown(safe, reference),
        "",
        "## Every worker count",
        "",
        _every_count_markdown(table, reference, margin, pct),
    ]
    return "\n".join(lines) + "\n"


def _y_scale(ax, values, small: float) -> str:
    """Symlog when ``values`` reach beyond ``SPAN`` times ``small`` (a positive value at the
    bottom of the range); linear within the decade below ``small``. Returns the scale's name."""
    from spsa_bench.analysis.figures import plain_log_ticks

    x = np.abs(np.asarray(values, dtype=np.float64))
    x = x[np.isfinite(x)]
    if not x.size or not small > 0 or x.max() <= SPAN * small:
        return "linear"
    ax.set_yscale("symlog", linthresh=float(10.0 ** np.floor(np.log10(small))))
    plain_log_ticks(ax, "y", minor=False)
    return "symlog"


def _smallest_positive(values) -> float:
    """The smallest positive finite value (NaN when there is none)."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x) & (x > 0)]
    return float(x.min()) if x.size else np.nan


def workers_figure(ds: xr.Dataset):
    """Final loss (top) and paired difference to sync (bottom) against workers, a column per scenario."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    from spsa_bench.analysis.figures import optimizer_dashes, optimizer_palette, panel_grid

    table = workers_table(ds)
    reference = str(ds.attrs["reference"])
    margin = float(ds.attrs["margin"])
    arms = [str(a) for a in ds["arm"].values]
    scenarios = [str(s) for s in ds["scenario"].values]
    workers = [int(w) for w in ds["workers"].values]
    palette, dashes = optimizer_palette(arms), optimizer_dashes(arms)
    fig, axes = panel_grid(
        2, len(scenarios), width=4.0, height=3.2, sharex=True, sharey="row", layout="constrained"
    )
    # The scales are set before drawing, so autoscaling pads in the scale's own space.
    shown = table[["loss_mean", "loss_low", "loss_high", "sync_mean"]].to_numpy()
    loss_scale = _y_scale(axes[0, 0], shown, _smallest_positive(table[["loss_mean", "sync_mean"]]))
    differences = table[["diff_mean", "diff_low", "diff_high"]].to_numpy()
    diff_scale = _y_scale(axes[1, 0], np.append(differences, margin), margin)
    for ax in axes.ravel():
        ax.set_xscale("log")
        ax.set_xticks(workers, [str(w) for w in workers])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.grid(True, alpha=0.3)
    for j, scenario in enumerate(scenarios):
        top, bottom = axes[0, j], axes[1, j]
        for arm in arms:
            rows = table[(table["scenario"] == scenario) & (table["arm"] == arm)]
            colour = palette[arm]
            top.plot(rows["workers"], rows["loss_mean"], marker="o", ms=3.5, lw=1.6,
                     color=colour, ls=dashes[arm])  # fmt: skip
            top.fill_between(
                rows["workers"], rows["loss_low"], rows["loss_high"], color=colour, alpha=0.18, lw=0
            )
            top.axhline(float(rows["sync_mean"].iloc[0]), color=colour, ls=":", lw=0.9, alpha=0.9)
            bottom.plot(rows["workers"], rows["diff_mean"], marker="o", ms=3.5, lw=1.6,
                        color=colour, ls=dashes[arm])  # fmt: skip
            bottom.fill_between(
                rows["workers"], rows["diff_low"], rows["diff_high"], color=colour, alpha=0.18, lw=0
            )
        bottom.axhline(0.0, color="0.3", lw=0.8)
        bottom.axhline(margin, color="0.3", lw=1.0, ls="--")
        bottom.annotate(f"margin {margin:g} Elo", (0.02, margin), xycoords=("axes fraction", "data"),
                        va="bottom", fontsize="small", color="0.3")  # fmt: skip
        top.set_title(scenario)
        bottom.set_xlabel("Fishtest workers (log scale)")
    # The loss is never negative; a band's lower end below zero is cut off.
    axes[0, 0].set_ylim(bottom=0.0)
    axes[0, 0].set_ylabel(f"final Elo loss [Elo] ({loss_scale} scale)")
    axes[1, 0].set_ylabel(f"Δ vs {reference} [Elo] (paired; {diff_scale} scale)")
    handles = [
        plt.Line2D([], [], color=palette[a], ls=dashes[a], marker="o", ms=3.5, lw=1.6, label=a)
        for a in arms
    ]
    handles.append(plt.Line2D([], [], color="0.3", ls=":", lw=0.9, label=f"{reference} (dotted)"))
    fig.legend(handles=handles, title="arm", fontsize="small", loc="outside right center")
    fig.suptitle(
        f"{ds.attrs['batch_mode']}: final Elo loss against the worker pool\n"
        f"(mean and {LEVEL:.0%} CI over {ds.sizes['seed']} seeds; dotted: {reference})",
        fontsize="medium",
    )
    return fig


def write_report(ds: xr.Dataset, paths) -> list:
    """The workers study's NetCDF file, CSV table, Markdown, PNG and SVG figure and the
    safe-concurrency CSV at ``paths`` (in that order), each written atomically."""
    from pathlib import Path

    from spsa_bench.analysis.study_files import write_study_files
    from spsa_bench.results.atomic import atomic_write

    verdicts = budget_verdicts(ds)
    table = workers_table(ds, verdicts)
    safe = safe_concurrency(ds, table)
    markdown = workers_markdown(table, safe, ds, verdicts)
    written = write_study_files(ds, paths[:5], table, markdown, workers_figure(ds))
    safe_path = Path(paths[5])
    atomic_write(safe_path, lambda tmp: safe.to_csv(tmp, index=False))
    return [*written, safe_path]
