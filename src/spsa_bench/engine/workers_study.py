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

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.config.loader import BatchMode, Config, ConfigError, OptimizerArm
from spsa_bench.engine.cend_study import known
from spsa_bench.optimizers import REGISTRY, hyper_from_dict

if TYPE_CHECKING:
    import xarray as xr

STUDY_KEY = "workers_study"
DEFAULT_POOL = {"batch": "fishtest"}
#: What ``assumption`` says in the dataset and the table.
ASSUMPTION = (
    "worker concurrency, speed and game durations follow the pool's settings (Fishtest's "
    "batch rule, assumed durations per time control, docs/asynchrony.md); tune scenarios "
    "draw their truth from the scenario's prior; modelling assumptions, not measurements"
)


@dataclasses.dataclass(frozen=True)
class WorkersStudy:
    modes: tuple[BatchMode, ...]  # the pool at each size, ascending
    reference: BatchMode
    scenarios: tuple[str, ...]
    arms: tuple[OptimizerArm, ...]
    margin: float
    pool: dict

    @property
    def workers(self) -> tuple[int, ...]:
        return tuple(mode.workers for mode in self.modes)


def _arm(config: Config, name: str, settings, where: str) -> OptimizerArm:
    if settings is None:
        return known(config.optimizer, name, where)
    settings = dict(settings)
    kind = settings.pop("kind", name)
    if kind not in REGISTRY:
        raise ConfigError(f"{where}: unknown optimizer kind {kind!r} (give kind)")
    try:
        return OptimizerArm(name, kind, hyper_from_dict(kind, settings))
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{where}: {error}") from None


def study_settings(config: Config) -> WorkersStudy | None:
    """The configuration's ``workers_study``, checked (``None`` when it has none)."""
    from spsa_bench.config.loader import default_time_control, resolve_batch_mode

    raw = config.resolved.get(STUDY_KEY)
    if raw is None:
        return None
    where = STUDY_KEY
    pool = dict(raw.get("pool") or DEFAULT_POOL)
    if "workers" in pool:
        raise ConfigError(f"{where}.pool.workers: the study sets it (give workers: [...])")
    default_tc = default_time_control(config.resolved["noise"])
    modes = []
    for workers in sorted(raw["workers"]):
        mode, _ = resolve_batch_mode(
            f"{where}.pool", {**pool, "workers": workers}, config.num_pairs, default_tc
        )
        if mode.is_sync:
            raise ConfigError(f"{where}.pool: must be asynchronous (batch variable or fishtest)")
        modes.append(dataclasses.replace(mode, name=f"pool-w{workers}"))
    reference = known(config.batch_mode, raw["reference"], f"{where}.reference")
    if not reference.is_sync:
        raise ConfigError(f"{where}.reference = {raw['reference']!r}: not a synchronous mode")
    scenarios = tuple(raw["scenarios"])
    for scenario in scenarios:
        known(config.scenario, scenario, f"{where}.scenarios")
    arms_raw = raw["arms"]
    if isinstance(arms_raw, list):
        arms_raw = {name: None for name in arms_raw}
    arms = tuple(
        _arm(config, name, settings, f"{where}.arms.{name}") for name, settings in arms_raw.items()
    )
    return WorkersStudy(
        modes=tuple(modes),
        reference=reference,
        scenarios=scenarios,
        arms=arms,
        margin=float(raw.get("margin", 0.5)),
        pool=pool,
    )


def run_workers_study(
    config: Config,
    study: WorkersStudy,
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
    start_gap = np.full((n_scen, seeds.size), np.nan)
    reference = make_schedule(config, study.reference, seeds)
    schedules = [make_schedule(config, mode, seeds) for mode in study.modes]
    schedule_kpis = [kpis.schedule_kpis(schedule) for schedule in schedules]
    for s, scenario in enumerate(study.scenarios):
        problem = make_problem(config, scenario, seeds)
        noise, rounding = make_noise(config, scenario), scenario_rounding(config, scenario)
        start_gap[s] = problem.bowl.elo_loss(np.tile(problem.view.theta_start, (seeds.size, 1)))

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
    return _study_dataset(config, study, seeds, loss, sync_loss, start_gap, kpi)


_KPI_ATTRS = {
    "staleness_p50": ("median over jobs of the pairs arrived while the job was out", "pairs"),
    "in_flight_mean_fraction": ("mean share of the budget in flight at a job's dispatch", "1"),
    "in_flight_max_fraction": ("largest share of the budget in flight at a job's dispatch", "1"),
}


def _study_dataset(config, study, seeds, loss, sync_loss, start_gap, kpi) -> xr.Dataset:
    import xarray as xr

    from spsa_bench.results.cf import conform
    from spsa_bench.results.provenance import provenance

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
        **provenance(config.to_json()),
    }
    return conform(xr.Dataset(data_vars, coords, attrs))


def print_progress(message: str) -> None:
    print(f"workers study: {message}", file=sys.stderr, flush=True)
