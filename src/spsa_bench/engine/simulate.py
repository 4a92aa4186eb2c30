"""From a resolved configuration to a run dataset: the one place that wires
oracle, schedule, optimizer and replay together."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench import optimizers
from spsa_bench.config.derived import check_gains
from spsa_bench.config.limits import arms_per_replay
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
from spsa_bench.dispatch.schedule import PER_SEED_FIELDS, Schedule, sync_schedule
from spsa_bench.engine.replay import NonFiniteStateError, RunResult, replay
from spsa_bench.engine.stack import stack
from spsa_bench.model.bowl import ParamTable, Problem, build_problem
from spsa_bench.model.developer import DeveloperView
from spsa_bench.model.instances import TruthPrior, draw_instances, draw_posterior_instances
from spsa_bench.model.noise import OUTCOMES, VENDORED, NoiseModel, noise_model
from spsa_bench.optimizers.base import Optimizer

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
    prior: TruthPrior | Sequence[TruthPrior] | None = None,
) -> Problem:
    """The scenario's problem.

    A groups scenario has one bowl for every seed (``seeds`` is ignored); a tune
    scenario (a parameter block) draws one bowl per seed of ``seeds`` from its truth
    prior (:func:`spsa_bench.model.instances.draw_instances`, rows in the order of
    ``seeds``), and its :class:`~spsa_bench.model.bowl.ParamTable` has no
    ``w_true``, ``w_dev`` or ``theta_peak`` (``None``: they are per seed, in the bowl).
    ``prior`` replaces a tune scenario's own (the planner's, which may put every
    optimum at the start: a prior no benchmark scenario may have); a sequence of priors
    (a calibration's accepted draws) draws seed ``s`` from ``prior[s mod K]``
    (:func:`spsa_bench.model.instances.draw_posterior_instances`).
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
    single = prior is None or isinstance(prior, TruthPrior)
    draw = draw_instances if single else draw_posterior_instances
    bowl = draw(
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


def build_arm(config: Config, arm: OptimizerArm, view: DeveloperView) -> tuple[Optimizer, str]:
    """``arm``'s optimizer, built from the developer view only (never from the bowl),
    its gains checked, and the iteration counter its hand-outs count with: the
    configuration's ``iteration_counter`` unless the arm overrides it (an SPSA arm's
    ``iteration_counter`` other than ``run``)."""
    built = optimizers.build(arm.kind, view, arm.hyper, name=arm.name)
    check_gains(built, arm.name)
    counter = getattr(arm.hyper, "iteration_counter", "run")
    if counter == "run":
        counter = config.iteration_counter
    return built, counter


def replay_arm(
    config: Config,
    arm: OptimizerArm,
    problem: Problem,
    schedule: Schedule,
    progress: Callable[[int, int], None] | None = None,
    noise: NoiseModel = VENDORED,
    rounding: str = "none",
) -> RunResult:
    """Build ``arm`` (:func:`build_arm`) and replay it; the result carries the scalars
    the arm derived (``arm_info``, e.g. Autoselect's games count). ``rounding`` is the
    worker's (:func:`scenario_rounding`)."""
    built, counter = build_arm(config, arm, problem.view)
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
    prior: TruthPrior | Sequence[TruthPrior] | None = None,
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
    mode = config.batch_mode(batch_mode)
    if schedule is None:
        schedule = make_schedule(config, mode, list(seeds))
    schedules = HeldOut(schedule, schedule, ())
    run, _ = _simulate_run(config, optimizer, mode, scenario, schedules, progress=progress)
    return run


@dataclasses.dataclass(frozen=True)
class HeldOut:
    """A job's schedule (``schedule``, its own seeds) and the one it replays
    (``replayed``): the same rows followed by those of the held-out ``seeds`` (the
    tuning protocol's), each row the schedule :func:`make_schedule` gives that seed.

    Replaying them in one pass costs little more than the job's seeds alone: a
    replay's time is dominated by its per-event Python work, not by the rows
    (measured on default cells, 100 vs 120 rows: +2 to +23%, where a separate 20-row
    replay costs 55-126% of the 100-row one), and a seed's rows never
    depend on another seed's (keyed streams, :mod:`spsa_bench.model.streams`; seeds
    with fewer jobs are masked), so the job's rows are bit-identical to a replay of
    its seeds alone and the held-out rows to one of the held-out seeds alone."""

    schedule: Schedule
    replayed: Schedule
    seeds: tuple[int, ...]


def held_out(
    config: Config,
    mode: BatchMode,
    seeds: Sequence[int],
    extra: Sequence[int],
    schedule: Schedule | None = None,
) -> HeldOut:
    """The :class:`HeldOut` schedules of a job of ``seeds`` (``schedule``, when given,
    is theirs, e.g. read from the workflow's file) with the held-out seeds ``extra``
    after them."""
    seeds, extra = [int(s) for s in seeds], [int(s) for s in extra]
    if schedule is None:
        schedule = make_schedule(config, mode, seeds)
    if not extra:
        return HeldOut(schedule, schedule, ())
    if set(extra) & set(seeds):
        raise ValueError(f"held-out seeds {sorted(set(extra) & set(seeds))} are the job's own")
    if mode.is_sync:  # one row broadcast to every seed: rebuilt, not stacked
        replayed = make_schedule(config, mode, seeds + extra)
    else:
        replayed = stack_schedules(schedule, make_schedule(config, mode, extra))
    return HeldOut(schedule, replayed, tuple(extra))


def stack_schedules(first: Schedule, second: Schedule) -> Schedule:
    """The rows of ``first`` then those of ``second``: one schedule of both seed lists,
    the job axis padded to the wider of the two as the schedule builders pad
    (:mod:`spsa_bench.dispatch.asynchronous`: pairs, offsets and arrived-before 0, worker,
    arrival and lead -1, times NaN)."""
    if (first.num_workers, first.num_pairs) != (second.num_workers, second.num_pairs):
        raise ValueError("cannot stack schedules of different workers or budgets")
    if (first.job_lead is None) != (second.job_lead is None):
        raise ValueError("cannot stack a schedule with job_lead and one without")
    width = max(first.max_jobs, second.max_jobs)
    fill = {"job_worker": -1, "arrival_job": -1, "job_lead": -1}
    fill |= {"job_dispatch_time": np.nan, "job_arrival_time": np.nan}

    def stacked(name: str) -> np.ndarray:
        a, b = getattr(first, name), getattr(second, name)
        if name in ("seeds", "n_jobs", "worker_concurrency", "worker_speed"):
            return np.concatenate([a, b])
        out = np.full((a.shape[0] + b.shape[0], width), fill.get(name, 0), dtype=a.dtype)
        out[: a.shape[0], : a.shape[1]] = a
        out[a.shape[0] :, : b.shape[1]] = b
        return out

    names = ("seeds", *PER_SEED_FIELDS) + (() if first.job_lead is None else ("job_lead",))
    return dataclasses.replace(first, **{name: stacked(name) for name in names})


def simulate_run_held_out(
    config: Config, *, optimizer: str, batch_mode: str, scenario: str, schedules: HeldOut
) -> tuple[Layout, np.ndarray]:
    """:func:`simulate_run` of the job's seeds (``schedules.schedule``) and, from the
    same replay, the final Elo loss of every held-out seed (``(held-out seed,)``, what
    :func:`spsa_bench.studies.tuning.run_tuning` computes for them): the run is
    bit-identical to :func:`simulate_run`'s."""
    return _simulate_run(config, optimizer, config.batch_mode(batch_mode), scenario, schedules)


def simulate_runs_held_out(
    configs: Mapping[str, Config],
    *,
    batch_mode: str,
    scenario: str,
    schedules: HeldOut,
    stacked: bool = True,
    report: Callable[[str], None] | None = None,
) -> dict[str, tuple[Layout, np.ndarray]]:
    """:func:`simulate_run_held_out` of every arm of ``configs`` (arm name -> the
    configuration it runs from: a sweep job's arms, which differ in their
    hyperparameters only), in the order given.

    With ``stacked`` (the default) the arms are replayed together, one replay of arms x
    rows (:mod:`spsa_bench.engine.stack`) for each group of
    :func:`~spsa_bench.config.limits.arms_per_replay` arms, when they can share one: the
    same run settings (budget, checkpoints, signal, entropy, iteration counter, batch
    mode, scenario), the same Hessian match and the same probe ``c`` at every
    iteration; each arm's run and held-out losses are then bit-identical to its own
    replay's. Otherwise, and when the stacked replay stops on a non-finite state (so
    that the error names the arm), each arm of the group is replayed alone. ``report``,
    given, receives one line per group saying which it was, and why not stacked."""
    names = list(configs)
    size = 1
    if stacked:
        size = arms_per_replay(
            len(names), schedules.replayed.num_seeds, next(iter(configs.values())).num_pairs
        )
    runs = {}
    rows = schedules.replayed.num_seeds
    for first in range(0, len(names), size):
        group = {name: configs[name] for name in names[first : first + size]}
        stacked_runs = None
        why = f"a group of one: at most {size} per replay" if stacked else "stacking off"
        if len(group) > 1:
            stacked_runs, why = _simulate_stacked(group, batch_mode, scenario, schedules)
        if report is not None:
            listed = ", ".join(group)
            report(
                f"stacked: {listed} (one replay of {len(group)} x {rows} rows)"
                if stacked_runs
                else f"alone: {listed} ({why})"
            )
        runs |= stacked_runs or {
            arm: _simulate_run(config, arm, config.batch_mode(batch_mode), scenario, schedules)
            for arm, config in group.items()
        }
    return runs


def _run_settings(config: Config, arm: OptimizerArm, batch_mode: str, scenario: str):
    """What a replay reads from the configuration besides the arm's optimizer."""
    counter = getattr(arm.hyper, "iteration_counter", "run")
    return (
        config.num_pairs,
        config.checkpoints,
        config.signal,
        config.entropy,
        config.iteration_counter if counter == "run" else counter,
        config.batch_mode(batch_mode),
        config.scenario(scenario),
    )


def _simulate_stacked(
    configs: Mapping[str, Config], batch_mode: str, scenario: str, schedules: HeldOut
) -> tuple[dict[str, tuple[Layout, np.ndarray]] | None, str]:
    """Every arm of ``configs`` from one stacked replay, or ``None`` and why not when
    they cannot share one (:func:`simulate_runs_held_out`)."""
    shared = next(iter(configs.values()))
    arms = {name: config.optimizer(name) for name, config in configs.items()}
    settings = [
        _run_settings(configs[name], arm, batch_mode, scenario) for name, arm in arms.items()
    ]
    if any(setting != settings[0] for setting in settings[1:]):
        return None, "their run settings differ (budget, iteration counter, batch mode...)"
    problem, replayed = _problems(shared, scenario, schedules)
    built = [build_arm(configs[name], arm, replayed.view)[0] for name, arm in arms.items()]
    counter = settings[0][4]
    schedule = schedules.replayed
    optimizer = stack(built, np.unique(schedule.iter_local(counter)))
    if optimizer is None:
        return None, "their states, Hessian match or probes differ (engine.stack)"
    rows, count = schedule.num_seeds, len(built)
    noise = make_noise(shared, scenario)
    try:
        result = replay(
            optimizer,
            schedule,
            replayed.bowl,
            replayed.view,
            entropy=shared.entropy,
            signal=shared.signal,
            iteration_counter=counter,
            checkpoints=shared.checkpoints,
            noise=noise,
            rounding=scenario_rounding(shared, scenario),
            copies=count,
        )
    except NonFiniteStateError:  # replayed alone, each arm's failure names the arm
        return None, "the stacked replay stopped on a non-finite state"
    mode = shared.batch_mode(batch_mode)
    runs = {}
    for k, (name, arm) in enumerate(arms.items()):
        block = dataclasses.replace(
            _rows(result, k * rows, (k + 1) * rows), arm_info=dict(built[k].info)
        )
        runs[name] = _arm_run(configs[name], arm, mode, scenario, schedules, problem, noise, block)
    return runs, ""


def _problems(config: Config, scenario: str, schedules: HeldOut) -> tuple[Problem, Problem]:
    """The problem of the job's seeds and the one replayed (the held-out seeds' rows
    after the job's, when there are held-out seeds)."""
    seeds = [int(s) for s in schedules.schedule.seeds]
    problem = make_problem(config, scenario, seeds)
    if not schedules.seeds:
        return problem, problem
    return problem, make_problem(config, scenario, seeds + list(schedules.seeds))


def _simulate_run(
    config: Config,
    optimizer: str,
    mode: BatchMode,
    scenario: str,
    schedules: HeldOut,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[Layout, np.ndarray]:
    arm = config.optimizer(optimizer)
    problem, replayed = _problems(config, scenario, schedules)
    noise = make_noise(config, scenario)
    result = replay_arm(
        config,
        arm,
        replayed,
        schedules.replayed,
        progress=progress,
        noise=noise,
        rounding=scenario_rounding(config, scenario),
    )
    return _arm_run(config, arm, mode, scenario, schedules, problem, noise, result)


def _arm_run(
    config: Config,
    arm: OptimizerArm,
    mode: BatchMode,
    scenario: str,
    schedules: HeldOut,
    problem: Problem,
    noise: NoiseModel,
    result: RunResult,
) -> tuple[Layout, np.ndarray]:
    """The run of the job's seeds from ``result`` (the replay of ``schedules.replayed``)
    and the final Elo loss of every held-out seed."""
    from spsa_bench.results.runs import run_layout

    schedule = schedules.schedule
    held_loss = np.empty(0)
    if schedules.seeds:
        held = make_problem(config, scenario, list(schedules.seeds))
        held_loss = held.bowl.elo_loss(result.theta[schedule.num_seeds :, -1])
        result = _rows(result, 0, schedule.num_seeds)
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
    check_finite_run(run, f"{arm.name}/{mode.name}/{scenario}")
    return run, held_loss


def _rows(result: RunResult, start: int, stop: int) -> RunResult:
    """``result`` for its seeds ``start .. stop - 1`` (every per-seed array cut)."""
    rows = slice(start, stop)

    def cut(values):
        return None if values is None else values[rows]

    return dataclasses.replace(
        result,
        theta=result.theta[rows],
        extras={name: values[rows] for name, values in result.extras.items()},
        avg_step_size_last_100=result.avg_step_size_last_100[rows],
        total_pairs=result.total_pairs[rows],
        n_updates=result.n_updates[rows],
        outcome_counts=result.outcome_counts[rows],
        probe_equal_fraction=cut(result.probe_equal_fraction),
        probe_swapped_fraction=cut(result.probe_swapped_fraction),
    )


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
