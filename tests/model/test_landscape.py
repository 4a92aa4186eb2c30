"""The truth prior's landscape options (model.instances, docs/fishtest.md "Landscape
options"): each is off by default, and each has the property it is built for."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.model.bowl import TIME_CONTROLS
from spsa_bench.model.instances import (
    PRIOR_KEYS,
    PriorError,
    TruthPrior,
    draw_instances,
    elo_at_time_control,
)


def wide(num_params: int, c_end: float = 1.0) -> dict:
    return dict(
        start=np.zeros(num_params),
        low=np.full(num_params, -1e6),
        high=np.full(num_params, 1e6),
        c_end=np.full(num_params, c_end),
    )


def draw(truth: dict, seeds, num_params: int = 40, entropy: int = 7, c_end: float = 1.0):
    arrays = wide(num_params, c_end)
    return draw_instances(
        TruthPrior.from_mapping(truth),
        arrays["start"],
        arrays["low"],
        arrays["high"],
        arrays["c_end"],
        entropy,
        list(seeds),
    )


def start_loss(bowls) -> np.ndarray:
    return bowls.elo_loss(np.zeros((bowls.num_seeds, bowls.scale.shape[0])))


# ------------------------------------------------------------------ defaults stay off


def test_a_prior_without_options_reads_and_writes_as_before():
    assert list(TruthPrior().to_dict()) == list(PRIOR_KEYS[:4])
    base = draw({}, range(3))
    assert base.plateau is None and base.tc_theta_peak is None and not base.rotated


@pytest.mark.parametrize(
    "truth",
    [
        {"plateau": {"fraction": 0, "width": 2}},
        {"plateau": {"fraction": 0.5, "width": 0}},
        {"ridge": {"fraction": 0}},
        {"time_control_shift": {"spread": 0, "tuned_at": "LTC"}},
    ],
)
def test_an_option_at_zero_is_off_and_changes_nothing(truth):
    base, off = draw({}, range(3)), draw(truth, range(3))
    for name in ("theta_peak", "elo_per_scale"):
        np.testing.assert_array_equal(getattr(base, name), getattr(off, name))
    assert off.plateau is None and off.tc_theta_peak is None and not off.rotated


def test_options_round_trip_through_to_dict():
    truth = {
        "offset": {"distribution": "student_t", "scale": 1.5, "df": 3},
        "elo_at_stake": {"median": 2, "sigma": 0.4, "concentration": 0.2},
        "plateau": {"fraction": 0.3, "width": 2},
        "ridge": {"fraction": 0.5, "ratio": 0.1},
        "time_control_shift": {"spread": 1, "tuned_at": "LTC"},
    }
    prior = TruthPrior.from_mapping(truth)
    assert TruthPrior.from_mapping(prior.to_dict()) == prior
    assert set(prior.to_dict()) == set(PRIOR_KEYS)


def test_the_options_do_not_move_the_instance_streams_draws():
    """The inactive set and the normal offsets' draws come from the instance stream,
    whatever the landscape options draw from theirs."""
    base = draw({}, range(4))
    both = draw(
        {
            "plateau": {"fraction": 0.5, "width": 1},
            "time_control_shift": {"spread": 1, "tuned_at": "STC"},
        },
        range(4),
    )
    np.testing.assert_array_equal(base.theta_peak, both.theta_peak)
    np.testing.assert_array_equal(base.elo_per_scale, both.elo_per_scale)


@pytest.mark.parametrize(
    "truth, words",
    [
        ({"elo_at_stake": {"sigma": 1}}, ["truth.elo_at_stake.median", "required"]),
        ({"elo_at_stake": {"median": 0}}, ["truth.elo_at_stake.median", "0"]),
        ({"elo_at_stake": {"median": 2, "concentration": 0}}, ["concentration", "0.01"]),
        ({"plateau": {"fraction": 1.5, "width": 1}}, ["truth.plateau.fraction", "1.5"]),
        ({"plateau": {"fraction": 0.5}}, ["truth.plateau.width", "required"]),
        ({"ridge": {"fraction": 0.5, "ratio": 0}}, ["truth.ridge.ratio", "0"]),
        ({"ridge": {"fraction": 0.5}, "interaction": 0.5}, ["truth.ridge.fraction", "interaction"]),
        ({"time_control_shift": {"spread": 1, "tuned_at": "BLITZ"}}, ["tuned_at", "BLITZ"]),
        ({"offset": {"distribution": "student_t", "scale": 1}}, ["truth.offset.df"]),
        ({"offset": {"distribution": "normal", "df": 3}}, ["truth.offset.df"]),
        ({"offset": {"distribution": "student_t", "df": 0.5}}, ["truth.offset.df", "0.5"]),
        ({"plateau": {"fraction": 0.5, "width": 1, "depth": 2}}, ["truth.plateau", "depth"]),
    ],
)
def test_bad_options_are_refused_naming_the_key(truth, words):
    with pytest.raises(PriorError) as info:
        TruthPrior.from_mapping(truth)
    for word in words:
        assert word in str(info.value), str(info.value)


def test_a_scenario_takes_the_options_and_the_schema_bounds_them():
    block = "a,0,-100,100,1,0.002\nb,0,-100,100,1,0.002\n"
    raw = {
        "num_pairs": 1000,
        "seeds": {"first": 0, "count": 2},
        "batch_modes": {"sync": {"workers": 1, "batch": "fixed", "batch_size": 36}},
        "scenarios": {
            "t": {"fishtest_params": block, "truth": {"plateau": {"fraction": 1, "width": 1}}}
        },
        "optimizers": {"spsa": {"A_ratio": 0.1}},
    }
    config = resolve(raw)
    assert config.scenario("t")["truth"]["plateau"] == {"fraction": 1.0, "width": 1.0}
    raw["scenarios"]["t"]["truth"] = {"plateau": {"fraction": 1, "width": -1}}
    with pytest.raises(ConfigError) as info:
        resolve(raw)
    assert "width" in str(info.value) and "-1" in str(info.value)


# ------------------------------------------------------------------ 1. Elo at stake


STAKE = {"elo_at_stake": {"median": 2.0, "sigma": 0.5, "concentration": 0.3}}


@pytest.mark.parametrize("extra", [{}, {"interaction": 0.8}, {"ridge": {"fraction": 1}}])
def test_the_gain_at_the_start_is_the_drawn_total_whatever_the_block_size(extra):
    small, large = draw({**STAKE, **extra}, range(30), 7), draw({**STAKE, **extra}, range(30), 61)
    np.testing.assert_allclose(start_loss(small), start_loss(large), rtol=1e-12)
    # the total itself: median * exp(sigma z), z the landscape stream's first normal
    assert np.all(start_loss(small) > 0)


def test_the_total_grows_with_the_block_as_its_params_exponent_says():
    """``params_exponent`` b: the start's gain is the exponent-0 total times ``(P /
    30)^b``, the same draws otherwise (7 and 120 parameters: factors 0.233^b and
    4^b); at b = 0 the draw is bit for bit the one without the key."""
    for size in (7, 120):
        base = start_loss(draw(STAKE, range(20), size))
        grown = {"elo_at_stake": {**STAKE["elo_at_stake"], "params_exponent": 0.5}}
        np.testing.assert_allclose(
            start_loss(draw(grown, range(20), size)), base * (size / 30) ** 0.5, rtol=1e-12
        )
        zero = {"elo_at_stake": {**STAKE["elo_at_stake"], "params_exponent": 0}}
        np.testing.assert_array_equal(start_loss(draw(zero, range(20), size)), base)
    with pytest.raises(PriorError, match="params_exponent"):
        TruthPrior.from_mapping({"elo_at_stake": {"median": 2.0, "params_exponent": 3}})


def test_the_total_is_lognormal_with_the_stated_median_and_spread():
    n = 2000
    log_total = np.log(start_loss(draw(STAKE, range(n), 10)))
    sigma = 0.5
    assert abs(log_total.mean() - math.log(2.0)) < 4 * sigma / math.sqrt(n)
    # the sample variance of a normal has standard error sigma^2 sqrt(2 / (n - 1))
    assert abs(log_total.var(ddof=1) - sigma**2) < 4 * sigma**2 * math.sqrt(2 / (n - 1))


def test_shares_have_the_dirichlet_marginal():
    """Without ridges the shares are ``e_i / sum e``; one parameter's share is
    Beta(a, (A - 1) a): mean 1/A, variance (1/A)(1 - 1/A)/(A a + 1)."""
    n, num_params, a = 3000, 12, 0.3
    bowls = draw({**STAKE, "inactive_fraction": 0}, range(n), num_params)
    share = bowls.elo_per_scale[:, 0] / bowls.elo_per_scale.sum(axis=1)
    mean, var = 1 / num_params, (1 / num_params) * (1 - 1 / num_params) / (num_params * a + 1)
    assert abs(share.mean() - mean) < 4 * share.std() / math.sqrt(n)
    centred = (share - share.mean()) ** 2
    assert abs(share.var() - var) < 4 * centred.std() / math.sqrt(n)
    # heavy-tailed: the largest share of 12 is far above 1/12 on average
    top = (bowls.elo_per_scale.max(axis=1) / bowls.elo_per_scale.sum(axis=1)).mean()
    assert top > 3 / num_params


def test_inactive_parameters_stay_inactive_under_a_stake():
    bowls = draw({**STAKE, "inactive_fraction": 0.25}, range(20), 40)
    assert np.all((bowls.elo_per_scale > 0).sum(axis=1) == 30)


# ------------------------------------------------------------------ 2. plateaus


PLATEAU = {"plateau": {"fraction": 0.5, "width": 1.5}, "elo_per_c_end": 0.1, "inactive_fraction": 0}


def test_a_plateau_direction_is_flat_inside_and_quadratic_outside():
    bowls = draw(PLATEAU, range(6), 20, c_end=2.0)
    assert np.all((bowls.plateau > 0).sum(axis=1) == 10)
    for seed in range(6):
        i = int(np.flatnonzero(bowls.plateau[seed])[0])
        j = int(np.flatnonzero(bowls.plateau[seed] == 0)[0])
        theta = np.tile(bowls.theta_peak, (5, 1, 1)).transpose(1, 0, 2).copy()  # (seed, 5, P)
        for row, z in enumerate([-1.5, -0.7, 0.0, 1.2, 1.5]):  # inside, in c_end units
            theta[seed, row, i] += z * 2.0
        assert np.all(bowls.elo_loss(theta)[seed] == 0.0)
        # a probe pair inside the plateau sees exactly no difference (zero gradient)
        plus, minus = theta[:, 1:2].copy(), theta[:, 3:4].copy()
        assert bowls.opponent_elo(plus, minus)[seed, 0] == 0.0
        outside = np.tile(bowls.theta_peak[:, None, :], (1, 2, 1))
        outside[seed, 0, i] += 2.5 * 2.0  # one c_end past the edge
        outside[seed, 1, j] += 1.0 * 2.0  # one c_end on an ordinary parameter
        loss = bowls.elo_loss(outside)[seed]
        np.testing.assert_allclose(loss, [0.1, 0.1], rtol=1e-12)
        # opponent_elo is the difference of the two losses (outside the plateau too)
        diff = bowls.opponent_elo(outside[:, :1], theta[:, 3:4])[seed, 0]
        np.testing.assert_allclose(diff, 0.1, rtol=1e-12)


def flat_drift_config(num_pairs: int, batch: int, seeds: int, params: int) -> dict:
    block = "".join(f"p{i},0,-1e6,1e6,1,0.002\n" for i in range(params))
    return {
        "num_pairs": num_pairs,
        "checkpoints": 2,
        "seeds": {"first": 0, "count": seeds},
        "noise": "STC",
        "batch_modes": {"sync": {"workers": 1, "batch": "fixed", "batch_size": batch}},
        "scenarios": {
            "flat": {
                "fishtest_params": block,
                "integer": False,
                "rounding": "none",
                # every optimum a plateau far wider than any move: the Elo is flat everywhere
                "truth": {
                    "offset": {"distribution": "normal", "scale": 1},
                    "inactive_fraction": 0,
                    "plateau": {"fraction": 1, "width": 1000},
                },
            }
        },
        "optimizers": {"spsa": {"A_ratio": 0.1, "iteration_counter": "arrival"}},
    }


def test_noise_only_drift_matches_the_random_walk_closed_form():
    """On a flat direction ``theta_N - theta_0 = sum_k (a_k / c_k) (W - L)_k flip_k``: the
    flips are independent of the results, so ``Var = sum_k (a_k / c_k)^2 Var(W - L)_k``
    with ``Var(W - L)_k = B v``, ``v`` the variance of one pair's net wins at equal
    strength and ``B`` the pairs of job k (sync, one worker: ``k = j B + 1``)."""
    from spsa_bench.engine.simulate import simulate
    from spsa_bench.model.noise import noise_model
    from spsa_bench.optimizers.gains import GainSchedule

    num_pairs, batch, seeds, params = 7200, 36, 400, 6
    config = resolve(flat_drift_config(num_pairs, batch, seeds, params))
    ds = simulate(config, optimizer="spsa", batch_mode="sync", scenario="flat", seeds=range(seeds))
    drift = ds["theta"].values[:, -1, :] - ds["theta"].values[:, 0, :]  # (seed, param), c_end 1
    probabilities = noise_model("STC").probabilities(np.array([0.0]))[0]
    net = np.arange(-2, 3, dtype=np.float64)
    assert abs(probabilities @ net) < 1e-9
    v = float(probabilities @ net**2)
    A = int(0.1 * num_pairs)
    gains = GainSchedule.fishtest(np.ones(1), 0.002, A, 0.602, 0.101, num_pairs)
    k = np.arange(num_pairs // batch) * batch + 1.0
    ratio = gains.a_k(k)[:, 0] / gains.c_k(k)[:, 0]
    expected = float(np.sum(ratio**2) * batch * v)
    # one value per seed (the parameters of a seed share their results): mean square drift
    per_seed = (drift**2).mean(axis=1)
    se = per_seed.std(ddof=1) / math.sqrt(seeds)
    assert abs(per_seed.mean() - expected) < 4 * se, (per_seed.mean(), expected, se)
    assert abs(drift.mean()) < 4 * math.sqrt(expected / drift.size)
    # the drift is real movement: a few tenths of a c_end, as the issue measured
    assert 0.05 < math.sqrt(expected) < 2


# ------------------------------------------------------------------ 3. ridges


def test_ridge_pairs_are_elongated_along_their_sum_or_difference():
    ratio, e = 0.05, 0.1
    truth = {"ridge": {"fraction": 1, "ratio": ratio}, "elo_per_c_end": e, "inactive_fraction": 0}
    n, num_params = 400, 10
    bowls = draw(truth, range(n), num_params)
    partner, sign_sum = bowls.partner, []
    for seed in range(n):
        paired = np.flatnonzero(partner[seed] != np.arange(num_params))
        assert paired.size == num_params  # round(1 * 10) / 2 = 5 pairs
        i = int(paired[0])
        j = int(partner[seed, i])
        first, second = (i, j) if bowls.elo_per_scale[seed, i] == e else (j, i)
        assert math.isclose(bowls.elo_per_scale[seed, second], ratio * e)
        # the long axis: (z_first + z_second)/sqrt 2 when sin[second] > 0, else the difference
        s = 1.0 if bowls.sin[seed, second] > 0 else -1.0
        sign_sum.append(s > 0)
        theta = np.tile(bowls.theta_peak[:, None, :], (1, 2, 1))
        t = 3.0 / math.sqrt(2)
        theta[seed, 0, first] += t
        theta[seed, 0, second] += s * t  # along the ridge, 3 c_end
        theta[seed, 1, first] += t
        theta[seed, 1, second] -= s * t  # across it, 3 c_end
        loss = bowls.elo_loss(theta)[seed]
        np.testing.assert_allclose(loss, [ratio * e * 9, e * 9], rtol=1e-12)
    # a fair sign: sum or difference equally often
    assert abs(np.mean(sign_sum) - 0.5) < 4 * 0.5 / math.sqrt(n)


# ------------------------------------------------------------------ 4. heavy-tailed offsets


@pytest.mark.parametrize("df", [2.0, 4.0])
def test_student_t_offsets_have_the_stated_tail(df):
    n_seeds, num_params, scale = 500, 40, 1.5
    truth = {
        "offset": {"distribution": "student_t", "scale": scale, "df": df},
        "inactive_fraction": 0,
    }
    x = (draw(truth, range(n_seeds), num_params).theta_peak / scale).ravel()
    for q in (0.75, 0.95, 0.99):  # the share beyond each two-sided t quantile
        threshold = stats.t.ppf(0.5 + q / 2, df)
        p = 1 - q
        share = np.mean(np.abs(x) > threshold)
        assert abs(share - p) < 4 * math.sqrt(p * (1 - p) / x.size), (q, share)
    # the same normals as the normal prior: same sign, heavier magnitude on average
    normal = draw(
        {"offset": {"distribution": "normal", "scale": scale}, "inactive_fraction": 0},
        range(n_seeds),
        num_params,
    )
    np.testing.assert_array_equal(np.sign(normal.theta_peak), np.sign(x.reshape(n_seeds, -1)))


# ------------------------------------------------------------------ 5. time-control shift


@pytest.mark.parametrize("tuned_at", TIME_CONTROLS)
def test_the_time_control_shift_has_the_drawn_spread_and_moves_the_optimum(tuned_at):
    spread, c_end, n = 0.8, 2.0, 300
    truth = {
        "time_control_shift": {"spread": spread, "tuned_at": tuned_at},
        "inactive_fraction": 0.25,
    }
    bowls = draw(truth, range(n), 40, c_end=c_end)
    ref = TIME_CONTROLS.index(tuned_at)
    np.testing.assert_array_equal(bowls.tc_theta_peak[ref], bowls.theta_peak)
    active = bowls.elo_per_scale > 0
    steps = [t for t in range(3) if t != ref]
    per_step = [(bowls.tc_theta_peak[t] - bowls.theta_peak) / c_end / (t - ref) for t in steps]
    np.testing.assert_allclose(per_step[0], per_step[1], atol=1e-12)  # one drift per parameter
    delta = per_step[0][active]
    assert np.all(per_step[0][~active] == 0)
    m = delta.size
    assert abs(delta.mean()) < 4 * spread / math.sqrt(m)
    assert abs(delta.var(ddof=1) - spread**2) < 4 * spread**2 * math.sqrt(2 / (m - 1))
    # the tuned optimum is best at its own time control and worse at the others
    own = elo_at_time_control(bowls, bowls.theta_peak, tuned_at)
    assert np.all(own == bowls.peak_elo)
    for t in steps:
        other = elo_at_time_control(bowls, bowls.theta_peak, TIME_CONTROLS[t])
        assert np.all(other < own)
        best = elo_at_time_control(bowls, bowls.tc_theta_peak[t], TIME_CONTROLS[t])
        assert np.all(best == bowls.peak_elo)


def test_a_tune_can_gain_at_its_time_control_and_lose_at_another():
    truth = {
        "time_control_shift": {"spread": 2.0, "tuned_at": "VLTC"},
        "offset": {"distribution": "normal", "scale": 0.3},
    }
    bowls = draw(truth, range(200), 6)
    start = np.zeros((200, 6))
    final = bowls.theta_peak  # a tune that found its own optimum exactly
    gain_own = elo_at_time_control(bowls, final, "VLTC") - elo_at_time_control(bowls, start, "VLTC")
    gain_ltc = elo_at_time_control(bowls, final, "LTC") - elo_at_time_control(bowls, start, "LTC")
    assert np.all(gain_own > 0)
    assert np.any(gain_ltc < 0)


def test_without_a_shift_every_time_control_has_the_one_truth():
    bowls = draw({}, range(3))
    theta = np.ones((3, 40))
    for t in TIME_CONTROLS:
        np.testing.assert_array_equal(elo_at_time_control(bowls, theta, t), bowls.elo(theta))
    with pytest.raises(ValueError, match="BLITZ"):
        elo_at_time_control(bowls, theta, "BLITZ")


def test_rows_keep_the_landscape():
    truth = {
        "plateau": {"fraction": 0.5, "width": 1},
        "time_control_shift": {"spread": 1, "tuned_at": "STC"},
    }
    bowls = draw(truth, range(5))
    picked = bowls.rows(np.array([3, 1]))
    np.testing.assert_array_equal(picked.plateau, bowls.plateau[[3, 1]])
    np.testing.assert_array_equal(picked.tc_theta_peak, bowls.tc_theta_peak[:, [3, 1]])
