"""The configuration's JSON Schema, generated from one place.

The hand-written part below describes budgets, seeds, batch modes and
scenarios; the optimizer part is generated from the optimizer table
(:data:`spsa_bench.optimizers.REGISTRY`), so a new optimizer's
hyperparameters are typed, bounded and described without touching this file.
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

from spsa_bench.config.limits import MAX_SEED, MAX_SEEDS
from spsa_bench.optimizers import REGISTRY, OptimizerSpec
from spsa_bench.optimizers.base import hyper_schema

SCHEMA_PATH = Path(__file__).with_name("data") / "config.schema.yaml"
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


BATCH_MODE = _object(
    "One way of dispatching jobs. workers: 1 with batch: fixed is the synchronous runner "
    "(durations are not simulated); anything else runs the asynchronous event queue.",
    {
        "workers": {
            "description": "number of workers, each holding one job in flight; a list gives "
            "one batch mode per value, named <mode>-w<workers> (a workers sweep)",
            "oneOf": [
                _int("number of workers", minimum=1, maximum=100000),
                {
                    "type": "array",
                    "items": _int("number of workers", minimum=1, maximum=100000),
                    "minItems": 1,
                    "uniqueItems": True,
                },
            ],
        },
        "batch": {
            "type": "string",
            "enum": ["fixed", "variable", "fishtest"],
            "description": "fixed: every job has batch_size pairs; variable: games = concurrency "
            "* 4 * round(tc_ratio); fishtest: Fishtest's worker rule, games = concurrency * 4 * "
            "max(1, round(tc_limit(LTC) / (2 tc_limit(tc)))), 12 x concurrency at STC, 4 x at LTC",
        },
        "tc": {
            "type": "string",
            "enum": ["STC", "LTC", "VLTC"],
            "description": "batch: fishtest only: the time control setting the batch size and the "
            "assumed game durations (default: the top-level noise preset, else STC)",
        },
        "batch_size": _int(
            "pairs per job in the fixed mode (the last job is cut to the budget)",
            minimum=1,
            maximum=10**9,
        ),
        "concurrency": _range(
            "worker concurrency is drawn uniformly over the powers of two in [min, max]",
            _int("concurrency bound (games a worker plays in parallel)", minimum=1, maximum=4096),
        ),
        "speed": _range(
            "worker speed factor is drawn uniformly in [min, max] (job time is divided by it)",
            _num("speed factor bound", minimum=0.001, maximum=1000),
        ),
        "tc_ratio": _num(
            "time-control ratio: scales the games per job in the variable mode",
            exclusiveMinimum=0,
            maximum=1000,
        ),
        "game_duration": _object(
            "log-normal game duration in seconds, calibrated by its median and 95th percentile",
            {
                "median": _num("median game duration (s)", minimum=0.001, maximum=1e6),
                "p95": _num(
                    "95th percentile of game duration (s), above the median",
                    minimum=0.001,
                    maximum=1e6,
                ),
            },
            required=("median", "p95"),
        ),
    },
    required=("workers", "batch"),
)

GROUP = _object(
    "A group of parameters sharing their true and believed geometry.",
    {
        "name": {
            "type": "string",
            "pattern": NAME_PATTERN,
            "description": "group name (lower case, digits, - and _)",
        },
        "count": _int("number of parameters in the group", minimum=1, maximum=100000),
        "theta_start": _num("start value of each parameter (the developer's and the true start)"),
        "theta_peak": _num(
            "true optimum of each parameter (ground truth, never shown to optimizers)"
        ),
        "w_true": _num("true curvature weight (0 = inactive parameter)", minimum=0),
        "w_dev": _num(
            "the developer's believed curvature weight (> 0 on active parameters)", minimum=0
        ),
        "theta_min": _num("optional explicit lower bound (give both bounds or neither)"),
        "theta_max": _num("optional explicit upper bound (give both bounds or neither)"),
        "integer": {
            "type": "boolean",
            "description": "the engine plays these parameters as integers (default false)",
        },
    },
    required=("name", "count", "theta_start", "theta_peak", "w_true", "w_dev"),
)

NOISE = {
    "description": (
        "game-pair noise model: vendored (spec 000's pentanomial model, ~50% draws), a "
        "preset calibrated to real Fishtest tunes (STC, LTC, VLTC), or {draw_rate, sigma2} "
        "at equal strength (sigma2 = var(pair net wins) / 2)"
    ),
    "oneOf": [
        {"type": "string", "enum": ["vendored", "STC", "LTC", "VLTC"]},
        _object(
            "a custom member of the calibrated family",
            {
                "draw_rate": _num(
                    "per-game draw rate at equal strength", exclusiveMinimum=0, exclusiveMaximum=1
                ),
                "sigma2": _num(
                    "var(pair net wins) / 2 at equal strength, at least 1 - draw_rate",
                    exclusiveMinimum=0,
                    maximum=2,
                ),
            },
            required=("draw_rate", "sigma2"),
        ),
    ],
}

TRUTH = _object(
    "the prior a tune scenario's per-seed true bowls are drawn from (every key optional; "
    "defaults: offset normal scale 2, elo_per_c_end log-uniform in [0.02, 0.2], "
    "inactive_fraction 0.25, interaction 0)",
    {
        "offset": _object(
            "the optimum's offset from the start in units of c_end",
            {
                "distribution": {
                    "type": "string",
                    "enum": ["normal", "uniform", "fixed"],
                    "description": "normal: scale * N(0, 1); uniform: U(-scale, scale); "
                    "fixed: +-scale with a random sign",
                },
                "scale": _num("scale of the offset (c_end units)", minimum=0, maximum=1e6),
            },
        ),
        "elo_per_c_end": {
            "description": "Elo lost one c_end from the optimum along an axis: a number (every "
            "parameter) or {min, max} (log-uniform per parameter)",
            "oneOf": [
                _num("Elo per c_end of every parameter", exclusiveMinimum=0, maximum=1e6),
                _range(
                    "log-uniform range of the Elo per c_end",
                    _num("Elo per c_end bound", exclusiveMinimum=0, maximum=1e6),
                ),
            ],
        },
        "inactive_fraction": _num(
            "share of the parameters (round(f * P), chosen at random) with no effect",
            minimum=0,
            maximum=1,
        ),
        "interaction": _num(
            "0: axis-aligned bowl; g > 0: active parameters paired at random, each pair rotated "
            "by an angle uniform in [-g pi/4, g pi/4]",
            minimum=0,
            maximum=1,
        ),
    },
)

#: Keys that make a scenario: exactly one of them.
SCENARIO_SOURCES = ("groups", "fishtest_params", "fishtest_params_file", "synthetic_tune")
#: Keys only a groups scenario takes (the first four are required there).
GROUP_ONLY_KEYS = ("start_elo", "peak_elo", "c_elo_gap", "c_fraction")
#: Keys only a tune (parameter-block) scenario takes.
TUNE_ONLY_KEYS = ("truth", "integer")

SCENARIO = _object(
    "A tuning problem: either parameter groups with their Elo geometry (groups), or a "
    "Fishtest parameter block (a tune scenario: exactly one of fishtest_params, "
    "fishtest_params_file, synthetic_tune) whose true bowls are drawn per seed from truth.",
    {
        "description": {"type": "string", "description": "free text shown in reports"},
        "start_elo": _num("groups scenario: true Elo at theta_start (below peak_elo)"),
        "peak_elo": _num("groups scenario: true Elo at theta_peak"),
        "c_elo_gap": _num(
            "groups scenario: Elo the developer accepts losing per probe step in one dimension",
            exclusiveMinimum=0,
        ),
        "c_fraction": _num(
            "groups scenario: probe step as a fraction of the developer's range",
            minimum=1e-6,
            maximum=1,
        ),
        "noise": {
            **NOISE,
            "description": "this scenario's noise model (default: the top-level noise)",
        },
        "rounding": {
            "type": "string",
            "enum": ["stochastic", "nearest", "none"],
            "description": "how the worker rounds integer parameters: stochastic "
            "(floor(x + U(0, 1)), Fishtest), nearest or none (default stochastic)",
        },
        "groups": {
            "type": "array",
            "minItems": 1,
            "items": GROUP,
            "description": "parameter groups",
        },
        "fishtest_params": {
            "type": "string",
            "maxLength": 1_000_000,
            "description": "tune scenario: the parameter block as text, one "
            "name,start,min,max,c_end,r_end line per parameter",
        },
        "fishtest_params_file": {
            "type": "string",
            "minLength": 1,
            "maxLength": 4096,
            "description": "tune scenario: a file holding the parameter block (relative to the "
            "config file's directory); read at load time",
        },
        "synthetic_tune": _object(
            "tune scenario: the block Stockfish's TUNE() prints for params int parameters of value value",
            {
                "params": _int("number of parameters", minimum=1, maximum=100000),
                "value": _int(
                    "every parameter's value (non-zero; range [0, 2 value])",
                    minimum=-(10**9),
                    maximum=10**9,
                ),
            },
            required=("params",),
        ),
        "truth": TRUTH,
        "integer": {
            "type": "boolean",
            "description": "tune scenario: every parameter is an engine int (default true)",
        },
    },
    dependentRequired={"groups": list(GROUP_ONLY_KEYS)},
)


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


def _name_list(description: str) -> dict:
    """A non-empty list of distinct names (of scenarios, arms, ...)."""
    return {
        "type": "array",
        "items": {"type": "string", "pattern": NAME_PATTERN},
        "minItems": 1,
        "uniqueItems": True,
        "description": description,
    }


def _named_settings(description: str, item: str | None = None) -> dict:
    """A non-empty mapping name -> settings (a mapping, or null), e.g. a study's arms;
    ``item`` describes one entry."""
    entry = {"type": ["object", "null"]}
    if item is not None:
        entry["description"] = item
    out = {
        "type": "object",
        "minProperties": 1,
        "propertyNames": {"type": "string", "pattern": NAME_PATTERN},
        "additionalProperties": entry,
    }
    if description:
        out["description"] = description
    return out


def _tuning_seeds(description: str) -> dict:
    """``{first, count}``: seeds a choice is made on, apart from the benchmark's."""
    return _object(
        description,
        {
            "first": _int("first tuning seed", minimum=0, maximum=MAX_SEED),
            "count": _int("number of tuning seeds", minimum=1, maximum=MAX_SEEDS),
        },
        required=("first", "count"),
    )


