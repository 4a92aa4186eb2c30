"""The SPSA family against hand-worked cases and textbook micro-steps."""

import math

import numpy as np
import pytest

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers import Report, build, hyper_from_dict

NUM_PAIRS = 1000


def view(lo=-100.0, hi=100.0, c=(2.0, 0.5)):
    c = np.array(c)
    return DeveloperView(np.zeros(c.size), np.full(c.size, lo), np.full(c.size, hi), c, NUM_PAIRS)


def report(n, signal, flip, c, k):
    return Report(
        np.array([float(n)]),
        np.array([float(signal)]),
        np.array([flip], dtype=float),
        np.array([c]),
        np.array([k]),
    )


def test_spsa_update_matches_hand_worked_case():
    hyper = hyper_from_dict("spsa", {"A": 10.0, "alpha": 0.5, "gamma": 0.25, "r_end": 0.01})
    dv = view()
    opt = build("spsa", dv, hyper)
    # Hand-worked schedule: c = c_end * 1000**0.25, a = 0.01 * c_end**2 * (10 + 1000)**0.5.
    k = 16
    c_k = np.array([2.0, 0.5]) * 1000**0.25 / 16**0.25
    a_k = 0.01 * np.array([4.0, 0.25]) * math.sqrt(1010) / math.sqrt(26)
    np.testing.assert_allclose(opt.perturbation(np.array([k]))[0], c_k, rtol=1e-14)
    state = opt.init(1)
    new = opt.update(state, report(36, 7, [1, -1], c_k, k))
    np.testing.assert_allclose(new.theta[0], a_k / c_k * 7 * np.array([1, -1]), rtol=1e-13)
    assert np.all(state.theta == 0)  # the input state is untouched


def test_one_iteration_broadcast_to_every_seed_gives_each_seed_the_update_of_its_own():
    """A report whose iteration is one value broadcast to every seed (the synchronous
    mode) gets the gain computed once: bit for bit the update of seeds reported one by
    one, and the gain shape of a plain array."""
    from spsa_bench.optimizers.spsa import gain_schedule

    dv = view()
    opt = build("spsa", dv)
    rng = np.random.default_rng(3)
    n_seeds, k = 50, np.broadcast_to(np.array([17.0]), (50,))
    flips = rng.choice([-1.0, 1.0], size=(n_seeds, 2))
    signal = rng.integers(-20, 21, n_seeds).astype(np.float64)
    c = np.broadcast_to(opt.perturbation(k[:1]), (n_seeds, 2))
    state = opt.init(n_seeds)
    together = opt.update(state, Report(np.full(n_seeds, 36.0), signal, flips, c, k)).theta
    for seed in range(n_seeds):
        alone = opt.update(
            opt.init(1),
            Report(np.array([36.0]), signal[seed : seed + 1], flips[seed : seed + 1], c[:1], k[:1]),
        ).theta
        assert together[seed].tobytes() == alone[0].tobytes()
    schedule = gain_schedule(dv, hyper_from_dict("spsa", {}))
    ks = np.broadcast_to(np.array([3.0]), (7,))
    assert schedule.gain_shape(ks).tobytes() == schedule.gain_shape(np.full(7, 3.0)).tobytes()


def test_schedule_hits_c_end_and_a_end_at_the_last_iteration():
    dv = view()
    opt = build("spsa", dv)
    np.testing.assert_allclose(opt.perturbation(np.array([NUM_PAIRS]))[0], dv.c_dev, rtol=1e-14)


