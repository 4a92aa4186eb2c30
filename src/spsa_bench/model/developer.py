"""The developer's view of a tuning problem: everything an optimizer may see.

An optimizer is built from a :class:`DeveloperView` and its hyperparameters
only. This class has no field for ground truth (``w_true``, ``theta_peak``,
``k_elo``, ``peak_elo``, ``start_elo``), and this module imports nothing from
the oracle, so an optimizer cannot read ground truth by construction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spsa_bench.model.tiles import RowTiles


def _frozen(values, dtype=np.float64) -> np.ndarray:
    array = np.array(values, dtype=dtype, copy=True)
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class DeveloperView:
    """Start point, bounds and perturbation scale per parameter, plus the budget.

    All arrays are shape ``(param,)``, private copies, and read-only, so no
    optimizer state can alias them (spec errata 7).

    ``integer`` marks the parameters the engine plays as integers (a Stockfish
    ``TUNE()`` parameter is an ``int``; all ``False`` by default). ``r_end`` is the
    developer's per-parameter r_end of a Fishtest parameter block, or ``None``
    when the scenario has none (the arm's ``r_end`` applies).
    """

    theta_start: np.ndarray
    theta_min: np.ndarray
    theta_max: np.ndarray
    c_dev: np.ndarray
    num_pairs: int
    integer: np.ndarray | None = None
    r_end: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("theta_start", "theta_min", "theta_max", "c_dev"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        n_params = self.theta_start.shape[0] if self.theta_start.ndim == 1 else -1
        integer = np.zeros(max(n_params, 0), bool) if self.integer is None else self.integer
        object.__setattr__(self, "integer", _frozen(integer, dtype=bool))
        if self.r_end is not None:
            object.__setattr__(self, "r_end", _frozen(self.r_end))
            if not np.all(np.isfinite(self.r_end)) or np.any(self.r_end < 0):
                raise ValueError("developer r_end must be finite and >= 0")
        names = ["theta_start", "theta_min", "theta_max", "c_dev", "integer"]
        names += ["r_end"] if self.r_end is not None else []
        shapes = {getattr(self, n).shape for n in names}
        if len(shapes) != 1 or len(next(iter(shapes))) != 1:
            raise ValueError(f"developer view arrays must share one 1-d shape, got {shapes}")
        if np.any(self.theta_min > self.theta_max):
            raise ValueError("developer bounds: theta_min > theta_max")
        if not np.all(np.isfinite(self.c_dev)) or np.any(self.c_dev <= 0):
            raise ValueError("developer perturbation c_dev must be finite and positive")
        object.__setattr__(self, "_min_tiles", RowTiles(self.theta_min))
        object.__setattr__(self, "_max_tiles", RowTiles(self.theta_max))

    @property
    def num_params(self) -> int:
        return int(self.theta_start.shape[0])

    @property
    def has_integers(self) -> bool:
        return bool(self.integer.any())

    def clip(self, theta: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Clamp ``theta`` (any leading shape, last axis = param) into the bounds.

        (``np.maximum``/``np.minimum`` rather than ``np.clip``: same result, far
        less per-call overhead on the small arrays of the hot path; bounds tiled
        down the seed axis, see :mod:`spsa_bench.model.tiles`.)
        """
        out = np.maximum(theta, self._min_tiles.like(theta), out=out)
        return np.minimum(out, self._max_tiles.like(out), out=out)
