"""Scalar reference of the whole runner (spec 000 §3.1-3.2, spec 001 ch. 4), one seed.

A literal event loop with a ``heapq`` queue of ``(finish_time, worker, job)``,
written for clarity, not speed; it does not use :mod:`spsa_bench.engine.replay`, and
the vectorized runner must agree with it event by event. One seed, one
optimizer, plain Python wherever the vectorized code is clever.

Randomness is consumed exactly as the vectorized code consumes it:

- worker pool and game durations as in :mod:`spsa_bench.reference.async_runner`
  (its scalar pieces are reused: it is a reference too);
- flips: ``streams.flips(entropy, [seed], n_jobs, n_params)[0]``, row ``j`` for
  the ``j``-th job in dispatch order (the rows are a prefix-stable stream, so
  drawing for an upper bound of ``n_jobs`` gives the same rows);
- match noise: ``streams.match_draws(entropy, [seed], num_pairs)[0]``; the
  job dispatched after ``D`` pairs plays the uniforms ``D .. D + N - 1``.

Dispatch (a worker asks for work, spec 001 ch. 4)::

    K          = pairs arrived so far      (iteration_counter "arrival", Fishtest)
               | pairs dispatched so far   (iteration_counter "dispatch", the lab)
    iter_local = K + 1
    c          = optimizer.perturbation(iter_local)
    theta      = optimizer.export(state)                  # the snapshot
    plus/minus = clip(theta +- c * flip) to the developer bounds
    opponent   = -(Elo(plus) - Elo(minus)), clipped to +-599
    each pair  : outcome by inverse CDF of its uniform over (LL, DL, DD, WD, WW)
    net_wins   = sum of the outcome values (-2 .. +2)

The job's result depends only on the snapshot, so it is played at dispatch (as
spec 000 §3.2 says, with the snapshot and flip the job took away).

Arrival (the event with the smallest finish time pops)::

    signal = net_wins                    ("raw")
           | net_wins / (2 sqrt(P))      ("scaled")
    state  = optimizer.update(state, report(N, signal, flip, c, iter_local))

on the *current* state, then the freed worker gets the next job while budget
remains. The synchronous runner is the same loop with one worker and a fixed
batch; its durations are not simulated (a logical clock advances by one per
job).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

import numpy as np

from spsa_bench import optimizers
from spsa_bench.dispatch.asynchronous import AsyncSettings
from spsa_bench.model import pentanomial, streams
from spsa_bench.model.bowl import Problem
from spsa_bench.optimizers.base import Report
from spsa_bench.reference.async_runner import greedy_makespan, reference_workers

ITERATION_COUNTERS = ("arrival", "dispatch")
SIGNALS = ("raw", "scaled")


@dataclass
class ReferenceJob:
    """One job, as dispatched."""

    worker: int
    pairs: int
    offset: int  # pairs dispatched before it: its first match uniform
    arrived_before: int  # pairs arrived before its dispatch
    iter_local: int
    dispatch_time: float
    finish_time: float
    c: np.ndarray  # (param,)
    flip: np.ndarray  # (param,) +-1.0
    theta_snapshot: np.ndarray  # (param,)
    opponent_elo: float
    net_wins: int
    signal: float


@dataclass
class ReferenceEvent:
    """One arrival, in arrival order."""

    order: int  # arrival index
    job: int  # dispatch index of the arriving job
    worker: int
    pairs: int
    staleness: int  # pairs arrived between the job's dispatch and its arrival
    theta: np.ndarray  # (param,) export(state) after the update


@dataclass
class ReferenceRun:
    theta_start: np.ndarray  # (param,) export(init)
    concurrency: list[int]
    speed: list[float]
    jobs: list[ReferenceJob] = field(default_factory=list)
    events: list[ReferenceEvent] = field(default_factory=list)

    @property
    def theta(self) -> np.ndarray:
        """``(event, param)``: the exported point after every update."""
        return np.array([event.theta for event in self.events])

    @property
    def arrival_job(self) -> list[int]:
        return [event.job for event in self.events]

    def staleness_by_job(self) -> list[int]:
        """Staleness of every job, in dispatch order."""
        out = [0] * len(self.jobs)
        for event in self.events:
            out[event.job] = event.staleness
        return out

    @property
    def total_pairs(self) -> int:
        return sum(event.pairs for event in self.events)


def true_elo(bowl, theta: np.ndarray) -> float:
    """``Elo(theta) = peak_elo - k_elo * sum_i w_true[i] * (theta[i] - theta_peak[i])**2``."""
    total = 0.0
    for value, peak, weight in zip(theta, bowl.theta_peak, bowl.w_true, strict=True):
        total += float(weight) * (float(value) - float(peak)) ** 2
    return bowl.peak_elo - bowl.k_elo * total


def pair_outcome(draw: int, probs) -> int:
    """Net wins of one pair from its integer draw ``k`` (the uniform ``k / 2**32``):
    the first outcome whose cumulative probability (summed left to right) exceeds
    it, i.e. ``k >= ceil(cumulative * 2**32)`` (capped at ``2**32 - 1``) for each
    passed threshold; LL = -2 .. WW = +2."""
    value = -2
    cumulative = 0.0
    for p in probs[:4]:
        cumulative += float(p)
        if draw >= min(math.ceil(cumulative * 2**32), 2**32 - 1):
            value += 1
    return value


def run_runner_reference(
    kind: str,
    hyper,
    problem: Problem,
    entropy: int,
    seed: int,
    num_pairs: int,
    batch: AsyncSettings | int,
    *,
    iteration_counter: str = "arrival",
    signal: str = "raw",
    optimizer=None,
) -> ReferenceRun:
    """Run optimizer ``kind`` (hyperparameters ``hyper``, ``None``: defaults) on one seed.

    ``batch`` is an :class:`AsyncSettings` (asynchronous runner) or an integer
    batch size in pairs (synchronous runner). ``optimizer`` optionally gives an
    already built optimizer instead of ``kind``/``hyper`` (for spies).
    """
    if iteration_counter not in ITERATION_COUNTERS:
        raise ValueError(f"iteration_counter must be one of {ITERATION_COUNTERS}")
    if signal not in SIGNALS:
        raise ValueError(f"signal must be one of {SIGNALS}")
    view, bowl = problem.view, problem.bowl
    n_params = view.num_params
    if optimizer is None:
        optimizer = optimizers.build(kind, view, hyper)

    if isinstance(batch, AsyncSettings):
        settings = batch
        n_workers = settings.num_workers
        concurrency, speed = reference_workers(entropy, seed, settings)
        mu = math.log(settings.duration_median)
        sigma = (math.log(settings.duration_p95) - math.log(settings.duration_median)) / 1.645
        durations = [streams.generator(entropy, seed, "durations", w) for w in range(n_workers)]

        def full_job_pairs(w: int) -> int:
            if settings.batch == "fixed":
                return settings.batch_size
            games = concurrency[w] * 4 * int(round(settings.tc_ratio))
            return max(games // 2, 1)
    else:
        settings = None
        batch_size = int(batch)
        if batch_size < 1:
            raise ValueError("batch size must be >= 1")
        n_workers = 1
        concurrency, speed = [1], [1.0]

        def full_job_pairs(w: int) -> int:
            return batch_size

    # Every job but the last has at least the smallest full size: a bound on the job count.
    smallest = min(full_job_pairs(w) for w in range(n_workers))
    max_jobs = -(-num_pairs // smallest)
    flips = streams.flips(entropy, np.array([seed]), max_jobs, n_params)[0]
    uniforms = streams.match_draws(entropy, np.array([seed]), num_pairs)[0]

    state = optimizer.init(1)
    run = ReferenceRun(optimizer.export(state)[0].copy(), list(concurrency), list(speed))
    queue: list[tuple[float, int, int]] = []
    dispatched = 0  # pairs handed out
    arrived = 0  # pairs reported back

    def dispatch(w: int, now: float) -> None:
        nonlocal dispatched
        pairs = min(full_job_pairs(w), num_pairs - dispatched)
        if settings is not None:
            full = full_job_pairs(w)
            z = durations[w].standard_normal(2 * full)  # the job's whole block
            games = np.exp(mu + sigma * z[: 2 * pairs])
            finish = now + greedy_makespan(games, min(concurrency[w], 2 * pairs)) / speed[w]
        else:
            finish = now + 1.0
        job = len(run.jobs)
        k = arrived if iteration_counter == "arrival" else dispatched
        iter_local = k + 1
        c = np.array(optimizer.perturbation(np.array([iter_local]))[0], dtype=np.float64)
        theta = np.array(optimizer.export(state)[0], dtype=np.float64)  # the snapshot
        flip = flips[job].astype(np.float64)
        plus = np.minimum(np.maximum(theta + c * flip, view.theta_min), view.theta_max)
        minus = np.minimum(np.maximum(theta - c * flip, view.theta_min), view.theta_max)
        opponent = -(true_elo(bowl, plus) - true_elo(bowl, minus))
        limit = pentanomial.MAX_OPPONENT_ELO
        opponent = max(-limit, min(limit, opponent))
        probs = pentanomial.probabilities(np.array([opponent]))[0]
        net = 0
        for index in range(dispatched, dispatched + pairs):
            net += pair_outcome(int(uniforms[index]), probs)
        value = float(net) if signal == "raw" else net / (2.0 * math.sqrt(n_params))
        run.jobs.append(
            ReferenceJob(
                worker=w,
                pairs=pairs,
                offset=dispatched,
                arrived_before=arrived,
                iter_local=iter_local,
                dispatch_time=now,
                finish_time=finish,
                c=c,
                flip=flip,
                theta_snapshot=theta,
                opponent_elo=opponent,
                net_wins=net,
                signal=value,
            )
        )
        heapq.heappush(queue, (finish, w, job))
        dispatched += pairs

    for w in range(n_workers):
        if dispatched < num_pairs:
            dispatch(w, 0.0)
    while arrived < num_pairs:
        now, w, job = heapq.heappop(queue)
        played = run.jobs[job]
        report = Report(
            n_pairs=np.array([played.pairs], dtype=np.int64),
            signal=np.array([played.signal]),
            flip=played.flip[None, :].copy(),
            c=played.c[None, :].copy(),
            iter_local=np.array([played.iter_local], dtype=np.int64),
        )
        state = optimizer.update(state, report)
        staleness = arrived - played.arrived_before
        arrived += played.pairs
        run.events.append(
            ReferenceEvent(
                order=len(run.events),
                job=job,
                worker=w,
                pairs=played.pairs,
                staleness=staleness,
                theta=np.array(optimizer.export(state)[0], dtype=np.float64),
            )
        )
        if dispatched < num_pairs:
            dispatch(w, now)
    assert not queue and arrived == dispatched == num_pairs
    return run
