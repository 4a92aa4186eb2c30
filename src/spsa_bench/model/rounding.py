"""The worker's rounding of integer parameters (Fishtest ``worker/games.py``).

The server hands a worker float values ``clip(theta +- c_k * flip)``; the engine
plays integers. Fishtest's worker rounds every integer parameter of each engine
on its own, once per batch (all games of the batch play those integers)::

    stochastic  v -> floor(v + U),  U ~ U(0, 1) per (job, engine, parameter)
                (today's worker; unbiased: E[floor(v + U)] = v)
    nearest     v -> floor(v + 1/2)   (the deterministic rounding before 2016)
    none        v -> v                (the engine plays the float)
    coupled     v_plus -> floor(v_plus + U),  v_minus -> floor(v_minus + U), ONE
                U ~ U(0, 1) per (job, parameter) shared by both engines (OpenBench,
                ``OpenBench/spsa_utils.py``, ``spsa_workload_assignment_dict``;
                docs/frameworks.md); U is the plus engine's uniform of ``stochastic``,
                so the two modes share their draws (common random numbers)

Coupled rounding of ``theta +- c`` (away from the bounds): with ``x = theta - c + U``,
``floor(x + 2c) - floor(x)`` is ``floor(2c)`` or ``floor(2c) + 1``, the latter with
probability ``frac(2c)`` (``U`` uniform makes ``frac(x)`` uniform), so the engines play
the same integer with probability ``1 - 2c`` for ``c < 1/2`` and never for
``c >= 1/2``, and never in the order opposite to the flip
(:func:`coupled_probe_probabilities`).

Only parameters marked integer are rounded. The uniforms come from a counter-based
stream per seed: SplitMix64 (Steele, Lea & Flood 2014) started from a 64-bit key
drawn from the seed's ``rounding`` SeedSequence (:mod:`spsa_bench.model.streams`),
read at position ``(job * 2 + engine) * n_params + param``. So a seed's rounding
never depends on the other seeds, on the optimizer or on how many jobs ran, and
the uniforms of every (seed, job) are computed in one vectorised step without a
loop over seeds.
"""

from __future__ import annotations

import numpy as np

from spsa_bench.model import streams

ROUNDING_MODES = ("stochastic", "nearest", "none", "coupled")
_GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 2.0**-53


def seed_keys(entropy: int, seeds) -> np.ndarray:
    """One 64-bit SplitMix64 key per seed, from its ``rounding`` SeedSequence, ``(seed,)``."""
    return np.array(
        [
            streams.seed_sequence(entropy, int(seed), "rounding").generate_state(1, np.uint64)[0]
            for seed in seeds  # stream setup only: one key per seed
        ],
        dtype=np.uint64,
    )


