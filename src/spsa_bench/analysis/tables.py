"""The benchmark tables, from the combined dataset (``results/benchmark.nc``).

:func:`convergence_table` - one row per optimizer x batch mode x scenario:
final Elo loss (mean with t-interval, median, 10% and 90% quantiles), the
paired difference of final Elo against the baseline arm (mean, t-interval,
p-value, Holm-adjusted p-value across the table, significance mark, and the
seeds a paired t-test would need to resolve a difference of ``SEEDS_DELTA``
Elo) and COCO-style runtimes to the Elo-loss targets; given the cells'
:func:`~spsa_bench.analysis.relaxation.relaxation_table`, also each arm's predicted
need, budget fraction and relaxation, each comparison's verdict (ranked, or NOT
RANKED with its shortfall) and the rank within the ranked comparisons.

:func:`async_table` - one row per batch mode: medians over seeds of the
per-seed schedule KPIs and summaries of the worker pool.

Both return tidy :class:`pandas.DataFrame` objects; :func:`markdown` renders
them with a caption and notes.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis import stats

BOOTSTRAP_SEED = 20261122
#: Mean paired difference (Elo) and power for the ``seeds_needed`` column.
SEEDS_DELTA = 0.05
SEEDS_POWER = 0.8


def _arm_signature(ds: xr.Dataset, arm: str) -> tuple:
    """An arm's kind and hyperparameters: its value of every coordinate along
    ``optimizer`` (NaN, an unset hyperparameter of another kind, as ``None``)."""
    names = sorted(str(n) for n, c in ds.coords.items() if c.dims == ("optimizer",))
    values = []
    for name in names:
        if name == "optimizer":
            continue
        value = ds[name].sel(optimizer=arm).values.item()
        values.append((name, None if isinstance(value, float) and math.isnan(value) else value))
    return tuple(values)


def duplicate_arms(ds: xr.Dataset, baseline: str | None = None) -> dict[str, str]:
    """``{arm: the arm it repeats}``: the arms of ``ds`` that are another arm again.

    Arm b repeats arm a when both have the same ``kind`` and the same value of every
    hyperparameter coordinate along ``optimizer``, and their final Elo losses are equal
    bit for bit in every cell and seed (NaN where neither ran). Such arms run the same
    optimizer on the same random streams (common random numbers: the streams are keyed
    by entropy, seed and purpose, not by the arm's name), e.g. the default grid's
    ``spsa-sweep-r_scale-1``, the sweep's hand-set member, is ``spsa``. Of each group
    of identical arms the first in the dataset's order is kept, ``baseline`` if it is
    one of them (by default the ``baseline`` of the configuration ``ds`` records in its
    ``config`` attribute; none when the file has no such attribute, and an attribute
    that is not JSON is refused, naming the file). Without a ``kind`` coordinate no arm
    is a repeat.

    The tables and figures compute with every arm (Holm's family, ranks and bootstrap
    intervals count the repeat as the tie it is) and show each such group once
    (:func:`shown_once`, :func:`duplicates_note`).
    """
    if "kind" not in ds.coords or "optimizer" not in ds.dims:
        return {}
    if baseline is None:  # a file without the attribute: no arm is preferred
        from spsa_bench.analysis.relaxation import recorded_config

        baseline = (recorded_config(ds) or {}).get("baseline")
    arms = [str(a) for a in ds["optimizer"].values]
    if baseline in arms:  # the baseline is the arm a group keeps
        arms.remove(baseline)
        arms.insert(0, baseline)
    groups: dict[tuple, list[str]] = {}
    for arm in arms:
        groups.setdefault(_arm_signature(ds, arm), []).append(arm)
    candidates = [group for group in groups.values() if len(group) > 1]
    if not candidates:
        return {}
    final = ds["elo_loss"].isel(pairs=-1)
    repeats: dict[str, str] = {}
    for group in candidates:
        kept: list[tuple[str, np.ndarray]] = []
        for arm in group:
            values = final.sel(optimizer=arm).values
            same = next((k for k, v in kept if np.array_equal(v, values, equal_nan=True)), None)
            if same is None:
                kept.append((arm, values))
            else:
                repeats[arm] = same
    return {arm: repeats[arm] for arm in (str(a) for a in ds["optimizer"].values) if arm in repeats}


def shown_once(frame: pd.DataFrame, duplicates, column: str = "optimizer") -> pd.DataFrame:
    """``frame`` without the rows of the repeated arms (the keys of ``duplicates``,
    :func:`duplicate_arms`) in ``column``; every other row as it was."""
    if not duplicates:
        return frame
    return frame[~frame[column].astype(str).isin(list(duplicates))].reset_index(drop=True)


def without_duplicates(ds: xr.Dataset, duplicates) -> xr.Dataset:
    """``ds`` without the repeated arms (the keys of ``duplicates``)."""
    if not duplicates:
        return ds
    kept = [str(a) for a in ds["optimizer"].values if str(a) not in duplicates]
    return ds.sel(optimizer=kept)


#: What the convergence table still counts of a repeated arm.
HOLM_COUNTS_BOTH = (
    "Holm's correction counts both (one more comparison: conservative); the ranks leave "
    "the repeat out"
)


def duplicates_note(duplicates, counted: str) -> str:
    """The footnote of a table or figure that shows each identical arm once: which arm
    repeats which, and what of the shown numbers still counts it (``counted``)."""
    if not duplicates:
        return ""
    pairs = "; ".join(f"`{arm}` is `{same}`" for arm, same in duplicates.items())
    return (
        f"Shown once: {pairs} (same kind and hyperparameters, bit-identical results, so "
        f"one row stands for both); {counted}."
    )


def target_label(fraction: float) -> str:
    return f"{fraction:g}"


def start_gap(ds: xr.Dataset) -> xr.DataArray:
    """Elo loss at the first checkpoint (pairs = 0): ``peak_elo - start_elo`` of each run."""
    if int(ds["pairs"].values[0]) != 0:
        raise ValueError("the checkpoint grid must start at pairs = 0")
    return ds["elo_loss"].isel(pairs=0)


def hits_to_targets(ds: xr.Dataset, targets) -> xr.DataArray:
    """Pairs at which each run first reaches each target (``inf``: never), dims ``target`` + cell + seed.

    A target ``f`` is the fraction of the start gap recovered, so its Elo loss
    is ``(1 - f) * (peak_elo - start_elo)``; hits are read on the checkpoint grid.
    """
    if int(ds["pairs"].values[0]) != 0:
        raise ValueError("the checkpoint grid must start at pairs = 0")
    loss = ds["elo_loss"]
    dims = [d for d in loss.dims if d != "pairs"]
    cell_dims = [d for d in dims if d != "seed"]
    fractions = [float(f) for f in targets]
    pairs = ds["pairs"].values
    hits = np.empty((len(fractions), *(loss.sizes[d] for d in cell_dims), loss.sizes["seed"]))
    # one cell's (seed, pairs) block at a time: a lazily opened benchmark reads one chunk
    for index in np.ndindex(*(loss.sizes[d] for d in cell_dims)):
        block = loss.isel(dict(zip(cell_dims, index, strict=True)))
        block = block.transpose("seed", "pairs").values
        for row, fraction in enumerate(fractions):
            hits[(row, *index)] = stats.first_hit(block, pairs, (1.0 - fraction) * block[:, 0])
    out = xr.DataArray(
        hits,
        dims=("target", *cell_dims, "seed"),
        coords={"target": fractions, **{d: loss[d] for d in dims}},
    )
    return out.transpose("target", *dims)


def _cells(ds: xr.Dataset):
    for batch_mode in ds["batch_mode"].values:
        for scenario in ds["scenario"].values:
            for optimizer in ds["optimizer"].values:
                yield str(optimizer), str(batch_mode), str(scenario)


def _paired_columns(diff, level, alpha, seeds_delta, seeds_power) -> dict:
    """Mean paired difference with its interval, p-value and the seeds needed."""
    diff = diff[np.isfinite(diff)]
    d_mean, d_low, d_high = stats.t_interval(diff, level)
    return {
        "diff_elo_mean": d_mean,
        "diff_elo_ci_low": d_low,
        "diff_elo_ci_high": d_high,
        "p_value": stats.paired_t_pvalue(diff),
        "seeds_needed": (
            float(stats.seeds_needed(diff, seeds_delta, seeds_power, alpha))
            if diff.size >= 2
            else math.nan
        ),
    }


def _runtime_columns(hits, fraction, budget: float, n_boot: int, boot_seed: int) -> dict:
    """Seeds reaching target ``fraction``, median pairs to it, aRT and its bootstrap range.

    ``hits`` is not empty: a present cell has a finite loss at the first checkpoint.
    """
    label = target_label(fraction)
    q10, q90 = stats.bootstrap_art(hits, budget, n_boot=n_boot, seed=boot_seed)
    return {
        f"reached_{label}": int(np.isfinite(hits).sum()),
        f"median_pairs_{label}": float(np.median(hits)),
        f"aRT_{label}": stats.average_runtime(hits, budget),
        f"aRT_q10_{label}": float(q10),
        f"aRT_q90_{label}": float(q90),
    }


def convergence_table(
    ds: xr.Dataset,
    *,
    baseline: str,
    targets,
    level: float = 0.95,
    alpha: float = 0.05,
    n_boot: int = 1000,
    boot_seed: int = BOOTSTRAP_SEED,
    seeds_delta: float = SEEDS_DELTA,
    seeds_power: float = SEEDS_POWER,
    relaxation: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The convergence table (see the module docstring); rows by batch mode, scenario, optimizer.

    ``relaxation``: the cells' :func:`~spsa_bench.analysis.relaxation.relaxation_table`;
    adds its columns, the comparison's verdict (``need_reference``,
    ``reference_need_pairs``, ``reference_budget_fraction``, ``ranked``, ``shortfall``:
    :func:`~spsa_bench.analysis.relaxation.problem_verdicts`), ``budget_pairs`` and ``rank`` (by mean
    final loss, 1 = lowest, ties averaged; NaN in a comparison that is not ranked).

    ``seeds_needed`` (NaN for the baseline and for fewer than two paired seeds):
    :func:`stats.seeds_needed` of the cell's per-seed differences, i.e. the seeds a
    two-sided paired t-test at level ``alpha`` needs to detect a mean difference of
    ``seeds_delta`` Elo with power ``seeds_power`` at the observed SD.
    """
    if baseline not in ds["optimizer"].values:
        raise ValueError(f"baseline {baseline!r} is not an optimizer of the dataset")
    final_loss = ds["elo_loss"].isel(pairs=-1).load()  # one read of a lazily opened file
    budget = float(ds["pairs"].values[-1])
    hits = hits_to_targets(ds, targets)
    rows = []
    for optimizer, batch_mode, scenario in _cells(ds):
        where = {"optimizer": optimizer, "batch_mode": batch_mode, "scenario": scenario}
        loss = final_loss.sel(where).values
        present = np.isfinite(loss)
        if not present.any():
            continue  # a cell that was not run
        x = loss[present]
        mean, low, high = stats.t_interval(x, level)
        row = {
            **where,
            "n_seeds": int(present.sum()),
            "final_loss_mean": mean,
            "final_loss_ci_low": low,
            "final_loss_ci_high": high,
            "final_loss_median": float(np.median(x)),
            "final_loss_q10": float(np.quantile(x, 0.1)),
            "final_loss_q90": float(np.quantile(x, 0.9)),
        }
        if optimizer == baseline:
            row.update(
                diff_elo_mean=0.0,
                diff_elo_ci_low=math.nan,
                diff_elo_ci_high=math.nan,
                p_value=math.nan,
                seeds_needed=math.nan,
            )
        else:
            base = final_loss.sel({**where, "optimizer": baseline}).values
            # Final Elo of the arm minus the baseline's at the same seed (> 0: the arm is better).
            row.update(_paired_columns(base - loss, level, alpha, seeds_delta, seeds_power))
        for fraction in targets:
            h = hits.sel(target=float(fraction), **where).values
            row.update(_runtime_columns(h[~np.isnan(h)], fraction, budget, n_boot, boot_seed))
        rows.append(row)
    table = pd.DataFrame(rows)
    table["p_holm"] = stats.holm(table["p_value"].to_numpy())
    table["significant"] = table["p_holm"] < alpha
    order = [c for c in table.columns if not c.startswith(("reached_", "median_pairs_", "aRT_"))]
    table = table[order + [c for c in table.columns if c not in order]]
    if relaxation is not None:
        table = _with_relaxation(table, relaxation, baseline, budget)
    return table


def _with_relaxation(
    table: pd.DataFrame, relaxation: pd.DataFrame, baseline: str, budget: float
) -> pd.DataFrame:
    """The cells' relaxation columns, each comparison's verdict and the ranks (see
    :func:`convergence_table`)."""
    from spsa_bench.analysis.relaxation import CELL_COLUMNS, problem_verdicts

    table = table.merge(relaxation[CELL_COLUMNS], on=CELL_COLUMNS[:3], how="left")
    verdicts = problem_verdicts(relaxation, baseline, budget).rename(
        columns={
            "reference": "need_reference",
            "need_pairs": "reference_need_pairs",
            "budget_fraction": "reference_budget_fraction",
        }
    )
    table = table.merge(verdicts, on=["scenario", "batch_mode"], how="left")
    table["ranked"] = table["ranked"].eq(True)
    table["budget_pairs"] = budget
    rank = table.groupby(["batch_mode", "scenario"], sort=False)["final_loss_mean"].rank()
    table["rank"] = rank.where(table["ranked"])
    return table


# ------------------------------------------------------------------ async

#: Per-seed schedule KPIs summarised (median over seeds) in the async table.
SEED_KPIS = (
    "staleness_mean",
    "staleness_p50",
    "staleness_p90",
    "staleness_p99",
    "staleness_max",
    "lag_p50",
    "lag_p90",
    "lag_p99",
    "lag_norm_p50",
    "lag_norm_p90",
    "lag_norm_p99",
    "lag_abs_mean_pairs",
    "batch_mean_jobs",
    "batch_median_jobs",
    "batch_mean_pairs",
    "batch_median_pairs",
    "n_jobs",
    "simulated_duration",
)
WORKER_KPIS = ("concurrency", "speed_factor", "pairs_processed")
SCHEDULE_VARIABLES = (*SEED_KPIS, "budget_exhausted", *WORKER_KPIS)


def schedule_view(
    ds: xr.Dataset, optimizer: str | None = None, scenario: str | None = None
) -> xr.Dataset:
    """The schedule KPIs of one optimizer and scenario (they are the same for all: common random numbers)."""
    optimizer = optimizer if optimizer is not None else str(ds["optimizer"].values[0])
    scenario = scenario if scenario is not None else str(ds["scenario"].values[0])
    names = [n for n in SCHEDULE_VARIABLES if n in ds]
    return ds[names].sel(optimizer=optimizer, scenario=scenario)


def _concurrency_distribution(values: np.ndarray) -> str:
    levels, counts = np.unique(values.astype(np.int64), return_counts=True)
    return " ".join(
        f"{int(v)}:{100.0 * c / counts.sum():.0f}%" for v, c in zip(levels, counts, strict=True)
    )


def async_table(
    ds: xr.Dataset, *, optimizer: str | None = None, scenario: str | None = None
) -> pd.DataFrame:
    """One row per batch mode: median over seeds of each per-seed KPI, plus worker-pool summaries."""
    view = schedule_view(ds, optimizer, scenario)
    rows = []
    for batch_mode in view["batch_mode"].values:
        one = view.sel(batch_mode=batch_mode)
        seeds = np.isfinite(one["staleness_mean"].values)  # seeds whose schedule was run
        row = {"batch_mode": str(batch_mode), "n_seeds": int(np.sum(seeds))}
        for name in SEED_KPIS:
            if name in one:
                values = one[name].values[seeds].astype(np.float64)
                row[f"{name}_median"] = (
                    float(np.median(values)) if np.isfinite(values).any() else math.nan
                )
        if "budget_exhausted" in one:
            row["budget_exhausted_share"] = float(
                np.mean(one["budget_exhausted"].values[seeds].astype(np.float64))
            )
        if "concurrency" in one:
            conc = one["concurrency"].values[seeds]  # (seed, worker), NaN for absent workers
            speed = one["speed_factor"].values[seeds]
            pairs = one["pairs_processed"].values[seeds].astype(np.float64)
            present = np.isfinite(conc.astype(np.float64))
            row["workers"] = int(present[0].sum()) if present.size else 0
            c = conc[present].astype(np.float64)
            s = speed[present].astype(np.float64)
            row.update(
                concurrency_min=float(c.min()),
                concurrency_median=float(np.median(c)),
                concurrency_max=float(c.max()),
                concurrency_distribution=_concurrency_distribution(c),
                speed_min=float(s.min()),
                speed_median=float(np.median(s)),
                speed_mean=float(s.mean()),
                speed_max=float(s.max()),
            )
            masked = np.where(present, pairs, np.nan)
            row["pairs_per_worker_min"] = float(np.median(np.nanmin(masked, axis=1)))
            row["pairs_per_worker_median"] = float(np.median(np.nanmedian(masked, axis=1)))
            row["pairs_per_worker_max"] = float(np.median(np.nanmax(masked, axis=1)))
        rows.append(row)
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ markdown


def _format(value, digits: int) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else ""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return "–"
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
        if value != 0 and (abs(value) >= 10**6 or abs(value) < 10 ** (-digits)):
            return f"{value:.{digits}g}"
        return f"{value:,.{digits}f}" if abs(value) >= 1000 else f"{value:.{digits}f}"
    return str(value)


def markdown_table(frame: pd.DataFrame, columns: dict[str, str], digits: int = 3) -> str:
    """A GitHub-flavoured markdown table of ``frame[columns]`` with headers ``columns.values()``."""
    lines = [
        "| " + " | ".join(columns.values()) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
    ]
    for _, row in frame.iterrows():
        cells = []
        for key in columns:
            value = row[key]
            cells.append(value if isinstance(value, str) else _format(value, digits))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def interval(frame: pd.DataFrame, low: str, high: str, digits: int = 3) -> pd.Series:
    """Each row's interval as text, ``"[low, high]"``, from columns ``low`` and ``high``
    (numbers as the tables print them, ``digits`` significant digits)."""
    return pd.Series(
        [
            f"[{_format(a, digits)}, {_format(b, digits)}]"
            for a, b in zip(frame[low], frame[high], strict=True)
        ],
        index=frame.index,
    )


def _final_columns(t: pd.DataFrame, baseline: str, pct: str, seeds_delta: float) -> dict:
    """Column headings of the final-loss part of the convergence table."""
    return {
        "batch_mode": "batch mode",
        "scenario": "scenario",
        "optimizer": "optimizer",
        "n_seeds": "seeds",
        "final_loss_mean": "loss mean",
        "final_ci": f"{pct} CI",
        "final_loss_median": "median",
        "final_loss_q10": "q10",
        "final_loss_q90": "q90",
        "diff_elo_mean": f"Δ vs {baseline}",
        "diff_ci": f"Δ {pct} CI",
        "p_holm": "Holm p",
        "mark": "",
        **({"seeds_txt": f"seeds for {seeds_delta:g} Elo"} if "seeds_txt" in t else {}),
    }


def convergence_markdown(
    table: pd.DataFrame,
    *,
    baseline: str,
    targets,
    level: float = 0.95,
    seeds_delta: float = SEEDS_DELTA,
    seeds_power: float = SEEDS_POWER,
    duplicates=None,
) -> str:
    """The convergence table as markdown, with its caption and reading notes.

    ``seeds_delta`` and ``seeds_power`` only word the note; pass the values given
    to :func:`convergence_table`. ``duplicates`` (:func:`duplicate_arms`): their rows
    are left out and a footnote says so; Holm's family, stated in the notes, and the
    ranks still count them, as :func:`convergence_table` computed them.
    """
    holm_family = int(np.isfinite(table["p_value"]).sum())
    t = shown_once(table, duplicates).copy()
    if "seeds_needed" in t:
        t["seeds_txt"] = [
            f"{int(v):,}" if np.isfinite(v) else "–" for v in t["seeds_needed"].astype(float)
        ]
    t["final_ci"] = interval(t, "final_loss_ci_low", "final_loss_ci_high")
    t["diff_ci"] = interval(t, "diff_elo_ci_low", "diff_elo_ci_high")
    t["mark"] = np.where(t["significant"], "*", "")
    pct = f"{100 * level:g}%"
    parts = [
        "# Convergence",
        "",
        f"Final Elo loss (peak Elo minus the true Elo of the exported parameters after the whole "
        f"budget; lower is better) over {int(t['n_seeds'].max())} seeds per cell, and the paired "
        f"difference of final Elo against the baseline `{baseline}`.",
        "",
        "Notes:",
        "",
        "- The design is **paired by common random numbers**: at one seed every optimizer sees the "
        "same worker pool and schedule, the same perturbation flips and the same match uniforms, so "
        "the difference is taken seed by seed (Δ = final Elo of the arm − final Elo of the baseline; "
        "Δ > 0: the arm ends closer to the peak).",
        f"- Intervals are two-sided {pct} Student-t intervals of the mean over seeds.",
        f"- `*` marks a Δ whose paired t-test stays significant at family-wise 5% after Holm's "
        f"correction across all {holm_family} comparisons of the table "
        "(Holm p < 0.05); the unadjusted interval is shown.",
        f"- *seeds for {seeds_delta:g} Elo*: the number of seeds a two-sided paired t-test at 5% "
        f"would need to detect a mean Δ of {seeds_delta:g} Elo with {100 * seeds_power:g}% power, "
        "taking the observed SD of the per-seed differences as the true one (normal "
        "approximation refined with the noncentral t); more seeds than the table has means a "
        "difference of that size may still be hidden in the noise.",
        *([f"- {duplicates_note(duplicates, HOLM_COUNTS_BOTH)}"] if duplicates else []),
        "",
        _final_markdown(t, baseline, pct, seeds_delta),
        "## Runtime to Elo-loss targets",
        "",
        "A target f is reached when the Elo loss falls to (1 − f) × (peak_elo − start_elo), read on "
        "the checkpoint grid. *reached*: seeds that reached it; *median*: median over all seeds of "
        "the pairs to the first hit (∞ when fewer than half reach it); *aRT* (COCO's average "
        "runtime): pairs spent by all seeds (pairs to the first hit, the whole budget for seeds "
        "that never reach it) divided by the number of seeds that reached it, ∞ when none did; "
        "*aRT 10–90%*: bootstrap interval over seeds (1000 resamples, fixed seed).",
        "",
    ]
    parts.append(_runtime_markdown(t, targets))
    return "\n".join(parts) + "\n"


def _final_markdown(t: pd.DataFrame, baseline: str, pct: str, seeds_delta: float) -> str:
    """The final-loss part: one table, or (with the relaxation columns) one section per
    comparison under its verdict, then the budget table."""
    columns = _final_columns(t, baseline, pct, seeds_delta)
    head = ["## Final Elo loss and paired difference", ""]
    if "ranked" not in t:
        return "\n".join([*head, markdown_table(t, columns), ""])
    from spsa_bench.analysis.relaxation import verdict_line

    del columns["batch_mode"], columns["scenario"]
    columns = {"rank_txt": "rank", **columns}
    t["rank_txt"] = [f"{r:g}" if np.isfinite(r) else "–" for r in t["rank"].astype(float)]
    budget = float(t["budget_pairs"].iloc[0])
    parts = head
    for (mode, scenario), one in t.groupby(["batch_mode", "scenario"], sort=False):
        first = one.iloc[0]
        ranked = bool(first["ranked"])
        rows = one.sort_values(["rank", "optimizer"] if ranked else "optimizer")
        line = verdict_line(
            ranked,
            str(first["shortfall"]),
            str(first["need_reference"]),
            float(first["reference_need_pairs"]),
            budget,
        )
        parts += [f"### {scenario} · {mode}", "", line, "", markdown_table(rows, columns), ""]
    parts += [_budget_markdown(t, budget), ""]
    return "\n".join(parts)


def _pairs_cell(value: float) -> str:
    """Pairs in a budget table: ``—`` for no prediction, ``not reached`` for infinity."""
    if math.isnan(value):
        return "—"
    return f"{value:,.0f}" if math.isfinite(value) else "not reached"


def _budget_markdown(t: pd.DataFrame, budget: float) -> str:
    """The section "Is the budget big enough?": each cell's need, fraction and relaxations,
    the rule and its assumptions, and the predicted against the measured relaxation."""
    from spsa_bench.analysis import linear_spsa, relaxation

    t = t.copy()
    t["need_txt"] = [
        "—" if math.isnan(v) else (f"{v:,.0f}" if math.isfinite(v) else "> 10^12")
        for v in t["predicted_need_pairs"].astype(float)
    ]
    t["fraction_txt"] = [
        "—" if math.isnan(v) else f"{v:.3g}" for v in t["budget_fraction"].astype(float)
    ]
    for name in ("predicted_relaxation_pairs", "relaxation_pairs"):
        t[f"{name}_txt"] = [_pairs_cell(v) for v in t[name].astype(float)]
    columns = {
        "batch_mode": "batch mode",
        "scenario": "scenario",
        "optimizer": "optimizer",
        "need_txt": "predicted need (pairs)",
        "fraction_txt": "budget / need",
        "predicted_relaxation_pairs_txt": "predicted relaxation",
        "relaxation_pairs_txt": "measured relaxation",
    }
    lines = [
        "## Is the budget big enough?",
        "",
        f"Budget {budget:,.0f} pairs. *Predicted need*: the smallest budget whose own gain "
        "schedule brings the mean loss left from the start, in the arm's linearised dynamics on "
        f"the true bowl, to exp(−2 × {linear_spsa.RELAXATION_TIMES:g}) of the start loss "
        f"(Van den Bergh's {linear_spsa.RELAXATION_TIMES:g} relaxation times, weighted by the "
        "loss each mode carries; the median seed's for drawn instances); — for the kinds "
        "without a linear prediction. *Relaxation*: the first checkpoint where the mean loss "
        f"over seeds is within {relaxation.RELAXED_SHARE:g} of its start excess above the "
        f"plateau (its mean over the last {relaxation.PLATEAU_SHARE:.0%} of the budget); not "
        f"reached when it never falls or comes after {relaxation.LATEST_SHARE:.0%} of the "
        "budget; *predicted*: the same rule on the predicted mean loss. A comparison is ranked "
        "only when the budget covers its reference arm's predicted need (the baseline, else the "
        "first arm with a prediction) and that arm's measured relaxation was reached. The "
        'derivation and its check: docs/benchmark.md, "Is the budget big enough? (NOT RANKED)".',
        "",
        markdown_table(t, columns),
    ]
    closeness = _closeness(t)
    if closeness:
        lines += [
            "",
            "Predicted against measured relaxation of the reference arms: " + closeness + ".",
        ]
    return "\n".join(lines)


def _closeness(t: pd.DataFrame) -> str:
    """``scenario · mode: predicted P vs measured M pairs (+x%)`` for each reference arm
    with both relaxations reached."""
    own = t[t["optimizer"] == t["need_reference"]]
    items = []
    for _, row in own.iterrows():
        predicted, measured = (
            float(row["predicted_relaxation_pairs"]),
            float(row["relaxation_pairs"]),
        )
        if math.isfinite(predicted) and math.isfinite(measured) and measured > 0:
            items.append(
                f"{row['scenario']} · {row['batch_mode']} `{row['optimizer']}`: predicted "
                f"{predicted:,.0f} vs measured {measured:,.0f} pairs "
                f"({100.0 * (predicted / measured - 1.0):+.0f}%)"
            )
    return "; ".join(items)


def _runtime_markdown(t: pd.DataFrame, targets) -> str:
    """The runtime part of the convergence table: reached, median, aRT and its range per target."""
    columns = {"batch_mode": "batch mode", "scenario": "scenario", "optimizer": "optimizer"}
    for fraction in targets:
        label = target_label(fraction)
        t[f"art_iv_{label}"] = interval(t, f"aRT_q10_{label}", f"aRT_q90_{label}", 0)
        t[f"reached_txt_{label}"] = [
            f"{r}/{n}" for r, n in zip(t[f"reached_{label}"], t["n_seeds"], strict=True)
        ]
        columns.update(
            {
                f"reached_txt_{label}": f"f={label} reached",
                f"median_pairs_{label}": "median",
                f"aRT_{label}": "aRT",
                f"art_iv_{label}": "aRT 10–90%",
            }
        )
    return markdown_table(t, columns, digits=0)


def async_markdown(table: pd.DataFrame) -> str:
    """The async table as markdown, with its caption and reading notes."""
    t = table.copy()
    if "simulated_duration_median" in t:
        t["duration_h"] = t["simulated_duration_median"] / 3600.0
    parts = [
        "# Asynchronous batch modes",
        "",
        "Schedule KPIs per batch mode: medians over seeds of each per-seed KPI. Schedules do not "
        "depend on the optimizer or the scenario (common random numbers), so one optimizer and "
        "scenario stand for all.",
        "",
        "- *staleness*: pairs that arrived between a job's dispatch and its arrival (job-weighted "
        "statistics within a seed);",
        "- *lag*: out-of-order lag in pairs (job offset minus pairs arrived before the job's "
        "arrival, dispatch-counter convention; > 0: the job finished ahead of the head of line); "
        "*mean abs lag*: pair-weighted mean absolute lag in pairs (the spec's out-of-order 'share', not a "
        "percentage);",
        "- *batch*: job size in pairs, job-weighted and pair-weighted;",
        "- worker pool: concurrency (games in parallel) and speed factor pooled over workers and "
        "seeds; pairs per worker: the min, median and max over the workers of a seed, each a "
        "median over seeds.",
        "",
        "## Staleness and out-of-order lag",
        "",
    ]
    columns = {
        "batch_mode": "batch mode",
        "n_seeds": "seeds",
        "staleness_mean_median": "staleness mean",
        "staleness_p50_median": "p50",
        "staleness_p90_median": "p90",
        "staleness_p99_median": "p99",
        "staleness_max_median": "max",
        "lag_p50_median": "lag p50",
        "lag_p90_median": "lag p90",
        "lag_p99_median": "lag p99",
        "lag_abs_mean_pairs_median": "mean abs lag",
    }
    parts.append(markdown_table(t, {k: v for k, v in columns.items() if k in t}, digits=1))
    parts += ["", "## Batches and worker pool", ""]
    columns = {
        "batch_mode": "batch mode",
        "n_jobs_median": "jobs per seed",
        "batch_mean_jobs_median": "mean batch, job-weighted",
        "batch_mean_pairs_median": "mean batch, pair-weighted",
        "duration_h": "duration (h)",
        "workers": "workers",
        "concurrency_distribution": "concurrency distribution",
        "speed_min": "speed min",
        "speed_median": "speed median",
        "speed_max": "speed max",
        "pairs_per_worker_min": "pairs/worker min",
        "pairs_per_worker_median": "median",
        "pairs_per_worker_max": "max",
    }
    parts.append(markdown_table(t, {k: v for k, v in columns.items() if k in t}, digits=1))
    return "\n".join(parts) + "\n"
