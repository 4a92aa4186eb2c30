"""The vectorized asynchronous scheduler against its scalar heapq reference, and its invariants."""

import dataclasses
import math

import numpy as np
import pytest
from scipy.stats import norm

import spsa_bench.dispatch.asynchronous as async_module
from spsa_bench.dispatch.asynchronous import (
    AsyncSettings,
    async_schedule,
    game_durations,
    greedy_makespan,
    make_workers,
)
from spsa_bench.dispatch.schedule import sync_schedule
from spsa_bench.reference import async_runner

ENTROPY = 20240611


def assert_matches_reference(schedule, settings, num_pairs, workers=None):
    for row, seed in enumerate(schedule.seeds):
        pool = None if workers is None else (workers[0][row], workers[1][row])
        ref = async_runner.run_reference(ENTROPY, int(seed), num_pairs, settings, workers=pool)
        n = int(schedule.n_jobs[row])
        assert n == len(ref.job_worker)
        assert schedule.worker_concurrency[row].tolist() == ref.concurrency
        assert schedule.worker_speed[row].tolist() == ref.speed
        assert schedule.job_worker[row, :n].tolist() == ref.job_worker
        assert schedule.job_pairs[row, :n].tolist() == ref.job_pairs
        assert schedule.job_offset[row, :n].tolist() == ref.job_offset
        assert schedule.job_arrived_before[row, :n].tolist() == ref.job_arrived_before
        assert schedule.arrival_job[row, :n].tolist() == ref.arrival_job
        np.testing.assert_allclose(
            schedule.job_dispatch_time[row, :n], ref.job_dispatch_time, rtol=1e-12, atol=0
        )
        np.testing.assert_allclose(
            schedule.job_arrival_time[row, :n], ref.job_arrival_time, rtol=1e-12, atol=0
        )
        # padding
        assert np.all(schedule.job_pairs[row, n:] == 0) and np.all(
            schedule.job_worker[row, n:] == -1
        )
        assert np.all(schedule.arrival_job[row, n:] == -1)
        assert np.all(np.isnan(schedule.job_arrival_time[row, n:]))


CASES = [
    # (num_workers, batch, extra settings, num_pairs)
    (1, "fixed", {}, 400),
    (1, "variable", {}, 300),
    (3, "fixed", {"batch_size": 7}, 500),
    (3, "variable", {"concurrency_min": 4, "concurrency_max": 32}, 1000),
    (20, "fixed", {}, 3001),
    (20, "variable", {}, 3000),
    (20, "variable", {"tc_ratio": 0.4}, 400),  # round(0.4) = 0: one-pair jobs
    (7, "variable", {"tc_ratio": 2.0, "speed_min": 0.1, "speed_max": 3.0}, 2500),
    (20, "fixed", {}, 100),  # less than one round of jobs
]


@pytest.mark.parametrize(("workers", "batch", "extra", "num_pairs"), CASES)
def test_matches_heapq_reference_event_by_event(workers, batch, extra, num_pairs):
    settings = AsyncSettings(num_workers=workers, batch=batch, **extra)
    schedule = async_schedule(ENTROPY, [0, 3, 11], num_pairs, settings)
    assert_matches_reference(schedule, settings, num_pairs)


def test_given_worker_pool_matches_reference():
    settings = AsyncSettings(num_workers=3, batch="variable")
    concurrency = np.array([[1, 64, 4], [8, 8, 2]])
    speed = np.array([[40.0, 0.05, 1.0], [1.0, 1.0, 0.7]])
    schedule = async_schedule(ENTROPY, [5, 6], 2000, settings, workers=(concurrency, speed))
    assert_matches_reference(schedule, settings, 2000, workers=(concurrency, speed))


def test_result_does_not_depend_on_the_job_count_estimate(monkeypatch):
    settings = AsyncSettings(batch="variable")
    expected = async_schedule(ENTROPY, range(4), 2500, settings)
    original = async_module.expected_job_time
    for factor in (0.05, 30.0):  # far too many jobs first, then far too few (extension loop)
        monkeypatch.setattr(
            async_module, "expected_job_time", lambda *a, f=factor: f * original(*a)
        )
        got = async_schedule(ENTROPY, range(4), 2500, settings)
        for field in dataclasses.fields(expected):
            np.testing.assert_array_equal(getattr(got, field.name), getattr(expected, field.name))


