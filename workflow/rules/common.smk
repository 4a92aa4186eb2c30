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

from spsa_bench import workflow as grid
from spsa_bench.config.loader import (
    ConfigError,
    check_config_file,
    read_yaml,
    resolve,
    scenario_param_count,
    validate_raw,
)
from spsa_bench.optimizers import REGISTRY

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
CEND_STUDY = grid.cend_study_settings(BENCH)
WORKERS_STUDY = grid.workers_study_settings(BENCH)
BUDGET_STUDY = grid.budget_study_settings(BENCH)
TUNING = BENCH.resolved.get("tuning")
# The sweeps of the configuration: {configured arm: [[expanded arm, {key: value}], ...]}.
SWEEPS = grid.sweeps(BENCH)
# ... their arms, simulated one job per sweep (rule simulate_sweep_<name>) ...
SWEEP_ARMS = {sweep: [arm for arm, _ in arms] for sweep, arms in SWEEPS.items()}
# ... and the other arms, one job each (rule simulate).
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


def chunk_seeds(wildcards):
    return int(wildcards.b) - int(wildcards.a) + 1


def _cells(arms, wildcards):
    """Only what these cells' runs depend on, ``{arm: cell}`` in output order: the
    params rerun trigger sees exactly it."""
    return grid.to_json(
        {
            arm: grid.cell_settings(
                BENCH, arm, wildcards.batch_mode, wildcards.scenario
            )
            for arm in arms
        }
    )


def get_cell_settings(wildcards):
    return _cells([wildcards.optimizer], wildcards)


def get_sweep_settings(arms):
    """The cells of one sweep's arms (rule simulate_sweep_<name>)."""
    return lambda wildcards: _cells(arms, wildcards)


def sweep_rule_name(sweep):
    identifier = re.sub(r"\W", "_", sweep)
    return f"simulate_sweep_{identifier}"


def get_schedule_settings(wildcards):
    return grid.to_json(grid.schedule_settings(BENCH, wildcards.batch_mode))


def get_schedule(wildcards):
    """The shared job schedule of an asynchronous cell; none for synchronous ones."""
    if wildcards.batch_mode in ASYNC_MODES:
        return f"results/schedules/{wildcards.batch_mode}/seeds-{wildcards.a}-{wildcards.b}.nc"
    return []


# Priorities: tuning_runs (priority 10, one long job) starts first and the
# simulations (priority 0) share the other cores with it. validate_optimizers and the
# studies (priority -10), which need no run file either, start only when no
# simulation is ready, so on a few cores they fill the cores `combine` (one job, which
# waits for every run) leaves idle instead of delaying it; on a cluster every ready
# job is submitted anyway.

# Resources (threads: 1 everywhere; every script is single-threaded numpy).
# mem_mb and runtime (minutes) are what a cluster job is given, so they cover the
# script AND what a SLURM job runs beside it. The memory formulas are fitted to the
# peak RSS that results/benchmarks/ recorded for three runs (the default grid at 100
# seeds, the design-card grid at 100 and at 1000 seeds) and ask 1.3 times the fit
# plus JOB_OVERHEAD_MB: 1.2-1.5 times the measured peak plus the SLURM overhead for
# every rule of the three runs. Times are several times what was measured.
# docs/cluster.md has the measurements and the table.

# Beside the script, a SLURM job holds two Snakemake processes (the job step and
# the one it starts under srun, about 140 MB each) and srun: 285-290 MB measured.
JOB_OVERHEAD_MB = 400


def seed_pairs(wildcards):
    return chunk_seeds(wildcards) * BENCH.num_pairs


