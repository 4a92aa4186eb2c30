"""The tuning protocol (issue 16, item 2): choose a sweep's setting on seeds the
benchmark never reports, then report the choice on the benchmark's seeds.

A hyperparameter sweep (docs/benchmark.md, "Sweeps") expands one configured arm
into several grid arms. Reporting the best of them on the very seeds it was picked
on flatters the optimizer (a winner's curse). The protocol holds the test seeds
out of the choice::

    tuning:
      seeds: {first: 1000, count: 20}   # the tuning seeds, disjoint from `seeds`
      criterion: median                 # median final Elo loss (the only criterion)
      family: [calibrated, mixed]       # scenarios of the robust choice (default: all)

:func:`run_tuning` replays every swept arm on every scenario and batch mode of the
grid at the tuning seeds only, and returns their final Elo loss (``spsa-bench tune``).
The workflow gets the same numbers cheaper: each sweep job replays its share of the
tuning seeds as extra rows of its own replay
(:func:`spsa_bench.engine.simulate.simulate_run_held_out`), and
:func:`gather_tuning` assembles the shares into run_tuning's dataset.
:func:`spsa_bench.analysis.tuning.choose` picks, per sweep and batch mode, the
*oracle* setting of each scenario (smallest median final loss on the tuning seeds)
and the *robust* setting of the family (smallest mean over the family's scenarios
of its median divided by that scenario's best median); it reads the tuning
dataset only, so the test seeds cannot sway the choice.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.config.records import Config, OptimizerArm
from spsa_bench.config.sections.tuning import TuningSection
from spsa_bench.studies.base import study_dataset

if TYPE_CHECKING:
    import xarray as xr

CRITERION_TEXT = {
    "median": "median final Elo loss over the tuning seeds",
}
ROBUST_TEXT = (
    "robust: the setting minimising the mean, over the family's scenarios, of its median "
    "final Elo loss divided by the best median of that scenario (1 = best everywhere)"
)
HELD_OUT_TEXT = (
    "the settings are chosen on the tuning seeds only; the losses reported are on the "
    "benchmark's seeds, which the choice never saw"
)


def _ratio_to_best(median: np.ndarray, best: float) -> np.ndarray:
    """``median / best``; where the best is 0 (or not finite), 1 for the best and inf else."""
    if best > 0 and np.isfinite(best):
        return median / best
    return np.where(median == best, 1.0, np.inf)


def pick_settings(medians: np.ndarray, family: Sequence[int]) -> tuple[np.ndarray, int, np.ndarray]:
    """The oracle and robust picks among the settings of one sweep.

    ``medians`` is ``(setting, scenario)``: each setting's median final loss over the
    tuning seeds (``inf`` for a run without a finite loss); ``family`` the columns of
    the robust choice. Returns ``(oracle, robust, score)``::

        oracle[s] = argmin_k medians[k, s]                       (per scenario)
        score[k]  = mean_{s in family} medians[k, s] / min_j medians[j, s]
        robust    = argmin_k score[k]

    ties going to the first setting.
    """
    medians = np.asarray(medians, dtype=np.float64)
    score = np.mean([_ratio_to_best(medians[:, s], medians[:, s].min()) for s in family], axis=0)
    return np.argmin(medians, axis=0), int(np.argmin(score)), score


def run_tuning(
    config: Config, settings: TuningSection, progress: Callable[[str], None] | None = None
) -> xr.Dataset:
    """Final Elo loss of every swept arm on every scenario and batch mode of the grid,
    at the tuning seeds only: dims ``(arm, scenario, batch_mode, seed)``, with each
    arm's sweep and swept values as coordinates along ``arm``."""
    from spsa_bench.engine.simulate import (
        make_noise,
        make_problem,
        make_schedule,
        replay_arm,
        scenario_rounding,
    )

    seeds = np.asarray(list(settings.seeds), dtype=np.int64)
    arms, scenarios, modes = settings.arms, settings.scenarios, settings.batch_modes
    loss = np.full((len(arms), len(scenarios), len(modes), seeds.size), np.nan)
    schedules = [make_schedule(config, mode, seeds) for mode in modes]
    for s, scenario in enumerate(scenarios):
        problem = make_problem(config, scenario, seeds)
        noise, rounding = make_noise(config, scenario), scenario_rounding(config, scenario)
        for m, (mode, schedule) in enumerate(zip(modes, schedules, strict=True)):
            for a, arm in enumerate(arms):
                if progress is not None:
                    progress(f"{arm.name} on {scenario} / {mode.name}")
                run = replay_arm(config, arm, problem, schedule, noise=noise, rounding=rounding)
                loss[a, s, m] = problem.bowl.elo_loss(run.theta[:, -1])
    return _tuning_dataset(config, settings, seeds, loss)


def tuning_part(batch_mode: str, scenario: str, seeds: Sequence[int], losses: dict) -> dict:
    """One sweep job's share of the tuning runs, as :func:`gather_tuning` reads it:
    ``{batch_mode, scenario, seeds, final_elo_loss: {arm: [loss per seed]}}`` (plain
    JSON: a float's shortest repr reads back to the same double, NaN and infinity as
    ``NaN`` and ``Infinity``)."""
    return {
        "batch_mode": batch_mode,
        "scenario": scenario,
        "seeds": [int(s) for s in seeds],
        "final_elo_loss": {arm: [float(v) for v in values] for arm, values in losses.items()},
    }


