"""Simulate a Fishtest or OpenBench tune before it is run: the planner's runs, as one
dataset.

:class:`~spsa_bench.plan.spec.PlanSpec` holds what the user gives (the parameter block,
the games budget, the time control, a batch mode of the packaged default configuration,
the number of instances, the prior over the unknown truth and the search).
:func:`plan_config` turns it into an ordinary configuration for one games budget:

- scenario ``plan``: the block (``fishtest_params``), every parameter an integer the
  worker rounds as ``floor(x + U)`` (``rounding: stochastic``), the time control's
  calibrated noise (``noise: STC | LTC | VLTC``);
- arms ``spsa`` (Fishtest's SPSA with the spec's ``A = a_ratio N`` (default 0.1),
  alpha (0.602) and gamma (0.101), the block's c_end and r_end) and ``spsa-autoselect`` (Fishtest's Autoselect at the time
  control);
- the batch mode, copied from the packaged default configuration.

An OpenBench plan (``framework = "openbench"``) differs in three places:

- scenario ``plan``: the OpenBench block's numbers as the scenario's block, rounded by
  ``rounding: coupled`` (both engines ``floor(x + U)`` with one uniform, OpenBench's
  ``spsa_workload_assignment_dict``), and the view's ``integer`` flags set per
  parameter from the block's ``int``/``float`` types (a scenario's ``integer`` is one
  flag for every parameter), so only ``int`` parameters are rounded and floored;
- arm ``spsa-openbench`` (OpenBench's SPSA: ``I = pairs // pairs_per`` iterations,
  ``k = 1 + K / pairs_per``, the ``c_k >= 0.5`` floor on int parameters, the spec's
  A ratio, alpha and gamma), and no Autoselect (OpenBench has none);
- the batch mode ``batch: openbench`` (:meth:`PlanSpec.openbench_mode`: the pool of
  machines, workloads of ``pairs_per`` pairs per runner, SINGLE or MULTIPLE, reported
  BATCHED (every 30 s) or BULK).

:func:`run_plan` replays, on the same seeds (so the same instances, flips, rounding
uniforms and match draws wherever the schedules agree: common random numbers):

1. the search, every ``c_scale x r_scale x games`` of the spec with Fishtest's
   SPSA; the given setting is ``c_scale = r_scale = 1`` at the given games. A games
   budget is its own run (``N = games / 2`` sets A, c and a), so each budget has its
   own configuration and schedule, and its instances are the same draws;
2. Autoselect at the given games (Fishtest only);
3. the noise floor: the given setting (and the recommended one, when it differs) on
   the same instances with every optimum moved to the start (zero offset).

The recommendation (:func:`spsa_bench.plan.spec.recommend`) is made from the gains of
every setting simulated (the search and Autoselect) before step 3, with the given
setting's P(gain > 0) as its risk floor. Gains are the oracle's: true Elo at the exported theta
minus true Elo at the start, through the seed's instance (the optimizer never sees it).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.analysis import stats
from spsa_bench.config.loader import (
    PACKAGED_CONFIG,
    Config,
    read_yaml,
    resolve,
)
from spsa_bench.config.param_block import ParamBlock
from spsa_bench.model.bowl import TIME_CONTROLS
from spsa_bench.model.instances import elo_at_time_control
from spsa_bench.plan.spec import (
    AUTOSELECT,
    LEVEL,
    OPENBENCH,
    SCENARIO,
    ZERO_OFFSET,
    PlanSpec,
    Setting,
    budgets,
    check_batch_mode,
    given_setting,
    recommend,
    search_settings,
)

if TYPE_CHECKING:
    import xarray as xr

    from spsa_bench.engine.replay import RunResult
    from spsa_bench.engine.simulate import Prepared

#: Jobs per step of the closed-form rounding prediction (bounds its memory).
_JOB_CHUNK = 64
#: Float error allowed in a coupled probe's span (:func:`coupled_probabilities`).
_SPAN_TOLERANCE = 1e-9


def plan_config(spec: PlanSpec, games: int) -> Config:
    """The configuration of one games budget of the plan (module docstring)."""
    default = read_yaml(PACKAGED_CONFIG)
    if spec.openbench:
        block_text, rounding = ParamBlock.to_text(spec.block), "coupled"
        mode = spec.openbench_mode()
        optimizers = {spec.spsa_kind: spec.spsa}
    else:
        check_batch_mode(spec.batch_mode)
        block_text, rounding = spec.block_text, "stochastic"
        mode = default["batch_modes"][spec.batch_mode]
        optimizers = {spec.spsa_kind: spec.spsa, AUTOSELECT: {"time_control": spec.time_control}}
    scenario = {
        "description": f"the parameter block of {spec.source}",
        "fishtest_params": block_text,
        "noise": spec.time_control,
        "rounding": rounding,
    }
    if spec.prior.offset_scale > 0:  # else the instances come from the spec's prior alone
        scenario["truth"] = spec.prior.to_dict()
    raw = {
        "games": games,
        "checkpoints": spec.checkpoints,
        "noise": spec.time_control,
        "entropy": default["entropy"],
        "seeds": {"first": 0, "count": spec.seeds, "per_job": spec.seeds},
        "baseline": spec.spsa_kind,
        "batch_modes": {spec.batch_mode: mode},
        "scenarios": {SCENARIO: scenario},
        "optimizers": optimizers,
    }
    return resolve(raw)


def with_block_types(setup: Prepared, spec: PlanSpec) -> Prepared:
    """``setup`` with the view's ``integer`` flags of an OpenBench block (its ``int`` and
    ``float`` types); a Fishtest plan's setup unchanged (every parameter an integer)."""
    if not spec.openbench:
        return setup
    view = dataclasses.replace(setup.problem.view, integer=np.array(spec.block.integer))
    return dataclasses.replace(setup, problem=dataclasses.replace(setup.problem, view=view))


