"""Numerical guards and property-based tests over random valid settings."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spsa_bench import optimizers
from spsa_bench.dispatch.asynchronous import AsyncSettings, async_schedule
from spsa_bench.dispatch.schedule import sync_schedule
from spsa_bench.engine.replay import NonFiniteStateError, replay
from spsa_bench.model.bowl import build_problem
from spsa_bench.optimizers import REGISTRY, hyper_from_dict

#: the step-size knob of each kind: the first of these it has (spsa-autoselect: r_scale,
#: its r comes from a formula)
LEARNING_RATE = ("lr", "r_end", "r_scale")


def problem(gap=2.0, start_elo=-5.0, groups=None, num_pairs=600):
    groups = groups or [
        {
            "name": "a",
            "count": 2,
            "theta_start": 900.0,
            "theta_peak": 1000.0,
            "w_true": 2.0,
            "w_dev": 1.0,
        },
        {
            "name": "b",
            "count": 2,
            "theta_start": 1100.0,
            "theta_peak": 1000.0,
            "w_true": 0.5,
            "w_dev": 1.0,
        },
        {
            "name": "off",
            "count": 3,
            "theta_start": 1000.0,
            "theta_peak": 1000.0,
            "w_true": 0.0,
            "w_dev": 1.0,
        },
    ]
    return build_problem(
        groups,
        start_elo=start_elo,
        peak_elo=0.0,
        c_elo_gap=gap,
        c_fraction=0.05,
        num_pairs=num_pairs,
    )


def scaled_hyper(kind, factor):
    spec = REGISTRY[kind]
    defaults = {f.name: f.default for f in dataclasses.fields(spec.hyper)}
    name = next(name for name in LEARNING_RATE if name in defaults)
    return hyper_from_dict(kind, {name: defaults[name] * factor})


def run(kind, prob, schedule, hyper=None, **kw):
    opt = optimizers.build(kind, prob.view, hyper)
    return replay(opt, schedule, prob.bowl, prob.view, entropy=11, checkpoints=13, **kw)


@pytest.mark.parametrize("kind", list(REGISTRY))
@pytest.mark.parametrize("gap", [1e-6, 2.0, 1e4])
def test_extreme_but_valid_settings_stay_finite_and_in_bounds(kind, gap):
    prob = problem(gap=gap)
    schedule = sync_schedule(np.arange(3), prob.view.num_pairs, 12)
    result = run(kind, prob, schedule, scaled_hyper(kind, 1e3))
    assert np.all(np.isfinite(result.theta))
    assert np.all(result.theta >= prob.view.theta_min) and np.all(
        result.theta <= prob.view.theta_max
    )
    for name, values in result.extras.items():
        assert np.all(np.isfinite(values)), name
    elo = prob.bowl.elo(result.theta)
    assert np.all(np.isfinite(elo)) and np.all(elo <= prob.bowl.peak_elo)


def test_a_non_finite_state_fails_loudly_naming_optimizer_seed_and_event():
    prob = problem()
    schedule = sync_schedule(np.array([4, 5, 6]), prob.view.num_pairs, 12)
    opt = optimizers.build("spsa", prob.view)
    calls = {"n": 0}

    def poisoned(state, report):
        new = opt.update(state, report)
        calls["n"] += 1
        if calls["n"] == 6:
            theta = new.theta.copy()
            theta[1, 0] = np.nan
            return new._replace(theta=theta)
        return new

    with pytest.raises(NonFiniteStateError, match=r"'spsa'.*seed 5, arrival 5"):
        replay(dataclasses.replace(opt, update=poisoned), schedule, prob.bowl, prob.view, entropy=1)


group_strategy = st.fixed_dictionaries(
    {
        "count": st.integers(1, 3),
        "offset": st.floats(-50, 50).filter(lambda x: abs(x) > 1),
        "w_true": st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0]),
        "miscalibration": st.sampled_from([0.25, 0.5, 1.0, 2.0, 4.0]),
    }
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(list(REGISTRY)),
    groups=st.lists(group_strategy, min_size=1, max_size=3),
    num_pairs=st.integers(40, 400),
    batch=st.integers(1, 50),
    workers=st.integers(1, 6),
    variable=st.booleans(),
    lr_factor=st.sampled_from([0.0, 1.0, 30.0, 1000.0]),
    seeds=st.lists(st.integers(0, 50), min_size=1, max_size=4, unique=True),
)
def test_properties_of_random_valid_runs(
    kind, groups, num_pairs, batch, workers, variable, lr_factor, seeds
):
    spec = [
        {
            "name": f"g{i}",
            "count": g["count"],
            "theta_start": 100.0 + g["offset"],
            "theta_peak": 100.0,
            "w_true": g["w_true"],
            "w_dev": g["w_true"] / g["miscalibration"],
        }
        for i, g in enumerate(groups)
    ]
    prob = problem(groups=spec, num_pairs=num_pairs)
    seeds = np.array(seeds)
    if workers == 1 and not variable:
        schedule = sync_schedule(seeds, num_pairs, min(batch, num_pairs))
    else:
        mode = AsyncSettings(
            num_workers=workers,
            batch="variable" if variable else "fixed",
            batch_size=batch,
            concurrency_min=1,
            concurrency_max=16,
        )
        schedule = async_schedule(3, seeds, num_pairs, mode)
    hyper = scaled_hyper(kind, lr_factor)
    result = run(kind, prob, schedule, hyper)
    # theta within bounds, finite; Elo never above the peak
    assert np.all(np.isfinite(result.theta))
    assert np.all(result.theta >= prob.view.theta_min) and np.all(
        result.theta <= prob.view.theta_max
    )
    assert np.all(prob.bowl.elo(result.theta) <= prob.bowl.peak_elo + 1e-12)
    # exactly num_pairs consumed
    assert np.all(result.total_pairs == num_pairs)
    # a zero learning rate never moves theta
    if lr_factor == 0.0:
        np.testing.assert_array_equal(
            result.theta, np.broadcast_to(prob.view.theta_start, result.theta.shape)
        )
    # each seed's result does not depend on the seeds beside it
    last = seeds[-1:]
    alone_schedule = (
        sync_schedule(last, num_pairs, min(batch, num_pairs))
        if workers == 1 and not variable
        else async_schedule(3, last, num_pairs, mode)
    )
    alone = run(kind, prob, alone_schedule, hyper)
    np.testing.assert_array_equal(alone.theta[0], result.theta[-1])


@pytest.mark.parametrize("kind", ["sf-sgd", "sf-sgd-block"])
def test_schedule_free_fast_iterate_is_never_clamped(kind):
    """z moves by exactly lr * c * S * flip per report, even far outside the bounds."""
    prob = problem()
    schedule = sync_schedule(np.arange(2), prob.view.num_pairs, 10)
    opt = optimizers.build(kind, prob.view, hyper_from_dict(kind, {"lr": 50.0}))
    moves = []

    def spy(state, report):
        new = opt.update(state, report)
        expected = 50.0 * report.c * report.signal[:, None] * report.flip
        moves.append((opt.extras(new)["z"] - opt.extras(state)["z"], expected))
        return new

    result = replay(dataclasses.replace(opt, update=spy), schedule, prob.bowl, prob.view, entropy=2)
    for got, expected in moves:
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
    z = result.extras["z"]
    assert np.any((z < prob.view.theta_min) | (z > prob.view.theta_max)), (
        "test needs z to leave the bounds"
    )
    for name in ("x",):
        assert np.all(result.extras[name] >= prob.view.theta_min) and np.all(
            result.extras[name] <= prob.view.theta_max
        )
