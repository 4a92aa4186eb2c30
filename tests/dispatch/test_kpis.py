"""Schedule KPIs on hand-worked schedules, on sync, and their helpers."""

import numpy as np
import pytest

from spsa_bench.dispatch.asynchronous import AsyncSettings, async_schedule
from spsa_bench.dispatch.kpis import (
    KPI_ATTRS,
    pair_weighted_median,
    row_quantiles,
    schedule_kpis,
)
from spsa_bench.dispatch.schedule import Schedule, sync_schedule


def hand_schedule() -> Schedule:
    """Two workers, budget 11 pairs; seed A has 4 jobs, seed B 3 (one padding column).

    Seed A (worker 0 plays 2-pair jobs, worker 1 6-pair jobs):
      t=0  job 0 -> w0 (2 pairs, offset 0)    job 1 -> w1 (6 pairs, offset 2)
      t=5  job 0 arrives (arrival 0); job 2 -> w0 (2 pairs, offset 8, 2 arrived)
      t=6  job 2 arrives (arrival 1); job 3 -> w0, cut to 11 - 10 = 1 pair (offset 10, 4 arrived)
      t=7  job 1 arrives (arrival 2)
      t=8  job 3 arrives (arrival 3)
    Seed B (worker 0 plays 6-pair jobs, worker 1 4-pair jobs):
      t=0  job 0 -> w0 (6, offset 0)          job 1 -> w1 (4, offset 6)
      t=3  job 1 arrives (arrival 0); job 2 -> w1, cut to 1 pair (offset 10, 4 arrived)
      t=5  job 2 arrives (arrival 1)
      t=10 job 0 arrives (arrival 2)
    """
    nan = np.nan
    return Schedule(
        seeds=np.array([0, 1]),
        num_workers=2,
        num_pairs=11,
        n_jobs=np.array([4, 3]),
        job_pairs=np.array([[2, 6, 2, 1], [6, 4, 1, 0]]),
        job_offset=np.array([[0, 2, 8, 10], [0, 6, 10, 0]]),
        job_arrived_before=np.array([[0, 0, 2, 4], [0, 0, 4, 0]]),
        job_worker=np.array([[0, 1, 0, 0], [0, 1, 1, -1]]),
        job_dispatch_time=np.array([[0.0, 0.0, 5.0, 6.0], [0.0, 0.0, 3.0, nan]]),
        job_arrival_time=np.array([[5.0, 7.0, 6.0, 8.0], [10.0, 3.0, 5.0, nan]]),
        arrival_job=np.array([[0, 2, 1, 3], [1, 2, 0, -1]]),
        worker_concurrency=np.array([[4, 8], [2, 1]]),
        worker_speed=np.array([[1.0, 0.5], [2.0, 1.5]]),
    )


def test_hand_schedule_staleness_and_arrival_counters():
    schedule = hand_schedule()
    # pairs arrived before each job's arrival, worked out above
    assert schedule.arrived_before_arrival().tolist() == [[0, 4, 2, 10], [5, 0, 4, 0]]
    # staleness = that minus the pairs arrived before dispatch; job 0 of seed B
    # arrives last (5 pairs arrived meanwhile) and seed B has a padding event
    assert schedule.staleness_pairs().tolist() == [[0, 4, 0, 6], [5, 0, 0, 0]]