def splitmix_uniforms(keys: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Uniforms in [0, 1) at ``positions`` of each key's SplitMix64 stream.

    ``keys`` has shape ``(seed,)``; ``positions`` (uint64) broadcasts against
    ``keys[:, None, ...]``. Output ``k`` of a stream with key ``K`` is the SplitMix64
    finaliser of ``K + (k + 1) * 0x9E3779B97F4A7C15`` (mod 2**64), top 53 bits.
    """
    keys = keys.reshape(keys.shape + (1,) * (np.ndim(positions)))
    with np.errstate(over="ignore"):
        state = keys + (np.asarray(positions, dtype=np.uint64) + np.uint64(1)) * _GOLDEN_GAMMA
        state = (state ^ (state >> np.uint64(30))) * _MIX_1
        state = (state ^ (state >> np.uint64(27))) * _MIX_2
        state ^= state >> np.uint64(31)
    return (state >> np.uint64(11)).astype(np.float64) * _TO_UNIT


class Rounding:
    """The integers each engine of a job plays, for the running seeds.

    ``play(job, plus, minus)`` returns the played values (the floats where a
    parameter is not integer or ``mode`` is ``"none"``). ``rows(index)`` keeps the
    seeds at ``index`` (the replay drops finished seeds).
    """

    def __init__(self, mode: str, integer: np.ndarray, entropy: int, seeds, keys=None):
        if mode not in ROUNDING_MODES:
            raise ValueError(f"rounding must be one of {ROUNDING_MODES}, got {mode!r}")
        self.mode = mode
        self.integer = np.asarray(integer, dtype=bool)
        self.count = int(self.integer.sum())
        self.active = mode != "none" and self.count > 0
        # every parameter integer (a Stockfish tune): a slice, so the columns are views
        self.columns = slice(None) if self.integer.all() else np.flatnonzero(self.integer)
        self._offsets = np.flatnonzero(self.integer).astype(np.uint64)
        self.entropy = entropy
        if keys is None and self.active and mode in ("stochastic", "coupled"):
            keys = seed_keys(entropy, seeds)
        self.keys = keys

    def rows(self, index: np.ndarray) -> Rounding:
        keys = None if self.keys is None else self.keys[index]
        return Rounding(self.mode, self.integer, self.entropy, (), keys=keys)

    def _round(self, values: np.ndarray, job: int, engine: int) -> np.ndarray:
        if self.mode == "nearest":
            return np.floor(values + 0.5)
        n_params = self.integer.shape[0]
        positions = (np.uint64(job) * np.uint64(2) + np.uint64(engine)) * np.uint64(n_params)
        u = splitmix_uniforms(self.keys, positions + self._offsets)
        u += values
        return np.floor(u, out=u)

    def play(
        self, job: int, plus: np.ndarray, minus: np.ndarray, in_place: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """The values engine ``plus`` (engine 0) and ``minus`` (engine 1) play in ``job``
        (written into ``plus`` and ``minus`` themselves when ``in_place``)."""
        if not self.active:
            return plus, minus
        columns = self.columns
        if not in_place:
            plus, minus = plus.copy(), minus.copy()
        if self.mode == "coupled":
            n_params = self.integer.shape[0]
            positions = np.uint64(job) * np.uint64(2) * np.uint64(n_params)
            u = splitmix_uniforms(self.keys, positions + self._offsets)  # the plus engine's
            plus[:, columns] = np.floor(plus[:, columns] + u)
            minus[:, columns] = np.floor(minus[:, columns] + u)
            return plus, minus
        plus[:, columns] = self._round(plus[:, columns], job, 0)
        minus[:, columns] = self._round(minus[:, columns], job, 1)
        return plus, minus


def probe_outcomes(difference: np.ndarray, flip: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per seed, how many integer parameters of one job were played with equal integers,
    and how many in the opposite order to the flip (``(seed,)`` each), from the played
    ``difference = v_plus - v_minus`` and the ``flip`` of those parameters."""
    equal = np.count_nonzero(difference == 0.0, axis=1)
    swapped = np.count_nonzero(difference * flip < 0.0, axis=1)
    return equal, swapped


def probe_probabilities(theta, c, low, high) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form probabilities that one job's two engines play equal integers, and
    integers in the opposite order to the flip, under stochastic rounding.

    A parameter at ``theta`` probed with ``c > 0`` sends ``upper = min(theta + c, high)``
    and ``lower = max(theta - c, low)`` (each side clipped on its own), and each engine
    plays ``floor(v + U)`` with its own uniform: ``floor(v)`` with probability
    ``1 - frac(v)``, else ``floor(v) + 1``. With ``d = floor(upper) - floor(lower)`` and
    ``p``, ``q`` the fractional parts of ``upper`` and ``lower``::

        equal   = (1 - p)(1 - q) + p q   if d == 0,   (1 - p) q   if d == 1,   else 0
        swapped = (1 - p) q              if d == 0,                            else 0

    (the same for either flip: swapped means the upper probe played the smaller
    integer). Broadcasts over its arguments; so ``c >= 1`` never gives equal integers
    away from the bounds. tests/model/test_rounding.py checks it against the replay.
    """
    upper = np.minimum(np.asarray(theta, dtype=np.float64) + c, high)
    lower = np.maximum(np.asarray(theta, dtype=np.float64) - c, low)
    upper_floor, lower_floor = np.floor(upper), np.floor(lower)
    p, q = upper - upper_floor, lower - lower_floor
    d = upper_floor - lower_floor
    upper_down_lower_up = (1.0 - p) * q
    equal = np.where(
        d == 0, (1.0 - p) * (1.0 - q) + p * q, np.where(d == 1, upper_down_lower_up, 0.0)
    )
    swapped = np.where(d == 0, upper_down_lower_up, 0.0)
    return equal, swapped


def coupled_probe_probabilities(c) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form probabilities that one job's two engines play equal integers, and
    integers in the opposite order to the flip, under coupled rounding, for a parameter
    probed with ``c > 0`` whose two sides ``theta +- c`` are not clipped.

    With one uniform ``U`` for both sides, ``x = theta - c + U`` has a uniform
    fractional part, and ``floor(x + 2c) - floor(x) = floor(2c) + [frac(x) >=
    1 - frac(2c)]``::

        equal   = 1 - 2c   if c < 1/2,   else 0
        swapped = 0                         (the difference is never negative)

    independent of ``theta``; compare :func:`probe_probabilities` (each side its own
    uniform), which gives equal integers for every ``c < 1`` with positive probability.
    """
    c = np.asarray(c, dtype=np.float64)
    equal = np.where(c < 0.5, 1.0 - 2.0 * c, 0.0)
    return equal, np.zeros_like(equal)
