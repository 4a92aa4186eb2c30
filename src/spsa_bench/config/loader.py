"""Load, validate and resolve a benchmark configuration.

``load_config(path)`` reads YAML with the bounded safe loader
(:mod:`spsa_bench.config.safe_yaml`), validates it against the JSON Schema (:mod:`spsa_bench.config.schema`), runs
the semantic checks a schema cannot express, fills in defaults and returns a
frozen :class:`Config`. Every problem is reported as one :class:`ConfigError`
line naming the key and the offending value.

The budget is ``num_pairs`` or ``games`` (Fishtest's form, ``num_pairs = games // 2``),
exactly one of them. A scenario is a *groups* scenario (``groups`` with the Elo
geometry keys) or a *tune* scenario given by exactly one of ``fishtest_params``
(a Fishtest parameter block as text), ``fishtest_params_file`` (read at load
time; in the resolved configuration it becomes ``fishtest_params`` holding the
text, so runs never need the file) or ``synthetic_tune``. A tune scenario's
resolved ``truth`` is its complete prior (:class:`~spsa_bench.model.instances.TruthPrior`).
:func:`scenario_kind`, :func:`scenario_block`, :func:`scenario_prior` and
:func:`scenario_param_count` read a resolved scenario.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spsa_bench.config import schema_check
from spsa_bench.config.schema import NAME_PATTERN, build_schema
from spsa_bench.optimizers import REGISTRY, hyper_from_dict

if TYPE_CHECKING:
    import jsonschema

    from spsa_bench.dispatch.asynchronous import AsyncSettings

DEFAULTS: dict[str, Any] = {
    "checkpoints": 101,
    "signal": "raw",
    "iteration_counter": "arrival",
    "entropy": 20261122,
    "baseline": "spsa",
    "targets": [0.5, 0.8, 0.9],
    "noise": "vendored",
}
#: Default of every scenario's ``rounding`` (how the worker rounds integer parameters).
DEFAULT_ROUNDING = "stochastic"
#: The packaged default configuration (a copy of the repository's config/config.yaml).
PACKAGED_CONFIG = Path(__file__).parent / "data" / "default.yaml"


class ConfigError(ValueError):
    """A configuration problem, phrased as one line naming the key and value."""


@dataclass(frozen=True)
class BatchMode:
    name: str
    workers: int
    batch: str  # "fixed", "variable" or "fishtest" (a variable batch by Fishtest's rule)
    batch_size: int | None
    settings: AsyncSettings | None  # None for the synchronous mode
    sweep: str | None = None  # the configured mode a `workers` list expanded into this one

    @property
    def is_sync(self) -> bool:
        return self.settings is None


@dataclass(frozen=True)
class OptimizerArm:
    name: str
    kind: str
    hyper: Any  # the kind's frozen hyperparameter dataclass
    sweep: str | None = None  # the configured arm a hyperparameter sweep expanded into this one
    swept: tuple[tuple[str, float | str], ...] = ()  # the swept hyperparameters, this arm's values


@dataclass(frozen=True)
class Config:
    num_pairs: int
    checkpoints: int
    signal: str
    iteration_counter: str
    entropy: int
    seeds_first: int
    seeds_count: int
    seeds_per_job: int
    baseline: str
    targets: tuple[float, ...]
    batch_modes: dict[str, BatchMode]
    scenarios: dict[str, dict]
    optimizers: dict[str, OptimizerArm]
    resolved: dict  # the resolved configuration as plain data (provenance)
    games: int | None = None  # the budget in games when the config gave games

    def to_json(self) -> str:
        return json.dumps(self.resolved, sort_keys=True)

    def batch_mode(self, name: str) -> BatchMode:
        return _pick(self.batch_modes, name, "batch mode")

    def scenario(self, name: str) -> dict:
        return _pick(self.scenarios, name, "scenario")

    def optimizer(self, name: str) -> OptimizerArm:
        return _pick(self.optimizers, name, "optimizer")

    def seed_range(self) -> range:
        return range(self.seeds_first, self.seeds_first + self.seeds_count)


def _pick(table: dict, name: str, what: str):
    try:
        return table[name]
    except KeyError:
        raise ConfigError(f"unknown {what} {name!r}; this config has: {', '.join(table)}") from None


def _key_path(path) -> str:
    parts = [str(p) if not isinstance(p, int) else f"[{p}]" for p in path]
    return ".".join(parts).replace(".[", "[") or "<top level>"


def schema_errors(schema: dict, instance: Any) -> list[jsonschema.ValidationError]:
    """jsonschema's errors of ``instance`` against ``schema`` (Draft 2020-12), or none
    without loading jsonschema when :func:`schema_check.is_valid` proves it valid (its
    import and validation are about a tenth of a whole 1000-seed ``simulate``)."""
    try:
        if schema_check.is_valid(schema, instance):
            return []
    except schema_check.Unsupported:
        pass  # a keyword the fast check does not decide: jsonschema does
    import jsonschema

    return list(jsonschema.Draft202012Validator(schema).iter_errors(instance))


def _schema_error_line(error: jsonschema.ValidationError) -> str:
    from jsonschema.exceptions import best_match

    # Prefer the most specific error inside combinators (if/then, allOf).
    best = best_match([error]) if error.context else error
    while best.context:
        best = best_match(best.context)
    key = _key_path(best.absolute_path)
    if "propertyNames" in best.schema_path:  # a name (of a scenario, arm, ...), not a value
        return _bad_name(key, best.instance)
    if best.validator == "additionalProperties":
        extra = re.findall(r"'([^']+)' (?:was|were) unexpected", best.message)
        unknown = re.findall(r"'([^']+)'", best.message.split("(")[-1]) if not extra else extra
        return f"{key}: unknown key {', '.join(repr(u) for u in unknown)} ({best.message})"
    if best.validator == "required":
        return f"{key}: {best.message}"
    if best.validator == "dependentRequired":
        missing = re.findall(r"'([^']+)' is a dependency of '([^']+)'", best.message)
        if missing:
            needed, given = missing[0]
            return f"{key}: {needed!r} is a required property (of a scenario with {given})"
        return f"{key}: {best.message}"
    return f"{key} = {json.dumps(best.instance, default=str)}: {best.message}"


def _reject_non_finite(node, path=()) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            _reject_non_finite(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _reject_non_finite(value, (*path, index))
    elif isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"{_key_path(path)} = {node}: must be a finite number")
    elif isinstance(node, int) and abs(node) > 2**1023:  # no float holds it
        digits = str(node)
        raise ConfigError(f"{_key_path(path)} = {digits[:12]}... ({len(digits)} digits): too large")


def validate_raw(raw: Any) -> None:
    """Schema validation plus non-finite numbers; raises :class:`ConfigError`."""
    if not isinstance(raw, dict):
        raise ConfigError(f"<top level> = {raw!r}: the configuration must be a mapping")
    _reject_non_finite(raw)
    _check_budget_lists(raw)
    _check_sweep_keys(raw)
    errors = sorted(
        schema_errors(build_schema(), raw),
        key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))),
    )
    if errors:
        raise ConfigError(_schema_error_line(errors[0]))
    _check_budget_keys(raw)
    for name, scenario in raw["scenarios"].items():
        _check_scenario_keys(name, scenario)
    _check_names(raw)


def _check_budget_lists(raw: dict) -> None:
    """Before the schema: a list of budgets at the top level belongs in ``budget_study``."""
    for key in ("num_pairs", "games"):
        if isinstance(raw.get(key), list):
            raise ConfigError(
                f"{key} = {json.dumps(raw[key], default=str)}: the grid takes one budget (its "
                f"run files share one checkpoint grid); give a list of budgets as "
                f"budget_study.{key} (docs/benchmark.md, 'Budget study')"
            )


def _check_budget_keys(raw: dict) -> None:
    given = [key for key in ("num_pairs", "games") if key in raw]
    if len(given) != 1:
        what = "both" if given else "neither"
        raise ConfigError(f"num_pairs, games: give exactly one budget key, not {what}")


def scenario_kind(scenario: dict) -> str:
    """``"groups"`` or ``"block"`` (a tune scenario: a Fishtest parameter block)."""
    return "groups" if "groups" in scenario else "block"


def _check_scenario_keys(name: str, scenario: dict) -> None:
    """Exactly one source; no key of the other kind of scenario."""
    from spsa_bench.config.schema import GROUP_ONLY_KEYS, SCENARIO_SOURCES, TUNE_ONLY_KEYS

    where = f"scenarios.{name}"
    sources = [key for key in SCENARIO_SOURCES if key in scenario]
    if len(sources) != 1:
        got = f"got {' and '.join(sources)}" if sources else "got none"
        raise ConfigError(f"{where}: give exactly one of {', '.join(SCENARIO_SOURCES)} ({got})")
    if sources[0] == "groups":
        foreign, kind = TUNE_ONLY_KEYS, "a tune scenario (a parameter block)"
    else:
        foreign, kind = GROUP_ONLY_KEYS, "a groups scenario"
    for key in foreign:
        if key in scenario:
            raise ConfigError(f"{where}.{key}: only {kind} takes {key}")


_NAME = re.compile(NAME_PATTERN.removeprefix("^").removesuffix("$"))


def _bad_name(key: str, name) -> str:
    return (
        f"{key}: name {json.dumps(name)} is not allowed "
        "(lower-case letters, digits, '-' and '_', starting with a letter or digit)"
    )


def _check_names(raw: dict) -> None:
    """Names become path components: match them whole.

    The schema's pattern ends in ``$``, which Python's ``re.search`` (used by
    jsonschema) also matches before a trailing newline, so ``"mixed\\n"`` passed.
    """
    for table in ("batch_modes", "scenarios", "optimizers"):
        for name in raw[table]:
            if not _NAME.fullmatch(name):
                raise ConfigError(_bad_name(table, name))
    for scenario_name, scenario in raw["scenarios"].items():
        for index, group in enumerate(scenario.get("groups", ())):
            if not _NAME.fullmatch(group["name"]):
                raise ConfigError(
                    _bad_name(f"scenarios.{scenario_name}.groups[{index}].name", group["name"])
                )


def _check_scenario(name: str, scenario: dict) -> None:
    where = f"scenarios.{name}"
    if scenario["start_elo"] >= scenario["peak_elo"]:
        raise ConfigError(
            f"{where}.start_elo = {scenario['start_elo']}: must be below peak_elo = {scenario['peak_elo']}"
        )
    if not math.isfinite(float(scenario["peak_elo"]) - float(scenario["start_elo"])):
        raise ConfigError(
            f"{where}.start_elo = {scenario['start_elo']}: peak_elo - start_elo overflows a float"
        )
    seen = set()
    any_displaced = False
    for index, group in enumerate(scenario["groups"]):
        gwhere = f"{where}.groups[{index}]"
        if group["name"] in seen:
            raise ConfigError(f"{gwhere}.name = {group['name']!r}: duplicate group name")
        seen.add(group["name"])
        distance = float(group["theta_start"]) - float(group["theta_peak"])
        if not math.isfinite(distance * distance * group["w_true"] * group["count"]):
            raise ConfigError(
                f"{gwhere}.theta_start = {group['theta_start']}: w_true (theta_start - theta_peak)^2 "
                f"overflows a float (theta_peak = {group['theta_peak']})"
            )
        if group["w_true"] > 0 and group["w_dev"] <= 0:
            raise ConfigError(
                f"{gwhere}.w_dev = {group['w_dev']}: must be > 0 on an active parameter (w_true > 0)"
            )
        has_min, has_max = "theta_min" in group, "theta_max" in group
        if has_min != has_max:
            raise ConfigError(f"{gwhere}: give both theta_min and theta_max or neither")
        if has_min:
            if group["theta_min"] >= group["theta_max"]:
                raise ConfigError(
                    f"{gwhere}.theta_min = {group['theta_min']}: must be below theta_max = {group['theta_max']}"
                )
            if not math.isfinite(float(group["theta_max"]) - float(group["theta_min"])):
                raise ConfigError(
                    f"{gwhere}.theta_max = {group['theta_max']}: theta_max - theta_min overflows a float"
                )
            if not group["theta_min"] <= group["theta_start"] <= group["theta_max"]:
                raise ConfigError(
                    f"{gwhere}.theta_start = {group['theta_start']}: outside [theta_min, theta_max]"
                )
        elif group["w_dev"] <= 0:
            raise ConfigError(
                f"{gwhere}.w_dev = {group['w_dev']}: w_dev = 0 needs explicit theta_min/theta_max"
            )
        if group["w_true"] > 0 and group["theta_start"] != group["theta_peak"]:
            any_displaced = True
    if not any_displaced:
        raise ConfigError(
            f"{where}.groups: no active parameter starts away from its peak, so the bowl is flat"
        )


def _check_problem(name: str, scenario: dict, num_pairs: int) -> None:
    """Build the scenario's problem once, so what cannot be derived is refused here."""
    import numpy as np

    from spsa_bench.model.bowl import build_problem

    with np.errstate(all="ignore"):
        try:
            build_problem(
                scenario["groups"],
                start_elo=scenario["start_elo"],
                peak_elo=scenario["peak_elo"],
                c_elo_gap=scenario["c_elo_gap"],
                c_fraction=scenario["c_fraction"],
                num_pairs=num_pairs,
            )
        except ValueError as error:
            raise ConfigError(f"scenarios.{name}: {error}") from None


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


