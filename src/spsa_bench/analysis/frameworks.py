"""Table and figure of the framework study (:mod:`spsa_bench.studies.frameworks`).

The table is the c_end study's (:func:`spsa_bench.analysis.cend.cend_table`): one row
per (arm, c_end), the mean final Elo loss with its 95% Student-t interval over seeds,
the paired difference to ``fishtest`` (the study's first arm) with its interval and
Holm-adjusted p-value (the family: every non-baseline row), the shares of equal and
swapped integers, and the budget check of the main tables; plus each arm's rounding,
``pairs_per`` and ``c`` floor, and the paired difference to ``ob-all-off`` (OpenBench's
gains with every OpenBench rule off), which isolates each rule switched on alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis import stats
from spsa_bench.analysis.cend import LEVEL, budget_verdicts, cend_figure, cend_table
from spsa_bench.analysis.relaxation import study_verdict_lines
from spsa_bench.analysis.tables import interval, markdown_table

#: The arm every single OpenBench rule is switched on from.
ALL_OFF = "ob-all-off"


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
    t = table.copy()
    t["loss_ci"] = interval(t, "loss_low", "loss_high")
    t["diff_ci"] = interval(t, "diff_low", "diff_high")
    t["rule_ci"] = interval(t, "rule_diff_low", "rule_diff_high")
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
        markdown_table(
            t,
            {
                "arm": "arm",
                "rounding": "rounding",
                "pairs_per": "pairs/iter",
                "c_floor": "c floor",
                "c_end": "c_end",
                "n_seeds": "seeds",
                "loss_mean": "loss mean",
                "loss_ci": f"{pct} CI",
                "diff_mean": f"Δ vs {baseline}",
                "diff_ci": f"Δ {pct} CI",
                "p_holm": "Holm p",
                "rule_diff_mean": f"Δ vs {ALL_OFF}",
                "rule_ci": f"Δ {pct} CI ",
                "probe_equal": "equal",
                "probe_swapped": "swapped",
            },
        ),
    ]
    return "\n".join(lines) + "\n"


def framework_figure(ds: xr.Dataset):
    """Final loss (left) and paired difference to ``fishtest`` (right) against c_end:
    the c_end study's figure with this study's arms and title."""
    fig = cend_figure(ds)
    fig.axes[0].get_legend().set_title("arm")
    fig.suptitle(
        f"{ds.attrs['scenario']}: Fishtest vs OpenBench rules, {ds.sizes['seed']} seeds "
        "(shaded: c_end < 1)",
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
    return write_study_files(ds, paths, table, markdown, framework_figure(ds))