def simulate_mem_mb(wildcards):
    """simulate (a sweep's job too: its arms run one after another): about 140 MB of
    libraries plus about 22 bytes per seed x pair, measured at most 209 MB at 100
    seeds x 30,000 pairs and 808 MB at 1000 (async-variable, the most)."""
    return fitted(145 + seed_pairs(wildcards) * 23 // 1_000_000)


def simulate_runtime(wildcards):
    """simulate and schedule: up to 0.4 us per seed x pair measured (11 s for
    1000 x 30,000 on async-variable) plus about 1 s of start-up; allowed 3 us plus
    two minutes (Python start-up on a network file system can be slow)."""
    return 2 + seed_pairs(wildcards) // 20_000_000


def sweep_runtime(arms):
    """A sweep's job: one simulate per arm after one start-up."""
    return lambda wildcards: 2 + arms * seed_pairs(wildcards) // 20_000_000


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


def grid_cells():
    return len(OPTIMIZERS) * len(BATCH_MODES) * len(SCENARIOS)


def trajectory_points():
    """Points of every loss trajectory: cells x seeds x checkpoints."""
    return grid_cells() * BENCH.seeds_count * BENCH.checkpoints


def parameter_points():
    """Points of every parameter trajectory (theta, and x, z of the schedule-free
    arms, padded with NaN for the others): trajectory points x parameters."""
    params = max(scenario_param_count(BENCH.scenario(name)) for name in SCENARIOS)
    return trajectory_points() * params


def fitted(megabytes):
    """A request: the fitted peak RSS (MB) times 1.3 plus the SLURM job's overhead."""
    return JOB_OVERHEAD_MB + int(1.3 * megabytes)


def schedule_mem_mb(wildcards):
    """schedule: about 104 MB plus 20 bytes per seed x pair (measured 165 MB at 100
    seeds x 30,000 pairs, 606-702 MB at 1000)."""
    return fitted(104 + seed_pairs(wildcards) * 20 / 1e6)


def combine_mem_mb(wildcards):
    """The streaming combine: about 120 MB, 0.25 MB per run file (its two-seed
    skeleton), 80 bytes per parameter point of one cell (a run file's data and the
    cell's chunks in HDF5's cache) and 100 bytes per cell x seed (the integer per-seed
    variables kept whole), fitted to 169 MB for 120 files of 100 seeds, 330 MB for 120
    of 1000 and 332 MB for the default grid's 795 of 100."""
    files = grid_cells() * len(CHUNKS)
    one_cell = parameter_points() / grid_cells()
    cell_seeds = grid_cells() * BENCH.seeds_count
    return fitted(120 + 0.25 * files + one_cell * 80 / 1e6 + cell_seeds * 100 / 1e6)


def combine_runtime(wildcards):
    """Measured 0.1-0.2 us per parameter point (85 s for the default grid at 100 seeds)."""
    return 2 + parameter_points() // 10_000_000


def report_mem_mb(wildcards):
    """tables and sensitivity read benchmark.nc lazily, the trajectories one cell at a
    time: about 185 MB plus 8 bytes per trajectory point (measured 190, 227 and 279 MB
    for tables at 1.2, 8.0 and 12.1 million points; sensitivity 317 MB at 8.0)."""
    return fitted(185 + trajectory_points() * 8 / 1e6)


def figures_mem_mb(wildcards):
    """convergence_figures and comparison_figures read benchmark.nc lazily, one cell at a
    time: about 240 MB plus 8 bytes per trajectory point (measured at most 253, 268 and
    347 MB at 1.2, 8.0 and 12.1 million points)."""
    return fitted(240 + trajectory_points() * 8 / 1e6)


def ranking_mem_mb(wildcards):
    """The ranking reads benchmark.nc lazily (the last checkpoint in memory, the rest one
    cell at a time): about 215 MB plus 6 bytes per trajectory point (measured 228, 232
    and 287 MB at 1.2, 8.0 and 12.1 million points)."""
    return fitted(215 + trajectory_points() * 6 / 1e6)


def tuned_mem_mb(wildcards):
    """The tuned table: 236 MB measured at 8.0 million trajectory points."""
    return fitted(200 + trajectory_points() * 4.5 / 1e6)


def report_runtime(wildcards):
    return 2 + trajectory_points() // 5_000_000


def async_figures_mem_mb(wildcards):
    """All schedules at once: 256 MB measured at 100 seeds, 675 MB at 1000 (two
    asynchronous modes, 30,000 pairs): about 210 MB plus 7.8 bytes per seed x pair
    and mode."""
    seed_pairs_all = len(ASYNC_MODES) * BENCH.seeds_count * BENCH.num_pairs
    return fitted(210 + seed_pairs_all * 7.8 / 1e6)


def async_figures_runtime(wildcards):
    seed_pairs_all = len(ASYNC_MODES) * BENCH.seeds_count * BENCH.num_pairs
    return 2 + seed_pairs_all // 30_000_000


def validation_runtime(wildcards):
    """validate_optimizers: 2-3 s per validated arm measured, whatever the grid."""
    return 2 + len(VALIDATED) // 4


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

FIGURES = [
    "convergence",
    "ecdf_pairs_to_target",
    "final_loss",
    "paired_difference",
    "async_staleness",
    "async_workers",
    "performance_profile",
    "aggregated_ecdf",
]


def get_validation_files(wildcards=None):
    return [
        f"results/validation/{arm}{suffix}"
        for arm in VALIDATED
        for suffix in (".nc", ".png", ".svg", "_gaps.csv")
    ]


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
        f"results/figures/{name}.{ext}" for name in FIGURES for ext in ("png", "svg")
    ]
    outputs += get_validation_files()
    outputs += ["results/figures/noise_models.png", "results/figures/noise_models.svg"]
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
    if WORKERS_STUDY is not None:
        outputs += [
            "results/fishtest/workers_study.nc",
            "results/tables/workers.csv",
            "results/tables/workers.md",
            "results/tables/workers_safe.csv",
            "results/figures/workers.png",
            "results/figures/workers.svg",
        ]
    if CEND_STUDY is not None:
        outputs += [
            "results/fishtest/cend_study.nc",
            "results/tables/cend.csv",
            "results/tables/cend.md",
            "results/figures/cend.png",
            "results/figures/cend.svg",
        ]
    if BUDGET_STUDY is not None:
        outputs += [
            "results/fishtest/budget_study.nc",
            "results/tables/budget_study.csv",
            "results/tables/budget_study.md",
            "results/figures/budget_study.png",
            "results/figures/budget_study.svg",
        ]
    return outputs


