"""OpenBench's SPSA (AndyGrant/OpenBench; the rules with their files: docs/frameworks.md).

With ``I = iterations = num_pairs // pairs_per`` (one iteration per ``pairs_per``
game pairs) and per parameter ``c_end``, ``r_end`` (``OpenBench/spsa_utils.py``,
``create_spsa_run``)::

    c = c_end * I**gamma          a = r_end * c_end**2 * (A_ratio * I + I)**alpha

At the hand-out of a job dispatched when ``K`` pairs had been reported
(``iter_local = K + 1``; ``spsa_workload_assignment_dict``'s
``iteration = 1 + games / (2 * pairs_per)``, a real number)::

    k   = 1 + K / pairs_per
    c_k = max(c / k**gamma, 0.5 if the parameter is an integer else 0)
    a_k = a / (A_ratio * I + k)**alpha            r_k = a_k / c_k**2

and the report's update (the client's ``delta = r * c * (W - L) * flip``, the
server's clip; ``Client/worker.py``, ``OpenBench/utils.py``)::

    theta <- clip(theta + r_k * c_k * S * flip) = clip(theta + (a_k / c_k) * S * flip)

``S`` the report's total result of the plus (dev) engine. The ``c >= 0.5`` floor
raises the probe of an integer parameter and lowers its step. How the engines round
the probes is the world's (``rounding: coupled`` is OpenBench's), not the
optimizer's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers.base import Optimizer, Report, check_choices, hyperparameter

#: OpenBench's floor on an integer parameter's c_k (``spsa_workload_assignment_dict``).
INTEGER_C_FLOOR = 0.5
ITERATION_COUNTERS = ("run", "arrival", "dispatch")


@dataclass(frozen=True)
class OpenBenchHyper:
    A_ratio: float = hyperparameter(
        0.1, "A = A_ratio * iterations (OpenBench's form default 0.1)", minimum=0.0
    )
    alpha: float = hyperparameter(
        0.602, "decay exponent of a_k (form default 0.602)", minimum=0.0, maximum=2.0
    )
    gamma: float = hyperparameter(
        0.101, "decay exponent of c_k (form default 0.101)", minimum=0.0, maximum=1.0
    )
    pairs_per: int = hyperparameter(
        8,
        "game pairs per iteration and per workload (form default 8): iterations = "
        "num_pairs // pairs_per, the iteration k = 1 + reported pairs / pairs_per",
        kind="integer",
        minimum=1,
    )
    r_end: float = hyperparameter(
        0.002,
        "learning rate at the end of the run (a_end = r_end * c_end**2); a scenario's "
        "per-parameter r_end (a parameter block) takes its place",
        minimum=0.0,
    )
    c_floor: float = hyperparameter(
        INTEGER_C_FLOOR,
        "smallest c_k of an integer parameter (OpenBench: 0.5); the step follows the "
        "raised c_k as r_k = a_k / c_k**2 is computed from it; 0 = off",
        minimum=0.0,
    )
    iteration_counter: str = hyperparameter(
        "run",
        "counter of the reported pairs K in k = 1 + K / pairs_per: run = the "
        "configuration's iteration_counter; arrival = pairs reported before the "
        "hand-out (OpenBench's Test.games); dispatch = pairs handed out before it",
        kind="string",
        enum=ITERATION_COUNTERS,
    )

    def __post_init__(self) -> None:
        check_choices(self)


class OpenBenchState(NamedTuple):
    theta: np.ndarray  # (seed, param)


def iterations(num_pairs: int, pairs_per: int) -> int:
    """OpenBench's ``iterations`` for a budget of ``num_pairs`` pairs (at least 1)."""
    return max(1, int(num_pairs) // int(pairs_per))


def build_spsa_openbench(view: DeveloperView, hyper: OpenBenchHyper) -> Optimizer:
    total = float(iterations(view.num_pairs, hyper.pairs_per))
    r_end = hyper.r_end if view.r_end is None else view.r_end
    c_end = np.asarray(view.c_dev, dtype=np.float64)
    c = c_end * total**hyper.gamma  # (param,)
    a = (
        np.asarray(r_end, dtype=np.float64)
        * c_end**2
        * (hyper.A_ratio * total + total) ** hyper.alpha
    )
    a = np.broadcast_to(a, c.shape)
    floor = np.where(view.integer, float(hyper.c_floor), 0.0)  # (param,)
    offset = hyper.A_ratio * total
    per = float(hyper.pairs_per)

    def k_of(iter_local: np.ndarray) -> np.ndarray:
        """``k = 1 + K / pairs_per`` from ``iter_local = K + 1``, ``(seed,)``."""
        return 1.0 + (np.asarray(iter_local, dtype=np.float64) - 1.0) / per

    def init(n_seeds: int) -> OpenBenchState:
        return OpenBenchState(theta=np.tile(view.theta_start, (n_seeds, 1)))

    def perturbation(iter_local: np.ndarray) -> np.ndarray:
        k = k_of(iter_local)
        return np.maximum(c[None, :] / (k**hyper.gamma)[:, None], floor[None, :])

    def update(state: OpenBenchState, report: Report) -> OpenBenchState:
        k = k_of(report.iter_local)
        a_k = a[None, :] / ((offset + k) ** hyper.alpha)[:, None]
        c_k = perturbation(report.iter_local)
        step = (a_k / c_k) * report.signal[:, None] * report.flip
        return OpenBenchState(theta=view.clip(state.theta + step))

    def export(state: OpenBenchState) -> np.ndarray:
        return state.theta

    return Optimizer("spsa-openbench", init, perturbation, update, export)
