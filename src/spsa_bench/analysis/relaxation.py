"""Is the budget big enough? Predicted need, measured relaxation, and what may be ranked.

Per cell (arm x batch mode x scenario) of the combined dataset (:func:`relaxation_table`):

- ``predicted_need_pairs``: the pairs the arm needs to converge, from its linearised
  dynamics (:func:`spsa_bench.analysis.linear_spsa.predicted_need`; NaN, shown "—", for
  the kinds that have none), and ``budget_fraction`` = budget / that need;
- ``relaxation_pairs``: when the mean Elo loss over seeds relaxed (:func:`relaxation_pairs`),
  and ``predicted_relaxation_pairs``, the same rule on the predicted mean loss
  (:func:`~spsa_bench.analysis.linear_spsa.predicted_mean_loss`, with the pairs per
  report of the batch mode; where the truth is drawn per seed, both predictions average
  the first ``PREDICTED_SEEDS`` = 100 seeds of the run).

Relaxation of a mean-loss trajectory ``L`` on the checkpoint grid::

    plateau = mean of L at the checkpoints of the last PLATEAU_SHARE (10%) of the budget
    relaxed = the first checkpoint with L <= plateau + RELAXED_SHARE (10%) * (L(0) - plateau)

It is "not reached" (``inf``) when ``L`` did not fall (``L(0) - plateau`` at most
``FALL_SE`` = 2 standard errors of the per-seed falls), when it is still falling (the
least-squares line through the second half of the budget drops by more than the band,
``RELAXED_SHARE * (L(0) - plateau)``, over that half), or when it comes after
``LATEST_SHARE`` (half) of the budget, where the plateau estimate may still hold part of
the fall (an exponential relaxed by half the budget, ``ln 10 = 2.3`` time constants for
the band, has at most ``exp(-4.1)``, 1.6%, of its excess left when the plateau window opens).

A comparison (scenario x batch mode) is **ranked** only when (a) the budget is at least
the predicted need of its reference arm (the baseline when it has a prediction, else the
first arm of the grid that has one) and (b) that arm's (or, without one, the baseline's)
measured relaxation was reached; otherwise it is NOT RANKED and the shortfall is named
(:func:`problem_verdicts`), as the original lab's later work prints an undersized sweep
(ppigazzini/fishtest-spsa-lab, branch ``refactor``, ``simulator/main.py``).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis import linear_spsa

#: The plateau: the mean over the checkpoints of the last 10% of the budget.
PLATEAU_SHARE = 0.1
#: Relaxed: within 10% of the start's excess over the plateau.
RELAXED_SHARE = 0.1
#: A relaxation after half the budget counts as "not reached".
LATEST_SHARE = 0.5
#: A fall from the start to the plateau of at most this many standard errors is none.
FALL_SE = 2.0
#: Seeds whose drawn instances the prediction averages (bounds its time and memory).
PREDICTED_SEEDS = 100

CELL_COLUMNS = [
    "optimizer",
    "batch_mode",
    "scenario",
    "predicted_need_pairs",
    "budget_fraction",
    "predicted_relaxation_pairs",
    "relaxation_pairs",
    "no_prediction",
]


def relaxation_pairs(mean_loss, pairs, excess_se: float = 0.0) -> float:
    """Pairs at the checkpoint where ``mean_loss`` relaxed (module docstring); ``inf``: not
    reached. ``excess_se``: the standard error of ``L(0) - plateau`` (0 for a prediction)."""
    loss = np.asarray(mean_loss, dtype=np.float64)
    pairs = np.asarray(pairs, dtype=np.float64)
    budget = pairs[-1]
    plateau = float(np.mean(loss[pairs >= (1.0 - PLATEAU_SHARE) * budget]))
    excess = loss[0] - plateau
    if not excess > FALL_SE * excess_se:
        return math.inf  # no measurable fall
    band = RELAXED_SHARE * excess
    second = pairs >= 0.5 * budget
    if second.sum() >= 2:
        slope = np.polyfit(pairs[second], loss[second], 1)[0]
        if -slope * 0.5 * budget > band:
            return math.inf  # still falling
    first = float(pairs[np.argmax(loss <= plateau + band)])
    return first if first <= LATEST_SHARE * budget else math.inf


def measured_relaxation(loss: np.ndarray, pairs) -> float:
    """:func:`relaxation_pairs` of the mean over seeds of ``loss`` ``(seed, pairs)`` (NaN
    rows: seeds not run), with the standard error of the fall from the per-seed falls."""
    loss = loss[np.isfinite(loss).all(axis=-1)]
    pairs = np.asarray(pairs, dtype=np.float64)
    window = pairs >= (1.0 - PLATEAU_SHARE) * pairs[-1]
    falls = loss[:, 0] - loss[:, window].mean(axis=-1)
    se = float(falls.std(ddof=1) / math.sqrt(falls.size)) if falls.size > 1 else 0.0
    return relaxation_pairs(loss.mean(axis=0), pairs, se)


def _source(ds: xr.Dataset) -> str:
    """The file ``ds`` was opened from (``encoding["source"]``), for a refusal."""
    return str(ds.encoding.get("source", "the dataset"))


def recorded_config(ds: xr.Dataset) -> dict | None:
    """The configuration ``ds`` records in its ``config`` attribute, decoded from JSON;
    ``None`` when it has no such attribute (a file written by hand or by an older
    version: the caller works without it or refuses it). An attribute that is not a
    JSON object is refused (:class:`~spsa_bench.results.reading.ReadError`, one line
    naming the file and the attribute)."""
    from spsa_bench.results.reading import ReadError

    if "config" not in ds.attrs:
        return None
    text = ds.attrs["config"]
    try:
        raw = json.loads(text) if isinstance(text, str | bytes) else None
    except ValueError:
        raw = None
    if not isinstance(raw, dict):
        raise ReadError(
            f"{_source(ds)}: attribute 'config' is not a JSON object (the resolved "
            "configuration the combine step records; rerun combine to rewrite the file)"
        )
    return raw


def benchmark_config(ds: xr.Dataset):
    """The grid of the resolved configuration a combined dataset records (its
    ``config`` attribute). The studies and the tuning section are left out: the
    grid's cells need none of them, and a recorded configuration keeps no sweep,
    so its ``tuning`` section would no longer resolve.

    A dataset without the attribute, with one that is not a JSON object or not a
    configuration that resolves, is refused with one
    :class:`~spsa_bench.results.reading.ReadError` naming the file and the attribute:
    the predicted need and the verdicts cannot be computed without it."""
    from spsa_bench.config.resolution import resolve_core
    from spsa_bench.results.reading import ReadError

    raw = recorded_config(ds)
    if raw is None:
        raise ReadError(
            f"{_source(ds)}: no attribute 'config' (the resolved configuration the combine "
            "step records, which the budget check needs; rerun combine to rewrite the file)"
        )
    try:
        return resolve_core(raw)
    except (ValueError, TypeError) as error:  # ConfigError, LimitError, ...
        reason = " ".join(str(error).split())[:300]
        raise ReadError(
            f"{_source(ds)}: attribute 'config' is not a valid configuration ({reason})"
        ) from None


def check_labels(ds: xr.Dataset, config) -> None:
    """Refuse (:class:`~spsa_bench.results.reading.ReadError`, naming the file) a cell
    label of ``ds`` (optimizer, batch mode, scenario) that is not a name of ``config``:
    a file whose recorded configuration does not describe its own cells."""
    from spsa_bench.results.reading import ReadError

    names = {
        "optimizer": config.optimizers,
        "batch_mode": config.batch_modes,
        "scenario": config.scenarios,
    }
    for dim, known in names.items():
        if dim not in ds.dims:
            continue
        for label in (str(value) for value in ds[dim].values):
            if label not in known:
                raise ReadError(
                    f"{_source(ds)}: {dim} label {label[:80]!r} is not a name of the "
                    "configuration its attribute 'config' records"
                )


def _pairs_per_report(ds: xr.Dataset, config, mode: str) -> float:
    """Pairs per report of a batch mode, pair-weighted: the schedule KPI when the dataset
    has it, else the configured fixed batch size, else NaN."""
    if "batch_mean_pairs" in ds:
        values = ds["batch_mean_pairs"].sel(batch_mode=mode).values
        if np.isfinite(values).any():
            return float(np.nanmedian(values))
    size = config.batch_mode(mode).batch_size
    return float(size) if size else math.nan


def _scenario_seeds(ds: xr.Dataset, scenario: str) -> list[int]:
    """The seeds the prediction of a scenario averages: the first :data:`PREDICTED_SEEDS`
    that ran (they matter only where the truth is drawn per seed)."""
    start = ds["elo_loss"].isel(pairs=0).sel(scenario=scenario).transpose(..., "seed")
    ran = np.isfinite(start.values).reshape(-1, start.sizes["seed"]).any(axis=0)
    return [int(s) for s in ds["seed"].values[ran][:PREDICTED_SEEDS]]


def _scenario_rows(ds: xr.Dataset, config, scenario: str, curves: bool) -> list[dict]:
    """The cells of one scenario: measured relaxation, and the prediction of each SPSA arm
    (its predicted relaxation only with ``curves``)."""
    from spsa_bench.engine.simulate import make_noise, make_problem

    problem = make_problem(config, scenario, _scenario_seeds(ds, scenario))
    hessian = linear_spsa.loss_hessian(problem.bowl, problem.view.c_dev)
    variance = linear_spsa.pair_variance(make_noise(config, scenario))
    pairs = ds["pairs"].values
    budget = float(pairs[-1])
    losses = (
        ds["elo_loss"].sel(scenario=scenario).transpose("optimizer", "batch_mode", "seed", "pairs")
    )
    rows = []
    for optimizer in ds["optimizer"].values:
        arm = config.optimizer(str(optimizer))
        reason = linear_spsa.not_predicted(arm, problem.view)
        model = need = None
        if reason is None:
            model = linear_spsa.linearise(arm, problem, config.signal, hessian)
            need = linear_spsa.predicted_need(arm, problem, model)
        for mode in ds["batch_mode"].values:
            loss = losses.sel(optimizer=optimizer, batch_mode=mode).values
            if not np.isfinite(loss[:, 0]).any():
                continue  # a cell that was not run
            row = dict.fromkeys(CELL_COLUMNS[3:7], math.nan)
            row.update(optimizer=str(optimizer), batch_mode=str(mode), scenario=scenario)
            row.update(
                relaxation_pairs=measured_relaxation(loss, pairs), no_prediction=reason or ""
            )
            if model is not None:
                row.update(
                    predicted_need_pairs=need,
                    budget_fraction=budget / need if need > 0 else math.inf,
                )
            if model is not None and curves:
                block = _pairs_per_report(ds, config, str(mode))
                curve = linear_spsa.predicted_mean_loss(model, pairs, variance, block)
                row["predicted_relaxation_pairs"] = relaxation_pairs(curve, pairs)
            rows.append(row)
    return rows


def relaxation_table(ds: xr.Dataset, config=None, curves: bool = True) -> pd.DataFrame:
    """One row per cell that was run (columns :data:`CELL_COLUMNS`; ``no_prediction``: why
    an arm has no linear prediction, empty when it has one). ``config``: the resolved
    configuration of the run (default: the one ``ds`` records); ``curves=False`` skips the
    predicted mean loss (``predicted_relaxation_pairs`` NaN), which the verdicts do not use."""
    config = benchmark_config(ds) if config is None else config
    check_labels(ds, config)
    scenarios = [str(s) for s in ds["scenario"].values]
    rows = [row for s in scenarios for row in _scenario_rows(ds, config, s, curves)]
    return pd.DataFrame(rows, columns=CELL_COLUMNS)


def _reference(cells: pd.DataFrame, baseline: str) -> pd.Series | None:
    """The reference arm's row of one comparison: the baseline when it has a prediction,
    else the first arm that has one; ``None`` when no arm has."""
    predicted = cells[cells["no_prediction"] == ""]
    if predicted.empty:
        return None
    own = predicted[predicted["optimizer"] == baseline]
    return (own if not own.empty else predicted).iloc[0]


def budget_shortfall(budget: float, need: float, arm: str) -> str:
    """Rule (a) of the module docstring: why a budget is below ``arm``'s predicted need,
    empty when it is not (or there is no prediction, ``need`` NaN)."""
    if not budget < need:
        return ""
    return (
        f"the budget, {budget:,.0f} pairs, is {budget / need:.2g} of the "
        f"{_pairs_text(need)} `{arm}` needs (short by {_pairs_text(need - budget)})"
    )


def _shortfall(budget: float, reference: pd.Series | None, relaxed: float, arm: str) -> str:
    """Why a comparison is not ranked, empty when it is (module docstring)."""
    if reference is not None:
        short = budget_shortfall(budget, float(reference["predicted_need_pairs"]), arm)
        if short:
            return short
    if not math.isfinite(relaxed):
        return f"the mean loss of `{arm}` has not relaxed within the budget (measured)"
    return ""


def _pairs_text(pairs: float) -> str:
    return f"{pairs:,.0f} pairs" if math.isfinite(pairs) else "more than 10^12 pairs"


def problem_verdicts(relaxation: pd.DataFrame, baseline: str, budget: float) -> pd.DataFrame:
    """One row per comparison (scenario x batch mode): ``reference`` arm, its
    ``need_pairs``, ``budget_fraction``, ``ranked`` and ``shortfall`` (empty when ranked)."""
    rows = []
    for (scenario, mode), cells in relaxation.groupby(["scenario", "batch_mode"], sort=False):
        reference = _reference(cells, baseline)
        arm = baseline if reference is None else str(reference["optimizer"])
        judged = cells[cells["optimizer"] == arm]
        relaxed = float(judged["relaxation_pairs"].iloc[0]) if not judged.empty else math.nan
        need = math.nan if reference is None else float(reference["predicted_need_pairs"])
        reason = _shortfall(budget, reference, relaxed, arm)
        rows.append(
            {
                "scenario": scenario,
                "batch_mode": mode,
                "reference": arm,
                "need_pairs": need,
                "budget_fraction": budget / need if need > 0 else math.inf,
                "ranked": reason == "",
                "shortfall": reason,
            }
        )
    return pd.DataFrame(rows)


def verdict_line(ranked: bool, shortfall: str, reference: str, need: float, budget: float) -> str:
    """The Markdown line above a comparison: ranked, or NOT RANKED with the shortfall."""
    if not ranked:
        return (
            f"**NOT RANKED**: {shortfall}. Rows in name order; the values are shown for the "
            "record, not as a league table."
        )
    if math.isnan(need):
        return "Ranked by mean final loss (no arm has a predicted need; the baseline relaxed)."
    return (
        f"Ranked by mean final loss: the budget, {budget:,.0f} pairs, is "
        f"{budget / need:.2g} × the {_pairs_text(need)} `{reference}` needs."
    )


# ---------------------------------------------------------------- the studies' check

#: What a study's comparison below the need is marked with (before the shortfall).
BELOW_NEED = "budget below need"
#: The columns of :func:`study_verdicts`.
STUDY_VERDICT_COLUMNS = [
    "scenario",
    "budget_pairs",
    "reference",
    "need_pairs",
    "budget_fraction",
    "ranked",
    "shortfall",
]


def reference_need(config, scenario: str, seeds) -> tuple[str, float]:
    """The reference arm of a scenario's comparisons and its predicted need in pairs, by
    :func:`problem_verdicts`' rule over the grid of ``config``: the baseline when it has a
    prediction, else the first arm that has one (``(baseline, NaN)`` when none has). The
    prediction averages the first :data:`PREDICTED_SEEDS` of ``seeds``, as the main tables'."""
    from spsa_bench.engine.simulate import make_problem

    problem = make_problem(config, scenario, [int(s) for s in seeds][:PREDICTED_SEEDS])
    hessian = linear_spsa.loss_hessian(problem.bowl, problem.view.c_dev)
    names = [config.baseline, *(name for name in config.optimizers if name != config.baseline)]
    for name in names:
        arm = config.optimizer(name)
        if linear_spsa.not_predicted(arm, problem.view) is None:
            model = linear_spsa.linearise(arm, problem, config.signal, hessian)
            return name, linear_spsa.predicted_need(arm, problem, model)
    return config.baseline, math.nan


