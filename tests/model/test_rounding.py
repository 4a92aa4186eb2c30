"""The worker's rounding of integer parameters and per-seed bowls in the replay."""

import numpy as np
import pytest
from conftest import random_rotations, small_config_dict

from spsa_bench import optimizers
from spsa_bench.config.loader import resolve
from spsa_bench.dispatch.asynchronous import async_schedule
from spsa_bench.dispatch.schedule import sync_schedule
from spsa_bench.engine.replay import replay
from spsa_bench.model.bowl import SeedBowls, TrueBowl
from spsa_bench.model.developer import DeveloperView
from spsa_bench.model.rounding import (
    Rounding,
    probe_outcomes,
    probe_probabilities,
    seed_keys,
    splitmix_uniforms,
)

ENTROPY = 20261123


def test_splitmix_uniforms_are_uniform_and_keyed_per_seed():
    keys = seed_keys(ENTROPY, [0, 1, 2])
    n = 200_000
    u = splitmix_uniforms(keys, np.arange(n, dtype=np.uint64))
    assert np.all((u >= 0) & (u < 1))
    se_mean, se_var = np.sqrt(1 / 12 / n), np.sqrt(1 / 180 / n)  # var(U) = 1/12, var(U^2...) bound
    assert np.all(np.abs(u.mean(axis=1) - 0.5) < 4 * se_mean)
    assert np.all(np.abs(u.var(axis=1) - 1 / 12) < 4 * se_var)
    assert abs(np.corrcoef(u[0], u[1])[0, 1]) < 4 / np.sqrt(n)
    np.testing.assert_array_equal(seed_keys(ENTROPY, [1]), keys[1:2])


def test_stochastic_rounding_is_unbiased():
    """Mean of floor(v + U) over many (seed, job) draws equals v within 4 SE."""
    values = np.array([3.0, 3.25, -7.6, 0.5, 101.99])
    n_seeds, n_jobs = 400, 50
    rounding = Rounding("stochastic", np.ones(values.size, bool), ENTROPY, range(n_seeds))
    tiled = np.tile(values, (n_seeds, 1))
    played = np.stack([rounding.play(job, tiled, tiled)[0] for job in range(n_jobs)])
    fraction = values - np.floor(values)
    se = np.sqrt(fraction * (1 - fraction) / (n_seeds * n_jobs))
    assert np.all(np.abs(played.mean(axis=(0, 1)) - values) <= 4 * se + 1e-15)
    assert np.all((played == np.floor(values)) | (played == np.floor(values) + 1))


def test_nearest_and_none_and_float_parameters():
    integer = np.array([True, False])
    values = np.array([[2.5, 2.5], [-1.2, -1.2]])
    plus, _ = Rounding("nearest", integer, ENTROPY, [0, 1]).play(0, values, values)
    np.testing.assert_array_equal(plus, [[3.0, 2.5], [-1.0, -1.2]])
    same, _ = Rounding("none", integer, ENTROPY, [0, 1]).play(0, values, values)
    assert same is values
    with pytest.raises(ValueError, match="rounding must be one of"):
        Rounding("floor", integer, ENTROPY, [0])


def _closed_form(value: float, c: float) -> tuple[float, float]:
    """P(equal) and P(swapped) of floor(v + c + U1) vs floor(v - c + U2), flip = +1."""

    def law(x):
        low = np.floor(x)
        return {low: 1 - (x - low), low + 1: x - low}

    plus, minus = law(value + c), law(value - c)
    equal = sum(p * minus.get(n, 0.0) for n, p in plus.items())
    swapped = sum(p * q for n, p in plus.items() for m, q in minus.items() if n < m)
    return equal, swapped


