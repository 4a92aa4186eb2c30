"""The calibration's statistics, coverage and a small simulation-based calibration."""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
import pytest

from spsa_bench.calibration import fit
from spsa_bench.calibration.prior import FreeNumber, PriorFamily
from spsa_bench.calibration.run import calibrate
from spsa_bench.calibration.simulate import (
    budget_levels,
    nearest_time_control,
    simulate_tune,
    tune_setting,
)
from spsa_bench.calibration.stats import STATS, chosen_test, observed_stats
from spsa_bench.config.param_block import parse_block
from spsa_bench.corpus.records import Parameter, Source, Tune, TuneRecord, Verification

SYNC = {"workers": 1, "batch": "fixed", "batch_size": 36}


def _test(result="passed", *, wins=None, losses=None, draws=None, elo=None, error=None, games=None):
    if games is None and wins is not None:
        games = wins + losses + draws
    return Verification(
        label="LTC", time_control=None, threads=None,
        test="fixed" if result == "fixed" else "sprt",
        sprt=None if result == "fixed" else (0.0, 2.0), sprt_scale="logistic",
        games=games, wins=wins, losses=losses, draws=draws, ptnml=None, result=result,
        elo=elo, elo_error=error,
    )  # fmt: skip


def _record(name, tests, *, params=None, block=None, games=20000, date="2020-01-01"):
    if params is None:
        params = tuple(Parameter(f"p{i}", 100.0, 100.0) for i in range(3))
    return TuneRecord(
        name=name, title=name, date=date, kind="search",
        sources=(Source("commit", "hand-made", "test"),),
        tune=Tune("60+0.6", 1, games, None, None, None, None),
        parameters=params, verification=tuple(tests), provenance={}, block=block,
    )  # fmt: skip


def test_verification_elo_from_wld_with_the_trinomial_standard_error():
    # 300 W, 200 L, 500 D: score 0.55; per-game variance (300*.45^2 + 200*.55^2 + 500*.05^2)/1000
    record = _record("2020-a", [_test(wins=300, losses=200, draws=500)])
    observed, se = observed_stats(record)
    score, var = 0.55, (300 * 0.45**2 + 200 * 0.55**2 + 500 * 0.05**2) / 1000
    expected_se = 400 / math.log(10) / (score * (1 - score)) * math.sqrt(var / 1000)
    assert observed[0] == pytest.approx(-400 * math.log10(1 / score - 1), rel=1e-12)
    assert se == pytest.approx(expected_se, rel=1e-12)
    assert np.isnan(observed[1:]).all()  # no block: no moves


def test_chosen_test_prefers_a_passed_sprt_and_a_quoted_error_is_95_percent():
    fixed = _test("fixed", elo=3.0, error=1.959963984540054, games=60000)
    small = _test(wins=30, losses=20, draws=50)
    large = _test(wins=3000, losses=2900, draws=4100)
    record = _record("2020-b", [fixed, small, large])
    assert chosen_test(record)[0] is large  # passed first, then the most games
    observed, se = observed_stats(
        _record("2020-c", [fixed, _test("failed", wins=1, losses=2, draws=3)])
    )
    assert (observed[0], se) == (pytest.approx(3.0), pytest.approx(1.0))


def test_moves_in_c_end_units_from_a_block():
    block = parse_block(
        "a,10,0,40,2,0.002\nb,10,0,40,2,0.002\nc,10,0,40,4,0.002\nd,10,0,40,1,0.002\n"
    )
    finals = {"a": 11.0, "b": 6.0, "c": 10.0, "d": 13.0}  # moves 0.5, -2, 0, 3
    params = tuple(Parameter(n, 10.0, finals[n]) for n in "abcd")
    observed, _ = observed_stats(_record("2020-d", [], params=params, block=block))
    assert np.isnan(observed[0])
    assert observed[1:] == pytest.approx([1.25, 0.5, 3.0])  # median(0.5, 2, 0, 3), share, max


def test_coverage_on_hand_made_bands():
    observed = np.array([[1.0, np.nan], [5.0, 0.2], [-1.0, 0.9], [0.0, 0.5]])
    low = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, np.nan]])
    high = np.array([[2.0, 1.0], [4.0, 0.1], [2.0, 1.0], [0.0, 1.0]])
    inside, share, count = fit.coverage(observed, low, high)
    np.testing.assert_array_equal(inside[:, 0], [1.0, 0.0, 0.0, 1.0])  # the ends count
    np.testing.assert_array_equal(inside[:, 1], [np.nan, 0.0, 1.0, np.nan])
    np.testing.assert_array_equal(count, [4, 2])
    np.testing.assert_allclose(share, [0.5, 0.5])


