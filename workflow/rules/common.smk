# Configuration checks, the benchmark grid and the input functions of every rule.

import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config, validate

# The workflow runs the spsa_bench code of its own repository.
sys.path.insert(0, str(Path(workflow.basedir) / "src"))

# Every job is single-threaded (threads: 1): its BLAS pools get one thread unless the
# environment sets them, as the spsa-bench command does (spsa_bench.threads). The
# jobs inherit the variables, locally and through SLURM's exported environment.
from spsa_bench.threads import single_threaded_blas

single_threaded_blas()

from spsa_bench import job_resources as res
from spsa_bench import workflow as grid
from spsa_bench.config.loader import (
    ConfigError,
    check_config_file,
    read_yaml,
    resolve,
    validate_raw,
)
from spsa_bench.optimizers import REGISTRY
from spsa_bench.studies import STUDIES

# Snakemake reads every --configfile itself, before the Snakefile runs (json.load,
# then yte.process_yaml with yaml.FullLoader: aliases expanded, no size or depth
# bound, last duplicate key wins, YTE templates rendered). Those files are re-read
# here safely, which refuses duplicates and templates but comes after Snakemake's
# own expansion. `--config configfile=PATH` (and the default config/config.yaml)
# is read by the bounded loader only, before anything expands it.
if "configfile" in config:
    if workflow.configfiles:
        raise WorkflowError("give --configfile or --config configfile=PATH, not both")
    _raw_path = str(config["configfile"])
else:
    _raw_path = None if workflow.configfiles else "config/config.yaml"
try:
    for _path in workflow.configfiles:
        if Path(_path).exists():
            check_config_file(_path)
    if _raw_path is not None:
        _overrides = {k: v for k, v in config.items() if k != "configfile"}
        config.clear()
        config.update(read_yaml(_raw_path))
        update_config(config, _overrides)
except ConfigError as error:
    raise WorkflowError(f"invalid configuration: {error}") from None

# Nested `--config` values arrive as strings (YAML base loader): restore numbers.
for _key, _value in grid.coerce_strings(config).items():
    config[_key] = _value
# ... and `--config keep_run_files=true` (a string) the boolean the schema asks for.
if str(config.get("keep_run_files")).lower() in ("true", "false"):
    config["keep_run_files"] = str(config["keep_run_files"]).lower() == "true"

# 1. The JSON Schema (one schema, shared with the package; it knows the built-in
# optimizer kinds). A config it rejects is checked again against the schema built
# at run time, which also knows the installed optimizer plugins: accepted there
# (a plugin arm), it passes; rejected there too, the loader's message says why.
try:
    validate(config, "../schemas/config.schema.yaml")
except WorkflowError:
    try:
        validate_raw(config)
    except ConfigError as error:
        raise WorkflowError(f"invalid configuration: {error}") from None
    if not REGISTRY.plugins():
        raise
# keep_run_files (docs/benchmark.md, "Disk space") is a setting of the workflow, not of
# any result: taken out before the configuration is resolved, so no job's rerun trigger
# and no recorded configuration (benchmark.nc's `config`) sees it.
KEEP_RUN_FILES = config.pop("keep_run_files", False)
# 2. ... then the semantic checks no schema can express.
try:
    # relative fishtest_params_file paths: from the config file's directory
    _base = _raw_path or (workflow.configfiles[-1] if workflow.configfiles else None)
    BENCH = resolve(config, base_dir=Path(_base).parent if _base else None)
except ConfigError as error:
    raise WorkflowError(f"invalid configuration: {error}") from None