def test_vectorised_closed_form_equals_the_enumeration():
    """model.rounding.probe_probabilities (used by the planner) equals the enumeration
    above on a grid of values and probe sizes away from the bounds, and clips at them."""
    values = np.linspace(-3.0, 3.0, 61)[:, None]
    sizes = np.array([0.05, 0.2, 0.35, 0.5, 0.75, 1.0, 1.4, 2.5])[None, :]
    equal, swapped = probe_probabilities(values, sizes, -100.0, 100.0)
    for i, value in enumerate(values[:, 0]):
        for j, c in enumerate(sizes[0]):
            np.testing.assert_allclose((equal[i, j], swapped[i, j]), _closed_form(value, c),
                                       atol=1e-12)  # fmt: skip
    # at the upper bound both probes of c = 0.5 fall in [9.5, 10]: equal half the time
    equal, swapped = probe_probabilities(10.0, 0.5, 0.0, 10.0)
    assert (float(equal), float(swapped)) == (0.5, 0.0)


def _fixed_theta_run(
    value: float, c_end: float, n_params=6, seeds=range(300), rounding="stochastic"
):
    start = np.full(n_params, value)
    view = DeveloperView(
        start, start - 50, start + 50, np.full(n_params, c_end), 3600,
        integer=np.ones(n_params, bool),
    )  # fmt: skip
    hyper = optimizers.hyper_from_dict("spsa", {"r_end": 0.0, "gamma": 0.0})
    bowl = TrueBowl.from_start(start, start + 3, np.ones(n_params), -5.0, 0.0)
    schedule = sync_schedule(np.asarray(list(seeds)), view.num_pairs, 36)
    result = replay(
        optimizers.build("spsa", view, hyper), schedule, bowl, view,
        entropy=ENTROPY, checkpoints=5, rounding=rounding,
    )  # fmt: skip
    return result, schedule.n_jobs[0] * n_params


@pytest.mark.parametrize("value, c_end", [(10.3, 0.35), (10.0, 0.6), (-4.7, 1.4), (7.5, 1.0)])
def test_probe_fractions_match_their_closed_form(value, c_end):
    """With theta held fixed (r_end 0, gamma 0 so c_k = c_end), the measured shares of
    equal and swapped integers equal their closed-form probabilities within 4 SE."""
    result, probes_per_seed = _fixed_theta_run(value, c_end)
    np.testing.assert_array_equal(result.theta[:, -1], result.theta[:, 0])
    equal, swapped = _closed_form(value, c_end)  # flip -1 mirrors flip +1 around v
    n = probes_per_seed * result.theta.shape[0]
    for measured, p in (
        (result.probe_equal_fraction, equal),
        (result.probe_swapped_fraction, swapped),
    ):
        se = np.sqrt(max(p * (1 - p), 1e-12) / n)
        assert abs(measured.mean() - p) <= 4 * se, (measured.mean(), p, se)
    if c_end < 1:
        assert equal > 0  # the hazard of fishtest #1912 exists below c = 1 ...
    if c_end >= 2:
        assert swapped == 0


def test_probe_fractions_are_nan_without_rounding_and_results_unchanged():
    rounded, _ = _fixed_theta_run(10.3, 0.35, seeds=range(4), rounding="none")
    assert np.all(np.isnan(rounded.probe_equal_fraction))
    assert np.all(np.isnan(rounded.probe_swapped_fraction))


def test_probe_outcomes_counts_only_integer_columns():
    plus = np.array([[3.0, 4.0, 1.0], [2.0, 2.0, 5.0]])
    minus = np.array([[3.0, 5.0, 1.0], [1.0, 3.0, 5.0]])
    flip = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0]])
    columns = np.array([0, 1])
    equal, swapped = probe_outcomes(plus[:, columns] - minus[:, columns], flip[:, columns])
    np.testing.assert_array_equal(equal, [1, 0])
    np.testing.assert_array_equal(swapped, [1, 0])


def _seed_bowls(n_seeds, n_params, seed=5, rotated=False):
    rng = np.random.default_rng(seed)
    scale = rng.uniform(1, 4, n_params)
    kwargs = {}
    if rotated:
        partner, cos, sin = random_rotations(rng, n_seeds, n_params)
        kwargs = {"partner": partner, "cos": cos, "sin": sin}
    return SeedBowls(
        rng.normal(0, 3, (n_seeds, n_params)), rng.uniform(0.05, 2, (n_seeds, n_params)),
        scale, **kwargs,
    )  # fmt: skip


