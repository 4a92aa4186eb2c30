"""Literal reference of Fishtest's SPSA, one seed, written from Fishtest's rules.

It calls no optimizer: the gains, the handout, the worker's rounding, the result
and the update are plain Python floats, one parameter at a time, as the server
(``server/fishtest/spsa_workflow.py``: ``parse_spsa_params``,
``build_spsa_worker_step``, ``apply_spsa_result_updates``) and the worker
(``worker/games.py``) do them. The vectorized replay of the built-in ``spsa``
optimizer must agree with it event by event (``tests/reference/test_fishtest_reference.py``).

Per parameter ``i``, with ``N = num_pairs`` iterations (one per game pair)::

    c_i = c_end_i * N**gamma              a_i = r_end_i * c_end_i**2 * (A + N)**alpha

A worker asking for work (handout), with ``k' = iter + 1``::

    c_k  = c_i / k'**gamma                R_k = a_i / (A + k')**alpha / c_k**2
    flip = +-1 (the seed's flip stream, row j for the j-th job handed out)
    plus  = clip(theta_i + c_k * flip)    minus = clip(theta_i - c_k * flip)
                                          (each side clipped to [min_i, max_i] on its own)

The worker then rounds every integer parameter of each engine on its own, once
for the whole batch::

    stochastic  floor(v + U)      U from the seed's SplitMix64 stream (below)
    nearest     floor(v + 1/2)
    none        the engine plays the float

The games: the true Elo of the played values from the seed's bowl (a loop over
parameters, with the plane rotations of a :class:`SeedBowls`), opponent
``-(Elo(plus) - Elo(minus))`` clipped to +-599, and each pair from the job's match
uniforms by the same inverse CDF as :mod:`spsa_bench.reference.runner`
(:func:`~spsa_bench.reference.runner.play_pairs`); the result is ``W - L``, the net
wins of the plus engine. The report (arrival)::

    theta_i <- clip(theta_i + R_k * c_k * (W - L) * flip_i)    (R_k, c_k, flip of the handout)
    iter    += pairs of the report

Requests never move ``iter`` (fishtest #82): a job handed out while others are
out is evaluated with the ``iter`` of its handout, and updates the current
``theta`` when it comes back. Who asks when comes from the event queue of
:mod:`spsa_bench.reference.runner` (:func:`~spsa_bench.reference.runner.event_loop`,
its worker pool and durations): one worker and a fixed batch is the synchronous
schedule, :class:`~spsa_bench.dispatch.asynchronous.AsyncSettings` the asynchronous one.

Randomness is read exactly where the vectorized replay reads it: flips and match
uniforms from :mod:`spsa_bench.model.streams`; the rounding uniform of job ``j``,
engine ``e`` (0 = plus, 1 = minus) and parameter ``i`` is output
``(j * 2 + e) * n_params + i`` of a SplitMix64 stream keyed by the seed's
``rounding`` key, computed here with Python integers masked to 64 bits.

The benchmark also hands the optimizer the realized half-difference
``(v_plus - v_minus) / 2`` of the rounded parameters (``c_k * flip`` elsewhere);
Fishtest's update does not use it, but it is recorded per job, and so are the
integer parameters played with equal integers or in the order opposite to the flip.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from spsa_bench.dispatch.asynchronous import AsyncSettings
from spsa_bench.model import streams
from spsa_bench.model.bowl import SeedBowls, TrueBowl
from spsa_bench.model.noise import VENDORED, NoiseModel
from spsa_bench.model.rounding import seed_keys
from spsa_bench.reference.runner import Workers, clip_opponent, event_loop, play_pairs, true_elo

MASK_64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
MIX_1 = 0xBF58476D1CE4E5B9
MIX_2 = 0x94D049BB133111EB

#: The rounding modes Fishtest's worker has had: each engine's value on its own
#: (stochastic, since 2016; nearest before) or none; not OpenBench's coupled mode.
FISHTEST_ROUNDING = ("stochastic", "nearest", "none")


def splitmix_uniform(key: int, position: int) -> float:
    """Output ``position`` of the SplitMix64 stream with key ``key``, as a uniform in [0, 1):
    the finaliser of ``key + (position + 1) * golden_gamma`` (mod 2**64), top 53 bits."""
    z = (key + (position + 1) * GOLDEN_GAMMA) & MASK_64
    z = ((z ^ (z >> 30)) * MIX_1) & MASK_64
    z = ((z ^ (z >> 27)) * MIX_2) & MASK_64
    z ^= z >> 31
    return (z >> 11) / 2.0**53


def clip(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def bowl_elo(bowl: TrueBowl | SeedBowls, values: Sequence[float]) -> float:
    """The true Elo of the values the engine plays: a :class:`TrueBowl` as the runner
    reference writes it, or a one-seed :class:`SeedBowls` written out here::

        z_i   = (v_i - peak_i) / scale_i
        y_i   = cos_i * z_i + sin_i * z_partner(i)     (without rotation y_i = z_i)
        Elo   = peak_elo - sum_i elo_per_scale_i * y_i**2
    """
    if not isinstance(bowl, SeedBowls):
        return true_elo(bowl, values)
    if bowl.num_seeds != 1:
        raise ValueError("the Fishtest reference plays one seed: pass that seed's bowl row")
    n = len(values)
    z = [(float(values[i]) - float(bowl.theta_peak[0, i])) / float(bowl.scale[i]) for i in range(n)]
    loss = 0.0
    for i in range(n):
        y = z[i]
        if bowl.rotated:
            partner = int(bowl.partner[0, i])
            y = float(bowl.cos[0, i]) * z[i] + float(bowl.sin[0, i]) * z[partner]
        loss += float(bowl.elo_per_scale[0, i]) * y * y
    return bowl.peak_elo - loss


@dataclass(frozen=True)
class FishtestTune:
    """A tune as Fishtest holds it: one entry per parameter, and the run's constants."""

    theta_start: Sequence[float]
    theta_min: Sequence[float]
    theta_max: Sequence[float]
    c_end: Sequence[float]
    r_end: Sequence[float]
    integer: Sequence[bool]
    A: float
    alpha: float
    gamma: float
    num_pairs: int

    def __post_init__(self) -> None:
        names = ("theta_start", "theta_min", "theta_max", "c_end", "r_end", "integer")
        lengths = {len(getattr(self, name)) for name in names}
        if len(lengths) != 1:
            raise ValueError("every per-parameter list needs one entry per parameter")

    @property
    def num_params(self) -> int:
        return len(self.theta_start)

    def c(self, i: int) -> float:
        """``c_i = c_end_i * N**gamma``."""
        return float(self.c_end[i]) * float(self.num_pairs) ** self.gamma

    def a(self, i: int) -> float:
        """``a_i = r_end_i * c_end_i**2 * (A + N)**alpha``."""
        c_end = float(self.c_end[i])
        return float(self.r_end[i]) * c_end**2 * (self.A + float(self.num_pairs)) ** self.alpha

    def clip(self, i: int, value: float) -> float:
        return clip(value, float(self.theta_min[i]), float(self.theta_max[i]))


