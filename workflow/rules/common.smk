# Configuration checks, the benchmark grid and the input functions of every rule.

import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

# The workflow runs the spsa_bench code of its own repository.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from spsa_bench.analysis import grid
from spsa_bench.config import ConfigError, check_config_file, resolve, validate_raw

# Snakemake has read the config files with its own loader, which keeps the last of
# duplicate keys and renders YTE templates: re-read each one safely and refuse those.
for _path in workflow.configfiles:
    if Path(_path).exists():
        try:
            check_config_file(_path)
        except ConfigError as error:
            raise WorkflowError(f"invalid configuration: {error}") from None

# Nested `--config` values arrive as strings (YAML base loader): restore numbers.
for _key, _value in grid.coerce_strings(config).items():
    config[_key] = _value

# 1. The JSON Schema (one schema, shared with the package) ...
try:
    validate(config, "../schemas/config.schema.yaml")
except WorkflowError:
    try:
        validate_raw(config)
    except ConfigError as error:
        raise WorkflowError(f"invalid configuration: {error}") from None
    raise
# 2. ... then the semantic checks no schema can express.
try:
    BENCH = resolve(config)
except ConfigError as error:
    raise WorkflowError(f"invalid configuration: {error}") from None

OPTIMIZERS = list(BENCH.optimizers)
BATCH_MODES = list(BENCH.batch_modes)
SCENARIOS = list(BENCH.scenarios)
ASYNC_MODES = grid.async_modes(BENCH)
CHUNKS = grid.config_chunks(BENCH)
KINDS = grid.kinds(BENCH)
ENV = "../envs/spsa-bench.yaml"


def _alternatives(names):
    return "|".join(re.escape(name) for name in names)


wildcard_constraints:
    optimizer=_alternatives(OPTIMIZERS),
    batch_mode=_alternatives(BATCH_MODES),
    scenario=_alternatives(SCENARIOS),
    kind=_alternatives(KINDS),
    a=r"\d+",
    b=r"\d+",


# ---------------------------------------------------------------- simulate


def chunk_seeds(wildcards):
    return int(wildcards.b) - int(wildcards.a) + 1


def get_cell_settings(wildcards):
    """Only what this cell's runs depend on: the params rerun trigger sees exactly it."""
    cell = grid.cell_settings(
        BENCH, wildcards.optimizer, wildcards.batch_mode, wildcards.scenario
    )
    return grid.to_json(cell)


def get_schedule_settings(wildcards):
    return grid.to_json(grid.schedule_settings(BENCH, wildcards.batch_mode))


def get_schedule(wildcards):
    """The shared job schedule of an asynchronous cell; none for synchronous ones."""
    if wildcards.batch_mode in ASYNC_MODES:
        return f"results/schedules/{wildcards.batch_mode}/seeds-{wildcards.a}-{wildcards.b}.nc"
    return []


def simulate_mem_mb(wildcards):
    return 300 + chunk_seeds(wildcards) * BENCH.num_pairs // 10_000


def simulate_runtime(wildcards):
    return 5 + chunk_seeds(wildcards) * BENCH.num_pairs // 200_000


# ---------------------------------------------------------------- aggregate


def get_run_files(wildcards=None):
    return [
        grid.run_path(batch_mode, scenario, optimizer, chunk)
        for batch_mode in BATCH_MODES
        for scenario in SCENARIOS
        for optimizer in OPTIMIZERS
        for chunk in CHUNKS
    ]


def get_schedule_files(wildcards=None):
    return [
        f"results/schedules/{batch_mode}/seeds-{a}-{b}.nc"
        for batch_mode in ASYNC_MODES
        for a, b in CHUNKS
    ]


def combine_mem_mb(wildcards):
    cells = len(OPTIMIZERS) * len(BATCH_MODES) * len(SCENARIOS)
    return 1000 + cells * BENCH.seeds_count * BENCH.checkpoints // 500


def grid_order():
    return {
        "optimizer": OPTIMIZERS,
        "batch_mode": BATCH_MODES,
        "scenario": SCENARIOS,
    }


# ---------------------------------------------------------------- outputs

FIGURES = [
    "convergence",
    "ecdf_pairs_to_target",
    "final_loss",
    "paired_difference",
    "async_staleness",
    "async_workers",
]


def get_validation_files(wildcards=None):
    return [
        f"results/validation/{kind}{suffix}"
        for kind in KINDS
        for suffix in (".nc", ".png", ".svg", "_gaps.csv")
    ]


def get_final_outputs():
    outputs = [
        "results/benchmark.nc",
        "results/tables/convergence.csv",
        "results/tables/convergence.md",
        "results/tables/async.csv",
        "results/tables/async.md",
        "results/tables/validation_gaps.csv",
    ]
    outputs += [
        f"results/figures/{name}.{ext}" for name in FIGURES for ext in ("png", "svg")
    ]
    outputs += get_validation_files()
    return outputs