def test_seed_bowls_equal_one_true_bowl_per_seed():
    bowls = _seed_bowls(4, 6)
    theta = np.random.default_rng(1).normal(0, 5, (4, 9, 6))
    for s in range(4):
        one = TrueBowl(bowls.theta_peak[s], bowls.w_true[s], 1.0, 0.0, -1.0)
        np.testing.assert_allclose(bowls.elo(theta)[s], one.elo(theta[s]), rtol=1e-12)
        np.testing.assert_allclose(
            bowls.opponent_elo(theta[:, 0], theta[:, 1])[s],
            one.opponent_elo(theta[s, 0].copy(), theta[s, 1].copy()),
            rtol=1e-12,
        )


def test_rotated_bowls_are_a_rotation():
    """The rotation preserves the loss when every axis has the same curvature, and its
    opponent Elo is the difference of losses."""
    bowls = _seed_bowls(3, 7, rotated=True)
    equal = SeedBowls(bowls.theta_peak, np.ones_like(bowls.elo_per_scale), bowls.scale,
                      bowls.partner, bowls.cos, bowls.sin)  # fmt: skip
    theta = np.random.default_rng(2).normal(0, 5, (3, 2, 7))
    z = (theta - bowls.theta_peak[:, None]) / bowls.scale
    np.testing.assert_allclose(equal.elo_loss(theta), np.sum(z**2, axis=-1), rtol=1e-12)
    difference = bowls.elo_loss(theta[:, 0]) - bowls.elo_loss(theta[:, 1])
    np.testing.assert_allclose(
        bowls.opponent_elo(theta[:, 0], theta[:, 1]), difference, rtol=1e-9, atol=1e-12
    )


def _seed_bowl_run(seeds, compact=True, rounding="stochastic"):
    config = resolve(small_config_dict(num_pairs=1500))
    n_params = 5
    start = np.full(n_params, 100.0)
    view = DeveloperView(start, start - 100, start + 100, np.full(n_params, 10.0), 1500,
                         integer=np.ones(n_params, bool))  # fmt: skip
    bowls = _seed_bowls(20, n_params, rotated=True)
    bowls = SeedBowls(bowls.theta_peak + 100, bowls.elo_per_scale, bowls.scale,
                      bowls.partner, bowls.cos, bowls.sin)  # fmt: skip
    mode = config.batch_mode("async-variable")
    schedule = async_schedule(config.entropy, np.asarray(seeds), 1500, mode.settings)
    index = np.asarray(seeds)
    result = replay(
        optimizers.build("spsa", view), schedule, bowls.rows(index), view,
        entropy=ENTROPY, checkpoints=7, compact=compact, rounding=rounding,
    )  # fmt: skip
    return result


def test_seed_bowl_replay_is_seed_independent_and_compaction_exact():
    together = _seed_bowl_run(range(12))
    alone = _seed_bowl_run([7])
    np.testing.assert_array_equal(alone.theta[0], together.theta[7])
    np.testing.assert_array_equal(alone.probe_equal_fraction[0], together.probe_equal_fraction[7])
    loose = _seed_bowl_run(range(12), compact=False)
    np.testing.assert_array_equal(loose.theta, together.theta)
    np.testing.assert_array_equal(loose.probe_swapped_fraction, together.probe_swapped_fraction)


def test_replay_refuses_bowls_for_other_seeds():
    with pytest.raises(ValueError, match="per-seed bowls"):
        n_params = 5
        start = np.full(n_params, 100.0)
        view = DeveloperView(start, start - 100, start + 100, np.full(n_params, 10.0), 360)
        replay(optimizers.build("spsa", view), sync_schedule(np.arange(3), 360, 36),
               _seed_bowls(4, n_params), view, entropy=1)  # fmt: skip
