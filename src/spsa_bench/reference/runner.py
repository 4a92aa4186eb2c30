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

A kind that asks for a Hessian match (``optimizer.hessian_share > 0``: ``spsa-2``)
plays two matches in every job of ``N`` pairs, by the rules of
:mod:`spsa_bench.engine.replay` written out one seed at a time::

    m          = min(max(floor(share * N + 1/2), 0), max(N - 1, 0))   Hessian pairs
    gradient   : plus/minus above, on the uniforms D .. D + N - m - 1
    flip~      = streams.flips(entropy, [seed], n_jobs, n_params, purpose="hessian")[0][j]
    shift      = (hessian_shift * c) * flip~
    Hessian    : plus~/minus~ = clip((theta + shift) +- c * flip), on the uniforms
                 D + N - m .. D + N - 1
    report     : n_pairs N - m, signal of the gradient match, hessian_signal of the
                 Hessian match (raw or scaled alike), hessian_pairs m, hessian_flip flip~

(no rounding: like the rest of this reference, the engines play the floats).

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
from spsa_bench.model.noise import VENDORED, NoiseModel
from spsa_bench.optimizers.base import Report
from spsa_bench.optimizers.second_order import SecondOrderReport
from spsa_bench.reference.async_runner import job_wall_time, reference_workers, uncut_job_pairs

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
    outcome_counts: tuple[int, ...] = (0, 0, 0, 0, 0)  # LL, DL, DD, WD, WW
    # the Hessian match (kinds with hessian_share > 0; module docstring), else None/0
    hessian_pairs: int = 0
    hessian_flip: np.ndarray | None = None  # (param,) +-1.0
    hessian_opponent_elo: float = 0.0
    hessian_net_wins: int = 0
    hessian_signal: float = 0.0

    @property
    def gradient_pairs(self) -> int:
        """Pairs of the gradient match: the job's pairs less the Hessian match's."""
        return self.pairs - self.hessian_pairs

    def report(self, staleness: int | None = None) -> Report:
        """The job's report, as one seed's arrays (``staleness``: pairs arrived since
        its dispatch, known at its arrival); a ``SecondOrderReport`` when the job
        played a Hessian match."""
        report = Report(
            n_pairs=np.array([self.gradient_pairs], dtype=np.int64),
            signal=np.array([self.signal]),
            flip=self.flip[None, :].copy(),
            c=self.c[None, :].copy(),
            iter_local=np.array([self.iter_local], dtype=np.int64),
            staleness=None if staleness is None else np.array([float(staleness)]),
            in_flight=np.array([float(self.offset - self.arrived_before)]),
        )
        if self.hessian_flip is None:
            return report
        return SecondOrderReport(
            *report,
            hessian_signal=np.array([self.hessian_signal]),
            hessian_pairs=np.array([self.hessian_pairs], dtype=np.int64),
            hessian_flip=self.hessian_flip[None, :].copy(),
        )


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


