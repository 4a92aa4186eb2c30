"""The schema of an optimizer arm, generated from the optimizer table
(:data:`spsa_bench.optimizers.REGISTRY`): each kind's hyperparameters typed, bounded and
described (:func:`~spsa_bench.optimizers.base.hyper_schema`), each also given as a sweep
(:func:`sweepable`)."""

from __future__ import annotations

from collections.abc import Mapping

from spsa_bench.config.schema_fragments import _int, _num, _object
from spsa_bench.optimizers import REGISTRY, OptimizerSpec
from spsa_bench.optimizers.base import hyper_schema

#: Most values a ``log_range`` sweep may give.
MAX_LOG_RANGE_NUM = 1000


def _types(entry: dict) -> list:
    kind = entry["type"]
    return list(kind) if isinstance(kind, list) else [kind]


def _log_range(entry: dict) -> dict:
    """``{log_range: {min, max, num}}``: num log-spaced values from min to max inclusive."""
    bounds = {k: v for k, v in entry.items() if k not in ("type", "description", "default")}
    lowest = max(bounds.pop("exclusiveMinimum", 0), 0)
    bound = _num("sweep bound (a value of the hyperparameter, > 0)", **bounds)
    bound["exclusiveMinimum"] = lowest
    return _object(
        "a log-spaced sweep: num values from min to max inclusive, each rounded to 6 "
        "significant digits",
        {
            "log_range": _object(
                "the range of the sweep",
                {
                    "min": bound,
                    "max": dict(bound),
                    "num": _int(
                        "number of values (min and max included)",
                        minimum=2,
                        maximum=MAX_LOG_RANGE_NUM,
                    ),
                },
                required=("min", "max", "num"),
            )
        },
        required=("log_range",),
    )


def sweepable(entry: dict) -> dict:
    """A hyperparameter's schema in a configured arm: its value (``entry``, from
    :func:`~spsa_bench.optimizers.base.hyper_schema`), or a list of values, or for a
    number ``{log_range: {min, max, num}}``; a list or a range sweeps the arm (one arm
    per value, :func:`spsa_bench.config.loader.resolve`).

    The forms are told apart by JSON type, so the type-specific keywords (``items``,
    ``properties``, the bounds) sit side by side and each form's walk of the schema
    (the workflow's string coercion) finds its own; a string enum applies to strings.
    """
    types = _types(entry)
    scalar = {k: v for k, v in entry.items() if k not in ("description", "default")}
    out = {k: v for k, v in entry.items() if k != "enum"}
    out["description"] = f"{entry['description']} (a list sweeps it"
    out["type"] = [*types, "array"]
    if "number" in types:
        out["description"] += ", as does {log_range: {min, max, num}}"
        out["type"].append("object")
        log_range = _log_range(entry)
        out.update({k: log_range[k] for k in ("properties", "required", "additionalProperties")})
    out["description"] += ")"
    out.update(items=scalar, minItems=1, uniqueItems=True)
    if "enum" in entry:
        out["if"] = {"not": {"type": "array"}}
        out["then"] = {"enum": list(entry["enum"])}
    return out


def arm_properties(hyper_cls: type) -> dict[str, dict]:
    """The schema of a configured arm's hyperparameters (each :func:`sweepable`)."""
    return {name: sweepable(entry) for name, entry in hyper_schema(hyper_cls).items()}


def _optimizer_arm(rows: Mapping[str, OptimizerSpec], kind: str | None) -> dict:
    """Schema of an optimizer arm; ``kind=None`` is the generic, kind-dispatched arm."""
    if kind is not None:
        spec = rows[kind]
        props = {
            "kind": {"const": kind, "description": "optimizer kind (defaults to the arm's name)"}
        }
        props.update(arm_properties(spec.hyper))
        return _object(f"{kind}: {spec.description}", props)
    branches = []
    for name in rows:
        branch = _optimizer_arm(rows, name)
        branch["required"] = ["kind"]
        branches.append(
            {"if": {"properties": {"kind": {"const": name}}, "required": ["kind"]}, "then": branch}
        )
    return {
        "type": "object",
        "description": "an optimizer arm with its own name: kind selects the algorithm",
        "properties": {"kind": {"enum": sorted(rows), "description": "optimizer kind"}},
        "required": ["kind"],
        "allOf": branches,
    }


def arm_schema(kind: str, rows: Mapping[str, OptimizerSpec] | None = None) -> dict:
    """The schema of a configured arm of ``kind`` (its hyperparameters, each
    :func:`sweepable`): what a study checks its own arms against."""
    return _optimizer_arm(REGISTRY if rows is None else rows, kind)
