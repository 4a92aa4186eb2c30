"""An exact yes/no check of a document against the configuration schema, without jsonschema.

jsonschema words every error, but importing it and validating a configuration cost
about 50 ms, a tenth of a 1000-seed ``spsa-bench simulate``. A valid document needs no
message, so the loader asks :func:`is_valid` first and goes to jsonschema only when
the answer is not a plain yes.

:func:`is_valid` decides JSON Schema Draft 2020-12 validity, as jsonschema's
``Draft202012Validator`` does (no format assertion), for the keywords the
spsa-bench schemas use::

    type enum const minimum maximum exclusiveMinimum exclusiveMaximum
    minLength maxLength pattern properties additionalProperties required
    minProperties maxProperties propertyNames dependentRequired items minItems
    maxItems uniqueItems allOf anyOf oneOf not if/then/else

plus annotations (``description``, ``default``, ...), which assert nothing. Any other
keyword (``$ref``, ``format``, ``prefixItems``, ...) raises :class:`Unsupported`, and
the caller falls back to jsonschema. As in jsonschema, ``2.0`` is an integer, a
boolean is neither an integer nor a number, and ``true`` never equals ``1`` in
``enum``, ``const`` and ``uniqueItems``. The tests hold it to jsonschema's verdict on
every shipped configuration and on thousands of mutated ones.
"""

from __future__ import annotations

import numbers
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: Keywords that only annotate (jsonschema asserts nothing for them), and ``then``/``else``,
#: which only ``if`` reads.
_PASSIVE = frozenset(
    {
        "$schema", "$id", "$comment", "title", "description", "default", "examples",
        "deprecated", "readOnly", "writeOnly", "then", "else",
    }
)  # fmt: skip


class Unsupported(ValueError):
    """The schema uses a keyword :func:`is_valid` does not decide."""


def is_valid(schema: Mapping | bool, instance: Any) -> bool:
    """Whether ``instance`` satisfies ``schema`` (Draft 2020-12); raises :class:`Unsupported`
    for a keyword outside the supported set (see the module docstring)."""
    return _valid(schema, instance)


def _valid(schema, instance) -> bool:
    if schema is True:
        return True
    if schema is False:
        return False
    for keyword, value in schema.items():
        check = _KEYWORDS.get(keyword)
        if check is None:
            if keyword in _PASSIVE:
                continue
            raise Unsupported(f"schema keyword {keyword!r}")
        # A failed keyword makes the instance invalid whatever the keywords after it say,
        # so stopping here is exact; True is only returned once every keyword was checked.
        if not check(value, instance, schema):
            return False
    return True


def _is_type(instance, name: str) -> bool:
    if name == "object":
        return isinstance(instance, dict)
    if name == "array":
        return isinstance(instance, list)
    if name == "string":
        return isinstance(instance, str)
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "null":
        return instance is None
    if name not in ("integer", "number"):
        raise Unsupported(f"type {name!r}")
    if isinstance(instance, bool):
        return False
    if name == "integer":
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    return isinstance(instance, numbers.Number)


def _equal(one, two) -> bool:
    """JSON equality: ``1 == 1.0``, but a boolean equals only itself."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(map(_equal, one, two))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(
            key in two and _equal(value, two[key]) for key, value in one.items()
        )
    if isinstance(one, bool) or isinstance(two, bool):
        return False  # not the same object, so not the same boolean
    return one == two


def _unique(items: list) -> bool:
    """No two items JSON-equal (:func:`_equal`)."""
    keys = []
    for item in items:
        if isinstance(item, bool):
            keys.append((bool, item))  # apart from 0 and 1
        elif isinstance(item, (str, int, float)):
            keys.append(item)  # hashing agrees with _equal here: 1 and 1.0 collide
        else:  # lists, mappings, ...: compare every pair
            return not any(_equal(items[i], items[j]) for i in range(len(items)) for j in range(i))
    return len(set(keys)) == len(keys)


def _number_check(fails: Callable[[Any, Any], bool]):
    """A bound on numbers: other types pass; a number passes unless ``fails(number, bound)``."""

    def check(bound, instance, schema) -> bool:
        return not (_is_type(instance, "number") and fails(instance, bound))

    return check


def _size_check(kind: str, fails: Callable[[int, int], bool]):
    """A bound on the size of strings, objects or arrays (``kind``); other types pass."""

    def check(bound, instance, schema) -> bool:
        return not (_is_type(instance, kind) and fails(len(instance), bound))

    return check


def _type(value, instance, schema) -> bool:
    names = [value] if isinstance(value, str) else value
    return any(_is_type(instance, name) for name in names)


def _properties(value, instance, schema) -> bool:
    if not isinstance(instance, dict):
        return True
    return all(_valid(sub, instance[key]) for key, sub in value.items() if key in instance)


def _additional_properties(value, instance, schema) -> bool:
    if not isinstance(instance, dict) or value is True:
        return True
    if "patternProperties" in schema:
        raise Unsupported("schema keyword 'patternProperties'")
    known = schema.get("properties", {})
    extra = [key for key in instance if key not in known]
    if value is False:
        return not extra
    return all(_valid(value, instance[key]) for key in extra)


def _required(value, instance, schema) -> bool:
    return not isinstance(instance, dict) or all(key in instance for key in value)


def _property_names(value, instance, schema) -> bool:
    return not isinstance(instance, dict) or all(_valid(value, key) for key in instance)


def _dependent_required(value, instance, schema) -> bool:
    if not isinstance(instance, dict):
        return True
    return all(
        all(needed in instance for needed in dependency)
        for key, dependency in value.items()
        if key in instance
    )


def _items(value, instance, schema) -> bool:
    if "prefixItems" in schema:
        raise Unsupported("schema keyword 'prefixItems'")
    return not isinstance(instance, list) or all(_valid(value, item) for item in instance)


def _unique_items(value, instance, schema) -> bool:
    return not (value and isinstance(instance, list)) or _unique(instance)


def _pattern(value, instance, schema) -> bool:
    return not isinstance(instance, str) or re.search(value, instance) is not None


def _enum(value, instance, schema) -> bool:
    return any(_equal(each, instance) for each in value)


def _const(value, instance, schema) -> bool:
    return _equal(instance, value)


def _all_of(value, instance, schema) -> bool:
    return all(_valid(sub, instance) for sub in value)


def _any_of(value, instance, schema) -> bool:
    return any(_valid(sub, instance) for sub in value)


def _one_of(value, instance, schema) -> bool:
    return sum(1 for sub in value if _valid(sub, instance)) == 1


def _not(value, instance, schema) -> bool:
    return not _valid(value, instance)


def _if(value, instance, schema) -> bool:
    branch = "then" if _valid(value, instance) else "else"
    return branch not in schema or _valid(schema[branch], instance)


_KEYWORDS: dict[str, Callable[[Any, Any, Mapping], bool]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "minimum": _number_check(operator.lt),
    "maximum": _number_check(operator.gt),
    "exclusiveMinimum": _number_check(operator.le),
    "exclusiveMaximum": _number_check(operator.ge),
    "minLength": _size_check("string", operator.lt),
    "maxLength": _size_check("string", operator.gt),
    "pattern": _pattern,
    "properties": _properties,
    "additionalProperties": _additional_properties,
    "required": _required,
    "minProperties": _size_check("object", operator.lt),
    "maxProperties": _size_check("object", operator.gt),
    "propertyNames": _property_names,
    "dependentRequired": _dependent_required,
    "items": _items,
    "minItems": _size_check("array", operator.lt),
    "maxItems": _size_check("array", operator.gt),
    "uniqueItems": _unique_items,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
}