def _expand_worker_lists(modes: dict) -> tuple[dict, dict[str, str]]:
    """Batch modes with ``workers`` given as a list become one mode per value, named
    ``<mode>-w<workers>``; returns the modes and ``{expanded name: configured name}``."""
    out, sweep = {}, {}
    for name, mode in modes.items():
        counts = mode["workers"]
        if not isinstance(counts, list):
            out[name] = mode
            continue
        for workers in counts:
            expanded = f"{name}-w{workers}"
            if expanded in modes or expanded in out:
                raise ConfigError(
                    f"batch_modes.{name}.workers: the expanded mode {expanded!r} is also "
                    "configured; rename one of them"
                )
            out[expanded] = {**copy.deepcopy(mode), "workers": workers}
            sweep[expanded] = name
    return out, sweep


#: Most arms one configured arm's hyperparameter sweep may expand into.
MAX_SWEEP_ARMS = 1000
#: Significant digits of a ``log_range`` sweep's values.
LOG_RANGE_DIGITS = 6


def _is_sweep(value) -> bool:
    """A list of values or a ``{log_range: ...}`` mapping: a swept hyperparameter."""
    return isinstance(value, (list, dict))


def _check_sweep_keys(raw: dict) -> None:
    """Before the schema, so the message says what a sweep may not do: ``kind`` is not
    swept, and only hyperparameters of the arm's kind are."""
    arms = raw.get("optimizers")
    if not isinstance(arms, dict):
        return
    for name, arm in arms.items():
        if not isinstance(arm, dict):
            continue
        kind = arm.get("kind", name)
        if _is_sweep(kind):
            raise ConfigError(
                f"optimizers.{name}.kind = {json.dumps(kind, default=str)}: kind cannot be "
                "swept; give one arm per kind (only hyperparameters take lists or log_range)"
            )
        spec = REGISTRY.get(kind) if isinstance(kind, str) else None
        if spec is None:
            continue  # the schema names the unknown kind
        names = [f.name for f in dataclasses.fields(spec.hyper)]
        for key, value in arm.items():
            if key != "kind" and key not in names and _is_sweep(value):
                raise ConfigError(
                    f"optimizers.{name}.{key}: not a hyperparameter of kind {kind!r}, so it "
                    f"cannot be swept (its hyperparameters: {', '.join(names)})"
                )