def test_hand_schedule_kpis():
    k = {name: value for name, (_, value) in schedule_kpis(hand_schedule()).items()}
    approx = pytest.approx
    assert k["simulated_duration"] == approx([8.0, 10.0])
    # staleness A: [0, 4, 0, 6] -> sorted [0, 0, 4, 6]; B: [5, 0, 0] -> [0, 0, 5]
    assert k["staleness_mean"] == approx([2.5, 5 / 3])
    assert k["staleness_p50"] == approx([2.0, 0.0])
    assert k["staleness_p90"] == approx([4 + 0.7 * 2, 0.8 * 5])  # positions 2.7 and 1.8
    assert k["staleness_p99"] == approx([4 + 0.97 * 2, 0.98 * 5])
    assert k["staleness_max"] == approx([6.0, 5.0])
    # lag = offset - arrived before arrival: A [0, -2, 6, 0]; B [-5, 6, 6]
    assert k["lag_p50"] == approx([0.0, 6.0])
    assert k["lag_p90"] == approx([0.7 * 6, 6.0])
    assert k["lag_p99"] == approx([0.97 * 6, 6.0])
    # lag / N: A [0, -1/3, 3, 0] -> sorted [-1/3, 0, 0, 3]; B [-5/6, 1.5, 6]
    assert k["lag_norm_p50"] == approx([0.0, 1.5])
    assert k["lag_norm_p90"] == approx([0.7 * 3, 1.5 + 0.8 * 4.5])
    assert k["lag_norm_p99"] == approx([0.97 * 3, 1.5 + 0.98 * 4.5])
    assert k["lag_abs_mean_pairs"] == approx([(2 * 6 + 6 * 2) / 11, (5 * 6 + 6 * 4 + 6 * 1) / 11])
    # batch sizes A [2, 6, 2, 1], B [6, 4, 1]
    assert k["batch_mean_jobs"] == approx([11 / 4, 11 / 3])
    assert k["batch_median_jobs"] == approx([2.0, 4.0])
    assert k["batch_mean_pairs"] == approx([45 / 11, 53 / 11])
    # A's 11 pairs: [1, 2,2,2,2, 6 x6] -> 6th pair is in a 6-job; B: [1, 4 x4, 6 x6] -> 6
    assert k["batch_median_pairs"] == approx([6.0, 6.0])
    assert k["concurrency"].tolist() == [[4, 8], [2, 1]]
    assert k["speed_factor"].tolist() == [[1.0, 0.5], [2.0, 1.5]]
    assert k["pairs_processed"].tolist() == [[5, 6], [6, 5]]
    assert k["jobs_processed"].tolist() == [[3, 1], [1, 2]]
    assert k["budget_exhausted"].tolist() == [True, True]
    assert k["n_jobs"].tolist() == [4, 3]


def test_kpi_dims_and_attrs():
    kpis = schedule_kpis(hand_schedule())
    assert set(kpis) == set(KPI_ATTRS)
    for name, (dims, value) in kpis.items():
        assert dims in (("seed",), ("seed", "worker")), name
        assert value.shape == ((2,) if dims == ("seed",) else (2, 2)), name
        assert KPI_ATTRS[name]["units"] and len(KPI_ATTRS[name]["long_name"]) > 10


def test_sync_kpis_have_zero_staleness_and_lag():
    schedule = sync_schedule(np.arange(3), 1000, 36)
    k = {name: value for name, (_, value) in schedule_kpis(schedule).items()}
    assert np.all(np.isnan(k["simulated_duration"]))
    for name in ("staleness_mean", "staleness_p50", "staleness_p99", "staleness_max", "lag_p50"):
        assert np.all(k[name] == 0), name
    for name in ("lag_p90", "lag_p99", "lag_norm_p99", "lag_abs_mean_pairs"):
        assert np.all(k[name] == 0), name
    assert np.all(k["budget_exhausted"])
    assert k["pairs_processed"].tolist() == [[1000]] * 3
    assert k["jobs_processed"].tolist() == [[28]] * 3
    assert k["batch_mean_jobs"] == pytest.approx(1000 / 28)
    assert k["batch_median_jobs"] == pytest.approx([36.0] * 3)
    assert k["batch_mean_pairs"] == pytest.approx((27 * 36**2 + 28**2) / 1000)


def test_async_kpis_are_consistent():
    settings = AsyncSettings(num_workers=10, batch="variable", concurrency_max=16)
    schedule = async_schedule(3, range(5), 2000, settings)
    k = {name: value for name, (_, value) in schedule_kpis(schedule).items()}
    assert np.all(k["budget_exhausted"])
    assert np.array_equal(k["pairs_processed"].sum(axis=1), [2000] * 5)
    assert np.array_equal(k["jobs_processed"].sum(axis=1), schedule.n_jobs)
    assert np.all(k["staleness_max"] > 0) and np.all(k["staleness_mean"] > 0)
    assert np.allclose(k["simulated_duration"], np.nanmax(schedule.job_arrival_time, axis=1))
    # variable batches: bigger jobs hold more pairs, so the pair-weighted mean is larger
    assert np.all(k["batch_mean_pairs"] > k["batch_mean_jobs"])