def at_start(setup: Prepared) -> Prepared:
    """``setup`` with every instance's optimum moved to the start (zero offset): the same
    Elo per c_end, inactive set and rotation, so only the distance to the optimum changes
    (at every time control: a time-control shift is dropped)."""
    bowl = setup.problem.bowl
    peak = np.broadcast_to(setup.problem.view.theta_start, bowl.theta_peak.shape)
    at = {"tc_theta_peak": None} if getattr(bowl, "tc_theta_peak", None) is not None else {}
    problem = dataclasses.replace(
        setup.problem, bowl=dataclasses.replace(bowl, theta_peak=peak, **at)
    )
    return dataclasses.replace(setup, problem=problem)


def coupled_probabilities(theta, c, low, high) -> tuple[np.ndarray, np.ndarray]:
    """The shares of equal and swapped integers of one job under coupled rounding
    (OpenBench), with the probes clipped first as the replay does: with ``upper =
    min(theta + c, max)``, ``lower = max(theta - c, min)`` and ``d = upper - lower``,
    both engines play ``floor(v + U)`` with one ``U``, so ``floor(lower + U + d) -
    floor(lower + U)`` is ``floor(d)`` or ``floor(d) + 1`` and never negative::

        equal = 1 - d   if d < 1,   else 0          swapped = 0

    (:func:`spsa_bench.model.rounding.coupled_probe_probabilities` without the clip:
    ``d = 2c``.) A ``d`` within :data:`_SPAN_TOLERANCE` below 1 counts as 1: at OpenBench's
    floor ``c = 0.5`` the float difference ``(theta + c) - (theta - c)`` may fall short
    of 1 by a rounding error, which the replay's two floors do not see."""
    upper = np.minimum(theta + c, high)
    lower = np.maximum(theta - c, low)
    span = upper - lower
    equal = np.where(span < 1.0 - _SPAN_TOLERANCE, np.clip(1.0 - span, 0.0, 1.0), 0.0)
    return equal, np.zeros_like(equal)


