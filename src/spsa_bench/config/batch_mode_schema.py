"""The schema of a batch mode (one way of dispatching jobs to workers)."""

from __future__ import annotations

from spsa_bench.config.schema_fragments import _int, _num, _object, _range

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
            "enum": ["fixed", "variable", "fishtest", "openbench"],
            "description": "fixed: every job has batch_size pairs; variable: games = concurrency "
            "* 4 * round(tc_ratio); fishtest: Fishtest's worker rule, games = concurrency * 4 * "
            "max(1, round(tc_limit(LTC) / (2 tc_limit(tc)))), 12 x concurrency at STC, 4 x at LTC; "
            "openbench: OpenBench's workloads of pairs_per pairs (distribution), reported in "
            "bulk or in batches (reporting; docs/frameworks.md)",
        },
        "tc": {
            "type": "string",
            "enum": ["STC", "LTC", "VLTC"],
            "description": "batch: fishtest only: the time control setting the batch size and the "
            "assumed game durations (default: the top-level noise preset, else STC)",
        },
        "pairs_per": _int(
            "batch: openbench only: OpenBench's spsa_pairs_per, pairs per runner and "
            "perturbation (default 8)",
            minimum=1,
            maximum=10**6,
        ),
        "distribution": {
            "type": "string",
            "enum": ["single", "multiple"],
            "description": "batch: openbench only: OpenBench's spsa_distribution_type; single "
            "(default): one perturbation per workload of pairs_per x concurrency pairs; "
            "multiple: one per runner, concurrency // 2 runners of pairs_per pairs each "
            "(needs concurrency min = max >= 2)",
        },
        "reporting": {
            "type": "string",
            "enum": ["bulk", "batched"],
            "description": "batch: openbench only: OpenBench's spsa_reporting_type; bulk "
            "(default): a job's pairs arrive in one report at its end; batched: in pieces, "
            "what has finished every 30 s, each applied with the job's one perturbation",
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
