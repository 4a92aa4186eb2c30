"""Classic SPSA, block-corrected SPSA and SPSA with centred cautious weight decay.

All three share the Fishtest gain schedule (:mod:`.schedules`) and probe with
``c_k`` at the job's dispatch iteration ``k0 = iter_local``. For a report of
``N`` pairs with total result ``S`` and flip ``f`` (maximising Elo)::

    spsa        theta <- clip(theta + (a_k0 / c_k0) * S * f)
    spsa-block  theta <- clip(theta + mean_gain * S * f),
                mean_gain = (1/N) * sum_{k=k0}^{k0+N-1} a_k / c_k
    spsa-cwd    step  = (a_k0 / c_k0) * S * f,   delta = theta - theta_start
                mask  = (step * delta <= 0)      # decay only where it agrees
                theta <- clip(theta + step - lambda * r_k0 * delta * mask)

``spsa-block`` equals ``N`` textbook micro-steps with the mean signal ``S/N``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers.base import Optimizer, Report, hyperparameter
from spsa_bench.optimizers.gains import GainSchedule


@dataclass(frozen=True)
class SpsaHyper:
    A: float = hyperparameter(
        5000.0, "stability offset of the gain schedule a_k = a / (A + k)**alpha", minimum=0.0
    )
    alpha: float = hyperparameter(0.602, "decay exponent of the gain a_k", minimum=0.0, maximum=2.0)
    gamma: float = hyperparameter(
        0.101, "decay exponent of the perturbation c_k = c / k**gamma", minimum=0.0, maximum=1.0
    )
    r_end: float = hyperparameter(
        0.002,
        "phi-space learning rate at the end of the run (a_end = r_end * c_end**2)",
        minimum=0.0,
    )


@dataclass(frozen=True)
class SpsaCwdHyper(SpsaHyper):
    lambda_cwd: float = hyperparameter(
        0.0,
        "cautious weight decay strength (decay towards theta_start, scaled by r_k)",
        minimum=0.0,
    )


class SpsaState(NamedTuple):
    theta: np.ndarray  # (seed, param)


def _schedule(view: DeveloperView, hyper: SpsaHyper) -> GainSchedule:
    return GainSchedule.fishtest(
        view.c_dev, hyper.r_end, hyper.A, hyper.alpha, hyper.gamma, view.num_pairs
    )


def _common(view: DeveloperView, schedule: GainSchedule):
    def init(n_seeds: int) -> SpsaState:
        return SpsaState(theta=np.tile(view.theta_start, (n_seeds, 1)))

    def export(state: SpsaState) -> np.ndarray:
        return state.theta

    return init, schedule.c_k, export


def _classic_step(schedule: GainSchedule, report: Report) -> np.ndarray:
    """``(a_k0 / c_k0) * S * flip``, with ``a_k0 / c_k0 = (a / c) * k0**gamma / (A + k0)**alpha``.

    (``report.c`` is ``c_k0`` by construction: the same schedule at the same ``k0``.)
    """
    per_seed = schedule.gain_shape(report.iter_local) * report.signal
    step = per_seed[:, None] * report.flip
    step *= schedule.gain_scale_like(step)
    return step


def build_spsa(view: DeveloperView, hyper: SpsaHyper) -> Optimizer:
    schedule = _schedule(view, hyper)
    init, perturbation, export = _common(view, schedule)

    def update(state: SpsaState, report: Report) -> SpsaState:
        return SpsaState(theta=view.clip(state.theta + _classic_step(schedule, report)))

    return Optimizer("spsa", init, perturbation, update, export)


def build_spsa_block(view: DeveloperView, hyper: SpsaHyper) -> Optimizer:
    schedule = _schedule(view, hyper)
    init, perturbation, export = _common(view, schedule)
    # cumulative_gain[k] = sum_{i=1..k} k**gamma / (A + k)**alpha; a report never
    # reaches past micro-iteration num_pairs, but stay safe for any counter.
    last = 2 * view.num_pairs + 2
    cumulative_gain = np.concatenate(
        ([0.0], np.cumsum(schedule.gain_shape(np.arange(1, last + 1))))
    )
    gain_scale = schedule.gain_scale  # (param,)

    def update(state: SpsaState, report: Report) -> SpsaState:
        first = report.iter_local.astype(np.int64)
        n = report.n_pairs.astype(np.int64)
        if np.any(first + n - 1 > last):
            raise ValueError("spsa-block: report reaches past the precomputed gain table")
        mean_shape = (cumulative_gain[first + n - 1] - cumulative_gain[first - 1]) / n
        step = gain_scale[None, :] * (mean_shape * report.signal)[:, None] * report.flip
        return SpsaState(theta=view.clip(state.theta + step))

    return Optimizer("spsa-block", init, perturbation, update, export)


def build_spsa_cwd(view: DeveloperView, hyper: SpsaCwdHyper) -> Optimizer:
    schedule = _schedule(view, hyper)
    init, perturbation, export = _common(view, schedule)

    def update(state: SpsaState, report: Report) -> SpsaState:
        step = _classic_step(schedule, report)
        delta = state.theta - view.theta_start
        mask = step * delta <= 0.0
        decay = (hyper.lambda_cwd * schedule.r_k(report.iter_local))[:, None] * np.where(
            mask, delta, 0.0
        )
        return SpsaState(theta=view.clip(state.theta + step - decay))

    return Optimizer("spsa-cwd", init, perturbation, update, export)
