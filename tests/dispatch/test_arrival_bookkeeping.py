"""The one arrival bookkeeping of dispatch.schedule against a literal loop over arrivals,
and the one definition of the asynchronous defaults and checks."""

from pathlib import Path

import numpy as np
import pytest

from spsa_bench.config.loader import ConfigError, read_yaml, resolve
from spsa_bench.dispatch.asynchronous import (
    CONFIG_KEYS,
    AsyncSettings,
    async_schedule,
    check_async_settings,
    sort_rows,
)
from spsa_bench.dispatch.schedule import Schedule, arrived_before_dispatch, sync_schedule

ENTROPY = 777


def literal_bookkeeping(schedule: Schedule, row: int) -> dict[str, list[int]]:
    """Walk one seed's arrivals in order with plain counters (the textbook definitions)."""
    n = int(schedule.n_jobs[row])
    pairs = [int(p) for p in schedule.job_pairs[row, :n]]
    order = [int(j) for j in schedule.arrival_job[row, :n]]
    workers = schedule.num_workers
    dispatched_before = []
    total = 0
    for size in pairs:  # dispatch order
        dispatched_before.append(total)
        total += size
    arrived_before_dispatch = [0] * n  # jobs 0 .. W-1 leave at time 0
    arrived_before_arrival = [0] * n
    arrival_pairs, arrival_worker, arrival_iter = [], [], []
    arrived = 0
    for event, job in enumerate(order):
        arrival_pairs.append(pairs[job])
        arrival_worker.append(int(schedule.job_worker[row, job]))
        arrival_iter.append(int(schedule.job_arrived_before[row, job]) + 1)
        arrived_before_arrival[job] = arrived
        arrived += pairs[job]
        if workers + event < n:  # the freed worker takes job W + e
            arrived_before_dispatch[workers + event] = arrived
    return {
        "dispatched_before": dispatched_before,
        "arrived_before_dispatch": arrived_before_dispatch,
        "arrived_before_arrival": arrived_before_arrival,
        "staleness": [
            a - d for a, d in zip(arrived_before_arrival, arrived_before_dispatch, strict=True)
        ],
        "arrival_pairs": arrival_pairs,
        "arrival_worker": arrival_worker,
        "arrival_iter": arrival_iter,
    }