#: The c_end study (spsa_bench.engine.cend_study): optional, off when absent.
CEND_STUDY = _object(
    "The c_end study (fishtest #1912, #1929): the arms at every c_end on one "
    "parameter-block scenario, with shared seeds (docs/fishtest.md)",
    {
        "scenario": {
            "type": "string",
            "pattern": NAME_PATTERN,
            "description": "a parameter-block scenario whose parameters share one c_end",
        },
        "batch_mode": {"type": "string", "pattern": NAME_PATTERN, "description": "batch mode"},
        "c_end": {
            "type": "array",
            "items": _num(
                "c_end every parameter is probed with (integer steps)", exclusiveMinimum=0
            ),
            "minItems": 1,
            "uniqueItems": True,
            "description": "the c_end values, each played through c_scale = c_end / the block's",
        },
        "base": {
            "type": "string",
            "pattern": NAME_PATTERN,
            "description": "an SPSA-family arm of this config the variants start from",
        },
        "variants": _named_settings(
            "named variants of the base arm (not grid arms); the first is the paired baseline",
            "hyperparameters over the base arm's (checked like an arm's)",
        ),
    },
    required=("scenario", "batch_mode", "c_end", "base", "variants"),
)


#: The workers study (spsa_bench.engine.workers_study): optional, off when absent.
WORKERS_STUDY = _object(
    "The workers study (fishtest #535): arms and scenarios under one asynchronous worker "
    "pool at several sizes, paired with a synchronous mode (docs/asynchrony.md)",
    {
        "pool": {
            "type": "object",
            "description": "a batch mode without workers (default {batch: fishtest}); checked "
            "like batch_modes entries",
        },
        "workers": {
            "type": "array",
            "items": _int("pool size", minimum=1, maximum=100000),
            "minItems": 1,
            "uniqueItems": True,
            "description": "the pool sizes",
        },
        "reference": {
            "type": "string",
            "pattern": NAME_PATTERN,
            "description": "a synchronous batch mode of this config (the paired reference)",
        },
        "scenarios": _name_list("scenarios of this config"),
        "arms": {
            "description": "config arms by name, or a mapping name -> null (a config arm) or "
            "arm settings with kind (study-only arms, checked like an arm's)",
            "oneOf": [
                {
                    "type": "array",
                    "items": {"type": "string", "pattern": NAME_PATTERN},
                    "minItems": 1,
                    "uniqueItems": True,
                },
                _named_settings(""),
            ],
        },
        "margin": _num(
            "Elo: a pool size is safe while the paired difference's upper 95% bound stays "
            "at or below it",
            exclusiveMinimum=0,
        ),
    },
    required=("workers", "reference", "scenarios", "arms"),
)