def predicted_rounding(setup: Prepared, setting: Setting, theta: np.ndarray, grid: np.ndarray):
    """Per parameter, the closed-form shares of jobs whose engines play equal and swapped
    integers (:func:`spsa_bench.model.rounding.probe_probabilities` for the worker's
    independent rounding, :func:`coupled_probabilities` for coupled rounding), averaged
    over every job of every seed at the job's ``c_k`` (OpenBench's floored one) and the
    theta of the last checkpoint before its dispatch (exact for a parameter that does not
    move)."""
    from spsa_bench import optimizers
    from spsa_bench.model.rounding import probe_probabilities

    setup, arm = _arm(setup, setting)
    view, schedule = setup.problem.view, setup.schedule
    optimizer = optimizers.build(arm.kind, view, arm.hyper)
    iters = schedule.iter_local(setup.config.iteration_counter)
    exists = schedule.job_mask()
    checkpoint = np.searchsorted(grid, schedule.job_arrived_before, side="right") - 1
    closed_form = coupled_probabilities if setup.rounding == "coupled" else probe_probabilities
    equal, swapped = np.zeros(view.num_params), np.zeros(view.num_params)
    for start in range(0, schedule.max_jobs, _JOB_CHUNK):
        jobs = slice(start, start + _JOB_CHUNK)
        seed, job = np.nonzero(exists[:, jobs])
        c = optimizer.perturbation(iters[:, jobs][seed, job])
        at = theta[seed, checkpoint[:, jobs][seed, job]]
        e, s = closed_form(at, c, view.theta_min, view.theta_max)
        equal += e.sum(axis=0)
        swapped += s.sum(axis=0)
    count = max(int(exists.sum()), 1)
    integer = view.integer
    return np.where(integer, equal / count, np.nan), np.where(integer, swapped / count, np.nan)


def _arm(setup: Prepared, setting: Setting):
    """The setup and arm that play ``setting``: Fishtest's spsa and Autoselect take the
    multipliers as their ``c_scale`` and ``r_scale``; OpenBench's kind has none, so its
    view's c_end and r_end are multiplied (the block the user would paste; the truth
    instances, drawn in units of the given block's c_end, are unchanged)."""
    arm = setup.config.optimizer(setting.kind)
    if setting.kind != OPENBENCH:
        hyper = dataclasses.replace(arm.hyper, c_scale=setting.c_scale, r_scale=setting.r_scale)
        return setup, dataclasses.replace(arm, hyper=hyper)
    view = setup.problem.view
    view = dataclasses.replace(
        view, c_dev=view.c_dev * setting.c_scale, r_end=view.r_end * setting.r_scale
    )
    return dataclasses.replace(setup, problem=dataclasses.replace(setup.problem, view=view)), arm


@dataclasses.dataclass
class _Runs:
    """The runs done so far, by setting, and the progress over all of them."""

    progress: Callable[[int, int], None] | None
    total: int
    done: int = 0
    results: dict = dataclasses.field(default_factory=dict)  # Setting -> _Result

    def run(self, setup: Prepared, setting: Setting) -> None:
        offset = self.done

        def report(done: int, total: int) -> None:
            if self.progress is not None:  # 100% only once, from finish()
                self.progress(min(offset + done, self.total - 1), self.total)

        played, arm = _arm(setup, setting)
        result = played.replay(arm, progress=report)
        self.done = offset + _events(setup)
        self.results[setting] = _Result.of(setup, result)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress(self.total, self.total)

    def predict(self, setup: Prepared, setting: Setting) -> None:
        """Add the closed-form rounding shares to the run of ``setting``."""
        kept = self.results[setting]
        predicted = predicted_rounding(setup, setting, kept.theta, kept.pairs)
        self.results[setting] = dataclasses.replace(kept, predicted=predicted)


def _events(setup: Prepared) -> int:
    return int(setup.schedule.arrival_job.shape[1])