def check_arm_settings(where: str, kind: str, settings: dict) -> None:
    """A study's own arm (``settings`` of an arm of ``kind``) against the schema of a
    configured arm: hyperparameter names, types, bounds and sweep forms; the error
    names the key under ``where``."""
    from spsa_bench.config.schema import arm_schema

    if kind not in REGISTRY:
        raise ConfigError(
            f"{where}.kind = {json.dumps(kind, default=str)}: unknown optimizer kind "
            f"(one of {', '.join(REGISTRY)})"
        )
    errors = sorted(
        schema_errors(arm_schema(kind), {**settings, "kind": kind}), key=lambda e: len(e.path)
    )
    if errors:
        line = _schema_error_line(errors[0])
        top = "<top level>"
        raise ConfigError(where + line[len(top) :] if line.startswith(top) else f"{where}.{line}")


def _log_range_values(where: str, spec: dict) -> list[float]:
    """``num`` log-spaced values from ``min`` to ``max`` inclusive, each rounded to
    :data:`LOG_RANGE_DIGITS` significant digits (the schema checks min > 0, num >= 2)."""
    low, high, num = float(spec["min"]), float(spec["max"]), int(spec["num"])
    if not high > low:
        raise ConfigError(f"{where}.max = {spec['max']}: must be above min = {spec['min']}")
    log_low, log_high = math.log(low), math.log(high)
    values = [low]
    values += [math.exp(log_low + (log_high - log_low) * i / (num - 1)) for i in range(1, num - 1)]
    values.append(high)
    rounded = [float(f"{value:.{LOG_RANGE_DIGITS}g}") for value in values]
    if len(set(rounded)) != len(rounded):
        raise ConfigError(
            f"{where}: {num} values from {spec['min']} to {spec['max']} are not distinct at "
            f"{LOG_RANGE_DIGITS} significant digits; give fewer values or a wider range"
        )
    return rounded


