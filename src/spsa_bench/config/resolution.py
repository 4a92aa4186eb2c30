"""Resolution: a parsed configuration validated (:func:`validate_raw`) and resolved
into a frozen :class:`~spsa_bench.config.records.Config`, every default filled in.

The budget is ``num_pairs`` or ``games`` (Fishtest's form, ``num_pairs = games // 2``),
exactly one of them. Batch modes, scenarios and arms are resolved by their own modules
(:mod:`~spsa_bench.config.batch_modes`, :mod:`~spsa_bench.config.scenarios`,
:mod:`~spsa_bench.config.arms`); the optional study sections (:data:`STUDY_SECTIONS`)
are checked once the tables they name exist.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from spsa_bench.config.arms import check_sweep_keys, resolve_arms
from spsa_bench.config.batch_modes import resolve_batch_modes
from spsa_bench.config.raw_checks import (
    check_budget_keys,
    check_budget_lists,
    check_names,
    check_scenario_keys,
    reject_non_finite,
    schema_error_line,
    schema_errors,
)
from spsa_bench.config.records import DEFAULTS, Config, ConfigError
from spsa_bench.config.scenarios import check_noise, resolve_scenarios
from spsa_bench.config.schema import build_schema


def validate_raw(raw: Any) -> None:
    """Schema validation plus non-finite numbers; raises :class:`ConfigError`."""
    if not isinstance(raw, dict):
        raise ConfigError(f"<top level> = {raw!r}: the configuration must be a mapping")
    reject_non_finite(raw)
    check_budget_lists(raw)
    check_sweep_keys(raw)
    errors = sorted(
        schema_errors(build_schema(), raw),
        key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))),
    )
    if errors:
        raise ConfigError(schema_error_line(errors[0]))
    check_budget_keys(raw)
    for name, scenario in raw["scenarios"].items():
        check_scenario_keys(name, scenario)
    check_names(raw)


def _num_pairs(data: dict) -> tuple[int, int | None]:
    """``(num_pairs, games)`` of the budget key given (:func:`~spsa_bench.config.raw_checks.check_budget_keys`)."""
    if "num_pairs" in data:
        return int(data["num_pairs"]), None
    from spsa_bench.config.param_block import BlockError, check_games

    try:
        games = check_games(data["games"])
    except BlockError as error:
        raise ConfigError(str(error)) from None
    data["games"] = games
    return games // 2, games


def _check_counts(data: dict, num_pairs: int) -> None:
    """Seeds within the stated maxima; no more checkpoints than the grid 0..num_pairs has."""
    from spsa_bench.config.limits import LimitError, check_seed_range

    try:
        check_seed_range("seeds", data["seeds"]["first"], data["seeds"]["count"])
    except LimitError as error:
        raise ConfigError(str(error)) from None
    if data["checkpoints"] > num_pairs + 1:
        raise ConfigError(
            f"checkpoints = {data['checkpoints']}: more than the {num_pairs + 1} points "
            f"of the pairs grid 0..num_pairs (num_pairs = {num_pairs})"
        )


def resolve(raw: dict, base_dir: str | Path | None = None) -> Config:
    """Validate ``raw`` (parsed YAML) and resolve it into a :class:`Config`.

    ``base_dir`` is the directory relative ``fishtest_params_file`` paths are read
    from (:func:`load_config` passes the config file's; default: the working directory).
    """
    validate_raw(raw)
    return resolve_checked(raw, base_dir)


def resolve_checked(raw: dict, base_dir: str | Path | None = None) -> Config:
    """:func:`resolve` without the schema pass, for a ``raw`` that is a resolved
    configuration's ``resolved`` with values the schema already allows changed (a budget
    study's budget, checked against the same limits in its own section): a budget study
    re-resolves the configuration once per budget, and the schema pass is most of the
    cost of loading a configuration. Every check beyond the schema still runs."""
    base_dir = None if base_dir is None else Path(base_dir)
    data = copy.deepcopy(raw)
    for key, value in DEFAULTS.items():
        data.setdefault(key, copy.deepcopy(value))
    num_pairs, games = _num_pairs(data)
    seeds = data["seeds"]
    seeds.setdefault("per_job", seeds["count"])
    _check_counts(data, num_pairs)

    batch_modes = resolve_batch_modes(data, num_pairs)
    check_noise("noise", data["noise"])
    resolve_scenarios(data, num_pairs, base_dir)
    optimizers = resolve_arms(data, raw)
    config = Config(
        num_pairs=num_pairs,
        checkpoints=int(data["checkpoints"]),
        signal=data["signal"],
        iteration_counter=data["iteration_counter"],
        entropy=int(data["entropy"]),
        seeds_first=int(seeds["first"]),
        seeds_count=int(seeds["count"]),
        seeds_per_job=int(seeds["per_job"]),
        baseline=data["baseline"],
        targets=tuple(float(t) for t in data["targets"]),
        batch_modes=batch_modes,
        scenarios=data["scenarios"],
        optimizers=optimizers,
        resolved=data,
        games=games,
    )
    _check_studies(config)
    return config


#: The optional sections no simulation of the grid depends on (studies, tuning).
STUDY_SECTIONS = ("cend_study", "workers_study", "budget_study", "tuning")


def _check_studies(config: Config) -> None:
    """The optional sections' references, once the tables they name exist."""
    from spsa_bench.config.sections import check_sections

    check_sections(config)


def without_studies(raw: dict) -> dict:
    """``raw`` (a parsed or resolved configuration) without its optional sections
    (:data:`STUDY_SECTIONS`): the grid alone, a new mapping sharing the values of ``raw``
    and keeping its key order."""
    return {key: value for key, value in raw.items() if key not in STUDY_SECTIONS}


def resolve_core(raw: dict, base_dir: str | Path | None = None) -> Config:
    """The configuration's grid (budget, seeds, batch modes, scenarios, arms) resolved
    without its optional sections: :func:`resolve` of :func:`without_studies` of ``raw``.
    No cell of the grid depends on them, and a recorded (resolved) configuration keeps no
    sweep, so a section naming a swept arm would no longer resolve."""
    return resolve(without_studies(raw), base_dir)