@dataclasses.dataclass(frozen=True)
class _Result:
    """What the plan keeps of one run."""

    theta: np.ndarray  # (seed, checkpoint, param)
    gain: np.ndarray  # (seed, checkpoint)
    pairs: np.ndarray  # (checkpoint,)
    probe_equal: np.ndarray  # (seed,)
    probe_swapped: np.ndarray  # (seed,)
    arm_info: dict
    predicted: tuple | None = None  # (equal, swapped) per parameter
    #: (time control, seed): the final gain at each of TIME_CONTROLS' optima (None: the
    #: prior has no time-control shift, one truth at every time control)
    gain_by_time_control: np.ndarray | None = None

    @classmethod
    def of(cls, setup: Prepared, result: RunResult) -> _Result:
        bowl, start = setup.problem.bowl, setup.problem.view.theta_start
        start_loss = bowl.elo_loss(np.tile(start, (bowl.num_seeds, 1)))
        return cls(
            theta=result.theta,
            gain=start_loss[:, None] - bowl.elo_loss(result.theta),
            pairs=result.pairs_grid,
            probe_equal=result.probe_equal_fraction,
            probe_swapped=result.probe_swapped_fraction,
            arm_info=dict(result.arm_info),
            gain_by_time_control=_gain_by_time_control(bowl, start, result.theta[:, -1]),
        )


def _gain_by_time_control(bowl, start: np.ndarray, final: np.ndarray) -> np.ndarray | None:
    """``(time control, seed)``: Elo at ``final`` minus Elo at ``start`` with the optimum of
    each of :data:`TIME_CONTROLS` (:func:`~spsa_bench.model.instances.elo_at_time_control`);
    None when the instances have no time-control shift."""
    if getattr(bowl, "tc_theta_peak", None) is None:
        return None
    begin = np.tile(start, (bowl.num_seeds, 1))
    return np.stack(
        [
            elo_at_time_control(bowl, final, tc) - elo_at_time_control(bowl, begin, tc)
            for tc in TIME_CONTROLS
        ]
    )


def run_plan(spec: PlanSpec, progress: Callable[[int, int], None] | None = None) -> xr.Dataset:
    """Every run of the plan (module docstring), as the dataset of ``plan.nc``."""
    from spsa_bench.engine.simulate import prepare

    games, skipped = budgets(spec)
    seeds = range(spec.seeds)
    setups = {}
    for g in games:
        config = plan_config(spec, g)
        setup = prepare(
            config,
            SCENARIO,
            config.batch_mode(spec.batch_mode),
            seeds,
            prior=spec.prior_draws or spec.prior,
        )
        setups[g] = with_block_types(setup, spec)
    search = search_settings(spec, games)
    given = given_setting(spec)
    autoselect = None if spec.openbench else Setting(AUTOSELECT, 1.0, 1.0, spec.games)
    compared = [] if autoselect is None else [autoselect]
    planned = [*search, *compared, given.at_zero_offset()]
    runs = _Runs(progress, sum(_events(setups[s.games]) for s in planned))
    for setting in planned:
        setup = setups[setting.games]
        runs.run(at_start(setup) if setting.instances == ZERO_OFFSET else setup, setting)
    candidates = [*search, *compared]
    final = np.stack([runs.results[s].gain[:, -1] for s in candidates])
    p_floor = None
    if given in runs.results:  # the search holds the tune as given
        p_floor = stats.wilson_interval(runs.results[given].gain[:, -1] > 0, LEVEL)[1]
    recommended = candidates[recommend([s.games for s in candidates], final, spec.margin, p_floor)]
    if recommended != given:
        runs.total += _events(setups[recommended.games])
        runs.run(at_start(setups[recommended.games]), recommended.at_zero_offset())
    for setting in dict.fromkeys((given, recommended, *compared)):
        runs.predict(setups[setting.games], setting)
    runs.finish()
    return plan_dataset(spec, setups, runs.results, given, recommended, autoselect, skipped)