def get_tuning_file(wildcards):
    """The tuning runs, when the configuration tunes: the figures and the ranking show
    each sweep at its robust tuned setting only."""
    return "results/fishtest/tuning.nc" if TUNING is not None else []


def get_tuning_settings():
    """The tuning rule's rerun trigger: the whole resolved configuration (the tuning
    runs depend on every swept arm, scenario and batch mode)."""
    return BENCH.to_json()


def tuning_runs_mem_mb(wildcards):
    """One simulation of the tuning seeds at a time: 82-150 MB measured at 20 seeds."""
    seeds = TUNING["seeds"]["count"]
    return fitted(90 + seeds * BENCH.num_pairs * 40 / 1e6)


def tuning_runs_runtime(wildcards):
    """Every swept arm x scenario x batch mode on the tuning seeds, 3 us per seed x pair."""
    swept = sum(1 for arm in BENCH.optimizers.values() if arm.sweep is not None)
    runs = swept * len(SCENARIOS) * len(BATCH_MODES)
    return 2 + runs * TUNING["seeds"]["count"] * BENCH.num_pairs // 20_000_000


def get_workers_study_settings():
    """The workers study's settings as canonical JSON (its params rerun trigger)."""
    return grid.to_json(WORKERS_STUDY)


def workers_study_mem_mb(wildcards):
    """One simulation of the study's seeds at a time at its largest pool (slots of
    seeds x workers x parameters), plus its results: 204-268 MB measured at 100 seeds.
    """
    study = WORKERS_STUDY["workers_study"]
    slots = BENCH.seeds_count * max(study["workers"]) * 64 * 8 * 4 / 1e6
    return fitted(120 + slots + BENCH.seeds_count * BENCH.num_pairs * 30 / 1e6)


def workers_study_runtime(wildcards):
    """Every arm x scenario x (pool sizes + the reference), each at most 3 us per seed x pair."""
    study = WORKERS_STUDY["workers_study"]
    runs = len(study["arms"]) * len(study["scenarios"]) * (len(study["workers"]) + 1)
    return 2 + runs * BENCH.seeds_count * BENCH.num_pairs // 20_000_000


def get_cend_study_settings():
    """The c_end study's settings as canonical JSON (its params rerun trigger)."""
    return grid.to_json(CEND_STUDY)


def cend_study_mem_mb(wildcards):
    """One simulation of the study's seeds at a time, plus its (arm, c_end, seed) results:
    206-213 MB measured at 100 seeds x 30,000 pairs."""
    pairs = BENCH.seeds_count * BENCH.num_pairs
    return fitted(150 + pairs * 30 / 1e6)


def cend_study_runtime(wildcards):
    """Every arm at every c_end, each at most 3 us per seed x pair (as simulate)."""
    study = CEND_STUDY["cend_study"]
    runs = len(study["variants"]) * len(study["c_end"])
    return 2 + runs * BENCH.seeds_count * BENCH.num_pairs // 20_000_000


def get_budget_study_settings():
    """The budget study's settings as canonical JSON (its params rerun trigger)."""
    return grid.to_json(BUDGET_STUDY)


def _budget_study_runs():
    """(seed x pair) units of the study: every setting on the tuning seeds and at most
    two chosen settings per arm on the test seeds, at every budget and scenario."""
    from spsa_bench.engine.budget_study import study_settings

    study = study_settings(BENCH)
    tuning = len(study.tuning_seeds or ())
    per_budget = len(study.settings) * tuning + 2 * len(study.arms) * BENCH.seeds_count
    return per_budget * len(study.scenarios) * sum(study.num_pairs)


def budget_study_mem_mb(wildcards):
    """One simulation at a time, on the test or the tuning seeds, of at most
    MAX_SEED_PAIRS seed x pairs (more seeds run in chunks): 216 MB measured at 100
    seeds x 300,000 pairs (4 bytes per seed x pair above the libraries)."""
    from spsa_bench.engine.budget_study import seeds_per_pass, study_settings

    study = study_settings(BENCH)
    seeds = max(BENCH.seeds_count, len(study.tuning_seeds or ()))
    one_pass = max(min(seeds, seeds_per_pass(n)) * n for n in study.num_pairs)
    return fitted(100 + one_pass * 4 / 1e6)


def budget_study_runtime(wildcards):
    """Every run of the study at most 3 us per seed x pair (as simulate)."""
    return 2 + _budget_study_runs() // 20_000_000


def get_noise_settings():
    """The noise models the figure shows: vendored, the presets, then every other
    setting the configuration's scenarios use (each once, in order)."""
    settings = ["vendored", "STC", "LTC", "VLTC"]
    for scenario in BENCH.scenarios.values():
        if scenario["noise"] not in settings:
            settings.append(scenario["noise"])
    return settings
