"""The ``framework_study`` section: Fishtest's SPSA beside OpenBench's on one
parameter-block scenario, each design difference switched on alone (the study:
:mod:`spsa_bench.studies.frameworks`, docs/frameworks.md)::

    framework_study:
      scenario: tune-16-stc   # a parameter-block scenario with one c_end for all
      batch_mode: sync
      c_end: [0.5, 2]         # a small and a large c_end (integer steps)
      fishtest: {A_ratio: 0.1} # spsa hyperparameters (Fishtest's form), or a configured
                               # arm of kind spsa by name
      openbench: {}           # spsa-openbench hyperparameters (default: OpenBench's form)
      dispatch:               # optional: OpenBench's arm on OpenBench's dispatch
        single: {workers: 20, batch: openbench, concurrency: {min: 16, max: 16}}
        multiple: {workers: 20, batch: openbench, concurrency: {min: 16, max: 16},
                   distribution: multiple}

The arms are fixed by the study (:data:`ARMS`): Fishtest's arm with the worker's
independent rounding; OpenBench's kind with every OpenBench rule off (``pairs_per 1``,
no ``c`` floor, independent rounding); that arm with one rule on (coupled rounding,
the floor, per-chunk iteration); OpenBench's arm with all of them.

``dispatch`` (optional) adds a second panel: OpenBench's arm (all rules on, coupled
rounding) played on each named batch mode, which must be ``batch: openbench``
(:mod:`spsa_bench.dispatch.asynchronous`); the arm is ``openbench@<name>``. A mode takes
every key of a batch mode but ``pairs_per``, which is the OpenBench arm's (one value in
OpenBench's form: the workload size and the iteration chunk). The first mode is the
panel's reference (its paired differences).
"""

from __future__ import annotations

import dataclasses

from spsa_bench.config.records import BatchMode, Config, ConfigError, OptimizerArm
from spsa_bench.config.sections.fields import known, single_c_end_block, study_arm

KEY = "framework_study"

#: The study's arms: name, what it is, and (base, rounding, the OpenBench rules on).
#: ``base`` "fishtest" is the configured spsa arm; "openbench" the OpenBench arm with
#: ``pairs_per``, ``c_floor`` as on (chunks, floor) or off (1, 0).
ARMS = (
    ("fishtest", "Fishtest: spsa, independent rounding", "fishtest", "stochastic", ()),
    ("ob-all-off", "spsa-openbench, every OpenBench rule off", "openbench", "stochastic", ()),
    ("ob+coupled", "... with coupled rounding alone", "openbench", "coupled", ()),
    ("ob+c-floor", "... with the c >= 0.5 floor alone", "openbench", "stochastic", ("floor",)),
    ("ob+chunks", "... with per-chunk iteration alone", "openbench", "stochastic", ("chunks",)),
    ("openbench", "OpenBench: all three on", "openbench", "coupled", ("floor", "chunks")),
)


@dataclasses.dataclass(frozen=True)
class FrameworkArm:
    arm: OptimizerArm
    rounding: str
    description: str


@dataclasses.dataclass(frozen=True)
class DispatchArm:
    """OpenBench's arm on one ``batch: openbench`` mode (the dispatch panel)."""

    arm: OptimizerArm
    rounding: str
    mode: BatchMode


@dataclasses.dataclass(frozen=True)
class FrameworkSection:
    scenario: str
    batch_mode: str
    c_end: tuple[float, ...]
    arms: tuple[FrameworkArm, ...]
    block_c_end: float
    dispatch: tuple[DispatchArm, ...] = ()