def _budgets(description: str, item: dict) -> dict:
    return {
        "type": "array",
        "items": item,
        "minItems": 2,
        "uniqueItems": True,
        "description": description,
    }


#: The budget study (spsa_bench.engine.budget_study): optional, off when absent.
BUDGET_STUDY = _object(
    "The budget study (issue 16): the arms at several budgets, each budget its own run from "
    "the start, swept arms tuned per budget on held-out seeds (docs/benchmark.md, 'Budget "
    "study')",
    {
        "num_pairs": _budgets(
            "the budgets in game pairs, at least two (give num_pairs or games)",
            _int("a budget in game pairs", minimum=1, maximum=10**9),
        ),
        "games": _budgets(
            "the budgets in games as Fishtest takes them (1000 to 3,200,000 in multiples of "
            "1000; num_pairs = games // 2), at least two (give num_pairs or games)",
            _int("a budget in games"),
        ),
        "batch_mode": {"type": "string", "pattern": NAME_PATTERN, "description": "batch mode"},
        "scenarios": _name_list("scenarios of this config"),
        "tuning_seeds": _tuning_seeds(
            "the seeds a swept arm's setting is chosen on, per budget (disjoint from `seeds`; "
            "needed when an arm is swept)"
        ),
        "arms": _named_settings(
            "the arms, by name",
            "null: the config arm of that name; a mapping: an arm of this study only (kind "
            "and hyperparameters, checked like an arm's; a swept hyperparameter is tuned per "
            "budget)",
        ),
        "baseline": {
            "type": "string",
            "pattern": NAME_PATTERN,
            "description": "the arm the paired differences are taken against (default: the first)",
        },
    },
    required=("batch_mode", "scenarios", "arms"),
)