@pytest.mark.parametrize("k0,n", [(1, 1), (1, 36), (500, 7), (964, 36)])
def test_spsa_block_equals_n_textbook_micro_steps(k0, n):
    dv = view(lo=-1e9, hi=1e9)
    hyper = hyper_from_dict("spsa-block", {"A": 50.0})
    opt = build("spsa-block", dv, hyper)
    flip = np.array([-1.0, 1.0])
    total = 13.0
    c_k0 = opt.perturbation(np.array([k0]))[0]
    macro = opt.update(opt.init(1), report(n, total, flip, c_k0, k0)).theta[0]
    # Textbook micro-steps: gain a_k / c_k at each micro-iteration, mean signal S/N.
    reference = build("spsa", dv, hyper)
    theta = np.zeros(2)
    for k in range(k0, k0 + n):
        c_k = reference.perturbation(np.array([k]))[0]
        a_k = 0.002 * dv.c_dev**2 * (50.0 + NUM_PAIRS) ** 0.602 / (50.0 + k) ** 0.602
        gain = a_k / c_k
        theta = theta + gain * (total / n) * flip
    np.testing.assert_allclose(macro, theta, rtol=1e-12)


def test_classic_spsa_understeps_an_early_block_by_the_gain_ratio():
    dv = view(lo=-1e9, hi=1e9)
    spsa, block = build("spsa", dv), build("spsa-block", dv)
    k0, n = 10, 100
    c = spsa.perturbation(np.array([k0]))[0]
    r = report(n, 20, [1, 1], c, k0)
    ratio = spsa.update(spsa.init(1), r).theta[0] / block.update(block.init(1), r).theta[0]
    # classic spsa uses the block-start gain, spsa-block the mean over the block
    shape = lambda k: k**0.101 / (5000 + k) ** 0.602  # noqa: E731
    expected = shape(k0) / np.mean([shape(k) for k in range(k0, k0 + n)])
    np.testing.assert_allclose(ratio, expected, rtol=1e-10)


def test_cwd_decays_only_where_it_agrees_with_the_step():
    dv = view(lo=-1e9, hi=1e9)
    hyper = hyper_from_dict("spsa-cwd", {"lambda_cwd": 0.5})
    cwd, plain = build("spsa-cwd", dv, hyper), build("spsa", dv)
    state = cwd.init(1)._replace(theta=np.array([[3.0, -4.0]]))
    k = 100
    c = cwd.perturbation(np.array([k]))[0]
    r = report(36, 5, [1, 1], c, k)  # step > 0 on both axes
    step = plain.update(plain.init(1)._replace(theta=np.zeros((1, 2))), r).theta[0]
    assert np.all(step > 0)
    new = cwd.update(state, r).theta[0]
    r_k = (0.002 * (5000 + NUM_PAIRS) ** 0.602 / (5000 + k) ** 0.602) * (k / NUM_PAIRS) ** (
        2 * 0.101
    )
    # axis 0: delta = +3, step > 0 -> step*delta > 0 -> no decay
    assert new[0] == pytest.approx(3.0 + step[0], rel=1e-13)
    # axis 1: delta = -4, step > 0 -> agrees -> decay lambda * r_k * delta
    assert new[1] == pytest.approx(-4.0 + step[1] - 0.5 * r_k * (-4.0), rel=1e-12)


def test_cwd_with_zero_lambda_is_spsa():
    dv = view()
    cwd, plain = build("spsa-cwd", dv), build("spsa", dv)
    c = cwd.perturbation(np.array([3]))[0]
    r = report(36, -9, [1, -1], c, 3)
    np.testing.assert_array_equal(
        cwd.update(cwd.init(1), r).theta, plain.update(plain.init(1), r).theta
    )


@pytest.mark.parametrize("kind", ["spsa", "spsa-block", "spsa-cwd"])
def test_updates_are_clipped_to_the_developer_bounds(kind):
    dv = view(lo=-1.0, hi=1.0)
    opt = build(kind, dv, hyper_from_dict(kind, {"r_end": 1e6}))
    c = opt.perturbation(np.array([1]))[0]
    new = opt.update(opt.init(1), report(36, 72, [1, -1], c, 1)).theta[0]
    np.testing.assert_array_equal(new, [1.0, -1.0])


def test_state_does_not_alias_the_view():
    dv = view()
    opt = build("spsa", dv)
    state = opt.init(3)
    state.theta[0, 0] = 42.0
    assert dv.theta_start[0] == 0.0