def scalar_makespans(durations, lanes):
    return np.array([async_runner.greedy_makespan(row, lanes) for row in durations])


@pytest.mark.parametrize("method", ["auto", "sorted", "argmin"])
@pytest.mark.parametrize(
    ("games", "lanes"), [(4, 1), (72, 2), (72, 8), (40, 16), (256, 64), (6, 6), (8, 64)]
)
def test_vectorized_makespan_equals_heap_reference(method, games, lanes):
    rng = np.random.default_rng(games * 100 + lanes)
    durations = np.exp(5 + 0.7 * rng.standard_normal((60, games)))
    durations[:10] = rng.integers(1, 4, size=(10, games))  # many ties
    got = greedy_makespan(durations, lanes, method=method)
    np.testing.assert_array_equal(got, scalar_makespans(durations, lanes))


def test_makespan_structure():
    durations = np.array([[3.0, 1.0, 1.0, 1.0, 2.0]])
    # lanes 2: 3 | 1 -> 3 | 2 -> 3 | 3 -> 5 | 3 (the tie goes to lane 0) -> makespan 5
    assert greedy_makespan(durations, 2).tolist() == [5.0]
    assert greedy_makespan(durations, 5).tolist() == [3.0]  # one game per lane
    assert greedy_makespan(durations, 1).tolist() == [8.0]


@pytest.mark.parametrize("batch", ["fixed", "variable"])
@pytest.mark.parametrize("num_pairs", [1, 5, 37, 100, 719, 10007])
def test_exact_budget_every_seed(batch, num_pairs):
    settings = AsyncSettings(batch=batch)
    schedule = async_schedule(ENTROPY, range(6), num_pairs, settings)
    mask = schedule.job_mask()
    rows = np.arange(6)[:, None]
    assert np.all(schedule.job_pairs.sum(axis=1) == num_pairs)  # dispatched
    arrived = np.where(
        schedule.arrival_job >= 0, schedule.job_pairs[rows, np.maximum(schedule.arrival_job, 0)], 0
    )
    assert np.all(arrived.sum(axis=1) == num_pairs)  # arrived
    assert np.all((schedule.arrival_job >= 0).sum(axis=1) == schedule.n_jobs)
    assert np.all(
        np.sort(np.where(mask, schedule.arrival_job, -1), axis=1)
        == np.sort(np.where(mask, np.arange(schedule.max_jobs), -1), axis=1)
    )  # every job arrives once
    assert np.all(schedule.job_pairs[mask] >= 1)
    offsets = np.cumsum(schedule.job_pairs, axis=1) - schedule.job_pairs
    assert np.array_equal(np.where(mask, offsets, 0), schedule.job_offset)
    # only the last dispatched job is cut
    full = settings.job_pairs(schedule.worker_concurrency)[rows, np.maximum(schedule.job_worker, 0)]
    last = np.arange(schedule.max_jobs)[None, :] == (schedule.n_jobs - 1)[:, None]
    assert np.all(np.where(mask & ~last, schedule.job_pairs == full, True))
    assert np.all(np.where(last, schedule.job_pairs <= full, True))


def test_schedule_conventions_hold():
    settings = AsyncSettings(batch="variable")
    s = async_schedule(ENTROPY, range(5), 5000, settings)
    w = s.num_workers
    rows = np.arange(5)[:, None]
    for row in range(5):
        n = s.n_jobs[row]
        arrivals = s.arrival_job[row, :n]
        later = np.arange(w, n)  # job W + e follows arrival e
        e = later - w
        assert np.array_equal(s.job_worker[row, later], s.job_worker[row, arrivals[e]])
        assert np.array_equal(s.job_dispatch_time[row, later], s.job_arrival_time[row, arrivals[e]])
        cumulative = np.cumsum(s.job_pairs[row, arrivals])
        assert np.array_equal(s.job_arrived_before[row, later], cumulative[e])
        assert np.all(s.job_arrived_before[row, :w] == 0) and np.all(
            s.job_dispatch_time[row, :w] == 0
        )
        assert np.all(np.diff(s.job_arrival_time[row, arrivals]) >= 0)
        assert np.all(np.diff(s.job_dispatch_time[row, :n]) >= 0)
        assert np.all(s.job_arrival_time[row, :n] > s.job_dispatch_time[row, :n])
    assert np.all(s.job_arrived_before <= s.job_offset)
    del rows


