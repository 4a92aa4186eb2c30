"""Load, validate and resolve a benchmark configuration.

``load_config(path)`` reads YAML with the bounded safe loader
(:mod:`spsa_bench.config.safe_yaml`), validates it against the JSON Schema
(:mod:`spsa_bench.config.schema`), runs the semantic checks a schema cannot express,
fills in defaults and returns a frozen :class:`Config`
(:mod:`spsa_bench.config.resolution`). Every problem is reported as one
:class:`ConfigError` line naming the key and the offending value.

This module is also where the configuration's names have always been imported from:
it re-exports them from the modules they live in (records, raw checks, scenarios,
batch modes, sweeps and arms, resolution).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spsa_bench.config.arms import (
    LOG_RANGE_DIGITS,
    MAX_SWEEP_ARMS,
    check_arm_settings,
    expand_sweeps,
)
from spsa_bench.config.batch_modes import default_time_control, resolve_batch_mode
from spsa_bench.config.raw_checks import schema_errors
from spsa_bench.config.records import (
    DEFAULT_ROUNDING,
    DEFAULTS,
    PACKAGED_CONFIG,
    BatchMode,
    Config,
    ConfigError,
    OptimizerArm,
)
from spsa_bench.config.resolution import (
    STUDY_SECTIONS,
    resolve,
    resolve_checked,
    resolve_core,
    validate_raw,
    without_studies,
)
from spsa_bench.config.scenarios import (
    scenario_block,
    scenario_kind,
    scenario_param_count,
    scenario_prior,
)
from spsa_bench.config.schema import NAME_PATTERN


def read_yaml(path: str | Path) -> Any:
    """Parse the YAML file at ``path`` with :mod:`spsa_bench.config.safe_yaml`: bounded
    size, depth and alias expansion, string keys only, no duplicate keys, UTF-8."""
    from spsa_bench.config import safe_yaml

    try:
        return safe_yaml.load_file(path)
    except safe_yaml.YamlError as error:
        raise ConfigError(str(error)) from None


def check_config_file(path: str | Path) -> None:
    """Refuse a (possibly partial) config file that only a lenient loader accepts.

    For the workflow: Snakemake reads config files itself, keeping the last of
    duplicate keys and rendering YTE templates (files with ``__use_yte__: true``,
    whose ``?`` values it evaluates as Python). This re-reads the file safely and
    refuses both, so such a file never drives a run.
    """
    raw = read_yaml(path)
    if isinstance(raw, dict) and "__use_yte__" in raw:
        raise ConfigError(
            f"{path}: __use_yte__ = {raw['__use_yte__']!r}: YTE templates are not accepted "
            "(their values are Python expressions); write plain values"
        )


def load_config(path: str | Path) -> Config:
    """Read, validate and resolve the YAML configuration at ``path`` (relative
    ``fishtest_params_file`` paths are read from the file's directory)."""
    return resolve(read_yaml(path), base_dir=Path(path).parent)


__all__ = [
    "Config",
    "ConfigError",
    "BatchMode",
    "OptimizerArm",
    "check_config_file",
    "load_config",
    "read_yaml",
    "resolve",
    "scenario_block",
    "scenario_kind",
    "scenario_param_count",
    "scenario_prior",
    "NAME_PATTERN",
    "DEFAULTS",
    "DEFAULT_ROUNDING",
    "PACKAGED_CONFIG",
    "STUDY_SECTIONS",
    "check_arm_settings",
    "default_time_control",
    "expand_sweeps",
    "resolve_batch_mode",
    "resolve_checked",
    "resolve_core",
    "without_studies",
    "schema_errors",
    "validate_raw",
    "LOG_RANGE_DIGITS",
    "MAX_SWEEP_ARMS",
]