def gather_tuning(
    config: Config, settings: TuningSection, parts: Sequence[tuple[str, dict]]
) -> xr.Dataset:
    """:func:`run_tuning`'s dataset from the sweep jobs' shares (``(file name,
    tuning_part)`` pairs; the workflow replays the tuning seeds as extra rows of the
    sweep jobs' replays, whose losses equal run_tuning's bit for bit). Every (arm,
    scenario, batch mode, tuning seed) must come exactly once; a part naming anything
    else is refused (``ValueError`` naming the file)."""
    seeds = np.asarray(list(settings.seeds), dtype=np.int64)
    arms = {arm.name: a for a, arm in enumerate(settings.arms)}
    scenarios = {name: s for s, name in enumerate(settings.scenarios)}
    modes = {mode.name: m for m, mode in enumerate(settings.batch_modes)}
    rows = {int(seed): i for i, seed in enumerate(seeds)}
    loss = np.full((len(arms), len(scenarios), len(modes), seeds.size), np.nan)
    filled = np.zeros(loss.shape, dtype=bool)
    for name, part in parts:
        try:
            s, m = scenarios[part["scenario"]], modes[part["batch_mode"]]
            columns = [rows[int(seed)] for seed in part["seeds"]]
            if len(set(columns)) != len(columns):
                raise ValueError("a tuning seed is listed twice")
            for arm, values in part["final_elo_loss"].items():
                a = arms[arm]
                if len(values) != len(columns):
                    raise ValueError(f"{len(values)} losses of {arm} for {len(columns)} seeds")
                if filled[a, s, m, columns].any():
                    raise ValueError(f"{arm} has a tuning seed a second time")
                loss[a, s, m, columns] = np.asarray(values, dtype=np.float64)
                filled[a, s, m, columns] = True
        except KeyError as error:
            raise ValueError(f"{name}: not a tuning run of this configuration ({error})") from None
        except (TypeError, ValueError) as error:
            raise ValueError(f"{name}: {' '.join(str(error).split())}") from None
    if not filled.all():
        a, s, m, i = np.argwhere(~filled)[0]
        raise ValueError(
            f"no tuning run of {settings.arms[a].name} on {settings.scenarios[s]} / "
            f"{settings.batch_modes[m].name} at seed {seeds[i]} ({int((~filled).sum())} missing)"
        )
    return _tuning_dataset(config, settings, seeds, loss)


def swept_coords(arms: Sequence[OptimizerArm], dim: str = "arm") -> dict:
    """One coordinate along ``dim`` (one arm each) per swept hyperparameter
    (``swept_<name>``): the arm's value, NaN (or empty text) for arms whose sweep does
    not vary it."""
    keys = list(dict.fromkeys(key for arm in arms for key, _ in arm.swept))
    coords = {}
    for key in keys:
        values = [dict(arm.swept).get(key) for arm in arms]
        text = any(isinstance(v, str) for v in values)
        data = (
            np.array(["" if v is None else str(v) for v in values], dtype=object)
            if text
            else np.array([np.nan if v is None else float(v) for v in values])
        )
        coords[f"swept_{key}"] = (dim, data, {"long_name": f"the arm's swept {key}"})
    return coords


def setting_label(swept) -> str:
    """``key=value`` of an arm's swept hyperparameters, e.g. ``r_end=0.002``."""
    return ", ".join(f"{key}={value:g}" if not isinstance(value, str) else f"{key}={value}"
                     for key, value in swept)  # fmt: skip


def _tuning_dataset(config: Config, settings: TuningSection, seeds, loss) -> xr.Dataset:
    arms = settings.arms
    coords = {
        "arm": ("arm", np.array([a.name for a in arms], dtype=object), {"long_name": "swept arm"}),
        "sweep": (
            "arm",
            np.array([a.sweep for a in arms], dtype=object),
            {"long_name": "the configured arm the sweep expanded"},
        ),
        "kind": ("arm", np.array([a.kind for a in arms], dtype=object), {"long_name": "kind"}),
        "setting": (
            "arm",
            np.array([setting_label(a.swept) for a in arms], dtype=object),
            {"long_name": "the arm's swept hyperparameters"},
        ),
        **swept_coords(arms),
        "scenario": ("scenario", np.array(settings.scenarios, dtype=object)),
        "batch_mode": (
            "batch_mode",
            np.array([mode.name for mode in settings.batch_modes], dtype=object),
        ),
        "seed": ("seed", seeds, {"long_name": "tuning seed (disjoint from the test seeds)"}),
    }
    data_vars = {
        "final_elo_loss": (
            ("arm", "scenario", "batch_mode", "seed"),
            loss,
            {
                "long_name": "true Elo loss at the end of the budget, on the tuning seeds",
                "units": "Elo",
            },
        )  # fmt: skip
    }
    attrs = {
        "title": "spsa-bench tuning runs (held-out tuning seeds)",
        "criterion": settings.criterion,
        "criterion_text": CRITERION_TEXT[settings.criterion],
        "robust_text": ROBUST_TEXT,
        "held_out": HELD_OUT_TEXT,
        "family": ", ".join(settings.family),
        "tuning_seeds_first": settings.seeds.start,
        "tuning_seeds_count": len(settings.seeds),
        "test_seeds_first": settings.test_seeds.start,
        "test_seeds_count": len(settings.test_seeds),
        "baseline_sweep": settings.baseline_sweep,
        "baseline_swept": int(settings.baseline_swept),
        "num_pairs": config.num_pairs,
    }
    return study_dataset(config, data_vars, coords, attrs)


def print_progress(message: str) -> None:
    print(f"tuning: {message}", file=sys.stderr, flush=True)
