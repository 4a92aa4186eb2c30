"""Literal reference of OpenBench's SPSA, one seed, written from OpenBench's rules.

It calls no optimizer: the gains, the hand-out, the rounding, the result and the
update are plain Python floats, one parameter at a time, as OpenBench's server
(``OpenBench/spsa_utils.py``: ``create_spsa_run``, ``spsa_workload_assignment_dict``;
``OpenBench/utils.py``: ``update_test``) and client (``Client/worker.py``:
``ServerReporter.report_results``) do them (docs/frameworks.md). The vectorized
replay of ``spsa-openbench`` must agree with it event by event
(``tests/reference/test_openbench_reference.py``).

Per parameter ``i``, with ``I = num_pairs // pairs_per`` iterations::

    c_i = c_end_i * I**gamma          a_i = r_end_i * c_end_i**2 * (A_ratio * I + I)**alpha

At a hand-out, with ``games`` the games reported so far (two per pair)::

    iteration = 1 + games / (2 * pairs_per)
    c_k = max(c_i / iteration**gamma, 0.5 if int else 0.0)
    r_k = a_i / (A_ratio * I + iteration)**alpha / c_k**2
    dev = theta_i + flip * c_k          base = theta_i - flip * c_k

and the engines play, per integer parameter::

    coupled      floor(dev + U), floor(base + U), one U (OpenBench)
    stochastic   floor(dev + U0), floor(base + U1)
    nearest      floor(v + 1/2)            none: the floats

each value clipped to ``[min_i, max_i]`` (OpenBench rounds, then clips; the
benchmark's replay clips, then rounds; they agree for integer bounds, which the
OpenBench block parser requires of int parameters, and for float parameters, which
are not rounded). The report::

    delta_i = r_k * c_k * (W - L) * flip_i       theta_i <- clip(theta_i + delta_i)
    games  += 2 * pairs

The rounding uniforms are the seed's SplitMix64 ``rounding`` stream at
``(job * 2 + engine) * n_params + i`` (coupled: engine 0's for both), flips and
match uniforms from :mod:`spsa_bench.model.streams`, the schedule from the event
queue of :mod:`spsa_bench.reference.runner`, as in :mod:`spsa_bench.reference.fishtest`.

On OpenBench's own dispatch (``batch: openbench``) the loop is :func:`openbench_loop`:
machines (concurrency and speed as every asynchronous pool) ask for a workload when
their last one is done. SINGLE (``OpenBench/workloads/get_workload.py``,
``game_distribution``: one runner; ``spsa_workload_assignment_dict``: one permutation):
``pairs_per * concurrency`` pairs (cut to the budget), one hand-out, lasting the greedy
makespan of its ``2 N`` game durations over the machine's lanes, divided by its speed.
MULTIPLE (``game_distribution``: ``spsa_count = concurrency // 2`` runners of concurrency
2; ``spsa_workload_assignment_dict``: ``permutations = runner_count``, one flip and one
rounding uniform per runner): ``pairs_per`` pairs per runner, one hand-out each, the
workload lasting its slowest runner's makespan over two lanes, divided by the speed.
BULK reports a job (the workload, or a runner's share) once, at the workload's end.
BATCHED (``Client/worker.py``: ``REPORT_INTERVAL = 30``; every finished pair is queued,
the queue sent every 30 s and at the end) reports at ``t0 + 30 k`` (each ``k >= 1``
before the end) the pairs finished by then, taken as ``floor(N * 30 k / D)`` of the
job's ``N`` pairs over the workload's wall time ``D``, and the rest at the end; a report
with no new pair sends nothing. Each report is applied when it arrives (reports in time
order, ties in worker order)::

    delta_i = r_k * c_k * (W - L of the report's pairs) * flip_i     games += 2 * pairs

with the job's hand-out ``r_k``, ``c_k``, ``flip``. A hand-out's flip row and
rounding index are ``j = worker`` at time 0 (the machine; in MULTIPLE runner ``r`` of
machine ``m``, ``m R + r``) and ``j = W R + e`` after report ``e`` (``R = 1`` in SINGLE;
``e`` counted from 0 over all reports), the numbering of the replay's jobs. In MULTIPLE
a report is one runner's piece, as the replay applies it (the conventions where
OpenBench sums a machine's runners into one update: :func:`openbench_loop`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from spsa_bench.dispatch.asynchronous import AsyncSettings
from spsa_bench.model import streams
from spsa_bench.model.bowl import SeedBowls, TrueBowl
from spsa_bench.model.noise import VENDORED, NoiseModel
from spsa_bench.model.rounding import ROUNDING_MODES, seed_keys
from spsa_bench.reference.async_runner import greedy_makespan, reference_workers
from spsa_bench.reference.fishtest import (
    FishtestEvent,
    FishtestJob,
    FishtestRun,
    bowl_elo,
    clip,
    splitmix_uniform,
)
from spsa_bench.reference.runner import Workers, clip_opponent, event_loop, play_pairs

#: ``Client/worker.py``: seconds between a client's reports.
REPORT_INTERVAL = 30.0


@dataclass(frozen=True)
class OpenBenchTune:
    """A tune as OpenBench holds it: the block's columns and the run's constants."""

    theta_start: Sequence[float]
    theta_min: Sequence[float]
    theta_max: Sequence[float]
    c_end: Sequence[float]
    r_end: Sequence[float]
    integer: Sequence[bool]
    A_ratio: float
    alpha: float
    gamma: float
    pairs_per: int
    num_pairs: int

    @property
    def iterations(self) -> int:
        return max(1, int(self.num_pairs) // int(self.pairs_per))


def run_openbench_reference(
    tune: OpenBenchTune,
    bowl: TrueBowl | SeedBowls,
    entropy: int,
    seed: int,
    batch: AsyncSettings | int,
    *,
    rounding: str = "coupled",
    noise: NoiseModel = VENDORED,
    summed: bool = False,
) -> FishtestRun:
    """Play ``tune`` on one seed as OpenBench would (module docstring); the record is
    the Fishtest reference's (a job's ``k`` is OpenBench's real ``iteration``, its
    ``R_k`` OpenBench's ``r``, ``iteration`` the pairs reported at the hand-out).

    ``summed`` (OpenBench's dispatch only) applies OpenBench's own MULTIPLE rule in place
    of the replay's conventions (:func:`openbench_loop`): a machine's report is one
    event whose update sums its runners' deltas and is clipped once, and the next
    workload's runners are all handed out after it; an event's ``job`` and ``worker``
    are its first piece's, its ``pairs`` the report's. SINGLE plays the same either way."""
    if rounding not in ROUNDING_MODES:
        raise ValueError(f"rounding must be one of {ROUNDING_MODES}, got {rounding!r}")
    n = len(tune.theta_start)
    num_pairs = int(tune.num_pairs)
    total = float(tune.iterations)
    integer = [bool(flag) for flag in tune.integer]
    rounds = [flag and rounding != "none" for flag in integer]
    key = int(seed_keys(entropy, [seed])[0])
    own = isinstance(batch, AsyncSettings) and batch.batch == "openbench"
    if own:  # OpenBench's dispatch: a hand-out's row is its job index (module docstring)
        runners = batch.runners  # rows: more than any hand-out's (openbench_loop)
        rows = batch.num_workers * runners + 2 * runners * num_pairs
        flips = streams.flips(entropy, np.array([seed]), rows, n)[0]
    else:
        workers = Workers.of(entropy, seed, batch)
        flips = workers.flips(entropy, seed, num_pairs, n)
    uniforms = streams.match_draws(entropy, np.array([seed]), num_pairs)[0]
    c_value = [float(tune.c_end[i]) * total**tune.gamma for i in range(n)]
    a_value = [
        float(tune.r_end[i])
        * float(tune.c_end[i]) ** 2
        * (tune.A_ratio * total + total) ** tune.alpha
        for i in range(n)
    ]

    def engine_round(value: float, job: int, engine: int, i: int) -> float:
        if rounding == "nearest":
            return float(math.floor(value + 0.5))
        if rounding == "coupled":
            engine = 0  # one uniform for both engines
        return float(math.floor(value + splitmix_uniform(key, (job * 2 + engine) * n + i)))

    theta = [float(value) for value in tune.theta_start]
    games = 0  # Test.games: games reported so far
    run = FishtestRun(list(theta), rounded=any(rounds), num_integer=sum(integer))

    def dispatch(
        w: int, now: float, finish: float, pairs: int, dispatched: int, arrived: int, row=None
    ):
        job = len(run.jobs) if row is None else row
        iteration = 1.0 + games / (2.0 * tune.pairs_per)
        c_k, r_k, flip, dev, base = [], [], [], [], []
        played_dev, played_base, realized = [], [], []
        equal = swapped = 0
        for i in range(n):
            c = max(c_value[i] / iteration**tune.gamma, 0.5 if integer[i] else 0.0)
            c_k.append(c)
            r_k.append(a_value[i] / (tune.A_ratio * total + iteration) ** tune.alpha / c**2)
            f = float(flips[job, i])
            flip.append(f)
            low, high = float(tune.theta_min[i]), float(tune.theta_max[i])
            dev.append(clip(theta[i] + f * c, low, high))
            base.append(clip(theta[i] - f * c, low, high))
            if rounds[i]:
                up = clip(engine_round(theta[i] + f * c, job, 0, i), low, high)
                down = clip(engine_round(theta[i] - f * c, job, 1, i), low, high)
                played_dev.append(up)
                played_base.append(down)
                difference = up - down
                realized.append(difference * 0.5)
                equal += difference == 0.0
                swapped += difference * f < 0.0
            else:
                played_dev.append(dev[i])
                played_base.append(base[i])
                realized.append(c * f)
        opponent = clip_opponent(-(bowl_elo(bowl, played_dev) - bowl_elo(bowl, played_base)))
        net, counts = play_pairs(opponent, uniforms[dispatched : dispatched + pairs], noise)
        run.jobs.append(
            FishtestJob(
                worker=w,
                pairs=pairs,
                offset=dispatched,
                iteration=games // 2,
                k=iteration,
                dispatch_time=now,
                finish_time=finish,
                theta=list(theta),
                c_k=c_k,
                R_k=r_k,
                flip=flip,
                plus=dev,
                minus=base,
                played_plus=played_dev,
                played_minus=played_base,
                realized=realized,
                opponent_elo=opponent,
                net_wins=net,
                outcome_counts=counts,
                equal=int(equal),
                swapped=int(swapped),
            )
        )

    def arrive(job: int, w: int, staleness: int, piece=None, together=()) -> None:
        """Apply a report: ``piece`` (pairs, W - L) of hand-out ``job`` (default its
        whole result) and ``together``'s further ``(hand-out, pairs, W - L)`` of the same
        report, their deltas summed before one clip."""
        nonlocal games
        played = run.jobs[job]
        pairs, net = (played.pairs, played.net_wins) if piece is None else piece
        parts = [(played, net), *((run.jobs[other], more) for other, _, more in together)]
        for i in range(n):
            delta = 0.0
            for k, (part, result) in enumerate(parts):
                step = part.R_k[i] * part.c_k[i] * float(result) * part.flip[i]
                delta = step if k == 0 else delta + step
            theta[i] = clip(theta[i] + delta, float(tune.theta_min[i]), float(tune.theta_max[i]))
        pairs += sum(more for _, more, _ in together)
        games += 2 * pairs
        run.events.append(
            FishtestEvent(
                order=len(run.events),
                job=job,
                worker=w,
                pairs=pairs,
                staleness=staleness,
                iteration=games // 2,
                theta=list(theta),
            )
        )

    if not own:
        event_loop(workers, num_pairs, dispatch, arrive)
        return run

    def net_of(job: int, first: int, pairs: int) -> int:
        """W - L of the hand-out's pairs ``first .. first + pairs - 1`` (its opponent)."""
        played = run.jobs[job]
        return play_pairs(played.opponent_elo, uniforms[first : first + pairs], noise)[0]

    openbench_loop(entropy, seed, num_pairs, batch, dispatch, arrive, net_of, summed=summed)
    return run


def openbench_loop(
    entropy, seed, num_pairs, settings, dispatch, arrive, net_of, *, summed: bool = False
) -> None:
    """OpenBench's dispatch and reports for one seed (module docstring), SINGLE or
    MULTIPLE, BULK or BATCHED.

    ``dispatch(worker, now, finish, pairs, offset, arrived, row)`` hands out one job (a
    SINGLE workload, or one runner's share of a MULTIPLE workload; ``worker`` the
    machine, or runner ``r`` of machine ``m`` as ``m R + r``; ``row``: its job index);
    ``net_of(handout, first_pair, pairs)`` is the W - L of a report's pairs;
    ``arrive(handout, worker, staleness, (pairs, net))`` applies a report. Hand-outs are
    numbered in call order.

    A machine asks for a workload when its last one is done: ``pairs_per * C`` pairs
    (SINGLE, ``C`` its concurrency) or ``pairs_per * R`` (MULTIPLE, ``R = C // 2``
    runners of concurrency 2, each ``pairs_per`` pairs with its own hand-out), cut to
    the budget; its ``2 N`` games are drawn as one block from the machine's ``durations``
    stream (the whole uncut block); the workload lasts the greedy makespan of its games
    over the machine's lanes (SINGLE), or the slowest runner's makespan over its two
    lanes (MULTIPLE), divided by the machine's speed. Every job of the workload reports
    BULK once at its end, or BATCHED in the pieces of the module docstring, split on the
    workload's start and wall time. Reports are applied in (time, worker) order, one
    event each.

    MULTIPLE follows the benchmark's stated conventions (docs/frameworks.md, "Modelling
    assumptions"), where OpenBench differs: a machine's report carries every runner's
    pieces, summed into one update clipped once (``Client/worker.py``,
    ``report_results``: ``delta += r c (W - L) flip[runner_idx]`` over the queued
    batches; ``OpenBench/utils.py``, ``update_test``), and the next workload's ``R``
    perturbations are all drawn from the ``theta`` after it (``OpenBench/spsa_utils.py``,
    ``spsa_workload_assignment_dict``, ``permutations = runner_count``). Here each runner's
    piece is its own event, clipped on its own, runners in order, and runner ``r``'s next
    hand-out follows its own last piece (the machine's next workload is drawn at its
    first runner's), so job ``W R + e`` is the one arrival ``e`` frees, as the replay
    numbers its jobs.

    ``summed`` plays OpenBench's rule instead: the pieces of one machine at one time are
    one report, ``arrive(handout, worker, staleness, (pairs, net), together)`` with the
    other runners' ``(handout, pairs, net)`` in ``together``; after a workload's last
    report ``e`` (counted over reports) all its runners are handed out, the ``p``-th at
    row ``j = W R + R e + p`` (the initial ones at ``m R + r`` as above; in SINGLE
    ``W + e``, the same rows as without ``summed``)."""
    multiple = settings.distribution == "multiple"
    runners, per = (settings.concurrency_min // 2, settings.pairs_per) if multiple else (1, 0)
    concurrency, speed = reference_workers(entropy, seed, settings)
    durations = [
        streams.generator(entropy, seed, "durations", m) for m in range(settings.num_workers)
    ]
    mu = math.log(settings.duration_median)
    sigma = (math.log(settings.duration_p95) - mu) / 1.645
    queue: list = []  # (time, worker, hand-out, first pair, pairs, last report?)
    dispatched = arrived = reports = 0
    handouts: list[tuple[int, int]] = []  # (arrived at the hand-out, worker)
    waiting: dict[int, tuple] = {}  # worker -> its job of a drawn workload, not handed out

    def workload(machine: int, now: float) -> None:
        """Draw the machine's next workload; its jobs wait in ``waiting`` for their hand-out."""
        nonlocal dispatched
        uncut = settings.pairs_per * (runners if multiple else concurrency[machine])
        pairs = min(uncut, num_pairs - dispatched)
        z = durations[machine].standard_normal(2 * uncut)  # the whole block, even if cut
        games = np.exp(mu + sigma * z[: 2 * pairs])
        if multiple:  # each runner's 2 pairs_per games on its own two lanes
            slowest = max(greedy_makespan(games[2 * per * r : 2 * per * (r + 1)], 2)
                          for r in range(runners))  # fmt: skip
            wall = slowest / speed[machine]
            for r in range(runners):
                share = min(per, pairs - per * r)
                if share > 0:
                    waiting[machine * runners + r] = (now, wall, share, dispatched + per * r)
        else:
            wall = greedy_makespan(games, min(concurrency[machine], 2 * pairs)) / speed[machine]
            waiting[machine] = (now, wall, pairs, dispatched)
        dispatched += pairs

    def hand_out(worker: int, row: int) -> None:
        """Hand out the worker's waiting job: its perturbation now, its reports queued."""
        now, wall, pairs, offset = waiting.pop(worker)
        finish = now + wall
        handout = len(handouts)
        dispatch(worker, now, finish, pairs, offset, arrived, row)
        handouts.append((arrived, worker))
        done = 0
        k = 1
        while settings.reporting == "batched" and now + REPORT_INTERVAL * k < finish:
            by_now = min(math.floor(pairs * (REPORT_INTERVAL * k) / wall), pairs)
            if by_now > done:
                queue.append((now + REPORT_INTERVAL * k, worker, handout, offset + done,
                              by_now - done, False))  # fmt: skip
                done = by_now
            k += 1
        queue.append((finish, worker, handout, offset + done, pairs - done, True))

    for machine in range(settings.num_workers):
        if dispatched < num_pairs:
            workload(machine, 0.0)
    for worker in sorted(waiting):  # every job of the first workloads at time 0
        hand_out(worker, worker)
    while queue:
        queue.sort(key=lambda entry: (entry[0], entry[1]))
        now, worker, handout, first, pairs, last = queue.pop(0)
        staleness = arrived - handouts[handout][0]
        machine = worker // runners
        together = []  # OpenBench's report: the machine's other runners at this time
        while summed and queue and queue[0][0] == now and queue[0][1] // runners == machine:
            _, _, other, start, more, _ = queue.pop(0)
            together.append((other, more, net_of(other, start, more)))
        arrive(handout, worker, staleness, (pairs, net_of(handout, first, pairs)), together)
        arrived += pairs + sum(more for _, more, _ in together)
        if last and worker % runners == 0 and dispatched < num_pairs:
            workload(machine, now)  # the machine's workload is done: its next one
        if summed and last:  # every runner of the new workload, from the same theta
            mine = sorted(w for w in waiting if w // runners == machine)
            for position, waiting_worker in enumerate(mine):
                hand_out(
                    waiting_worker, settings.num_workers * runners + runners * reports + position
                )
        elif last and worker in waiting:
            hand_out(worker, settings.num_workers * runners + reports)
        reports += 1
    assert arrived == dispatched == num_pairs and not waiting
