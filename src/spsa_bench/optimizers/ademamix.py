"""AdEMAMix driven by SPSA reports (spec 000 §2.5): N micro-steps per report.

Sign and spaces as :mod:`.adam`: ``grad = -(S / N) * flip`` in phi space,
``g = -S / N``, the step applied to theta directly (theta units, not mapped
through ``c``); one pair is
one step, ``t`` counts pairs over the run. For ``j = 1..N``, ``t = T + j``
(micro const-mean, the constant gradient ``grad``)::

    m1_j = beta1**j m1_0 + (1 - beta1**j) grad          fast EMA, bias-corrected
    m2_j = beta3**j m2_0 + (1 - beta3**j) grad          slow EMA, not corrected
    v_j  = beta2**j v_0  + (1 - beta2**j) g**2
    lr_t = lr * min(1, t / warmup_pairs)                (lr when warmup_pairs = 0)
    u_j  = (m1_j / (1 - beta1**t) + alpha m2_j) / (sqrt(v_j / (1 - beta2**t) + eps_root) + eps)
    theta' = clip(theta - sum_j lr_t u_j)

The sum runs over a micro-step array axis: with the per-seed
``w_j = 1 / (sqrt(v_hat_j + eps_root) + eps)`` (``v`` is per seed since
``flip**2 = 1``) it is three (seed, j) reductions, the coefficients of
``m1_0``, ``m2_0`` and ``grad``, so this equals the literal N-step loop of
:mod:`spsa_bench.reference.micro` to rounding. theta is clamped at report
boundaries, in both (see :mod:`.adam`).
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
)
from spsa_bench.optimizers.base import Optimizer, Report, hyperparameter


@dataclass(frozen=True)
class AdemamixHyper:
    lr: float = hyperparameter(
        0.01, "learning rate per pair, in theta units (not mapped through c, as adam)", minimum=0.0
    )
    beta1: float = hyperparameter(
        0.9,
        "EMA factor of the fast first moment m1 (bias-corrected)",
        minimum=0.0,
        exclusive_maximum=1.0,
    )
    beta2: float = hyperparameter(
        0.999,
        "EMA factor of the second moment v (bias-corrected)",
        minimum=0.0,
        exclusive_maximum=1.0,
    )
    beta3: float = hyperparameter(
        0.9999,
        "EMA factor of the slow first moment m2 (not corrected)",
        minimum=0.0,
        exclusive_maximum=1.0,
    )
    alpha: float = hyperparameter(1.0, "weight of the slow EMA m2 in the numerator", minimum=0.0)
    eps: float = hyperparameter(
        1e-8, "added to the square root in the denominator", exclusive_minimum=0.0
    )
    eps_root: float = hyperparameter(0.0, "added to v_hat inside the square root", minimum=0.0)
    warmup_pairs: int = hyperparameter(
        0,
        "linear warmup of the per-pair rate lr * min(1, t / warmup_pairs); 0 = off",
        minimum=0,
        kind="integer",
    )


class AdemamixState(NamedTuple):
    theta: np.ndarray  # (seed, param), clamped
    m1: np.ndarray  # (seed, param), fast EMA, phi space
    m2: np.ndarray  # (seed, param), slow EMA, phi space
    v: np.ndarray  # (seed,), second moment, phi space (the same for every parameter)
    pairs: np.ndarray  # (seed,) int64, step count t


def build_ademamix(view: DeveloperView, hyper: AdemamixHyper) -> Optimizer:
    lr, alpha = float(hyper.lr), float(hyper.alpha)
    beta1, beta2, beta3 = float(hyper.beta1), float(hyper.beta2), float(hyper.beta3)
    eps, eps_root, warmup = float(hyper.eps), float(hyper.eps_root), int(hyper.warmup_pairs)
    first, second, third = Ladder(beta1), Ladder(beta2), Ladder(beta3)

    def init(n_seeds: int) -> AdemamixState:
        zeros = np.zeros((n_seeds, view.num_params))
        return AdemamixState(
            theta=view.clip(np.tile(view.theta_start, (n_seeds, 1))),
            m1=zeros,
            m2=zeros.copy(),
            v=np.zeros(n_seeds),
            pairs=np.zeros(n_seeds, dtype=np.int64),
        )

    def perturbation(iter_local: np.ndarray) -> np.ndarray:
        return np.tile(view.c_dev, (np.shape(iter_local)[0], 1))

    def export(state: AdemamixState) -> np.ndarray:
        return state.theta

    def update(state: AdemamixState, report: Report) -> AdemamixState:
        n, g, grad = gradient(report)
        size, t, active = micro_axis(state.pairs, n)
        rate = inverse_denominators(state.v, g * g, second, eps, size, t, eps_root)
        rate *= lr  # rate_j = lr_t * w_j, zero past the block's end
        if warmup > 0:
            rate *= np.minimum(1.0, t / warmup)
        if active is not None:
            rate *= active
        fast = rate * first.inverse_correction(t)
        keep1, gain1 = first.ladder(size)
        keep3, gain3 = third.ladder(size)
        on_m1 = block_dot(fast, keep1, n)  # (seed,)
        on_m2 = alpha * block_dot(rate, keep3, n)
        on_grad = block_dot(fast, gain1, n) + alpha * block_dot(rate, gain3, n)
        step = state.m1 * on_m1[:, None] + state.m2 * on_m2[:, None] + grad * on_grad[:, None]
        return AdemamixState(
            theta=view.clip(state.theta - step),
            m1=ema_block(state.m1, grad, first, n),
            m2=ema_block(state.m2, grad, third, n),
            v=ema_block(state.v, g * g, second, n),
            pairs=state.pairs + n,
        )

    return Optimizer("ademamix", init, perturbation, update, export)
