"""The asynchrony options of the SPSA kinds (iteration_counter, delay_adaptive,
batch_step): off, or without staleness, they are today's SPSA bit for bit; on, the
replay equals the scalar reference runner event by event; the delay factor and the
mean are applied as documented; an arm's counter equals the run-wide one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import small_config_dict
from test_runner_reference import (
    ENTROPY,
    NUM_PAIRS,
    PROBLEM,
    SEEDS,
    assert_runner_matches_reference,
    batch_of,
    run_replay,
)

from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.engine.simulate import make_schedule, simulate
from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers import Report, build
from spsa_bench.optimizers.spsa import SpsaCwdHyper, SpsaHyper
from spsa_bench.reference.micro import MicroReport, spsa_micro
from spsa_bench.reference.runner import run_runner_reference

KINDS = ("spsa", "spsa-block", "spsa-cwd")
OPTIONS = {
    "delay": {"delay_adaptive": 40.0},
    "mean": {"batch_step": "mean"},
    "dispatch": {"iteration_counter": "dispatch"},
}
#: every option on at once (the run-wide counter is arrival)
ALL_ON = {"delay_adaptive": 40.0, "batch_step": "mean", "iteration_counter": "dispatch"}


def _hyper(kind, **values):
    base = SpsaCwdHyper(lambda_cwd=0.5) if kind == "spsa-cwd" else SpsaHyper()
    return dataclasses.replace(base, **values)


def _config(
    arms: dict,
    counter: str = "arrival",
    num_pairs: int = 1500,
    workers: int = 12,
    variable_workers: int | None = None,
):
    """small_config_dict with ``arms`` added (name -> {kind, options}) and the
    asynchronous modes at ``workers`` workers (async-variable at ``variable_workers``
    when given)."""
    raw = small_config_dict(num_pairs=num_pairs)
    raw["iteration_counter"] = counter
    raw["batch_modes"]["async-fixed"]["workers"] = workers
    raw["batch_modes"]["async-variable"]["workers"] = variable_workers or workers
    raw["optimizers"].update(arms)
    return resolve(raw)


def _theta(config, arm, mode, scenario="mixed", seeds=range(3)):
    ds = simulate(config, optimizer=arm, batch_mode=mode, scenario=scenario, seeds=seeds)
    return ds["theta"].values


# -- off, or without staleness: today's SPSA bit for bit ----------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_options_off_are_todays_spsa_bit_for_bit(kind):
    """Spelled out at their defaults, the options change nothing, in an asynchronous
    mode and in the synchronous one."""
    base = {"lambda_cwd": 0.5} if kind == "spsa-cwd" else {}
    off = {"iteration_counter": "run", "delay_adaptive": 0.0, "batch_step": "sum"}
    config = _config({"off": {"kind": kind, **base, **off}})
    config_arrival = _config({"on": {"kind": kind, **base, "iteration_counter": "arrival"}})
    for mode in ("sync", "async-variable"):
        today = _theta(config, kind, mode)
        assert np.array_equal(_theta(config, "off", mode), today)
        # an arm's counter equal to the run-wide one is the run-wide one
        assert np.array_equal(_theta(config_arrival, "on", mode), today)


@pytest.mark.parametrize("kind", KINDS)
def test_without_staleness_the_asynchrony_options_change_nothing(kind):
    """In the synchronous mode (one job at a time: staleness 0, and the pairs in
    flight are the job's own) delay_adaptive and iteration_counter dispatch are
    today's SPSA bit for bit; so with one asynchronous worker."""
    base = {"lambda_cwd": 0.5} if kind == "spsa-cwd" else {}
    arms = {
        "delay": {"kind": kind, **base, "delay_adaptive": 3.0},
        "dispatch": {"kind": kind, **base, "iteration_counter": "dispatch"},
    }
    config = _config(arms)
    one_worker = _config(arms, variable_workers=1)
    for cfg, mode in ((config, "sync"), (one_worker, "async-variable")):
        today = _theta(cfg, kind, mode)
        for arm in arms:
            assert np.array_equal(_theta(cfg, arm, mode), today), (arm, mode)
    # not vacuous: with twelve workers both options move theta elsewhere
    today = _theta(config, kind, "async-variable")
    for arm in arms:
        assert not np.array_equal(_theta(config, arm, "async-variable"), today), arm


# -- the arm's counter is the run-wide counter -------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["async-fixed", "async-variable"])
def test_arm_counter_dispatch_equals_the_run_wide_counter(kind, mode):
    base = {"lambda_cwd": 0.5} if kind == "spsa-cwd" else {}
    arm = {"arm": {"kind": kind, **base, "iteration_counter": "dispatch"}}
    per_arm = _config(arm, counter="arrival")
    run_wide = _config({}, counter="dispatch")
    theta = _theta(per_arm, "arm", mode)
    assert np.array_equal(theta, _theta(run_wide, kind, mode))
    assert not np.array_equal(theta, _theta(per_arm, kind, mode))
    # and the other way round: an arm counting arrivals in a dispatch-counting run
    back = _config({"arm": {"kind": kind, **base, "iteration_counter": "arrival"}}, "dispatch")
    assert np.array_equal(_theta(back, "arm", mode), _theta(per_arm, kind, mode))


def test_unknown_choices_are_refused():
    with pytest.raises(ValueError, match="iteration_counter"):
        SpsaHyper(iteration_counter="jobs")
    with pytest.raises(ValueError, match="batch_step"):
        SpsaHyper(batch_step="median")
    for bad in ({"batch_step": "median"}, {"delay_adaptive": -1.0}, {"iteration_counter": "x"}):
        with pytest.raises(ConfigError):
            _config({"bad": {"kind": "spsa", **bad}})


# -- many workers: the replay equals the scalar reference runner, event by event ---------------


#: test_runner_reference's problem and budget, with many workers (most jobs stale)
MANY = _config({}, num_pairs=NUM_PAIRS, workers=12)
MANY_MODE = MANY.batch_mode("async-variable")
MANY_SCHEDULE = make_schedule(MANY, MANY_MODE, SEEDS)


def _reference(kind, hyper, seed, counter):
    return run_runner_reference(
        kind,
        hyper,
        PROBLEM,
        ENTROPY,
        seed,
        NUM_PAIRS,
        batch_of(MANY_MODE),
        iteration_counter=counter,
    )


@pytest.mark.parametrize("option", [*OPTIONS, "all"])
@pytest.mark.parametrize("kind", KINDS)
def test_options_replay_equals_reference_runner(kind, option):
    """async-variable with its workers (most jobs stale): the replay's reports and
    every update equal the scalar reference's; the arm's counter is the one both use."""
    values = ALL_ON if option == "all" else OPTIONS[option]
    hyper = _hyper(kind, **values)
    counter = values.get("iteration_counter", "arrival")
    schedule = MANY_SCHEDULE
    assert MANY.entropy == ENTROPY
    assert np.mean(schedule.staleness_pairs()[schedule.job_mask()] > 0) > 0.8
    result, log = run_replay(kind, schedule, counter=counter, hyper=hyper)
    refs = [_reference(kind, hyper, seed, counter) for seed in SEEDS]
    assert_runner_matches_reference(schedule, result, log, refs, counter)
    # not vacuous: the option changes the run
    today, _ = run_replay(kind, schedule, hyper=_hyper(kind))
    assert not np.array_equal(result.theta, today.theta)


# -- the update, on hand-made reports ----------------------------------------------------------

N_SEEDS, N_PARAMS = 4, 3


def _view() -> DeveloperView:
    return DeveloperView(
        theta_start=np.zeros(N_PARAMS),  # the step is the new point, without cancellation
        theta_min=np.full(N_PARAMS, -1e6),
        theta_max=np.full(N_PARAMS, 1e6),
        c_dev=np.array([4.0, 2.0, 6.0]),
        num_pairs=5000,
    )


def _report(optimizer, staleness, n_pairs=(36, 36, 20, 7), k=(1, 400, 900, 1500)):
    rng = np.random.default_rng(11)
    k = np.array(k, dtype=np.int64)
    n = np.array(n_pairs, dtype=np.int64)
    flip = 2.0 * rng.integers(0, 2, size=(N_SEEDS, N_PARAMS)) - 1.0
    return Report(
        n_pairs=n,
        signal=np.array([5.0, -3.0, 8.0, 2.0]),
        flip=flip,
        c=optimizer.perturbation(k),
        iter_local=k,
        staleness=None if staleness is None else np.asarray(staleness, dtype=np.float64),
        in_flight=np.zeros(N_SEEDS),
    )


def _step(kind, hyper, staleness):
    optimizer = build(kind, _view(), hyper)
    state = optimizer.init(N_SEEDS)
    new = optimizer.update(state, _report(optimizer, staleness))
    return optimizer.export(new) - optimizer.export(state)


@pytest.mark.parametrize("kind", KINDS)
def test_delay_factor_is_tau_over_tau_plus_staleness(kind):
    tau = 10.0
    staleness = np.array([0.0, 10.0, 30.0, 90.0])
    today = _step(kind, _hyper(kind), staleness)
    adapted = _step(kind, _hyper(kind, delay_adaptive=tau), staleness)
    factor = tau / (tau + staleness)
    np.testing.assert_allclose(adapted, today * factor[:, None], rtol=1e-12, atol=0)
    np.testing.assert_allclose(factor, [1.0, 0.5, 0.25, 0.1])
    assert np.array_equal(adapted[0], today[0])  # a fresh job: today's step bit for bit
    assert np.all(np.abs(today) > 0)
    # no staleness anywhere (or none known): today's step bit for bit
    for fresh in (np.zeros(N_SEEDS), None):
        assert np.array_equal(_step(kind, _hyper(kind, delay_adaptive=tau), fresh), today)
    # off, the staleness is ignored
    assert np.array_equal(_step(kind, _hyper(kind), None), today)


@pytest.mark.parametrize("kind", KINDS)
def test_batch_step_mean_divides_by_the_pairs(kind):
    n = np.array([36.0, 36.0, 20.0, 7.0])
    today = _step(kind, _hyper(kind), None)
    mean = _step(kind, _hyper(kind, batch_step="mean"), None)
    np.testing.assert_allclose(mean, today / n[:, None], rtol=1e-12, atol=0)
    # and with the delay factor on top
    both = _step(kind, _hyper(kind, batch_step="mean", delay_adaptive=5.0), np.full(4, 15.0))
    np.testing.assert_allclose(both, today / n[:, None] * 0.25, rtol=1e-12, atol=0)


@pytest.mark.parametrize("clamp_every_pair", [False, True])
def test_micro_reference_follows_batch_step_mean(clamp_every_pair):
    """spsa-block with batch_step mean stays exact against the per-pair micro path
    (N micro-steps with the mean signal S / N, each divided by N); off, the micro
    path is the one it always was."""
    view = _view()
    reports, micro_reports = [], []
    pairs = 0
    rng = np.random.default_rng(3)
    for n in (36, 36, 20, 36, 7, 36):
        k = pairs + 1
        optimizer = build("spsa-block", view, _hyper("spsa-block"))
        c = optimizer.perturbation(np.array([k]))
        flip = 2.0 * rng.integers(0, 2, size=(1, N_PARAMS)) - 1.0
        total = float(rng.integers(-n, n + 1))
        reports.append(Report(np.array([n]), np.array([total]), flip, c, np.array([k])))
        micro_reports.append(MicroReport(np.full(n, total / n), flip[0], c[0], k))
        pairs += n
    for batch_step in ("sum", "mean"):
        hyper = _hyper("spsa-block", batch_step=batch_step)
        optimizer = build("spsa-block", view, hyper)
        state = optimizer.init(1)
        macro = [optimizer.export(state)[0]]
        for report in reports:
            state = optimizer.update(state, report)
            macro.append(optimizer.export(state)[0])
        micro = spsa_micro(view, hyper, micro_reports, clamp_every_pair=clamp_every_pair)
        np.testing.assert_allclose(np.array(macro), micro["theta"], rtol=1e-12, atol=0)
    sum_path = spsa_micro(view, _hyper("spsa-block"), micro_reports)["theta"]
    mean_path = spsa_micro(view, _hyper("spsa-block", batch_step="mean"), micro_reports)["theta"]
    assert not np.allclose(sum_path[1:], mean_path[1:])
