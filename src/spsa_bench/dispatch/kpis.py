"""Schedule KPIs (spec 000 §4.4 and §5), vectorized over seeds.

:func:`schedule_kpis` returns ``{name: (dims, values)}`` with dims among
``("seed",)`` and ``("seed", "worker")``, ready for ``xarray.Dataset``;
:data:`KPI_ATTRS` gives every KPI's ``units`` and ``long_name``.

Conventions:

- staleness of a job = pairs that arrived between its dispatch and its arrival
  (counter-independent, spec errata 5);
- out-of-order lag (spec 000 §4.4, in the dispatch counter convention it is
  defined in): ``lag = iter_local - (pairs_processed + 1)`` at completion, with
  ``iter_local = job_offset + 1`` and ``pairs_processed`` = pairs arrived before
  the job's arrival, so ``lag = job_offset - pairs_processed``; positive = the
  job finished ahead of the head of the line;
- ``lag_abs_mean_pairs`` is the pair-weighted mean ``|lag|`` in pairs
  (``sum |lag_i| N_i / sum N_i``): the spec's "share" without its erroneous
  percent scaling (errata 10);
- percentiles use linear interpolation between order statistics (numpy's
  default ``"linear"`` method), over the seed's jobs (job-weighted);
- ``batch_*_pairs`` are pair-weighted: statistics of the size of the batch a
  uniformly drawn pair belongs to (the median averages the two middle pairs
  when the pair count is even, like ``np.median(np.repeat(N, N))``).

Ragged job lists are handled with masks and per-row sorting, without a Python
loop over seeds.
"""

from __future__ import annotations

import numpy as np

from spsa_bench.dispatch.schedule import Schedule

QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}

KPI_ATTRS: dict[str, dict[str, str]] = {
    "simulated_duration": {
        "units": "s",
        "long_name": "simulated wall-clock time of the last arrival (NaN when durations "
        "are not simulated, i.e. synchronous)",
    },
    "staleness_mean": {
        "units": "pairs",
        "long_name": "mean over jobs of the pairs that arrived between a job's dispatch and "
        "its arrival",
    },
    "staleness_p50": {"units": "pairs", "long_name": "median over jobs of the staleness"},
    "staleness_p90": {"units": "pairs", "long_name": "90th percentile over jobs of the staleness"},
    "staleness_p99": {"units": "pairs", "long_name": "99th percentile over jobs of the staleness"},
    "staleness_max": {"units": "pairs", "long_name": "largest staleness of any job"},
    "in_flight_mean_fraction": {
        "units": "1",
        "long_name": "mean over jobs of the pairs of other jobs in flight at the job's "
        "dispatch, as a share of the budget",
    },
    "in_flight_max_fraction": {
        "units": "1",
        "long_name": "largest share of the budget in flight (other jobs) at any job's dispatch",
    },
    "lag_p50": {
        "units": "pairs",
        "long_name": "median over jobs of the out-of-order lag job_offset - pairs arrived "
        "before the job's arrival (dispatch counter; > 0: finished ahead of the head of line)",
    },
    "lag_p90": {"units": "pairs", "long_name": "90th percentile over jobs of the out-of-order lag"},
    "lag_p99": {"units": "pairs", "long_name": "99th percentile over jobs of the out-of-order lag"},
    "lag_norm_p50": {
        "units": "batches",
        "long_name": "median over jobs of the out-of-order lag divided by the job's pairs",
    },
    "lag_norm_p90": {
        "units": "batches",
        "long_name": "90th percentile over jobs of the out-of-order lag divided by the job's pairs",
    },
    "lag_norm_p99": {
        "units": "batches",
        "long_name": "99th percentile over jobs of the out-of-order lag divided by the job's pairs",
    },
    "lag_abs_mean_pairs": {
        "units": "pairs",
        "long_name": "pair-weighted mean absolute out-of-order lag, sum |lag_i| N_i / sum N_i "
        "(the spec's out-of-order 'share', not a percentage)",
    },
    "batch_mean_jobs": {"units": "pairs", "long_name": "mean job size over jobs"},
    "batch_median_jobs": {"units": "pairs", "long_name": "median job size over jobs"},
    "batch_mean_pairs": {
        "units": "pairs",
        "long_name": "pair-weighted mean job size (mean size of the job a random pair belongs to)",
    },
    "batch_median_pairs": {
        "units": "pairs",
        "long_name": "pair-weighted median job size (median size of the job a random pair "
        "belongs to)",
    },
    "concurrency": {"units": "games", "long_name": "worker concurrency (games played in parallel)"},
    "speed_factor": {
        "units": "1",
        "long_name": "worker speed factor (job wall time = makespan / speed factor)",
    },
    "pairs_processed": {"units": "pairs", "long_name": "pairs completed by the worker"},
    "jobs_processed": {"units": "jobs", "long_name": "jobs completed by the worker"},
    "budget_exhausted": {
        "units": "1",
        "long_name": "whether the pairs that arrived equal the budget num_pairs",
    },
    "n_jobs": {"units": "jobs", "long_name": "number of jobs in the schedule"},
}