def _run_coords(settings: list[Setting], results: dict, checkpoints: int) -> dict:
    """The ``run`` dimension's coordinates: label, arm, multipliers, budget, instances and
    the games played at each checkpoint."""
    games_played = np.stack([2 * results[s].pairs for s in settings])
    if games_played.shape[1] != checkpoints:
        raise ValueError("every run of a plan has the same number of checkpoints")
    return {
        "run": ("run", np.array([s.label for s in settings], dtype=object), {"long_name": "run"}),
        "arm": (
            "run",
            np.array([s.kind for s in settings], dtype=object),
            {"long_name": "optimizer kind of the run"},
        ),
        "c_scale": ("run", np.array([s.c_scale for s in settings]), _multiplier("c_end")),
        "r_scale": ("run", np.array([s.r_scale for s in settings]), _multiplier("r_end")),
        "games": (
            "run",
            np.array([s.games for s in settings], dtype=np.int64),
            {"long_name": "games budget of the run", "units": "games"},
        ),
        "instances": (
            "run",
            np.array([s.instances for s in settings], dtype=object),
            {"long_name": "instances: prior (drawn) or zero-offset (every optimum at the start)"},
        ),
        "games_played": (
            ("run", "checkpoint"),
            games_played,
            {"long_name": "games played at the checkpoint", "units": "games"},
        ),
    }


def _multiplier(what: str) -> dict:
    return {"long_name": f"multiplier on every parameter's {what} of the block", "units": "1"}


def _param_coords(block, integer: np.ndarray) -> dict:
    """Per-parameter coordinates: the block's fields."""
    theta = {"units": "theta units"}
    return {
        "param": ("param", np.array(block.names, dtype=object), {"long_name": "parameter"}),
        "theta_start": ("param", block.start, {"long_name": "start value", **theta}),
        "theta_min": ("param", block.min, {"long_name": "lower bound", **theta}),
        "theta_max": ("param", block.max, {"long_name": "upper bound", **theta}),
        "c_end": ("param", block.c_end, {"long_name": "c_end of the block", **theta}),
        "r_end": ("param", block.r_end, {"long_name": "r_end of the block", "units": "1"}),
        "integer": (
            "param",
            integer.astype(np.int8),
            {"long_name": "1: an integer parameter the worker rounds", "units": "1"},
        ),
    }


def _by_time_control(result: _Result) -> np.ndarray:
    """``result``'s gains by time control, NaN where it has none (a zero-offset run)."""
    if result.gain_by_time_control is not None:
        return result.gain_by_time_control
    return np.full((len(TIME_CONTROLS), result.gain.shape[0]), np.nan)


def _run_variables(settings: list[Setting], results: dict) -> dict:
    """The data variables with a ``run`` dimension."""

    def stack(name: str) -> np.ndarray:
        return np.stack([getattr(results[s], name) for s in settings])

    def prediction(index: int) -> np.ndarray:
        n_params = results[settings[0]].theta.shape[-1]
        rows = [results[s].predicted for s in settings]
        return np.stack([np.full(n_params, np.nan) if r is None else r[index] for r in rows])

    rounding = "closed-form share of jobs whose two engines played {} (mean over jobs and seeds)"
    by_time_control = {}
    if any(results[s].gain_by_time_control is not None for s in settings):
        by_time_control["final_gain_at_time_control"] = (
            ("run", "time_control", "seed"),
            np.stack([_by_time_control(results[s]) for s in settings]),
            {
                "long_name": "true Elo at the final theta minus at the start, with the "
                "optimum of each time control (the prior's time_control_shift)",
                "units": "Elo",
            },
        )
    return by_time_control | {
        "theta": (
            ("run", "seed", "checkpoint", "param"),
            stack("theta"),
            {"long_name": "exported parameters", "units": "theta units"},
        ),
        "gain": (
            ("run", "seed", "checkpoint"),
            stack("gain"),
            {"long_name": "true Elo at theta minus true Elo at the start", "units": "Elo"},
        ),
        "probe_equal_fraction": (
            ("run", "seed"),
            stack("probe_equal"),
            {
                "long_name": "measured share of jobs x parameters played with equal integers",
                "units": "1",
            },
        ),
        "probe_swapped_fraction": (
            ("run", "seed"),
            stack("probe_swapped"),
            {
                "long_name": "measured share of jobs x parameters played in the opposite order "
                "to the flip",
                "units": "1",
            },
        ),
        "predicted_equal_share": (
            ("run", "param"),
            prediction(0),
            {"long_name": rounding.format("equal integers") + "; NaN: not computed", "units": "1"},
        ),
        "predicted_swapped_share": (
            ("run", "param"),
            prediction(1),
            {
                "long_name": rounding.format("integers in the opposite order to the flip")
                + "; NaN: not computed",
                "units": "1",
            },
        ),
    }