@pytest.mark.parametrize("n", [10, 30])
def test_a_band_holds_an_exchangeable_observation_80_percent_of_the_time_at_any_n(n):
    """A right model's band: observation and samples drawn alike (the model is the
    truth). The prediction interval covers 80% at 10 and 30 samples (within 3 binomial
    standard errors of 4,000 tunes), where the sample quantiles would cover
    ``0.8 (n - 1) / (n + 1)`` (0.65, 0.75: outside that tolerance); NaN samples (tests
    that did not end as the record's) are not counted."""
    rng = np.random.default_rng(20261126)
    tunes = 4000
    samples = rng.standard_normal((tunes, 2 * n, 1))
    samples[:, n:] = np.nan
    observed = rng.standard_normal((tunes, 1))
    low, median, high = fit.bands(samples)
    _, share, _ = fit.coverage(observed, low, high)
    tolerance = 3 * math.sqrt(0.8 * 0.2 / tunes)
    assert abs(share[0] - 0.8) < tolerance
    assert abs(0.8 * (n - 1) / (n + 1) - 0.8) > tolerance
    np.testing.assert_allclose(median[:, 0], np.nanmedian(samples[:, :, 0], axis=1))


def test_accept_keeps_the_closest_share_and_distances_skip_missing_summaries():
    d = fit.distances(np.array([[0.0, 9.0], [3.0, 1.0], [1.0, np.nan]]), np.array([1.0, np.nan]))
    # column 0 only (the observation lacks column 1); scale 1.4826 x MAD of (0, 3, 1) = 1.4826
    np.testing.assert_allclose(d, np.array([1.0, 2.0, 0.0]) / 1.4826)
    assert fit.accept(np.array([3.0, 1.0, 2.0, 0.5]), 0.5).tolist() == [False, True, False, True]


def test_model_shares_pools_the_families_and_counts_the_accepted_draws():
    observed = np.array([0.0, 0.0])
    # family 0 sits on the observation, family 1 one unit off, family 2 far away
    near = np.array([[0.1, 0.0], [0.0, -0.2], [0.2, 0.1], [-0.1, 0.1]])
    off = near + 1.0
    far = near + 50.0
    shares = fit.model_shares([near, off, far], observed, 0.5)  # 6 of 12 accepted
    np.testing.assert_allclose(shares, [4 / 6, 2 / 6, 0.0])
    # the scale is the pool's: the same family twice splits the acceptance evenly
    np.testing.assert_allclose(fit.model_shares([off, off.copy()], observed, 0.5), [0.5, 0.5])
    with pytest.raises(ValueError, match="at least one family"):
        fit.model_shares([], observed, 0.5)


def test_nearest_time_control():
    assert nearest_time_control("10+0.1", "LTC") == "STC"
    assert nearest_time_control("60+0.6", "STC") == "LTC"
    assert nearest_time_control("180+1.8", "STC") == "VLTC"
    assert nearest_time_control(None, "VLTC") == "VLTC"


def test_budget_levels_are_log_quantiles_of_the_known_budgets_on_fishtests_grid():
    records = [
        _record(f"2020-g{i}", [], games=g) for i, g in enumerate((10_000, 100_000, 1_000_000))
    ]
    records.append(_record("2020-g-unknown", [], games=None))
    levels = budget_levels(records, 3, "corpus")
    logs = np.log([10_000, 100_000, 1_000_000])
    expected = [1000 * round(math.exp(np.quantile(logs, q)) / 1000) for q in (1 / 6, 1 / 2, 5 / 6)]
    assert levels == tuple(expected)
    assert levels[1] == 100_000 and levels[0] < 100_000 < levels[2]
    assert budget_levels(records, 3, 50_400) == (50_000,)
    with pytest.raises(ValueError, match="no record"):
        budget_levels(records[3:], 3, "corpus")


