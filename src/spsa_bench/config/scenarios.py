"""Scenarios, the tuning problems: a *groups* scenario (parameter groups with their Elo
geometry, :mod:`spsa_bench.config.group_scenarios`) or a *tune* scenario given by
exactly one of ``fishtest_params`` (a Fishtest parameter block as text),
``fishtest_params_file`` (read at load time; in the resolved configuration it becomes
``fishtest_params`` holding the text, so runs never need the file) or
``synthetic_tune``. A tune scenario's resolved ``truth`` is its complete prior
(:class:`~spsa_bench.model.instances.TruthPrior`). :func:`scenario_kind`,
:func:`scenario_block`, :func:`scenario_prior` and :func:`scenario_param_count` read a
resolved scenario."""

from __future__ import annotations

import copy
import math
from pathlib import Path

from spsa_bench.config.group_scenarios import check_groups, check_problem
from spsa_bench.config.records import DEFAULT_ROUNDING, ConfigError


def scenario_kind(scenario: dict) -> str:
    """``"groups"`` or ``"block"`` (a tune scenario: a Fishtest parameter block)."""
    return "groups" if "groups" in scenario else "block"


def check_noise(key: str, setting) -> None:
    """Calibrate the noise model now, so a setting no model reaches is refused by key."""
    from spsa_bench.model.noise import NoiseError, noise_model

    try:
        noise_model(setting)
    except NoiseError as error:
        raise ConfigError(f"{key}: {error}") from None


def _read_block_file(where: str, value: str, base_dir: Path | None) -> str:
    from spsa_bench.config.param_block import BlockError, read_block_text

    path = Path(value)
    if not path.is_absolute():
        path = (base_dir if base_dir is not None else Path.cwd()) / path
    try:
        return read_block_text(path)
    except BlockError as error:
        raise ConfigError(f"{where}.fishtest_params_file = {value!r}: {error}") from None


def _unquoted(message: str, text: str) -> str:
    """A block error on a file's ``text`` without the line it quotes: a configuration
    can name any readable file, whose lines must not reach the terminal. What stays is
    the line number, the field named and that field's value on a line of six fields."""
    import re

    match = re.match(r"line (\d+) ", message)
    if match is None:
        return message
    lines = text.removeprefix("\ufeff").split("\n")
    number = int(match.group(1))
    if not 1 <= number <= len(lines):
        return message
    return message.replace(f" ({lines[number - 1].strip()!r})", "", 1)


def scenario_block(scenario: dict):
    """The :class:`~spsa_bench.config.param_block.ParamBlock` of a resolved tune scenario."""
    from spsa_bench.config.param_block import parse_block, synthetic_tune

    if "fishtest_params" in scenario:
        return parse_block(scenario["fishtest_params"])
    if "synthetic_tune" in scenario:
        spec = scenario["synthetic_tune"]
        return parse_block(synthetic_tune(int(spec["params"]), int(spec.get("value", 100))))
    raise ValueError("not a resolved tune scenario: it has no fishtest_params or synthetic_tune")


def scenario_prior(scenario: dict):
    """The :class:`~spsa_bench.model.instances.TruthPrior` of a tune scenario."""
    from spsa_bench.model.instances import TruthPrior

    return TruthPrior.from_mapping(scenario.get("truth"))


def scenario_param_count(scenario: dict) -> int:
    """Parameters of a resolved scenario, of either kind."""
    if scenario_kind(scenario) == "groups":
        return sum(int(group["count"]) for group in scenario["groups"])
    return len(scenario_block(scenario))


def _resolve_tune(name: str, scenario: dict, base_dir: Path | None) -> None:
    """Read, check and complete a tune scenario in place (see the module docstring)."""
    import numpy as np

    from spsa_bench.config.param_block import BlockError, parse_block, synthetic_tune
    from spsa_bench.model.calibrated import CALIBRATED, calibrated_truth
    from spsa_bench.model.instances import PriorError

    where = f"scenarios.{name}"
    if "fishtest_params_file" in scenario:
        value = scenario.pop("fishtest_params_file")
        text = _read_block_file(where, value, base_dir)
        key = f"{where}.fishtest_params_file = {value!r}"
        scenario["fishtest_params"] = text
        try:
            parse_block(text)
        except BlockError as error:  # the file may be any file: quote none of its lines
            raise ConfigError(f"{key}: {_unquoted(str(error), text)}") from None
    elif "fishtest_params" in scenario:
        text, key = scenario["fishtest_params"], f"{where}.fishtest_params"
    else:
        spec = scenario["synthetic_tune"]
        spec.setdefault("value", 100)
        try:
            text = synthetic_tune(spec["params"], spec["value"])
        except BlockError as error:
            raise ConfigError(f"{where}.{error}") from None
        key = f"{where}.synthetic_tune"
    try:
        block = parse_block(text)
    except BlockError as error:
        raise ConfigError(f"{key}: {error}") from None
    if scenario.get("truth") == CALIBRATED:  # the shipped calibrated prior, by name
        scenario["truth"] = calibrated_truth()
    try:
        prior = scenario_prior(scenario)
    except PriorError as error:
        raise ConfigError(f"{where}.{error}") from None
    if prior.offset_scale == 0:
        raise ConfigError(
            f"{where}.truth.offset.scale = 0: every optimum is at the start, so nothing is to gain"
        )
    if prior.inactive_count(len(block)) == len(block):
        raise ConfigError(
            f"{where}.truth.inactive_fraction = {prior.inactive_fraction:g}: leaves none of the "
            f"{len(block)} parameters active"
        )
    with np.errstate(all="ignore"):
        reach = ((block.max - block.min) / block.c_end) ** 2
        worst = 8.0 * prior.elo_max * float(np.sum(reach))
    if not math.isfinite(worst):
        raise ConfigError(
            f"{key}: the true Elo loss across [min, max] in c_end steps overflows a float "
            "(narrow the bounds or widen c_end)"
        )
    scenario["truth"] = prior.to_dict()
    scenario.setdefault("integer", True)


def resolve_scenarios(data: dict, num_pairs: int, base_dir: Path | None) -> None:
    """Every scenario checked (groups or a parameter block), defaults filled into ``data``."""
    for name, scenario in data["scenarios"].items():
        if scenario_kind(scenario) == "groups":
            check_groups(name, scenario)
            check_problem(name, scenario, num_pairs)
            for group in scenario["groups"]:
                group.setdefault("integer", False)
        else:
            _resolve_tune(name, scenario, base_dir)
        scenario.setdefault("rounding", DEFAULT_ROUNDING)
        scenario.setdefault("noise", copy.deepcopy(data["noise"]))
        check_noise(f"scenarios.{name}.noise", scenario["noise"])
