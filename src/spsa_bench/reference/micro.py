"""Literal per-pair ("micro") reference versions of every optimizer, for one seed.

Each function below is the textbook update written straight from the spec
formulas and applied ONE PAIR at a time with small numpy vectors (one entry
per parameter) and Python floats. Nothing here is vectorized over pairs or
seeds and nothing is shared with :mod:`spsa_bench.optimizers`: the fast
(macro) optimizers are checked against these loops.

A micro path is driven by a list of :class:`MicroReport`, each carrying the
per-pair signals of one report: the block mean ``S / N`` repeated ``N`` times
("micro const-mean", what every block macro claims to reproduce) or the real
per-pair outcomes ("micro real"), plus the report's flip, probe ``c`` and
dispatch iteration. Each optimizer row names its reference
(``OptimizerSpec.micro`` in :mod:`spsa_bench.optimizers.registry`); every
reference returns ``{"theta": (report + 1, param)}`` (row 0 the start), plus
``"x"`` and ``"z"`` for the schedule-free kinds.

Clamping follows the macros: parameters are clamped at report boundaries
(theta for SPSA and Adam, x and theta for schedule-free; z never); within a
report nothing is clamped. ``clamp_every_pair=True`` clamps after every pair
instead (projected textbook steps); the two agree whenever no bound is hit
inside a report.

The micro laws (maximising Elo; ``s`` the pair's signal, ``t`` the run's pair
counter, ``k`` the SPSA micro-iteration starting at the report's
``iter_local`` and incremented per pair)::

    spsa, spsa-block  theta += (a_k / c_k) * s * flip
                      (batch_step mean: theta += (a_k / c_k) * (s / N) * flip, N the
                      report's pairs)
    spsa-cwd          step = (a_k / c_k) * s * flip; delta = theta - theta_start
                      theta += step - lambda * r_k * delta * (step * delta <= 0)
    sf-sgd(-block)    l = lr * min(1, t / warmup); z += c * l * s * flip;
                      W += l; x += (l / W) * (z - x)
    sf-adam(-block)   g = s * flip; v = b2 v + (1 - b2) g**2; v_hat = v / (1 - b2**t)
                      z += c * l * g / (sqrt(v_hat) + eps); W, x as sf-sgd
    adam(-block)      g = -s * flip; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g**2
                      theta -= lr * (m / (1 - b1**t)) / (sqrt(v / (1 - b2**t)) + eps)
    adam-coord        g = -s * flip / c; m, v as adam but v is a vector (one entry
                      per parameter, v_i = b2 v_i + (1 - b2) g_i**2); theta step as adam
    ademamix          m1 = b1 m1 + (1 - b1) g; m2 = b3 m2 + (1 - b3) g; v as adam
                      theta -= l * (m1 / (1 - b1**t) + alpha m2)
                                     / (sqrt(v / (1 - b2**t) + eps_root) + eps)

with the SPSA schedule of spec 001 ch. 3: ``c = c_end * num_iter**gamma``,
``a = r_end * c_end**2 * (A + num_iter)**alpha``, ``c_k = c / k**gamma``,
``a_k = a / (A + k)**alpha``, ``r_k = a_k / c_k**2``.

The micro path is synchronous (no report is stale), so the SPSA asynchrony options
``delay_adaptive`` (a factor of exactly 1 at staleness 0) and ``iteration_counter``
(the report's ``iter_local`` is given) do not enter it; ``batch_step = mean`` does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from spsa_bench.model.developer import DeveloperView


class MicroReport(NamedTuple):
    """One report for the micro path of one seed."""

    pair_signals: np.ndarray  # (N,) per-pair signal s, in play order
    flip: np.ndarray  # (param,) +-1
    c: np.ndarray  # (param,) the probe the report was played with
    iter_local: int  # SPSA dispatch iteration of the report


def const_mean(pair_signals: np.ndarray) -> np.ndarray:
    """The block mean ``S / N`` repeated ``N`` times."""
    pair_signals = np.asarray(pair_signals, dtype=np.float64)
    return np.full(pair_signals.shape[0], pair_signals.sum() / pair_signals.shape[0])


def _warm(t: int, warmup: int) -> float:
    return min(1.0, t / warmup) if warmup > 0 else 1.0


def spsa_micro(
    view: DeveloperView, hyper, reports: Sequence[MicroReport], *, clamp_every_pair=False, cwd=False
):
    # Fishtest's gains: A = int(A_ratio * N) when A_ratio is given; c_end and r_end per
    # parameter (r_end from a parameter block when the view has one), times c_scale / r_scale.
    num_iter = float(view.num_pairs)
    A_ratio = getattr(hyper, "A_ratio", None)
    A = float(int(A_ratio * view.num_pairs)) if A_ratio is not None else float(hyper.A)
    c_end = np.array(view.c_dev, dtype=np.float64) * getattr(hyper, "c_scale", 1.0)
    r_end = hyper.r_end if view.r_end is None else np.array(view.r_end, dtype=np.float64)
    r_end = r_end * getattr(hyper, "r_scale", 1.0)
    c_base = c_end * num_iter**hyper.gamma
    a_base = r_end * c_end**2 * (A + num_iter) ** hyper.alpha
    lam = float(getattr(hyper, "lambda_cwd", 0.0)) if cwd else 0.0
    mean = getattr(hyper, "batch_step", "sum") == "mean"
    start = np.array(view.theta_start, dtype=np.float64)
    theta = view.clip(start.copy())
    out = [theta.copy()]
    for report in reports:
        k = int(report.iter_local)
        pairs = len(report.pair_signals)
        for s in report.pair_signals:
            a_k = a_base / (A + k) ** hyper.alpha
            c_k = c_base / k**hyper.gamma
            signal = float(s) / pairs if mean else float(s)
            step = (a_k / c_k) * signal * report.flip
            if cwd:
                r_k = a_k / c_k**2
                delta = theta - start
                mask = step * delta <= 0.0
                theta = theta + step - lam * r_k * np.where(mask, delta, 0.0)
            else:
                theta = theta + step
            if clamp_every_pair:
                theta = view.clip(theta)
            k += 1
        theta = view.clip(theta)
        out.append(theta.copy())
    return {"theta": np.array(out)}


def schedule_free_micro(
    view: DeveloperView,
    hyper,
    reports: Sequence[MicroReport],
    *,
    adam: bool,
    clamp_every_pair=False,
):
    lr, warmup = float(hyper.lr), int(hyper.warmup_pairs)
    beta = float(hyper.beta1) if adam else float(hyper.beta)
    z = np.array(view.theta_start, dtype=np.float64)
    x = view.clip(z.copy())
    v = np.zeros_like(z)
    weight_sum, t = 0.0, 0
    thetas, xs, zs = [view.clip(z.copy())], [x.copy()], [z.copy()]
    for report in reports:
        for s in report.pair_signals:
            t += 1
            rate = lr * _warm(t, warmup)
            g = float(s) * report.flip
            if adam:
                v = hyper.beta2 * v + (1.0 - hyper.beta2) * g * g
                v_hat = v / (1.0 - hyper.beta2**t)
                z = z + report.c * rate * g / (np.sqrt(v_hat) + hyper.eps)
            else:
                z = z + report.c * rate * g
            weight_sum += rate
            if weight_sum > 0.0:
                x = x + (rate / weight_sum) * (z - x)
            if clamp_every_pair:
                x = view.clip(x)
        x = view.clip(x)
        thetas.append(view.clip(z + beta * (x - z)))  # (1 - beta) z + beta x
        xs.append(x.copy())
        zs.append(z.copy())
    return {"theta": np.array(thetas), "x": np.array(xs), "z": np.array(zs)}


def adam_micro(
    view: DeveloperView, hyper, reports: Sequence[MicroReport], *, clamp_every_pair=False
):
    theta = view.clip(np.array(view.theta_start, dtype=np.float64))
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    t = 0
    out = [theta.copy()]
    for report in reports:
        for s in report.pair_signals:
            t += 1
            g = -float(s) * report.flip
            m = hyper.beta1 * m + (1.0 - hyper.beta1) * g
            v = hyper.beta2 * v + (1.0 - hyper.beta2) * g * g
            m_hat = m / (1.0 - hyper.beta1**t)
            v_hat = v / (1.0 - hyper.beta2**t)
            theta = theta - hyper.lr * m_hat / (np.sqrt(v_hat) + hyper.eps)
            if clamp_every_pair:
                theta = view.clip(theta)
        theta = view.clip(theta)
        out.append(theta.copy())
    return {"theta": np.array(out)}


def adam_coord_micro(
    view: DeveloperView, hyper, reports: Sequence[MicroReport], *, clamp_every_pair=False
):
    """Textbook per-pair Adam on theta with the gradient ``-s * flip / c`` and one
    second moment per parameter (``v`` is a vector updated entry by entry)."""
    n_params = len(view.theta_start)
    theta = view.clip(np.array(view.theta_start, dtype=np.float64))
    m = [0.0] * n_params
    v = [0.0] * n_params
    t = 0
    out = [theta.copy()]
    for report in reports:
        for s in report.pair_signals:
            t += 1
            for i in range(n_params):
                g = -float(s) * float(report.flip[i]) / float(report.c[i])
                m[i] = hyper.beta1 * m[i] + (1.0 - hyper.beta1) * g
                v[i] = hyper.beta2 * v[i] + (1.0 - hyper.beta2) * g * g
                m_hat = m[i] / (1.0 - hyper.beta1**t)
                v_hat = v[i] / (1.0 - hyper.beta2**t)
                theta[i] = theta[i] - hyper.lr * m_hat / (math.sqrt(v_hat) + hyper.eps)
            if clamp_every_pair:
                theta = view.clip(theta)
        theta = view.clip(theta)
        out.append(theta.copy())
    return {"theta": np.array(out)}


def ademamix_micro(
    view: DeveloperView, hyper, reports: Sequence[MicroReport], *, clamp_every_pair=False
):
    theta = view.clip(np.array(view.theta_start, dtype=np.float64))
    m1 = np.zeros_like(theta)
    m2 = np.zeros_like(theta)
    v = np.zeros_like(theta)
    t = 0
    out = [theta.copy()]
    for report in reports:
        for s in report.pair_signals:
            t += 1
            g = -float(s) * report.flip
            m1 = hyper.beta1 * m1 + (1.0 - hyper.beta1) * g
            m2 = hyper.beta3 * m2 + (1.0 - hyper.beta3) * g
            v = hyper.beta2 * v + (1.0 - hyper.beta2) * g * g
            m1_hat = m1 / (1.0 - hyper.beta1**t)
            v_hat = v / (1.0 - hyper.beta2**t)
            rate = hyper.lr * _warm(t, int(hyper.warmup_pairs))
            denom = np.sqrt(v_hat + hyper.eps_root) + hyper.eps
            theta = theta - rate * (m1_hat + hyper.alpha * m2) / denom
            if clamp_every_pair:
                theta = view.clip(theta)
        theta = view.clip(theta)
        out.append(theta.copy())
    return {"theta": np.array(out)}


def spsa_cwd_micro(view: DeveloperView, hyper, reports, *, clamp_every_pair=False):
    return spsa_micro(view, hyper, reports, clamp_every_pair=clamp_every_pair, cwd=True)


def sf_sgd_micro(view: DeveloperView, hyper, reports, *, clamp_every_pair=False):
    return schedule_free_micro(view, hyper, reports, adam=False, clamp_every_pair=clamp_every_pair)


def sf_adam_micro(view: DeveloperView, hyper, reports, *, clamp_every_pair=False):
    """Block-only knobs of sf-adam-block (mu2 prior, damping ablation) have no per-pair
    meaning and are ignored."""
    return schedule_free_micro(view, hyper, reports, adam=True, clamp_every_pair=clamp_every_pair)


class Spsa2MicroReport(NamedTuple):
    """A :class:`MicroReport` plus the job's Hessian match (kind ``spsa-2``)."""

    pair_signals: np.ndarray  # (N,) per-pair signal of the gradient match
    flip: np.ndarray  # (param,) +-1, both matches
    c: np.ndarray  # (param,) the probe c_k of both matches
    iter_local: int
    hessian_pair_signals: np.ndarray | None = None  # (N~,) per-pair signal of the Hessian match
    hessian_flip: np.ndarray | None = None  # (param,) +-1, its shift direction


