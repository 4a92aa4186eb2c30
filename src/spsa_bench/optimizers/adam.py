"""Textbook Adam driven by SPSA reports: ``adam`` (micro const-mean), ``adam-block`` and
``adam-coord`` (per-coordinate second moments, see :func:`build_adam_coord`).

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


# -- adam-coord: per-coordinate second moments ----------------------------------------------


@dataclass(frozen=True)
class AdamCoordHyper:
    lr: float = hyperparameter(
        0.04,
        "learning rate per pair, in theta units (theta step = lr * m_hat_i / (sqrt(v_hat_i) + eps))",
        minimum=0.0,
    )
    beta1: float = hyperparameter(
        0.9, "EMA factor of the first moment m_i, per pair", minimum=0.0, exclusive_maximum=1.0
    )
    beta2: float = hyperparameter(
        0.999,
        "EMA factor of the per-coordinate second moment v_i, per pair",
        minimum=0.0,
        exclusive_maximum=1.0,
    )
    eps: float = hyperparameter(
        1e-8,
        "added to sqrt(v_hat_i) in the denominator; v_i is in theta-gradient units "
        "((S/N)/c_i)**2, so it acts as adam's eps times c_i",
        exclusive_minimum=0.0,
    )


class AdamCoordState(NamedTuple):
    theta: np.ndarray  # (seed, param), clamped
    m: np.ndarray  # (seed, param), theta-gradient units: EMA of -(S/N) flip_i / c_i
    v: np.ndarray  # (seed, param), EMA of ((S/N) / c_i)**2, one per coordinate
    pairs: np.ndarray  # (seed,) int64, Adam step count t


#: Largest (seed, micro-step, param) block evaluated at once; longer reports are
#: walked in chunks of micro-steps (the sum over the block stays strictly in order).
_COORD_CHUNK = 1 << 18


def _micro_coefficients(first: Ladder, second: Ladder, pairs: np.ndarray, n: np.ndarray):
    """Per (micro-step, seed) coefficients with the bias corrections folded in:
    ``m_hat_ij = a_j m_i0 + b_j grad_i`` and ``v_hat_ij = p_j v_i0 + q_j grad_i**2``;
    ``a`` and ``b`` are exactly zero for the steps past a seed's ``N``."""
    size, t, active = micro_axis(pairs, n)
    keep, gain = first.ladder(size)
    correct = first.inverse_correction(t).T  # (J, seed)
    a, b = keep[:, None] * correct, gain[:, None] * correct
    if active is not None:
        a *= active.T
        b *= active.T
    keep, gain = second.ladder(size)
    correct = second.inverse_correction(t).T
    return a, b, keep[:, None] * correct, gain[:, None] * correct


