import numpy as np
import pytest

from spsa_bench.model.bowl import TrueBowl, build_problem, developer_scales

GROUPS = [
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
        "count": 3,
        "theta_start": 1100.0,
        "theta_peak": 1000.0,
        "w_true": 0.5,
        "w_dev": 1.0,
    },
    {
        "name": "off",
        "count": 4,
        "theta_start": 1000.0,
        "theta_peak": 1000.0,
        "w_true": 0.0,
        "w_dev": 1.0,
    },
]


def make(start_elo=-5.0, peak_elo=3.0, gap=2.0, fraction=0.05):
    return build_problem(
        GROUPS,
        start_elo=start_elo,
        peak_elo=peak_elo,
        c_elo_gap=gap,
        c_fraction=fraction,
        num_pairs=1000,
    )


def test_k_elo_pins_start_and_peak_elo_exactly():
    problem = make()
    bowl = problem.bowl
    assert bowl.elo(problem.view.theta_start) == pytest.approx(-5.0, abs=1e-12)
    assert bowl.elo(bowl.theta_peak) == 3.0
    # k = gap / W_start, W_start = 2*2*100^2 + 3*0.5*100^2
    assert bowl.k_elo == pytest.approx(8.0 / (4 * 1e4 + 1.5 * 1e4), rel=1e-15)


def test_elo_is_vectorized_over_leading_axes():
    problem = make()
    theta = np.random.default_rng(0).normal(1000, 50, size=(3, 4, 9))
    flat = np.array([problem.bowl.elo(t) for t in theta.reshape(-1, 9)]).reshape(3, 4)
    np.testing.assert_allclose(problem.bowl.elo(theta), flat, rtol=1e-14)


def test_flat_bowl_when_degenerate():
    bowl = TrueBowl.from_start(np.ones(3), np.ones(3), np.ones(3), -5.0, 0.0)
    assert bowl.k_elo == 0.0
    assert bowl.elo(np.full(3, 7.0)) == 0.0


def test_probe_cost_equals_gap_times_miscalibration():
    problem = make()
    view, bowl, params = problem.view, problem.bowl, problem.params
    for i in range(5):  # active parameters
        # One probe step c_i along axis i from any point costs k w_true c^2 of curvature.
        delta_true = bowl.k_elo * params.w_true[i] * view.c_dev[i] ** 2
        assert delta_true == pytest.approx(2.0 * params.w_true[i] / params.w_dev[i], rel=1e-12)
        step = np.zeros(9)
        step[i] = view.c_dev[i]
        drop = bowl.elo(bowl.theta_peak) - bowl.elo(bowl.theta_peak + step)
        assert drop == pytest.approx(delta_true, rel=1e-12)


def test_developer_bounds_are_range_around_start():
    problem = make(fraction=0.1)
    view = problem.view
    np.testing.assert_allclose(view.theta_max - view.theta_min, view.c_dev / 0.1, rtol=1e-12)
    np.testing.assert_allclose((view.theta_max + view.theta_min) / 2, view.theta_start, rtol=1e-12)


def test_fallback_c_from_explicit_bounds():
    c, lo, hi = developer_scales(
        0.0,
        np.array([1.0, 0.0]),
        2.0,
        0.05,
        np.array([5.0, 5.0]),
        np.array([0.0, 0.0]),
        np.array([10.0, 20.0]),
    )
    np.testing.assert_allclose(c, [0.5, 1.0])
    np.testing.assert_allclose(lo, [0.0, 0.0])
    np.testing.assert_allclose(hi, [10.0, 20.0])
    with pytest.raises(ValueError, match="theta_min/theta_max"):
        developer_scales(0.0, np.array([1.0]), 2.0, 0.05, np.array([5.0]))


def test_view_is_readonly_and_private():
    problem = make()
    with pytest.raises(ValueError):
        problem.view.theta_start[0] = 0.0
    assert not np.shares_memory(problem.view.theta_start, problem.bowl.theta_peak)


def test_opponent_elo_sign_and_clip():
    problem = make()
    bowl = problem.bowl
    better = bowl.theta_peak.copy()
    worse = bowl.theta_peak + 10.0
    assert bowl.opponent_elo(better, worse) < 0  # the hero (plus probe) is stronger
    far = bowl.theta_peak + 1e5
    assert bowl.opponent_elo(bowl.theta_peak, far) == -599.0
    assert bowl.opponent_elo(far, bowl.theta_peak) == 599.0
