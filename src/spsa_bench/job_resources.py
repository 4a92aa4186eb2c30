"""What a workflow job is given on a cluster: memory (``mem_mb``) and minutes
(``runtime``) for every rule of the grid and for every study row.

The memory formulas are fitted to the peak RSS that ``results/benchmarks/`` recorded
for three runs (the default grid at 100 seeds, the design-card grid at 100 and at
1000 seeds) and ask 1.3 times the fit plus :data:`JOB_OVERHEAD_MB`: 1.2-1.5 times the
measured peak plus the SLURM overhead for every rule of the three runs. Times are
several times what was measured. docs/cluster.md has the measurements and the table.
Each function takes the resolved configuration and, for per-chunk rules, the job's
wildcards (``a``, ``b``: its seed range).
"""

from __future__ import annotations

from spsa_bench.config.limits import arms_per_replay
from spsa_bench.config.records import Config
from spsa_bench.config.scenarios import scenario_param_count

#: Beside the script, a SLURM job holds two Snakemake processes (the job step and the
#: one it starts under srun, about 140 MB each) and srun: 285-290 MB measured.
JOB_OVERHEAD_MB = 400


def fitted(megabytes: float) -> int:
    """A request: the fitted peak RSS (MB) times 1.3 plus the SLURM job's overhead."""
    return JOB_OVERHEAD_MB + int(1.3 * megabytes)


def chunk_seeds(wildcards) -> int:
    return int(wildcards.b) - int(wildcards.a) + 1


def seed_pairs(bench: Config, wildcards) -> int:
    return chunk_seeds(wildcards) * bench.num_pairs


def simulate_runtime(bench: Config, wildcards) -> int:
    """schedule, and each cell of a simulate job (:func:`group_runtime`): up to 0.4 us
    per seed x pair measured (11 s for
    1000 x 30,000 on async-variable) plus about 1 s of start-up; allowed 3 us plus
    two minutes (Python start-up on a network file system can be slow)."""
    return 2 + seed_pairs(bench, wildcards) // 20_000_000


