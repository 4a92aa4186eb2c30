"""SPSA with heavy-ball momentum, an example optimizer plugin for spsa-bench.

For a report of ``N`` pairs with total result ``S``, Rademacher flip ``f`` and
dispatch iteration ``k0`` (the Fishtest gains of spsa: ``a_k = a / (A + k)**alpha``,
``c_k = c / k**gamma``)::

    g_hat = S * f / c_k0                 # the report's gradient estimate
    m     <- beta * m + g_hat            # heavy-ball velocity, m_0 = 0
    theta <- clip(theta + a_k0 * m)

With ``beta = 0`` this is classic spsa; a steady gradient is amplified by
``1 / (1 - beta)``. State arrays are ``(seed, param)``; the optimizer is built
from the developer view and its hyperparameters only, like every optimizer.
No micro (per-pair) reference is given, so ``spsa-bench validate`` skips the
kind with a one-line notice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from spsa_bench.optimizers import Optimizer, OptimizerSpec, Report
from spsa_bench.optimizers.base import hyperparameter
from spsa_bench.optimizers.gains import GainSchedule
from spsa_bench.optimizers.spsa import SpsaHyper

KIND = "spsa-momentum"


@dataclass(frozen=True)
class MomentumHyper(SpsaHyper):
    beta: float = hyperparameter(
        0.5,
        "heavy-ball momentum: m <- beta * m + g_hat (0 = classic spsa)",
        minimum=0.0,
        exclusive_maximum=1.0,
    )


class MomentumState(NamedTuple):
    theta: np.ndarray  # (seed, param) the probed point
    velocity: np.ndarray  # (seed, param) m, in gradient units (theta / c)


def build_momentum(view, hyper: MomentumHyper) -> Optimizer:
    """The optimizer from the developer view (start, bounds, c_dev, budget) and ``hyper``."""
    gains = GainSchedule.fishtest(
        view.c_dev, hyper.r_end, hyper.A, hyper.alpha, hyper.gamma, view.num_pairs
    )
    start = np.asarray(view.theta_start, dtype=np.float64)

    def init(n_seeds: int) -> MomentumState:
        theta = np.tile(start, (n_seeds, 1))
        return MomentumState(theta=theta, velocity=np.zeros_like(theta))

    def update(state: MomentumState, report: Report) -> MomentumState:
        g_hat = report.signal[:, None] * report.flip / report.c
        velocity = hyper.beta * state.velocity + g_hat
        theta = view.clip(state.theta + gains.a_k(report.iter_local) * velocity)
        return MomentumState(theta=theta, velocity=velocity)

    def export(state: MomentumState) -> np.ndarray:
        return state.theta

    return Optimizer(KIND, init, gains.c_k, update, export)


def row() -> OptimizerSpec:
    """The registry row spsa-bench loads through the ``spsa_bench.optimizers`` entry point."""
    return OptimizerSpec(
        kind=KIND,
        family="spsa",
        description="SPSA with heavy-ball momentum: m <- beta m + S f / c_k0, theta += a_k0 m",
        hyper=MomentumHyper,
        build=build_momentum,
        micro=None,  # no per-pair reference: validation skips this kind with a notice
    )
