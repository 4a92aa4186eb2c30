"""``spsa-autoselect``: SPSA with the hyperparameters Fishtest's Autoselect picks.

Autoselect is the "autoselect" checkbox of Fishtest's new-test form (fishtest #719,
vdbergh's design in fishtest #535 and ``vdbergh/spsa_simul``); its rules are in
``server/fishtest/static/js/spsa_new.js`` (``spsaCompute``, ``drawRatio``,
``chi2_95``) and the form's ``spsaWork`` in ``templates/tests_run.html.j2``. Read
there, restated here in our own terms:

- constant gains: ``A = alpha = gamma = 0``, so ``c_k = c_end`` and ``R_k = r``;
- ``c_end = c_ratio * (max - min)`` per parameter (``c_ratio = 1/6``), from the
  developer view's bounds;
- one ``r`` for every parameter from an Elo precision target:
  ``r = 8 * precision / (C * chi2_95(n) * (1 - draw_ratio))`` with
  ``C = 800 / ln 10``, ``n`` the number of parameters and ``chi2_95`` the 95%
  quantile of the chi-squared law (the JS file tabulates it for ``n <= 99`` and uses
  the Wilson-Hilferty approximation above; so does :func:`chi2_95`);
- the draw ratio from the time control: ``logistic(0.22 * ln(t) + 1.35)`` with
  ``t`` = base seconds / 68 moves + increment, for the form's STC 10+0.1, LTC 60+0.6
  and VLTC 180+1.8;
- the games asked for: each parameter's relaxation time
  ``lambda = -C / (2 * r * c**2 * H)`` with ``H = -2 * elo_half_range / ((max - min) / 2)**2``
  (``elo_half_range = 2``: the Elo lost half a range from the optimum), times ``lambda_ratio = 3``,
  the largest over the parameters, rounded to the form's step of 1000 games
  (at least 1000).

The form writes ``c`` with two decimals and ``r`` with five; this kind uses the
unrounded values. The run itself plays the configuration's ``num_pairs`` whatever
Autoselect would ask for: ``Optimizer.info`` carries ``autoselect_games`` (and
``autoselect_r``, ``autoselect_draw_ratio``) for the record. The Fishtest options of
:mod:`.spsa` that make sense with constant gains apply as there (``c_scale``,
``r_scale``, ``delta``, ``min_c``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from spsa_bench.model.developer import DeveloperView
from spsa_bench.model.time_control import MOVES_PER_GAME, TIME_CONTROLS
from spsa_bench.optimizers.base import Optimizer, check_choices, hyperparameter
from spsa_bench.optimizers.gains import GainSchedule
from spsa_bench.optimizers.spsa import (
    c_scale_field,
    delta_field,
    min_c_field,
    r_scale_field,
    spsa_from_schedule,
)

#: Elo per unit of logistic score slope, 800 / ln 10.
ELO_SCALE = 800.0 / math.log(10.0)
# The new-test form's time controls (base seconds, increment) by name and the moves per
# game it assumes when it turns a time control into seconds per move: model.time_control.
#: The form's games constraint: at least 1000, a multiple of 1000.
GAMES_STEP = 1000


def draw_ratio(time_control: str) -> float:
    """The "virtual" draw ratio Autoselect assumes for ``time_control`` (UHO book fit)."""
    base, increment = TIME_CONTROLS[time_control]
    seconds_per_move = base / MOVES_PER_GAME + increment
    return 1.0 / (1.0 + math.exp(-(0.22 * math.log(seconds_per_move) + 1.35)))


def chi2_95(df: int) -> float:
    """95% quantile of chi-squared with ``df`` degrees of freedom, as Autoselect takes it:
    exact up to 99, the Wilson-Hilferty approximation beyond."""
    if df <= 99:
        from scipy.stats import chi2  # here: importing the optimizers stays light

        return float(chi2.ppf(0.95, df))
    t = 2.0 / (9.0 * df)
    return df * (1.6448536269514722 * math.sqrt(t) + 1.0 - t) ** 3


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


@dataclass(frozen=True)
class SpsaAutoselectHyper:
    time_control: str = hyperparameter(
        "STC",
        "time control whose draw ratio enters r (Fishtest's STC 10+0.1, LTC 60+0.6, "
        "VLTC 180+1.8; spsa_new.js drawRatio)",
        kind="string",
        enum=tuple(TIME_CONTROLS),
    )
    precision: float = hyperparameter(
        0.5,
        "Elo precision target of r (spsa_new.js default 0.5)",
        exclusive_minimum=0.0,
    )
    elo_half_range: float = hyperparameter(
        2.0,
        "Elo a parameter is assumed to lose half a range from its optimum; sets the games "
        "count only (spsa_new.js default 2)",
        exclusive_minimum=0.0,
    )
    c_ratio: float = hyperparameter(
        1.0 / 6.0,
        "c_end as a fraction of the parameter's range max - min (spsa_new.js default 1/6)",
        exclusive_minimum=0.0,
    )
    lambda_ratio: float = hyperparameter(
        3.0,
        "games asked for, in relaxation times of the slowest parameter (spsa_new.js default 3)",
        exclusive_minimum=0.0,
    )
    c_scale: float = c_scale_field()
    r_scale: float = r_scale_field("Autoselect's r (the games count uses the unscaled r)")
    delta: str = delta_field()
    min_c: float = min_c_field()

    def __post_init__(self) -> None:
        check_choices(self)


def autoselect(view: DeveloperView, hyper: SpsaAutoselectHyper) -> dict:
    """Autoselect's choices for ``view``: ``c_end`` (param,), ``r``, ``draw_ratio`` and
    ``games`` (before ``c_scale``/``r_scale``)."""
    span = view.theta_max - view.theta_min
    if np.any(span <= 0.0):
        raise ValueError("spsa-autoselect needs max > min for every parameter (c_end = range/6)")
    ratio = draw_ratio(hyper.time_control)
    r = 8.0 * hyper.precision / (ELO_SCALE * chi2_95(view.num_params) * (1.0 - ratio))
    c_end = hyper.c_ratio * span
    curvature = -2.0 * hyper.elo_half_range / (span / 2.0) ** 2
    relaxation = -ELO_SCALE / (2.0 * r * c_end**2 * curvature)
    asked = max(_round_half_up(hyper.lambda_ratio * x) for x in relaxation)
    games = max(GAMES_STEP, GAMES_STEP * _round_half_up(asked / GAMES_STEP))
    return {"c_end": c_end, "r": r, "draw_ratio": ratio, "games": games}


def autoselect_schedule(view: DeveloperView, hyper: SpsaAutoselectHyper) -> GainSchedule:
    """The constant gains the arm plays: Autoselect's ``c_end`` and ``r`` times
    ``c_scale`` and ``r_scale``, ``A = alpha = gamma = 0``."""
    choice = autoselect(view, hyper)
    return GainSchedule.fishtest(
        choice["c_end"] * hyper.c_scale,
        choice["r"] * hyper.r_scale,
        0.0,
        0.0,
        0.0,
        view.num_pairs,
    )


def build_spsa_autoselect(view: DeveloperView, hyper: SpsaAutoselectHyper) -> Optimizer:
    choice = autoselect(view, hyper)
    schedule = autoselect_schedule(view, hyper)
    optimizer = spsa_from_schedule(view, hyper, schedule, "spsa-autoselect")
    info = {
        "autoselect_games": float(choice["games"]),
        "autoselect_r": float(choice["r"]),
        "autoselect_draw_ratio": float(choice["draw_ratio"]),
    }
    return dataclasses.replace(optimizer, info=info)
