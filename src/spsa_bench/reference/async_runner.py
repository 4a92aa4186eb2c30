"""Scalar reference of the asynchronous scheduler (spec 000 §3.2), one seed at a time.

A literal event loop with a ``heapq`` queue, written for clarity, not speed; the
vectorized :func:`spsa_bench.dispatch.asynchronous.async_schedule` must agree with it
event by event. It consumes the same random streams in the same way:

- the pool: one ``random((W, 2))`` draw from the seed's ``"workers"`` stream,
  ``(w, 0)`` picks worker ``w``'s concurrency among the allowed powers of two,
  ``(w, 1)`` its speed factor;
- durations: stream ``(seed, "durations", w)`` per worker, each job of ``N``
  uncut pairs takes the next ``2N`` standard normals, a cut job plays the first
  ``2 * N_cut`` of them; a game lasts ``exp(mu + sigma * z)`` seconds.

Queue entries are ``(finish_time, worker, job)``: simultaneous finishes pop in
worker order.

The arrival bookkeeping (pairs dispatched and arrived before each dispatch,
the arrival order) is kept here with plain counters on purpose, not taken from
:mod:`spsa_bench.dispatch.schedule`: this loop is the independent check of it.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from spsa_bench.model import streams


def greedy_makespan(durations, lanes: int) -> float:
    """Greedy list scheduling with a heap of ``(load, lane)``; the largest lane load."""
    heap = [(0.0, lane) for lane in range(lanes)]
    for duration in durations:
        load, lane = heapq.heappop(heap)
        heapq.heappush(heap, (load + float(duration), lane))
    return max(load for load, _ in heap)


@dataclass
class ReferenceRun:
    """One seed's schedule; per-job lists are in dispatch order."""

    concurrency: list[int]
    speed: list[float]
    job_worker: list[int]
    job_pairs: list[int]
    job_dispatch_time: list[float]
    job_arrival_time: list[float]
    job_offset: list[int]  # pairs dispatched before the job
    job_arrived_before: list[int]  # pairs arrived before the job's dispatch
    arrival_job: list[int]  # dispatch index of the e-th arrival


def reference_workers(entropy: int, seed: int, settings) -> tuple[list[int], list[float]]:
    """The worker pool of one seed, worker by worker."""
    levels = []
    power = 1
    while power <= settings.concurrency_max:
        if power >= settings.concurrency_min:
            levels.append(power)
        power *= 2
    draws = streams.generator(entropy, seed, "workers").random((settings.num_workers, 2))
    concurrency, speed = [], []
    for u_level, u_speed in draws:
        concurrency.append(levels[min(int(u_level * len(levels)), len(levels) - 1)])
        speed.append(settings.speed_min + (settings.speed_max - settings.speed_min) * u_speed)
    return concurrency, speed


def uncut_job_pairs(settings, concurrency: int) -> int:
    """Pairs of a worker's uncut job: ``batch_size`` (fixed), or
    ``max(concurrency * 4 * round(tc_ratio) // 2, 1)`` (variable)."""
    if settings.batch == "fixed":
        return settings.batch_size
    games = concurrency * 4 * int(round(settings.tc_ratio))
    return max(games // 2, 1)


def job_wall_time(generator, settings, concurrency: int, speed: float, pairs: int) -> float:
    """Draw a job's whole block (``2 N`` normals, ``N`` its uncut size) from its worker's
    stream and return the wall time of the ``2 * pairs`` games it plays: the greedy
    makespan over ``min(concurrency, 2 * pairs)`` lanes, divided by the speed factor."""
    mu = math.log(settings.duration_median)
    sigma = (math.log(settings.duration_p95) - math.log(settings.duration_median)) / 1.645
    z = generator.standard_normal(2 * uncut_job_pairs(settings, concurrency))
    games = np.exp(mu + sigma * z[: 2 * pairs])
    return greedy_makespan(games, min(concurrency, 2 * pairs)) / speed


def run_reference(entropy: int, seed: int, num_pairs: int, settings, workers=None) -> ReferenceRun:
    """Simulate one seed's asynchronous schedule with an event queue.

    ``workers`` optionally gives ``(concurrency, speed)`` lists instead of the drawn pool.
    """
    if workers is None:
        concurrency, speed = reference_workers(entropy, seed, settings)
    else:
        concurrency, speed = [int(c) for c in workers[0]], [float(v) for v in workers[1]]
    generators = [
        streams.generator(entropy, seed, "durations", w) for w in range(settings.num_workers)
    ]
    run = ReferenceRun(concurrency, speed, [], [], [], [], [], [], [])
    queue: list[tuple[float, int, int]] = []
    dispatched = 0
    processed = 0

    def dispatch(w: int, now: float) -> None:
        nonlocal dispatched
        pairs = min(uncut_job_pairs(settings, concurrency[w]), num_pairs - dispatched)
        wall = job_wall_time(generators[w], settings, concurrency[w], speed[w], pairs)
        job = len(run.job_worker)
        run.job_worker.append(w)
        run.job_pairs.append(pairs)
        run.job_dispatch_time.append(now)
        run.job_arrival_time.append(now + wall)
        run.job_offset.append(dispatched)
        run.job_arrived_before.append(processed)
        heapq.heappush(queue, (now + wall, w, job))
        dispatched += pairs

    for w in range(settings.num_workers):
        if dispatched < num_pairs:
            dispatch(w, 0.0)
    while processed < num_pairs:
        now, w, job = heapq.heappop(queue)
        run.arrival_job.append(job)
        processed += run.job_pairs[job]
        if dispatched < num_pairs:
            dispatch(w, now)
    assert not queue and processed == dispatched == num_pairs
    return run