def test_row_quantiles_match_numpy_on_ragged_rows():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(6, 40)) * 10
    values[2] = np.round(values[2])  # ties
    counts = np.array([40, 1, 17, 2, 39, 5])
    mask = np.arange(40)[None, :] < counts[:, None]
    qs = [0.0, 0.1, 0.5, 0.9, 0.99, 1.0]
    expected = np.nanquantile(np.where(mask, values, np.nan), qs, axis=1)
    assert np.allclose(row_quantiles(values, mask, qs), expected, rtol=0, atol=1e-12)


def test_pair_weighted_median_matches_repeated_median():
    rng = np.random.default_rng(2)
    sizes = rng.integers(1, 40, size=(8, 12))
    counts = np.array([12, 1, 2, 5, 7, 12, 3, 9])
    mask = np.arange(12)[None, :] < counts[:, None]
    expected = [
        np.median(np.repeat(row[:n], row[:n])) for row, n in zip(sizes, counts, strict=True)
    ]
    assert pair_weighted_median(sizes, mask) == pytest.approx(expected)
    # even pair counts whose two middle pairs sit in different jobs: the mean of both
    # ([1, 3, 4] -> pairs 1,3,3,3 | 4,4,4,4; [2, 1, 1] -> pairs 1,1 | 2,2); odd: [2, 1, pad] -> 2
    sizes = np.array([[1, 3, 4], [2, 1, 1], [2, 1, 9]])
    hand = pair_weighted_median(sizes, np.array([[1, 1, 1], [1, 1, 1], [1, 1, 0]]) > 0)
    assert hand.tolist() == [3.5, 1.5, 2.0]


def _one_seed_repeated(schedule: Schedule, seeds: int) -> Schedule:
    """``schedule``'s first seed as the schedule of ``seeds`` identical seeds."""
    import dataclasses

    from spsa_bench.dispatch.schedule import PER_SEED_FIELDS

    first = schedule.first_seed()
    rows = {name: np.repeat(getattr(first, name), seeds, axis=0) for name in PER_SEED_FIELDS}
    return dataclasses.replace(schedule, seeds=np.arange(seeds), **rows)


def test_identical_seeds_is_seen_and_any_difference_breaks_it():
    assert sync_schedule(np.arange(4), 100, 7).identical_seeds()
    settings = AsyncSettings(num_workers=3, batch_size=5)
    asynchronous = async_schedule(11, np.arange(4), 100, settings)
    assert not asynchronous.identical_seeds()
    repeated = _one_seed_repeated(asynchronous, 3)  # NaN times compare equal to themselves
    assert repeated.identical_seeds()
    repeated.worker_speed[2, 0] += 1e-12
    assert not repeated.identical_seeds()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_kpis_computed_once_for_identical_seeds_equal_the_seed_by_seed_ones(mode, monkeypatch):
    """Identical seeds take the shortcut (one seed's KPIs, repeated): the same arrays,
    bit for bit and dtype for dtype, as the general path seed by seed."""
    if mode == "sync":
        schedule = sync_schedule(np.arange(5), 1000, 36)
    else:
        settings = AsyncSettings(num_workers=4, batch_size=9)
        schedule = _one_seed_repeated(async_schedule(3, np.arange(2), 1000, settings), 5)
    assert schedule.identical_seeds()
    fast = schedule_kpis(schedule)
    monkeypatch.setattr(Schedule, "identical_seeds", lambda self: False)
    general = schedule_kpis(schedule)
    assert fast.keys() == general.keys()
    for name, (dims, values) in general.items():
        assert fast[name][0] == dims, name
        assert fast[name][1].dtype == values.dtype, name
        np.testing.assert_array_equal(fast[name][1], values, err_msg=name)
