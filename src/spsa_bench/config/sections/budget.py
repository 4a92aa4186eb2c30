"""The ``budget_study`` section: budgets, batch mode, scenarios, held-out tuning seeds
and arms, swept arms tuned per budget (the study: :mod:`spsa_bench.studies.budget`)::

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
"""

from __future__ import annotations

import dataclasses

import numpy as np

from spsa_bench.config.grid import resolve_grid
from spsa_bench.config.records import Config, ConfigError, OptimizerArm
from spsa_bench.config.sections.fields import held_out_seeds, known, study_arm

KEY = "budget_study"


@dataclasses.dataclass(frozen=True)
class StudyArm:
    name: str
    settings: tuple[OptimizerArm, ...]  # one per swept value; one for an unswept arm

    @property
    def swept(self) -> bool:
        return self.settings[0].sweep is not None


@dataclasses.dataclass(frozen=True)
class BudgetSection:
    num_pairs: tuple[int, ...]  # the budgets, ascending
    budget_key: str  # "num_pairs" or "games": how the configuration gave them
    batch_mode: str
    scenarios: tuple[str, ...]
    tuning_seeds: range | None  # None when no arm is swept and none were given
    arms: tuple[StudyArm, ...]
    baseline: str

    @property
    def settings(self) -> tuple[OptimizerArm, ...]:
        """Every setting of every arm, arm by arm."""
        return tuple(setting for arm in self.arms for setting in arm.settings)

    @property
    def owners(self) -> np.ndarray:
        """The index of each setting's arm, ``(setting,)``."""
        return np.repeat(np.arange(len(self.arms)), [len(arm.settings) for arm in self.arms])


def _budgets(raw: dict, where: str) -> tuple[tuple[int, ...], str]:
    """The budgets in pairs, ascending, and the key they were given as."""
    from spsa_bench.config.param_block import BlockError, check_games

    given = [key for key in ("num_pairs", "games") if key in raw]
    if len(given) != 1:
        what = "both" if given else "neither"
        raise ConfigError(f"{where}: give the budgets as num_pairs or games, not {what}")
    key = given[0]
    if key == "num_pairs":
        return tuple(sorted(int(n) for n in raw[key])), key
    pairs = []
    for index, games in enumerate(raw[key]):
        try:
            pairs.append(check_games(games) // 2)
        except BlockError as error:
            raise ConfigError(f"{where}.games[{index}]{str(error).removeprefix('games')}") from None
    return tuple(sorted(pairs)), key


def check_budget(config: Config, num_pairs: int, where: str) -> None:
    """``config``'s grid at a budget of ``num_pairs`` pairs must resolve (checkpoints, a
    fixed batch); the refusal names the budget. The grid's resolution reads none of the
    optional sections, so they may stay in."""
    raw = {key: value for key, value in config.resolved.items() if key != "games"}
    raw["num_pairs"] = int(num_pairs)  # within the schema's limits: the study's own entry
    try:
        resolve_grid(raw)
    except ConfigError as error:
        raise ConfigError(f"{where}: at a budget of {num_pairs:,} pairs: {error}") from None


def _study_arms(config: Config, raw: dict, where: str) -> tuple[StudyArm, ...]:
    arms = []
    for name, settings in raw.items():
        settings_ = study_arm(config, name, settings, f"{where}.{name}", sweeps=True)
        if settings is None:  # a configured arm runs as configured, never re-tuned here
            settings_ = (dataclasses.replace(settings_[0], sweep=None, swept=()),)
        arms.append(StudyArm(name, settings_))
    seen: dict[str, str] = {}
    for arm in arms:
        for setting in arm.settings:
            if setting.name in seen and seen[setting.name] != arm.name:
                raise ConfigError(
                    f"{where}.{arm.name}: its setting {setting.name!r} is also an arm of the "
                    f"study ({seen[setting.name]}); rename one of them"
                )
            seen[setting.name] = arm.name
    return tuple(arms)


def parse(config: Config) -> BudgetSection | None:
    """The configuration's ``budget_study``, checked (``None`` when it has none)."""
    raw = config.resolved.get(KEY)
    if raw is None:
        return None
    where = KEY
    num_pairs, budget_key = _budgets(raw, where)
    known(config.batch_mode, raw["batch_mode"], f"{where}.batch_mode")
    for scenario in raw["scenarios"]:
        known(config.scenario, scenario, f"{where}.scenarios")
    arms = _study_arms(config, raw["arms"], f"{where}.arms")
    swept = [arm.name for arm in arms if arm.swept]
    tuning_seeds = None
    if "tuning_seeds" in raw:
        tuning_seeds = held_out_seeds(
            f"{where}.tuning_seeds", raw["tuning_seeds"], config.seed_range()
        )
    elif swept:
        raise ConfigError(
            f"{where}.tuning_seeds: required, the swept arm {swept[0]!r} is tuned on them"
        )
    baseline = raw.get("baseline", arms[0].name)
    if baseline not in {arm.name for arm in arms}:
        raise ConfigError(
            f"{where}.baseline = {baseline!r}: not one of its arms ({', '.join(a.name for a in arms)})"
        )
    for budget in num_pairs:  # each budget must make a valid configuration
        check_budget(config, budget, f"{where}.{budget_key}")
    return BudgetSection(
        num_pairs=num_pairs,
        budget_key=budget_key,
        batch_mode=raw["batch_mode"],
        scenarios=tuple(raw["scenarios"]),
        tuning_seeds=tuning_seeds,
        arms=arms,
        baseline=baseline,
    )
