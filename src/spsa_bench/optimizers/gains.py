"""SPSA gain schedules in the Fishtest form (spec 001, chapter 3).

With ``num_iter = num_pairs`` and per-parameter ``c_end``::

    c   = c_end * num_iter**gamma          c_k = c / k**gamma
    a_end = r_end * c_end**2               a   = a_end * (A + num_iter)**alpha
    a_k = a / (A + k)**alpha               r_k = a_k / c_k**2  (phi-space rate)

so that ``c_k`` and ``a_k`` hit ``c_end`` and ``a_end`` at ``k = num_iter``.
The server evaluates a report dispatched at pair counter ``K`` with
``k = iter_local = K + 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spsa_bench.model.tiles import RowTiles


@dataclass(frozen=True)
class GainSchedule:
    c: np.ndarray  # (param,)
    a: np.ndarray  # (param,)
    A: float
    alpha: float
    gamma: float

    def __post_init__(self) -> None:
        gain_scale = self.a / self.c
        gain_scale.setflags(write=False)
        object.__setattr__(self, "_gain_scale", gain_scale)
        object.__setattr__(self, "_gain_scale_tiles", RowTiles(gain_scale))

    @classmethod
    def fishtest(cls, c_end, r_end, A: float, alpha: float, gamma: float, num_iter: int):
        """The schedule from per-parameter ``c_end`` and ``r_end`` (a scalar shared by
        every parameter, or one value per parameter as in a Fishtest parameter block)."""
        c_end = np.asarray(c_end, dtype=np.float64)
        if np.ndim(r_end) != 0:
            r_end = np.asarray(r_end, dtype=np.float64)
            if r_end.shape != c_end.shape:
                raise ValueError(f"r_end shape {r_end.shape} differs from c_end {c_end.shape}")
        c = c_end * float(num_iter) ** gamma
        a = r_end * c_end**2 * (A + float(num_iter)) ** alpha
        c.setflags(write=False)
        a.setflags(write=False)
        schedule = cls(c=c, a=a, A=float(A), alpha=float(alpha), gamma=float(gamma))
        object.__setattr__(schedule, "_per_param_rate", np.ndim(r_end) != 0)
        return schedule

    def c_k(self, k: np.ndarray) -> np.ndarray:
        """Perturbation at iteration ``k`` (``(seed,)``), shape ``(seed, param)``."""
        k = np.asarray(k, dtype=np.float64)
        return self.c[None, :] / (k**self.gamma)[:, None]

    def a_k(self, k: np.ndarray) -> np.ndarray:
        """Gain numerator at iteration ``k``, shape ``(seed, param)``."""
        k = np.asarray(k, dtype=np.float64)
        return self.a[None, :] / ((self.A + k) ** self.alpha)[:, None]

    @property
    def gain_scale(self) -> np.ndarray:
        """The per-parameter part of ``a_k / c_k``: ``a / c`` (read-only)."""
        return self._gain_scale

    def gain_scale_like(self, array: np.ndarray) -> np.ndarray:
        """``gain_scale`` shaped to combine elementwise with ``array`` (see :mod:`spsa_bench.model.tiles`)."""
        return self._gain_scale_tiles.like(array)

    def gain_shape(self, k: np.ndarray) -> np.ndarray:
        """The scalar part of ``a_k / c_k``: ``k**gamma / (A + k)**alpha`` (computed once
        for a ``k`` that is one value broadcast to every seed, and broadcast likewise)."""
        k = np.asarray(k)
        if k.ndim == 1 and k.shape[0] > 1 and k.strides[0] == 0:
            return np.broadcast_to(self.gain_shape(k[:1]), k.shape)
        k = k.astype(np.float64, copy=False)
        return k**self.gamma / (self.A + k) ** self.alpha

    def r_k(self, k: np.ndarray) -> np.ndarray:
        """phi-space learning rate ``a_k / c_k**2``, shaped to broadcast against ``(seed, param)``.

        ``(seed, 1)`` when every parameter shares it (a scalar ``r_end``: the first
        parameter's value), ``(seed, param)`` when ``r_end`` was given per parameter.
        """
        k = np.asarray(k, dtype=np.float64)
        if getattr(self, "_per_param_rate", False):
            shape = k ** (2 * self.gamma) / (self.A + k) ** self.alpha
            return (self.a / self.c**2)[None, :] * shape[:, None]
        r_end_scale = (self.a / self.c**2)[0]
        return (r_end_scale * k ** (2 * self.gamma) / (self.A + k) ** self.alpha)[:, None]