SCHEDULES = {
    "async-fixed": lambda: async_schedule(
        ENTROPY, np.arange(6), 400, AsyncSettings(num_workers=5, batch_size=23)
    ),
    "async-variable": lambda: async_schedule(
        ENTROPY, np.arange(6), 900, AsyncSettings(num_workers=7, batch="variable")
    ),
    "fewer-jobs-than-workers": lambda: async_schedule(
        ENTROPY, np.arange(3), 40, AsyncSettings(num_workers=9, batch_size=36)
    ),
    "sync": lambda: sync_schedule(np.arange(2), 100, 7),
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_bookkeeping_matches_literal_loop(name):
    schedule = SCHEDULES[name]()
    if name == "async-variable":  # ragged job counts: padding jobs and events are covered
        assert np.any(schedule.n_jobs < schedule.max_jobs)
    by_arrival_worker = schedule.by_arrival(schedule.job_worker)
    by_arrival_iter = schedule.by_arrival(schedule.iter_local("arrival"))
    computed = arrived_before_dispatch(
        schedule.job_pairs, schedule.arrival_job, schedule.num_workers, schedule.n_jobs
    )
    for row in range(schedule.num_seeds):
        n = int(schedule.n_jobs[row])
        want = literal_bookkeeping(schedule, row)
        assert schedule.job_offset[row, :n].tolist() == want["dispatched_before"]
        assert schedule.iter_local("dispatch")[row, :n].tolist() == [
            d + 1 for d in want["dispatched_before"]
        ]
        assert computed[row, :n].tolist() == want["arrived_before_dispatch"]
        assert schedule.job_arrived_before[row, :n].tolist() == want["arrived_before_dispatch"]
        assert schedule.iter_local("arrival")[row, :n].tolist() == [
            a + 1 for a in want["arrived_before_dispatch"]
        ]
        assert schedule.arrived_before_arrival()[row, :n].tolist() == want["arrived_before_arrival"]
        assert schedule.staleness_pairs()[row, :n].tolist() == want["staleness"]
        assert schedule.arrival_pairs()[row, :n].tolist() == want["arrival_pairs"]
        assert by_arrival_worker[row, :n].tolist() == want["arrival_worker"]
        assert by_arrival_iter[row, :n].tolist() == want["arrival_iter"]
        # padding: no pairs, no staleness, and the events read a real job (job 0)
        assert not schedule.arrival_mask()[row, n:].any()
        assert np.all(schedule.arrival_pairs()[row, n:] == 0)
        assert np.all(schedule.staleness_pairs()[row, n:] == 0)
        assert np.all(computed[row, n:] == 0)
        assert np.all(by_arrival_worker[row, n:] == schedule.job_worker[row, 0])


def test_padding_events_do_not_write_over_job_zero():
    """A seed whose job 0 arrives last, with a padding event: the scatter must skip it."""
    schedule = Schedule(
        seeds=np.array([0]),
        num_workers=2,
        num_pairs=7,
        n_jobs=np.array([2]),
        job_pairs=np.array([[4, 3, 0]]),
        job_offset=np.array([[0, 4, 0]]),
        job_arrived_before=np.array([[0, 0, 0]]),
        job_worker=np.array([[0, 1, -1]]),
        job_dispatch_time=np.array([[0.0, 0.0, np.nan]]),
        job_arrival_time=np.array([[9.0, 2.0, np.nan]]),
        arrival_job=np.array([[1, 0, -1]]),
        worker_concurrency=np.array([[1, 1]]),
        worker_speed=np.array([[1.0, 1.0]]),
    )
    assert schedule.arrived_before_arrival().tolist() == [[3, 0, 0]]
    assert schedule.staleness_pairs().tolist() == [[3, 0, 0]]


def test_sort_rows_breaks_ties_by_column_or_tiebreak():
    keys = np.array([[2.0, 1.0, 1.0, np.inf], [0.5, 0.5, 0.1, 3.0]])
    assert sort_rows(keys).tolist() == [[1, 2, 0, 3], [2, 0, 1, 3]]
    tiebreak = np.array([[0, 5, 3, 0], [9, 4, 0, 0]])
    assert sort_rows(keys, tiebreak).tolist() == [[2, 1, 0, 3], [2, 1, 0, 3]]


def test_config_defaults_are_the_dataclass_defaults():
    defaults = AsyncSettings.config_defaults()
    built = AsyncSettings.from_config(
        {"workers": 20, "batch": "fixed", "batch_size": 36, **defaults}
    )
    assert built == AsyncSettings()
    assert defaults["concurrency"] == {"min": 1, "max": 64}
    assert defaults["game_duration"] == {"median": 180.0, "p95": 540.0}
    assert set(defaults) == {"concurrency", "speed", "tc_ratio", "game_duration"}


BAD = [
    (
        {"concurrency_min": 8, "concurrency_max": 4},
        "concurrency.min = 8: larger than concurrency.max = 4",
        "concurrency_min = 8: larger than concurrency_max = 4",
    ),
    (
        {"concurrency_min": 5, "concurrency_max": 7},
        "concurrency = {min: 5, max: 7}: no power of two",
        "concurrency_min = 5, concurrency_max = 7: no power of two",
    ),
    (
        {"speed_min": 2.0, "speed_max": 1.0},
        "speed.min = 2.0: larger than speed.max = 1.0",
        "speed_min = 2.0: larger than speed_max = 1.0",
    ),
    (
        {"duration_median": 180, "duration_p95": 100},
        "game_duration.p95 = 100: must be larger than game_duration.median = 180",
        "duration_p95 = 100: must be larger than duration_median = 180",
    ),
]


@pytest.mark.parametrize(("change", "as_config", "as_fields"), BAD)
def test_one_check_speaks_config_keys_and_field_names(change, as_config, as_fields):
    """The configuration loader and AsyncSettings run the same check; the loader's
    message names the keys and adds the batch mode's path."""
    raw = read_yaml(Path(__file__).parents[2] / "config" / "config.yaml")
    mode = next(m for m in raw["batch_modes"].values() if m["workers"] > 1)
    name = next(n for n, m in raw["batch_modes"].items() if m is mode)
    for field, value in change.items():
        parent, _, child = CONFIG_KEYS[field].rpartition(".")
        mode.setdefault(parent, dict(AsyncSettings.config_defaults()[parent]))[child] = value
    with pytest.raises(ConfigError) as loaded:
        resolve(raw)
    assert str(loaded.value).startswith(f"batch_modes.{name}.{as_config}")
    with pytest.raises(ValueError) as direct:
        AsyncSettings(**change)
    assert str(direct.value).startswith(as_fields)
    values = {field: getattr(AsyncSettings(), field) for field in CONFIG_KEYS} | change
    with pytest.raises(ValueError) as checked:
        check_async_settings(values, CONFIG_KEYS)
    assert str(loaded.value) == f"batch_modes.{name}.{checked.value}"
