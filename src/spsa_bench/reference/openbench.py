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
from spsa_bench.reference.fishtest import (
    FishtestEvent,
    FishtestJob,
    FishtestRun,
    bowl_elo,
    clip,
    splitmix_uniform,
)
from spsa_bench.reference.runner import Workers, clip_opponent, event_loop, play_pairs


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
) -> FishtestRun:
    """Play ``tune`` on one seed as OpenBench would (module docstring); the record is
    the Fishtest reference's (a job's ``k`` is OpenBench's real ``iteration``, its
    ``R_k`` OpenBench's ``r``, ``iteration`` the pairs reported at the hand-out)."""
    if rounding not in ROUNDING_MODES:
        raise ValueError(f"rounding must be one of {ROUNDING_MODES}, got {rounding!r}")
    n = len(tune.theta_start)
    num_pairs = int(tune.num_pairs)
    total = float(tune.iterations)
    integer = [bool(flag) for flag in tune.integer]
    rounds = [flag and rounding != "none" for flag in integer]
    key = int(seed_keys(entropy, [seed])[0])
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

    def dispatch(w: int, now: float, finish: float, pairs: int, dispatched: int, arrived: int):
        job = len(run.jobs)
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

    def arrive(job: int, w: int, staleness: int) -> None:
        nonlocal games
        played = run.jobs[job]
        for i in range(n):
            delta = played.R_k[i] * played.c_k[i] * float(played.net_wins) * played.flip[i]
            theta[i] = clip(theta[i] + delta, float(tune.theta_min[i]), float(tune.theta_max[i]))
        games += 2 * played.pairs
        run.events.append(
            FishtestEvent(
                order=len(run.events),
                job=job,
                worker=w,
                pairs=played.pairs,
                staleness=staleness,
                iteration=games // 2,
                theta=list(theta),
            )
        )

    event_loop(workers, num_pairs, dispatch, arrive)
    return run
