"""The ``cend_study`` section: the c_end study's scenario, batch mode, c_end values
and variants of one SPSA-family arm (the study: :mod:`spsa_bench.studies.cend`)::

    cend_study:
      scenario: tune-16-stc       # a parameter-block scenario with one c_end for all
      batch_mode: sync
      c_end: [0.25, 0.5, 1, 2, 4] # the c_end every variant probes with (integer units)
      base: spsa                  # an SPSA-family arm of the configuration
      variants:                   # hyperparameters over the base arm's; first = baseline
        classic: {}
        realized: {delta: realized}
        min-c2: {min_c: 2}
"""

from __future__ import annotations

import dataclasses

from spsa_bench.config.records import Config, ConfigError, OptimizerArm
from spsa_bench.config.sections.fields import known, single_c_end_block, variant_arm

KEY = "cend_study"


@dataclasses.dataclass(frozen=True)
class CendSection:
    scenario: str
    batch_mode: str
    c_end: tuple[float, ...]
    arms: tuple[OptimizerArm, ...]  # the variants, named, over the base arm
    block_c_end: float


def parse(config: Config) -> CendSection | None:
    """The configuration's ``cend_study``, checked against its scenarios and arms
    (``None`` when the configuration has none)."""
    raw = config.resolved.get(KEY)
    if raw is None:
        return None
    where = KEY
    scenario = raw["scenario"]
    block_c_end = single_c_end_block(config, scenario, f"{where}.scenario")
    known(config.batch_mode, raw["batch_mode"], f"{where}.batch_mode")
    base = known(config.optimizer, raw["base"], f"{where}.base")
    if "c_scale" not in {field.name for field in dataclasses.fields(base.hyper)}:
        raise ConfigError(f"{where}.base = {raw['base']!r}: has no c_scale (not an SPSA arm)")
    arms = []
    for name, overrides in raw["variants"].items():
        if "c_scale" in (overrides or {}):
            raise ConfigError(f"{where}.variants.{name}.c_scale: set by the study from c_end")
        arms.append(variant_arm(base, name, overrides, f"{where}.variants.{name}"))
    return CendSection(
        scenario=scenario,
        batch_mode=raw["batch_mode"],
        c_end=tuple(float(c) for c in raw["c_end"]),
        arms=tuple(arms),
        block_c_end=block_c_end,
    )
