"""Optimizer arms and their hyperparameter sweeps.

Each configured arm becomes an :class:`~spsa_bench.config.records.OptimizerArm` of a
registered kind with its hyperparameters checked. An arm with a hyperparameter given as
a list of values or as ``{log_range: {min, max, num}}`` first expands into one arm per
value (the cartesian product when several are swept); ``log_range`` gives the ``num``
values ``min * (max / min) ** (i / (num - 1))``, ``i = 0..num-1``, each rounded to
:data:`LOG_RANGE_DIGITS` significant digits. A study's own arm is checked against a
configured arm's schema (:func:`check_arm_settings`).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import math
import re
from dataclasses import asdict

from spsa_bench.config.raw_checks import NAME, bad_name, schema_error_line, schema_errors
from spsa_bench.config.records import ConfigError, OptimizerArm
from spsa_bench.optimizers import REGISTRY, hyper_from_dict

#: Most arms one configured arm's hyperparameter sweep may expand into.
MAX_SWEEP_ARMS = 1000
#: Significant digits of a ``log_range`` sweep's values.
LOG_RANGE_DIGITS = 6


def is_sweep(value) -> bool:
    """A list of values or a ``{log_range: ...}`` mapping: a swept hyperparameter."""
    return isinstance(value, (list, dict))


def check_sweep_keys(raw: dict) -> None:
    """Before the schema, so the message says what a sweep may not do: ``kind`` is not
    swept, and only hyperparameters of the arm's kind are."""
    arms = raw.get("optimizers")
    if not isinstance(arms, dict):
        return
    for name, arm in arms.items():
        if not isinstance(arm, dict):
            continue
        kind = arm.get("kind", name)
        if is_sweep(kind):
            raise ConfigError(
                f"optimizers.{name}.kind = {json.dumps(kind, default=str)}: kind cannot be "
                "swept; give one arm per kind (only hyperparameters take lists or log_range)"
            )
        spec = REGISTRY.get(kind) if isinstance(kind, str) else None
        if spec is None:
            continue  # the schema names the unknown kind
        names = [f.name for f in dataclasses.fields(spec.hyper)]
        for key, value in arm.items():
            if key != "kind" and key not in names and is_sweep(value):
                raise ConfigError(
                    f"optimizers.{name}.{key}: not a hyperparameter of kind {kind!r}, so it "
                    f"cannot be swept (its hyperparameters: {', '.join(names)})"
                )


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
        swept = [key for key, value in arm.items() if key != "kind" and is_sweep(value)]
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
            if not NAME.fullmatch(expanded):
                raise ConfigError(bad_name(f"{table}.{name}", expanded))
            out[expanded] = {**copy.deepcopy(arm), "kind": kind, **dict(pairs)}
            sweep[expanded] = (name, pairs)
    return out, sweep


def check_arm_settings(where: str, kind: str, settings: dict) -> None:
    """A study's own arm (``settings`` of an arm of ``kind``) against the schema of a
    configured arm: hyperparameter names, types, bounds and sweep forms; the error
    names the key under ``where``."""
    from spsa_bench.config.optimizer_schema import arm_schema

    if kind not in REGISTRY:
        raise ConfigError(
            f"{where}.kind = {json.dumps(kind, default=str)}: unknown optimizer kind "
            f"(one of {', '.join(REGISTRY)})"
        )
    errors = sorted(
        schema_errors(arm_schema(kind), {**settings, "kind": kind}), key=lambda e: len(e.path)
    )
    if errors:
        line = schema_error_line(errors[0])
        top = "<top level>"
        raise ConfigError(where + line[len(top) :] if line.startswith(top) else f"{where}.{line}")


def resolve_arms(data: dict, raw: dict) -> dict[str, OptimizerArm]:
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
