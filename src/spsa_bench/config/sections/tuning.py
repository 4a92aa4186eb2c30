"""The ``tuning`` section: the held-out seeds every sweep's setting is chosen on, the
criterion and the robust choice's family (the protocol:
:mod:`spsa_bench.studies.tuning`)::

    tuning:
      seeds: {first: 1000, count: 20}   # the tuning seeds, disjoint from `seeds`
      criterion: median                 # median final Elo loss (the only criterion)
      family: [calibrated, mixed]       # scenarios of the robust choice (default: all)
"""

from __future__ import annotations

import dataclasses

from spsa_bench.config.records import BatchMode, Config, ConfigError, OptimizerArm
from spsa_bench.config.sections.fields import held_out_seeds, known

KEY = "tuning"
#: The selection criteria the tuning protocol knows.
CRITERIA = ("median",)


@dataclasses.dataclass(frozen=True)
class TuningSection:
    seeds: range  # the tuning seeds
    test_seeds: range  # the benchmark's seeds (config.seeds), held out of the choice
    criterion: str
    family: tuple[str, ...]
    scenarios: tuple[str, ...]  # every scenario of the grid
    batch_modes: tuple[BatchMode, ...]  # every batch mode of the grid
    arms: tuple[OptimizerArm, ...]  # the swept arms (their `sweep` set), in config order
    baseline_sweep: str  # the baseline arm's sweep, or the baseline arm when not swept
    baseline_swept: bool

    @property
    def sweeps(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(arm.sweep for arm in self.arms))


def parse(config: Config) -> TuningSection | None:
    """The configuration's ``tuning`` section, checked (``None`` when it has none)."""
    raw = config.resolved.get(KEY)
    if raw is None:
        return None
    where = KEY
    test = config.seed_range()
    seeds = held_out_seeds(f"{where}.seeds", raw["seeds"], test)
    criterion = str(raw.get("criterion", "median"))
    if criterion not in CRITERIA:
        raise ConfigError(
            f"{where}.criterion = {criterion!r}: unknown (known: {', '.join(CRITERIA)})"
        )
    family = tuple(raw.get("family") or config.scenarios)
    for scenario in family:
        known(config.scenario, scenario, f"{where}.family")
    arms = tuple(arm for arm in config.optimizers.values() if arm.sweep is not None)
    if not arms:
        raise ConfigError(
            f"{where}: no arm of this configuration is swept; give an arm a list of values "
            "(or a log_range) for a hyperparameter to tune (docs/benchmark.md, 'Sweeps')"
        )
    baseline = config.optimizer(config.baseline)
    return TuningSection(
        seeds=seeds,
        test_seeds=test,
        criterion=criterion,
        family=family,
        scenarios=tuple(config.scenarios),
        batch_modes=tuple(config.batch_modes.values()),
        arms=arms,
        baseline_sweep=baseline.sweep or baseline.name,
        baseline_swept=baseline.sweep is not None,
    )
