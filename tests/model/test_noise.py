"""The calibrated game-noise family against independent computations.

The reference here integrates the per-game law over the pair component with
``scipy.integrate.quad`` (adaptive, not the Gauss-Hermite rule of the model) and solves
the score equation with ``brentq``: nothing of it reads the model's table or quadrature.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize

from spsa_bench.model import noise, pentanomial
from spsa_bench.model.noise import NoiseError, noise_model

CUSTOM = [
    {"draw_rate": 0.5, "sigma2": 0.5},  # no pair component (rho = 0)
    {"draw_rate": 0.3, "sigma2": 0.7 * 1.2},
    {"draw_rate": 0.9, "sigma2": 0.1 * 1.1},
]
MODELS = [noise_model(name) for name in noise.PRESETS] + [noise_model(c) for c in CUSTOM]
IDS = [m.name if m.name != "custom" else f"custom-{m.draw_rate}" for m in MODELS]


def _logistic(z):
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def _expect(function, tau):
    """E[function(eta)] for eta ~ N(0, tau^2) by adaptive quadrature."""
    if tau == 0.0:
        return function(0.0)
    density = lambda eta: math.exp(-0.5 * (eta / tau) ** 2) / (tau * math.sqrt(2 * math.pi))  # noqa: E731
    value, _ = integrate.quad(
        lambda eta: function(eta) * density(eta), -12 * tau, 12 * tau, epsabs=1e-14, epsrel=1e-13
    )
    return value


def _game(mu, eta, delta):
    win = _logistic(mu + eta - delta)
    loss = _logistic(-mu - eta - delta)
    return win, 1.0 - win - loss, loss


def _reference_probabilities(model, hero_elo):
    delta, tau = model.parameters
    target = math.tanh(hero_elo * math.log(10) / 800)

    def score_gap(mu):
        return _expect(lambda e: _game(mu, e, delta)[0] - _game(mu, e, delta)[2], tau) - target

    mu = optimize.brentq(score_gap, -60, 60, xtol=1e-14)
    outcomes = [
        lambda w, d, l: l * l,
        lambda w, d, l: 2 * l * d,
        lambda w, d, l: d * d + 2 * w * l,
        lambda w, d, l: 2 * w * d,
        lambda w, d, l: w * w,
    ]
    probs = np.array([_expect(lambda e, f=f: f(*_game(mu, e, delta)), tau) for f in outcomes])
    draw_rate = _expect(lambda e: _game(mu, e, delta)[1], tau)
    return probs, draw_rate


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_equal_strength_hits_the_targets_exactly(model):
    probs, draw_rate = _reference_probabilities(model, 0.0)
    values = pentanomial.OUTCOME_VALUES
    sigma2 = (probs @ values**2 - (probs @ values) ** 2) / 2
    assert draw_rate == pytest.approx(model.draw_rate, abs=1e-9)
    assert sigma2 == pytest.approx(model.sigma2, abs=1e-9)
    row = model.summary([0.0])[0]
    assert row["draw_rate"] == pytest.approx(model.draw_rate, abs=1e-9)
    assert row["sigma2"] == pytest.approx(model.sigma2, abs=1e-9)
    assert row["correlation"] == pytest.approx(model.sigma2 / (1 - model.draw_rate) - 1, abs=1e-9)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
@pytest.mark.parametrize("hero_elo", [-599.0, -250.0, -20.0, -2.0, 0.5, 2.0, 35.0, 400.0, 599.0])
def test_probabilities_and_score_match_the_independent_integration(model, hero_elo):
    reference, reference_draw = _reference_probabilities(model, hero_elo)
    probs = model.probabilities(np.array([-hero_elo]))[0]
    np.testing.assert_allclose(probs, reference, atol=1e-9, rtol=0)
    expected_score = 1.0 / (1.0 + 10 ** (-hero_elo / 400))
    assert probs @ pentanomial.OUTCOME_SCORES == pytest.approx(expected_score, abs=1e-9)
    # The table of the hot path, too.
    table = model.fast_thresholds(np.array([-hero_elo]))[0]
    np.testing.assert_allclose(table, np.cumsum(reference)[:4], atol=1e-9, rtol=0)
    assert model.draw_rate_per_game(np.array([-hero_elo]))[0] == pytest.approx(
        reference_draw, abs=1e-9
    )


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_score_is_the_logistic_everywhere_and_draws_fall_with_the_gap(model):
    hero = np.linspace(-599, 599, 4793)  # off the table's grid as well as on it
    expected = 1.0 / (1.0 + 10 ** (-hero / 400))
    exact = model.probabilities(-hero) @ pentanomial.OUTCOME_SCORES
    np.testing.assert_allclose(exact, expected, atol=1e-12, rtol=0)
    thresholds = model.fast_thresholds(-hero)
    table_probs = np.diff(
        np.concatenate([np.zeros((len(hero), 1)), thresholds, np.ones((len(hero), 1))], axis=1)
    )
    np.testing.assert_allclose(
        table_probs @ pentanomial.OUTCOME_SCORES, expected, atol=1e-9, rtol=0
    )
    draws = model.draw_rate_per_game(-hero)
    positive = hero >= 0
    assert np.all(np.diff(draws[positive]) < 0)  # falls as the hero's advantage grows
    np.testing.assert_allclose(draws, draws[::-1], atol=1e-12)  # and symmetrically


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_a_stronger_hero_never_gets_a_worse_outcome_under_common_uniforms(model):
    opponent = np.linspace(-599, 599, 9587)
    for thresholds in (model.fast_thresholds(opponent), model.fast_draw_thresholds(opponent)):
        # opponent Elo increases down the rows: every threshold is non-decreasing, so a
        # lower opponent Elo (a stronger hero) maps every uniform to an outcome at least as good
        assert np.all(np.diff(thresholds.astype(np.float64), axis=0) >= 0)
        assert np.all(np.diff(thresholds.astype(np.float64), axis=1) >= 0)
    rng = np.random.default_rng(5)
    draws = rng.integers(0, 2**32, size=(1, 20_000), dtype=np.uint64).astype(np.uint32)
    weak = model.fast_draw_thresholds(np.array([15.0]))
    strong = model.fast_draw_thresholds(np.array([-15.0]))
    outcome = lambda t: (draws[0, :, None] >= t[0][None, :]).sum(axis=1)  # noqa: E731
    assert np.all(outcome(strong) >= outcome(weak))


@pytest.mark.parametrize("name", list(noise.PRESETS))
def test_sampled_outcomes_match_the_probabilities(name):
    model = noise_model(name)
    n_pairs = 1_000_000
    rng = np.random.default_rng(20261123)
    for opponent in (0.0, -40.0):
        probs = model.probabilities(np.array([opponent]))[0]
        draws = rng.integers(0, 2**32, size=(1, n_pairs), dtype=np.uint64).astype(np.uint32)
        counts = pentanomial.counts_from_uniforms(
            draws, model.fast_draw_thresholds(np.array([opponent]))
        )[0]
        standard_error = np.sqrt(probs * (1 - probs) / n_pairs)
        assert np.all(np.abs(counts / n_pairs - probs) < 4 * standard_error)
        net = np.repeat(pentanomial.OUTCOME_VALUES, counts).astype(np.float64)
        if opponent == 0.0:
            # var/2 of the sampled net wins: SE of a sample variance ~ sqrt((m4 - s^4) / n)
            values = pentanomial.OUTCOME_VALUES.astype(np.float64)
            m4 = probs @ values**4
            se_sigma2 = math.sqrt((m4 - (2 * model.sigma2) ** 2) / n_pairs) / 2
            assert abs(net.var() / 2 - model.sigma2) < 4 * se_sigma2


@pytest.mark.parametrize("name", list(noise.PRESETS))
def test_the_generative_story_draws_at_the_target_rate(name):
    """Games simulated from the latent model itself (pair component, logistic, margin)."""
    model = noise_model(name)
    delta, tau = model.parameters
    n_pairs = 1_000_000
    rng = np.random.default_rng(7)
    eta = rng.normal(0.0, tau, size=n_pairs)
    latent = eta[:, None] + rng.logistic(size=(n_pairs, 2))
    result = np.where(latent > delta, 1, np.where(latent < -delta, -1, 0))
    draws = (result == 0).mean()
    assert abs(draws - model.draw_rate) < 4 * math.sqrt(
        model.draw_rate * (1 - model.draw_rate) / (2 * n_pairs)
    )
    net = result.sum(axis=1)
    values = np.arange(-2, 3)
    freq = np.array([(net == v).mean() for v in values])
    se_sigma2 = math.sqrt((freq @ values**4 - (2 * model.sigma2) ** 2) / n_pairs) / 2
    assert abs(net.var() / 2 - model.sigma2) < 4 * se_sigma2


def test_vendored_is_the_spec_model_bit_for_bit():
    vendored = noise_model("vendored")
    x = np.linspace(-700, 700, 5001)
    np.testing.assert_array_equal(
        vendored.fast_draw_thresholds(x), pentanomial.fast_draw_thresholds(x)
    )
    np.testing.assert_array_equal(vendored.probabilities(x), pentanomial.probabilities(x))
    assert noise_model(None) is vendored


def test_presets_are_the_published_figures():
    assert noise.PRESETS == {
        "STC": (0.748, 0.2654),
        "LTC": (0.775, 0.2274),
        "VLTC": (0.787, 0.2133),
    }
    ltc = noise_model("LTC").attributes()
    assert ltc["noise_model"] == "LTC" and ltc["noise_source"] == noise.PRESET_SOURCE


@pytest.mark.parametrize("name", list(noise.PRESETS))
def test_stored_preset_parameters_are_what_the_root_finder_gives(name):
    """The stored (delta, tau) of a preset are the solved ones within the root finder's
    tolerance (xtol 1e-14 on tau, 1e-15 on delta; the last bits move between scipy
    releases), they hit the preset's published draw rate and variance, and the model
    plays the stored ones (so its results do not depend on the installed scipy)."""
    delta, tau = noise.PRESET_PARAMETERS[name]
    solved_delta, solved_tau = noise._solve_calibration(*noise.PRESETS[name])
    assert abs(solved_tau - tau) <= 4e-14
    # delta follows tau: d(delta)/d(tau) is of order one here
    assert abs(solved_delta - delta) <= 1e-13
    draw_rate, sigma2 = noise.PRESETS[name]
    draws, net_square = noise._equal_strength(delta, tau)
    assert abs(draws - draw_rate) <= 1e-12
    assert abs(net_square / (1.0 - draw_rate) - (sigma2 / (1.0 - draw_rate) - 1.0)) <= 1e-12
    assert noise_model(name).parameters == noise.PRESET_PARAMETERS[name]


@pytest.mark.parametrize("name", list(noise.PRESETS))
def test_stored_preset_knots_are_a_fresh_solve_and_the_table_plays_them(name, tmp_path):
    """The stored knots of a preset equal a fresh solve (to the last bits numpy's tanh
    may move across CPUs and releases), the table a preset plays is built from them,
    and write_preset_knots writes exactly what is shipped when solved here."""
    draw_rate, sigma2 = noise.PRESETS[name]
    stored = np.load(noise._knots_path(name))
    values, slopes = noise.solve_threshold_knots(draw_rate, sigma2)
    assert stored.shape == (2, values.shape[0], 4) and stored.dtype == np.float64
    np.testing.assert_allclose(stored[0], values, rtol=0, atol=1e-14)
    np.testing.assert_allclose(stored[1], slopes, rtol=1e-12, atol=1e-18)
    table = noise._threshold_columns(draw_rate, sigma2)
    np.testing.assert_array_equal(table[12:16, :], stored[0][:-1].T)  # c0 = the left knot's value
    np.testing.assert_array_equal(table[8:12, :], (stored[1][:-1] * noise._STEP).T)  # c1
    written = noise.write_preset_knots(tmp_path)
    assert [path.name for path in written] == [f"noise-knots-{p}.npy" for p in noise.PRESETS]
    np.testing.assert_allclose(np.load(tmp_path / f"noise-knots-{name}.npy"), stored, atol=1e-14)


def test_a_custom_model_solves_its_knots():
    model = noise_model({"draw_rate": 0.6, "sigma2": 0.45})
    solved = noise.solve_threshold_knots(0.6, 0.45)
    np.testing.assert_array_equal(model._columns[12:16], solved[0][:-1].T)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("ltc", "unknown noise preset 'ltc'"),
        ({"draw_rate": 1.0, "sigma2": 0.1}, "must be in (0, 1)"),
        ({"draw_rate": 0.0, "sigma2": 0.5}, "must be in (0, 1)"),
        ({"draw_rate": 0.75, "sigma2": 0.2}, "no negative correlation"),
        ({"draw_rate": 0.75, "sigma2": 0.49}, "sigma2 = 0.49"),
        ({"draw_rate": 0.75}, "expected vendored"),
        (3, "expected vendored"),
    ],
)
def test_unreachable_settings_are_refused_naming_the_value(setting, message):
    with pytest.raises(NoiseError, match=None) as caught:
        noise_model(setting)
    assert message in str(caught.value)
