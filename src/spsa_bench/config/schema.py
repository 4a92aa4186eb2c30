"""The configuration's JSON Schema, generated from one place.

The hand-written parts describe budgets, seeds and the run-wide conventions
(here), batch modes (:mod:`~spsa_bench.config.batch_mode_schema`), scenarios and
the noise model (:mod:`~spsa_bench.config.scenario_schema`) and each optional
section (its row of :data:`~spsa_bench.config.sections.SECTIONS`); the optimizer part
(:mod:`~spsa_bench.config.optimizer_schema`) is generated from the optimizer table
(:data:`spsa_bench.optimizers.REGISTRY`), so a new optimizer's
hyperparameters are typed, bounded and described without touching these files.
The generated schema of the built-in kinds is committed as
``data/config.schema.yaml`` (package data; ``workflow/schemas/config.schema.yaml``
links to it); ``spsa-bench schema --write`` regenerates it and a test checks the
committed file is current. :func:`build_schema` without arguments also covers
the optimizer plugins installed (:mod:`spsa_bench.optimizers.registry`): the
loader validates with it, and the workflow falls back to it when the packaged
schema rejects a configuration (a plugin kind it does not know).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from spsa_bench.config.batch_mode_schema import BATCH_MODE
from spsa_bench.config.limits import MAX_SEED, MAX_SEEDS
from spsa_bench.config.optimizer_schema import (
    MAX_LOG_RANGE_NUM,
    _optimizer_arm,
    arm_properties,
    arm_schema,
    sweepable,
)
from spsa_bench.config.scenario_schema import (
    GROUP,
    GROUP_ONLY_KEYS,
    NOISE,
    SCENARIO,
    SCENARIO_SOURCES,
    TRUTH,
    TUNE_ONLY_KEYS,
)
from spsa_bench.config.schema_fragments import NAME_PATTERN, _int, _num, _object
from spsa_bench.config.sections import SECTIONS
from spsa_bench.optimizers import REGISTRY, OptimizerSpec

SCHEMA_PATH = Path(__file__).with_name("data") / "config.schema.yaml"


#: The run-wide conventions of a configuration (all optional, defaults in the loader).
RUN_CONVENTIONS = {
    "signal": {
        "type": "string",
        "enum": ["raw", "scaled"],
        "description": "raw: the report's net wins (Fishtest); scaled: net wins / (2 * sqrt(num_params))",
    },
    "iteration_counter": {
        "type": "string",
        "enum": ["arrival", "dispatch"],
        "description": "iter_local = pairs arrived + 1 (Fishtest) or pairs dispatched + 1 (the original lab)",
    },
    "entropy": _int("base entropy of every random stream", minimum=0, maximum=2**64 - 1),
    "noise": {
        **NOISE,
        "description": NOISE["description"] + "; default for every scenario (default: vendored)",
    },
}


def build_schema(rows: Mapping[str, OptimizerSpec] | None = None) -> dict:
    """The whole configuration schema as a dict, for the optimizer ``rows``
    (default: every registered kind, plugins included): the budget, the run-wide
    conventions, the workflow's storage, each optional section, the seeds and what is
    compared, then the named batch modes, scenarios and optimizer arms, in that order
    (the packaged file's order)."""
    rows = REGISTRY if rows is None else rows
    names = {"type": "string", "pattern": NAME_PATTERN}  # one object: one YAML anchor
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "spsa-bench configuration",
        "description": "Budget, seeds, batch modes, scenarios and optimizer arms of a benchmark.",
        "type": "object",
        "additionalProperties": False,
        "required": ["seeds", "batch_modes", "scenarios", "optimizers"],
        "properties": {
            **_budget_properties(),
            **RUN_CONVENTIONS,
            **_storage_properties(),
            **{key: section.schema for key, section in SECTIONS.items()},
            **_comparison_properties(names),
            **_named_tables(rows, names),
        },
    }


def _budget_properties() -> dict:
    """The budget: ``num_pairs`` or ``games`` (``num_pairs = games // 2``) and the
    checkpoints of the pairs grid."""
    return {
        "num_pairs": _int(
            "budget: game pairs per run (give num_pairs or games)", minimum=1, maximum=10**9
        ),
        "games": _int(
            "budget in games as Fishtest takes it (1000 to 3,200,000 in multiples of 1000); "
            "num_pairs = games // 2 (give num_pairs or games)",
        ),
        "checkpoints": _int(
            "points of the pairs grid trajectories are recorded on (0..num_pairs)",
            minimum=2,
            maximum=100001,
        ),
    }


def _storage_properties() -> dict:
    """What the workflow keeps on disk."""
    return {
        "keep_run_files": {
            "type": "boolean",
            "description": "workflow only: keep the run files (results/runs/) once combine "
            "has written benchmark.nc (default false: deleted then, as Snakemake temp "
            "files); no simulation depends on it",
        },
    }


def _comparison_properties(names: dict) -> dict:
    """The seeds run, the baseline arm of the paired differences and the Elo-loss
    targets (fractions of the start gap recovered, in (0, 1))."""
    return {
        "seeds": _object(
            "the seeds to run",
            {
                "first": _int("first seed", minimum=0, maximum=MAX_SEED),
                "count": _int("number of seeds", minimum=1, maximum=MAX_SEEDS),
                "per_job": _int(
                    "seeds per workflow job (chunk size)", minimum=1, maximum=MAX_SEEDS
                ),
            },
            required=("first", "count"),
        ),
        "baseline": {
            **names,
            "description": "optimizer arm the paired differences are taken against",
        },
        "targets": {
            "type": "array",
            "items": _num(
                "fraction of the start Elo gap recovered",
                exclusiveMinimum=0,
                exclusiveMaximum=1,
            ),
            "minItems": 1,
            "uniqueItems": True,
            "description": "Elo-loss targets as fractions of the start gap recovered (runtime tables)",
        },
    }


def _named_tables(rows: Mapping[str, OptimizerSpec], names: dict) -> dict:
    """The named batch modes, scenarios and optimizer arms (at least one of each, names
    matching ``names``); an arm named after a kind of ``rows`` may omit ``kind``."""
    return {
        "batch_modes": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": names,
            "additionalProperties": BATCH_MODE,
            "description": "named batch modes",
        },
        "scenarios": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": names,
            "additionalProperties": SCENARIO,
            "description": "named scenarios",
        },
        "optimizers": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": names,
            "properties": {kind: _optimizer_arm(rows, kind) for kind in rows},
            "additionalProperties": _optimizer_arm(rows, None),
            "description": "named optimizer arms; an arm named after a kind may omit kind",
        },
    }


def schema_yaml() -> str:
    """The packaged schema file's text: the built-in kinds only, whatever is installed."""
    header = (
        "# Generated by `spsa-bench schema --write` from src/spsa_bench/config/schema.py and the\n"
        "# optimizer table. Do not edit by hand.\n"
    )
    schema = build_schema(REGISTRY.built_ins())
    return header + yaml.safe_dump(schema, sort_keys=False, width=100)


__all__ = [
    "SCHEMA_PATH",
    "NAME_PATTERN",
    "BATCH_MODE",
    "GROUP",
    "NOISE",
    "TRUTH",
    "SCENARIO",
    "SCENARIO_SOURCES",
    "GROUP_ONLY_KEYS",
    "TUNE_ONLY_KEYS",
    "MAX_LOG_RANGE_NUM",
    "sweepable",
    "arm_properties",
    "arm_schema",
    "RUN_CONVENTIONS",
    "build_schema",
    "schema_yaml",
]
