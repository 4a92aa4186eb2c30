"""Tiled per-parameter vectors: a layout change of an operand, never of a result."""

import numpy as np
import pytest

from spsa_bench.model.bowl import TrueBowl
from spsa_bench.model.developer import DeveloperView
from spsa_bench.model.tiles import MAX_TILES, MIN_ROWS, RowTiles


def _rng(seed):
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))


def test_a_tile_repeats_the_vector_down_the_rows_and_is_read_only():
    vector = _rng(1).normal(size=22)
    tiles = RowTiles(vector)
    tile = tiles.like(np.empty((50, 22)))
    assert tile.shape == (50, 22)
    np.testing.assert_array_equal(tile, np.broadcast_to(vector, (50, 22)))
    with pytest.raises(ValueError):
        tile[0, 0] = 1.0
    assert tiles.like(np.empty((50, 22))) is tile  # made once per row count


def test_the_tiles_own_their_vector():
    vector = np.arange(5.0)
    tiles = RowTiles(vector)
    vector[0] = 99.0  # the caller's array changes later: the tiles do not (spec errata 7)
    assert tiles.like(np.empty((MIN_ROWS, 5)))[:, 0].tolist() == [0.0] * MIN_ROWS


def test_few_rows_get_the_vector_itself():
    tiles = RowTiles(np.arange(3.0))
    assert tiles.like(np.empty((MIN_ROWS - 1, 3))).shape == (3,)
    assert tiles.like(np.empty(3)).shape == (3,)
    assert tiles.like(np.empty((1, MIN_ROWS - 1, 3))).shape == (3,)
    assert RowTiles(np.empty(0)).like(np.empty((2, MIN_ROWS, 0))).shape == (0,)  # no params


def test_stacked_arrays_get_a_tile_of_their_shape():
    """(2, rows, n), as the replay's two probes stacked: the vector down every row."""
    vector = _rng(5).normal(size=3)
    tiles = RowTiles(vector)
    tile = tiles.like(np.empty((2, MIN_ROWS, 3)))
    assert tile.shape == (2, MIN_ROWS, 3) and not tile.flags.writeable
    np.testing.assert_array_equal(tile, np.broadcast_to(vector, (2, MIN_ROWS, 3)))
    assert tiles.like(np.empty((2, MIN_ROWS, 3))) is tile
    assert tiles.like(np.empty((2 * MIN_ROWS, 3))).shape == (2 * MIN_ROWS, 3)


def test_the_cache_stays_small_and_correct_when_row_counts_change():
    vector = _rng(2).normal(size=4)
    tiles = RowTiles(vector)
    for rows in range(MIN_ROWS, MIN_ROWS + 3 * MAX_TILES):
        tile = tiles.like(np.empty((rows, 4)))
        np.testing.assert_array_equal(tile, np.broadcast_to(vector, (rows, 4)))
        assert len(tiles._tiles) <= MAX_TILES


def _view(n_params=22):
    rng = _rng(3)
    start = rng.uniform(900, 1100, n_params)
    return DeveloperView(start, start - 50, start + 50, rng.uniform(1, 3, n_params), 30_000)


@pytest.mark.parametrize("rows", [1, MIN_ROWS - 1, MIN_ROWS, 1000])
def test_clip_with_tiled_bounds_equals_clamping_by_broadcast(rows):
    view = _view()
    theta = view.theta_start + _rng(rows).normal(0, 80, (rows, view.num_params))
    expected = np.minimum(np.maximum(theta, view.theta_min), view.theta_max)
    assert view.clip(theta).tobytes() == expected.tobytes()
    out = np.empty_like(theta)
    assert view.clip(theta, out=out) is out and out.tobytes() == expected.tobytes()
    stacked = np.stack([theta, 2 * view.theta_start - theta])  # (2, rows, param)
    expected = np.minimum(np.maximum(stacked, view.theta_min), view.theta_max)
    assert view.clip(stacked).tobytes() == expected.tobytes()


@pytest.mark.parametrize("rows", [3, 1000])
def test_opponent_elo_with_tiled_bowl_equals_the_broadcast_formula(rows):
    view = _view()
    rng = _rng(4)
    bowl = TrueBowl.from_start(
        view.theta_start, view.theta_start + 30, rng.uniform(0, 2, 22), -5, 0
    )
    plus = view.theta_start + rng.normal(0, 20, (rows, 22))
    minus = view.theta_start + rng.normal(0, 20, (rows, 22))
    spread = (plus - minus) * (bowl.k_elo * bowl.w_true)
    centre = (plus + minus) - 2.0 * bowl.theta_peak
    expected = np.clip(np.einsum("sp,sp->s", spread, centre), -599, 599)
    assert bowl.opponent_elo(plus, minus).tobytes() == expected.tobytes()
