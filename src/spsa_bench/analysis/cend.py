"""Table and figure of the c_end study (:mod:`spsa_bench.studies.cend`).

The table has one row per (arm, c_end): the mean final Elo loss with its 95%
Student-t interval over seeds, the paired difference to the baseline arm (the
study's first) with its interval and Holm-adjusted p-value (the family: every
non-baseline row), and the shares of equal and swapped integers the worker
played. The figure shows the loss and the paired difference against c_end.

The budget check of the main tables applies (:func:`spsa_bench.analysis.relaxation.study_verdicts`):
when the study's budget is below the predicted need of the grid's reference arm on its
scenario, every row is NOT RANKED (``ranked`` False, ``shortfall`` "budget below need: ..."
with the need and the budget) and no winner is read from the table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis import relaxation, stats
from spsa_bench.analysis.tables import interval, markdown_table

LEVEL = 0.95


def budget_verdicts(ds: xr.Dataset) -> pd.DataFrame:
    """The budget check of the study's one comparison (its scenario at its budget)."""
    return relaxation.study_verdicts(ds, [(ds.attrs["scenario"], int(ds.attrs["num_pairs"]))])


def cend_table(ds: xr.Dataset, verdicts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The study as a tidy table, one row per (arm, c_end), with the budget check
    (``need_pairs``, ``budget_fraction``, ``ranked``, ``shortfall``; ``verdicts``:
    :func:`budget_verdicts`, computed when not given)."""
    baseline = str(ds.attrs["baseline"])
    loss = ds["final_elo_loss"]
    rows = []
    for arm in ds["arm"].values:
        for c_end in ds["c_end"].values:
            values = loss.sel(arm=arm, c_end=c_end).values
            mean, low, high = stats.t_interval(values, LEVEL)
            difference = values - loss.sel(arm=baseline, c_end=c_end).values
            is_baseline = str(arm) == baseline
            d_mean, d_low, d_high = (
                (np.nan,) * 3 if is_baseline else stats.t_interval(difference, LEVEL)
            )
            rows.append(
                {
                    "arm": str(arm),
                    "c_end": float(c_end),
                    "n_seeds": int(np.isfinite(values).sum()),
                    "loss_mean": mean,
                    "loss_low": low,
                    "loss_high": high,
                    "loss_median": float(np.nanmedian(values)),
                    "diff_mean": d_mean,
                    "diff_low": d_low,
                    "diff_high": d_high,
                    "p": np.nan if is_baseline else stats.paired_t_pvalue(difference),
                    "probe_equal": float(
                        np.nanmean(ds["probe_equal_fraction"].sel(arm=arm, c_end=c_end))
                    ),
                    "probe_swapped": float(
                        np.nanmean(ds["probe_swapped_fraction"].sel(arm=arm, c_end=c_end))
                    ),
                }
            )
    table = pd.DataFrame(rows)
    table["p_holm"] = stats.holm(table["p"].to_numpy())
    verdict = (budget_verdicts(ds) if verdicts is None else verdicts).iloc[0]
    for column in ("need_pairs", "budget_fraction", "ranked", "shortfall"):
        table[column] = verdict[column]
    return table


def cend_markdown(table: pd.DataFrame, ds: xr.Dataset, verdicts: pd.DataFrame | None = None) -> str:
    """The table as Markdown, with the budget check, what it measures and under which
    assumptions (``verdicts``: :func:`budget_verdicts`, computed when not given)."""
    verdicts = budget_verdicts(ds) if verdicts is None else verdicts
    baseline = str(ds.attrs["baseline"])
    pct = f"{LEVEL:.0%}"
    lines = [
        "# The c_end study: equal and swapped integers (fishtest #1912, #1929)",
        "",
        f"Scenario **{ds.attrs['scenario']}**, batch mode **{ds.attrs['batch_mode']}**, "
        f"{int(ds.attrs['num_pairs']):,} game pairs, noise {ds.attrs['noise']}, worker rounding "
        f"**{ds.attrs['rounding']}**, {ds.sizes['seed']} seeds. Every arm probes every parameter "
        "with the c_end of the row (integer steps); the truth instance of a seed is the same in "
        "every row (common random numbers), so the differences are paired. "
        f"*Δ vs {baseline}*: mean of the per-seed difference in final Elo loss (negative: the "
        f"arm loses less), {pct} t-interval, Holm-adjusted p over all non-baseline rows. "
        "*equal* / *swapped*: share of jobs × parameters where the two engines played the same "
        "integer / integers in the opposite order to the flip.",
        "",
        f"Assumption: {ds.attrs['assumption']}.",
        "",
        'Budget check (as in the main tables, docs/benchmark.md, "Is the budget big enough?"):',
        "",
        *relaxation.study_verdict_lines(verdicts, "winner"),
        "",
        study_markdown_table(table, baseline, after_loss={"loss_median": "median"}),
    ]
    return "\n".join(lines) + "\n"


def study_markdown_table(
    table: pd.DataFrame,
    baseline: str,
    labels: dict[str, str] | None = None,
    *,
    after_loss: dict[str, str] | None = None,
    after_diff: dict[str, str] | None = None,
) -> str:
    """The Markdown table of a study table (:func:`cend_table`'s columns): the arm, its
    ``labels`` columns, c_end, seeds, the mean final loss and its :data:`LEVEL`
    t-interval, the ``after_loss`` columns, the paired difference to ``baseline`` (mean,
    interval, Holm p), the ``after_diff`` columns, then the shares of equal and swapped
    integers; each mapping is column -> header, and an interval ``[low, high]`` is made
    of the ``*_low`` and ``*_high`` columns."""
    pct = f"{LEVEL:.0%}"
    t = table.copy()
    t["loss_ci"] = interval(t, "loss_low", "loss_high")
    t["diff_ci"] = interval(t, "diff_low", "diff_high")
    columns = {
        "arm": "arm",
        **(labels or {}),
        "c_end": "c_end",
        "n_seeds": "seeds",
        "loss_mean": "loss mean",
        "loss_ci": f"{pct} CI",
        **(after_loss or {}),
        "diff_mean": f"Δ vs {baseline}",
        "diff_ci": f"Δ {pct} CI",
        "p_holm": "Holm p",
        **(after_diff or {}),
        "probe_equal": "equal",
        "probe_swapped": "swapped",
    }
    return markdown_table(t, columns)


def cend_figure(ds: xr.Dataset):
    """Final loss (left) and paired difference to the baseline (right) against c_end."""
    import matplotlib.pyplot as plt

    from spsa_bench.analysis.figures import optimizer_palette

    table = cend_table(ds)
    baseline = str(ds.attrs["baseline"])
    arms = [str(a) for a in ds["arm"].values]
    palette = optimizer_palette(arms)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.6), constrained_layout=True)
    for arm in arms:
        rows = table[table["arm"] == arm]
        colour = palette[arm]
        left.plot(rows["c_end"], rows["loss_mean"], marker="o", color=colour, label=arm)
        # a loss cannot be negative: a normal interval of few seeds reaching below 0 is cut
        left.fill_between(
            rows["c_end"], np.maximum(rows["loss_low"], 0.0), rows["loss_high"], color=colour,
            alpha=0.2,
        )  # fmt: skip
        if arm != baseline:
            right.plot(rows["c_end"], rows["diff_mean"], marker="o", color=colour, label=arm)
            right.fill_between(
                rows["c_end"], rows["diff_low"], rows["diff_high"], color=colour, alpha=0.2
            )
    start = float(ds["start_elo_gap"].mean())
    left.axhline(start, color="0.3", linewidth=0.8, linestyle="--")
    left.annotate("mean loss at the start", (0.02, start), xycoords=("axes fraction", "data"),
                  va="bottom", fontsize="small", color="0.3")  # fmt: skip
    right.axhline(0.0, color="0.3", linewidth=0.8)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ds["c_end"].values, [f"{c:g}" for c in ds["c_end"].values])
        ax.set_xlabel("c_end (integer steps)")
        ax.axvspan(ds["c_end"].values.min() / 1.2, 1.0, color="0.9", zorder=0)
    left.set_ylabel("final Elo loss (mean, 95% CI)")
    right.set_ylabel(f"Δ final loss vs {baseline} (paired)")
    left.legend(fontsize="small", title="variant")
    fig.suptitle(
        f"{ds.attrs['scenario']}: worker rounding {ds.attrs['rounding']}, "
        f"{ds.sizes['seed']} seeds (shaded: c_end < 1)",
        fontsize="medium",
    )
    return fig


def write_report(ds: xr.Dataset, paths) -> list:
    """The c_end study's NetCDF file, CSV and Markdown table, PNG and SVG figure at
    ``paths`` (in that order), each written atomically."""
    from spsa_bench.analysis.study_files import write_study_files

    verdicts = budget_verdicts(ds)
    table = cend_table(ds, verdicts)
    markdown = cend_markdown(table, ds, verdicts)
    return write_study_files(ds, paths, table, markdown, cend_figure(ds))
