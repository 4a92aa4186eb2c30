"""Textbook Adam driven by SPSA reports: ``adam`` (micro const-mean) and ``adam-block``.

Spaces and sign (spec 000 §2.4). Adam minimises, so a report of ``N`` pairs
with total result ``S`` gives the phi-space gradient
``grad = -(S / N) * flip`` (``g = -S / N`` per seed). As in the original lab
(spec 000 section 2.4) the textbook update is applied to theta directly: the
normalized step ``lr * m_hat / (sqrt(v_hat) + eps)`` is in theta units, NOT
mapped through ``c`` (with ``c`` the default lr 0.04 would move every
parameter ~1.4 c per 36-pair report and the runs diverge). One pair is one Adam step;
``t`` counts pairs over the run. Because ``flip**2 = 1``, ``grad**2 = g**2``
is the same for every parameter, so ``v`` is stored per seed, (seed,).

``adam`` IS ``N`` textbook micro-steps with the constant gradient ``grad``
(micro const-mean), for ``j = 1..N`` and ``t = T + j``::

    m_j = beta1**j * m_0 + (1 - beta1**j) * grad        (closed-form EMAs)
    v_j = beta2**j * v_0 + (1 - beta2**j) * g**2
    u_j = (m_j / (1 - beta1**t)) / (sqrt(v_j / (1 - beta2**t)) + eps)
    theta' = clip(theta - lr * sum_j u_j)

The micro-step index ``j`` is an array axis: ``u_j`` factors as
``m_0 * a_j * w_j + grad * b_j * w_j`` with per-seed scalars
``a_j = beta1**j / (1 - beta1**t)``, ``b_j = (1 - beta1**j) / (1 - beta1**t)``
and ``w_j = 1 / (sqrt(v_hat_j) + eps)`` (v is per seed), so the sum over the
block is two (seed, j) reductions.

``adam-block`` freezes the denominator at the end of the block and uses
Adam's bias corrections at the end-of-block step count ``T + N`` (spec
errata 2; without them the first block overshoots ~4x at N = 36)::

    sum_m  = sum_j m_j = m_0 * q + grad * (N - q),   q = beta1 (1 - beta1**N) / (1 - beta1)
    theta' = clip(theta - lr * (sum_m / (1 - beta1**(T+N)))
                                  / (sqrt(v_N / (1 - beta2**(T+N))) + eps))

Clamping. theta is clamped once per report, at the report boundary (Fishtest
clamps on arrival); the micro-step reference in
:mod:`spsa_bench.reference.micro` clamps at the same points, so ``adam``
equals it exactly even when a bound is hit. (Clamping every micro-step would
differ only when a bound is crossed inside a block.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers.base import Optimizer, Report, hyperparameter
from spsa_bench.optimizers.schedule_free import one_minus_pow


@dataclass(frozen=True)
class AdamHyper:
    lr: float = hyperparameter(
        0.04,
        "learning rate per pair, in theta units (theta step = lr * m_hat / (sqrt(v_hat) + eps))",
        minimum=0.0,
    )
    beta1: float = hyperparameter(
        0.9, "EMA factor of the first moment m, per pair", minimum=0.0, exclusive_maximum=1.0
    )
    beta2: float = hyperparameter(
        0.999, "EMA factor of the second moment v, per pair", minimum=0.0, exclusive_maximum=1.0
    )
    eps: float = hyperparameter(
        1e-8, "added to sqrt(v_hat) in the denominator", exclusive_minimum=0.0
    )


class AdamState(NamedTuple):
    theta: np.ndarray  # (seed, param), clamped
    m: np.ndarray  # (seed, param), phi space
    v: np.ndarray  # (seed,), phi space: g**2 = (S/N)**2 is the same for every parameter
    pairs: np.ndarray  # (seed,) int64, Adam step count t


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


def _common(view: DeveloperView):
    def init(n_seeds: int) -> AdamState:
        zeros = np.zeros((n_seeds, view.num_params))
        return AdamState(
            theta=view.clip(np.tile(view.theta_start, (n_seeds, 1))),
            m=zeros,
            v=np.zeros(n_seeds),
            pairs=np.zeros(n_seeds, dtype=np.int64),
        )

    def perturbation(iter_local: np.ndarray) -> np.ndarray:
        return np.tile(view.c_dev, (np.shape(iter_local)[0], 1))

    def export(state: AdamState) -> np.ndarray:
        return state.theta

    return init, perturbation, export


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


def _constants(hyper: AdamHyper) -> tuple[float, float, Ladder, Ladder]:
    """``lr``, ``eps`` and the EMA ladders of ``beta1`` (m) and ``beta2`` (v)."""
    return float(hyper.lr), float(hyper.eps), Ladder(float(hyper.beta1)), Ladder(float(hyper.beta2))


def build_adam(view: DeveloperView, hyper: AdamHyper) -> Optimizer:
    init, perturbation, export = _common(view)
    lr, eps, first, second = _constants(hyper)

    def update(state: AdamState, report: Report) -> AdamState:
        n, g, grad = gradient(report)
        size, t, active = micro_axis(state.pairs, n)
        weights = inverse_denominators(state.v, g * g, second, eps, size, t)
        weights *= first.inverse_correction(
            t
        )  # m_hat_j = (keep_j m0 + gain_j grad) / (1 - beta1**t)
        if active is not None:
            weights *= active
        keep, gain = first.ladder(size)
        step = (
            state.m * block_dot(weights, keep, n)[:, None]
            + grad * block_dot(weights, gain, n)[:, None]
        )
        return AdamState(
            theta=view.clip(state.theta - lr * step),
            m=ema_block(state.m, grad, first, n),
            v=ema_block(state.v, g * g, second, n),
            pairs=state.pairs + n,
        )

    return Optimizer("adam", init, perturbation, update, export)


def build_adam_block(view: DeveloperView, hyper: AdamHyper) -> Optimizer:
    init, perturbation, export = _common(view)
    lr, eps, first, second = _constants(hyper)
    beta1, beta2 = first.beta, second.beta

    def update(state: AdamState, report: Report) -> AdamState:
        n, g, grad = gradient(report)
        nf = n.astype(np.float64)
        pairs = state.pairs + n
        q = beta1 * one_minus_pow(beta1, nf) / (1.0 - beta1)  # sum_{j=1..N} beta1**j
        sum_m = q[:, None] * state.m + (nf - q)[:, None] * grad
        v = ema_block(state.v, g * g, second, n)
        m_hat_sum = sum_m / one_minus_pow(beta1, pairs)[:, None]
        v_hat = v / one_minus_pow(beta2, pairs)
        step = m_hat_sum / (np.sqrt(v_hat) + eps)[:, None]
        return AdamState(
            theta=view.clip(state.theta - lr * step),
            m=ema_block(state.m, grad, first, n),
            v=v,
            pairs=pairs,
        )

    return Optimizer("adam-block", init, perturbation, update, export)