def _summed_micro_steps(m, v, grad, square, coefficients, eps: float) -> np.ndarray:
    """``sum_j m_hat_ij / (sqrt(v_hat_ij) + eps)`` per (seed, param), summed strictly in
    micro-step order, over chunks of micro-steps (bounded memory)."""
    a, b, p, q = coefficients
    size = a.shape[0]
    n_seeds, n_params = grad.shape
    chunk = max(1, _COORD_CHUNK // max(1, n_seeds * n_params))
    total = np.zeros((n_seeds, n_params))
    for start in range(0, size, chunk):
        j = slice(start, min(size, start + chunk))
        denominator = p[j, :, None] * v
        denominator += q[j, :, None] * square
        np.sqrt(denominator, out=denominator)
        denominator += eps
        u = a[j, :, None] * m
        u += b[j, :, None] * grad
        u /= denominator
        for step in u:  # summed strictly in micro-step order
            total += step
    return total


def build_adam_coord(view: DeveloperView, hyper: AdamCoordHyper) -> Optimizer:
    """Adam with a second moment per coordinate, on the theta-space SPSA gradient.

    One pair is one textbook Adam step on theta with the per-pair gradient estimate
    ``grad_i = -(S / N) * flip_i / c_i`` (the block mean ``S / N`` as in ``adam``,
    divided by the probe ``c_i`` of the report, so ``grad`` is in theta units) and a
    second moment per coordinate, ``v_i <- beta2 v_i + (1 - beta2) grad_i**2``. A report
    of ``N`` pairs IS ``N`` such micro-steps with the constant ``grad`` (micro
    const-mean), for ``j = 1..N`` and ``t = T + j``::

        m_ij = beta1**j m_i0 + (1 - beta1**j) grad_i
        v_ij = beta2**j v_i0 + (1 - beta2**j) grad_i**2
        theta_i' = clip(theta_i - lr * sum_j (m_ij / (1 - beta1**t))
                                             / (sqrt(v_ij / (1 - beta2**t)) + eps))

    evaluated on a (j, seed, param) array with the steps past a seed's ``N`` set to
    exactly zero and summed strictly in order (so the macro is its literal reference,
    :func:`spsa_bench.reference.micro.adam_coord_micro`, up to rounding). theta is
    clamped at report boundaries, as for ``adam``.

    What per-coordinate adaptivity can and cannot do for SPSA. With Rademacher
    flips ``grad_i**2 = (S / N)**2 / c_i**2``: every coordinate of a report sees
    the same squared signal, scaled only by its own ``1 / c_i**2``. So ``v_i``

    - adapts to the per-parameter probe scales ``c_i``: ``v_i c_i**2`` is the
      same for every coordinate (``adam``'s scalar ``v``) and the ``1 / c_i`` of
      ``m_i`` cancels against ``sqrt(v_i)``, so the theta step does not grow for
      parameters with a small ``c_i`` as it would with a shared denominator;
    - adapts to the size of the block-mean signal ``|S / N|`` over time, as
      ``adam``'s scalar ``v`` does;
    - cannot see per-coordinate curvature or noise: a report's result is one
      number, and nothing in ``grad_i**2`` says which parameter produced it.

    With ``c`` constant over the run (``perturbation`` is ``c_dev``) the
    consequence is exact algebra: ``m_i = m_adam,i / c_i``, ``v_i = v_adam / c_i**2``,
    and the theta step is ``adam``'s with ``eps`` replaced by ``eps * c_i``. With
    every ``c_i = 1`` it IS ``adam``; otherwise each micro-step of coordinate
    ``i`` is ``adam``'s times ``sqrt(v_hat) / (sqrt(v_hat) + eps * c_i)`` (``v_hat``
    ``adam``'s), which differs from 1 only while the signal is near zero.
    Per-coordinate second moments therefore buy nothing for SPSA: the original
    lab measured its adam-coord losing (-1.019 against -0.330 Elo over 8 seeds);
    in this formulation that gap cannot come from ``v`` being per coordinate,
    only from seed noise or from details of that lab's implementation.
    """
    lr = float(hyper.lr)
    eps = float(hyper.eps)
    first, second = Ladder(float(hyper.beta1)), Ladder(float(hyper.beta2))

    def init(n_seeds: int) -> AdamCoordState:
        zeros = np.zeros((n_seeds, view.num_params))
        return AdamCoordState(
            theta=view.clip(np.tile(view.theta_start, (n_seeds, 1))),
            m=zeros,
            v=zeros.copy(),
            pairs=np.zeros(n_seeds, dtype=np.int64),
        )

    def perturbation(iter_local: np.ndarray) -> np.ndarray:
        return np.tile(view.c_dev, (np.shape(iter_local)[0], 1))

    def export(state: AdamCoordState) -> np.ndarray:
        return state.theta

    def update(state: AdamCoordState, report: Report) -> AdamCoordState:
        n, g, _ = gradient(report)
        grad = g[:, None] * np.asarray(report.flip, dtype=np.float64)
        grad /= np.asarray(report.c, dtype=np.float64)
        square = grad * grad
        coefficients = _micro_coefficients(first, second, state.pairs, n)
        total = _summed_micro_steps(state.m, state.v, grad, square, coefficients, eps)
        return AdamCoordState(
            theta=view.clip(state.theta - lr * total),
            m=ema_block(state.m, grad, first, n),
            v=ema_block(state.v, square, second, n),
            pairs=state.pairs + n,
        )

    return Optimizer("adam-coord", init, perturbation, update, export)