#: The tuning protocol (spsa_bench.engine.tuning): optional, off when absent.
TUNING = _object(
    "The tuning protocol (issue 16): each sweep's setting is chosen on these seeds, "
    "disjoint from `seeds`, and reported on `seeds` (docs/benchmark.md, 'Tuning protocol')",
    {
        "seeds": _tuning_seeds("the tuning seeds (must not overlap the benchmark's seeds)"),
        "criterion": {
            "type": "string",
            "enum": ["median"],
            "description": "what the choice minimises: the median final Elo loss (default)",
        },
        "family": _name_list("scenarios of the robust choice (default: every scenario)"),
    },
    required=("seeds",),
)


def build_schema(rows: Mapping[str, OptimizerSpec] | None = None) -> dict:
    """The whole configuration schema as a dict, for the optimizer ``rows``
    (default: every registered kind, plugins included)."""
    rows = REGISTRY if rows is None else rows
    names = {"type": "string", "pattern": NAME_PATTERN}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "spsa-bench configuration",
        "description": "Budget, seeds, batch modes, scenarios and optimizer arms of a benchmark.",
        "type": "object",
        "additionalProperties": False,
        "required": ["seeds", "batch_modes", "scenarios", "optimizers"],
        "properties": {
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
            **RUN_CONVENTIONS,
            "cend_study": CEND_STUDY,
            "workers_study": WORKERS_STUDY,
            "budget_study": BUDGET_STUDY,
            "tuning": TUNING,
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
