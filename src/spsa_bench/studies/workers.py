"""The workers study: where each optimizer breaks as a Fishtest tune gets more workers.

Fishtest runs an SPSA test on as many machines as its core cap allows; with a
hundred workers most of the budget is in flight at once (fishtest #535). The study
runs the configuration's ``workers_study`` arms on its scenarios under one worker
pool at several sizes, and in the synchronous reference mode at the same seeds::

    workers_study:
      pool: {batch: fishtest, tc: STC}   # a batch mode without `workers` (default: fishtest)
      workers: [1, 10, 50, 200]
      reference: sync                    # a synchronous batch mode of the configuration
      scenarios: [mixed, tune-16-stc]
      arms:                              # a config arm by name (null), or settings here
        spsa: null
        adam-block: null
        spsa-delay: {kind: spsa, delay_adaptive: 500}
      margin: 0.5                        # Elo: "safe" while async - sync stays below it

Every pool size at one seed shares the instance, the flips and the match draws
with the synchronous run (common random numbers), so async minus sync is paired.
Arms defined here are not grid arms: they run in this study only. Writes the
dataset :mod:`spsa_bench.analysis.workers` reads (dims scenario, arm, workers, seed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.config.records import Config
from spsa_bench.config.sections.workers import WorkersSection
from spsa_bench.studies.base import Output, Scope, Study, start_gap, study_dataset

if TYPE_CHECKING:
    import xarray as xr

#: What ``assumption`` says in the dataset and the table.
ASSUMPTION = (
    "worker concurrency, speed and game durations follow the pool's settings (Fishtest's "
    "batch rule, assumed durations per time control, docs/asynchrony.md); tune scenarios "
    "draw their truth from the scenario's prior; modelling assumptions, not measurements"
)


def run_workers_study(
    config: Config,
    study: WorkersSection,
    seeds: Sequence[int],
    progress: Callable[[str], None] | None = None,
) -> xr.Dataset:
    """Final Elo loss of every arm, scenario and pool size, and in the reference mode."""
    from spsa_bench.dispatch import kpis
    from spsa_bench.engine.simulate import (
        make_noise,
        make_problem,
        make_schedule,
        replay_arm,
        scenario_rounding,
    )

    seeds = np.asarray(list(seeds), dtype=np.int64)
    n_scen, n_arms, n_pools = len(study.scenarios), len(study.arms), len(study.modes)
    loss = np.full((n_scen, n_arms, n_pools, seeds.size), np.nan)
    sync_loss = np.full((n_scen, n_arms, seeds.size), np.nan)
    gap = np.full((n_scen, seeds.size), np.nan)
    reference = make_schedule(config, study.reference, seeds)
    schedules = [make_schedule(config, mode, seeds) for mode in study.modes]
    schedule_kpis = [kpis.schedule_kpis(schedule) for schedule in schedules]
    for s, scenario in enumerate(study.scenarios):
        problem = make_problem(config, scenario, seeds)
        noise, rounding = make_noise(config, scenario), scenario_rounding(config, scenario)
        gap[s] = start_gap(problem, seeds.size)

        def final_loss(arm, schedule, problem=problem, noise=noise, rounding=rounding):
            run = replay_arm(config, arm, problem, schedule, noise=noise, rounding=rounding)
            return problem.bowl.elo_loss(run.theta[:, -1])

        for a, arm in enumerate(study.arms):
            if progress is not None:
                progress(f"{scenario}: {arm.name}")
            sync_loss[s, a] = final_loss(arm, reference)
            for w, schedule in enumerate(schedules):
                loss[s, a, w] = final_loss(arm, schedule)
    kpi = {
        name: np.stack([values[name][1] for values in schedule_kpis])
        for name in ("staleness_p50", "in_flight_mean_fraction", "in_flight_max_fraction")
    }
    return _study_dataset(config, study, seeds, loss, sync_loss, gap, kpi)


_KPI_ATTRS = {
    "staleness_p50": ("median over jobs of the pairs arrived while the job was out", "pairs"),
    "in_flight_mean_fraction": ("mean share of the budget in flight at a job's dispatch", "1"),
    "in_flight_max_fraction": ("largest share of the budget in flight at a job's dispatch", "1"),
}


def _study_dataset(config, study, seeds, loss, sync_loss, start_gap, kpi) -> xr.Dataset:
    cells = ("scenario", "arm")
    data_vars = {
        "final_elo_loss": (
            (*cells, "workers", "seed"),
            loss,
            {
                "long_name": "true Elo loss at the end of the budget, asynchronous pool",
                "units": "Elo",
            },
        ),
        "sync_final_elo_loss": (
            (*cells, "seed"),
            sync_loss,
            {"long_name": "true Elo loss at the end, synchronous reference mode", "units": "Elo"},
        ),
        "start_elo_gap": (
            ("scenario", "seed"),
            start_gap,
            {"long_name": "true Elo loss at the start", "units": "Elo"},
        ),
    }
    for name, (long_name, units) in _KPI_ATTRS.items():
        data_vars[name] = (("workers", "seed"), kpi[name], {"long_name": long_name, "units": units})
    names = [arm.name for arm in study.arms]
    coords = {
        "scenario": (
            "scenario",
            np.array(study.scenarios, dtype=object),
            {"long_name": "scenario"},
        ),
        "arm": ("arm", np.array(names, dtype=object), {"long_name": "optimizer arm"}),
        "kind": (
            "arm",
            np.array([arm.kind for arm in study.arms], dtype=object),
            {"long_name": "optimizer kind"},
        ),
        "workers": ("workers", np.array(study.workers, dtype=np.int64), {"long_name": "workers"}),
        "seed": ("seed", seeds, {"long_name": "seed"}),
    }
    pool = ", ".join(f"{key}: {value}" for key, value in sorted(study.pool.items()))
    attrs = {
        "title": f"spsa-bench workers study: pool {{{pool}}} against {study.reference.name}",
        "batch_mode": f"pool {{{pool}}}",
        "reference": study.reference.name,
        "margin": study.margin,
        "level": 0.95,
        "num_pairs": config.num_pairs,
        "assumption": ASSUMPTION,
    }
    return study_dataset(config, data_vars, coords, attrs)


def _scope(config: Config, study: WorkersSection) -> Scope:
    """The reference mode, the study's scenarios and the configured arms it names."""
    raw = config.resolved["workers_study"]["arms"]
    arms = raw if isinstance(raw, list) else [name for name, arm in raw.items() if arm is None]
    return Scope(study.reference.name, study.scenarios, tuple(arms), config.num_pairs)


