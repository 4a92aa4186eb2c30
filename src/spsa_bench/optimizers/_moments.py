"""Moment helpers shared by the Adam-like families (adam, adam-block, ademamix) and
the schedule-free Adam variants.

A block of ``N`` pairs is ``N`` micro-steps ``j = 1..N`` with a constant gradient;
the EMAs then have closed forms along the micro-step axis:

    m_j = beta**j m_0 + (1 - beta**j) g        (:func:`ema_block` at ``j = N``)
    1 / (1 - beta**t)                          (bias corrections, :class:`Ladder`)
    w_j = 1 / (sqrt(v_hat_j + eps_root) + eps)  (:func:`inverse_denominators`)

and sums over the block are taken in a fixed order (:func:`block_dot`) so a seed's
result never depends on the seeds beside it.
"""

from __future__ import annotations

import numpy as np

from spsa_bench.optimizers.base import Report


def one_minus_pow(beta: float, t: np.ndarray) -> np.ndarray:
    """``1 - beta**t`` accurately (``beta`` in [0, 1), ``t >= 1``)."""
    t = np.asarray(t, dtype=np.float64)
    if beta == 0.0:
        return np.ones_like(t)
    return -np.expm1(t * np.log(beta))


class Ladder:
    """Powers of one EMA factor ``beta`` along the in-block micro-step axis.

    ``ladder(J)`` gives ``beta**j`` and ``1 - beta**j`` for ``j = 1..J``
    (cached, read-only); ``inverse_correction(t)`` gives ``1 / (1 - beta**t)``.
    """

    def __init__(self, beta: float) -> None:
        self.beta = float(beta)
        self._keep = np.ones(0)
        self._gain = np.zeros(0)

    def ladder(self, size: int) -> tuple[np.ndarray, np.ndarray]:
        if size > self._keep.shape[0]:
            j = np.arange(1, max(size, 2 * self._keep.shape[0]) + 1, dtype=np.float64)
            self._keep = self.beta**j
            self._gain = one_minus_pow(self.beta, j)
            self._keep.setflags(write=False)
            self._gain.setflags(write=False)
        return self._keep[:size], self._gain[:size]

    def inverse_correction(self, t: np.ndarray) -> np.ndarray:
        out = one_minus_pow(self.beta, t)
        return np.divide(1.0, out, out=out)


def micro_axis(
    pairs_before: np.ndarray, n: np.ndarray
) -> tuple[int, np.ndarray, np.ndarray | None]:
    """The in-block micro-step axis ``j = 1..J`` (``J = max N``).

    Returns ``J``, ``t = T + j`` (seed, J) float and the mask ``j <= N``
    (seed, J), or ``None`` when every seed's block is ``J`` long.
    """
    size = int(n.max())
    j = np.arange(1, size + 1, dtype=np.float64)
    t = pairs_before.astype(np.float64)[:, None] + j
    active = None if int(n.min()) == size else j <= n[:, None]
    return size, t, active


def block_dot(weights: np.ndarray, ladder: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``sum_{j=1..N} weights[:, j] * ladder[j]`` per seed, summed strictly in order.

    A sequential prefix sum read at ``j = N`` rounds the same whatever the width
    of the micro-step axis (the largest N among the seeds run together), so a
    seed's result never depends on the seeds beside it; a BLAS dot product
    over the padded axis would not guarantee that bit for bit.
    """
    return np.cumsum(weights * ladder, axis=1)[np.arange(n.shape[0]), n - 1]


def inverse_denominators(
    v0: np.ndarray,
    g2: np.ndarray,
    second: Ladder,
    eps: float,
    size: int,
    t: np.ndarray,
    eps_root: float = 0.0,
) -> np.ndarray:
    """``w_j = 1 / (sqrt(v_hat_j + eps_root) + eps)`` for every micro-step, shape (seed, J).

    ``v_j = beta2**j v0 + (1 - beta2**j) g2`` (per-seed ``v0`` and constant
    ``g2``), ``v_hat_j = v_j / (1 - beta2**t)``.
    """
    keep, gain = second.ladder(size)
    v_hat = keep * v0[:, None]
    v_hat += gain * g2[:, None]
    v_hat *= second.inverse_correction(t)
    if eps_root:
        v_hat += eps_root
    np.sqrt(v_hat, out=v_hat)
    v_hat += eps
    return np.divide(1.0, v_hat, out=v_hat)


def gradient(report: Report) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` (seed,) int64, ``g = -S/N`` (seed,) and ``grad = g * flip`` (seed, param)."""
    n = np.asarray(report.n_pairs).astype(np.int64)
    g = -np.asarray(report.signal, dtype=np.float64) / n
    return n, g, g[:, None] * report.flip


def ema_block(m0: np.ndarray, target: np.ndarray, ladder: Ladder, n: np.ndarray) -> np.ndarray:
    """N EMA steps towards a constant target: ``beta**N m0 + (1 - beta**N) target``.

    ``m0`` is (seed,) or (seed, param); ``target`` broadcasts against it.
    """
    keep, gain = ladder.ladder(int(n.max()))
    shape = (-1,) + (1,) * (np.ndim(m0) - 1)
    return keep[n - 1].reshape(shape) * m0 + gain[n - 1].reshape(shape) * target