@dataclass
class Workers:
    """The worker pool of one seed and how long its jobs take.

    Asynchronous: drawn as in :mod:`spsa_bench.reference.async_runner`, a job's
    wall time from its worker's duration stream. Synchronous (an integer batch
    size): one worker, and a logical clock that advances by one per job.
    """

    settings: AsyncSettings | None
    concurrency: list[int]
    speed: list[float]
    durations: list  # one generator per worker (asynchronous)
    batch_size: int = 0

    @classmethod
    def of(cls, entropy: int, seed: int, batch: AsyncSettings | int) -> Workers:
        if isinstance(batch, AsyncSettings):
            concurrency, speed = reference_workers(entropy, seed, batch)
            durations = [
                streams.generator(entropy, seed, "durations", w) for w in range(batch.num_workers)
            ]
            return cls(batch, concurrency, speed, durations)
        if int(batch) < 1:
            raise ValueError("batch size must be >= 1")
        return cls(None, [1], [1.0], [], int(batch))

    @property
    def count(self) -> int:
        return len(self.concurrency)

    def job_pairs(self, w: int) -> int:
        """Uncut job size of worker ``w``."""
        if self.settings is None:
            return self.batch_size
        return uncut_job_pairs(self.settings, self.concurrency[w])

    def flips(
        self, entropy: int, seed: int, num_pairs: int, n_params: int, purpose: str = "flips"
    ) -> np.ndarray:
        """The seed's flips ``(job, param)`` from stream ``purpose``, row ``j`` for the
        ``j``-th job dispatched, drawn for an upper bound of the job count (every job but
        the last has at least the smallest full size; the rows are a prefix-stable stream)."""
        max_jobs = -(-num_pairs // min(self.job_pairs(w) for w in range(self.count)))
        return streams.flips(entropy, np.array([seed]), max_jobs, n_params, purpose=purpose)[0]

    def finish_time(self, w: int, now: float, pairs: int) -> float:
        """When a job of ``pairs`` pairs dispatched to worker ``w`` at ``now`` arrives."""
        if self.settings is None:
            return now + 1.0
        wall = job_wall_time(
            self.durations[w], self.settings, self.concurrency[w], self.speed[w], pairs
        )
        return now + wall


def play_job(bowl, view, theta, c, flip, uniforms, signal: str, noise=VENDORED) -> tuple:
    """Play one job from the snapshot ``theta``:
    ``(opponent Elo, net wins, signal, outcome counts)``.

    Probes ``clip(theta +- c * flip)``; opponent ``-(Elo(plus) - Elo(minus))``
    clipped to the pentanomial model's range; each pair's outcome by inverse CDF
    of its uniform under the ``noise`` model's exact probabilities (not its table);
    the signal is the net wins, raw or divided by ``2 sqrt(P)``.
    """
    plus = np.minimum(np.maximum(theta + c * flip, view.theta_min), view.theta_max)
    minus = np.minimum(np.maximum(theta - c * flip, view.theta_min), view.theta_max)
    opponent = clip_opponent(-(true_elo(bowl, plus) - true_elo(bowl, minus)))
    net, counts = play_pairs(opponent, uniforms, noise)
    value = float(net) if signal == "raw" else net / (2.0 * math.sqrt(view.num_params))
    return opponent, net, value, counts


def clip_opponent(opponent: float) -> float:
    """An opponent Elo clipped to the pentanomial model's range (+-599)."""
    limit = pentanomial.MAX_OPPONENT_ELO
    return max(-limit, min(limit, opponent))


def play_pairs(opponent: float, uniforms, noise=VENDORED) -> tuple[int, tuple[int, ...]]:
    """Net wins of the hero over the pairs of ``uniforms`` (integer draws) against an
    opponent of ``opponent`` Elo, and the outcome counts (LL, DL, DD, WD, WW): each
    pair by inverse CDF of its draw under the ``noise`` model's exact probabilities."""
    probs = noise.probabilities(np.array([opponent]))[0]
    net = 0
    counts = [0] * 5
    for draw in uniforms:
        outcome = pair_outcome(int(draw), probs)
        counts[outcome + 2] += 1
        net += outcome
    return net, tuple(counts)


@dataclass
class _SeedInputs:
    """One seed's fixed inputs: the optimizer, the problem, the worker pool, the draws."""

    optimizer: object
    problem: Problem
    workers: Workers
    flips: np.ndarray  # (job, param), row j for the j-th job in dispatch order
    uniforms: np.ndarray  # (pair,) the seed's match draws
    iteration_counter: str
    signal: str
    noise: NoiseModel = VENDORED
    hessian_flips: np.ndarray | None = None  # (job, param): D~ of the j-th job, or None

    def dispatch(
        self,
        state,
        w: int,
        now: float,
        finish: float,
        job: int,
        pairs: int,
        dispatched: int,
        arrived: int,
    ) -> ReferenceJob:
        """Job ``job`` of ``pairs`` pairs to worker ``w`` at ``now`` (arriving at
        ``finish``), after ``dispatched`` pairs went out and ``arrived`` came back:
        played at once from the snapshot."""
        k = arrived if self.iteration_counter == "arrival" else dispatched
        iter_local = k + 1
        c = np.array(self.optimizer.perturbation(np.array([iter_local]))[0], dtype=np.float64)
        theta = np.array(self.optimizer.export(state)[0], dtype=np.float64)  # the snapshot
        flip = self.flips[job].astype(np.float64)
        share = float(self.optimizer.hessian_share)
        extra = 0
        if share > 0.0:
            extra = min(max(math.floor(share * pairs + 0.5), 0), max(pairs - 1, 0))
        gradient = pairs - extra
        opponent, net, value, counts = play_job(
            self.problem.bowl,
            self.problem.view,
            theta,
            c,
            flip,
            self.uniforms[dispatched : dispatched + gradient],
            self.signal,
            self.noise,
        )
        hessian = {}
        if share > 0.0:
            hessian_flip = self.hessian_flips[job].astype(np.float64)
            shift = float(self.optimizer.hessian_shift) * c * hessian_flip
            h_opponent, h_net, h_value, h_counts = play_job(
                self.problem.bowl,
                self.problem.view,
                theta + shift,
                c,
                flip,
                self.uniforms[dispatched + gradient : dispatched + pairs],
                self.signal,
                self.noise,
            )
            counts = tuple(a + b for a, b in zip(counts, h_counts, strict=True))
            hessian = {
                "hessian_pairs": extra,
                "hessian_flip": hessian_flip,
                "hessian_opponent_elo": h_opponent,
                "hessian_net_wins": h_net,
                "hessian_signal": h_value,
            }
        return ReferenceJob(
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
            outcome_counts=counts,
            **hessian,
        )


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
    noise: NoiseModel = VENDORED,
) -> ReferenceRun:
    """Run optimizer ``kind`` (hyperparameters ``hyper``, ``None``: defaults) on one seed.

    ``batch`` is an :class:`AsyncSettings` (asynchronous runner) or an integer
    batch size in pairs (synchronous runner). ``optimizer`` optionally gives an
    already built optimizer instead of ``kind``/``hyper`` (for spies).

    The event loop is the textbook one of the module docstring (:func:`event_loop`).
    """
    if iteration_counter not in ITERATION_COUNTERS:
        raise ValueError(f"iteration_counter must be one of {ITERATION_COUNTERS}")
    if signal not in SIGNALS:
        raise ValueError(f"signal must be one of {SIGNALS}")
    if optimizer is None:
        optimizer = optimizers.build(kind, problem.view, hyper)
    workers = Workers.of(entropy, seed, batch)
    hessian_flips = None
    if optimizer.hessian_share > 0.0:  # the seed's hessian stream, row j for the j-th job
        hessian_flips = workers.flips(
            entropy, seed, num_pairs, problem.view.num_params, purpose="hessian"
        )
    inputs = _SeedInputs(
        optimizer,
        problem,
        workers,
        flips=workers.flips(entropy, seed, num_pairs, problem.view.num_params),
        uniforms=streams.match_draws(entropy, np.array([seed]), num_pairs)[0],
        iteration_counter=iteration_counter,
        signal=signal,
        noise=noise,
        hessian_flips=hessian_flips,
    )

    state = optimizer.init(1)
    run = ReferenceRun(
        optimizer.export(state)[0].copy(), list(workers.concurrency), list(workers.speed)
    )

    def dispatch(w: int, now: float, finish: float, pairs: int, dispatched: int, arrived: int):
        job = len(run.jobs)
        run.jobs.append(inputs.dispatch(state, w, now, finish, job, pairs, dispatched, arrived))

    def arrive(job: int, w: int, staleness: int) -> None:
        nonlocal state
        played = run.jobs[job]
        state = optimizer.update(state, played.report(staleness))  # on the current state
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

    event_loop(workers, num_pairs, dispatch, arrive)
    return run


