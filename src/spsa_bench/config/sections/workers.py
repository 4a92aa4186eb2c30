"""The ``workers_study`` section: one asynchronous worker pool at several sizes, its
synchronous reference mode, scenarios and arms (the study:
:mod:`spsa_bench.studies.workers`)::

    workers_study:
      pool: {batch: fishtest, tc: STC}   # a batch mode without `workers` (default: fishtest)
      workers: [1, 10, 50, 200]
      reference: sync                    # a synchronous batch mode of the configuration
      scenarios: [mixed, tune-16-stc]
      arms:                              # a config arm by name (null), or settings here
        spsa: null
        adam-block: null
        spsa-delay: {kind: spsa, delay_adaptive: 500}
      margin: 0.5                        # Elo: "safe" while async - sync stays below it
"""

from __future__ import annotations

import dataclasses

from spsa_bench.config.batch_modes import default_time_control, resolve_batch_mode
from spsa_bench.config.records import BatchMode, Config, ConfigError, OptimizerArm
from spsa_bench.config.sections.fields import known, study_arm

KEY = "workers_study"
DEFAULT_POOL = {"batch": "fishtest"}


@dataclasses.dataclass(frozen=True)
class WorkersSection:
    modes: tuple[BatchMode, ...]  # the pool at each size, ascending
    reference: BatchMode
    scenarios: tuple[str, ...]
    arms: tuple[OptimizerArm, ...]
    margin: float
    pool: dict

    @property
    def workers(self) -> tuple[int, ...]:
        return tuple(mode.workers for mode in self.modes)


def parse(config: Config) -> WorkersSection | None:
    """The configuration's ``workers_study``, checked (``None`` when it has none)."""
    raw = config.resolved.get(KEY)
    if raw is None:
        return None
    where = KEY
    pool = dict(raw.get("pool") or DEFAULT_POOL)
    if "workers" in pool:
        raise ConfigError(f"{where}.pool.workers: the study sets it (give workers: [...])")
    default_tc = default_time_control(config.resolved["noise"])
    modes = []
    for workers in sorted(raw["workers"]):
        mode, _ = resolve_batch_mode(
            f"{where}.pool", {**pool, "workers": workers}, config.num_pairs, default_tc
        )
        if mode.is_sync:
            raise ConfigError(f"{where}.pool: must be asynchronous (batch variable or fishtest)")
        modes.append(dataclasses.replace(mode, name=f"pool-w{workers}"))
    reference = known(config.batch_mode, raw["reference"], f"{where}.reference")
    if not reference.is_sync:
        raise ConfigError(f"{where}.reference = {raw['reference']!r}: not a synchronous mode")
    scenarios = tuple(raw["scenarios"])
    for scenario in scenarios:
        known(config.scenario, scenario, f"{where}.scenarios")
    arms_raw = raw["arms"]
    if isinstance(arms_raw, list):
        arms_raw = dict.fromkeys(arms_raw)
    arms = tuple(
        study_arm(config, name, settings, f"{where}.arms.{name}")[0]
        for name, settings in arms_raw.items()
    )
    return WorkersSection(
        modes=tuple(modes),
        reference=reference,
        scenarios=scenarios,
        arms=arms,
        margin=float(raw.get("margin", 0.5)),
        pool=pool,
    )