def test_one_worker_fixed_batch_is_sync():
    settings = AsyncSettings(num_workers=1, batch="fixed", batch_size=36)
    got = async_schedule(ENTROPY, range(4), 1000, settings)
    expected = sync_schedule(range(4), 1000, 36)
    for field in dataclasses.fields(expected):
        if field.name in (
            "job_dispatch_time",
            "job_arrival_time",
            "worker_concurrency",
            "worker_speed",
        ):
            continue
        np.testing.assert_array_equal(getattr(got, field.name), getattr(expected, field.name))
    assert np.all(got.staleness_pairs() == 0)
    assert np.all(np.diff(got.job_arrival_time, axis=1) > 0)


def test_twenty_workers_make_jobs_stale():
    settings = AsyncSettings(batch="fixed")
    s = async_schedule(ENTROPY, range(4), 3000, settings)
    stale = s.staleness_pairs()[s.job_mask()]
    assert np.all(stale >= 0)
    assert np.mean(stale > 0) > 0.9


def test_lognormal_calibration():
    settings = AsyncSettings(duration_median=180.0, duration_p95=540.0)
    n = 200_000
    draws = game_durations(ENTROPY, 0, 0, n, settings)
    sigma = (math.log(540) - math.log(180)) / 1.645
    for p, target in ((0.5, 180.0), (0.95, 540.0)):
        z = norm.ppf(p)
        density = norm.pdf(z) / (target * sigma)  # log-normal pdf at its p-quantile
        standard_error = math.sqrt(p * (1 - p) / n) / density
        assert abs(np.quantile(draws, p) - target) < 4 * standard_error, p
    # the schedule plays exactly these games: a one-pair job on one lane is their sum
    one = AsyncSettings(num_workers=1, batch_size=1, concurrency_min=1, concurrency_max=1)
    s = async_schedule(ENTROPY, [0], 3, one)
    first = game_durations(ENTROPY, 0, 0, 6, one)
    speed = s.worker_speed[0, 0]
    assert s.job_arrival_time[0, 0] == pytest.approx((first[0] + first[1]) / speed, rel=1e-12)
    assert s.job_arrival_time[0, 2] == pytest.approx(first.sum() / speed, rel=1e-12)


def test_seed_chunk_invariance():
    for batch in ("fixed", "variable"):
        settings = AsyncSettings(batch=batch)
        alone = async_schedule(ENTROPY, [7], 4000, settings)
        many = async_schedule(ENTROPY, range(12), 4000, settings)
        n = int(alone.n_jobs[0])
        assert many.n_jobs[7] == n
        for field in dataclasses.fields(alone):
            a, b = getattr(alone, field.name), getattr(many, field.name)
            if field.name in ("num_workers", "num_pairs"):
                assert a == b
            elif a is None:  # job_lead: BATCHED reporting only
                assert b is None
            elif field.name in ("seeds", "n_jobs"):
                assert a[0] == b[7]
            elif field.name.startswith("worker_"):
                np.testing.assert_array_equal(a[0], b[7])
            else:
                np.testing.assert_array_equal(a[0, :n], b[7, :n])
                assert a.shape[1] == n or np.all(a[0, n:] == b[7, n : max(n, a.shape[1])])


@pytest.mark.parametrize("batch", ["fixed", "variable"])
def test_fast_worker_completes_more_pairs(batch):
    n_seeds = 30
    settings = AsyncSettings(num_workers=2, batch=batch)
    concurrency = np.full((n_seeds, 2), 8)
    speed = np.tile([2.0, 0.5], (n_seeds, 1))
    s = async_schedule(ENTROPY, range(n_seeds), 2000, settings, workers=(concurrency, speed))
    mask = s.job_mask()
    fast = np.where(mask & (s.job_worker == 0), s.job_pairs, 0).sum(axis=1)
    slow = np.where(mask & (s.job_worker == 1), s.job_pairs, 0).sum(axis=1)
    diff = fast - slow
    assert diff.mean() > 4 * diff.std(ddof=1) / math.sqrt(n_seeds)