OPTIMIZERS = list(BENCH.optimizers)
BATCH_MODES = list(BENCH.batch_modes)
SCENARIOS = list(BENCH.scenarios)
ASYNC_MODES = grid.async_modes(BENCH)
CHUNKS = grid.config_chunks(BENCH)
KINDS = grid.kinds(BENCH)
# The studies the configuration has a section for: {row key: its settings}, one rule
# each (workflow/rules/studies.smk).
STUDY_SETTINGS = {
    key: settings
    for key, row in STUDIES.items()
    if (settings := grid.study_settings(BENCH, row)) is not None
}
TUNING = BENCH.resolved.get("tuning")
# The sweeps of the configuration: {configured arm: [[expanded arm, {key: value}], ...]}.
SWEEPS = grid.sweeps(BENCH)
# ... their arms, simulated one job per sweep and scenario (rule simulate_sweep_<name>) ...
SWEEP_ARMS = {sweep: [arm for arm, _ in arms] for sweep, arms in SWEEPS.items()}
# ... and the other arms, one job per scenario for all of them (rule simulate).
UNSWEPT = [name for name in OPTIMIZERS if BENCH.optimizer(name).sweep is None]
# The arms validation runs: those whose kind has a micro reference (of a sweep, its
# middle arm only).
VALIDATED = grid.validated_arms(BENCH)
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


def _cells(arms, wildcards):
    """Only what one job's runs depend on: ``[[batch mode, [[arm, cell], ...]], ...]``
    for every batch mode of the job's scenario, in output order (lists: the canonical
    JSON sorts the keys of a mapping). The params rerun trigger sees exactly it."""
    return grid.to_json(
        {
            "cells": [
                [
                    batch_mode,
                    [
                        [
                            arm,
                            grid.cell_settings(
                                BENCH, arm, batch_mode, wildcards.scenario
                            ),
                        ]
                        for arm in arms
                    ],
                ]
                for batch_mode in BATCH_MODES
            ]
        }
    )


def run_file(path):
    """A run file's output: temp() (deleted once combine, its one consumer, has written
    benchmark.nc) unless the configuration keeps the run files."""
    return path if KEEP_RUN_FILES else temp(path)


def group_run_files(arms):
    """The run files of one simulate job (an arm group, one scenario and seed chunk):
    batch mode by batch mode, the group's arms in order within each, as
    ``params.cells`` lists them."""
    return [
        run_file(f"results/runs/{batch_mode}/{{scenario}}/{arm}/seeds-{{a}}-{{b}}.nc")
        for batch_mode in BATCH_MODES
        for arm in arms
    ]


def get_group_settings(arms):
    """The cells of one arm group's job (rules simulate and simulate_sweep_<name>)."""
    return lambda wildcards: _cells(arms, wildcards)


def sweep_rule_name(sweep):
    identifier = re.sub(r"\W", "_", sweep)
    return f"simulate_sweep_{identifier}"


def get_schedule_settings(wildcards):
    return grid.to_json(grid.schedule_settings(BENCH, wildcards.batch_mode))


def _schedule_path(batch_mode, wildcards):
    return f"results/schedules/{batch_mode}/seeds-{wildcards.a}-{wildcards.b}.nc"


def get_schedules(wildcards):
    """The shared job schedules of a simulate job's asynchronous batch modes (a
    synchronous one has none)."""
    return [_schedule_path(batch_mode, wildcards) for batch_mode in ASYNC_MODES]


def get_schedule_map(wildcards):
    """``{batch mode: its schedule file or None}`` for the script: which input is whose."""
    return grid.to_json(
        {
            batch_mode: (
                _schedule_path(batch_mode, wildcards)
                if batch_mode in ASYNC_MODES
                else None
            )
            for batch_mode in BATCH_MODES
        }
    )


# Priorities: validate_optimizers (1, needs no run file) starts first, beside the
# simulations (0); the studies (-10), which need no run file either, fill the core
# `combine` (waiting for every run, single-threaded) leaves idle. On 2 cores the
# validation at -10 ran last, alone, after the tables (2.4 min of one idle core on
# 2026-11-26); the studies' 4.3 min of CPU about match combine's 4 min. A cluster
# submits all.

# Resources (threads: 1 everywhere; every script is single-threaded numpy): mem_mb and
# runtime (minutes) are what a cluster job is given, so they cover the script AND what
# a SLURM job runs beside it. The formulas and their measurements live in
# spsa_bench.job_resources (docs/cluster.md has the table).
JOB_OVERHEAD_MB = res.JOB_OVERHEAD_MB


def per_job(formula, *args):
    """A resource of each job of a rule: ``formula(BENCH, *args)``, a function of
    spsa_bench.job_resources."""
    return lambda wildcards: formula(BENCH, *args)


