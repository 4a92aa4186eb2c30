"""Tests of the vectorized pentanomial model against the scalar bisection reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spsa_bench.model import pentanomial as pt
from spsa_bench.reference import pentanomial as ref

MAX = 599.0


def _reference_probabilities(elos, tol: float) -> np.ndarray:
    return np.array([ref.probabilities_by_bisection(float(e), tol=tol) for e in elos])


@pytest.fixture(scope="module")
def dense_grid() -> np.ndarray:
    """20,001 evenly spaced Elo over +-599, random points, the end points and clipped inputs."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(2024)))
    beyond = [-1e4, -1000.0, -650.0, -599.5, 599.5, 600.0, 650.0, 1000.0, 1e4]
    return np.concatenate(
        [
            np.linspace(-MAX, MAX, 20_001),
            rng.uniform(-MAX, MAX, 500),
            [-MAX, MAX, 0.0, np.nextafter(MAX, 0.0), np.nextafter(-MAX, 0.0)],
            beyond,
        ]
    )


@pytest.fixture(scope="module")
def tight_grid() -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(7)))
    return np.concatenate([np.linspace(-MAX, MAX, 1_201), rng.uniform(-MAX, MAX, 200)])


# --- agreement with the bisection reference -------------------------------------------------


def test_agrees_with_default_bisection_on_dense_grid(dense_grid):
    expected = _reference_probabilities(dense_grid, tol=1e-7)
    got = pt.probabilities(dense_grid)
    assert got.shape == (dense_grid.size, 5)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=0.0, atol=1e-9)


def test_agrees_with_tight_bisection(tight_grid):
    # A 1e-12 bisection pins the shift far below what 1e-9 needs: the fast path must be
    # accurate, not merely as close as the loose reference.
    expected = _reference_probabilities(tight_grid, tol=1e-12)
    np.testing.assert_allclose(pt.probabilities(tight_grid), expected, rtol=0.0, atol=1e-12)


def test_shift_agrees_with_tight_bisection(tight_grid):
    expected = np.array([ref.shift_by_bisection(float(e), tol=1e-12) for e in tight_grid])
    np.testing.assert_allclose(pt.shift(tight_grid), expected, rtol=0.0, atol=1e-9)


def test_reference_bisection_solves_the_score_equation():
    for elo in (-599.0, -123.4, 0.0, 0.5, 77.7, 599.0):
        s = ref.shift_by_bisection(elo, tol=1e-12)
        assert abs(ref.pair_elo(s) - elo) < 1e-8


# --- basic properties -----------------------------------------------------------------------


def test_inputs_beyond_the_range_are_clipped():
    np.testing.assert_array_equal(pt.probabilities(1000.0), pt.probabilities(599.0))
    np.testing.assert_array_equal(pt.probabilities(-1000.0), pt.probabilities(-599.0))
    np.testing.assert_array_equal(pt.probabilities(np.inf), pt.probabilities(599.0))
    np.testing.assert_array_equal(pt.probabilities(-np.inf), pt.probabilities(-599.0))
    assert pt.MAX_OPPONENT_ELO == 599.0


def test_rows_sum_to_one_and_are_non_negative(dense_grid):
    p = pt.probabilities(dense_grid)
    assert np.all(p >= 0.0)
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=0.0, atol=1e-12)


def test_mirror_symmetry(dense_grid):
    # Swapping hero and opponent swaps LL <-> WW and DL <-> WD.
    np.testing.assert_allclose(
        pt.probabilities(-dense_grid), pt.probabilities(dense_grid)[:, ::-1], rtol=0, atol=1e-12
    )


def test_expected_score_is_the_logistic_elo_score(dense_grid):
    clipped = np.clip(dense_grid, -MAX, MAX)
    logistic = 1.0 / (1.0 + 10.0 ** (clipped / 400.0))
    np.testing.assert_allclose(
        pt.expected_score(pt.probabilities(dense_grid)), logistic, rtol=0.0, atol=1e-9
    )


def test_expected_net_wins():
    assert abs(float(pt.expected_net_wins_per_pair(pt.probabilities(0.0)))) < 1e-12
    elos = np.linspace(-MAX, MAX, 101)
    p = pt.probabilities(elos)
    net = pt.expected_net_wins_per_pair(p)
    # Net wins of a pair = 2 * points - 2 and points = 2 * score (two games).
    np.testing.assert_allclose(net, 4.0 * pt.expected_score(p) - 2.0, rtol=0, atol=1e-12)
    assert np.all(np.sign(net[elos < 0]) == 1) and np.all(np.sign(net[elos > 0]) == -1)
    np.testing.assert_array_equal(pt.OUTCOME_VALUES, [-2, -1, 0, 1, 2])
    assert pt.OUTCOMES == ("LL", "DL", "DD", "WD", "WW")


