"""The building blocks the configuration's JSON Schema is written with: a described
number or integer with its bounds, a closed object (no keys beyond its properties), a
``{min, max}`` range, and the pattern of every name. They keep their underscore names:
they are this package's shorthand for writing schema fragments, not an interface."""

from __future__ import annotations

NAME_PATTERN = "^[a-z0-9][a-z0-9_-]*$"


def _num(description: str, **bounds) -> dict:
    return {"type": "number", "description": description, **bounds}


def _int(description: str, **bounds) -> dict:
    return {"type": "integer", "description": description, **bounds}


def _object(description: str, properties: dict, required=(), **extra) -> dict:
    out = {
        "type": "object",
        "description": description,
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        out["required"] = list(required)
    out.update(extra)
    return out


def _range(description: str, item: dict) -> dict:
    return _object(description, {"min": item, "max": item}, required=("min", "max"))
