"""OpenBench's dispatch (``batch: openbench``): workloads of ``pairs_per`` pairs,
SINGLE (one perturbation per workload) and MULTIPLE (one per runner), reported in bulk.

The MULTIPLE schedule is checked against a literal event loop written from the rules
in docs/frameworks.md (a heap of machines, one workload per machine at a time, each
runner's games placed one by one on its two lanes), bit for bit."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench.config import resolve
from spsa_bench.config.records import ConfigError
from spsa_bench.dispatch.asynchronous import AsyncSettings, async_schedule
from spsa_bench.model import streams

ENTROPY = 20240531


def literal_multiple(seed: int, num_pairs: int, settings: AsyncSettings, speed: np.ndarray):
    """Runner jobs of one seed in dispatch order ``(worker, pairs, offset, dispatch,
    arrival)`` and the arrival order, from plain loops."""
    runners, per = settings.concurrency_min // 2, settings.pairs_per
    games = 2 * per * runners
    mu = math.log(settings.duration_median)
    sigma = (math.log(settings.duration_p95) - mu) / 1.645
    draws = [streams.generator(ENTROPY, seed, "durations", m) for m in range(settings.num_workers)]
    jobs, dispatched, queue = [], 0, []

    def hand_out(machine: int, now: float) -> None:
        nonlocal dispatched
        pairs = min(per * runners, num_pairs - dispatched)
        z = draws[machine].standard_normal(games)  # the full block, even when cut
        # numpy's exp, as the schedule and spsa_bench.reference.async_runner map normals
        # to durations: math.exp can differ from it in the last bit (numpy's SIMD exp on
        # AVX-512 machines), which is not what this loop checks
        durations = np.exp(z * sigma + mu)
        slowest = 0.0
        for r in range(runners):
            lanes = [0.0, 0.0]
            for g in range(2 * per * r, 2 * per * r + 2 * per):
                if g < 2 * pairs:
                    lane = 0 if lanes[0] <= lanes[1] else 1
                    lanes[lane] += float(durations[g])
            slowest = max(slowest, max(lanes))
        finish = now + slowest / speed[machine]
        for r in range(runners):
            share = min(per, pairs - per * r)
            if share > 0:
                jobs.append((machine * runners + r, share, dispatched + per * r, now, finish))
        dispatched += pairs
        heapq.heappush(queue, (finish, machine))

    for machine in range(settings.num_workers):
        if dispatched < num_pairs:
            hand_out(machine, 0.0)
    arrivals = []
    while queue:
        finish, machine = heapq.heappop(queue)
        arrivals.extend(
            j for j, job in enumerate(jobs) if job[4] == finish and job[0] // runners == machine
        )
        if dispatched < num_pairs:
            hand_out(machine, finish)
    return jobs, arrivals


@pytest.mark.parametrize("num_pairs", [1000, 997])  # a budget cut inside a runner
def test_multiple_matches_the_literal_event_loop(num_pairs):
    settings = AsyncSettings(
        num_workers=3, batch="openbench", distribution="multiple", pairs_per=4,
        concurrency_min=8, concurrency_max=8, duration_median=10.0, duration_p95=30.0,
    )  # fmt: skip
    seeds = [0, 1, 5]
    schedule = async_schedule(ENTROPY, seeds, num_pairs, settings)
    assert schedule.num_workers == 12  # 3 machines x 4 runners
    for row, seed in enumerate(seeds):
        speed = schedule.worker_speed[row, ::4]
        jobs, arrivals = literal_multiple(seed, num_pairs, settings, speed)
        n = schedule.n_jobs[row]
        assert n == len(jobs)
        got = list(
            zip(
                schedule.job_worker[row, :n].tolist(),
                schedule.job_pairs[row, :n].tolist(),
                schedule.job_offset[row, :n].tolist(),
                schedule.job_dispatch_time[row, :n].tolist(),
                schedule.job_arrival_time[row, :n].tolist(),
                strict=True,
            )
        )
        assert got == jobs  # bit for bit
        assert schedule.arrival_job[row, :n].tolist() == arrivals
    assert np.all(schedule.job_pairs.sum(axis=1) == num_pairs)
    assert np.all(schedule.worker_concurrency == 2)


def test_single_workload_is_pairs_per_times_concurrency():
    settings = AsyncSettings(
        num_workers=4, batch="openbench", pairs_per=3, concurrency_min=1, concurrency_max=16
    )
    schedule = async_schedule(ENTROPY, [0, 1], 5000, settings)
    mask = schedule.job_mask()
    size = 3 * np.take_along_axis(
        schedule.worker_concurrency, np.maximum(schedule.job_worker, 0), 1
    )
    last = np.arange(schedule.max_jobs)[None, :] == (schedule.n_jobs - 1)[:, None]
    assert np.all(schedule.job_pairs[mask & ~last] == size[mask & ~last])
    assert np.all(schedule.job_pairs.sum(axis=1) == 5000)


def test_new_keys_leave_other_modes_alone():
    assert "pairs_per" not in AsyncSettings.config_defaults()
    assert "distribution" not in AsyncSettings.config_defaults()
    assert "reporting" not in AsyncSettings.config_defaults()
    config = resolve(small_config_dict())
    for name, mode in config.resolved["batch_modes"].items():
        assert not {"pairs_per", "distribution", "reporting"} & set(mode), name


def _with_mode(mode: dict) -> dict:
    raw = small_config_dict()
    raw["batch_modes"]["ob"] = mode
    return raw


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (
            {"workers": 2, "batch": "openbench", "batch_size": 8},
            "batch_modes.ob.batch_size: not used by batch: openbench",
        ),
        (
            {"workers": 2, "batch": "fixed", "batch_size": 8, "pairs_per": 4},
            "batch_modes.ob.pairs_per: only batch: openbench",
        ),
        (
            {"workers": 2, "batch": "openbench", "distribution": "multiple"},
            "batch_modes.ob.concurrency = {min: 1, max: 64}: distribution 'multiple' needs one concurrency",
        ),
        (
            {"workers": 2, "batch": "variable", "reporting": "batched"},
            "batch_modes.ob.reporting: only batch: openbench takes reporting",
        ),
        (
            {"workers": 2, "batch": "openbench", "reporting": "weekly"},
            "batch_modes.ob.reporting = \"weekly\": 'weekly' is not one of",
        ),
    ],
)
def test_bad_openbench_modes_are_refused(mode, message):
    with pytest.raises(ConfigError) as error:
        resolve(_with_mode(mode))
    assert message in str(error.value)


@pytest.mark.parametrize("distribution", ["single", "multiple"])
def test_batched_reports_split_each_job_in_30_second_pieces(distribution):
    """BATCHED: every job of the BULK schedule becomes pieces reported at t0 + 30 k (and
    at its end), its pairs in order, the pieces chained on their worker so that job
    W + e is the one the worker freed by arrival e plays next."""
    base = dict(
        num_workers=3, batch="openbench", distribution=distribution, pairs_per=4,
        concurrency_min=4, concurrency_max=4, duration_median=10.0, duration_p95=30.0,
    )  # fmt: skip
    seeds = [0, 1, 5]
    bulk = async_schedule(ENTROPY, seeds, 700, AsyncSettings(**base))
    batched = async_schedule(ENTROPY, seeds, 700, AsyncSettings(**base, reporting="batched"))
    assert bulk.job_lead is None and batched.job_lead is not None
    width = batched.num_workers
    assert width == bulk.num_workers
    for row in range(len(seeds)):
        exists = batched.job_worker[row] >= 0
        assert exists.sum() == batched.n_jobs[row] > bulk.n_jobs[row]
        lead = batched.job_lead[row]
        # the pieces of each lead: the BULK job's pairs, contiguous, from its offset
        jobs = {}
        for j in np.flatnonzero(exists):
            jobs.setdefault(int(lead[j]), []).append(int(j))
        n = bulk.n_jobs[row]
        bulk_jobs = sorted(
            zip(bulk.job_offset[row, :n], bulk.job_pairs[row, :n], bulk.job_dispatch_time[row, :n],
                bulk.job_arrival_time[row, :n], strict=True)
        )  # fmt: skip
        got = []
        for lead_job, pieces in jobs.items():
            pieces.sort(key=lambda j: batched.job_arrival_time[row, j])
            offsets = batched.job_offset[row, pieces]
            pairs = batched.job_pairs[row, pieces]
            np.testing.assert_array_equal(offsets[1:], (offsets + pairs)[:-1])  # contiguous
            t0 = batched.job_dispatch_time[row, lead_job]
            times = batched.job_arrival_time[row, pieces]
            interim = (times[:-1] - t0) / 30.0
            np.testing.assert_allclose(interim, np.round(interim), atol=1e-9)  # at t0 + 30 k
            assert np.all(np.diff(times) > 0)
            arrived = batched.job_arrived_before[row, pieces]
            assert np.all(arrived == arrived[0])  # the hand-out's count, for every piece
            got.append((offsets[0], pairs.sum(), t0, times[-1]))
        assert sorted(got) == bulk_jobs
        # the convention: job W + e is dispatched by arrival e's worker at its time
        for e, j in enumerate(batched.arrival_job[row, : batched.n_jobs[row]]):
            following = width + e
            if following < batched.max_jobs and batched.job_worker[row, following] >= 0:
                assert batched.job_worker[row, following] == batched.job_worker[row, j]
                assert batched.job_dispatch_time[row, following] == batched.job_arrival_time[row, j]
    assert np.all(batched.job_pairs.sum(axis=1) == 700)


def test_batched_schedules_survive_their_file(tmp_path):
    from spsa_bench.dispatch.storage import read_schedule
    from spsa_bench.results.datasets import write_schedule

    settings = AsyncSettings(
        num_workers=3, batch="openbench", pairs_per=4, concurrency_min=4, concurrency_max=4,
        duration_median=10.0, duration_p95=30.0, reporting="batched",
    )  # fmt: skip
    schedule = async_schedule(ENTROPY, [0, 2], 300, settings)
    path = write_schedule(schedule, tmp_path / "s.nc", batch_mode="ob", settings_json="{}")
    back = read_schedule(path, num_pairs=300)
    for name in ("job_lead", "job_pairs", "job_offset", "job_arrived_before", "arrival_job"):
        np.testing.assert_array_equal(getattr(back, name), getattr(schedule, name))


def test_batched_with_no_interim_report_is_bulk():
    """With a report interval longer than any job every job is one piece: the schedule
    is the BULK one, each job its own lead."""
    from spsa_bench.dispatch.asynchronous import split_reports

    settings = AsyncSettings(
        num_workers=3, batch="openbench", pairs_per=4, concurrency_min=2, concurrency_max=8,
        duration_median=10.0, duration_p95=30.0,
    )  # fmt: skip
    bulk = async_schedule(ENTROPY, [0, 1, 5], 900, settings)
    one_piece = split_reports(bulk, interval=1e12)
    np.testing.assert_array_equal(
        one_piece.job_lead, np.where(bulk.job_mask(), np.arange(bulk.max_jobs), -1)
    )
    for name in ("n_jobs", "job_pairs", "job_offset", "job_arrived_before", "job_worker",
                 "arrival_job", "job_dispatch_time", "job_arrival_time"):  # fmt: skip
        np.testing.assert_array_equal(getattr(one_piece, name), getattr(bulk, name), name)