def test_shapes():
    assert pt.probabilities(12.0).shape == (5,)
    grid = np.linspace(-700, 700, 12).reshape(3, 4)
    p = pt.probabilities(grid)
    assert p.shape == (3, 4, 5)
    np.testing.assert_array_equal(p.reshape(12, 5), pt.probabilities(grid.ravel()))
    assert pt.thresholds(p).shape == (3, 4, 4)
    assert pt.expected_net_wins_per_pair(p).shape == (3, 4)
    assert pt.expected_score(p).shape == (3, 4)
    assert pt.probabilities(np.zeros(0)).shape == (0, 5)
    with pytest.raises(ValueError):
        pt.probabilities([0.0, np.nan])


def test_each_seed_is_independent_of_the_batch():
    # A seed's values must not depend on which seeds are computed beside it, bit for bit.
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(17)))
    x = np.concatenate([rng.uniform(-650, 650, 301), [-599.0, 0.0, 599.0]])
    p = pt.probabilities(x)
    alone = np.array([pt.probabilities(v) for v in x])
    np.testing.assert_array_equal(p, alone)
    for start, stop in ((0, 1), (1, 3), (5, 12), (7, 40), (3, 304)):
        np.testing.assert_array_equal(pt.probabilities(x[start:stop]), p[start:stop])
        np.testing.assert_array_equal(pt.shift(x[start:stop]), pt.shift(x)[start:stop])
    t = pt.thresholds(p)
    np.testing.assert_array_equal(pt.thresholds(p[5:9]), t[5:9])
    for f in (pt.expected_score, pt.expected_net_wins_per_pair):
        np.testing.assert_array_equal(np.array([f(row) for row in p]), f(p))
    u = rng.random((x.size, 40))
    net = pt.net_wins_from_uniforms(u, t)
    counts = pt.counts_from_uniforms(u, t)
    for row in (0, 1, 150, x.size - 1):
        assert pt.net_wins_from_uniforms(u[row : row + 1], t[row : row + 1])[0] == net[row]
        np.testing.assert_array_equal(
            pt.counts_from_uniforms(u[row : row + 1], t[row : row + 1])[0], counts[row]
        )


def test_thresholds_are_the_cumulative_sums():
    p = pt.probabilities(np.array([-300.0, 0.0, 45.0]))
    t = pt.thresholds(p)
    for row in range(3):
        acc = 0.0
        for j in range(4):
            acc += p[row, j]
            assert t[row, j] == acc


# --- sampling -------------------------------------------------------------------------------


def _outcomes_by_definition(uniforms, thresholds):
    """Per-pair outcome values straight from the rule, ``None`` for padding."""
    out = []
    for u_row, t_row in zip(uniforms, thresholds, strict=True):
        out.append([None if u < 0 else sum(u >= t for t in t_row) - 2 for u in u_row])
    return out


def test_inverse_cdf_rule_by_hand():
    t = np.array([[0.1, 0.3, 0.6, 0.9]])
    u = np.array([[0.0, 0.05, 0.1, 0.2999, 0.3, 0.6, 0.89, 0.9, 0.99, -0.5, -1e-300]])
    # LL, LL, DL, DL, DD, WD, WD, WW, WW, padding, padding
    assert pt.net_wins_from_uniforms(u, t).tolist() == [-2 - 2 - 1 - 1 + 0 + 1 + 1 + 2 + 2]
    assert pt.counts_from_uniforms(u, t).tolist() == [[2, 2, 1, 2, 2]]


