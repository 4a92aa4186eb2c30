"""The JSON Schema of each optional section: the configuration schema takes them from
:data:`spsa_bench.config.sections.SECTIONS`."""

from __future__ import annotations

import copy

from spsa_bench.config.batch_mode_schema import BATCH_MODE
from spsa_bench.config.limits import MAX_SEED, MAX_SEEDS
from spsa_bench.config.schema_fragments import NAME_PATTERN, _int, _num, _object


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


#: The c_end study (spsa_bench.studies.cend): optional, off when absent.
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


#: The workers study (spsa_bench.studies.workers): optional, off when absent.
WORKERS_STUDY = _object(
    "The workers study (fishtest #535): arms and scenarios under one asynchronous worker "
    "pool at several sizes, paired with a synchronous mode (docs/asynchrony.md)",
    {
        "pool": {
            **copy.deepcopy(BATCH_MODE),  # its own copy in the file
            "description": "a batch mode without workers (default {batch: fishtest}); checked "
            "like batch_modes entries (the same schema, batch alone required)",
            "required": ["batch"],
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


#: The budget study (spsa_bench.studies.budget): optional, off when absent.
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


#: The tuning protocol (spsa_bench.studies.tuning): optional, off when absent.
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


#: The framework study (spsa_bench.studies.frameworks): optional, off when absent.
FRAMEWORK_STUDY = _object(
    "The framework study (issue 31): Fishtest's spsa beside OpenBench's spsa-openbench and "
    "each OpenBench rule alone, at every c_end on one parameter-block scenario, with shared "
    "seeds (docs/frameworks.md)",
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
            "description": "the c_end values, each played by scaling the block's c_end",
        },
        "fishtest": {
            "description": "Fishtest's arm: a configured arm of kind spsa by name, or spsa "
            "hyperparameters of an arm of the study only (Fishtest's form: {A_ratio: 0.1})",
            "oneOf": [
                {"type": "string", "pattern": NAME_PATTERN},
                {"type": "object"},
            ],
        },
        "openbench": {
            "type": ["object", "null"],
            "description": "hyperparameters of the spsa-openbench arm (default: OpenBench's "
            "form: A_ratio 0.1, alpha 0.602, gamma 0.101, pairs_per 8, c_floor 0.5)",
        },
        "dispatch": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": NAME_PATTERN},
            "additionalProperties": copy.deepcopy(BATCH_MODE),  # its own copy in the file
            "description": "optional second panel: the spsa-openbench arm (every OpenBench rule "
            "on) on each named batch mode, each batch: openbench without pairs_per (the arm's); "
            "the arm is openbench@<name>, the first mode the panel's reference",
        },
    },
    required=("scenario", "batch_mode", "c_end", "fishtest"),
)


def _free_range(description: str) -> dict:
    return _object(
        description,
        {
            "low": _num("lower end of the range"),
            "high": _num("upper end of the range"),
            "log": {"type": "boolean", "description": "log-uniform (default false)"},
        },
        required=("low", "high"),
    )


#: The calibration (spsa_bench.studies.calibration): optional, off when absent.
CALIBRATION = _object(
    "The calibration of the tune-scenario truth prior to the corpus of real tunes by "
    "simulation: rejection ABC fitted before split_year, coverage after it "
    "(docs/calibration.md)",
    {
        "batch_mode": {
            "type": "string",
            "pattern": NAME_PATTERN,
            "description": "a batch mode of this config every simulated tune plays",
        },
        "split_year": _int("fit on tunes dated before this year (default 2022)", minimum=2000),
        "draws": _int("hyper-prior draws (default 32)", minimum=2, maximum=100000),
        "accept": _num(
            "share of the draws accepted, the closest (default 0.25)", exclusiveMinimum=0, maximum=1
        ),  # fmt: skip
        "default_games": {
            "oneOf": [
                _int("games of every tune whose budget is unknown", minimum=1000, maximum=3200000),
                {"enum": ["corpus", "log-uniform"]},
            ],
            "description": (
                "games of a tune whose budget is unknown: a number, or corpus (default): "
                "each instance plays one quantile of the corpus's known budgets (log scale), "
                "or log-uniform: one quantile of a log-uniform between the smallest and the "
                "largest known budget"
            ),
        },
        "default_time_control": {
            "enum": ["STC", "LTC", "VLTC"],
            "description": "noise of a tune whose time control is unknown (default LTC)",
        },
        "step_spread": _num(
            "log-sd of a per-instance log-normal factor on every r_end of a simulated tune "
            "(the step's uncertainty: blocks mostly inferred; default 0, off)",
            minimum=0,
            maximum=2,
        ),
        "step_sampling": {
            "enum": ["random", "stratified"],
            "description": (
                "how the instances draw step_spread's factor: random (default: each its "
                "own) or stratified (the instances take the log-normal's strata once each, "
                "in an order keyed by the tune)"
            ),
        },
        "quoted_step_spread": {
            "type": ["number", "null"],
            "minimum": 0,
            "maximum": 2,
            "description": (
                "step_spread for the records whose c_end and r_end a source quotes (their "
                "step provenance is quoted); null (default): step_spread for every record"
            ),
        },
        "verification_tests": _int(
            "verification tests played on each simulated tune's gain (independent test "
            "noise): the fit uses the first, the predictive band of the verification Elo "
            "all of them (default 1)",
            minimum=1,
            maximum=64,
        ),
        "noise": {
            "enum": ["preset", "record"],
            "description": (
                "the match noise a simulated tune plays: preset (default: its time "
                "control's calibrated preset) or record (the draw rate and pair variance "
                "its own verification tests measured at that time control, the noise of "
                "its era; the preset where none did)"
            ),
        },
        "param_step_spread": _num(
            "log-sd of a per-instance, per-parameter log-normal factor on every c_end a "
            "simulated tune plays (moves stay in the recorded c_end; default 0, off)",
            minimum=0,
            maximum=2,
        ),
        "start_tuned_at": {
            "enum": ["STC", "LTC", "VLTC", None],
            "description": (
                "the time control every tune's start values were last tuned at: each "
                "instance's offsets are drawn there and a tune at another time control "
                "plays the optimum the family's time_control_shift moves there (needs one); "
                "null (default): each tune's start is drawn at its own time control"
            ),
        },
        "fixed": {"type": "object", "description": "the fixed part of the truth mapping"},
        "free": {
            "type": "object",
            "minProperties": 1,
            "maxProperties": 4,
            "additionalProperties": _free_range("the hyper-prior range of one free truth key"),
            "description": "1 to 4 dotted truth keys (e.g. elo_at_stake.median) and ranges",
        },
    },
    required=("batch_mode", "free"),
)