def test_log_uniform_budget_levels_spread_evenly_between_the_known_extremes():
    """log-uniform: the strata (i + 1/2)/n of ln g between the smallest and the largest
    known budget, whatever the budgets between them (the corpus rule follows those)."""
    budgets = (16_000, 90_000, 100_000, 110_000, 2_000_000)
    records = [_record(f"2020-g{i}", [], games=g) for i, g in enumerate(budgets)]
    levels = budget_levels(records, 4, "log-uniform")
    low, high = math.log(16_000), math.log(2_000_000)
    expected = [
        1000 * round(math.exp(low + q * (high - low)) / 1000) for q in (1 / 8, 3 / 8, 5 / 8, 7 / 8)
    ]
    assert levels == tuple(expected)
    ratios = np.diff(np.log(levels))  # equal steps in ln g (to Fishtest's 1000-game grid)
    np.testing.assert_allclose(ratios, (high - low) / 4, rtol=0.01)
    assert max(levels) > max(budget_levels(records, 4, "corpus"))  # more weight on long tunes
    with pytest.raises(ValueError, match="no record"):
        budget_levels([_record("2020-x", [], games=None)], 4, "log-uniform")


def test_an_unknown_budget_plays_each_seed_slot_at_its_level():
    """Seed slot i of a tune with unknown games is exactly the same tune with known games
    budgets[i mod 2] at that seed (the replays are per budget; seeds are independent)."""
    family = PriorFamily({"inactive_fraction": 0.0}, (FreeNumber("elo_at_stake.median", 1, 10),))
    values = np.array([[4.0], [2.0]])
    tests = [_test("fixed", elo=0.0, error=1.0)]
    unknown = tune_setting(_record("2020-u", tests, games=None), (2000, 6000), "LTC")
    assert unknown.budgets == (2000, 6000) and not unknown.games_known
    mixed = simulate_tune(unknown, family, values, [5, 6, 7], 3, SYNC)
    for games, slots in ((2000, [0, 2]), (6000, [1])):
        known = tune_setting(_record("2020-u", tests, games=games), (1,), "LTC")
        alone = simulate_tune(known, family, values, [[5, 6, 7][i] for i in slots], 3, SYNC)
        np.testing.assert_array_equal(mixed[:, slots], alone)


def test_simulated_elo_is_the_true_gain_plus_the_records_noise():
    """The same draw at two standard errors: the difference is (se2 - se1) Z, exactly."""
    family = PriorFamily({"inactive_fraction": 0.0}, (FreeNumber("elo_at_stake.median", 1, 10),))
    values = np.array([[4.0]])
    runs = []
    for error in (0.196, 1.96):
        setting = tune_setting(
            _record("2020-e", [_test("fixed", elo=0.0, error=error)]), (1000,), "LTC"
        )
        runs.append(simulate_tune(setting, family, values, [0, 1, 2], 7, SYNC)[0, :, 0])
    z = (runs[1] - runs[0]) / (1.0 - 0.1)
    gain = runs[0] - 0.1 * z
    assert np.all(np.abs(z) < 6) and np.std(z) > 0
    assert np.all(gain > 0)  # an SPSA tune of 20,000 games gains on a bowl of 4 Elo at stake


def test_simulation_based_calibration_recovers_a_known_median():
    """Ten tunes drawn at elo_at_stake.median = 3 are fitted back: the true value lies in the
    accepted draws' range, which is narrower than half the hyper-prior's (log scale)."""
    family = PriorFamily(
        {"inactive_fraction": 0.0, "offset": {"scale": 2.0}, "elo_at_stake": {"sigma": 0.2}},
        (FreeNumber("elo_at_stake.median", 0.3, 30.0, log=True),),
    )
    truth, se = 3.0, 0.3
    records = []
    for i, params in enumerate((2, 3, 4, 5, 6, 8, 10, 12, 14, 16)):
        name = f"2020-sbc-{i}"
        draft = _record(name, [_test("fixed", elo=0.0, error=se * 1.959963984540054)],
                        params=tuple(Parameter(f"p{j}", 100.0, 100.0) for j in range(params)))  # fmt: skip
        setting = tune_setting(draft, (1000,), "LTC")
        elo = simulate_tune(setting, family, np.array([[truth]]), [1000 + i], 11, SYNC)[0, 0, 0]
        records.append(_record(name, [_test("fixed", elo=float(elo), error=se * 1.959963984540054)],
                               params=draft.parameters))  # fmt: skip
    result = calibrate(
        records, family, draws=30, accept=0.3, seeds=[0, 1, 2], entropy=11, batch_mode=SYNC,
        split_year=2022, default_games=20000, default_time_control="LTC",
    )  # fmt: skip
    kept = np.log(result.values[result.accepted, 0])
    assert kept.min() <= math.log(truth) <= kept.max()
    assert kept.max() - kept.min() < 0.5 * (math.log(30.0) - math.log(0.3))
    assert result.samples.shape == (10, kept.size * 3, len(STATS))