def test_padding_and_consistency_with_counts():
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(99)))
    seeds, m = 257, 53
    t = pt.thresholds(pt.probabilities(rng.uniform(-400, 400, seeds)))
    u = rng.random((seeds, m))
    u[rng.random((seeds, m)) < 0.3] = -1.0  # scattered padding
    u[:5] = -0.25  # rows made only of padding
    net = pt.net_wins_from_uniforms(u, t)
    counts = pt.counts_from_uniforms(u, t)
    assert net.dtype == np.int64 and net.shape == (seeds,)
    assert counts.dtype == np.int64 and counts.shape == (seeds, 5)
    expected = _outcomes_by_definition(u, t)
    assert net.tolist() == [sum(v for v in row if v is not None) for row in expected]
    for row, values in zip(counts, expected, strict=True):
        assert row.tolist() == [sum(v == k for v in values) for k in (-2, -1, 0, 1, 2)]
    np.testing.assert_array_equal(counts @ pt.OUTCOME_VALUES, net)
    np.testing.assert_array_equal(counts.sum(axis=1), (u >= 0).sum(axis=1))
    assert np.all(net[:5] == 0) and np.all(counts[:5] == 0)
    # Padding columns and strided views change nothing.
    wide = np.concatenate([u, np.full((seeds, 11), -1.0)], axis=1)
    np.testing.assert_array_equal(pt.net_wins_from_uniforms(wide, t), net)
    big = np.full((seeds, m + 20), 0.5)
    big[:, 7 : 7 + m] = u
    np.testing.assert_array_equal(pt.net_wins_from_uniforms(big[:, 7 : 7 + m], t), net)


def test_empty_inputs():
    t = pt.thresholds(pt.probabilities([0.0, 10.0]))
    assert pt.net_wins_from_uniforms(np.zeros((2, 0)), t).tolist() == [0, 0]
    assert pt.counts_from_uniforms(np.zeros((2, 0)), t).tolist() == [[0] * 5] * 2
    assert pt.net_wins_from_uniforms(np.zeros((0, 7)), np.zeros((0, 4))).shape == (0,)
    assert pt.counts_from_uniforms(np.zeros((0, 7)), np.zeros((0, 4))).shape == (0, 5)
    with pytest.raises(ValueError):
        pt.net_wins_from_uniforms(np.zeros((3, 7)), np.zeros((2, 4)))


def test_large_rows(monkeypatch):
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(5)))
    t = pt.thresholds(pt.probabilities(rng.uniform(-100, 100, 3)))
    u = rng.random((3, 1000))
    expected = [sum(v for v in row if v is not None) for row in _outcomes_by_definition(u, t)]
    assert pt.net_wins_from_uniforms(u, t).tolist() == expected
    # The float64 summation used for very long rows gives the same answer.
    monkeypatch.setattr(pt, "_FLOAT32_EXACT_PAIRS", 0)
    assert pt.net_wins_from_uniforms(u, t).tolist() == expected


def test_sampling_matches_the_probabilities():
    elos = np.array([-400.0, -150.0, 0.0, 90.0, 200.0, 500.0])
    n = 200_000
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(12345)))
    u = rng.random((elos.size, n))
    p = pt.probabilities(elos)
    t = pt.thresholds(p)
    net = pt.net_wins_from_uniforms(u, t)
    counts = pt.counts_from_uniforms(u, t)
    np.testing.assert_array_equal(counts.sum(axis=1), n)
    mean = pt.expected_net_wins_per_pair(p)
    var = p @ pt.OUTCOME_VALUES.astype(float) ** 2 - mean**2
    assert np.all(np.abs(net / n - mean) <= 4.0 * np.sqrt(var / n))
    assert np.all(np.abs(counts / n - p) <= 4.0 * np.sqrt(p * (1.0 - p) / n))


def test_common_random_numbers_are_monotone():
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(31)))
    seeds, m = 400, 64
    weak = rng.uniform(-700, 700, seeds)  # opponent Elo of the weaker hero
    gap = np.where(rng.random(seeds) < 0.5, rng.uniform(0, 1e-6, seeds), rng.uniform(0, 300, seeds))
    strong = weak - gap  # lower opponent Elo: the hero is stronger
    u = rng.random((seeds, m))

    def per_pair(elo):
        t = np.repeat(pt.thresholds(pt.probabilities(elo)), m, axis=0)
        return pt.net_wins_from_uniforms(u.reshape(-1, 1), t).reshape(seeds, m)

    lo, hi = per_pair(weak), per_pair(strong)
    assert np.all(hi >= lo)
    assert np.any(hi > lo)
    # And the thresholds themselves never rise as the hero gets stronger (grid check).
    grid = np.linspace(-MAX, MAX, 4001)
    t = pt.thresholds(pt.probabilities(grid))
    assert np.all(np.diff(t, axis=0) >= -1e-15)


def test_reference_module_is_plain():
    assert ref.A == 100.0 and ref.B == 22.0
    w, d, l = ref.win(100.0, 3.0), ref.draw(100.0, 3.0), ref.loss(100.0, 3.0)
    assert 0.0 <= d <= 1.0 and math.isclose(w + d + l, 1.0, abs_tol=1e-15)