def config_at_budget(config, num_pairs: int):
    """``config`` with a budget of ``num_pairs`` pairs (itself when it has that budget;
    :func:`spsa_bench.studies.budget.budget_config`, as the budget study runs it): a
    decaying arm's gains are laid out over the budget, so its predicted need depends on
    it (the budget study's ``tune-16-stc`` need was 657,926 pairs when read at its first
    budget, 10,000, against 676,552 at the grid's 30,000)."""
    if int(config.num_pairs) == int(num_pairs):
        return config
    from spsa_bench.studies.budget import budget_config

    return budget_config(config, num_pairs)


def study_verdicts(ds: xr.Dataset, cells) -> pd.DataFrame:
    """The budget check of a study's comparisons: one row per ``(scenario, budget)`` of
    ``cells`` (columns :data:`STUDY_VERDICT_COLUMNS`), NOT RANKED (``ranked`` False, the
    ``shortfall`` starting with :data:`BELOW_NEED`) when the budget is below the reference
    arm's predicted need (rule (a) of the module docstring; a study records final losses
    only, so rule (b) does not apply). The grid and the seeds are those the study's dataset
    records (its ``config`` attribute and ``seed`` coordinate), the need that of the
    reference arm run at each row's budget (:func:`config_at_budget`); a dataset that records no
    configuration cannot be checked: every row ranked, ``reference`` empty, need NaN."""
    if "config" not in ds.attrs:  # nothing to check against: every row unchecked
        rows = [(str(s), int(b), "", math.nan, math.nan, True, "") for s, b in cells]
        return pd.DataFrame(rows, columns=STUDY_VERDICT_COLUMNS)
    config = benchmark_config(ds)
    seeds = ds["seed"].values
    needs: dict[tuple[str, int], tuple[str, float]] = {}
    rows = []
    for scenario, budget in cells:
        scenario, budget = str(scenario), float(budget)
        key = (scenario, int(budget))
        if key not in needs:  # the reference arm as run at this budget (its gains follow it)
            needs[key] = reference_need(config_at_budget(config, int(budget)), scenario, seeds)
        arm, need = needs[key]
        short = budget_shortfall(budget, need, arm)
        rows.append(
            {
                "scenario": scenario,
                "budget_pairs": int(budget),
                "reference": arm,
                "need_pairs": need,
                "budget_fraction": budget / need if need > 0 else math.inf,
                "ranked": short == "",
                "shortfall": f"{BELOW_NEED}: {short}" if short else "",
            }
        )
    return pd.DataFrame(rows, columns=STUDY_VERDICT_COLUMNS)


def study_verdict_lines(verdicts: pd.DataFrame, what: str) -> list[str]:
    """Markdown lines, one per comparison of :func:`study_verdicts`: ranked with its budget
    and need, or **NOT RANKED** with the shortfall and what is withheld (``what``)."""
    lines = []
    for row in verdicts.itertuples(index=False):
        label = f"`{row.scenario}` at {row.budget_pairs:,} pairs"
        if not row.ranked:
            lines.append(f"- {label}: **NOT RANKED**, {row.shortfall}; no {what} is read from it.")
        elif not row.reference:
            lines.append(f"- {label}: budget not checked (the dataset records no configuration).")
        elif math.isnan(row.need_pairs):
            lines.append(f"- {label}: ranked (no arm of the grid has a predicted need).")
        else:
            lines.append(
                f"- {label}: ranked, the budget is {row.budget_fraction:.2g} × the "
                f"{_pairs_text(row.need_pairs)} `{row.reference}` needs."
            )
    return lines
