"""Problem instances of a tune scenario: one true bowl per seed, drawn from a prior.

A tune scenario (a Fishtest parameter block) says where each parameter starts,
its bounds and its ``c_end``, but not where its optimum is nor how much Elo it
carries. :class:`TruthPrior` describes what the benchmark assumes about those
unknowns, and :func:`draw_instances` draws one instance per seed into a
:class:`~spsa_bench.model.bowl.SeedBowls` (distances in units of each
parameter's ``c_end``).

The prior, as a scenario's ``truth`` mapping (every key optional)::

    truth:
      offset: {distribution: normal, scale: 2}   # optimum - start, in c_end units
      elo_per_c_end: {min: 0.02, max: 0.2}       # or a number (the same everywhere)
      inactive_fraction: 0.25                    # share of parameters with no effect
      interaction: 0                             # 0 none .. 1 rotations up to +-pi/4

* ``offset``: ``normal`` draws ``S * N(0, 1)``, ``uniform`` draws ``U(-S, S)``,
  ``fixed`` is ``+-S`` with a random sign; the optimum is
  ``theta_peak = clip(start + offset * c_end, min, max)``.
* ``elo_per_c_end``: the Elo lost one ``c_end`` from the optimum along an axis;
  a number is used for every parameter, ``{min, max}`` draws each parameter's
  value log-uniformly in ``[min, max]`` (how well ``c_end`` fits the true
  curvature varies by parameter: the miscalibration axis).
* ``inactive_fraction`` ``f``: exactly ``round(f * P)`` parameters, chosen at
  random, lose nothing anywhere (``elo_per_c_end = 0``, ``theta_peak = start``).
* ``interaction`` ``g`` in ``[0, 1]``: 0 gives an axis-aligned bowl; otherwise
  the active parameters are paired at random (a perfect matching, one left
  unpaired when their number is odd) and each pair's plane is rotated by an
  angle drawn uniformly in ``[-g pi/4, g pi/4]`` (the
  :class:`~spsa_bench.model.bowl.SeedBowls` convention). Inactive parameters
  are never paired: a rotation would make the Elo depend on them.

Defaults (assumptions; docs/fishtest.md, "The truth prior", gives the reasoning): Fishtest's Autoselect
assumes 2 Elo lost half a range from the optimum, which is 0.22 Elo per c_end
step at its c_end = range/6 and 0.02 Elo at Stockfish's TUNE() default
c_end = range/20; hence log-uniform ``[0.02, 0.2]``. An optimum about two
c_end steps from the start (``normal``, scale 2) keeps the start within the
reach of a tune's probes; a quarter of the parameters of a real tune doing
nothing and no interaction are the plainest assumptions.

Draw order, per seed, each from the seed's own generator
``streams.generator(entropy, seed, "instance")`` so that a seed's instance never
depends on which other seeds are drawn:

1. the offsets, one call of ``P`` values (``standard_normal``; ``uniform(-S, S)``;
   or, for ``fixed``, ``P`` uniforms whose ``< 0.5`` gives the sign ``-``);
2. ``P`` uniforms for ``elo_per_c_end`` (always drawn, used only for a range:
   ``exp(log min + u (log max - log min))``);
3. one permutation of ``P`` whose first ``round(f * P)`` entries are inactive
   (always drawn);
4. only if ``interaction > 0``: a permutation of the active parameters (pairs
   are its consecutive entries ``(2k, 2k+1)``), then one uniform angle per pair.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from spsa_bench.model import streams
from spsa_bench.model.bowl import SeedBowls

DISTRIBUTIONS = ("normal", "uniform", "fixed")
#: Default prior (see the module docstring for the reasoning).
DEFAULT_OFFSET = {"distribution": "normal", "scale": 2.0}
DEFAULT_ELO_PER_C_END = {"min": 0.02, "max": 0.2}
DEFAULT_INACTIVE_FRACTION = 0.25
DEFAULT_INTERACTION = 0.0
PRIOR_KEYS = ("offset", "elo_per_c_end", "inactive_fraction", "interaction")


class PriorError(ValueError):
    """A ``truth`` mapping that describes no prior; the message names the key."""


def _is_number(value) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def _number(key: str, value, *, low=None, high=None, low_open=False) -> float:
    if not _is_number(value):
        raise PriorError(f"{key} = {value!r}: must be a finite number")
    value = float(value)
    if low is not None and (value <= low if low_open else value < low):
        raise PriorError(f"{key} = {value:g}: must be {'>' if low_open else '>='} {low:g}")
    if high is not None and value > high:
        raise PriorError(f"{key} = {value:g}: must be <= {high:g}")
    return value


def _mapping(key: str, value, allowed: Sequence[str]) -> Mapping:
    if not isinstance(value, Mapping):
        raise PriorError(f"{key} = {value!r}: must be a mapping with keys {', '.join(allowed)}")
    unknown = [k for k in value if k not in allowed]
    if unknown:
        raise PriorError(f"{key}: unknown key {unknown[0]!r} (expected {', '.join(allowed)})")
    return value


@dataclass(frozen=True)
class TruthPrior:
    """What a tune scenario assumes about the unknown truth (module docstring).

    ``elo_min == elo_max`` is a fixed ``elo_per_c_end``.
    """

    offset_distribution: str = DEFAULT_OFFSET["distribution"]
    offset_scale: float = DEFAULT_OFFSET["scale"]
    elo_min: float = DEFAULT_ELO_PER_C_END["min"]
    elo_max: float = DEFAULT_ELO_PER_C_END["max"]
    inactive_fraction: float = DEFAULT_INACTIVE_FRACTION
    interaction: float = DEFAULT_INTERACTION

    def __post_init__(self) -> None:
        if self.offset_distribution not in DISTRIBUTIONS:
            raise PriorError(
                f"truth.offset.distribution = {self.offset_distribution!r}: "
                f"must be one of {', '.join(DISTRIBUTIONS)}"
            )
        _number("truth.offset.scale", self.offset_scale, low=0.0)
        _number("truth.elo_per_c_end.min", self.elo_min, low=0.0, low_open=True)
        _number("truth.elo_per_c_end.max", self.elo_max, low=0.0, low_open=True)
        if self.elo_min > self.elo_max:
            raise PriorError(
                f"truth.elo_per_c_end.min = {self.elo_min:g}: must be <= max = {self.elo_max:g}"
            )
        _number("truth.inactive_fraction", self.inactive_fraction, low=0.0, high=1.0)
        _number("truth.interaction", self.interaction, low=0.0, high=1.0)

    @classmethod
    def from_mapping(cls, truth: Mapping | None) -> TruthPrior:
        """The prior of a scenario's ``truth`` mapping (``None``: every default)."""
        if truth is None:
            return cls()
        truth = _mapping("truth", truth, PRIOR_KEYS)
        fields: dict = {}
        if "offset" in truth:
            offset = _mapping("truth.offset", truth["offset"], ("distribution", "scale"))
            if "distribution" in offset:
                fields["offset_distribution"] = offset["distribution"]
            if "scale" in offset:
                fields["offset_scale"] = _number("truth.offset.scale", offset["scale"], low=0.0)
        if "elo_per_c_end" in truth:
            elo = truth["elo_per_c_end"]
            if isinstance(elo, Mapping):
                elo = _mapping("truth.elo_per_c_end", elo, ("min", "max"))
                for bound in ("min", "max"):
                    if bound not in elo:
                        raise PriorError(f"truth.elo_per_c_end.{bound}: required with a range")
                    fields[f"elo_{bound}"] = _number(
                        f"truth.elo_per_c_end.{bound}", elo[bound], low=0.0, low_open=True
                    )
            else:
                value = _number("truth.elo_per_c_end", elo, low=0.0, low_open=True)
                fields["elo_min"] = fields["elo_max"] = value
        for key in ("inactive_fraction", "interaction"):
            if key in truth:
                fields[key] = _number(f"truth.{key}", truth[key], low=0.0, high=1.0)
        return cls(**fields)

    def to_dict(self) -> dict:
        """The prior as a complete ``truth`` mapping (``from_mapping`` reads it back)."""
        elo = (
            self.elo_min
            if self.elo_min == self.elo_max
            else {"min": self.elo_min, "max": self.elo_max}
        )
        return {
            "offset": {"distribution": self.offset_distribution, "scale": self.offset_scale},
            "elo_per_c_end": elo,
            "inactive_fraction": self.inactive_fraction,
            "interaction": self.interaction,
        }

    def inactive_count(self, num_params: int) -> int:
        """Parameters with no effect: ``round(f * P)`` (Python's round, half to even)."""
        return int(round(self.inactive_fraction * num_params))


