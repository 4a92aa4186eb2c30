"""Resolution: a parsed configuration validated (:func:`validate_raw`: the JSON Schema
and the checks no schema expresses) and resolved into a frozen
:class:`~spsa_bench.config.records.Config`: its grid (:mod:`~spsa_bench.config.grid`),
then every optional section it has (:data:`~spsa_bench.config.sections.SECTIONS`)
parsed against that grid.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spsa_bench.config.arms import check_sweep_keys
from spsa_bench.config.grid import resolve_grid
from spsa_bench.config.raw_checks import (
    check_budget_keys,
    check_budget_lists,
    check_names,
    check_scenario_keys,
    reject_non_finite,
    schema_error_line,
    schema_errors,
)
from spsa_bench.config.records import Config, ConfigError
from spsa_bench.config.schema import build_schema
from spsa_bench.config.sections import SECTION_KEYS, check_sections

#: The optional sections no simulation of the grid depends on (studies, tuning).
STUDY_SECTIONS = SECTION_KEYS


def validate_raw(raw: Any) -> None:
    """Schema validation plus non-finite numbers; raises :class:`ConfigError`."""
    if not isinstance(raw, dict):
        if raw is None:
            raise ConfigError(
                "<top level>: the configuration is empty (a mapping of keys is needed)"
            )
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


def resolve(raw: dict, base_dir: str | Path | None = None) -> Config:
    """Validate ``raw`` (parsed YAML) and resolve it into a :class:`Config`.

    ``base_dir`` is the directory relative ``fishtest_params_file`` paths are read
    from (:func:`load_config` passes the config file's; default: the working directory).
    """
    validate_raw(raw)
    return resolve_checked(raw, base_dir)


def resolve_checked(raw: dict, base_dir: str | Path | None = None) -> Config:
    """:func:`resolve` without the schema pass, for a ``raw`` that is a resolved
    configuration's ``resolved`` with values the schema already allows changed. Every
    check beyond the schema still runs, the optional sections' included."""
    config = resolve_grid(raw, base_dir)
    check_sections(config)
    return config


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