def tuning_share(bench: Config) -> int:
    """The most tuning seeds one sweep job replays beside its chunk's: the tuning seeds
    shared out over the seed chunks (spsa_bench.workflow.chunk_tuning_seeds), 0
    without a ``tuning`` section."""
    tuning = bench.resolved.get("tuning")
    if tuning is None:
        return 0
    chunks = -(-bench.seeds_count // bench.seeds_per_job)
    return -(-int(tuning["seeds"]["count"]) // chunks)


def group_rows(bench: Config, wildcards, tuning: bool) -> int:
    """The rows one arm of a simulate job replays: its chunk's seeds and, for a sweep's
    job (``tuning``), its share of the tuning seeds."""
    return chunk_seeds(wildcards) + (tuning_share(bench) if tuning else 0)


def group_mem_mb(bench: Config, wildcards, arms: int, tuning: bool) -> int:
    """A simulate job of ``arms`` arms (a sweep's, or the arms outside a sweep, which
    stack where they can share a replay): about 140 MB of libraries plus about 22 bytes
    per row x pair of its stacked replay (spsa_bench.engine.stack: the arms it replays
    together, at most :func:`~spsa_bench.config.limits.arms_per_replay`, each
    :func:`group_rows` rows); its batch modes run one after another, so one replay is
    its peak. Measured at most 209 MB for one arm at 100 seeds x 30,000 pairs and 808 MB
    at 1000 (async-variable, the most); 442 MB for 7 arms x 120 rows x 30,000 pairs
    (adam, async-variable), where the formula fits 724 MB."""
    rows = group_rows(bench, wildcards, tuning)
    stacked = arms_per_replay(arms, rows, bench.num_pairs)
    return fitted(145 + stacked * rows * bench.num_pairs * 23 // 1_000_000)


def group_runtime(bench: Config, wildcards, arms: int, cells: int, tuning: bool) -> int:
    """A simulate job of ``arms`` arms in ``cells`` cells (its scenario in every batch
    mode, one cell after another): one simulate per arm and cell of
    :func:`group_rows` rows after one start-up."""
    pairs = group_rows(bench, wildcards, tuning) * bench.num_pairs
    return 2 + cells * arms * pairs // 20_000_000


def schedule_mem_mb(bench: Config, wildcards) -> int:
    """schedule: about 104 MB plus 20 bytes per seed x pair (measured 165 MB at 100
    seeds x 30,000 pairs, 606-702 MB at 1000)."""
    return fitted(104 + seed_pairs(bench, wildcards) * 20 / 1e6)


def grid_cells(bench: Config) -> int:
    return len(bench.optimizers) * len(bench.batch_modes) * len(bench.scenarios)


def trajectory_points(bench: Config) -> int:
    """Points of every loss trajectory: cells x seeds x checkpoints."""
    return grid_cells(bench) * bench.seeds_count * bench.checkpoints


def parameter_points(bench: Config) -> int:
    """Points of every parameter trajectory (theta, and x, z of the schedule-free
    arms, padded with NaN for the others): trajectory points x parameters."""
    params = max(scenario_param_count(scenario) for scenario in bench.scenarios.values())
    return trajectory_points(bench) * params


def combine_mem_mb(bench: Config) -> int:
    """The streaming combine: about 120 MB, 0.25 MB per run file (its two-seed
    skeleton), 80 bytes per parameter point of one cell (a run file's data and the
    cell's chunks in HDF5's cache) and 100 bytes per cell x seed (the integer per-seed
    variables kept whole), fitted to 169 MB for 120 files of 100 seeds, 330 MB for 120
    of 1000 and 332 MB for the default grid's 795 of 100."""
    chunks = -(-bench.seeds_count // bench.seeds_per_job)  # the seed chunks of each cell
    files = grid_cells(bench) * chunks
    one_cell = parameter_points(bench) / grid_cells(bench)
    cell_seeds = grid_cells(bench) * bench.seeds_count
    return fitted(120 + 0.25 * files + one_cell * 80 / 1e6 + cell_seeds * 100 / 1e6)


def combine_runtime(bench: Config) -> int:
    """Measured 0.1-0.2 us per parameter point (85 s for the default grid at 100 seeds)."""
    return 2 + parameter_points(bench) // 10_000_000


def report_mem_mb(bench: Config) -> int:
    """tables and sensitivity read benchmark.nc lazily, the trajectories one cell at a
    time: about 185 MB plus 8 bytes per trajectory point (measured 190, 227 and 279 MB
    for tables at 1.2, 8.0 and 12.1 million points; sensitivity 317 MB at 8.0)."""
    return fitted(185 + trajectory_points(bench) * 8 / 1e6)


def figures_mem_mb(bench: Config) -> int:
    """convergence_figures and comparison_figures read benchmark.nc lazily, one cell at a
    time: about 240 MB plus 8 bytes per trajectory point (measured at most 253, 268 and
    347 MB at 1.2, 8.0 and 12.1 million points)."""
    return fitted(240 + trajectory_points(bench) * 8 / 1e6)


def ranking_mem_mb(bench: Config) -> int:
    """The ranking reads benchmark.nc lazily (the last checkpoint in memory, the rest one
    cell at a time): about 215 MB plus 6 bytes per trajectory point (measured 228, 232
    and 287 MB at 1.2, 8.0 and 12.1 million points)."""
    return fitted(215 + trajectory_points(bench) * 6 / 1e6)


def tuned_mem_mb(bench: Config) -> int:
    """The tuned table: 236 MB measured at 8.0 million trajectory points."""
    return fitted(200 + trajectory_points(bench) * 4.5 / 1e6)


def report_runtime(bench: Config) -> int:
    return 2 + trajectory_points(bench) // 5_000_000


def async_seed_pairs(bench: Config) -> int:
    modes = sum(1 for mode in bench.batch_modes.values() if not mode.is_sync)
    return modes * bench.seeds_count * bench.num_pairs


def async_figures_mem_mb(bench: Config) -> int:
    """All schedules at once: 256 MB measured at 100 seeds, 675 MB at 1000 (two
    asynchronous modes, 30,000 pairs): about 210 MB plus 7.8 bytes per seed x pair
    and mode."""
    return fitted(210 + async_seed_pairs(bench) * 7.8 / 1e6)


def async_figures_runtime(bench: Config) -> int:
    return 2 + async_seed_pairs(bench) // 30_000_000


def validation_runtime(bench: Config, validated: int) -> int:
    """validate_optimizers: 2-3 s per validated arm measured, whatever the grid."""
    return 2 + validated // 4


def tuning_runs_mem_mb(bench: Config) -> int:
    """Gathers the sweep jobs' tuning losses (a few numbers a job) into one small
    dataset: the interpreter and xarray, 101 MB measured (135 files); 150 MB fitted."""
    return fitted(150)


def tuning_runs_runtime(bench: Config) -> int:
    """Reads one small JSON file per sweep job: seconds."""
    return 5


def study_mem_mb(bench: Config, study) -> int:
    """A study row's job: its fitted memory (:attr:`Study.memory_mb`) as a request."""
    return fitted(study.memory_mb(bench, study.section(bench)))


def study_runtime(bench: Config, study) -> int:
    """A study row's job: its minutes (:attr:`Study.runtime_min`)."""
    return study.runtime_min(bench, study.section(bench))
