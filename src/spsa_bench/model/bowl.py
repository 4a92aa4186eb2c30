"""Ground truth: the true Elo bowl, and the developer model that derives what
an optimizer may see from it (spec 000 section 1.1).

Only this module and the runner that evaluates probes hold a :class:`TrueBowl`.
Optimizers receive the :class:`~spsa_bench.model.developer.DeveloperView` built here
and nothing else.

True bowl::

    Elo(theta) = peak_elo - k_elo * sum_i w_true[i] * (theta[i] - theta_peak[i])**2
    k_elo      = (peak_elo - start_elo) / sum_i w_true[i] * (theta_start[i] - theta_peak[i])**2

(``k_elo = 0``, a flat bowl, when the denominator is 0 or the Elos are equal).

Developer model, per parameter::

    c_i     = sqrt(c_elo_gap / (k_elo * w_dev[i]))
    range_i = c_i / c_fraction,   bounds = theta_start[i] -+ range_i / 2

so one probe step in dimension i costs ``c_elo_gap * w_true[i] / w_dev[i]`` Elo.
Explicit bounds may be given instead; when ``c_i`` cannot be derived (flat bowl
or ``w_dev = 0``) it falls back to ``0.05 * (theta_max - theta_min)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from spsa_bench.model.developer import DeveloperView
from spsa_bench.model.pentanomial import MAX_OPPONENT_ELO
from spsa_bench.model.tiles import RowTiles

FALLBACK_C_FRACTION = 0.05
#: Fishtest's time controls, shortest first (the order of ``SeedBowls.tc_theta_peak``).
TIME_CONTROLS = ("STC", "LTC", "VLTC")


def _readonly(values) -> np.ndarray:
    array = np.array(values, dtype=np.float64, copy=True)
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class TrueBowl:
    """The true Elo of a parameter vector (any leading shape, last axis = param)."""

    theta_peak: np.ndarray
    w_true: np.ndarray
    k_elo: float
    peak_elo: float
    start_elo: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "theta_peak", _readonly(self.theta_peak))
        object.__setattr__(self, "w_true", _readonly(self.w_true))
        object.__setattr__(self, "_curvature", _readonly(self.k_elo * self.w_true))
        object.__setattr__(self, "_curvature_tiles", RowTiles(self._curvature))
        object.__setattr__(self, "_twice_peak_tiles", RowTiles(2.0 * self.theta_peak))

    @classmethod
    def from_start(cls, theta_start, theta_peak, w_true, start_elo: float, peak_elo: float):
        theta_start = np.asarray(theta_start, dtype=np.float64)
        theta_peak = np.asarray(theta_peak, dtype=np.float64)
        w_true = np.asarray(w_true, dtype=np.float64)
        w_start = float(np.sum(w_true * (theta_start - theta_peak) ** 2))
        if w_start > 0 and peak_elo != start_elo:
            k_elo = (peak_elo - start_elo) / w_start
        else:
            k_elo = 0.0
        return cls(theta_peak, w_true, float(k_elo), float(peak_elo), float(start_elo))

    def elo(self, theta: np.ndarray) -> np.ndarray:
        deviation = theta - self.theta_peak
        return self.peak_elo - np.einsum("...p,p,...p->...", deviation, self._curvature, deviation)

    def elo_loss(self, theta: np.ndarray) -> np.ndarray:
        return self.peak_elo - self.elo(theta)

    def opponent_elo(self, theta_plus: np.ndarray, theta_minus: np.ndarray) -> np.ndarray:
        """``-(Elo(theta_plus) - Elo(theta_minus))`` clipped to +-599: the opponent
        (theta_minus) as seen from the hero (theta_plus)."""
        # Elo(minus) - Elo(plus) = k sum_i w_i (plus_i - minus_i) (plus_i + minus_i - 2 peak_i)
        spread = theta_plus - theta_minus
        spread *= self._curvature_tiles.like(spread)
        centre = theta_plus + theta_minus
        centre -= self._twice_peak_tiles.like(centre)
        difference = np.einsum("...p,...p->...", spread, centre)
        return np.minimum(np.maximum(difference, -MAX_OPPONENT_ELO), MAX_OPPONENT_ELO)

    @property
    def active(self) -> np.ndarray:
        return self.w_true > 0

    def rows(self, index: np.ndarray) -> TrueBowl:
        """The bowl of the seeds at ``index``: one bowl serves every seed."""
        return self


@dataclass(frozen=True)
class SeedBowls:
    """One true bowl per seed: a problem instance drawn for each seed.

    In units of each parameter's scale ``s_i`` (its c_end), ``z = (theta - theta_peak[seed]) / s``
    and, with an optional rotation ``y = R_seed z`` made of disjoint plane rotations
    (parameter ``i`` mixed with ``partner[seed, i]``)::

        y_i     = cos[seed, i] * z_i + sin[seed, i] * z_partner(i)
        Elo     = peak_elo - sum_i elo_per_scale[seed, i] * y_i**2

    With an optional ``plateau`` (half-widths ``w[seed, i] >= 0`` in scale units) the
    bottom of each rotated axis is flat: ``y_i`` is replaced by the soft threshold
    ``sign(y_i) max(|y_i| - w_i, 0)``, so the Elo and its gradient along ``y_i`` are
    exactly 0 while ``|y_i| <= w_i`` and the bowl is quadratic outside.
    ``tc_theta_peak`` (optional, ``(time control, seed, param)`` in the order of
    :data:`TIME_CONTROLS`) holds the optimum at each time control; ``theta_peak`` is
    the one at the tuned time control (:meth:`at_time_control`).

    so without rotation a parameter one ``s_i`` from its optimum costs
    ``elo_per_scale[seed, i]`` Elo. For a pair ``(i, j)`` rotated by ``phi``:
    ``cos = cos(phi)`` for both, ``sin[i] = -sin(phi)``, ``sin[j] = +sin(phi)``; an
    unpaired parameter has ``partner = i``, ``cos = 1``, ``sin = 0``. Arrays are
    ``(seed, param)``; ``theta`` passed in has the seed on its first axis.
    """

    theta_peak: np.ndarray
    elo_per_scale: np.ndarray
    scale: np.ndarray  # (param,)
    partner: np.ndarray | None = None
    cos: np.ndarray | None = None
    sin: np.ndarray | None = None
    peak_elo: float = 0.0
    plateau: np.ndarray | None = None
    tc_theta_peak: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("theta_peak", "elo_per_scale", "scale", "cos", "sin", "plateau"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _readonly(getattr(self, name)))
        if self.partner is not None:
            partner = np.array(self.partner, dtype=np.int64, copy=True)
            partner.setflags(write=False)
            object.__setattr__(self, "partner", partner)
        if self.theta_peak.ndim != 2 or self.elo_per_scale.shape != self.theta_peak.shape:
            raise ValueError(
                "per-seed bowls need theta_peak and elo_per_scale of one (seed, param) shape"
            )
        if np.any(self.elo_per_scale < 0):
            raise ValueError("elo_per_scale must be >= 0")
        if self.plateau is not None and (
            self.plateau.shape != self.theta_peak.shape or np.any(self.plateau < 0)
        ):
            raise ValueError("plateau must be >= 0 and of theta_peak's (seed, param) shape")
        if self.tc_theta_peak is not None:
            peaks = _readonly(self.tc_theta_peak)
            if peaks.shape != (len(TIME_CONTROLS),) + self.theta_peak.shape:
                raise ValueError("tc_theta_peak must be (time control, seed, param)")
            object.__setattr__(self, "tc_theta_peak", peaks)

    def at_time_control(self, time_control: str) -> SeedBowls:
        """The same instances with the optimum of ``time_control`` (one of
        :data:`TIME_CONTROLS`); without a time-control shift every time control has the
        one truth and this is ``self``."""
        if time_control not in TIME_CONTROLS:
            raise ValueError(
                f"time control {time_control!r}: must be one of {', '.join(TIME_CONTROLS)}"
            )
        if self.tc_theta_peak is None:
            return self
        return dataclasses.replace(
            self, theta_peak=self.tc_theta_peak[TIME_CONTROLS.index(time_control)]
        )

    @property
    def num_seeds(self) -> int:
        return int(self.theta_peak.shape[0])

    @property
    def rotated(self) -> bool:
        return self.partner is not None

    @property
    def w_true(self) -> np.ndarray:
        """Curvature in theta units per seed, ``elo_per_scale / scale**2`` (before rotation)."""
        return self.elo_per_scale / self.scale**2

    @property
    def k_elo(self) -> float:
        return 1.0

    @property
    def active(self) -> np.ndarray:
        return self.elo_per_scale > 0

    def rows(self, index: np.ndarray) -> SeedBowls:
        def pick(a):
            return None if a is None else a[index]

        tc_peak = None if self.tc_theta_peak is None else self.tc_theta_peak[:, index]
        return SeedBowls(
            self.theta_peak[index], self.elo_per_scale[index], self.scale,
            pick(self.partner), pick(self.cos), pick(self.sin), self.peak_elo,
            pick(self.plateau), tc_peak,
        )  # fmt: skip

    def _rotate(self, z: np.ndarray) -> np.ndarray:
        """``R_seed z`` for ``z`` shaped ``(seed, n, param)``."""
        if not self.rotated:
            return z
        index = np.broadcast_to(self.partner[:, None, :], z.shape)
        return self.cos[:, None, :] * z + self.sin[:, None, :] * np.take_along_axis(z, index, -1)

    def _flat_bottom(self, y: np.ndarray) -> np.ndarray:
        """The plateau's soft threshold ``sign(y) max(|y| - w, 0)`` (``y`` itself without
        a plateau)."""
        if self.plateau is None:
            return y
        return np.sign(y) * np.maximum(np.abs(y) - self.plateau[:, None, :], 0.0)

    def _per_seed(self, theta: np.ndarray) -> np.ndarray:
        if theta.shape[0] != self.num_seeds or theta.shape[-1] != self.scale.shape[0]:
            raise ValueError(
                f"theta of shape {theta.shape} does not match {self.num_seeds} seed bowls "
                f"of {self.scale.shape[0]} parameters"
            )
        return theta.reshape(theta.shape[0], -1, theta.shape[-1])

    def elo_loss(self, theta: np.ndarray) -> np.ndarray:
        """``peak_elo - Elo(theta)``, for ``theta`` shaped ``(seed, ..., param)``."""
        flat = self._per_seed(theta)
        y = self._rotate((flat - self.theta_peak[:, None, :]) / self.scale)
        y = self._flat_bottom(y)
        loss = np.einsum("snp,sp,snp->sn", y, self.elo_per_scale, y)
        return loss.reshape(theta.shape[:-1])

    def elo(self, theta: np.ndarray) -> np.ndarray:
        return self.peak_elo - self.elo_loss(theta)

    @property
    def start_elo(self) -> None:
        """Per-seed bowls have no single start Elo: see :meth:`elo` at the start."""
        return None

    def opponent_elo(self, theta_plus: np.ndarray, theta_minus: np.ndarray) -> np.ndarray:
        """``Elo(theta_minus) - Elo(theta_plus)`` per seed, clipped to +-599 (as :class:`TrueBowl`).

        ``loss(plus) - loss(minus) = sum_i e_i (y+_i - y-_i)(y+_i + y-_i)``, and ``R`` is linear.
        """
        plus, minus = self._per_seed(theta_plus), self._per_seed(theta_minus)
        if self.plateau is not None:  # y+ and y- each through the soft threshold first
            peak = self.theta_peak[:, None, :]
            y_plus = self._flat_bottom(self._rotate((plus - peak) / self.scale))
            y_minus = self._flat_bottom(self._rotate((minus - peak) / self.scale))
            spread, centre = y_plus - y_minus, y_plus + y_minus
        else:
            spread = self._rotate((plus - minus) / self.scale)
            centre = self._rotate((plus + minus - 2.0 * self.theta_peak[:, None, :]) / self.scale)
        difference = np.einsum("snp,sp,snp->sn", spread, self.elo_per_scale, centre)
        difference = difference.reshape(theta_plus.shape[:-1])
        return np.minimum(np.maximum(difference, -MAX_OPPONENT_ELO), MAX_OPPONENT_ELO)


@dataclass(frozen=True)
class ParamTable:
    """Per-parameter description of a scenario (for outputs, never for optimizers).

    ``w_true``, ``w_dev`` and ``theta_peak`` are ``None`` when the truth is drawn per
    seed (:class:`SeedBowls`): the run file then holds them per seed.
    """

    param_group: tuple[str, ...]
    w_true: np.ndarray | None
    w_dev: np.ndarray | None
    c_dev: np.ndarray
    theta_start: np.ndarray
    theta_peak: np.ndarray | None
    theta_min: np.ndarray
    theta_max: np.ndarray

    @property
    def miscalibration(self) -> np.ndarray | None:
        """``w_true / w_dev``: above 1 the developer steps too far, below 1 too timidly."""
        if self.w_true is None or self.w_dev is None:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.w_dev > 0, self.w_true / self.w_dev, np.nan)


@dataclass(frozen=True)
class Problem:
    """A scenario split into its ground truth and the developer's view."""

    bowl: TrueBowl
    view: DeveloperView
    params: ParamTable