def _name_token(value) -> str:
    """A hyperparameter value as part of an arm name (NAME_PATTERN: no '.', '+' or
    upper case): ``0.001`` -> ``0p001``, ``5000.0`` -> ``5000``, ``-0.5`` -> ``m0p5``,
    ``1e-05`` -> ``1e-05``, ``"LTC"`` -> ``ltc``."""
    if value is None:
        return "none"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    text = str(value).lower().replace("+", "").replace(".", "p")
    if text.startswith("-"):
        text = "m" + text[1:]
    return re.sub(r"[^a-z0-9_-]", "_", text)


def _check_swept_value(where: str, value, entry: dict) -> None:
    """A log_range value within the hyperparameter's bounds (rounding may cross one)."""
    for error in schema_errors(entry, value):
        raise ConfigError(f"{where}: the swept value {value} {error.message.split(' ', 1)[1]}")


def expand_sweeps(
    arms: dict, table: str = "optimizers"
) -> tuple[dict, dict[str, tuple[str, tuple]]]:
    """Arms with hyperparameters given as a list or ``{log_range: {min, max, num}}`` become
    one arm per value (the cartesian product when several are swept), named
    ``<arm>-<key>-<value>`` per swept key (:func:`_name_token`); returns the arms and
    ``{expanded name: (configured name, ((key, value), ...))}``. Errors name the arm
    under ``table`` (the key of ``arms`` in the configuration)."""
    from spsa_bench.optimizers.base import hyper_schema

    out, sweep = {}, {}
    for name, arm in arms.items():
        arm = dict(arm or {})
        kind = arm.get("kind", name)
        swept = [key for key, value in arm.items() if key != "kind" and _is_sweep(value)]
        if not swept or kind not in REGISTRY:
            out[name] = arm
            continue
        entries = hyper_schema(REGISTRY[kind].hyper)
        axes = []
        for key in swept:
            where = f"{table}.{name}.{key}"
            if isinstance(arm[key], list):
                axes.append(list(arm[key]))
                continue
            values = _log_range_values(f"{where}.log_range", arm[key]["log_range"])
            for value in values:
                _check_swept_value(where, value, entries[key])
            axes.append(values)
        count = math.prod(len(values) for values in axes)
        if count > MAX_SWEEP_ARMS:
            raise ConfigError(
                f"{table}.{name}: sweeping {', '.join(swept)} gives {count:,} arms, more "
                f"than {MAX_SWEEP_ARMS:,}"
            )
        for combination in itertools.product(*axes):
            pairs = tuple(zip(swept, combination, strict=True))
            expanded = name + "".join(f"-{key.lower()}-{_name_token(v)}" for key, v in pairs)
            if expanded in arms or expanded in out:
                taken = "is also configured" if expanded in arms else "is given twice"
                raise ConfigError(
                    f"{table}.{name}.{swept[0]}: the expanded arm {expanded!r} {taken}; "
                    "rename one of them"
                )
            if not _NAME.fullmatch(expanded):
                raise ConfigError(_bad_name(f"{table}.{name}", expanded))
            out[expanded] = {**copy.deepcopy(arm), "kind": kind, **dict(pairs)}
            sweep[expanded] = (name, pairs)
    return out, sweep