def test_more_verification_tests_keep_the_fit_and_widen_only_the_verification_sample():
    """verification_tests = 3: the same draws, distances and acceptance as 1 (the fit
    reads test 0), the same samples at test 0; the other tests are new verification
    values (fixed-games: the gain plus the record's noise; SPRT: NaN where the test
    did not end as the record's) and never move statistics."""
    family = PriorFamily({"inactive_fraction": 0.0}, (FreeNumber("elo_at_stake.median", 1, 10),))
    records = [
        _record("2020-a", [_test("fixed", elo=1.0, error=0.8)]),
        _record("2021-b", [_test(wins=3000, losses=2900, draws=4100)], date="2021-01-01"),
        _record("2023-c", [_test("fixed", elo=1.5, error=0.8)], date="2023-01-01"),
        _record("2023-d", [_test(wins=3000, losses=2900, draws=4100)], date="2023-02-01"),
    ]
    run = functools.partial(calibrate, records, family, draws=6, accept=0.5, seeds=[0, 1],
                            entropy=5, batch_mode=SYNC, split_year=2022, default_games=4000,
                            default_time_control="LTC")  # fmt: skip
    one, three = run(), run(verification_tests=3)
    for field in ("values", "distance", "accepted", "simulated_summaries"):
        np.testing.assert_array_equal(getattr(one, field), getattr(three, field))
    assert three.samples.shape == (4, one.samples.shape[1] * 3, len(STATS))
    np.testing.assert_array_equal(three.samples[:, ::3], one.samples)
    extra = three.samples.reshape(4, -1, 3, len(STATS))[:, :, 1:]
    assert np.isnan(extra[..., 1:]).all()  # a move statistic is one per simulated tune
    fixed = extra[[0, 2], :, :, 0]
    assert np.isfinite(fixed).all() and len(np.unique(fixed)) == fixed.size
    sprt = extra[[1, 3], :, :, 0]
    assert np.isfinite(sprt).any()
    assert not np.array_equal(sprt[..., 0], sprt[..., 1], equal_nan=True)
    with pytest.raises(ValueError, match="verification tests = 0"):
        run(verification_tests=0)


def test_an_sprt_verification_is_played_and_conditioned_on_its_quoted_outcome():
    """Rows whose simulated SPRT ended as the record's did keep its Elo at stopping, the
    others are NaN; a passed record at gains near its bounds then quotes more Elo than
    the rows' true gain on average (the selection the fixed-games model lacked)."""
    from spsa_bench.calibration.selection import row_keys, simulate_sprt
    from spsa_bench.calibration.simulate import selected_elo

    passed = _test(wins=3000, losses=2900, draws=4100)  # SPRT [0, 2] logistic, passed
    failed = dataclasses.replace(passed, result="failed")
    gain = np.full(400, 1.0)
    keys = row_keys(5, range(400), 0x5E)
    outcome = simulate_sprt(gain, passed, keys=keys)
    on_pass, on_fail = selected_elo(gain, passed, keys), selected_elo(gain, failed, keys)
    np.testing.assert_array_equal(np.isfinite(on_pass), outcome.passed)
    np.testing.assert_array_equal(np.isfinite(on_fail), ~outcome.passed)
    np.testing.assert_array_equal(on_pass[outcome.passed], outcome.elo[outcome.passed])
    kept = on_pass[np.isfinite(on_pass)]
    assert 20 < kept.size < 380
    assert kept.mean() - 1.0 > 3 * kept.std(ddof=1) / math.sqrt(kept.size)


def test_an_unknown_time_control_is_the_longest_verification_one():
    from spsa_bench.calibration.simulate import tuned_time_control

    vvltc = dataclasses.replace(_test(wins=30, losses=20, draws=50), label="VVLTC")
    stc = dataclasses.replace(_test(wins=30, losses=20, draws=50), label="STC")
    text = dataclasses.replace(stc, label=None, time_control="60+0.6")
    record = _record("2024-tc", [stc, vvltc])
    unknown = dataclasses.replace(record, tune=dataclasses.replace(record.tune, time_control=None))
    assert tuned_time_control(unknown, "STC") == "VLTC"  # VVLTC plays VLTC's noise
    assert (
        tuned_time_control(dataclasses.replace(unknown, verification=(stc, text)), "STC") == "LTC"
    )
    assert tuned_time_control(dataclasses.replace(unknown, verification=()), "STC") == "STC"
    assert tuned_time_control(record, "STC") == "LTC"  # quoted 60+0.6 wins


