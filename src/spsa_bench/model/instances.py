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

Landscape options (docs/fishtest.md, "Landscape options"; every one off by default, and
off leaves every draw above bit for bit as it was)::

    truth:
      offset: {distribution: student_t, scale: 1, df: 3}
      elo_at_stake: {median: 2, sigma: 0.5, concentration: 0.3}
      plateau: {fraction: 0.3, width: 2}
      ridge: {fraction: 0.5, ratio: 0.05}
      time_control_shift: {spread: 1, tuned_at: STC}

* ``student_t`` offsets: ``S * Z / sqrt(V / df)`` with the ``Z ~ N(0, 1)`` of the
  ``normal`` offsets (the same numbers at a seed) and ``V ~ chi2(df)``: a Student-t with
  ``df`` degrees of freedom, ``P(|t| > x) ~ x^-df`` in the tail.
* ``elo_at_stake``: the Elo the instance gains from its start to its optimum is a total
  ``T = median * (P / 30)^params_exponent * exp(sigma * N(0, 1))`` (lognormal; ``P``
  the block's parameter count, ``params_exponent`` 0 by default: the same total for any
  block, and then bit for bit the draw without the key), drawn per instance and shared
  over the active parameters with Dirichlet(``concentration``) shares ``s_i``: the
  per-parameter Elo per ``c_end`` becomes ``e_i = kappa * s_i`` (the ``elo_per_c_end``
  values are not used) with ``kappa = T / L0``, ``L0`` the instance's loss at its start
  with ``e = s`` (every other option included). The loss is linear in ``e``, so the
  gain at the start is exactly ``T`` whatever the number of parameters (``kappa = 0``
  when ``L0 = 0``: an instance with nothing to gain). ``kappa`` grows as ``1 / L0``:
  an instance whose large shares sit on parameters with small offsets (or inside
  plateaus) gets steep curvatures; docs/fishtest.md states the caveat. An optional
  ``cap`` bounds them: ``e_i = min(kappa s_i, cap)``, so an instance gains at most ``T``
  (less where the cap binds) and no parameter loses more than ``cap`` Elo one c_end from
  its optimum (or its plateau's edge).
* ``plateau`` ``{fraction: f, width: w}``: ``round(f * A)`` of the ``A`` active
  parameters, at random, have a flat bottom of half-width ``w`` c_end: along their
  (rotated) axis the loss is ``e_i max(|y_i| - w, 0)^2`` (SeedBowls), zero with a zero
  gradient inside, so a parameter that starts on its plateau moves by noise alone.
* ``ridge`` ``{fraction: f, ratio: r}``: ``floor(round(f * A) / 2)`` pairs of active
  parameters, at random, enter one formula together: each pair ``(i, j)`` is rotated by
  ``+pi/4`` or ``-pi/4`` (a fair sign) and its second axis ``y_j`` (``(z_i + z_j)/sqrt 2``
  or ``(z_j - z_i)/sqrt 2``) keeps ``r`` times the curvature, so the bowl is ``1/sqrt r``
  times longer along the pair's sum or difference. Not combined with ``interaction``
  (a parameter has one partner).
* ``time_control_shift`` ``{spread: d, tuned_at: TC}``: each active parameter draws
  ``delta_i ~ N(0, 1)``; its optimum at time control ``t`` (STC, LTC, VLTC; one step
  each) is ``clip(theta_peak_i + (t - tuned_at) * d * delta_i * c_end_i, min, max)``,
  ``theta_peak`` the optimum at ``tuned_at`` (where the tune plays). The optimum moves
  monotonically with the time control, ``d`` c_end (one standard deviation) a step.
  :func:`elo_at_time_control` evaluates an instance at another time control.

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

The landscape options draw from a second generator of the seed,
``streams.generator(entropy, seed, "landscape")``, so the draws above never move;
in this order, each only when its option is on:

1. ``elo_at_stake``: one standard normal (the total, first so that it does not depend
   on the number of parameters);
2. ``student_t``: ``P`` chi-square values with ``df`` degrees of freedom;
3. ``plateau``: a permutation of the active parameters (the first ``round(f * A)``);
4. ``ridge``: a permutation of the active parameters (pairs are consecutive entries),
   then one uniform per pair (``< 0.5``: angle ``-pi/4``);
5. ``time_control_shift``: ``P`` standard normals (used on active parameters);
6. ``elo_at_stake``: the Dirichlet shares of the active parameters.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from spsa_bench.model import streams
from spsa_bench.model.bowl import TIME_CONTROLS, SeedBowls

#: Offset distributions with no parameter beyond the scale (the planner's choices).
DISTRIBUTIONS = ("normal", "uniform", "fixed")
#: Every offset distribution of a ``truth`` (``student_t`` also takes ``df``).
OFFSET_DISTRIBUTIONS = DISTRIBUTIONS + ("student_t",)
#: Default prior (see the module docstring for the reasoning).
DEFAULT_OFFSET = {"distribution": "normal", "scale": 2.0}
DEFAULT_ELO_PER_C_END = {"min": 0.02, "max": 0.2}
DEFAULT_INACTIVE_FRACTION = 0.25
DEFAULT_INTERACTION = 0.0
PRIOR_KEYS = (
    "offset",
    "elo_per_c_end",
    "inactive_fraction",
    "interaction",
    "elo_at_stake",
    "plateau",
    "ridge",
    "time_control_shift",
)
#: Defaults of the optional keys of the landscape options (used when the option is given).
DEFAULT_STAKE_SIGMA = 0.5
DEFAULT_STAKE_CONCENTRATION = 0.3
#: ``elo_at_stake.params_exponent``'s reference block: ``median`` is the median total
#: Elo at stake of a block of this many parameters.
STAKE_REFERENCE_PARAMS = 30
DEFAULT_RIDGE_RATIO = 0.05


#: The landscape options: each ``truth`` key's keys and the TruthPrior field they set.
_OPTION_FIELDS = {
    "elo_at_stake": {
        "median": "stake_median",
        "sigma": "stake_sigma",
        "concentration": "stake_concentration",
        "cap": "stake_cap",
        "params_exponent": "stake_params_exponent",
    },
    "plateau": {"fraction": "plateau_fraction", "width": "plateau_width"},
    "ridge": {"fraction": "ridge_fraction", "ratio": "ridge_ratio"},
    "time_control_shift": {"spread": "tc_spread", "tuned_at": "tc_tuned_at"},
}
_REQUIRED_OPTION_KEYS = ("median", "fraction", "width", "spread", "tuned_at")


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
    #: Student-t degrees of freedom (``offset_distribution == "student_t"`` only).
    offset_df: float | None = None
    #: ``elo_at_stake``: median of the lognormal total (``None``: off), its log-sd, and
    #: the Dirichlet concentration of the shares.
    stake_median: float | None = None
    stake_sigma: float = DEFAULT_STAKE_SIGMA
    stake_concentration: float = DEFAULT_STAKE_CONCENTRATION
    #: ``elo_at_stake.cap``: the largest Elo per c_end a parameter may get (None: no cap)
    stake_cap: float | None = None
    #: ``elo_at_stake.params_exponent``: the total grows as ``(P / 30)`` to this power
    stake_params_exponent: float = 0.0
    plateau_fraction: float = 0.0
    plateau_width: float = 0.0
    ridge_fraction: float = 0.0
    ridge_ratio: float = DEFAULT_RIDGE_RATIO
    #: ``time_control_shift``: spread per step in c_end units (0: off) and the tuned one.
    tc_spread: float = 0.0
    tc_tuned_at: str = "STC"

    def __post_init__(self) -> None:
        if self.offset_distribution not in OFFSET_DISTRIBUTIONS:
            raise PriorError(
                f"truth.offset.distribution = {self.offset_distribution!r}: "
                f"must be one of {', '.join(OFFSET_DISTRIBUTIONS)}"
            )
        if (self.offset_distribution == "student_t") != (self.offset_df is not None):
            raise PriorError(
                f"truth.offset.df = {self.offset_df!r}: required with distribution student_t "
                "and only with it"
            )
        if self.offset_df is not None:
            _number("truth.offset.df", self.offset_df, low=1.0, high=1e6)
        if self.stake_median is not None:
            _number("truth.elo_at_stake.median", self.stake_median, low=0.0, low_open=True)
            _number("truth.elo_at_stake.median", self.stake_median, high=1e4)
        _number("truth.elo_at_stake.sigma", self.stake_sigma, low=0.0, high=5.0)
        _number("truth.elo_at_stake.concentration", self.stake_concentration, low=0.01, high=1e4)
        _number(
            "truth.elo_at_stake.params_exponent", self.stake_params_exponent, low=-2.0, high=2.0
        )
        if self.stake_cap is not None:
            _number("truth.elo_at_stake.cap", self.stake_cap, low=0.0, low_open=True)
            _number("truth.elo_at_stake.cap", self.stake_cap, high=1e4)
        _number("truth.plateau.fraction", self.plateau_fraction, low=0.0, high=1.0)
        _number("truth.plateau.width", self.plateau_width, low=0.0, high=1e6)
        _number("truth.ridge.fraction", self.ridge_fraction, low=0.0, high=1.0)
        _number("truth.ridge.ratio", self.ridge_ratio, low=0.0, low_open=True)
        _number("truth.ridge.ratio", self.ridge_ratio, high=1.0)
        if self.ridge_fraction > 0 and self.interaction > 0:
            raise PriorError(
                f"truth.ridge.fraction = {self.ridge_fraction:g}: cannot be combined with "
                f"truth.interaction = {self.interaction:g} (a parameter has one partner)"
            )
        _number("truth.time_control_shift.spread", self.tc_spread, low=0.0, high=1e6)
        if self.tc_tuned_at not in TIME_CONTROLS:
            raise PriorError(
                f"truth.time_control_shift.tuned_at = {self.tc_tuned_at!r}: "
                f"must be one of {', '.join(TIME_CONTROLS)}"
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
            offset = _mapping("truth.offset", truth["offset"], ("distribution", "scale", "df"))
            if "distribution" in offset:
                fields["offset_distribution"] = offset["distribution"]
            if "scale" in offset:
                fields["offset_scale"] = _number("truth.offset.scale", offset["scale"], low=0.0)
            if "df" in offset:
                fields["offset_df"] = _number("truth.offset.df", offset["df"], low=1.0, high=1e6)
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
        for key, names in _OPTION_FIELDS.items():
            if key not in truth:
                continue
            option = _mapping(f"truth.{key}", truth[key], tuple(names))
            for name, field in names.items():
                if name in option:
                    value = option[name]
                    if field != "tc_tuned_at":
                        value = _number(f"truth.{key}.{name}", value)
                    fields[field] = value
                elif name in _REQUIRED_OPTION_KEYS:
                    raise PriorError(f"truth.{key}.{name}: required")
        return cls(**fields)

    def to_dict(self) -> dict:
        """The prior as a complete ``truth`` mapping (``from_mapping`` reads it back)."""
        elo = (
            self.elo_min
            if self.elo_min == self.elo_max
            else {"min": self.elo_min, "max": self.elo_max}
        )
        offset = {"distribution": self.offset_distribution, "scale": self.offset_scale}
        if self.offset_df is not None:
            offset["df"] = self.offset_df
        out = {
            "offset": offset,
            "elo_per_c_end": elo,
            "inactive_fraction": self.inactive_fraction,
            "interaction": self.interaction,
        }
        # the landscape options only when on: a prior without them reads as before
        for key, names in _OPTION_FIELDS.items():
            if self.option_on(key):
                out[key] = {
                    name: getattr(self, field)
                    for name, field in names.items()
                    if getattr(self, field) is not None  # an optional key left unset
                }
        return out

    def option_on(self, key: str) -> bool:
        """Whether the landscape option ``key`` (a key of ``truth``) is on."""
        return {
            "elo_at_stake": self.stake_median is not None,
            "plateau": self.plateau_fraction > 0 and self.plateau_width > 0,
            "ridge": self.ridge_fraction > 0,
            "time_control_shift": self.tc_spread > 0,
        }[key]

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
    start, low, high, c_end = _checked_block(start, low, high, c_end)
    num_params = start.shape[0]
    seeds = [int(s) for s in seeds]
    n_seeds = len(seeds)
    theta_peak = np.empty((n_seeds, num_params))
    elo = np.empty((n_seeds, num_params))
    rotated = prior.interaction > 0
    partner = np.tile(np.arange(num_params), (n_seeds, 1)) if rotated else None
    cos = np.ones((n_seeds, num_params)) if rotated else None
    sin = np.zeros((n_seeds, num_params)) if rotated else None
    n_inactive = prior.inactive_count(num_params)
    landscape = _Landscape(prior, n_seeds, num_params)
    stake_scale = prior.stake_median
    if stake_scale is not None and prior.stake_params_exponent != 0:
        stake_scale *= (num_params / STAKE_REFERENCE_PARAMS) ** prior.stake_params_exponent
    for row, seed in enumerate(seeds):  # stream setup: each seed has its own generator
        rng = streams.generator(entropy, seed, "instance")
        extra = streams.generator(entropy, seed, "landscape") if landscape.on else None
        if prior.stake_median is not None:  # landscape 1. the total at stake
            landscape.total[row] = stake_scale * math.exp(
                prior.stake_sigma * extra.standard_normal()
            )
        offset = _draw_offsets(prior, rng, extra, num_params)  # 1.
        elo[row] = _draw_elo_per_c_end(prior, rng, num_params)  # 2.
        # 3. inactive parameters
        inactive = rng.permutation(num_params)[:n_inactive]
        offset[inactive] = 0.0
        elo[row, inactive] = 0.0
        theta_peak[row] = np.minimum(np.maximum(start + offset * c_end, low), high)
        theta_peak[row, inactive] = start[inactive]
        if rotated:  # 4.
            active = np.flatnonzero(elo[row] > 0)
            _draw_rotations(prior, rng, active, partner[row], cos[row], sin[row])
        if landscape.on:
            landscape.draw(row, extra, elo[row])
    if not landscape.on:
        return SeedBowls(
            theta_peak=theta_peak,
            elo_per_scale=elo,
            scale=c_end,
            partner=partner,
            cos=cos,
            sin=sin,
        )
    return landscape.bowls(theta_peak, elo, start, low, high, c_end, partner, cos, sin)


def _checked_block(start, low, high, c_end) -> tuple[np.ndarray, ...]:
    """The block's per-parameter ``start``, ``low``, ``high`` and ``c_end`` as float
    arrays of one length, refused unless ``c_end > 0`` and ``low <= start <= high``."""
    start = _as_params("start", start, None)
    num_params = start.shape[0]
    low = _as_params("low", low, num_params)
    high = _as_params("high", high, num_params)
    c_end = _as_params("c_end", c_end, num_params)
    if np.any(c_end <= 0):
        raise ValueError("c_end must be > 0")
    if np.any(low > high) or np.any(start < low) or np.any(start > high):
        raise ValueError("start must lie within [low, high]")
    return start, low, high, c_end


def _draw_offsets(prior: TruthPrior, rng, extra, num_params: int) -> np.ndarray:
    """Step 1, the offsets ``optimum - start`` in c_end units, scale ``S``: ``S N(0, 1)``
    (normal), ``S N(0, 1) / sqrt(V / df)`` with ``V ~ chi2(df)`` from the landscape
    generator ``extra`` (student_t, landscape step 2), ``U(-S, S)`` (uniform) or ``+-S``
    with the sign ``-`` where a uniform is ``< 0.5`` (fixed)."""
    scale = prior.offset_scale
    if prior.offset_distribution == "normal":
        return scale * rng.standard_normal(num_params)
    if prior.offset_distribution == "student_t":
        offset = scale * rng.standard_normal(num_params)
        offset /= np.sqrt(extra.chisquare(prior.offset_df, num_params) / prior.offset_df)
        return offset
    if prior.offset_distribution == "uniform":
        return rng.uniform(-scale, scale, num_params)
    return np.where(rng.random(num_params) < 0.5, -scale, scale)


def _draw_elo_per_c_end(prior: TruthPrior, rng, num_params: int):
    """Step 2, the Elo per c_end: ``exp(log min + u (log max - log min))``, ``u ~ U(0, 1)``
    per parameter (log-uniform in ``[min, max]``); ``min`` itself when ``min = max`` (the
    uniforms are drawn even then)."""
    log_min, log_max = math.log(prior.elo_min), math.log(prior.elo_max)
    u = rng.random(num_params)
    return np.exp(log_min + u * (log_max - log_min)) if log_max > log_min else prior.elo_min


def _draw_rotations(prior: TruthPrior, rng, active, partner, cos, sin) -> None:
    """Step 4 for one seed: the ``active`` parameters paired at random (consecutive
    entries of a permutation, one left alone when their number is odd), each pair's plane
    rotated by an angle ``U(-g pi/4, g pi/4)``, ``g`` the interaction; written into the
    seed's rows ``partner``, ``cos`` and ``sin`` (``sin`` is ``-sin(angle)`` on a pair's
    first parameter, ``+sin(angle)`` on its second)."""
    half_angle = prior.interaction * math.pi / 4.0
    order = rng.permutation(active)
    n_pairs = order.shape[0] // 2
    first, second = order[0 : 2 * n_pairs : 2], order[1 : 2 * n_pairs : 2]
    angle = rng.uniform(-half_angle, half_angle, n_pairs)
    partner[first], partner[second] = second, first
    cos[first] = cos[second] = np.cos(angle)
    sin[first], sin[second] = -np.sin(angle), np.sin(angle)


class _Landscape:
    """The landscape options' draws (module docstring, landscape steps 3 to 6) and the
    bowls they make; arrays are ``(seed, param)``."""

    def __init__(self, prior: TruthPrior, n_seeds: int, num_params: int) -> None:
        self.prior = prior
        self.on = any(prior.option_on(key) for key in _OPTION_FIELDS) or (
            prior.offset_distribution == "student_t"
        )
        self.total = np.zeros(n_seeds)
        self.share = np.zeros((n_seeds, num_params))
        self.plateau = np.zeros((n_seeds, num_params))
        self.ridge_first = [np.empty(0, dtype=np.int64)] * n_seeds
        self.ridge_second = [np.empty(0, dtype=np.int64)] * n_seeds
        self.ridge_sign = [np.empty(0)] * n_seeds
        self.tc_delta = np.zeros((n_seeds, num_params))

    def draw(self, row: int, rng: np.random.Generator, elo: np.ndarray) -> None:
        """Steps 3 to 6 for the seed at ``row``; ``elo`` is its Elo per c_end (0: inactive)."""
        prior = self.prior
        active = np.flatnonzero(elo > 0)
        if prior.option_on("plateau"):
            chosen = rng.permutation(active)[: int(round(prior.plateau_fraction * active.size))]
            self.plateau[row, chosen] = prior.plateau_width
        if prior.option_on("ridge"):
            order = rng.permutation(active)
            n_pairs = int(round(prior.ridge_fraction * active.size)) // 2
            self.ridge_first[row] = order[0 : 2 * n_pairs : 2]
            self.ridge_second[row] = order[1 : 2 * n_pairs : 2]
            self.ridge_sign[row] = np.where(rng.random(n_pairs) < 0.5, -1.0, 1.0)
        if prior.option_on("time_control_shift"):
            self.tc_delta[row] = rng.standard_normal(elo.shape[0])
            self.tc_delta[row, elo == 0] = 0.0
        if prior.option_on("elo_at_stake") and active.size:
            self.share[row, active] = rng.dirichlet(np.full(active.size, prior.stake_concentration))

    def bowls(self, theta_peak, elo, start, low, high, c_end, partner, cos, sin) -> SeedBowls:
        prior = self.prior
        n_seeds, num_params = elo.shape
        if prior.option_on("elo_at_stake"):
            elo = np.where(elo > 0, self.share, 0.0)
        if prior.option_on("ridge"):  # pairs rotated by +-pi/4, the second axis flatter
            partner = np.tile(np.arange(num_params), (n_seeds, 1))
            cos, sin = np.ones((n_seeds, num_params)), np.zeros((n_seeds, num_params))
            half = math.sqrt(0.5)
            for row in range(n_seeds):  # fancy indexing of ragged pairs, no arithmetic
                first, second = self.ridge_first[row], self.ridge_second[row]
                partner[row, first], partner[row, second] = second, first
                cos[row, first] = cos[row, second] = half
                sin[row, first] = -self.ridge_sign[row] * half
                sin[row, second] = self.ridge_sign[row] * half
                elo[row, second] *= prior.ridge_ratio
        tc_peaks = None
        if prior.option_on("time_control_shift"):
            tuned = TIME_CONTROLS.index(prior.tc_tuned_at)
            steps = np.arange(len(TIME_CONTROLS), dtype=np.float64) - tuned
            moved = theta_peak + steps[:, None, None] * (prior.tc_spread * self.tc_delta * c_end)
            tc_peaks = np.minimum(np.maximum(moved, low), high)
            tc_peaks[tuned] = theta_peak
        plateau = self.plateau if prior.option_on("plateau") else None
        bowls = SeedBowls(theta_peak, elo, c_end, partner, cos, sin, 0.0, plateau, tc_peaks)
        if not prior.option_on("elo_at_stake"):
            return bowls
        # kappa = T / L0: the loss is linear in elo_per_scale, so the gain becomes T
        base = bowls.elo_loss(np.tile(start, (n_seeds, 1)))
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = np.where(base > 0, self.total / base, 0.0)
        elo = kappa[:, None] * bowls.elo_per_scale
        if prior.stake_cap is not None:  # no parameter steeper than the cap
            elo = np.minimum(elo, prior.stake_cap)
        return dataclasses.replace(bowls, elo_per_scale=elo)


def elo_at_time_control(bowls: SeedBowls, theta, time_control: str) -> np.ndarray:
    """The true Elo of ``theta`` (``(seed, ..., param)``) at ``time_control`` (STC, LTC or
    VLTC): the instances with their optimum at that time control
    (:meth:`SeedBowls.at_time_control`; the same Elo at every time control without a
    ``time_control_shift``). The gain of a tune at another time control is
    ``elo_at_time_control(b, theta_final, t) - elo_at_time_control(b, theta_start, t)``."""
    return bowls.at_time_control(time_control).elo(np.asarray(theta, dtype=np.float64))


def stack_bowls(bowls: Sequence[SeedBowls]) -> SeedBowls:
    """The bowls of several draws as one, rows in order; an option off in some draws
    is filled with its neutral value (no rotation, no plateau, one optimum at every
    time control)."""
    first = bowls[0]

    def field(name, neutral):
        values = [getattr(b, name) for b in bowls]
        if all(v is None for v in values):
            return None
        return np.concatenate(
            [neutral(b) if v is None else v for b, v in zip(bowls, values, strict=True)],
            axis=1 if name == "tc_theta_peak" else 0,
        )

    return SeedBowls(
        theta_peak=np.concatenate([b.theta_peak for b in bowls]),
        elo_per_scale=np.concatenate([b.elo_per_scale for b in bowls]),
        scale=first.scale,
        partner=field("partner", lambda b: np.tile(np.arange(b.theta_peak.shape[1]),
                                                   (b.theta_peak.shape[0], 1))),
        cos=field("cos", lambda b: np.ones_like(b.theta_peak)),
        sin=field("sin", lambda b: np.zeros_like(b.theta_peak)),
        peak_elo=first.peak_elo,
        plateau=field("plateau", lambda b: np.zeros_like(b.theta_peak)),
        tc_theta_peak=field(
            "tc_theta_peak", lambda b: np.broadcast_to(b.theta_peak, (len(TIME_CONTROLS),
                                                                       *b.theta_peak.shape))
        ),
    )  # fmt: skip


def draw_posterior_instances(
    priors: Sequence[TruthPrior],
    start,
    low,
    high,
    c_end,
    entropy: int,
    seeds: Sequence[int],
) -> SeedBowls:
    """One true bowl per seed (rows in the order of ``seeds``), seed ``s`` drawn from
    ``priors[s mod K]`` as :func:`draw_instances` draws it (the same bowl as a draw of
    that prior at that seed alone): instances of the posterior predictive when
    ``priors`` are a calibration's accepted draws, each prior serving every ``K``-th
    seed, so a seed's instance depends on its number and ``K`` only."""
    seeds = [int(s) for s in seeds]
    if not priors:
        raise ValueError("draw_posterior_instances needs at least one prior")
    groups = [
        (k, [i for i, s in enumerate(seeds) if s % len(priors) == k]) for k in range(len(priors))
    ]
    groups = [(k, rows) for k, rows in groups if rows]
    bowls = [
        draw_instances(priors[k], start, low, high, c_end, entropy, [seeds[i] for i in rows])
        for k, rows in groups
    ]  # one draw per prior: a setup loop over at most K priors, not over the seeds
    order = np.concatenate([np.asarray(rows, dtype=np.int64) for _, rows in groups])
    return stack_bowls(bowls).rows(np.argsort(order, kind="stable"))


__all__ = [
    "PriorError",
    "TruthPrior",
    "draw_instances",
    "draw_posterior_instances",
    "elo_at_time_control",
    "stack_bowls",
    "DISTRIBUTIONS",
    "OFFSET_DISTRIBUTIONS",
    "PRIOR_KEYS",
    "TIME_CONTROLS",
]