def test_unpadded_fast_path_gives_the_same_net_wins():
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(77)))
    uniforms = rng.random((40, 36))
    thresholds = pt.thresholds(pt.probabilities(rng.uniform(-300, 300, 40)))
    np.testing.assert_array_equal(
        pt.net_wins_from_uniforms(uniforms, thresholds, unpadded=True),
        pt.net_wins_from_uniforms(uniforms, thresholds),
    )


def test_ragged_segments_equal_padded_rows():
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(78)))
    sizes = np.array([0, 1, 5, 36, 128, 2])
    thresholds = pt.thresholds(pt.probabilities(rng.uniform(-400, 400, sizes.size)))
    padded = np.full((sizes.size, 128), -1.0)
    for row, size in enumerate(sizes):
        padded[row, :size] = rng.random(size)
    flat = np.concatenate([padded[row, :size] for row, size in enumerate(sizes)])
    np.testing.assert_array_equal(
        pt.counts_and_net_wins_from_segments(flat, thresholds, sizes)[1],
        pt.net_wins_from_uniforms(padded, thresholds),
    )


def test_fast_thresholds_agree_with_exact_and_bisection():
    """The hot path's table: ~1e-11 against the exact thresholds, 1e-9 against bisection."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(79)))
    x = np.concatenate(
        [rng.uniform(-599, 599, 50_000), np.linspace(-599, 599, 9_601), [-700.0, 700.0]]
    )
    exact = pt.thresholds(pt.probabilities(x))
    assert np.abs(pt.fast_thresholds(x) - exact).max() < 1e-10
    grid = np.linspace(-599, 599, 1_199)
    reference = np.array([np.cumsum(ref.probabilities_by_bisection(v))[:4] for v in grid])
    assert np.abs(pt.fast_thresholds(grid) - reference).max() < 1e-9
    # each value depends only on its own input (no batch effects)
    np.testing.assert_array_equal(pt.fast_thresholds(x[:7]), pt.fast_thresholds(x)[:7])
    with pytest.raises(ValueError, match="NaN"):
        pt.fast_thresholds(np.array([0.0, np.nan]))


def test_fast_draw_thresholds_are_the_draw_thresholds_of_the_fast_thresholds():
    """The hot path's one-call form gives the same bits as the two public steps."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(81)))
    x = np.concatenate([rng.uniform(-650, 650, 5_000), [-599.0, 0.0, 599.0]])
    expected = pt.draw_thresholds(pt.fast_thresholds(x))
    got = pt.fast_draw_thresholds(x)
    assert got.dtype == np.uint32 and got.shape == (x.shape[0], 4)
    np.testing.assert_array_equal(got, expected)
    assert np.all(np.diff(got.astype(np.int64), axis=1) >= 0)  # usable as inverse-CDF thresholds
    with pytest.raises(ValueError, match="NaN"):
        pt.fast_draw_thresholds(np.array([np.nan]))