def test_step_spread_plays_each_seed_at_its_own_r_end_multiplier():
    """Seed slot i with a step spread is the same tune with every r_end times the slot's
    multiplier and no spread; spread 0 multiplies by exactly 1."""
    from spsa_bench.calibration.simulate import scaled_block, step_multipliers, tune_entropy

    family = PriorFamily({"inactive_fraction": 0.0}, (FreeNumber("elo_at_stake.median", 1, 10),))
    values = np.array([[4.0]])
    setting = tune_setting(_record("2020-s", [_test("fixed", elo=0.0, error=1.0)]), (1,), "LTC")
    assert step_multipliers(3, [0, 1], 0.0) == [1.0, 1.0]
    steps = step_multipliers(tune_entropy(3, "2020-s"), [5, 6], 0.5)
    assert (
        len(set(steps)) == 2 and step_multipliers(tune_entropy(3, "2020-s"), [6], 0.5) == steps[1:]
    )
    spread = simulate_tune(setting, family, values, [5, 6], 3, SYNC, step_spread=0.5)
    for i, seed in enumerate((5, 6)):
        scaled = dataclasses.replace(setting, block_text=scaled_block(setting.block_text, steps[i]))
        alone = simulate_tune(scaled, family, values, [seed], 3, SYNC)
        np.testing.assert_array_equal(spread[:, [i]], alone)


def test_quoted_step_spread_replaces_step_spread_only_where_the_record_quotes_its_step():
    """A step-quoted setting plays ``quoted_step_spread`` (0: exactly its recorded
    step), an inferred one ``step_spread``; None leaves every setting at ``step_spread``."""
    family = PriorFamily({"inactive_fraction": 0.0}, (FreeNumber("elo_at_stake.median", 1, 10),))
    values = np.array([[4.0]])
    inferred = tune_setting(_record("2020-s", [_test("fixed", elo=0.0, error=1.0)]), (1,), "LTC")
    quoted = dataclasses.replace(inferred, step_quoted=True)
    run = functools.partial(simulate_tune, family=family, values=values, seeds=[5, 6],
                            entropy=3, batch_mode=SYNC, step_spread=0.8)  # fmt: skip
    recorded = simulate_tune(inferred, family, values, [5, 6], 3, SYNC)
    spread = run(inferred)
    assert not np.array_equal(spread, recorded)
    np.testing.assert_array_equal(run(quoted, quoted_step_spread=0.0), recorded)
    np.testing.assert_array_equal(run(quoted), spread)
    np.testing.assert_array_equal(run(inferred, quoted_step_spread=0.0), spread)


def test_stratified_step_multipliers_take_each_stratum_once_in_a_keyed_order():
    """Stratified: the n slots' log-factors are exactly the midpoint normal quantiles
    ``spread * Phi^-1((k + 1/2) / n)``, each once, in an order that depends on the tune's
    entropy and not on the seed numbers; the sampling is a stated choice, refused when
    unknown; random sampling is unchanged by the option."""
    from statistics import NormalDist

    from spsa_bench.calibration.simulate import step_multipliers

    n = 8
    strata = sorted(1.3 * NormalDist().inv_cdf((k + 0.5) / n) for k in range(n))
    for entropy in (3, 4):
        logs = np.log(step_multipliers(entropy, range(n), 1.3, "stratified"))
        np.testing.assert_allclose(sorted(logs), strata, rtol=1e-12, atol=1e-12)
    orders = [np.argsort(np.log(step_multipliers(e, range(n), 1.3, "stratified")))
              for e in (3, 4, 5)]  # fmt: skip
    assert len({tuple(o) for o in orders}) > 1  # the order is the tune's own
    np.testing.assert_array_equal(
        step_multipliers(3, [10, 20, 30, 40], 1.0, "stratified"),
        step_multipliers(3, [0, 1, 2, 3], 1.0, "stratified"),
    )
    assert step_multipliers(3, [5, 6], 0.5, "random") == step_multipliers(3, [5, 6], 0.5)
    assert step_multipliers(3, [5, 6], 0.0, "stratified") == [1.0, 1.0]
    with pytest.raises(ValueError, match="step sampling 'sorted'"):
        step_multipliers(3, [5, 6], 0.5, "sorted")


