"""Field parsers every optional section shares: references to the configuration's
scenarios, batch modes and arms, a study's own arms, and held-out seeds.

Each parser takes the key it reads (``where``, e.g. ``workers_study.arms.x``) and
words its refusal as one line naming that key and the value, like the loader's own
checks (a :class:`ConfigError`, exit 2 on the command line).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import TypeVar

from spsa_bench.config.arms import check_arm_settings, expand_sweeps, is_sweep
from spsa_bench.config.records import Config, ConfigError, OptimizerArm

T = TypeVar("T")


def known(pick: Callable[[str], T], name: str, where: str) -> T:
    """``pick(name)`` (e.g. ``config.scenario``), its refusal naming ``where``."""
    try:
        return pick(name)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None


def single_c_end_block(config: Config, scenario: str, where: str) -> float:
    """The one c_end of parameter-block scenario ``scenario`` (at key ``where``): refused
    when the scenario is unknown, not a parameter block, or its parameters' c_end differ
    (a study that plays c_end through ``c_scale = c_end / the block's`` needs one)."""
    import numpy as np

    from spsa_bench.config.scenarios import scenario_block, scenario_kind

    spec = known(config.scenario, scenario, where)
    if scenario_kind(spec) != "block":
        raise ConfigError(
            f"{where} = {scenario!r}: not a parameter-block scenario "
            "(give fishtest_params, fishtest_params_file or synthetic_tune)"
        )
    c_end = scenario_block(spec).c_end
    if not np.all(c_end == c_end[0]):
        raise ConfigError(
            f"{where} = {scenario!r}: its parameters have different c_end values "
            f"({float(c_end.min()):g} to {float(c_end.max()):g}); the study needs one"
        )
    return float(c_end[0])


def refuse_sweeps(where: str, settings: dict) -> None:
    """A study that does not tune takes one value per hyperparameter: a list or a
    ``{log_range: ...}`` (a sweep anywhere else) is refused, naming the key."""
    for key, value in settings.items():
        if key != "kind" and is_sweep(value):
            raise ConfigError(
                f"{where}.{key} = {json.dumps(value, default=str)}: one value expected; "
                "this study does not sweep hyperparameters (a list or log_range sweeps only "
                "in optimizers and budget_study.arms)"
            )


def study_arm(
    config: Config, name: str, settings: dict | None, where: str, *, sweeps: bool = False
) -> tuple[OptimizerArm, ...]:
    """A study's arm ``name`` at key ``where``: the configuration's arm of that name when
    ``settings`` is ``None`` (as configured), else an arm of the study only, its
    ``kind`` (default: the name) and hyperparameters checked like a configured arm's
    (names, types, bounds). With ``sweeps``, a swept hyperparameter expands into one
    arm per value (as in ``optimizers``); without, a sweep is refused. Returns the arm,
    or a swept arm's settings in order."""
    if settings is None:
        return (known(config.optimizer, name, where),)
    if not isinstance(settings, dict):
        raise ConfigError(
            f"{where} = {json.dumps(settings, default=str)}: expected null (the configured "
            "arm) or a mapping of kind and hyperparameters"
        )
    settings = dict(settings)
    kind = settings.pop("kind", name)
    check_arm_settings(where, kind, settings)
    if not sweeps:
        refuse_sweeps(where, settings)
    from spsa_bench.optimizers import hyper_from_dict

    table = where.rsplit(".", 1)[0]
    expanded, swept = expand_sweeps({name: {"kind": kind, **settings}}, table)
    arms = []
    for setting, values in expanded.items():
        values = {key: value for key, value in values.items() if key != "kind"}
        try:
            hyper = hyper_from_dict(kind, values)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"{where}: {error}") from None
        source, pairs = swept.get(setting, (None, ()))
        arms.append(OptimizerArm(setting, kind, hyper, sweep=source, swept=pairs))
    return tuple(arms)


def variant_arm(base: OptimizerArm, name: str, overrides: dict | None, where: str) -> OptimizerArm:
    """A variant ``name`` of ``base``: ``overrides`` (hyperparameters of the base arm's
    kind, checked like an arm's, one value each) over the base arm's values."""
    overrides = dict(overrides or {})
    if "kind" in overrides:
        raise ConfigError(f"{where}.kind: a variant keeps its base arm's kind ({base.kind})")
    check_arm_settings(where, base.kind, overrides)
    refuse_sweeps(where, overrides)
    from spsa_bench.optimizers import hyper_from_dict

    values = {**dataclasses.asdict(base.hyper), **overrides}
    try:
        return OptimizerArm(name, base.kind, hyper_from_dict(base.kind, values))
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{where}: {error}") from None


def seed_overlap(seeds: range, test: range) -> range:
    """The seeds two contiguous ranges share (empty when none)."""
    return range(max(seeds.start, test.start), min(seeds.stop, test.stop))


def held_out_seeds(where: str, raw: dict, test: range) -> range:
    """The seeds ``{first, count}`` at key ``where``, refused (naming it) beyond the seed
    limits or where they overlap ``test`` (the configuration's seeds): a choice made on
    them never sees the seeds it is reported on."""
    from spsa_bench.config.limits import LimitError, check_seed_range

    first, count = int(raw["first"]), int(raw["count"])
    try:
        check_seed_range(where, first, count)
    except LimitError as error:
        raise ConfigError(str(error)) from None
    seeds = range(first, first + count)
    overlap = seed_overlap(seeds, test)
    if len(overlap):
        raise ConfigError(
            f"{where} = {first}..{seeds.stop - 1}: overlaps the benchmark's seeds "
            f"{test.start}..{test.stop - 1} (at {overlap.start}..{overlap.stop - 1}); the "
            "tuning seeds must be disjoint from them, or the choice sees the test seeds"
        )
    return seeds