def _lerp(low: np.ndarray, high: np.ndarray, t: np.ndarray) -> np.ndarray:
    """numpy's interpolation between order statistics (symmetric in rounding)."""
    diff = high - low
    return np.where(t >= 0.5, high - diff * (1.0 - t), low + diff * t)


def row_quantiles(values: np.ndarray, mask: np.ndarray, qs) -> np.ndarray:
    """Quantiles ``qs`` of each row's masked values (linear method), ``(q, row)``.

    Equals ``np.nanquantile`` with the unmasked entries set to NaN; rows without
    values give NaN.
    """
    values = np.where(mask, values.astype(np.float64), np.inf)
    ranked = np.sort(values, axis=1)
    count = mask.sum(axis=1)
    qs = np.asarray(qs, dtype=np.float64)[:, None]
    position = (np.maximum(count, 1) - 1)[None, :] * qs  # (q, row)
    low = np.floor(position).astype(np.int64)
    high = np.minimum(low + 1, np.maximum(count - 1, 0)[None, :])
    rows = np.arange(values.shape[0])[None, :]
    out = _lerp(ranked[rows, low], ranked[rows, high], position - low)
    return np.where(count[None, :] > 0, out, np.nan)


def pair_weighted_median(sizes: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Median over pairs of the size of their job, per row: ``np.median(np.repeat(N, N))``."""
    sizes = np.where(mask, sizes, 0).astype(np.int64)
    ranked = np.sort(np.where(mask, sizes, np.iinfo(np.int64).max), axis=1)
    weight = np.where(ranked == np.iinfo(np.int64).max, 0, ranked)
    cumulative = np.cumsum(weight, axis=1)
    total = cumulative[:, -1]
    rows = np.arange(sizes.shape[0])
    width = sizes.shape[1]

    def pair_value(index: np.ndarray) -> np.ndarray:  # size of the job holding pair `index`
        job = np.minimum((cumulative <= index[:, None]).sum(axis=1), width - 1)
        return ranked[rows, job].astype(np.float64)

    low = pair_value(np.maximum(total - 1, 0) // 2)
    high = pair_value(total // 2)
    return np.where(total > 0, 0.5 * (low + high), np.nan)


def schedule_kpis(schedule: Schedule) -> dict[str, tuple[tuple[str, ...], np.ndarray]]:
    """All schedule KPIs of every seed (see the module docstring and :data:`KPI_ATTRS`).

    Every KPI of a seed depends on that seed's row alone, so when every seed has the
    same schedule (the synchronous mode) they are computed once and repeated."""
    if schedule.num_seeds > 1 and schedule.identical_seeds():
        one = schedule_kpis(schedule.first_seed())
        n_seeds = schedule.num_seeds
        return {
            name: (dims, np.repeat(values, n_seeds, axis=0)) for name, (dims, values) in one.items()
        }
    n_seeds, n_workers = schedule.num_seeds, schedule.num_workers
    mask = schedule.job_mask()
    pairs = np.where(mask, schedule.job_pairs, 0)
    total_pairs = pairs.sum(axis=1)
    out: dict[str, tuple[tuple[str, ...], np.ndarray]] = {}

    last = np.where(mask, schedule.job_arrival_time, -np.inf).max(axis=1)
    out["simulated_duration"] = (("seed",), last)

    stale = schedule.staleness_pairs().astype(np.float64)
    n_jobs_f = np.maximum(mask.sum(axis=1), 1)
    out["staleness_mean"] = (("seed",), np.where(mask, stale, 0.0).sum(axis=1) / n_jobs_f)
    for name, value in zip(
        QUANTILES, row_quantiles(stale, mask, list(QUANTILES.values())), strict=True
    ):
        out[f"staleness_{name}"] = (("seed",), value)
    out["staleness_max"] = (("seed",), np.where(mask, stale, -np.inf).max(axis=1))

    # pairs of other jobs in flight when a job is dispatched, as a share of the budget
    in_flight = (schedule.job_offset - schedule.job_arrived_before).astype(np.float64)
    budget = float(schedule.num_pairs)
    mean_in_flight = np.where(mask, in_flight, 0.0).sum(axis=1) / n_jobs_f
    out["in_flight_mean_fraction"] = (("seed",), mean_in_flight / budget)
    out["in_flight_max_fraction"] = (
        ("seed",),
        np.where(mask, in_flight, 0.0).max(axis=1) / budget,
    )

    lag = (schedule.job_offset - schedule.arrived_before_arrival()).astype(np.float64)
    lag_norm = lag / np.maximum(pairs, 1)
    for name, value in zip(
        QUANTILES, row_quantiles(lag, mask, list(QUANTILES.values())), strict=True
    ):
        out[f"lag_{name}"] = (("seed",), value)
    norm_quantiles = row_quantiles(lag_norm, mask, list(QUANTILES.values()))
    for name, value in zip(QUANTILES, norm_quantiles, strict=True):
        out[f"lag_norm_{name}"] = (("seed",), value)
    weighted_lag = np.where(mask, np.abs(lag) * pairs, 0.0).sum(axis=1)
    out["lag_abs_mean_pairs"] = (("seed",), weighted_lag / np.maximum(total_pairs, 1))

    out["batch_mean_jobs"] = (("seed",), total_pairs / n_jobs_f)
    out["batch_median_jobs"] = (("seed",), row_quantiles(pairs, mask, [0.5])[0])
    squares = (pairs.astype(np.float64) ** 2).sum(axis=1)
    out["batch_mean_pairs"] = (("seed",), squares / np.maximum(total_pairs, 1))
    out["batch_median_pairs"] = (("seed",), pair_weighted_median(pairs, mask))

    out["concurrency"] = (("seed", "worker"), schedule.worker_concurrency.copy())
    out["speed_factor"] = (("seed", "worker"), schedule.worker_speed.copy())
    cell = (np.arange(n_seeds)[:, None] * n_workers + np.maximum(schedule.job_worker, 0))[mask]
    size = n_seeds * n_workers
    per_pairs = np.bincount(cell, weights=pairs[mask], minlength=size)
    per_jobs = np.bincount(cell, minlength=size)
    out["pairs_processed"] = (
        ("seed", "worker"),
        per_pairs.astype(np.int64).reshape(n_seeds, n_workers),
    )
    out["jobs_processed"] = (
        ("seed", "worker"),
        per_jobs.astype(np.int64).reshape(n_seeds, n_workers),
    )

    arrived = schedule.arrival_pairs().sum(axis=1)
    out["budget_exhausted"] = (("seed",), arrived == schedule.num_pairs)
    out["n_jobs"] = (("seed",), schedule.n_jobs.astype(np.int64).copy())
    return out