def test_make_workers_draws():
    settings = AsyncSettings(num_workers=20, concurrency_min=3, concurrency_max=40)
    concurrency, speed = make_workers(ENTROPY, range(200), settings)
    assert concurrency.shape == speed.shape == (200, 20)
    levels, counts = np.unique(concurrency, return_counts=True)
    assert levels.tolist() == [4, 8, 16, 32]
    expected = concurrency.size / 4  # binomial counts: sd = sqrt(n p (1 - p))
    assert np.all(np.abs(counts - expected) < 4 * math.sqrt(concurrency.size * 0.25 * 0.75))
    assert speed.min() >= 0.5 and speed.max() <= 2.0
    assert abs(speed.mean() - 1.25) < 4 * (1.5 / math.sqrt(12)) / math.sqrt(speed.size)
    # adding workers keeps the existing ones
    fewer = make_workers(ENTROPY, range(200), dataclasses.replace(settings, num_workers=5))
    np.testing.assert_array_equal(fewer[0], concurrency[:, :5])
    np.testing.assert_array_equal(fewer[1], speed[:, :5])


def test_job_sizes():
    variable = AsyncSettings(batch="variable", tc_ratio=1.0)
    assert variable.job_pairs([1, 2, 64]).tolist() == [2, 4, 128]
    assert AsyncSettings(batch="variable", tc_ratio=3.0).job_pairs([1, 4]).tolist() == [6, 24]
    assert AsyncSettings(batch="variable", tc_ratio=0.3).job_pairs([1, 64]).tolist() == [1, 1]
    assert AsyncSettings(batch="fixed", batch_size=5).job_pairs([1, 64]).tolist() == [5, 5]


def test_defaults():
    s = AsyncSettings()
    assert (s.num_workers, s.batch, s.batch_size) == (20, "fixed", 36)
    assert (s.concurrency_min, s.concurrency_max, s.speed_min, s.speed_max) == (1, 64, 0.5, 2.0)
    assert (s.tc_ratio, s.duration_median, s.duration_p95) == (1.0, 180.0, 540.0)
    assert s.concurrency_levels().tolist() == [1, 2, 4, 8, 16, 32, 64]


def test_no_power_of_two_in_range():
    with pytest.raises(ValueError, match=r"concurrency.*5.*7"):
        AsyncSettings(concurrency_min=5, concurrency_max=7)


@pytest.mark.parametrize(
    ("field", "value", "pattern"),
    [
        ("num_workers", 0, "num_workers"),
        ("num_workers", 2.5, "num_workers"),
        ("batch", "random", "batch"),
        ("batch_size", 0, "batch_size"),
        ("concurrency_min", 0, "concurrency_min"),
        ("concurrency_max", 0, "concurrency_max"),
        ("speed_min", 0.0, "speed_min"),
        ("speed_min", 3.0, "speed_min = 3.0.*speed_max = 2.0"),
        ("tc_ratio", 0.0, "tc_ratio"),
        ("tc_ratio", float("nan"), "tc_ratio"),
        ("duration_median", -1.0, "duration_median"),
        ("duration_p95", 180.0, "duration_p95 = 180.0.*duration_median = 180.0"),
        ("concurrency_min", 128, "concurrency_min = 128.*concurrency_max = 64"),
    ],
)
def test_invalid_settings(field, value, pattern):
    with pytest.raises(ValueError, match=pattern):
        AsyncSettings(**{field: value})


def test_invalid_arguments():
    with pytest.raises(ValueError, match="num_pairs"):
        async_schedule(ENTROPY, [0], 0, AsyncSettings())
    with pytest.raises(ValueError, match="workers"):
        async_schedule(
            ENTROPY,
            [0, 1],
            10,
            AsyncSettings(num_workers=2),
            workers=(np.ones((1, 2)), np.ones((1, 2))),
        )