def spsa2_micro(view: DeveloperView, hyper, reports, *, clamp_every_pair=False):
    """2SPSA (kind ``spsa-2``) one pair at a time for one seed (math in
    :mod:`spsa_bench.optimizers.second_order`), in phi = theta / c_end.

    Every Hessian pair ``t`` gives the sample ``B^_t = -((s~_t - y) / 4)(u_i v_j + v_i u_j)``
    (``y`` the gradient match's mean, ``u = flip / p``, ``v = flip~ / q``) and Spall's
    running mean ``B = (t - 1)/t B + (1/t) B^_t``. Then ``M = (B B + delta^2 I)^(1/2)``
    (built as a matrix, solved with ``numpy.linalg.solve``) and every gradient pair adds
    ``a_k0 M^-1 (s flip / (2 p))`` to the job's step, all pairs at the dispatch point; the
    step is shortened to ``max_step`` and clipped at the report (so ``clamp_every_pair``
    changes nothing: the job's step is one step). A report without a Hessian match
    leaves ``B`` alone."""
    del clamp_every_pair
    c_end = [float(x) for x in view.c_dev]
    p_count = len(c_end)
    offset = hyper.A_ratio * float(view.num_pairs)
    theta = view.clip(np.array(view.theta_start, dtype=np.float64))
    B = [[0.0] * p_count for _ in range(p_count)]
    seen = 0
    out = [theta.copy()]
    for report in reports:
        probe = [float(report.c[i]) / c_end[i] for i in range(p_count)]
        signals = [float(s) for s in report.pair_signals]
        y = sum(signals) / len(signals)
        hessian = getattr(report, "hessian_pair_signals", None)
        if hessian is not None:
            u = [float(report.flip[i]) / probe[i] for i in range(p_count)]
            v = [
                float(report.hessian_flip[i]) / (hyper.c_tilde_ratio * probe[i])
                for i in range(p_count)
            ]
            for s_tilde in hessian:
                seen += 1
                d = (float(s_tilde) - y) / 4.0
                for i in range(p_count):
                    for j in range(p_count):
                        sample = -d * (u[i] * v[j] + v[i] * u[j])
                        B[i][j] = (seen - 1) / seen * B[i][j] + sample / seen
        values, vectors = np.linalg.eigh(np.array(B))
        M = vectors @ np.diag(np.sqrt(values**2 + hyper.curvature_floor**2)) @ vectors.T
        a_k = hyper.lr / (offset + float(report.iter_local)) ** hyper.alpha
        step = np.zeros(p_count)
        for s in signals:
            g = np.array([s * float(report.flip[i]) / (2.0 * probe[i]) for i in range(p_count)])
            step = step + a_k * np.linalg.solve(M, g)
        largest = max(abs(x) for x in step)
        if largest > hyper.max_step:
            step = step * (hyper.max_step / largest)
        theta = view.clip(theta + step * np.array(c_end))
        out.append(theta.copy())
    return {"theta": np.array(out)}


__all__ = [
    "MicroReport",
    "adam_coord_micro",
    "adam_micro",
    "ademamix_micro",
    "const_mean",
    "sf_adam_micro",
    "sf_sgd_micro",
    "spsa_cwd_micro",
    "spsa_micro",
    "Spsa2MicroReport",
    "spsa2_micro",
]