def parse(config: Config) -> FrameworkSection | None:
    """The configuration's ``framework_study``, checked against its scenarios, batch
    modes and arms (``None`` when the configuration has none)."""
    raw = config.resolved.get(KEY)
    if raw is None:
        return None
    where = KEY
    scenario = raw["scenario"]
    block_c_end = single_c_end_block(config, scenario, f"{where}.scenario")
    known(config.batch_mode, raw["batch_mode"], f"{where}.batch_mode")
    fishtest = _fishtest_arm(config, raw["fishtest"], f"{where}.fishtest")
    if fishtest.kind != "spsa":
        raise ConfigError(
            f"{where}.fishtest = {raw['fishtest']!r}: kind {fishtest.kind}, not spsa "
            "(Fishtest's rules)"
        )
    settings = dict(raw.get("openbench") or {})
    if "kind" in settings:
        raise ConfigError(f"{where}.openbench.kind: the OpenBench arm is spsa-openbench")
    (openbench,) = study_arm(
        config, "openbench", {"kind": "spsa-openbench", **settings}, f"{where}.openbench"
    )
    off = dataclasses.replace(openbench.hyper, pairs_per=1, c_floor=0.0)
    arms = []
    for name, description, base, rounding, rules in ARMS:
        if base == "fishtest":
            arm = dataclasses.replace(fishtest, name=name)
        else:
            hyper = dataclasses.replace(
                off,
                pairs_per=openbench.hyper.pairs_per if "chunks" in rules else 1,
                c_floor=openbench.hyper.c_floor if "floor" in rules else 0.0,
            )
            arm = OptimizerArm(name, openbench.kind, hyper)
        arms.append(FrameworkArm(arm, rounding, description))
    dispatch = _dispatch_arms(config, raw.get("dispatch"), arms[-1], f"{where}.dispatch")
    return FrameworkSection(
        scenario=scenario,
        batch_mode=raw["batch_mode"],
        c_end=tuple(float(c) for c in raw["c_end"]),
        arms=tuple(arms),
        block_c_end=block_c_end,
        dispatch=dispatch,
    )


def _dispatch_arms(config: Config, raw, openbench: FrameworkArm, where: str):
    """OpenBench's arm (``openbench``: every rule on) on each ``batch: openbench`` mode of
    ``raw`` (name -> batch mode), its ``pairs_per`` the arm's; refusals name ``where``."""
    from spsa_bench.config.batch_modes import default_time_control, resolve_batch_mode

    if raw is None:
        return ()
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{where} = {raw!r}: expected a mapping of names to batch modes")
    default_tc = default_time_control(config.resolved["noise"])
    pairs_per = int(openbench.arm.hyper.pairs_per)
    out = []
    for name, mode_raw in raw.items():
        here = f"{where}.{name}"
        if not isinstance(mode_raw, dict):
            raise ConfigError(f"{here} = {mode_raw!r}: expected a batch mode (a mapping)")
        if mode_raw.get("batch") != "openbench":
            raise ConfigError(
                f"{here}.batch = {mode_raw.get('batch')!r}: the dispatch panel plays "
                "OpenBench's dispatch (batch: openbench)"
            )
        if "pairs_per" in mode_raw:
            raise ConfigError(
                f"{here}.pairs_per: set by framework_study.openbench.pairs_per ({pairs_per}; "
                "one value in OpenBench's form: the workload size and the iteration chunk)"
            )
        try:
            mode, _ = resolve_batch_mode(
                name, {**mode_raw, "pairs_per": pairs_per}, config.num_pairs, default_tc
            )
        except ConfigError as error:
            text = str(error).removeprefix(f"batch_modes.{name}")
            raise ConfigError(f"{here}{text}") from None
        arm = dataclasses.replace(openbench.arm, name=f"openbench@{name}")
        out.append(DispatchArm(arm, openbench.rounding, mode))
    return tuple(out)


def _fishtest_arm(config: Config, value, where: str) -> OptimizerArm:
    """The configured arm named ``value``, or an ``spsa`` arm of the study only from the
    hyperparameters ``value`` (checked like a configured arm's)."""
    if isinstance(value, str):
        return known(config.optimizer, value, where)
    settings = dict(value)
    if "kind" in settings:
        raise ConfigError(f"{where}.kind: the Fishtest arm is spsa")
    return study_arm(config, "fishtest", {"kind": "spsa", **settings}, where)[0]