def _fishtest_mode(where: str, raw: dict, default_tc: str) -> tuple[dict, dict]:
    """A ``batch: fishtest`` mode as the variable batch it is: ``tc_ratio`` from the
    worker's rule at the mode's ``tc`` (default: the top-level noise preset, else STC),
    game durations assumed for that time control unless given
    (:mod:`spsa_bench.model.time_control`)."""
    from spsa_bench.model.time_control import batch_multiplier, game_duration

    for key in ("tc_ratio", "batch_size"):
        if key in raw:
            raise ConfigError(
                f"{where}.{key}: not used by batch: fishtest (the batch follows Fishtest's "
                "rule from tc and each worker's concurrency)"
            )
    resolved = copy.deepcopy(raw)
    resolved.setdefault("tc", default_tc)
    resolved.setdefault("game_duration", game_duration(resolved["tc"]))
    return resolved, {
        **resolved,
        "batch": "variable",
        "tc_ratio": float(batch_multiplier(resolved["tc"])),
    }


def resolve_batch_mode(
    name: str, raw: dict, num_pairs: int, default_tc: str = "STC"
) -> tuple[BatchMode, dict]:
    where = f"batch_modes.{name}"
    if raw["batch"] == "fishtest":
        resolved, raw = _fishtest_mode(where, raw, default_tc)
    else:
        if "tc" in raw:
            raise ConfigError(f"{where}.tc: only batch: fishtest takes a time control")
        resolved = copy.deepcopy(raw)
    if raw["batch"] == "fixed":
        if "batch_size" not in raw:
            raise ConfigError(f"{where}.batch_size: required when batch is 'fixed'")
        if raw["batch_size"] > num_pairs:
            raise ConfigError(
                f"{where}.batch_size = {raw['batch_size']}: larger than num_pairs = {num_pairs}"
            )
    if raw["workers"] == 1 and raw["batch"] == "fixed":
        extra = sorted(set(raw) - {"workers", "batch", "batch_size"})
        if extra:
            raise ConfigError(
                f"{where}.{extra[0]}: not used by a synchronous (1 worker, fixed batch) mode"
            )
        return BatchMode(name, 1, "fixed", int(raw["batch_size"]), None), resolved
    # AsyncSettings holds the defaults and the checks; its messages name the
    # configuration keys, so only the batch mode's path is added here.
    from spsa_bench.dispatch.asynchronous import AsyncSettings

    fishtest = resolved["batch"] == "fishtest"
    for key, value in AsyncSettings.config_defaults().items():
        if not (fishtest and key == "tc_ratio"):  # derived from tc
            resolved.setdefault(key, value)
    try:
        settings = AsyncSettings.from_config({**resolved, **raw} if fishtest else resolved)
    except ValueError as error:
        raise ConfigError(f"{where}.{error}") from None
    mode = BatchMode(
        name, settings.num_workers, resolved["batch"], resolved.get("batch_size"), settings
    )
    return mode, resolved