def event_loop(workers: Workers, num_pairs: int, dispatch, arrive) -> None:
    """The textbook event queue of one seed, shared by the runner references.

    Every worker asks for work at time 0; a worker asking for work gets a job of
    ``min(its job size, budget left)`` pairs while budget remains:
    ``dispatch(worker, now, finish_time, pairs, dispatched, arrived)`` is called with
    the pairs handed out and reported back before it (jobs are numbered in call
    order). Then the queue entry ``(finish_time, worker, job)`` with the earliest
    finish pops (ties in worker order): ``arrive(job, worker, staleness)``, staleness
    being the pairs that arrived between the job's dispatch and its arrival; the
    freed worker asks again. Ends when every pair has arrived.

    It keeps its own counters (pairs dispatched and arrived, staleness) on purpose
    rather than the vectorized bookkeeping of :mod:`spsa_bench.dispatch.schedule`,
    which it checks.
    """
    queue: list[tuple[float, int, int]] = []  # (finish_time, worker, job)
    job_pairs: list[int] = []  # per job, in dispatch order
    job_arrived_before: list[int] = []
    dispatched = 0  # pairs handed out
    arrived = 0  # pairs reported back
    asking = [(0.0, w) for w in range(workers.count)]  # (time, worker) asking for work
    while True:
        for now, w in asking:  # a worker asking for work gets a job while budget remains
            if dispatched < num_pairs:
                pairs = min(workers.job_pairs(w), num_pairs - dispatched)
                finish = workers.finish_time(w, now, pairs)
                dispatch(w, now, finish, pairs, dispatched, arrived)
                heapq.heappush(queue, (finish, w, len(job_pairs)))
                job_pairs.append(pairs)
                job_arrived_before.append(arrived)
                dispatched += pairs
        if arrived == num_pairs:
            break
        now, w, job = heapq.heappop(queue)  # the earliest finish arrives
        arrive(job, w, arrived - job_arrived_before[job])
        arrived += job_pairs[job]
        asking = [(now, w)]
    assert not queue and arrived == dispatched == num_pairs
