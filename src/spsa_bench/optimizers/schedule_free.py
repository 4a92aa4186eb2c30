"""Schedule-free SGD and schedule-free Adam (spec 001 ch. 5-6, spec 000 §2.2-2.3).

Spaces. ``phi = theta / c`` with ``c = report.c`` (the constant developer
perturbation ``c_dev``). The per-pair gradient proxy lives in phi,
``g_t = s_t * flip`` for a pair of net result ``s_t`` (we maximise Elo, so steps
go *along* the signal); phi steps are mapped to theta by multiplying by ``c``.
``z`` (fast iterate, never clamped), ``x`` (Polyak surrogate, clamped) and the
exported ``theta`` (clamped) live in theta space; Adam's ``v`` lives in phi
and, since ``flip**2 = 1`` makes ``g_t**2 = s_t**2`` the same for every
parameter, is stored per seed.

The per-pair (micro) model that every macro below compresses, with ``t`` the
run's 1-based pair counter::

    r_t     = min(1, t / warmup_pairs)        (r_t = 1 when warmup_pairs = 0)
    l_t     = lr * r_t                        pair t's rate AND its Polyak weight
    z_t     = z_{t-1} + c * l_t * g_t / d_t   d_t = 1 (SGD), sqrt(v_hat_t) + eps (Adam)
    W_t     = W_{t-1} + l_t                   weight sum, per-pair mass (= lr * t)
    x_t     = x_{t-1} + (l_t / W_t) * (z_t - x_{t-1})      running mean of z
    theta_t = clip((1 - beta) * z_t + beta * x_t)

Warmup therefore enters the weights exactly through ``l_t``: a pair played
during warmup both moves ``z`` less and counts less in ``x``.

A report of ``N`` pairs after ``T`` pairs, total result ``S``, mean
``g = S / N``, ramp sums ``R1 = sum_t r_t`` and
``R2 = sum_t r_t * sum_{i<=t} r_i = (R1**2 + sum_t r_t**2) / 2`` over the
block's pairs ``t = T+1..T+N`` (no warmup: ``R1 = N``, ``R2 = N (N + 1) / 2``),
``M = lr * R1`` (the report's mass), ``f = M / (W + M)``::

    sf-sgd        z' = z + c * lr * R1 * g * flip          (= z + lr * c * S * flip)
                  x' = clip(x + f * (z' - x))                 block as one mass at z'
    sf-sgd-block  z' as sf-sgd
                  zbar = z + c * lr * (R2 / R1) * g * flip    mass-weighted mean of z_t
                  x' = clip(x + f * (zbar - x))               triangular: exact
    sf-adam       v' = beta2**N * v + (1 - beta2**N) * g**2   squared block MEAN (errata 3)
                  d  = sqrt(v' / (1 - beta2**(T + N))) + eps
                  z' = z + c * lr * R1 * g * flip / d       (= z + lr * c * S * flip / d)
                  x' = clip(x + f * (z' - x))                 endpoint, no k(N, beta2)
    sf-adam-block mu2 from the report aggregates (N_i, S_i, S_i**2 / N_i) plus a prior
                  v' = beta2**N * v + (1 - beta2**N) * mu2
                  d  = sqrt(v' / (1 - beta2**(T + N))) + eps
                  z' = z + k * c * lr * R1 * g * flip / d   k = 1 (k(N, beta2) as ablation)
                  zbar = z + k * c * lr * (R2 / R1) * g * flip / d,  x' = clip(x + f * (zbar - x))
    all           theta' = clip((1 - beta) * z' + beta * x'),  W' = W + M,  T' = T + N

(``f = 0`` while the weight sum is 0, i.e. for ``lr = 0``.)

Why ``k = 1`` for sf-adam-block (spec errata 1). Over a block in which the
per-pair second moment is a constant ``mu2``, Adam's bias-corrected
``v_hat`` stays constant: from ``v_T = (1 - beta2**T) * mu2``,
``v_{T+j} = beta2**j * v_T + (1 - beta2**j) * mu2 = (1 - beta2**(T+j)) * mu2``,
so ``v_hat`` is ``mu2`` at every micro-step, every micro-step has the same
denominator, and N micro-steps sum to exactly one block step with the
end-of-block denominator: the factor is 1 for every ``N`` and ``beta2``, and
the same equal steps make the triangular ``x`` exact. The documented
``k(N, beta2) = (1 - beta2**(N/2)) / (N (1 - sqrt(beta2)))`` (clipped to
(0, 1]) models a ladder of denominators that bias correction removes; it
under-steps ``1 / k = 6.58x`` at ``beta2 = 0.9, N = 128`` and is kept only as
the ``documented_damping = 1`` ablation.

The mu2 estimator treats the prior as ``n0`` pseudo-reports of ``N0`` pairs
each with per-pair mean ``m0`` and variance ``s0``; with ``n``, ``P = sum N``,
``A = sum S`` and ``Q = sum S**2 / N`` over prior and observed reports::

    mean = A / P,   var = max(0, Q - mean**2 * P) / max(n - 1, 1),
    mu2  = clip(var + mean**2, mu2_min, mu2_max)

(``E[(S_i - N_i mean)**2 / N_i]`` sums to ``(n - 1) var``, so ``var`` is
unbiased; ``mu2`` estimates the per-pair ``E[s**2]``, the quantity a per-pair
Adam would track).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers._moments import one_minus_pow
from spsa_bench.optimizers.base import Optimizer, Report, hyperparameter


def _warmup_pairs():
    """The warmup hyperparameter both schedule-free families share."""
    return hyperparameter(
        0,
        "linear warmup of the per-pair rate and Polyak weight lr * min(1, t / warmup_pairs); "
        "0 = off",
        minimum=0,
        kind="integer",
    )


@dataclass(frozen=True)
class SfSgdHyper:
    lr: float = hyperparameter(
        0.01, "phi-space learning rate per unit of result: z step = lr * c * S * flip", minimum=0.0
    )
    beta: float = hyperparameter(
        0.9, "export blend: theta = (1 - beta) * z + beta * x", minimum=0.0, maximum=1.0
    )
    warmup_pairs: int = _warmup_pairs()


@dataclass(frozen=True)
class SfAdamHyper:
    lr: float = hyperparameter(
        0.001,
        "phi-space learning rate: z step = lr * c * S * flip / (sqrt(v_hat) + eps)",
        minimum=0.0,
    )
    beta1: float = hyperparameter(
        0.9,
        "export blend (the schedule-free 'beta1'; there is no first moment): "
        "theta = (1 - beta1) * z + beta1 * x",
        minimum=0.0,
        maximum=1.0,
    )
    beta2: float = hyperparameter(
        0.999, "EMA factor of the second moment v, per pair", minimum=0.0, exclusive_maximum=1.0
    )
    eps: float = hyperparameter(
        1e-8, "added to sqrt(v_hat) in the denominator", exclusive_minimum=0.0
    )
    warmup_pairs: int = _warmup_pairs()


@dataclass(frozen=True)
class SfAdamBlockHyper(SfAdamHyper):
    documented_damping: int = hyperparameter(
        0,
        "ablation: 1 multiplies the block step by the documented k(N, beta2) "
        "(under-steps, spec errata 1); 0 = the exact factor 1",
        minimum=0,
        maximum=1,
        kind="integer",
    )
    mu2_prior_reports: float = hyperparameter(
        5.0, "mu2 prior: number of pseudo-reports", minimum=0.0
    )
    mu2_prior_pairs: float = hyperparameter(
        36.0, "mu2 prior: pairs per pseudo-report (a typical batch size)", exclusive_minimum=0.0
    )
    mu2_prior_mean: float = hyperparameter(
        0.0, "mu2 prior: per-pair mean result", minimum=-2.0, maximum=2.0
    )
    mu2_prior_variance: float = hyperparameter(
        0.8, "mu2 prior: per-pair variance of the result", minimum=0.0, maximum=4.0
    )
    mu2_min: float = hyperparameter(1e-12, "lower clamp of mu2", exclusive_minimum=0.0)
    mu2_max: float = hyperparameter(
        4.0, "upper clamp of mu2 (a pair result is at most 2 in size)", exclusive_minimum=0.0
    )


class SfState(NamedTuple):
    z: np.ndarray  # (seed, param) fast iterate, theta space, never clamped
    x: np.ndarray  # (seed, param) Polyak surrogate, clamped
    theta: np.ndarray  # (seed, param) exported point, clamped
    weight_sum: np.ndarray  # (seed,) W = sum of per-pair rates
    pairs: np.ndarray  # (seed,) int64, pairs processed T


class SfAdamState(NamedTuple):
    z: np.ndarray
    x: np.ndarray
    theta: np.ndarray
    weight_sum: np.ndarray
    pairs: np.ndarray
    v: np.ndarray  # (seed,) second moment, phi space (g**2 is the same for every parameter)


class SfAdamBlockState(NamedTuple):
    z: np.ndarray
    x: np.ndarray
    theta: np.ndarray
    weight_sum: np.ndarray
    pairs: np.ndarray
    v: np.ndarray
    n_reports: np.ndarray  # (seed,) int64, observed reports
    sum_signal: np.ndarray  # (seed,) sum S_i
    sum_signal_sq: np.ndarray  # (seed,) sum S_i**2 / N_i


def ramp_sums(
    pairs_before: np.ndarray, n: np.ndarray, warmup_pairs: int
) -> tuple[np.ndarray, np.ndarray]:
    """``R1 = sum r_t`` and ``R2 = sum_t r_t sum_{i<=t} r_i`` over ``t = T+1..T+N``.

    ``r_t = min(1, t / warmup_pairs)``; the ramp part uses exact sums of ``t``
    and ``t**2``, and ``R2 = (R1**2 + sum r_t**2) / 2``.
    """
    n = n.astype(np.float64)
    if warmup_pairs <= 0:
        return n, 0.5 * n * (n + 1.0)
    w = float(warmup_pairs)
    t0 = pairs_before.astype(np.float64)
    m = np.clip(w - t0, 0.0, n)  # pairs of the block inside the ramp
    sum_t = m * t0 + 0.5 * m * (m + 1.0)
    sum_t2 = m * t0 * t0 + t0 * m * (m + 1.0) + m * (m + 1.0) * (2.0 * m + 1.0) / 6.0
    flat = n - m
    r1 = sum_t / w + flat
    r_sq = sum_t2 / (w * w) + flat
    return r1, 0.5 * (r1 * r1 + r_sq)


def documented_k(n: np.ndarray, beta2: float) -> np.ndarray:
    """The documented damping ``k(N, beta2) = (1 - beta2**(N/2)) / (N (1 - sqrt(beta2)))``.

    Clipped to (0, 1]; 1 where ``N <= 1`` or ``beta2`` is not in (0, 1).
    """
    n = np.asarray(n, dtype=np.float64)
    if not 0.0 < beta2 < 1.0:
        return np.ones_like(n)
    k = -np.expm1(0.5 * n * np.log(beta2)) / (n * (1.0 - np.sqrt(beta2)))
    return np.where(n > 1.0, np.clip(k, np.finfo(np.float64).tiny, 1.0), 1.0)


def _sf_init(view: DeveloperView, n_seeds: int) -> dict:
    start = np.tile(view.theta_start, (n_seeds, 1))
    return {
        "z": start.copy(),
        "x": view.clip(start),
        "theta": view.clip(start),
        "weight_sum": np.zeros(n_seeds),
        "pairs": np.zeros(n_seeds, dtype=np.int64),
    }


def _sf_move(
    view: DeveloperView,
    state,
    lr: float,
    beta: float,
    warmup: int,
    report: Report,
    unit,
    triangular: bool,
):
    """Advance z, x, theta, W, T over one report.

    ``unit`` (seed, param) is the theta-space step per unit of ramp ``r_t``
    divided by ``lr``: pair t moves z by ``lr * r_t * unit``.
    """
    n = np.asarray(report.n_pairs).astype(np.int64)
    r1, r2 = ramp_sums(state.pairs, n, warmup)
    z = state.z + (lr * r1)[:, None] * unit
    mass = lr * r1
    weight_sum = state.weight_sum + mass
    frac = np.divide(mass, weight_sum, out=np.zeros_like(mass), where=weight_sum > 0.0)
    target = state.z + (lr * r2 / r1)[:, None] * unit if triangular else z
    x = view.clip(state.x + frac[:, None] * (target - state.x))
    theta = view.clip(z + beta * (x - z))  # = (1 - beta) z + beta x, exact when x == z
    return {"z": z, "x": x, "theta": theta, "weight_sum": weight_sum, "pairs": state.pairs + n}


def _sf_common(view: DeveloperView):
    def perturbation(iter_local: np.ndarray) -> np.ndarray:
        return np.tile(view.c_dev, (np.shape(iter_local)[0], 1))

    def export(state) -> np.ndarray:
        return state.theta

    def extras(state) -> dict[str, np.ndarray]:
        return {"x": state.x, "z": state.z}

    return perturbation, export, extras


def _mean_signal(report: Report) -> np.ndarray:
    return np.asarray(report.signal, dtype=np.float64) / np.asarray(
        report.n_pairs, dtype=np.float64
    )


def _build_sf_sgd(view: DeveloperView, hyper: SfSgdHyper, triangular: bool, name: str) -> Optimizer:
    perturbation, export, extras = _sf_common(view)
    lr, beta, warmup = float(hyper.lr), float(hyper.beta), int(hyper.warmup_pairs)

    def init(n_seeds: int) -> SfState:
        return SfState(**_sf_init(view, n_seeds))

    def update(state: SfState, report: Report) -> SfState:
        unit = report.c * (_mean_signal(report)[:, None] * report.flip)
        return SfState(**_sf_move(view, state, lr, beta, warmup, report, unit, triangular))

    return Optimizer(name, init, perturbation, update, export, extras)


def build_sf_sgd(view: DeveloperView, hyper: SfSgdHyper) -> Optimizer:
    return _build_sf_sgd(view, hyper, triangular=False, name="sf-sgd")


def build_sf_sgd_block(view: DeveloperView, hyper: SfSgdHyper) -> Optimizer:
    return _build_sf_sgd(view, hyper, triangular=True, name="sf-sgd-block")


def build_sf_adam(view: DeveloperView, hyper: SfAdamHyper) -> Optimizer:
    perturbation, export, extras = _sf_common(view)
    lr, beta, warmup = float(hyper.lr), float(hyper.beta1), int(hyper.warmup_pairs)
    beta2, eps = float(hyper.beta2), float(hyper.eps)

    def init(n_seeds: int) -> SfAdamState:
        return SfAdamState(**_sf_init(view, n_seeds), v=np.zeros(n_seeds))

    def update(state: SfAdamState, report: Report) -> SfAdamState:
        n = np.asarray(report.n_pairs).astype(np.int64)
        g = _mean_signal(report)
        keep = beta2 ** n.astype(np.float64)
        v = keep * state.v + one_minus_pow(beta2, n) * g * g
        v_hat = v / one_minus_pow(beta2, state.pairs + n)
        unit = report.c * ((g / (np.sqrt(v_hat) + eps))[:, None] * report.flip)
        moved = _sf_move(view, state, lr, beta, warmup, report, unit, triangular=False)
        return SfAdamState(**moved, v=v)

    return Optimizer("sf-adam", init, perturbation, update, export, extras)


def mu2_estimate(
    hyper: SfAdamBlockHyper, n_reports, sum_pairs, sum_signal, sum_signal_sq
) -> np.ndarray:
    """The per-pair second moment ``mu2`` from report aggregates plus the prior (see module doc)."""
    n0, pairs0 = float(hyper.mu2_prior_reports), float(hyper.mu2_prior_pairs)
    m0, s0 = float(hyper.mu2_prior_mean), float(hyper.mu2_prior_variance)
    n = n0 + np.asarray(n_reports, dtype=np.float64)
    p = n0 * pairs0 + np.asarray(sum_pairs, dtype=np.float64)
    a = n0 * pairs0 * m0 + sum_signal
    q = n0 * (s0 + pairs0 * m0 * m0) + sum_signal_sq
    mean = a / p
    var = np.maximum(q - mean * mean * p, 0.0) / np.maximum(n - 1.0, 1.0)
    return np.clip(var + mean * mean, hyper.mu2_min, hyper.mu2_max)


def build_sf_adam_block(view: DeveloperView, hyper: SfAdamBlockHyper) -> Optimizer:
    perturbation, export, extras = _sf_common(view)
    lr, beta, warmup = float(hyper.lr), float(hyper.beta1), int(hyper.warmup_pairs)
    beta2, eps = float(hyper.beta2), float(hyper.eps)
    damped = bool(hyper.documented_damping)

    def init(n_seeds: int) -> SfAdamBlockState:
        return SfAdamBlockState(
            **_sf_init(view, n_seeds),
            v=np.zeros(n_seeds),
            n_reports=np.zeros(n_seeds, dtype=np.int64),
            sum_signal=np.zeros(n_seeds),
            sum_signal_sq=np.zeros(n_seeds),
        )

    def update(state: SfAdamBlockState, report: Report) -> SfAdamBlockState:
        n = np.asarray(report.n_pairs).astype(np.int64)
        nf = n.astype(np.float64)
        s = np.asarray(report.signal, dtype=np.float64)
        n_reports = state.n_reports + 1
        sum_signal = state.sum_signal + s
        sum_signal_sq = state.sum_signal_sq + s * s / nf
        pairs = state.pairs + n
        mu2 = mu2_estimate(hyper, n_reports, pairs, sum_signal, sum_signal_sq)
        v = beta2**nf * state.v + one_minus_pow(beta2, nf) * mu2
        v_hat = v / one_minus_pow(beta2, pairs)
        g = s / nf
        if damped:
            g = g * documented_k(nf, beta2)
        unit = report.c * ((g / (np.sqrt(v_hat) + eps))[:, None] * report.flip)
        moved = _sf_move(view, state, lr, beta, warmup, report, unit, triangular=True)
        return SfAdamBlockState(
            **moved, v=v, n_reports=n_reports, sum_signal=sum_signal, sum_signal_sq=sum_signal_sq
        )

    return Optimizer("sf-adam-block", init, perturbation, update, export, extras)
