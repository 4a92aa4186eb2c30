"""Second-order SPSA (2SPSA; Spall 2000, "Adaptive stochastic approximation by the
simultaneous perturbation method", IEEE TAC 45(10)), the proposal of fishtest #2126.

Kind ``spsa-2``. Spall calls the method 2SPSA; the "Fast 2SPSA" of fishtest #2126
(Zhu, Wang & Spall 2019) is the same estimator and safeguard computed with a
symmetric-indefinite factorisation updated in O(p**2) per iteration. Here the
preconditioner is computed by an eigendecomposition, O(p**3) per report, which gives
the same step (the benchmark's parameter counts are small).

Everything is in phi space, ``phi = theta / c_end`` (``c_end`` the view's ``c_dev``),
so the curvature is in result units (net wins per pair) per ``phi**2``.

**Measurements.** A job dispatched at iteration ``k`` (``iter_local``) plays two
matches with the same flip ``D`` (Rademacher) and probe ``p = c_k / c_end``
(per parameter; ``c_k = c_end * (num_pairs / k)**gamma``, Fishtest's law):

- the gradient match, ``n_pairs`` pairs of ``theta + c_k D`` against ``theta - c_k D``
  (Fishtest's job), total result ``S``, mean ``y = S / n_pairs``;
- the Hessian match, ``hessian_pairs`` pairs of ``theta + c~ D~ + c_k D`` against
  ``theta + c~ D~ - c_k D``: the same pair of probes shifted by ``c~ D~``, ``D~`` a
  second Rademacher vector and ``c~ = c_tilde_ratio * c_k``; total ``S~``, mean
  ``y~ = S~ / hessian_pairs``.

A Fishtest worker would have to play the second match: two more engines per job.
The replay (:mod:`spsa_bench.engine.replay`) plays it inside the job's budget: of a
job of ``N`` pairs, ``hessian_pairs(N, hessian_share) = floor(hessian_share * N + 1/2)``
(at most ``N - 1``) go to the Hessian match and the rest to the gradient match, whose
``n_pairs`` the report carries; the Hessian match's outcomes come from the job's match
draws after the gradient pairs' (the same draws, disjoint pairs), and ``D~`` from the
seed's ``hessian`` stream, so every other kind's draws stay untouched (the
``Optimizer`` record's ``hessian_share``/``hessian_shift`` ask the replay for it).
:class:`SecondOrderReport` carries it (the fields of a ``Report`` plus
``hessian_signal``, ``hessian_pairs``, ``hessian_flip``). A plain ``Report`` (or
``hessian_share = 0``) carries no Hessian match: the Hessian estimate then stays where
it is and the update is the preconditioned gradient step below.

**Estimates** (``q = c_tilde_ratio * p``; ``u = D / p``, ``v = D~ / q`` elementwise)::

    g   = S * D / (2 p)                          gradient of the result, summed over the
                                                 job's pairs (Fishtest's total-S form)
    H^  = ((y~ - y) / 4) (u v^T + v u^T)         Hessian of the result per pair (symmetric)

On a quadratic ``y~ - y = 2 p^T H q`` exactly, so ``E[H^] = H`` (``E[D_k / D_i] =
delta_ki``); ``g`` is Fishtest's SPSA gradient (``theta += (a_k / c_k) S D`` is
``phi += 2 r_k p**2 g`` with ``r_k = a_k / c_k**2``).

**Safeguards.**

- Averaging: ``B`` (state ``curvature``) is the running mean of ``-H^`` (the loss's
  curvature) weighted by Hessian pairs, ``B <- B + (m / (w + m)) (-H^ - B)``,
  ``w <- w + m`` with ``m = hessian_pairs``; per pair this is Spall's
  ``B_k = k/(k+1) B_{k-1} + 1/(k+1) B^_k`` with the job's mean sample.
- Preconditioner: Spall's mapping ``M = f(B) = (B^T B + delta**2 I)**(1/2)``, computed
  from ``B = V diag(l) V^T`` as ``M = V diag(sqrt(l**2 + delta**2)) V^T``: every
  eigenvalue of ``M`` is at least ``delta = curvature_floor``, so ``M`` is positive
  definite and ``M^-1 g`` an ascent direction of the result whatever ``B`` is.
- Step limit ("blocking" of huge steps): the step is shortened to at most
  ``max_step`` in phi in every coordinate (Spall blocks, i.e. rejects, such a step;
  shortening keeps the job's information and gives the same direction).

**Update** (gain ``a_k = lr / (A + k)**alpha``, ``A = A_ratio * num_pairs``)::

    step  = a_k M^-1 g                                   (phi)
    step *= min(1, max_step / max_i |step_i|)
    theta <- clip(theta + c_end * step)

With ``alpha = 1`` and ``lr = 1`` this is the stochastic Newton step Spall's theory
calls asymptotically optimal; on a noiseless one-parameter quadratic of curvature
``h`` each job contracts the error by exactly ``1 - a_k n_pairs h / sqrt(h**2 +
delta**2)`` once ``B = h``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers.base import Optimizer, Report, hyperparameter


@dataclass(frozen=True)
class Spsa2Hyper:
    lr: float = hyperparameter(
        1.0,
        "gain of the Newton step a_k = lr / (A + k)**alpha (1 with alpha 1: Spall's "
        "asymptotically optimal stochastic Newton step)",
        minimum=0.0,
    )
    alpha: float = hyperparameter(
        1.0, "decay exponent of the gain a_k (1: Newton averaging)", minimum=0.0, maximum=2.0
    )
    A_ratio: float = hyperparameter(
        0.1, "stability offset A = A_ratio * num_pairs of the gain a_k", minimum=0.0
    )
    gamma: float = hyperparameter(
        0.101,
        "decay exponent of the probe c_k = c_end * (num_pairs / k)**gamma (Fishtest's law)",
        minimum=0.0,
        maximum=1.0,
    )
    c_tilde_ratio: float = hyperparameter(
        1.0,
        "shift of the Hessian match c~ = c_tilde_ratio * c_k (the extra engines play "
        "theta + c~ D~ +- c_k D)",
        exclusive_minimum=0.0,
    )
    curvature_floor: float = hyperparameter(
        0.01,
        "delta of the preconditioner M = (B^2 + delta^2 I)^(1/2): its smallest eigenvalue, "
        "in net wins per pair per phi^2 (phi = theta / c_end)",
        exclusive_minimum=0.0,
    )
    max_step: float = hyperparameter(
        1.0,
        "largest step per report in phi (multiples of c_end) in any coordinate; a longer "
        "step is shortened to it",
        exclusive_minimum=0.0,
    )
    hessian_share: float = hyperparameter(
        0.5,
        "share of each job's pairs the replay plays as the Hessian match, "
        "floor(share * N + 1/2) of N (at most N - 1), the rest as the gradient match; "
        "0: no Hessian match (B stays 0)",
        minimum=0.0,
        exclusive_maximum=1.0,
    )


class SecondOrderReport(NamedTuple):
    """A :class:`~spsa_bench.optimizers.base.Report` plus the job's Hessian match.

    hessian_signal  (seed,)        total result S~ of the Hessian match
    hessian_pairs   (seed,)        its pairs (0: no Hessian match)
    hessian_flip    (seed, param)  its shift direction D~, +-1.0
    """

    n_pairs: np.ndarray
    signal: np.ndarray
    flip: np.ndarray
    c: np.ndarray
    iter_local: np.ndarray
    realized: np.ndarray | None = None
    staleness: np.ndarray | None = None
    in_flight: np.ndarray | None = None
    hessian_signal: np.ndarray | None = None
    hessian_pairs: np.ndarray | None = None
    hessian_flip: np.ndarray | None = None


class Spsa2State(NamedTuple):
    theta: np.ndarray  # (seed, param)
    curvature: np.ndarray  # (seed, param, param): B, the running mean of -H^ (phi)
    weight: np.ndarray  # (seed,): Hessian pairs averaged into B


def hessian_pairs(job_pairs: np.ndarray, share: float) -> np.ndarray:
    """Pairs of a job of ``N`` pairs played as the Hessian match: ``floor(share * N + 1/2)``,
    at most ``N - 1`` (the gradient match keeps at least one pair) and at least 0; int64,
    the shape of ``job_pairs``."""
    n = np.asarray(job_pairs, dtype=np.int64)
    wanted = np.floor(share * n + 0.5).astype(np.int64)
    return np.clip(wanted, 0, np.maximum(n - 1, 0))


def preconditioner_eigen(curvature: np.ndarray, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """``(eigenvalues, eigenvectors)`` of ``M = (B^T B + floor**2 I)**(1/2)`` for a stack of
    symmetric ``B`` (``(..., p, p)``): the eigenvalues ``sqrt(l**2 + floor**2) >= floor``."""
    values, vectors = np.linalg.eigh(curvature)
    return np.sqrt(values**2 + floor**2), vectors


def hessian_sample(
    y_gradient: np.ndarray,
    y_hessian: np.ndarray,
    flip: np.ndarray,
    probe: np.ndarray,
    hessian_flip: np.ndarray,
    shift: np.ndarray,
) -> np.ndarray:
    """``H^ = ((y~ - y) / 4)(u v^T + v u^T)``, ``u = D / p``, ``v = D~ / q``: the
    per-pair Hessian estimate of the result, ``(seed, param, param)``."""
    u = flip / probe
    v = hessian_flip / shift
    outer = u[:, :, None] * v[:, None, :]
    return (0.25 * (y_hessian - y_gradient))[:, None, None] * (outer + outer.transpose(0, 2, 1))


def build_spsa2(view: DeveloperView, hyper: Spsa2Hyper) -> Optimizer:
    c_end = np.array(view.c_dev, dtype=np.float64)  # (param,), a copy
    n = view.num_params
    total = float(view.num_pairs)
    offset = hyper.A_ratio * total
    floor = float(hyper.curvature_floor)

    def init(n_seeds: int) -> Spsa2State:
        return Spsa2State(
            theta=np.tile(view.theta_start, (n_seeds, 1)),
            curvature=np.zeros((n_seeds, n, n)),
            weight=np.zeros(n_seeds),
        )

    def perturbation(iter_local: np.ndarray) -> np.ndarray:
        k = np.asarray(iter_local, dtype=np.float64)
        return c_end[None, :] * ((total / k) ** hyper.gamma)[:, None]

    def update(state: Spsa2State, report: Report) -> Spsa2State:
        probe = report.c / c_end  # p, phi
        curvature, weight = state.curvature, state.weight
        pairs = getattr(report, "hessian_pairs", None)
        if pairs is not None and getattr(report, "hessian_signal", None) is not None:
            m = np.asarray(pairs, dtype=np.float64)
            played = m > 0.0
            y = report.signal / report.n_pairs
            y_tilde = np.where(played, report.hessian_signal / np.where(played, m, 1.0), y)
            sample = -hessian_sample(
                y, y_tilde, report.flip, probe, report.hessian_flip, hyper.c_tilde_ratio * probe
            )
            weight = weight + m
            share = np.where(played, m / np.where(played, weight, 1.0), 0.0)
            curvature = curvature + share[:, None, None] * (sample - curvature)
        k = np.asarray(report.iter_local, dtype=np.float64)
        gain = hyper.lr / (offset + k) ** hyper.alpha  # (seed,)
        gradient = report.signal[:, None] * report.flip / (2.0 * probe)
        if not weight.any():  # no Hessian pair yet: B = 0, M = delta I
            step = (gain / floor)[:, None] * gradient
        else:
            values, vectors = preconditioner_eigen(curvature, floor)
            along = np.einsum("spq,sp->sq", vectors, gradient) / values
            step = gain[:, None] * np.einsum("spq,sq->sp", vectors, along)
        largest = np.max(np.abs(step), axis=1)
        shorten = np.where(
            largest > hyper.max_step, hyper.max_step / np.where(largest > 0, largest, 1.0), 1.0
        )
        step = step * shorten[:, None]
        theta = view.clip(state.theta + step * c_end)
        return Spsa2State(theta=theta, curvature=curvature, weight=weight)

    def export(state: Spsa2State) -> np.ndarray:
        return state.theta

    return Optimizer(
        "spsa-2",
        init,
        perturbation,
        update,
        export,
        hessian_share=float(hyper.hessian_share),
        hessian_shift=float(hyper.c_tilde_ratio),
    )