def _check_noise(key: str, setting) -> None:
    """Calibrate the noise model now, so a setting no model reaches is refused by key."""
    from spsa_bench.model.noise import NoiseError, noise_model

    try:
        noise_model(setting)
    except NoiseError as error:
        raise ConfigError(f"{key}: {error}") from None


def _num_pairs(data: dict) -> tuple[int, int | None]:
    """``(num_pairs, games)`` of the budget key given (:func:`_check_budget_keys`)."""
    if "num_pairs" in data:
        return int(data["num_pairs"]), None
    from spsa_bench.config.param_block import BlockError, check_games

    try:
        games = check_games(data["games"])
    except BlockError as error:
        raise ConfigError(str(error)) from None
    data["games"] = games
    return games // 2, games


def _read_block_file(where: str, value: str, base_dir: Path | None) -> str:
    from spsa_bench.config.param_block import BlockError, read_block_text

    path = Path(value)
    if not path.is_absolute():
        path = (base_dir if base_dir is not None else Path.cwd()) / path
    try:
        return read_block_text(path)
    except BlockError as error:
        raise ConfigError(f"{where}.fishtest_params_file = {value!r}: {error}") from None


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
    from spsa_bench.model.instances import PriorError

    where = f"scenarios.{name}"
    if "fishtest_params_file" in scenario:
        value = scenario.pop("fishtest_params_file")
        text = _read_block_file(where, value, base_dir)
        key = f"{where}.fishtest_params_file = {value!r}"
        scenario["fishtest_params"] = text
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

    batch_modes = _resolve_batch_modes(data, num_pairs)
    _check_noise("noise", data["noise"])
    _resolve_scenarios(data, num_pairs, base_dir)
    optimizers = _resolve_arms(data, raw)
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