def developer_scales(
    k_elo, w_dev, c_elo_gap, c_fraction, theta_start, theta_min=None, theta_max=None
):
    """``c_dev`` and developer bounds per parameter (spec 000 section 1.1.1).

    ``theta_min``/``theta_max`` (arrays with NaN where not given) override the
    derived bounds; ``c`` falls back to ``0.05 * (max - min)`` where the model
    cannot derive it.
    """
    w_dev = np.asarray(w_dev, dtype=np.float64)
    theta_start = np.asarray(theta_start, dtype=np.float64)
    n = w_dev.shape[0]
    theta_min = np.full(n, np.nan) if theta_min is None else np.asarray(theta_min, dtype=np.float64)
    theta_max = np.full(n, np.nan) if theta_max is None else np.asarray(theta_max, dtype=np.float64)
    derivable = (k_elo > 0) & (w_dev > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        c_model = np.sqrt(c_elo_gap / (k_elo * w_dev))
    has_bounds = np.isfinite(theta_min) & np.isfinite(theta_max)
    if np.any(~derivable & ~has_bounds):
        raise ValueError(
            "perturbation c cannot be derived (flat bowl or w_dev = 0) for parameters "
            f"{np.flatnonzero(~derivable & ~has_bounds).tolist()}: give theta_min/theta_max"
        )
    c_dev = np.where(derivable, c_model, FALLBACK_C_FRACTION * (theta_max - theta_min))
    half_range = c_dev / c_fraction / 2.0
    lo = np.where(has_bounds, theta_min, theta_start - half_range)
    hi = np.where(has_bounds, theta_max, theta_start + half_range)
    return c_dev, lo, hi


def check_derived(bowl: TrueBowl, c_dev, lo, hi, names) -> None:
    """Refuse a problem whose derived quantities a float cannot hold.

    ``k_elo``, ``c`` and the bounds must be finite, and so must the largest true Elo
    loss inside the bounds, ``k_elo sum_i w_true[i] max((lo_i - peak_i)^2, (hi_i - peak_i)^2)``,
    with a factor 8 of headroom for the probe differences computed from it; then no
    clipped parameter vector has a non-finite Elo. Messages name the scenario key.
    """
    with np.errstate(all="ignore"):
        if not np.isfinite(bowl.k_elo):
            raise ValueError(f"k_elo = {bowl.k_elo}: the Elo scale is not finite")
        bad = np.flatnonzero(~np.isfinite(c_dev) | ~np.isfinite(lo) | ~np.isfinite(hi))
        if bad.size:
            raise ValueError(
                f"group {names[bad[0]]}: c = {c_dev[bad[0]]:.6g} or its bounds "
                f"[{lo[bad[0]]:.6g}, {hi[bad[0]]:.6g}] are not finite "
                "(raise c_fraction, lower c_elo_gap or give theta_min/theta_max)"
            )
        reach = np.maximum((lo - bowl.theta_peak) ** 2, (hi - bowl.theta_peak) ** 2)
        worst = 8.0 * bowl.k_elo * float(np.sum(bowl.w_true * reach))
    if not np.isfinite(worst):
        raise ValueError(
            "the true Elo loss at the developer bounds overflows a float "
            "(raise c_fraction, lower c_elo_gap or give narrower theta_min/theta_max)"
        )


def build_problem(groups, *, start_elo, peak_elo, c_elo_gap, c_fraction, num_pairs) -> Problem:
    """Expand parameter groups into per-parameter arrays and split truth from view.

    ``groups`` is a sequence of mappings with keys ``name, count, theta_start,
    theta_peak, w_true, w_dev`` and optionally ``theta_min, theta_max``.
    """
    names: list[str] = []
    columns: dict[str, list[float]] = {
        k: [] for k in ("theta_start", "theta_peak", "w_true", "w_dev", "theta_min", "theta_max")
    }
    for group in groups:
        count = int(group["count"])
        names.extend([group["name"]] * count)
        for key in columns:
            columns[key].extend([float(group.get(key, np.nan))] * count)
    arrays = {k: np.array(v, dtype=np.float64) for k, v in columns.items()}
    bowl = TrueBowl.from_start(
        arrays["theta_start"], arrays["theta_peak"], arrays["w_true"], start_elo, peak_elo
    )
    c_dev, lo, hi = developer_scales(
        bowl.k_elo,
        arrays["w_dev"],
        c_elo_gap,
        c_fraction,
        arrays["theta_start"],
        arrays["theta_min"],
        arrays["theta_max"],
    )
    check_derived(bowl, c_dev, lo, hi, names)
    view = DeveloperView(
        theta_start=arrays["theta_start"],
        theta_min=lo,
        theta_max=hi,
        c_dev=c_dev,
        num_pairs=int(num_pairs),
    )
    params = ParamTable(
        param_group=tuple(names),
        w_true=_readonly(arrays["w_true"]),
        w_dev=_readonly(arrays["w_dev"]),
        c_dev=view.c_dev,
        theta_start=view.theta_start,
        theta_peak=bowl.theta_peak,
        theta_min=view.theta_min,
        theta_max=view.theta_max,
    )
    return Problem(bowl=bowl, view=view, params=params)