def _as_params(name: str, values, num_params: int | None) -> np.ndarray:
    array = np.array(values, dtype=np.float64, copy=True)
    if array.ndim != 1 or array.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array of per-parameter values")
    if num_params is not None and array.shape[0] != num_params:
        raise ValueError(f"{name} has {array.shape[0]} values, expected {num_params}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    return array


def draw_instances(
    prior: TruthPrior,
    start,
    low,
    high,
    c_end,
    entropy: int,
    seeds: Sequence[int],
) -> SeedBowls:
    """One true bowl per seed (rows in the order of ``seeds``), drawn from ``prior``.

    ``start``, ``low``, ``high`` and ``c_end`` are the block's per-parameter start,
    bounds and ``c_end``; see the module docstring for the draw order.
    """
    start = _as_params("start", start, None)
    num_params = start.shape[0]
    low = _as_params("low", low, num_params)
    high = _as_params("high", high, num_params)
    c_end = _as_params("c_end", c_end, num_params)
    if np.any(c_end <= 0):
        raise ValueError("c_end must be > 0")
    if np.any(low > high) or np.any(start < low) or np.any(start > high):
        raise ValueError("start must lie within [low, high]")
    seeds = [int(s) for s in seeds]
    n_seeds = len(seeds)
    theta_peak = np.empty((n_seeds, num_params))
    elo = np.empty((n_seeds, num_params))
    rotated = prior.interaction > 0
    partner = np.tile(np.arange(num_params), (n_seeds, 1)) if rotated else None
    cos = np.ones((n_seeds, num_params)) if rotated else None
    sin = np.zeros((n_seeds, num_params)) if rotated else None
    n_inactive = prior.inactive_count(num_params)
    scale, half_angle = prior.offset_scale, prior.interaction * math.pi / 4.0
    log_min, log_max = math.log(prior.elo_min), math.log(prior.elo_max)
    for row, seed in enumerate(seeds):  # stream setup: each seed has its own generator
        rng = streams.generator(entropy, seed, "instance")
        # 1. offsets from the start, in c_end units
        if prior.offset_distribution == "normal":
            offset = scale * rng.standard_normal(num_params)
        elif prior.offset_distribution == "uniform":
            offset = rng.uniform(-scale, scale, num_params)
        else:
            offset = np.where(rng.random(num_params) < 0.5, -scale, scale)
        # 2. Elo per c_end (the uniforms are drawn even when the value is fixed)
        u = rng.random(num_params)
        elo[row] = np.exp(log_min + u * (log_max - log_min)) if log_max > log_min else prior.elo_min
        # 3. inactive parameters
        inactive = rng.permutation(num_params)[:n_inactive]
        offset[inactive] = 0.0
        elo[row, inactive] = 0.0
        theta_peak[row] = np.minimum(np.maximum(start + offset * c_end, low), high)
        theta_peak[row, inactive] = start[inactive]
        # 4. pairs of active parameters and their rotation angles
        if rotated:
            active = np.flatnonzero(elo[row] > 0)
            order = rng.permutation(active)
            n_pairs = order.shape[0] // 2
            first, second = order[0 : 2 * n_pairs : 2], order[1 : 2 * n_pairs : 2]
            angle = rng.uniform(-half_angle, half_angle, n_pairs)
            partner[row, first], partner[row, second] = second, first
            cos[row, first] = cos[row, second] = np.cos(angle)
            sin[row, first], sin[row, second] = -np.sin(angle), np.sin(angle)
    return SeedBowls(
        theta_peak=theta_peak,
        elo_per_scale=elo,
        scale=c_end,
        partner=partner,
        cos=cos,
        sin=sin,
    )


__all__ = ["PriorError", "TruthPrior", "draw_instances", "DISTRIBUTIONS", "PRIOR_KEYS"]