def test_simulate_tune_plays_the_stratified_multipliers():
    """A stratified run is, slot by slot, the tune with every r_end times that slot's
    stratified multiplier."""
    from spsa_bench.calibration.simulate import scaled_block, step_multipliers, tune_entropy

    family = PriorFamily({"inactive_fraction": 0.0}, (FreeNumber("elo_at_stake.median", 1, 10),))
    values = np.array([[4.0]])
    setting = tune_setting(_record("2020-s", [_test("fixed", elo=0.0, error=1.0)]), (1,), "LTC")
    steps = step_multipliers(tune_entropy(3, "2020-s"), [5, 6], 1.0, "stratified")
    both = simulate_tune(setting, family, values, [5, 6], 3, SYNC, step_spread=1.0,
                         step_sampling="stratified")  # fmt: skip
    for i, seed in enumerate((5, 6)):
        scaled = dataclasses.replace(setting, block_text=scaled_block(setting.block_text, steps[i]))
        np.testing.assert_array_equal(
            both[:, [i]], simulate_tune(scaled, family, values, [seed], 3, SYNC)
        )


def test_param_step_spread_draws_one_keyed_log_normal_factor_per_seed_and_parameter():
    """Each seed's row is its own stream (seed 6 alone equals its row among [5, 6]); the
    log-factors have mean 0 and sd ``spread`` within their standard errors."""
    from spsa_bench.calibration.simulate import param_multipliers

    np.testing.assert_array_equal(param_multipliers(3, [0, 1], 4, 0.0), np.ones((2, 4)))
    both = param_multipliers(11, [5, 6], 4, 0.5)
    np.testing.assert_array_equal(param_multipliers(11, [6], 4, 0.5), both[1:])
    assert not np.array_equal(both[0], both[1])
    logs = np.log(param_multipliers(11, range(400), 50, 0.5)).ravel()  # 20,000 factors
    se_mean, se_sd = 0.5 / math.sqrt(logs.size), 0.5 / math.sqrt(2 * (logs.size - 1))
    assert abs(logs.mean()) < 4 * se_mean
    assert abs(logs.std(ddof=1) - 0.5) < 4 * se_sd


def test_param_step_spread_plays_each_c_end_times_its_factor_and_measures_in_recorded_c_end():
    """Seed slot i with a per-parameter spread is the replay of the block whose every
    c_end is times its factor, on the landscape of the recorded block; on a flat
    landscape (every parameter inactive) SPSA's moves are the match noise times
    ``r_k c_k``, so doubling every c_end doubles the median move in recorded units."""
    from spsa_bench.calibration.simulate import (
        _simulate_at,
        param_multipliers,
        scaled_block,
        tune_entropy,
    )

    family = PriorFamily({"inactive_fraction": 0.0}, (FreeNumber("elo_at_stake.median", 1, 10),))
    values = np.array([[4.0]])
    setting = tune_setting(_record("2020-s", [_test("fixed", elo=0.0, error=1.0)]), (1,), "LTC")
    n = len(parse_block(setting.block_text))
    factors = param_multipliers(tune_entropy(3, "2020-s"), [5, 6], n, 0.5)
    block = parse_block(scaled_block(setting.block_text, 1.0, factors[0]))
    np.testing.assert_allclose(block.c_end, parse_block(setting.block_text).c_end * factors[0])
    spread = simulate_tune(setting, family, values, [5, 6], 3, SYNC, param_step_spread=0.5)
    for i, seed in enumerate((5, 6)):
        alone, _ = _simulate_at(setting, family, values, [seed], 3, SYNC, 20000, 1.0, factors[i])
        np.testing.assert_array_equal(spread[:, [i]], alone)
    assert not np.array_equal(spread, simulate_tune(setting, family, values, [5, 6], 3, SYNC))
    # decimals (committed as exported, no rounding), far from their bounds
    block = parse_block("a,100.5,0,200,2,0.002\nb,50.5,0,100,2,0.002\nc,80.5,0,160,2,0.002")
    params = tuple(
        Parameter(x, v, v + 1.0) for x, v in zip("abc", (100.5, 50.5, 80.5), strict=True)
    )
    decimal = tune_setting(
        _record("2020-f", [_test("fixed", elo=0.0, error=1.0)], params=params, block=block),
        (20000,), "LTC",
    )  # fmt: skip
    flat = PriorFamily({"inactive_fraction": 1.0}, (FreeNumber("elo_at_stake.median", 1, 10),))
    seeds = list(range(40))
    once = _simulate_at(decimal, flat, values, seeds, 3, SYNC, 20000)[0][0, :, 1]
    twice = _simulate_at(decimal, flat, values, seeds, 3, SYNC, 20000, 1.0, np.full(3, 2.0))
    np.testing.assert_allclose(twice[0][0, :, 1], 2.0 * once, rtol=1e-9)