def default_time_control(noise) -> str:
    """The time control a ``batch: fishtest`` pool takes by default: the top-level noise
    preset when it is one of STC, LTC, VLTC, else STC."""
    return noise if isinstance(noise, str) and noise in ("STC", "LTC", "VLTC") else "STC"


def _resolve_batch_modes(data: dict, num_pairs: int) -> dict[str, BatchMode]:
    """Workers lists expanded, every mode checked, defaults filled into ``data``."""
    batch_modes = {}
    data["batch_modes"], sweeps = _expand_worker_lists(data["batch_modes"])
    default_tc = default_time_control(data["noise"])
    for name, mode_raw in data["batch_modes"].items():
        mode, data["batch_modes"][name] = resolve_batch_mode(name, mode_raw, num_pairs, default_tc)
        batch_modes[name] = dataclasses.replace(mode, sweep=sweeps.get(name))
    return batch_modes


def _resolve_scenarios(data: dict, num_pairs: int, base_dir: Path | None) -> None:
    """Every scenario checked (groups or a parameter block), defaults filled into ``data``."""
    for name, scenario in data["scenarios"].items():
        if scenario_kind(scenario) == "groups":
            _check_scenario(name, scenario)
            _check_problem(name, scenario, num_pairs)
            for group in scenario["groups"]:
                group.setdefault("integer", False)
        else:
            _resolve_tune(name, scenario, base_dir)
        scenario.setdefault("rounding", DEFAULT_ROUNDING)
        scenario.setdefault("noise", copy.deepcopy(data["noise"]))
        _check_noise(f"scenarios.{name}.noise", scenario["noise"])