def per_chunk(formula, *args):
    """A resource of a per-seed-chunk job: ``formula(BENCH, wildcards, *args)``."""
    return lambda wildcards: formula(BENCH, wildcards, *args)


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


def validation_settings():
    """Every validated arm's kind and hyperparameters: the rule reruns when they change."""
    return grid.to_json({name: grid.arm_settings(BENCH, name) for name in VALIDATED})


def grid_order():
    return {
        "optimizer": OPTIMIZERS,
        "batch_mode": BATCH_MODES,
        "scenario": SCENARIOS,
    }


# ---------------------------------------------------------------- outputs


def get_validation_files(wildcards=None):
    return [
        f"results/validation/{arm}{suffix}"
        for arm in VALIDATED
        for suffix in (".nc", ".png", ".svg", "_gaps.csv")
    ]


def table_pages():
    """The tables the report shows as pages: ``{name: (source, caption, label)}``."""
    return grid.table_pages(BENCH, STUDY_SETTINGS, bool(VALIDATED))


def get_final_outputs():
    outputs = [
        "results/benchmark.nc",
        "results/tables/convergence.csv",
        "results/tables/convergence.md",
        "results/tables/async.csv",
        "results/tables/async.md",
        "results/tables/ranks.csv",
        "results/tables/ranks.md",
        "results/tables/performance_profile.csv",
    ]
    if VALIDATED:
        outputs.append("results/tables/validation_gaps.csv")
    outputs += [
        f"results/figures/{name}.{ext}"
        for name in grid.FIGURES
        for ext in ("png", "svg")
    ]
    outputs += get_validation_files()
    outputs += ["results/figures/noise_models.png", "results/figures/noise_models.svg"]
    outputs += [
        "results/calibration/shipped.nc",
        "results/tables/calibration_shipped.csv",
        "results/tables/calibration_shipped.md",
        "results/figures/calibration_shipped.png",
        "results/figures/calibration_shipped.svg",
    ]
    if SWEEPS:
        outputs += [
            "results/figures/sensitivity.png",
            "results/figures/sensitivity.svg",
            "results/tables/sensitivity.csv",
        ]
    if TUNING is not None:
        outputs += [
            "results/fishtest/tuning.nc",
            "results/tables/tuned.csv",
            "results/tables/tuned.md",
        ]
    for key in STUDY_SETTINGS:
        outputs += [output.path for output in STUDIES[key].outputs]
    outputs += ["results/findings.md", "results/findings.html"]
    outputs += [f"results/tables/{name}.html" for name in table_pages()]
    return outputs


def get_tuning_file(wildcards):
    """The tuning runs, when the configuration tunes: the figures and the ranking show
    each sweep at its robust tuned setting only."""
    return "results/fishtest/tuning.nc" if TUNING is not None else []


def get_tuning_seeds(wildcards):
    """The tuning seeds a sweep job replays beside its chunk's: its params, so a change
    of them reruns it."""
    return grid.chunk_tuning_seeds(BENCH, wildcards.a, wildcards.b)


def tuning_seeds_param():
    """A sweep job's params entry for its tuning seeds; none without a tuning section."""
    return {} if TUNING is None else {"tuning_seeds": get_tuning_seeds}


def tuning_part_output(sweep):
    """A sweep job's outputs of its tuning losses, one per batch mode in the order of
    ``params.cells``; none without a tuning section."""
    if TUNING is None:
        return {}
    return {
        "tuning": [
            grid.tuning_part_path(batch_mode, "{scenario}", sweep, ("{a}", "{b}"))
            for batch_mode in BATCH_MODES
        ]
    }


def get_tuning_parts(wildcards=None):
    """Every sweep job's tuning losses (rule tuning_runs gathers them)."""
    return [
        grid.tuning_part_path(batch_mode, scenario, sweep, chunk)
        for sweep in SWEEP_ARMS
        for batch_mode in BATCH_MODES
        for scenario in SCENARIOS
        for chunk in CHUNKS
    ]


def get_tuning_settings():
    """The tuning rule's rerun trigger (none without a tuning section)."""
    return None if TUNING is None else grid.to_json(grid.tuning_trigger(BENCH))


def get_noise_settings():
    return grid.noise_settings(BENCH)
