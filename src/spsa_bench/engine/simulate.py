"""From a resolved configuration to a run dataset: the one place that wires
oracle, schedule, optimizer and replay together."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench import optimizers
from spsa_bench.config.derived import check_gains
from spsa_bench.config.loader import (
    DEFAULT_ROUNDING,
    BatchMode,
    Config,
    OptimizerArm,
    scenario_block,
    scenario_kind,
    scenario_prior,
)
from spsa_bench.dispatch import kpis
from spsa_bench.dispatch.schedule import Schedule, sync_schedule
from spsa_bench.engine.replay import RunResult, replay
from spsa_bench.model.bowl import ParamTable, Problem, build_problem
from spsa_bench.model.developer import DeveloperView
from spsa_bench.model.instances import TruthPrior, draw_instances
from spsa_bench.model.noise import OUTCOMES, VENDORED, NoiseModel, noise_model

if TYPE_CHECKING:  # a run is built and written without xarray (results.layout)
    import xarray as xr

    from spsa_bench.results.layout import Layout


#: The phases ``spsa-bench simulate --timings`` reports (and ``spsa-bench bench``'s
#: whole-process row): the configuration (this module's import, reading and checking
#: it), the simulation (schedule, problem, noise table, replay, the run dataset) and
#: the write.
TIMED_PHASES = ("configuration", "simulation", "write")


def make_problem(
    config: Config,
    scenario: str,
    seeds: Sequence[int] | None = None,
    prior: TruthPrior | None = None,
) -> Problem:
    """The scenario's problem.

    A groups scenario has one bowl for every seed (``seeds`` is ignored); a tune
    scenario (a parameter block) draws one bowl per seed of ``seeds`` from its truth
    prior (:func:`spsa_bench.model.instances.draw_instances`, rows in the order of
    ``seeds``), and its :class:`~spsa_bench.model.bowl.ParamTable` has no
    ``w_true``, ``w_dev`` or ``theta_peak`` (``None``: they are per seed, in the bowl).
    ``prior`` replaces a tune scenario's own (the planner's, which may put every
    optimum at the start: a prior no benchmark scenario may have).
    """
    spec = config.scenario(scenario)
    if scenario_kind(spec) == "groups":
        problem = build_problem(
            spec["groups"],
            start_elo=spec["start_elo"],
            peak_elo=spec["peak_elo"],
            c_elo_gap=spec["c_elo_gap"],
            c_fraction=spec["c_fraction"],
            num_pairs=config.num_pairs,
        )
        integer = [bool(g.get("integer", False)) for g in spec["groups"] for _ in range(g["count"])]
        view = dataclasses.replace(problem.view, integer=np.array(integer, dtype=bool))
        return dataclasses.replace(problem, view=view)
    if seeds is None:
        raise ValueError(f"scenario {scenario!r} draws a problem per seed: give the seeds")
    block = scenario_block(spec)
    bowl = draw_instances(
        scenario_prior(spec) if prior is None else prior,
        block.start,
        block.min,
        block.max,
        block.c_end,
        config.entropy,
        list(seeds),
    )
    integer = np.full(len(block), bool(spec.get("integer", True)))
    view = DeveloperView(
        theta_start=block.start,
        theta_min=block.min,
        theta_max=block.max,
        c_dev=block.c_end,
        num_pairs=config.num_pairs,
        integer=integer,
        r_end=block.r_end,
    )
    params = ParamTable(
        param_group=block.names,
        w_true=None,
        w_dev=None,
        c_dev=view.c_dev,
        theta_start=view.theta_start,
        theta_peak=None,
        theta_min=view.theta_min,
        theta_max=view.theta_max,
    )
    return Problem(bowl=bowl, view=view, params=params)


def scenario_rounding(config: Config, scenario: str) -> str:
    """How the worker rounds the scenario's integer parameters: ``stochastic``
    (Fishtest's ``floor(x + U(0, 1))``), ``nearest`` or ``none``."""
    return str(config.scenario(scenario).get("rounding", DEFAULT_ROUNDING))


def make_noise(config: Config, scenario: str) -> NoiseModel:
    """The scenario's game-pair noise model (resolved: the top-level one by default)."""
    return noise_model(config.scenario(scenario).get("noise", "vendored"))


def make_schedule(config: Config, mode: BatchMode, seeds: Sequence[int]) -> Schedule:
    seeds = np.asarray(list(seeds), dtype=np.int64)
    if mode.is_sync:
        return sync_schedule(seeds, config.num_pairs, mode.batch_size)
    from spsa_bench.dispatch.asynchronous import async_schedule

    return async_schedule(config.entropy, seeds, config.num_pairs, mode.settings)


def replay_arm(
    config: Config,
    arm: OptimizerArm,
    problem: Problem,
    schedule: Schedule,
    progress: Callable[[int, int], None] | None = None,
    noise: NoiseModel = VENDORED,
    rounding: str = "none",
) -> RunResult:
    """Build ``arm`` from the developer view only (never from the bowl) and replay it;
    the result carries the scalars the arm derived (``arm_info``, e.g. Autoselect's
    games count). ``rounding`` is the worker's (:func:`scenario_rounding`). The
    handout iteration counts with the configuration's ``iteration_counter`` unless
    the arm overrides it (an SPSA arm's ``iteration_counter`` other than ``run``)."""
    built = optimizers.build(arm.kind, problem.view, arm.hyper, name=arm.name)
    check_gains(built, arm.name)
    counter = getattr(arm.hyper, "iteration_counter", "run")
    if counter == "run":
        counter = config.iteration_counter
    result = replay(
        built,
        schedule,
        problem.bowl,
        problem.view,
        entropy=config.entropy,
        signal=config.signal,
        iteration_counter=counter,
        checkpoints=config.checkpoints,
        progress=progress,
        noise=noise,
        rounding=rounding,
    )
    return dataclasses.replace(result, arm_info=dict(built.info))


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A scenario's problem, a batch mode's schedule, the scenario's noise model and the
    worker's rounding for one set of seeds. Every arm replayed on it shares, at each
    seed, the instance, the schedule, the flips, the rounding uniforms and the match
    draws (common random numbers), so the differences between arms are paired."""

    config: Config
    problem: Problem
    schedule: Schedule
    noise: NoiseModel
    rounding: str

    def replay(
        self,
        arm: OptimizerArm,
        progress: Callable[[int, int], None] | None = None,
        **hyper,
    ) -> RunResult:
        """:func:`replay_arm` of ``arm`` with the hyperparameters ``hyper`` changed."""
        if hyper:
            arm = dataclasses.replace(arm, hyper=dataclasses.replace(arm.hyper, **hyper))
        return replay_arm(
            self.config,
            arm,
            self.problem,
            self.schedule,
            progress=progress,
            noise=self.noise,
            rounding=self.rounding,
        )


def prepare(
    config: Config,
    scenario: str,
    mode: BatchMode,
    seeds: Sequence[int],
    prior: TruthPrior | None = None,
) -> Prepared:
    """The problem (``prior``: see :func:`make_problem`), schedule, noise and rounding
    the arms of a study replay on."""
    seeds = [int(s) for s in seeds]
    return Prepared(
        config=config,
        problem=make_problem(config, scenario, seeds, prior=prior),
        schedule=make_schedule(config, mode, seeds),
        noise=make_noise(config, scenario),
        rounding=scenario_rounding(config, scenario),
    )


def simulate(
    config: Config,
    *,
    optimizer: str,
    batch_mode: str,
    scenario: str,
    seeds: Sequence[int],
    schedule: Schedule | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> xr.Dataset:
    """Run one optimizer arm on one batch mode and scenario for ``seeds``."""
    return simulate_run(
        config,
        optimizer=optimizer,
        batch_mode=batch_mode,
        scenario=scenario,
        seeds=seeds,
        schedule=schedule,
        progress=progress,
    ).to_dataset()


def simulate_run(
    config: Config,
    *,
    optimizer: str,
    batch_mode: str,
    scenario: str,
    seeds: Sequence[int],
    schedule: Schedule | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Layout:
    """:func:`simulate` as a :class:`~spsa_bench.results.layout.Layout`, which a
    ``spsa-bench simulate`` process writes without importing xarray."""
    from spsa_bench.results.runs import run_layout

    arm = config.optimizer(optimizer)
    mode = config.batch_mode(batch_mode)
    seeds = list(seeds)
    if schedule is None:
        schedule = make_schedule(config, mode, seeds)
    problem = make_problem(config, scenario, [int(s) for s in schedule.seeds])
    noise = make_noise(config, scenario)
    result = replay_arm(
        config,
        arm,
        problem,
        schedule,
        progress=progress,
        noise=noise,
        rounding=scenario_rounding(config, scenario),
    )
    run = run_layout(
        result,
        problem,
        seeds=schedule.seeds,
        optimizer=arm.name,
        optimizer_kind=arm.kind,
        batch_mode=mode.name,
        scenario=scenario,
        config_json=config.to_json(),
        kpis=kpis.schedule_kpis(schedule),
        kpi_attrs=kpis.KPI_ATTRS,
    )
    add_outcome_counts(run, result.outcome_counts, noise)
    check_finite_run(run, f"{optimizer}/{batch_mode}/{scenario}")
    return run


def add_outcome_counts(run: Layout, counts: np.ndarray, noise: NoiseModel) -> None:
    """Add ``outcome_counts(seed, outcome)`` and the noise model's attributes to a run."""
    outcome_attrs = {"long_name": "game-pair outcome (hero's view)"}
    run.add("outcome", ("outcome",), list(OUTCOMES), outcome_attrs, coord=True)
    run.add(
        "outcome_counts",
        ("seed", "outcome"),
        counts,
        {
            "long_name": "game pairs played with each pentanomial outcome [count of game pairs]",
            "units": "1",
            "spsa_bench_unit": "pairs",
        },
    )
    run.attrs.update(noise.attributes())


def check_finite_run(run: Layout, label: str) -> None:
    """Refuse a run holding a non-finite number (a NaN only where
    :data:`spsa_bench.results.runs.NAN_WHERE_NOT_APPLICABLE`),
    so no infinity or stray NaN is ever written; the message names variable and seed."""
    from spsa_bench.results.runs import NAN_WHERE_NOT_APPLICABLE

    for name, variable in run.variables.items():
        values = variable.values
        if values.dtype.kind not in "fc":
            continue
        bad = np.isinf(values) if name in NAN_WHERE_NOT_APPLICABLE else ~np.isfinite(values)
        if bad.any():
            where = np.argwhere(bad)[0]
            at = ", ".join(
                f"{dim} {run[dim][i] if dim in run.coord_names else i}"
                for dim, i in zip(variable.dims, where, strict=True)
            )
            raise ValueError(
                f"run {label}: {name} has {int(bad.sum())} non-finite values (first at {at or 'scalar'}); "
                "nothing written"
            )