def _resolve_arms(data: dict, raw: dict) -> dict[str, OptimizerArm]:
    """Sweeps expanded, every arm's hyperparameters checked, the baseline among them."""
    optimizers = {}
    data["optimizers"], arm_sweeps = expand_sweeps(data["optimizers"])
    for name, arm_raw in data["optimizers"].items():
        arm_raw = dict(arm_raw or {})
        kind = arm_raw.pop("kind", name)
        if kind not in REGISTRY:
            raise ConfigError(
                f"optimizers.{name}: unknown optimizer {name!r}; give kind (one of {', '.join(REGISTRY)})"
            )
        try:
            hyper = hyper_from_dict(kind, arm_raw)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"optimizers.{name}: {error}") from None
        source, swept = arm_sweeps.get(name, (None, ()))
        optimizers[name] = OptimizerArm(name, kind, hyper, sweep=source, swept=swept)
        data["optimizers"][name] = {"kind": kind, **asdict(hyper)}
    swept_arms = [arm.name for arm in optimizers.values() if arm.sweep == data["baseline"]]
    if data["baseline"] not in optimizers and swept_arms:
        default = "" if "baseline" in raw else " (the default)"
        raise ConfigError(
            f"baseline = {data['baseline']!r}{default}: a swept arm, expanded into "
            f"{', '.join(swept_arms)}; name one of them (or another arm) as the baseline"
        )
    if data["baseline"] not in optimizers:
        raise ConfigError(
            f"baseline = {data['baseline']!r}: not one of the optimizers ({', '.join(optimizers)})"
        )
    return optimizers


#: The optional sections no simulation of the grid depends on (studies, tuning).
STUDY_SECTIONS = ("cend_study", "workers_study", "budget_study", "tuning")


def _check_studies(config: Config) -> None:
    """The optional studies' references, once the tables they name exist."""
    data = config.resolved
    if "cend_study" in data:
        from spsa_bench.engine import cend_study

        cend_study.study_settings(config)
    if "workers_study" in data:
        from spsa_bench.engine import workers_study

        workers_study.study_settings(config)
    if "tuning" in data:
        from spsa_bench.engine import tuning

        tuning.tuning_settings(config)
    if "budget_study" in data:
        from spsa_bench.engine import budget_study

        budget_study.study_settings(config)


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


def parse_seed_range(text: str) -> range:
    """``"7"`` or ``"0-99"`` (inclusive, ASCII digits) -> range; refuses reversed,
    malformed and empty ranges and ranges beyond :mod:`spsa_bench.config.limits`."""
    from spsa_bench.config.limits import LimitError, check_seed_range

    match = re.fullmatch(r"\s*([0-9]{1,30})\s*(?:-\s*([0-9]{1,30})\s*)?", text, flags=re.ASCII)
    if not match:
        raise ConfigError(f"--seeds = {text!r}: expected FIRST or FIRST-LAST, e.g. 0-99")
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if last < first:
        raise ConfigError(f"--seeds = {text!r}: the range is reversed (last < first)")
    try:
        check_seed_range(f"--seeds = {text!r}", first, last - first + 1)
    except LimitError as error:
        raise ConfigError(str(error)) from None
    return range(first, last + 1)


__all__ = [
    "Config",
    "ConfigError",
    "BatchMode",
    "OptimizerArm",
    "check_config_file",
    "load_config",
    "read_yaml",
    "resolve",
    "parse_seed_range",
    "scenario_block",
    "scenario_kind",
    "scenario_param_count",
    "scenario_prior",
    "NAME_PATTERN",
]