@dataclass
class FishtestJob:
    """One handout and what the worker played, in handout order."""

    worker: int
    pairs: int
    offset: int  # pairs handed out before it: its first match uniform
    iteration: int  # the server's iter at the handout
    k: int  # iter + 1
    dispatch_time: float
    finish_time: float
    theta: list[float]  # the server's theta at the handout
    c_k: list[float]
    R_k: list[float]
    flip: list[float]
    plus: list[float]  # the values sent, clipped
    minus: list[float]
    played_plus: list[float]  # after the worker's rounding
    played_minus: list[float]
    realized: list[float]  # (played_plus - played_minus) / 2 where rounded, c_k * flip elsewhere
    opponent_elo: float
    net_wins: int  # W - L of the plus engine
    outcome_counts: tuple[int, ...]  # LL, DL, DD, WD, WW
    equal: int  # integer parameters played with equal integers
    swapped: int  # ... and in the order opposite to the flip


@dataclass
class FishtestEvent:
    """One report reaching the server, in arrival order."""

    order: int
    job: int
    worker: int
    pairs: int
    staleness: int  # pairs reported between the job's handout and its report
    iteration: int  # the server's iter after the report
    theta: list[float]  # the server's theta after the update


@dataclass
class FishtestRun:
    theta_start: list[float]
    rounded: bool  # whether the worker rounded anything (a mode and integer parameters)
    num_integer: int
    jobs: list[FishtestJob] = field(default_factory=list)
    events: list[FishtestEvent] = field(default_factory=list)

    @property
    def theta(self) -> np.ndarray:
        """``(event, param)``: theta after every update."""
        return np.array([event.theta for event in self.events], dtype=np.float64)

    @property
    def arrival_job(self) -> list[int]:
        return [event.job for event in self.events]

    @property
    def probes(self) -> int:
        """Jobs times integer parameters rounded (0 when nothing is rounded)."""
        return len(self.jobs) * self.num_integer if self.rounded else 0

    @property
    def probe_equal_fraction(self) -> float:
        equal = sum(job.equal for job in self.jobs)
        return equal / self.probes if self.probes else math.nan

    @property
    def probe_swapped_fraction(self) -> float:
        swapped = sum(job.swapped for job in self.jobs)
        return swapped / self.probes if self.probes else math.nan