def _memory_mb(config: Config, study: WorkersSection) -> float:
    """One simulation of the study's seeds at a time at its largest pool (slots of
    seeds x workers x parameters), plus its results: 204-268 MB measured at 100 seeds."""
    slots = config.seeds_count * max(study.workers) * 64 * 8 * 4 / 1e6
    return 120 + slots + config.seeds_count * config.num_pairs * 30 / 1e6


def _runtime_min(config: Config, study: WorkersSection) -> int:
    """Every arm x scenario x (pool sizes + the reference), each at most 3 us per seed x pair."""
    runs = len(study.arms) * len(study.scenarios) * (len(study.modes) + 1)
    return 2 + runs * config.seeds_count * config.num_pairs // 20_000_000


STUDY = Study(
    key="workers_study",
    command="workers-study",
    help="final Elo loss against the number of Fishtest workers and the safe concurrency of "
    "each arm (the config's workers_study)",
    doc="docs/asynchrony.md",
    label="workers study",
    rule="workers_study",
    run=run_workers_study,
    report="spsa_bench.analysis.workers:write_report",
    outputs=(
        Output("nc", "results/fishtest/workers_study.nc"),
        Output(
            "csv",
            "results/tables/workers.csv",
            "workers_table.rst",
            "Tables",
            {"table": "workers study"},
        ),
        Output("md", "results/tables/workers.md"),
        Output(
            "png",
            "results/figures/workers.png",
            "workers.rst",
            "Fishtest tunes",
            {"figure": "workers study"},
        ),
        Output("svg", "results/figures/workers.svg"),
        Output("safe", "results/tables/workers_safe.csv"),
    ),
    scope=_scope,
    memory_mb=_memory_mb,
    runtime_min=_runtime_min,
    comment="The workers study (fishtest #535): the config's workers_study arms and scenarios "
    "under one Fishtest worker pool at several sizes, paired with the synchronous mode.",
)
