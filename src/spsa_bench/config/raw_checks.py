"""Checks of a configuration as parsed, before anything is resolved, and the one-line
messages they raise: a schema error as ``<key path> = <value>: <what is wrong>``,
numbers no float holds, budgets given as a list or not exactly once, a scenario's
source keys, and names matched whole (names become path components)."""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any

from spsa_bench.config import schema_check
from spsa_bench.config.records import ConfigError
from spsa_bench.config.schema_fragments import NAME_PATTERN

if TYPE_CHECKING:
    import jsonschema

#: A name as the schema's NAME_PATTERN allows it, for ``fullmatch`` (see :func:`check_names`).
NAME = re.compile(NAME_PATTERN.removeprefix("^").removesuffix("$"))


def key_path(path) -> str:
    """A key path as a message names it: ``scenarios.mixed.groups[0].name``."""
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


def schema_error_line(error: jsonschema.ValidationError) -> str:
    """The one-line message of a schema error, naming the key and the value."""
    from jsonschema.exceptions import best_match

    # Prefer the most specific error inside combinators (if/then, allOf).
    best = best_match([error]) if error.context else error
    while best.context:
        best = best_match(best.context)
    key = key_path(best.absolute_path)
    if "propertyNames" in best.schema_path:  # a name (of a scenario, arm, ...), not a value
        return bad_name(key, best.instance)
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


def reject_non_finite(node, path=()) -> None:
    """Refuse infinities, NaN and integers beyond every float (``|n| > 2**1023``)."""
    if isinstance(node, dict):
        for key, value in node.items():
            reject_non_finite(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            reject_non_finite(value, (*path, index))
    elif isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"{key_path(path)} = {node}: must be a finite number")
    elif isinstance(node, int) and abs(node) > 2**1023:  # no float holds it
        digits = str(node)
        raise ConfigError(f"{key_path(path)} = {digits[:12]}... ({len(digits)} digits): too large")


def check_budget_lists(raw: dict) -> None:
    """Before the schema: a list of budgets at the top level belongs in ``budget_study``."""
    for key in ("num_pairs", "games"):
        if isinstance(raw.get(key), list):
            raise ConfigError(
                f"{key} = {json.dumps(raw[key], default=str)}: the grid takes one budget (its "
                f"run files share one checkpoint grid); give a list of budgets as "
                f"budget_study.{key} (docs/benchmark.md, 'Budget study')"
            )


def check_budget_keys(raw: dict) -> None:
    """Exactly one of ``num_pairs`` and ``games``."""
    given = [key for key in ("num_pairs", "games") if key in raw]
    if len(given) != 1:
        what = "both" if given else "neither"
        raise ConfigError(f"num_pairs, games: give exactly one budget key, not {what}")


def check_scenario_keys(name: str, scenario: dict) -> None:
    """Exactly one source; no key of the other kind of scenario."""
    from spsa_bench.config.scenario_schema import GROUP_ONLY_KEYS, SCENARIO_SOURCES, TUNE_ONLY_KEYS

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


def bad_name(key: str, name) -> str:
    """The message refusing ``name`` at ``key``."""
    return (
        f"{key}: name {json.dumps(name)} is not allowed "
        "(lower-case letters, digits, '-' and '_', starting with a letter or digit)"
    )


def check_names(raw: dict) -> None:
    """Names become path components: match them whole.

    The schema's pattern ends in ``$``, which Python's ``re.search`` (used by
    jsonschema) also matches before a trailing newline, so ``"mixed\\n"`` passed.
    """
    for table in ("batch_modes", "scenarios", "optimizers"):
        for name in raw[table]:
            if not NAME.fullmatch(name):
                raise ConfigError(bad_name(table, name))
    for scenario_name, scenario in raw["scenarios"].items():
        for index, group in enumerate(scenario.get("groups", ())):
            if not NAME.fullmatch(group["name"]):
                raise ConfigError(
                    bad_name(f"scenarios.{scenario_name}.groups[{index}].name", group["name"])
                )