def run_fishtest_reference(
    tune: FishtestTune,
    bowl: TrueBowl | SeedBowls,
    entropy: int,
    seed: int,
    batch: AsyncSettings | int,
    *,
    rounding: str = "stochastic",
    noise: NoiseModel = VENDORED,
) -> FishtestRun:
    """Play ``tune`` on one seed as Fishtest would (see the module docstring).

    ``bowl`` is one :class:`TrueBowl` or the seed's row of a :class:`SeedBowls`
    (``bowls.rows([row])``); ``batch`` an :class:`AsyncSettings` (asynchronous) or a
    batch size in pairs (one worker, synchronous); ``rounding`` one of the modes
    Fishtest's worker has had (:data:`FISHTEST_ROUNDING`: ``coupled`` is OpenBench's,
    reference/openbench.py).

    It stays one function on purpose: the handout (``dispatch``) and the update
    (``arrive``) share the server's state (``theta``, ``iter``) as closures, in the
    order Fishtest's server runs them, so the reference reads as the rules do; split
    into module-level steps that state would have to travel through arguments.
    """
    if rounding not in FISHTEST_ROUNDING:
        raise ValueError(f"rounding must be one of {FISHTEST_ROUNDING}, got {rounding!r}")
    n = tune.num_params
    num_pairs = int(tune.num_pairs)
    integer = [bool(flag) for flag in tune.integer]
    rounds = [flag and rounding != "none" for flag in integer]
    key = int(seed_keys(entropy, [seed])[0])
    workers = Workers.of(entropy, seed, batch)
    flips = workers.flips(entropy, seed, num_pairs, n)
    uniforms = streams.match_draws(entropy, np.array([seed]), num_pairs)[0]

    def worker_round(value: float, job: int, engine: int, i: int) -> float:
        if rounding == "nearest":
            return float(math.floor(value + 0.5))
        u = splitmix_uniform(key, (job * 2 + engine) * n + i)
        return float(math.floor(value + u))

    theta = [float(value) for value in tune.theta_start]
    iteration = 0  # the server's iter: pairs reported so far
    run = FishtestRun(list(theta), rounded=any(rounds), num_integer=sum(integer))

    def dispatch(w: int, now: float, finish: float, pairs: int, dispatched: int, arrived: int):
        job = len(run.jobs)
        k = iteration + 1
        c_k, R_k, flip, plus, minus = [], [], [], [], []
        for i in range(n):
            c_k.append(tune.c(i) / float(k) ** tune.gamma)
            R_k.append(tune.a(i) / (tune.A + float(k)) ** tune.alpha / c_k[i] ** 2)
            flip.append(float(flips[job, i]))
            plus.append(tune.clip(i, theta[i] + c_k[i] * flip[i]))
            minus.append(tune.clip(i, theta[i] - c_k[i] * flip[i]))
        played_plus, played_minus, realized = list(plus), list(minus), []
        equal = swapped = 0
        for i in range(n):
            if rounds[i]:
                played_plus[i] = worker_round(plus[i], job, 0, i)
                played_minus[i] = worker_round(minus[i], job, 1, i)
                difference = played_plus[i] - played_minus[i]
                realized.append(difference * 0.5)
                equal += difference == 0.0
                swapped += difference * flip[i] < 0.0
            else:
                realized.append(c_k[i] * flip[i])
        opponent = clip_opponent(-(bowl_elo(bowl, played_plus) - bowl_elo(bowl, played_minus)))
        net, counts = play_pairs(opponent, uniforms[dispatched : dispatched + pairs], noise)
        run.jobs.append(
            FishtestJob(
                worker=w,
                pairs=pairs,
                offset=dispatched,
                iteration=iteration,
                k=k,
                dispatch_time=now,
                finish_time=finish,
                theta=list(theta),
                c_k=c_k,
                R_k=R_k,
                flip=flip,
                plus=plus,
                minus=minus,
                played_plus=played_plus,
                played_minus=played_minus,
                realized=realized,
                opponent_elo=opponent,
                net_wins=net,
                outcome_counts=counts,
                equal=int(equal),
                swapped=int(swapped),
            )
        )

    def arrive(job: int, w: int, staleness: int) -> None:
        nonlocal iteration
        played = run.jobs[job]
        result = float(played.net_wins)
        for i in range(n):
            step = played.R_k[i] * played.c_k[i] * result * played.flip[i]
            theta[i] = tune.clip(i, theta[i] + step)
        iteration += played.pairs
        run.events.append(
            FishtestEvent(
                order=len(run.events),
                job=job,
                worker=w,
                pairs=played.pairs,
                staleness=staleness,
                iteration=iteration,
                theta=list(theta),
            )
        )

    event_loop(workers, num_pairs, dispatch, arrive)
    return run
