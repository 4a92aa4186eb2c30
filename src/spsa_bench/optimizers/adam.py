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
from spsa_bench.optimizers._moments import (
    Ladder,
    block_dot,
    ema_block,
    gradient,
    inverse_denominators,
    micro_axis,
    one_minus_pow,
)
from spsa_bench.optimizers.base import Optimizer, Report, hyperparameter


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
