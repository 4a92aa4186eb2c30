"""The schema of a scenario: a groups scenario (parameter groups with their Elo
geometry) or a tune scenario (a Fishtest parameter block whose true bowls are drawn per
seed from ``truth``), and the game-pair noise model a scenario or the whole
configuration names."""

from __future__ import annotations

from spsa_bench.config.schema_fragments import NAME_PATTERN, _int, _num, _object, _range

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
                    "enum": ["normal", "uniform", "fixed", "student_t"],
                    "description": "normal: scale * N(0, 1); uniform: U(-scale, scale); "
                    "fixed: +-scale with a random sign; student_t: scale * t(df) "
                    "(heavy-tailed, needs df)",
                },
                "scale": _num("scale of the offset (c_end units)", minimum=0, maximum=1e6),
                "df": _num(
                    "student_t only: degrees of freedom (P(|t| > x) ~ x^-df in the tail)",
                    minimum=1,
                    maximum=1e6,
                ),
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
        "elo_at_stake": _object(
            "landscape option (default off): the Elo gained from the start to the optimum is a "
            "total drawn per instance, median * exp(sigma N(0, 1)), shared over the active "
            "parameters with Dirichlet(concentration) shares (replaces elo_per_c_end's values)",
            {
                "median": _num("median total Elo at stake", exclusiveMinimum=0, maximum=1e4),
                "sigma": _num("log-sd of the total (default 0.5)", minimum=0, maximum=5),
                "concentration": _num(
                    "Dirichlet concentration of the shares; small is heavy-tailed (default 0.3)",
                    minimum=0.01,
                    maximum=1e4,
                ),
                "cap": _num(
                    "the largest Elo per c_end a parameter may get (default: no cap)",
                    exclusiveMinimum=0,
                    maximum=1e4,
                ),
                "params_exponent": _num(
                    "the median total grows as (P / 30) to this power, P the block's parameter "
                    "count, so median is that of a 30-parameter block (default 0: any block)",
                    minimum=-2,
                    maximum=2,
                ),
            },
            required=("median",),
        ),
        "plateau": _object(
            "landscape option (default off): a share of the active parameters have a flat "
            "bottom, no Elo and no gradient within +-width c_end of the optimum",
            {
                "fraction": _num(
                    "share of the active parameters with a plateau", minimum=0, maximum=1
                ),
                "width": _num("half-width of the plateau (c_end units)", minimum=0, maximum=1e6),
            },
            required=("fraction", "width"),
        ),
        "ridge": _object(
            "landscape option (default off): pairs of active parameters rotated by +-pi/4, the "
            "bowl elongated along their sum or difference (not with interaction > 0)",
            {
                "fraction": _num(
                    "share of the active parameters in ridge pairs", minimum=0, maximum=1
                ),
                "ratio": _num(
                    "curvature along the ridge over across it (default 0.05)",
                    exclusiveMinimum=0,
                    maximum=1,
                ),
            },
            required=("fraction",),
        ),
        "time_control_shift": _object(
            "landscape option (default off): the optimum moves by spread * N(0, 1) c_end per "
            "time-control step (STC, LTC, VLTC) from the one at tuned_at",
            {
                "spread": _num(
                    "standard deviation of the shift per step (c_end units)", minimum=0, maximum=1e6
                ),
                "tuned_at": {
                    "type": "string",
                    "enum": ["STC", "LTC", "VLTC"],
                    "description": "the time control the tune plays (its optimum is the drawn one)",
                },
            },
            required=("spread", "tuned_at"),
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
            "enum": ["stochastic", "nearest", "none", "coupled"],
            "description": "how the worker rounds integer parameters: stochastic "
            "(floor(x + U(0, 1)), Fishtest), nearest, none, or coupled (both engines "
            "floor(x + U) with one shared U, OpenBench) (default stochastic)",
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
        "truth": {
            "oneOf": [TRUTH, {"const": "calibrated"}],
            "description": "the truth prior: a mapping, or calibrated (the prior fitted to "
            "real Stockfish tunes, docs/calibration.md)",
        },
        "integer": {
            "type": "boolean",
            "description": "tune scenario: every parameter is an engine int (default true)",
        },
    },
    dependentRequired={"groups": list(GROUP_ONLY_KEYS)},
)