def test_the_verification_time_control_is_the_tests_own_else_the_tunes():
    from spsa_bench.calibration.simulate import verification_time_control

    stc = dataclasses.replace(_test(wins=30, losses=20, draws=50), label="STC")
    vvltc = dataclasses.replace(stc, label="VVLTC")
    text = dataclasses.replace(stc, label=None, time_control="180+1.8")
    silent = dataclasses.replace(stc, label="the verification", time_control=None)
    assert verification_time_control(stc, "LTC") == "STC"
    assert verification_time_control(vvltc, "LTC") == "VLTC"  # VVLTC plays VLTC's noise
    assert verification_time_control(text, "STC") == "VLTC"
    assert verification_time_control(silent, "LTC") == "LTC"
    assert verification_time_control(None, "STC") == "STC"
    setting = tune_setting(_record("2020-v", [stc]), (1000,), "LTC")
    assert (setting.time_control, setting.verification_time_control) == ("LTC", "STC")


def test_a_time_control_shift_moves_the_verified_gain_to_the_tests_time_control():
    """Tuned at LTC, verified at STC: with a shift the gain is the Elo difference at STC's
    optimum (not the tuned one), and differs from the tuned gain; verified at LTC, or with
    spread 0, it is the tuned gain, loss(start) - loss(final), exactly."""
    from spsa_bench.calibration.simulate import tuned_prior, verified_gain
    from spsa_bench.model.instances import draw_instances, elo_at_time_control

    shifted = PriorFamily(
        {"inactive_fraction": 0.0, "time_control_shift": {"spread": 1.0, "tuned_at": "STC"}},
        (FreeNumber("elo_at_stake.median", 1, 10),),
    ).prior([4.0])
    setting = tune_setting(
        _record("2020-t", [dataclasses.replace(_test("fixed", elo=1.0, error=1.0), label="STC")]),
        (1000,), "LTC",
    )  # fmt: skip
    block = parse_block(setting.block_text)
    prior = tuned_prior(shifted, setting.time_control)
    assert prior.tc_tuned_at == "LTC"
    bowls = draw_instances(prior, block.start, block.min, block.max, block.c_end, 5, range(64))
    start = np.tile(block.start, (64, 1))
    final = start + block.c_end * np.random.default_rng(0).normal(size=start.shape)
    final = np.clip(final, block.min, block.max)
    tuned = bowls.elo_loss(start) - bowls.elo_loss(final)
    at_stc = verified_gain(bowls, start, final, setting)
    expected = elo_at_time_control(bowls, final, "STC") - elo_at_time_control(bowls, start, "STC")
    np.testing.assert_array_equal(at_stc, expected)
    assert np.abs(at_stc - tuned).max() > 1e-3
    same = dataclasses.replace(setting, verification_time_control="LTC")
    np.testing.assert_array_equal(verified_gain(bowls, start, final, same), tuned)
    flat = draw_instances(
        dataclasses.replace(prior, tc_spread=0.0), block.start, block.min, block.max,
        block.c_end, 5, range(64),
    )  # fmt: skip
    np.testing.assert_array_equal(
        verified_gain(flat, start, final, setting), flat.elo_loss(start) - flat.elo_loss(final)
    )


