"""The SPRT selection model (calibration.selection): the vectorised SPRT against a
literal per-row loop written from Fishtest's rules, the exponential tilt, the error
rates at and beyond the bounds, and the selection bias of a passed SPRT."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from spsa_bench.calibration import selection as sel
from spsa_bench.corpus.records import Verification

#: Pentanomial counts of a real STC test (2023-eval-optimism-7, the corpus).
STC_PTNML = (353, 14910, 37492, 15229, 416)
#: W/L/D of a real test without a pentanomial (2015-king-safety-spsa, the corpus).
OLD_WLD = (2075, 1882, 7572)


def _test(
    kind="sprt", scale="logistic", bounds=(0.0, 10.0), *, ptnml=STC_PTNML, wld=None, games=None
):
    wins, losses, draws = wld if wld is not None else (None, None, None)
    return Verification(
        label="T", time_control=None, threads=None, test=kind,
        sprt=bounds if kind == "sprt" else None, sprt_scale=scale if kind == "sprt" else None,
        games=games, wins=wins, losses=losses, draws=draws, ptnml=ptnml,
        result="passed" if kind == "sprt" else "fixed", elo=None, elo_error=None,
    )  # fmt: skip


# ---------------------------------------------------------------------------
# A literal reference: one row, one chunk at a time, plain Python and brentq,
# written from Fishtest's rules (server/fishtest/stats/LLRcalc.py, stat_util.py).
# ---------------------------------------------------------------------------

SCORES = [0.0, 0.25, 0.5, 0.75, 1.0]


def _ref_root(weights, values):
    """x with sum w v / (1 + x v) = 0, between the poles -1/max v and -1/min v."""

    def f(x):
        return sum(w * v / (1.0 + x * v) for w, v in zip(weights, values, strict=True))

    return brentq(f, -1.0 / max(values) + 1e-9, -1.0 / min(values) - 1e-9, xtol=1e-15)


def _ref_mle_mean(weights, s):
    values = [a - s for a in SCORES]
    x = _ref_root(weights, values)
    return [w / (1.0 + x * v) for w, v in zip(weights, values, strict=True)]


def _ref_mle_t(weights, t):
    p = [0.2] * 5
    for _ in range(10):
        mu = sum(pi * a for pi, a in zip(p, SCORES, strict=True))
        sigma = math.sqrt(sum(pi * (a - mu) ** 2 for pi, a in zip(p, SCORES, strict=True)))
        values = [a - 0.5 - t * sigma * (1 + ((mu - a) / sigma) ** 2) / 2 for a in SCORES]
        x = _ref_root(weights, values)
        new = [w / (1.0 + x * v) for w, v in zip(weights, values, strict=True)]
        change = max(abs(a - b) for a, b in zip(new, p, strict=True))
        p = new
        if change < 1e-9:
            break
    return p


def _ref_llr(counts, model, h0, h1):
    n = [c if c > 0 else 1e-3 for c in counts]
    total = sum(n)
    weights = [c / total for c in n]
    if model == "logistic":
        p0, p1 = (_ref_mle_mean(weights, 1 / (1 + 10 ** (-h / 400))) for h in (h0, h1))
    else:
        p0, p1 = (_ref_mle_t(weights, h) for h in (h0, h1))
    return total * sum(
        w * (math.log(b) - math.log(a)) for w, a, b in zip(weights, p0, p1, strict=True)
    )


def _ref_sprt(draws, model, h0, h1, chunk):
    """draws (chunks, 5) of one row -> (passed, elo, pairs)."""
    lower, upper = math.log(0.05 / 0.95), math.log(0.95 / 0.05)
    o = {"ref0": 0.0, "m0": 0.0, "sq0": 0.0, "ref1": 0.0, "m1": 0.0, "sq1": 0.0}
    counts = [0] * 5
    passed = False
    used = len(draws)
    for j, new in enumerate(draws):
        counts = [c + int(d) for c, d in zip(counts, new, strict=True)]
        llr = _ref_llr(counts, model, h0, h1)
        if llr < o["ref0"]:
            delta = llr - o["ref0"]
            o["m0"] += delta
            o["sq0"] += delta**2
            o["ref0"] = llr
        if llr > o["ref1"]:
            delta = llr - o["ref1"]
            o["m1"] += delta
            o["sq1"] += delta**2
            o["ref1"] = llr
        o0 = -o["sq0"] / o["m0"] / 2 if o["m0"] != 0 else 0.0
        o1 = o["sq1"] / o["m1"] / 2 if o["m1"] != 0 else 0.0
        if llr < lower + o0:
            used = j + 1
            break
        if llr > upper - o1:
            passed, used = True, j + 1
            break
    pairs = sum(counts)
    score = sum(c * a for c, a in zip(counts, SCORES, strict=True)) / pairs
    return passed, -400 * math.log10(1 / score - 1), used * chunk


@pytest.mark.parametrize(
    ("test", "gains"),
    [
        (_test("sprt", "logistic", (0.0, 12.0)), (-10.0, 0.0, 6.0, 12.0, 25.0)),
        (_test("sprt", "normalized", (0.0, 20.0)), (-10.0, 0.0, 5.0, 10.0, 20.0)),
        (_test("sprt", "bayeselo", (0.0, 20.0), ptnml=None, wld=OLD_WLD), (-5.0, 5.0, 15.0)),
    ],
    ids=["logistic", "normalized", "bayeselo"],
)
def test_vectorised_sprt_matches_the_literal_loop_row_by_row(test, gains):
    chunk, max_chunks = 16, 60
    gain = np.repeat(np.array(gains), 6)
    probs = sel.pair_probabilities(test, gain)
    rng = np.random.default_rng(20261126)
    draws = rng.multinomial(chunk, probs, size=(max_chunks, gain.size))  # (chunk, row, 5)
    model, h0, h1 = sel.sprt_bounds(test)

    def draw(active, first, k):
        return draws[first : first + k][:, active]

    outs = [
        sel.run_sprt(draw, gain.size, model, h0, h1, chunk=chunk, max_chunks=max_chunks,
                     states_per_block=block)
        for block in (1 << 16, 7)
    ]  # fmt: skip
    ref = [_ref_sprt(draws[:, r], model, h0, h1, chunk) for r in range(gain.size)]
    passed = np.array([r[0] for r in ref])
    for out in outs:  # the block partition of the chunks changes nothing
        np.testing.assert_array_equal(out.passed, passed)
        np.testing.assert_array_equal(out.pairs, [r[2] for r in ref])
        np.testing.assert_allclose(out.elo, [r[1] for r in ref], rtol=0, atol=1e-9)
    # the cases exercise accepting, rejecting and truncation
    stopped = np.array([r[2] for r in ref]) < max_chunks * chunk
    assert passed.any() and (~passed & stopped).any() and (~stopped).any()


def _ref_uniform(key, position):
    """Output ``position`` of the SplitMix64 stream keyed ``key``, in [0, 1), in plain
    integers (Steele, Lea & Flood 2014: the finaliser of key + (position + 1) * gamma)."""
    mask = (1 << 64) - 1
    z = (key + (position + 1) * 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return (z >> 11) * 2.0**-53


@pytest.mark.parametrize("scale", ["logistic", "normalized"])
def test_simulate_sprt_with_keys_matches_a_pair_by_pair_loop(scale):
    """The public function end to end: each row's pairs drawn one at a time from its own
    key by inverse CDF, then the literal SPRT loop."""
    test = _test("sprt", scale, (0.0, 12.0) if scale == "logistic" else (0.0, 20.0))
    chunk, max_pairs = 16, 640
    gain = np.repeat([-8.0, 3.0, 8.0, 20.0], 5)
    keys = sel.row_keys(42, range(gain.size), 0x5E)
    out = sel.simulate_sprt(gain, test, keys=keys, chunk=chunk, max_pairs=max_pairs)
    model, h0, h1 = sel.sprt_bounds(test)
    probs = sel.pair_probabilities(test, gain)
    for r in range(gain.size):
        cdf, total = [], 0.0
        for p in probs[r, :4].tolist():
            total += p
            cdf.append(total)
        draws = np.zeros((max_pairs // chunk, 5), dtype=int)
        for j in range(max_pairs):
            u = _ref_uniform(int(keys[r]), j)
            draws[j // chunk, sum(u >= c for c in cdf)] += 1
        passed, elo, pairs = _ref_sprt(draws, model, h0, h1, chunk)
        assert (out.passed[r], out.pairs[r]) == (passed, pairs), r
        assert out.elo[r] == pytest.approx(elo, abs=1e-9)
    assert out.passed.any() and not out.passed.all()


def test_llr_matches_the_literal_loop_and_fishtest_values():
    rng = np.random.default_rng(3)
    counts = rng.multinomial(400, np.array(STC_PTNML) / sum(STC_PTNML), size=12)
    counts[0, 0] = counts[1, 4] = 0  # regularized zeros
    for model, h0, h1 in (("logistic", -1.0, 3.0), ("normalized", 0.01, 0.03)):
        fast = sel.sprt_llr(counts, model, h0, h1)
        ref = [_ref_llr(c, model, h0, h1) for c in counts.tolist()]
        np.testing.assert_allclose(fast, ref, rtol=1e-7, atol=1e-9)
    # Values printed by Fishtest's own LLRcalc (commit b8eecff2): LLR_logistic(-3, 1, R)
    # for R of stat_util's self-test, and LLR_normalized(0.5, 2.5, R) for a VVLTC test.
    fishtest_r = np.array([10789, 19328, 33806, 19402, 10543])
    assert sel.sprt_llr(fishtest_r, "logistic", -3.0, 1.0) == pytest.approx(
        2.1310678117940807, rel=1e-9
    )
    vvltc = _test("sprt", "normalized", (0.5, 2.5), ptnml=(0, 1255, 4694, 1489, 2))
    _, t0, t1 = sel.sprt_bounds(vvltc)
    assert sel.sprt_llr(np.array(vvltc.ptnml), "normalized", t0, t1) == pytest.approx(
        2.816838920280497, rel=1e-9
    )


def test_bayeselo_bounds_convert_with_the_draw_elo():
    old = _test("sprt", "bayeselo", (0.0, 4.0), ptnml=None, wld=OLD_WLD)
    model, h0, h1 = sel.sprt_bounds(old)
    assert model == "logistic" and h0 == pytest.approx(0.0, abs=1e-12)
    # Fishtest's stat_util.bayeselo_to_elo(4, draw_elo_calc([1882, 7572, 2075])), b8eecff2
    assert h1 == pytest.approx(2.2729272138492176, rel=1e-9)


def test_refuses_tests_it_cannot_play():
    with pytest.raises(ValueError, match="no pentanomial or W/L/D"):
        sel.base_frequencies(_test(ptnml=None))
    with pytest.raises(ValueError, match="sprt_scale None"):
        sel.sprt_bounds(_test(scale=None))


# ---------------------------------------------------------------------------
# The exponential tilt
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "test", [_test(), _test(ptnml=None, wld=OLD_WLD), _test(ptnml=(0, 1255, 4694, 1489, 2))]
)
def test_tilt_reaches_the_target_and_keeps_the_observed_test_at_its_own_elo(test):
    q = sel.base_frequencies(test)
    gains = np.array([-50.0, -3.0, 0.0, 1.0, 7.5, 60.0])
    p = sel.pair_probabilities(test, gains)
    np.testing.assert_allclose(p @ sel.PAIR_SCORES, sel.score_of_elo(gains), rtol=0, atol=1e-12)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    own = sel.elo_of_score(q @ sel.PAIR_SCORES)
    np.testing.assert_allclose(sel.pair_probabilities(test, own)[0], q, rtol=1e-10, atol=1e-14)
    if test.ptnml is None:  # two independent games of the W/L/D
        w, l, d = np.array(OLD_WLD) / sum(OLD_WLD)
        np.testing.assert_allclose(q, [l * l, 2 * l * d, d * d + 2 * l * w, 2 * d * w, w * w])


def test_tilt_is_the_closest_distribution_to_q_with_that_mean():
    """Among distributions with the target mean, the tilt minimises KL(p || q): moving
    along any direction that keeps the sum and the mean raises it."""
    q = sel.base_frequencies(_test())
    p = sel.tilt(q, sel.score_of_elo(np.array([5.0])))[0]
    basis = np.linalg.svd(np.vstack([np.ones(5), sel.PAIR_SCORES]))[2][2:]  # null space

    def kl(x):
        return float(np.sum(x * np.log(x / q)))

    rng = np.random.default_rng(0)
    for _ in range(20):
        move = rng.standard_normal(3) @ basis
        step = 1e-3 * move / np.abs(move).max() * p.min()
        assert kl(p + step) > kl(p) and kl(p - step) > kl(p)


# ---------------------------------------------------------------------------
# Error rates and selection bias (fixed seeds, tolerances from binomial SEs)
# ---------------------------------------------------------------------------


def _rate_band(rate, n):
    """Three binomial standard errors."""
    return 3.0 * math.sqrt(rate * (1 - rate) / n)


@pytest.mark.parametrize(
    ("test", "rows", "source"),
    [
        (_test("sprt", "logistic", (0.0, 10.0)), 3000, "rng"),
        (_test("sprt", "normalized", (0.0, 20.0)), 2000, "keys"),
    ],
    ids=["logistic-rng", "normalized-keys"],
)
def test_pass_rate_is_alpha_at_h0_and_one_minus_beta_at_h1(test, rows, source):
    """Wald's bounds with Fishtest's overshoot correction: P(pass) = alpha at H0 and
    1 - beta at H1 (the continuous-time limit is exact: (1 - e^a) / (e^b - e^a) = 0.05);
    far beyond the bounds the decision is certain."""
    g0, g1 = sel.logistic_bounds(test)
    far = g1 - g0
    cases = ((g0, sel.ALPHA), (g1, 1 - sel.BETA), (g1 + 2 * far, 1.0), (g0 - 2 * far, 0.0))
    for i, (gain, expected) in enumerate(cases):
        n = rows if 0 < expected < 1 else 500
        if source == "rng":
            out = sel.simulate_sprt(np.full(n, gain), test, np.random.default_rng(11 + i))
        else:
            out = sel.simulate_sprt(np.full(n, gain), test, keys=sel.row_keys(11 + i, range(n)))
        rate = out.passed.mean()
        if 0 < expected < 1:
            assert abs(rate - expected) < _rate_band(expected, n), (gain, rate)
        else:
            assert abs(rate - expected) < 0.01, (gain, rate)


def test_normalized_bounds_map_to_logistic_gains_through_the_pair_variance():
    test = _test("sprt", "normalized", (0.5, 2.5))
    _, t0, t1 = sel.sprt_bounds(test)
    g = np.array(sel.logistic_bounds(test))
    p = sel.pair_probabilities(test, g)
    mean = p @ sel.PAIR_SCORES
    sd = np.sqrt(p @ sel.PAIR_SCORES**2 - mean**2)
    np.testing.assert_allclose((mean - 0.5) / sd, [t0, t1], rtol=1e-9)


def test_a_passed_sprt_overstates_the_gain_and_a_fixed_test_does_not():
    rows = 2000
    test = _test("sprt", "logistic", (0.0, 10.0))
    for gain in (5.0, 10.0):
        out = sel.simulate_sprt(np.full(rows, gain), test, np.random.default_rng(21))
        bias = out.elo[out.passed] - gain
        se = bias.std(ddof=1) / math.sqrt(bias.size)
        assert bias.mean() > 4 * se, (gain, bias.mean(), se)
    fixed = _test("fixed", games=2000)
    out = sel.simulate_sprt(np.full(rows, 5.0), fixed, np.random.default_rng(22))
    assert out.passed.all() and (out.pairs == 1000).all()
    err = out.elo - 5.0
    assert abs(err.mean()) < 4 * err.std(ddof=1) / math.sqrt(rows)


def test_truncation_counts_as_not_passed_and_results_repeat_bit_for_bit():
    test = _test("sprt", "logistic", (0.0, 10.0))
    gain = np.full(200, 5.0)
    short = sel.simulate_sprt(gain, test, np.random.default_rng(5), max_pairs=100, chunk=16)
    assert (short.pairs <= 112).all()
    truncated = short.pairs == 112
    assert truncated.any() and not short.passed[truncated].any()
    a = sel.simulate_sprt(gain, test, np.random.default_rng(6))
    b = sel.simulate_sprt(gain, test, np.random.SeedSequence(6))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


# ---------------------------------------------------------------------------
# Per-row counter streams (keys)
# ---------------------------------------------------------------------------


def test_keyed_counts_are_multinomial_and_independent_across_chunks():
    rows, pairs = 4000, 40
    p = sel.pair_probabilities(_test(), np.full(rows, 3.0))
    counts = sel.keyed_pair_counts(sel.row_keys(1, range(rows), 9), p, 100, pairs, 2)
    assert counts.shape == (2, rows, 5) and (counts.sum(axis=2) == pairs).all()
    freq = counts[0].mean(axis=0) / pairs
    se = np.sqrt(p[0] * (1 - p[0]) / (pairs * rows))
    assert np.all(np.abs(freq - p[0]) < 4 * se), (freq, p[0])
    var = counts[0].var(axis=0, ddof=1)  # multinomial: pairs p (1 - p)
    np.testing.assert_allclose(var, pairs * p[0] * (1 - p[0]), rtol=0.15)
    score = counts @ sel.PAIR_SCORES
    r = np.corrcoef(score[0], score[1])[0, 1]
    assert abs(r) < 4 / math.sqrt(rows)


def test_keyed_rows_depend_on_their_key_alone_and_share_noise_across_gains():
    test = _test("sprt", "logistic", (0.0, 10.0))
    rows = 90
    keys = sel.row_keys(3, range(rows), 0x5E)
    gain = np.linspace(-5.0, 15.0, rows)
    full = sel.simulate_sprt(gain, test, keys=keys)
    part = np.arange(0, rows, 7)[::-1]
    sub = sel.simulate_sprt(gain[part], test, keys=keys[part])
    for a, b in zip(full, sub, strict=True):
        np.testing.assert_array_equal(a[part], b)
    # common random numbers: one key, a higher gain, pair by pair at least as good
    fixed = _test("fixed", games=3000)
    low = sel.simulate_sprt(np.full(rows, 1.0), fixed, keys=keys)
    high = sel.simulate_sprt(np.full(rows, 4.0), fixed, keys=keys)
    assert np.all(high.elo >= low.elo) and np.any(high.elo > low.elo)
    with pytest.raises(ValueError, match="exactly one of rng and keys"):
        sel.simulate_sprt(gain, test)
