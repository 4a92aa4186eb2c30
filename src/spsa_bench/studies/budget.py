"""The budget study: final Elo loss against the budget, swept arms tuned per budget.

A decaying Fishtest schedule depends on the budget ``N`` (``A = A_ratio N``; ``c_k``
and ``a_k`` reach ``c_end`` and ``a_end = r_end c_end**2`` at ``k = N``), so the
result of a budget cannot be read off a longer run: each budget is its own run
from the start. The study runs the configuration's ``budget_study`` arms at every
budget on its scenarios::

    budget_study:
      num_pairs: [10000, 30000, 100000, 300000]  # or games: [...]; at least two
      batch_mode: sync
      scenarios: [mixed, tune-16-stc]
      tuning_seeds: {first: 2000, count: 20}     # disjoint from `seeds`
      baseline: spsa-decay                       # default: the first arm
      arms:
        spsa: null                               # a config arm, as configured
        spsa-decay: {kind: spsa, r_scale: {log_range: {min: 0.03, max: 30, num: 7}}}
        spsa-constant: {kind: spsa, A: 0, alpha: 0, gamma: 0, r_scale: [0.1, 1, 10]}

An arm given as a mapping runs in this study only; a swept hyperparameter (a list
or ``{log_range: ...}``, expanded as a grid arm's sweep) is **tuned per budget**.
At each budget every setting runs on the tuning seeds, and each swept arm's setting
is chosen from those runs alone (:func:`choose_settings`, the tuning protocol's
rule, :func:`spsa_bench.studies.tuning.pick_settings`)::

    oracle[s] = the setting with the smallest median final loss in scenario s
    robust    = the setting minimising mean_s median[k, s] / min_j median[j, s]

Then the chosen settings run on the test seeds (the configuration's ``seeds``),
which the choice never sees. Every arm at one seed and budget shares the
schedule, the flips and the match draws (common random numbers), so differences
between arms are paired.

Constant gain. With ``alpha = 0`` the Fishtest gain is ``a_k = a / (A + k)**0 = a
= r_end c_end**2 (A + N)**0 = r_end c_end**2`` for every ``k``, whatever ``A``;
with ``gamma = 0`` the probe is ``c_k = c_end``. Both zero (``A = 0`` too) is what
Fishtest's Autoselect runs (``optimizers/autoselect.py``): the step ``(a_k / c_k)
S flip = r_end c_end S flip`` and the phi-space rate ``r_k = a_k / c_k**2 =
r_end`` are constant. ``alpha = 0`` with ``gamma > 0`` would not be: the step
``a / c_k`` grows like ``k**gamma``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.config.grid import resolve_grid
from spsa_bench.config.records import Config, ConfigError, OptimizerArm
from spsa_bench.config.sections import SECTION_KEYS
from spsa_bench.config.sections.budget import BudgetSection
from spsa_bench.config.sections.fields import seed_overlap
from spsa_bench.studies.base import Output, Scope, Study, start_gap, study_dataset
from spsa_bench.studies.tuning import pick_settings, setting_label, swept_coords

if TYPE_CHECKING:
    import xarray as xr

TUNINGS = ("oracle", "robust")


def budget_config(config: Config, num_pairs: int) -> Config:
    """``config`` at a budget of ``num_pairs`` pairs, as if the file said so (its optional
    sections left out; the section's parse checked that every budget resolves)."""
    raw = {
        key: copy.deepcopy(value)
        for key, value in config.resolved.items()
        if key not in SECTION_KEYS and key != "games"
    }
    raw["num_pairs"] = int(num_pairs)
    return resolve_grid(raw)


def choose_settings(study: BudgetSection, tuning_loss: np.ndarray) -> np.ndarray:
    """Each arm's oracle and robust setting at one budget, ``(arm, tuning, scenario)``
    indices into :attr:`BudgetStudy.settings`, from ``tuning_loss`` alone: the final
    losses ``(setting, scenario, tuning seed)`` at that budget (an arm with one setting
    takes it). The robust family is every scenario of the study."""
    chosen = np.zeros((len(study.arms), len(TUNINGS), len(study.scenarios)), dtype=np.int64)
    owners = study.owners
    for a in range(len(study.arms)):
        index = np.flatnonzero(owners == a)
        if index.size == 1:
            chosen[a] = index[0]
            continue
        medians = np.median(tuning_loss[index], axis=-1)
        medians[np.isnan(medians)] = np.inf
        oracle, robust, _ = pick_settings(medians, range(len(study.scenarios)))
        chosen[a, 0] = index[oracle]
        chosen[a, 1] = index[robust]
    return chosen


def distinct_runs(arms: Sequence[OptimizerArm]) -> dict[tuple, OptimizerArm]:
    """The arms that run differently: ``{(kind, hyperparameters): first such arm}``. At one
    seed, arms of equal kind and hyperparameters share every random number, so their
    runs are equal and one replay serves them all."""
    distinct: dict[tuple, OptimizerArm] = {}
    for arm in arms:
        distinct.setdefault((arm.kind, arm.hyper), arm)
    return distinct


def _final_losses(budget: Config, scenario: str, arms, schedule, seeds) -> np.ndarray:
    """The final true Elo loss ``(arm, seed)`` of each arm on one scenario and schedule
    (one replay per :func:`distinct_runs` entry)."""
    from spsa_bench.engine.simulate import make_noise, make_problem, replay_arm, scenario_rounding

    problem = make_problem(budget, scenario, seeds)
    noise, rounding = make_noise(budget, scenario), scenario_rounding(budget, scenario)
    losses = {}
    for key, arm in distinct_runs(arms).items():
        run = replay_arm(budget, arm, problem, schedule, noise=noise, rounding=rounding)
        losses[key] = problem.bowl.elo_loss(run.theta[:, -1])
    return np.stack([losses[(arm.kind, arm.hyper)] for arm in arms])


#: Seed x pair units one replay of the study holds at most: a larger set of seeds runs
#: in chunks (a seed's result is the same alone or beside others), which bounds the
#: study's memory (about 7 bytes a seed x pair, docs/cluster.md) at any seeds and budget.
MAX_SEED_PAIRS = 30_000_000


def seeds_per_pass(num_pairs: int) -> int:
    """Seeds one replay of ``num_pairs`` pairs holds: :data:`MAX_SEED_PAIRS` /
    ``num_pairs``, at least one."""
    return max(1, MAX_SEED_PAIRS // num_pairs)


def seed_chunks(seeds: np.ndarray, num_pairs: int) -> list[tuple[slice, np.ndarray]]:
    """``(columns, seeds)`` chunks of ``seeds`` of at most :func:`seeds_per_pass` seeds."""
    size = seeds_per_pass(num_pairs)
    return [(slice(i, i + size), seeds[i : i + size]) for i in range(0, len(seeds), size)]


def _progress_seeds(chunk: np.ndarray, seeds: np.ndarray) -> str:
    if len(chunk) == len(seeds):
        return f"{len(seeds)}"
    return f"{len(chunk)} (of {len(seeds)})"


def _tuning_runs(budget: Config, study: BudgetSection, seeds, progress) -> np.ndarray:
    """Every setting on every scenario at the tuning seeds: ``(setting, scenario, seed)``."""
    from spsa_bench.engine.simulate import make_schedule

    out = np.empty((len(study.settings), len(study.scenarios), len(seeds)))
    for columns, chunk in seed_chunks(seeds, budget.num_pairs):
        schedule = make_schedule(budget, budget.batch_mode(study.batch_mode), chunk)
        for s, scenario in enumerate(study.scenarios):
            if progress is not None:
                runs = len(distinct_runs(study.settings))
                progress(f"{budget.num_pairs:,} pairs, {scenario}: {runs} settings on "
                         f"{_progress_seeds(chunk, seeds)} tuning seeds")  # fmt: skip
            out[:, s, columns] = _final_losses(budget, scenario, study.settings, schedule, chunk)
    return out


def _test_runs(budget: Config, study: BudgetSection, chosen, seeds, progress) -> np.ndarray:
    """Each arm's chosen settings on the test seeds: ``(arm, tuning, scenario, seed)``;
    a setting chosen twice (oracle and robust, or an unswept arm) runs once."""
    from spsa_bench.engine.simulate import make_schedule

    settings = study.settings
    out = np.empty((*chosen.shape, len(seeds)))
    for columns, chunk in seed_chunks(seeds, budget.num_pairs):
        schedule = make_schedule(budget, budget.batch_mode(study.batch_mode), chunk)
        for s, scenario in enumerate(study.scenarios):
            needed = list(dict.fromkeys(int(k) for k in chosen[:, :, s].ravel()))
            if progress is not None:
                runs = len(distinct_runs([settings[k] for k in needed]))
                progress(f"{budget.num_pairs:,} pairs, {scenario}: {runs} chosen settings on "
                         f"{_progress_seeds(chunk, seeds)} test seeds")  # fmt: skip
            arms = [settings[k] for k in needed]
            losses = _final_losses(budget, scenario, arms, schedule, chunk)
            for a, t in np.ndindex(*chosen.shape[:2]):
                out[a, t, s, columns] = losses[needed.index(int(chosen[a, t, s]))]
    return out


def _start_gap(config: Config, study: BudgetSection, seeds) -> np.ndarray:
    """The true Elo loss at the start, ``(scenario, seed)`` (the same at every budget)."""
    from spsa_bench.engine.simulate import make_problem

    return np.stack(
        [
            start_gap(make_problem(config, scenario, seeds), len(seeds))
            for scenario in study.scenarios
        ]
    )


def run_budget_study(
    config: Config,
    study: BudgetSection,
    seeds: Sequence[int],
    progress: Callable[[str], None] | None = None,
) -> xr.Dataset:
    """Final Elo loss of every arm at every budget on the test ``seeds``, each swept
    arm at the settings chosen on the tuning seeds at that budget (dims arm, tuning,
    budget, scenario, seed), with the tuning runs and the choices."""
    seeds = np.asarray(list(seeds), dtype=np.int64)
    tuning_seeds = np.asarray(list(study.tuning_seeds or ()), dtype=np.int64)
    n_budgets, n_scenarios = len(study.num_pairs), len(study.scenarios)
    tuning_loss = np.full((len(study.settings), n_budgets, n_scenarios, tuning_seeds.size), 0.0)
    chosen = np.zeros((len(study.arms), len(TUNINGS), n_budgets, n_scenarios), dtype=np.int64)
    loss = np.empty((len(study.arms), len(TUNINGS), n_budgets, n_scenarios, seeds.size))
    for b, num_pairs in enumerate(study.num_pairs):
        budget = budget_config(config, num_pairs)
        if tuning_seeds.size:
            tuning_loss[:, b] = _tuning_runs(budget, study, tuning_seeds, progress)
        chosen[:, :, b] = choose_settings(study, tuning_loss[:, b])
        loss[:, :, b] = _test_runs(budget, study, chosen[:, :, b], seeds, progress)
    start_gap = _start_gap(config, study, seeds)
    results = {"loss": loss, "chosen": chosen, "tuning_loss": tuning_loss, "start_gap": start_gap}
    return _study_dataset(config, study, seeds, tuning_seeds, results)


#: What ``choice`` says in the dataset and the table.
CHOICE_TEXT = (
    "a swept arm's setting is chosen at each budget from its runs on the tuning seeds only "
    "(oracle: the smallest median final Elo loss in the scenario; robust: the smallest mean, "
    "over the study's scenarios, of its median divided by that scenario's best median; ties "
    "to the first setting) and reported on the test seeds, which the choice never saw"
)
#: What ``assumption`` says in the dataset and the table.
ASSUMPTION = (
    "the groups scenarios' geometry, the truth prior of the tune scenarios (docs/fishtest.md) "
    "and each scenario's game-pair noise model (docs/noise.md) are modelling assumptions, not "
    "measurements"
)


def _setting_coords(study: BudgetSection) -> dict:
    settings = study.settings
    owner = [study.arms[a].name for a in study.owners]
    labels = [setting_label(s.swept) if s.sweep is not None else "as configured" for s in settings]
    return {
        "setting": ("setting", np.array([s.name for s in settings], dtype=object),
                    {"long_name": "a setting of an arm (a swept arm's expanded arm)"}),
        "setting_arm": ("setting", np.array(owner, dtype=object),
                        {"long_name": "the arm the setting belongs to"}),
        "setting_value": ("setting", np.array(labels, dtype=object),
                          {"long_name": "the setting's swept hyperparameters"}),
        **swept_coords(settings, "setting"),
    }  # fmt: skip


def _study_coords(study: BudgetSection, seeds, tuning_seeds) -> dict:
    budgets = np.array(study.num_pairs, dtype=np.int64)
    return {
        "arm": ("arm", np.array([arm.name for arm in study.arms], dtype=object),
                {"long_name": "optimizer arm"}),
        "kind": ("arm", np.array([arm.settings[0].kind for arm in study.arms], dtype=object),
                 {"long_name": "optimizer kind"}),
        "tuned": ("arm", np.array([int(arm.swept) for arm in study.arms], dtype=np.int64),
                  {"long_name": "1 when the arm is swept and tuned per budget", "units": "1"}),
        "tuning": ("tuning", np.array(TUNINGS, dtype=object),
                   {"long_name": "how the setting was chosen on the tuning seeds"}),
        "budget": ("budget", budgets, {"long_name": "budget of the run", "units": "pairs"}),
        "games": ("budget", 2 * budgets, {"long_name": "budget of the run", "units": "games"}),
        "scenario": ("scenario", np.array(study.scenarios, dtype=object),
                     {"long_name": "scenario"}),
        "seed": ("seed", seeds, {"long_name": "test seed"}),
        "tuning_seed": ("tuning_seed", tuning_seeds,
                        {"long_name": "tuning seed (disjoint from the test seeds)"}),
        **_setting_coords(study),
    }  # fmt: skip


def _study_dataset(config, study, seeds, tuning_seeds, results) -> xr.Dataset:
    cell = ("budget", "scenario")
    data_vars = {
        "final_elo_loss": (("arm", "tuning", *cell, "seed"), results["loss"],
                           {"long_name": "true Elo loss at the end of the budget, on the test "
                            "seeds, of the arm's chosen setting", "units": "Elo"}),
        "chosen_setting": (("arm", "tuning", *cell), results["chosen"],
                           {"long_name": "index along setting of the arm's chosen setting",
                            "units": "1"}),
        "tuning_final_elo_loss": (("setting", *cell, "tuning_seed"), results["tuning_loss"],
                                  {"long_name": "true Elo loss at the end of the budget, on "
                                   "the tuning seeds", "units": "Elo"}),
        "start_elo_gap": (("scenario", "seed"), results["start_gap"],
                          {"long_name": "true Elo loss at the start", "units": "Elo"}),
    }  # fmt: skip
    tuning = study.tuning_seeds or range(0)
    attrs = {
        "title": f"spsa-bench budget study: {', '.join(study.scenarios)} / {study.batch_mode}",
        "batch_mode": study.batch_mode,
        "baseline": study.baseline,
        "budget_key": study.budget_key,
        "level": 0.95,
        "choice": CHOICE_TEXT,
        "tuning_seeds_first": tuning.start,
        "tuning_seeds_count": len(tuning),
        "assumption": ASSUMPTION,
    }
    return study_dataset(config, data_vars, _study_coords(study, seeds, tuning_seeds), attrs)


def check_held_out(study: BudgetSection, chosen: range) -> None:
    """``--seeds`` may not reach into the tuning seeds: the test seeds stay held out."""
    shared = seed_overlap(chosen, study.tuning_seeds or range(0))
    if len(shared):
        raise ConfigError(
            f"--seeds = {chosen.start}-{chosen.stop - 1}: overlaps budget_study.tuning_seeds "
            f"(at {shared.start}..{shared.stop - 1}); the test seeds must be held out of the choice"
        )


def _scope(config: Config, study: BudgetSection) -> Scope:
    """The study's batch mode, scenarios and configured arms at its smallest budget (the
    grid's budget is not an input of the study)."""
    raw = config.resolved["budget_study"]["arms"]
    arms = tuple(name for name, arm in raw.items() if arm is None)
    return Scope(study.batch_mode, study.scenarios, arms, study.num_pairs[0])


def _memory_mb(config: Config, study: BudgetSection) -> float:
    """One simulation at a time, on the test or the tuning seeds, of at most
    MAX_SEED_PAIRS seed x pairs (more seeds run in chunks): 216 MB measured at 100
    seeds x 300,000 pairs (4 bytes per seed x pair above the libraries)."""
    seeds = max(config.seeds_count, len(study.tuning_seeds or ()))
    one_pass = max(min(seeds, seeds_per_pass(n)) * n for n in study.num_pairs)
    return 100 + one_pass * 4 / 1e6


def _runtime_min(config: Config, study: BudgetSection) -> int:
    """Every run of the study at most 3 us per seed x pair (as simulate): every setting on
    the tuning seeds and at most two chosen settings per arm on the test seeds, at every
    budget and scenario."""
    tuning = len(study.tuning_seeds or ())
    per_budget = len(study.settings) * tuning + 2 * len(study.arms) * config.seeds_count
    runs = per_budget * len(study.scenarios) * sum(study.num_pairs)
    return 2 + runs // 20_000_000


STUDY = Study(
    key="budget_study",
    command="budget-study",
    help="final Elo loss against the budget for every arm, swept arms tuned per budget on "
    "held-out seeds (the config's budget_study)",
    doc="docs/benchmark.md",
    label="budget study",
    rule="budget_study",
    run=run_budget_study,
    report="spsa_bench.analysis.budget:write_report",
    outputs=(
        Output("nc", "results/fishtest/budget_study.nc"),
        Output(
            "csv",
            "results/tables/budget_study.csv",
            "budget_study_table.rst",
            "Tables",
            {"table": "budget study"},
        ),
        Output("md", "results/tables/budget_study.md"),
        Output(
            "png",
            "results/figures/budget_study.png",
            "budget_study.rst",
            "Budget",
            {"figure": "budget study"},
        ),
        Output("svg", "results/figures/budget_study.svg"),
    ),
    scope=_scope,
    memory_mb=_memory_mb,
    runtime_min=_runtime_min,
    check_seeds=check_held_out,
    comment="The budget study (issue 16): the config's budget_study arms at every budget, each "
    "budget its own run from the start, swept arms tuned per budget on held-out seeds.",
)