def test_start_tuned_at_plays_the_tunes_own_time_control_optimum_from_an_earlier_one():
    """With the start values last tuned at STC (``start_tuned_at``) and a shift, a tune
    at VLTC plays the VLTC optimum (the instances' drawn one moved two steps), its gain
    is read there, and its moves differ from a tune whose optimum is drawn at VLTC; a
    tune at STC itself replays exactly as without the option (the same moves; the gain
    the same number up to rounding: read through the time-control view)."""
    from spsa_bench.calibration.simulate import played_bowls, tuned_prior, verified_gain
    from spsa_bench.model.bowl import TIME_CONTROLS
    from spsa_bench.model.instances import draw_instances, elo_at_time_control

    family = PriorFamily(
        {"inactive_fraction": 0.0, "time_control_shift": {"spread": 1.0, "tuned_at": "STC"}},
        (FreeNumber("elo_at_stake.median", 1, 10),),
    )
    vltc = dataclasses.replace(_test("fixed", elo=1.0, error=1.0), label="VLTC")
    setting = tune_setting(_record("2020-o", [vltc]), (20000,), "LTC")
    setting = dataclasses.replace(setting, time_control="VLTC")  # tuned and verified at VLTC
    assert setting.verification_time_control == "VLTC"
    block = parse_block(setting.block_text)
    prior = tuned_prior(family.prior([4.0]), "STC")
    bowls = draw_instances(prior, block.start, block.min, block.max, block.c_end, 5, range(32))
    assert played_bowls(bowls, setting) is bowls
    played = played_bowls(bowls, setting, "STC")
    np.testing.assert_array_equal(
        played.theta_peak, bowls.tc_theta_peak[TIME_CONTROLS.index("VLTC")]
    )
    assert np.abs(played.theta_peak - bowls.theta_peak).max() > 0.5 * block.c_end.min()
    start = np.tile(block.start, (32, 1))
    final = np.clip(start + block.c_end, block.min, block.max)
    np.testing.assert_array_equal(
        verified_gain(bowls, start, final, setting, "STC"),
        elo_at_time_control(bowls, final, "VLTC") - elo_at_time_control(bowls, start, "VLTC"),
    )
    values = np.array([[4.0]])
    origin = simulate_tune(setting, family, values, [1, 2, 3], 3, SYNC, start_tuned_at="STC")
    own = simulate_tune(setting, family, values, [1, 2, 3], 3, SYNC)
    assert not np.array_equal(origin[..., 1:], own[..., 1:])
    stc = dataclasses.replace(setting, time_control="STC", verification_time_control="STC")
    origin = simulate_tune(stc, family, values, [1, 2, 3], 3, SYNC, start_tuned_at="STC")
    own = simulate_tune(stc, family, values, [1, 2, 3], 3, SYNC)
    np.testing.assert_array_equal(origin[..., 1:], own[..., 1:])
    np.testing.assert_allclose(origin[..., 0], own[..., 0], rtol=0, atol=1e-9)


def test_a_simulated_tune_commits_integers_where_the_record_did():
    """Parameters whose record holds whole start and final values are committed rounded
    (half to even), scaled decimals stay as exported; a record without a block (a
    synthetic TUNE() block) commits integers everywhere."""
    from spsa_bench.calibration.simulate import committed_integers, committed_values

    block = parse_block("a,10,0,20,0.5,0.002\nb,1.5,0,3,0.1,0.002\nc,3,0,6,0.3,0.002")
    params = (Parameter("a", 10.0, 11.0), Parameter("b", 1.5, 1.7), Parameter("c", 3.0, 3.0))
    record = _record("2020-i", [_test("fixed", elo=1.0, error=1.0)], params=params, block=block)
    assert committed_integers(record) == (True, False, True)
    setting = tune_setting(record, (1000,), "LTC")
    theta = np.array([[10.6, 1.63, 2.5], [9.4, 1.41, 3.5]])
    np.testing.assert_array_equal(
        committed_values(setting, theta), [[11.0, 1.63, 2.0], [9.0, 1.41, 4.0]]
    )
    synthetic = tune_setting(_record("2020-j", [_test("fixed", elo=1.0, error=1.0)]), (1,), "LTC")
    assert synthetic.committed_integers is None
    np.testing.assert_array_equal(committed_values(synthetic, theta), np.rint(theta))
    # every parameter committed as an integer, c_end 0.4: each simulated move is a whole
    # number of units, so the largest |move| is a multiple of 1 / 0.4 = 2.5 c_end
    whole = parse_block("a,10,0,20,0.4,0.02\nb,5,0,10,0.4,0.02\nc,3,0,6,0.4,0.02")
    kept = tuple(Parameter(n, s, s + 1) for n, s in zip("abc", (10.0, 5.0, 3.0), strict=True))
    setting = tune_setting(
        _record("2020-k", [_test("fixed", elo=1.0, error=1.0)], params=kept, block=whole),
        (20000,), "LTC",
    )  # fmt: skip
    family = PriorFamily({"inactive_fraction": 0.0}, (FreeNumber("elo_at_stake.median", 1, 10),))
    stats = simulate_tune(setting, family, np.array([[4.0]]), range(8), 5, SYNC)
    units = stats[0, :, STATS.index("largest_abs_move")] * 0.4
    np.testing.assert_allclose(units, np.rint(units), atol=1e-9)
    assert units.max() >= 1