def plan_dataset(spec, setups, results, given, recommended, autoselect, skipped) -> xr.Dataset:
    """The plan as one CF-1.11 dataset, dims ``run, seed, checkpoint, param``."""
    import xarray as xr

    from spsa_bench.results.cf import conform
    from spsa_bench.results.datasets import instance_variables
    from spsa_bench.results.provenance import provenance

    setup = setups[spec.games]
    settings = list(results)
    data_vars = _run_variables(settings, results)
    data_vars |= instance_variables(setup.problem.bowl, setup.problem.view.theta_start)
    coords = _run_coords(settings, results, spec.checkpoints)
    coords |= _param_coords(spec.block, setup.problem.view.integer)
    coords["seed"] = ("seed", setup.schedule.seeds, {"long_name": "seed (one instance each)"})
    if "final_gain_at_time_control" in data_vars:
        coords["time_control"] = (
            "time_control",
            list(TIME_CONTROLS),
            {"long_name": "Fishtest time control whose optimum the gain is measured at"},
        )
    coords["checkpoint"] = (
        "checkpoint",
        np.arange(spec.checkpoints),
        {"long_name": "checkpoint index (evenly spaced in pairs over each run's budget)"},
    )
    info = {} if autoselect is None else results[autoselect].arm_info
    attrs = {
        "title": f"spsa-bench plan: {spec.source}",
        "source_block": spec.source,
        "block": spec.block_text,
        "games_given": spec.games,
        "time_control": spec.time_control,
        "batch_mode": spec.batch_mode,
        "margin_elo": spec.margin,
        "spsa_A_ratio": spec.a_ratio,
        "spsa_alpha": spec.alpha,
        "spsa_gamma": spec.gamma,
        "given_run": given.label,
        "recommended_run": recommended.label,
        "autoselect_run": "none" if autoselect is None else autoselect.label,
        "skipped_budgets": "; ".join(skipped) or "none",
        "truth_prior": json.dumps(spec.prior.to_dict(), sort_keys=True),
        "truth_prior_source": spec.prior_source,
        "truth_prior_draws": len(spec.prior_draws),
        "batch_mode_settings": json.dumps(setup.config.resolved["batch_modes"][spec.batch_mode]),
        **_openbench_attrs(spec),
        **{key: float(value) for key, value in sorted(info.items())},
        **setup.noise.attributes(),
        **provenance(setup.config.to_json()),
    }
    return conform(xr.Dataset(data_vars, coords, attrs))


def _openbench_attrs(spec: PlanSpec) -> dict:
    """An OpenBench plan's framework and dispatch (a Fishtest plan has none of these
    attributes, so its plan.nc is unchanged)."""
    if not spec.openbench:
        return {}
    return {
        "framework": spec.framework,
        "openbench_pairs_per": spec.pairs_per,
        "openbench_distribution": spec.distribution,
        "openbench_reporting": spec.reporting,
        "openbench_machines": spec.machines,
        "openbench_concurrency": spec.concurrency,
        "openbench_iterations_given": spec.games // (2 * spec.pairs_per),
    }


__all__ = ["plan_config", "run_plan", "predicted_rounding", "coupled_probabilities"]
