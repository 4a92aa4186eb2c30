"""Table and figure of the framework study (:mod:`spsa_bench.studies.frameworks`).

The table is the c_end study's (:func:`spsa_bench.analysis.cend.cend_table`): one row
per (arm, c_end), the mean final Elo loss with its 95% Student-t interval over seeds,
the paired difference to ``fishtest`` (the study's first arm) with its interval and
Holm-adjusted p-value (the family: every non-baseline row), the shares of equal and
swapped integers, and the budget check of the main tables; plus each arm's rounding,
``pairs_per`` and ``c`` floor, and the paired difference to ``ob-all-off`` (OpenBench's
gains with every OpenBench rule off), which isolates each rule switched on alone.

A dataset with a dispatch panel (``dispatch_*`` variables: OpenBench's arm on several
``batch: openbench`` modes) gets a second table of the same columns (:func:`dispatch_table`:
Δ and Holm p against the panel's first arm, its own family), with each mode's
distribution and reporting; the CSV then holds both, told apart by ``panel`` (``rules``
or ``dispatch``), and the figure a second row. Without one, the outputs are as before.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis import stats
from spsa_bench.analysis.cend import (
    LEVEL,
    budget_verdicts,
    cend_figure,
    cend_table,
    study_markdown_table,
)
from spsa_bench.analysis.relaxation import study_verdict_lines
from spsa_bench.analysis.tables import interval

#: The arm every single OpenBench rule is switched on from.
ALL_OFF = "ob-all-off"

#: The per-(arm, c_end, seed) variables of a panel (the dispatch panel's carry ``dispatch_``).
PANEL_VARIABLES = ("final_elo_loss", "probe_equal_fraction", "probe_swapped_fraction")


def dispatch_dataset(ds: xr.Dataset) -> xr.Dataset | None:
    """The dispatch panel as a study dataset of its own (dim ``arm``, baseline its first
    arm), or ``None`` when ``ds`` has none."""
    if "dispatch" not in ds.dims:
        return None
    data = {
        name: ds[f"dispatch_{name}"]
        .rename(dispatch="arm")
        .drop_vars(
            [c for c in ds[f"dispatch_{name}"].coords if c not in ("dispatch", "c_end", "seed")]
        )
        for name in PANEL_VARIABLES
    }
    sub = xr.Dataset({**data, "start_elo_gap": ds["start_elo_gap"]})
    for name in ("dispatch_mode", "distribution", "reporting"):
        sub = sub.assign_coords({name: ("arm", ds[name].values)})
    attrs = dict(ds.attrs)
    attrs["baseline"] = str(sub["arm"].values[0])
    sub.attrs = attrs
    return sub


def dispatch_table(ds: xr.Dataset, verdicts: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """The dispatch panel as a tidy table (:func:`cend_table` on :func:`dispatch_dataset`:
    Δ, CI and Holm p against the panel's first arm), with each arm's batch mode,
    distribution and reporting; ``None`` without a panel."""
    sub = dispatch_dataset(ds)
    if sub is None:
        return None
    table = cend_table(sub, verdicts)
    for name in ("dispatch_mode", "distribution", "reporting"):
        table[name] = [sub[name].sel(arm=arm).item() for arm in table["arm"]]
    return table


def framework_table(ds: xr.Dataset, verdicts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The study as a tidy table, one row per (arm, c_end): :func:`cend_table` with the
    arm's rules and the paired difference to :data:`ALL_OFF` (``rule_diff_*``)."""
    table = cend_table(ds, verdicts)
    for name in ("description", "rounding", "pairs_per", "c_floor"):
        table[name] = [ds[name].sel(arm=arm).item() for arm in table["arm"]]
    loss = ds["final_elo_loss"]
    reference = ALL_OFF if ALL_OFF in ds["arm"].values else None
    columns = {"rule_diff_mean": [], "rule_diff_low": [], "rule_diff_high": []}
    for arm, c_end in zip(table["arm"], table["c_end"], strict=True):
        if reference is None or arm in (reference, str(ds.attrs["baseline"])):
            values = (np.nan,) * 3
        else:
            diff = loss.sel(arm=arm, c_end=c_end).values - loss.sel(arm=reference, c_end=c_end)
            values = stats.t_interval(np.asarray(diff), LEVEL)
        for column, value in zip(columns, values, strict=True):
            columns[column].append(value)
    for column, values in columns.items():
        table[column] = values
    return table


def framework_markdown(
    table: pd.DataFrame, ds: xr.Dataset, verdicts: pd.DataFrame | None = None
) -> str:
    """The table as Markdown, with the budget check, what it measures and under which
    assumptions."""
    verdicts = budget_verdicts(ds) if verdicts is None else verdicts
    baseline = str(ds.attrs["baseline"])
    pct = f"{LEVEL:.0%}"
    lines = [
        "# The framework study: Fishtest's SPSA beside OpenBench's (issue 31)",
        "",
        f"Scenario **{ds.attrs['scenario']}**, batch mode **{ds.attrs['batch_mode']}**, "
        f"{int(ds.attrs['num_pairs']):,} game pairs, noise {ds.attrs['noise']}, "
        f"{ds.sizes['seed']} seeds. Every arm probes every parameter with the c_end of the "
        "row (integer steps) and plays the same instances, schedule, flips, rounding "
        "uniforms and match draws (common random numbers), so differences are paired. "
        f"*Δ vs {baseline}*: mean per-seed difference in final Elo loss (negative: the arm "
        f"loses less), {pct} t-interval, Holm-adjusted p over all non-baseline rows. "
        f"*Δ vs {ALL_OFF}*: the same against OpenBench's gains with every OpenBench rule off, "
        "i.e. the effect of the row's rule alone. *equal* / *swapped*: share of jobs × "
        "integer parameters where the engines played the same integer / integers in the "
        "opposite order to the flip. Rules and sources: docs/frameworks.md.",
        "",
        f"Assumption: {ds.attrs['assumption']}.",
        "",
        'Budget check (as in the main tables, docs/benchmark.md, "Is the budget big enough?"):',
        "",
        *study_verdict_lines(verdicts, "winner"),
        "",
        study_markdown_table(
            table.assign(rule_ci=interval(table, "rule_diff_low", "rule_diff_high")),
            baseline,
            {"rounding": "rounding", "pairs_per": "pairs/iter", "c_floor": "c floor"},
            after_diff={"rule_diff_mean": f"Δ vs {ALL_OFF}", "rule_ci": f"Δ {pct} CI "},
        ),
    ]
    return "\n".join(lines) + "\n"


def dispatch_markdown(table: pd.DataFrame, ds: xr.Dataset) -> str:
    """The dispatch panel's section of the Markdown table."""
    baseline = str(table["arm"].iloc[0])
    pct = f"{LEVEL:.0%}"
    lines = [
        "## OpenBench's dispatch: SINGLE vs MULTIPLE, BULK vs BATCHED",
        "",
        "The `openbench` arm (every OpenBench rule on) on each `batch: openbench` mode of "
        f"the section. *Δ vs {baseline}*: mean per-seed difference in final Elo loss, {pct} "
        "t-interval, Holm-adjusted p over this panel's other rows. The budget check is the "
        "one above (same scenario and budget).",
        "",
        f"Assumption: {ds.attrs.get('dispatch_assumption', '')}.",
        "",
        study_markdown_table(
            table,
            baseline,
            {
                "dispatch_mode": "batch mode",
                "distribution": "distribution",
                "reporting": "reporting",
            },
        ),
    ]
    return "\n".join(lines) + "\n"


def _draw_panel(left, right, table: pd.DataFrame, baseline: str, start: float, c_end) -> None:
    """Final loss (``left``) and the paired difference to ``baseline`` (``right``) of
    every arm of ``table`` against c_end, as the c_end study's figure draws them."""
    from spsa_bench.analysis.figures import optimizer_palette

    arms = list(dict.fromkeys(table["arm"]))
    palette = optimizer_palette(arms)
    for arm in arms:
        rows = table[table["arm"] == arm]
        colour = palette[arm]
        left.plot(rows["c_end"], rows["loss_mean"], marker="o", color=colour, label=arm)
        # a loss cannot be negative: a normal interval of few seeds reaching below 0 is cut
        left.fill_between(rows["c_end"], np.maximum(rows["loss_low"], 0.0), rows["loss_high"],
                          color=colour, alpha=0.2)  # fmt: skip
        if arm != baseline:
            right.plot(rows["c_end"], rows["diff_mean"], marker="o", color=colour, label=arm)
            right.fill_between(rows["c_end"], rows["diff_low"], rows["diff_high"],
                               color=colour, alpha=0.2)  # fmt: skip
    left.axhline(start, color="0.3", linewidth=0.8, linestyle="--")
    right.axhline(0.0, color="0.3", linewidth=0.8)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(c_end, [f"{c:g}" for c in c_end])
        ax.set_xlabel("c_end (integer steps)")
        ax.axvspan(min(c_end) / 1.2, 1.0, color="0.9", zorder=0)
    left.set_ylabel("final Elo loss (mean, 95% CI)")
    right.set_ylabel(f"Δ final loss vs {baseline} (paired)")
    left.legend(fontsize="small", title="arm")


def framework_figure(ds: xr.Dataset):
    """Final loss (left) and paired difference to ``fishtest`` (right) against c_end:
    the c_end study's figure with this study's arms and title; with a dispatch panel, a
    second row for it (differences to its first arm)."""
    if "dispatch" in ds.dims:
        return _two_panel_figure(ds)
    fig = cend_figure(ds)
    fig.axes[0].get_legend().set_title("arm")
    fig.suptitle(
        f"{ds.attrs['scenario']}: Fishtest vs OpenBench rules, {ds.sizes['seed']} seeds "
        "(shaded: c_end < 1)",
        fontsize="medium",
    )
    return fig


def _two_panel_figure(ds: xr.Dataset):
    """The rules panel (top) and the dispatch panel (bottom)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(9.0, 7.0), constrained_layout=True)
    start = float(ds["start_elo_gap"].mean())
    c_end = [float(c) for c in ds["c_end"].values]
    _draw_panel(*axes[0], cend_table(ds), str(ds.attrs["baseline"]), start, c_end)
    table = dispatch_table(ds)
    _draw_panel(*axes[1], table, str(table["arm"].iloc[0]), start, c_end)
    axes[0][0].set_title("OpenBench's rules (study batch mode)", fontsize="small")
    axes[1][0].set_title("OpenBench's dispatch (batch: openbench)", fontsize="small")
    fig.suptitle(
        f"{ds.attrs['scenario']}: Fishtest vs OpenBench rules and dispatch, "
        f"{ds.sizes['seed']} seeds (shaded: c_end < 1)",
        fontsize="medium",
    )
    return fig


def write_report(ds: xr.Dataset, paths) -> list:
    """The framework study's NetCDF file, CSV and Markdown table, PNG and SVG figure at
    ``paths`` (in that order), each written atomically."""
    from spsa_bench.analysis.study_files import write_study_files

    verdicts = budget_verdicts(ds)
    table = framework_table(ds, verdicts)
    markdown = framework_markdown(table, ds, verdicts)
    dispatch = dispatch_table(ds, verdicts)
    if dispatch is not None:
        markdown += "\n" + dispatch_markdown(dispatch, ds)
        table = pd.concat(
            [table.assign(panel="rules"), dispatch.assign(panel="dispatch")], ignore_index=True
        )
    return write_study_files(ds, paths, table, markdown, framework_figure(ds))
