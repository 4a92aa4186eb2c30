"""The fast schema check (spsa_bench.config.schema_check) against jsonschema's verdict."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from spsa_bench.config import schema_check
from spsa_bench.config.loader import ConfigError, read_yaml, schema_errors, validate_raw
from spsa_bench.config.schema import arm_schema, build_schema
from spsa_bench.optimizers import REGISTRY

CONFIGS = sorted((Path(__file__).parents[2] / "config").glob("*.yaml"))


def reference_valid(schema, instance) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_configuration_is_decided_without_jsonschema(path):
    # decided at all (no Unsupported keyword on the way), and valid, as jsonschema says
    raw = read_yaml(path)
    assert schema_check.is_valid(build_schema(), raw) is True
    assert reference_valid(build_schema(), raw)


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_every_arm_schema_is_decided_without_jsonschema(kind):
    assert schema_check.is_valid(arm_schema(kind), {"kind": kind}) is True


# (schema, instance) pairs on which JSON Schema's rules are easy to get wrong
EDGE_CASES = [
    ({"type": "integer"}, 2.0),
    ({"type": "integer"}, 2.5),
    ({"type": "integer"}, True),
    ({"type": "number"}, False),
    ({"type": "number"}, 3),
    ({"type": ["string", "null"]}, None),
    ({"type": "object"}, []),
    ({"type": "array"}, {}),
    ({"type": "boolean"}, 0),
    ({"enum": [1, 2]}, True),
    ({"enum": [True]}, 1),
    ({"enum": [1]}, 1.0),
    ({"enum": [[1, 2]]}, [1, 2.0]),
    ({"enum": [[1]]}, [True]),
    ({"const": {"a": 1}}, {"a": 1.0}),
    ({"const": {"a": 1}}, {"a": 1, "b": 2}),
    ({"const": False}, 0),
    ({"const": "1"}, 1),
    ({"uniqueItems": True}, [1, True]),
    ({"uniqueItems": True}, [0, False]),
    ({"uniqueItems": True}, [1, 1.0]),
    ({"uniqueItems": True}, ["1", 1]),
    ({"uniqueItems": True}, [[1], [True]]),
    ({"uniqueItems": True}, [{"a": 1}, {"a": 1.0}]),
    ({"uniqueItems": True}, [{"a": [1]}, {"a": [2]}]),
    ({"uniqueItems": False}, [1, 1]),
    ({"minimum": 0}, "text"),
    ({"minimum": 0}, -1),
    ({"minimum": 0}, True),
    ({"exclusiveMinimum": 0}, 0),
    ({"exclusiveMinimum": 0}, 0.0),
    ({"exclusiveMaximum": 1}, 1.0),
    ({"maximum": 1}, 1),
    ({"minLength": 2}, "ab"),
    ({"maxLength": 1}, "ab"),
    ({"minLength": 2}, ["a"]),
    ({"pattern": "^[a-z]+$"}, "abc\n"),
    ({"pattern": "b"}, "abc"),
    ({"pattern": "^b"}, "abc"),
    ({"pattern": "^b"}, 5),
    ({"properties": {"a": {"type": "integer"}}}, {"a": "x"}),
    ({"properties": {"a": {"type": "integer"}}}, {"b": "x"}),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "b": 2}),
    ({"properties": {"a": {}}, "additionalProperties": {"type": "string"}}, {"a": 1, "b": "x"}),
    ({"properties": {"a": {}}, "additionalProperties": {"type": "string"}}, {"b": 2}),
    ({"additionalProperties": False}, [1]),
    ({"required": ["a"]}, {"b": 1}),
    ({"required": ["a"]}, "a"),
    ({"minProperties": 1}, {}),
    ({"maxProperties": 1}, {"a": 1, "b": 2}),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, {"ab": 1, "Cd": 2}),
    ({"propertyNames": {"type": "string"}}, {1: "x"}),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}),
    ({"dependentRequired": {"a": ["b"]}}, {"b": 1}),
    ({"items": {"type": "integer"}, "minItems": 1}, []),
    ({"items": {"type": "integer"}}, [1, "2"]),
    ({"items": False}, []),
    ({"items": False}, [1]),
    ({"maxItems": 1}, [1, 2]),
    ({"allOf": [{"minimum": 0}, {"maximum": 1}]}, 2),
    ({"anyOf": [{"type": "string"}, {"minimum": 3}]}, 2),
    ({"oneOf": [{"minimum": 0}, {"maximum": 10}]}, 5),
    ({"oneOf": [{"minimum": 0}, {"maximum": 10}]}, 11),
    ({"not": {"type": "string"}}, "x"),
    ({"not": True}, 1),
    ({"if": {"required": ["a"]}, "then": {"required": ["b"]}}, {"a": 1}),
    ({"if": {"required": ["a"]}, "then": {"required": ["b"]}}, {"c": 1}),
    ({"if": {"required": ["a"]}, "else": {"required": ["b"]}}, {"c": 1}),
    ({"then": {"required": ["b"]}}, {"a": 1}),
    ({"description": "only words", "default": 3}, "anything"),
    (False, 1),
    (True, None),
]


@pytest.mark.parametrize(("schema", "instance"), EDGE_CASES)
def test_edge_cases_match_jsonschema(schema, instance):
    assert schema_check.is_valid(schema, instance) == reference_valid(schema, instance)


def test_edge_cases_hold_both_verdicts():
    # the table exercises acceptance and rejection alike
    verdicts = [reference_valid(schema, instance) for schema, instance in EDGE_CASES]
    assert 20 < sum(verdicts) < len(verdicts) - 20


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/x", "$defs": {"x": {}}},
        {"format": "email"},
        {"prefixItems": [{}], "items": {}},
        {"patternProperties": {"^a": {}}},
        {"type": "float"},
        {"multipleOf": 2},
        {"properties": {"a": {"contains": {}}}},
    ],
)
def test_a_keyword_it_does_not_decide_is_refused_not_guessed(schema):
    with pytest.raises(schema_check.Unsupported):
        schema_check.is_valid(schema, {"a": [1]})


HOSTILE = [
    None, True, False, 0, 1, -1, 2.0, 0.5, -1e9, 1e300, "", "x", "sync", "SPSA", [], [1],
    [1, 1], [1, True], ["a", "a"], {}, {"x": 1},
]  # fmt: skip


def _paths(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*path, key)
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield (*path, index)
            yield from _paths(value, (*path, index))


def _mutate(document, rng: np.random.Generator):
    """One to three random edits: replace a value, drop or add a key, nudge a number or string."""
    mutant = copy.deepcopy(document)
    for _ in range(int(rng.integers(1, 4))):
        paths = list(_paths(mutant))
        if not paths:
            return mutant
        path = paths[int(rng.integers(len(paths)))]
        parent = mutant
        for step in path[:-1]:
            parent = parent[step]
        key, value = path[-1], parent[path[-1]]
        action = int(rng.integers(4))
        if action == 0:
            parent[key] = copy.deepcopy(HOSTILE[int(rng.integers(len(HOSTILE)))])
        elif action == 1 and isinstance(parent, dict):
            del parent[key]
        elif action == 2 and isinstance(parent, dict):
            parent[f"{key}_extra"] = copy.deepcopy(value)
        elif isinstance(value, bool):
            parent[key] = not value
        elif isinstance(value, (int, float)):
            factor = [-1, 0, 0.5, 2, 1e6][int(rng.integers(5))]
            parent[key] = value * factor if rng.integers(2) else value + 1
        elif isinstance(value, str):
            parent[key] = value.upper() if rng.integers(2) else value + "-x"
    return mutant


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_mutated_configurations_get_jsonschema_verdict(path):
    schema, raw = build_schema(), read_yaml(path)
    reference = jsonschema.Draft202012Validator(schema)
    rng = np.random.default_rng(20261125)
    verdicts = []
    for _ in range(120):
        mutant = _mutate(raw, rng)
        expected = reference.is_valid(mutant)
        assert schema_check.is_valid(schema, mutant) == expected, mutant
        verdicts.append(expected)
    assert 5 <= sum(verdicts) <= len(verdicts) - 5  # both verdicts exercised


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_mutated_arms_get_jsonschema_verdict(kind):
    schema = arm_schema(kind)
    hyper = REGISTRY[kind].hyper
    arm = {
        "kind": kind,
        **{key: value for key, value in vars(hyper()).items() if value is not None},
    }
    assert reference_valid(schema, arm)
    reference = jsonschema.Draft202012Validator(schema)
    rng = np.random.default_rng(7)
    for _ in range(40):
        mutant = _mutate(arm, rng)
        assert schema_check.is_valid(schema, mutant) == reference.is_valid(mutant), mutant


def test_a_rejected_configuration_still_gets_jsonschema_error_line(tmp_path):
    raw = read_yaml(CONFIGS[0])
    raw["checkpoints"] = "many"
    assert schema_errors(build_schema(), raw)  # jsonschema's own error objects
    with pytest.raises(ConfigError, match=r"^checkpoints = \"many\": 'many' is not of type"):
        validate_raw(raw)


def test_schema_errors_defers_to_jsonschema_on_a_keyword_it_does_not_decide():
    # the fast check cannot decide "format"; jsonschema (no format assertion) accepts
    assert schema_errors({"format": "email", "type": "string"}, "not an address") == []
    errors = schema_errors({"multipleOf": 2}, 3)
    assert [error.validator for error in errors] == ["multipleOf"]