def test_integer_draws_sample_like_uniforms():
    """k >= ceil(t 2**32) is exactly u >= t for u = k / 2**32, and the two APIs agree."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(80)))
    draws = rng.integers(0, 2**32, size=(30, 64), dtype=np.uint32)
    thresholds = pt.thresholds(pt.probabilities(rng.uniform(-599, 599, 30)))
    uniforms = draws.astype(np.float64) / 2**32
    np.testing.assert_array_equal(
        pt.net_wins_from_uniforms(draws, pt.draw_thresholds(thresholds)),
        pt.net_wins_from_uniforms(uniforms, thresholds),
    )
    sizes = np.full(30, 64)
    np.testing.assert_array_equal(
        pt.counts_and_net_wins_from_segments(
            draws.reshape(-1), pt.draw_thresholds(thresholds), sizes
        )[1],
        pt.net_wins_from_uniforms(uniforms, thresholds),
    )
    # a threshold of exactly 1 (WW impossible) stays unreachable up to one level in 2**32
    assert pt.draw_thresholds(np.array([[0.0, 0.5, 1.0, 1.0]])).tolist() == [
        [0, 2**31, 2**32 - 1, 2**32 - 1]
    ]


@pytest.mark.parametrize(("rows", "pairs"), [(7, 1), (50, 36), (9, 1023), (4, 1024), (3, 2500)])
def test_counts_and_net_wins_equal_the_plain_counts(rows, pairs):
    """The packed form (fewer than 1024 pairs a row) and the per-threshold form agree
    with counts_from_uniforms and net_wins_from_uniforms; so does the segment form."""
    rng = np.random.default_rng(rows * 10_000 + pairs)
    draws = rng.integers(0, 2**32, size=(rows, pairs), dtype=np.uint64).astype(np.uint32)
    thresholds = pt.draw_thresholds(pt.thresholds(pt.probabilities(rng.uniform(-80, 80, rows))))
    counts, net = pt.counts_and_net_wins(draws, thresholds)
    np.testing.assert_array_equal(counts, pt.counts_from_uniforms(draws, thresholds))
    np.testing.assert_array_equal(net, pt.net_wins_from_uniforms(draws, thresholds, unpadded=True))
    assert counts.sum() == rows * pairs and counts.min() >= 0
    sizes = rng.integers(0, pairs + 1, size=rows)
    flat = np.concatenate([draws[r, : sizes[r]] for r in range(rows)])
    seg_counts, seg_net = pt.counts_and_net_wins_from_segments(flat, thresholds, sizes)
    for r in range(rows):
        one = pt.counts_from_uniforms(draws[r : r + 1, : sizes[r]], thresholds[r : r + 1])[0]
        np.testing.assert_array_equal(seg_counts[r], one)
        assert seg_net[r] == one @ pt.OUTCOME_VALUES


@pytest.mark.parametrize(
    ("rows", "pairs"), [(7, 1), (50, 36), (9, 255), (9, 256), (3, 2500), (2, 70_000)]
)
def test_at_least_counts_give_the_net_wins_and_over_jobs_the_counts(rows, pairs):
    """at_least_and_net_wins on pairs laid out (pair, seed): the same net wins as
    counts_and_net_wins on (seed, pair), and the at-least counts of several jobs, added
    up, give back their total counts (uint8 sums below 256 pairs, wider above)."""
    rng = np.random.default_rng(rows * 7 + pairs)
    totals, at_least_totals = np.zeros((rows, 5), dtype=np.int64), np.zeros((4, rows), np.int64)
    for elo_spread in (0.0, 80.0, 600.0):  # jobs from even to lopsided outcome odds
        draws = rng.integers(0, 2**32, size=(rows, pairs), dtype=np.uint64).astype(np.uint32)
        elo = rng.uniform(-elo_spread, elo_spread, rows)
        thresholds = pt.draw_thresholds(pt.thresholds(pt.probabilities(elo)))
        counts, net = pt.counts_and_net_wins(draws, thresholds)
        at_least, at_least_net = pt.at_least_and_net_wins(np.ascontiguousarray(draws.T), thresholds)
        assert at_least.shape == (4, rows) and np.iinfo(at_least.dtype).max >= pairs
        np.testing.assert_array_equal(at_least_net, net)
        np.testing.assert_array_equal(pt.counts_from_at_least(at_least, pairs), counts)
        totals += counts
        at_least_totals += at_least
    np.testing.assert_array_equal(pt.counts_from_at_least(at_least_totals, 3 * pairs), totals)


def test_at_least_counts_take_float_uniforms_and_check_shapes():
    rng = np.random.default_rng(11)
    uniforms = rng.uniform(size=(40, 6))  # (pair, seed)
    thresholds = pt.thresholds(pt.probabilities(rng.uniform(-50, 50, 6)))
    at_least, net = pt.at_least_and_net_wins(uniforms, thresholds)
    counts = pt.counts_from_uniforms(uniforms.T, thresholds)
    np.testing.assert_array_equal(pt.counts_from_at_least(at_least, 40), counts)
    np.testing.assert_array_equal(net, counts @ pt.OUTCOME_VALUES)
    with pytest.raises(ValueError, match=r"\(M, seed\)"):
        pt.at_least_and_net_wins(uniforms.T, thresholds)  # (seed, pair): the other layout


def test_at_least_counts_that_no_counts_have_are_refused():
    one_ww = np.array([[1], [1], [1], [1]])
    assert pt.counts_from_at_least(one_ww, 1).tolist() == [[0, 0, 0, 0, 1]]
    with pytest.raises(ValueError, match="no outcome counts"):
        pt.counts_from_at_least(np.array([[0], [1], [0], [0]]), 1)  # more reach t_1 than t_0
    with pytest.raises(ValueError, match="no outcome counts"):
        pt.counts_from_at_least(one_ww, 0)  # n_0 = -1
