"""Fishtest parameter blocks: every refusal names its line and field; printing round-trips."""

import numpy as np
import pytest

from spsa_bench.config.param_block import (
    BlockError,
    ParamBlock,
    check_games,
    parse_block,
    synthetic_tune,
)

BLOCK = """\
Futility,140,0,280,14,0.0020
  LMRBase , -12.5, -25, 0, 1.25, 0.002

reduction,7,1,15,1,0
"""


def test_a_block_parses_field_by_field():
    block = parse_block(BLOCK)
    assert block.names == ("Futility", "LMRBase", "reduction")
    np.testing.assert_array_equal(block.start, [140, -12.5, 7])
    np.testing.assert_array_equal(block.min, [0, -25, 1])
    np.testing.assert_array_equal(block.max, [280, 0, 15])
    np.testing.assert_array_equal(block.c_end, [14, 1.25, 1])
    np.testing.assert_array_equal(block.r_end, [0.002, 0.002, 0.0])
    with pytest.raises(ValueError):
        block.start[0] = 1.0  # read-only: no caller can alias and change it


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,1,0,2,0.1\n", "line 1 ('a,1,0,2,0.1'): has 5 comma-separated fields"),
        ("a,1,0,2,0.1,0.002,7\n", "has 7 comma-separated fields"),
        (
            "a,1,0,2,0.1,0.002\nb,x,0,2,0.1,0.002\n",
            "line 2 ('b,x,0,2,0.1,0.002'): field start = 'x'",
        ),
        ("a,1,0,inf,0.1,0.002\n", "field max = 'inf' is not a finite number"),
        ("a,1,nan,2,0.1,0.002\n", "field min = 'nan' is not a finite number"),
        ("a,1,0,2,0,0.002\n", "line 1 (a): field c_end = 0 must be > 0"),
        ("a,1,0,2,-1,0.002\n", "field c_end = -1 must be > 0"),
        ("a,1,0,2,0.1,-0.002\n", "field r_end = -0.002 must be >= 0"),
        ("a,1,2,2,0.1,0.002\n", "field min = 2 must be below max = 2"),
        ("a,3,0,2,0.1,0.002\n", "field start = 3 must be within [min, max] = [0, 2]"),
        (",1,0,2,0.1,0.002\n", "field name is empty"),
        ("a,1,0,2,0.1,0.002\n\na,1,0,2,0.1,0.002\n", "line 3: parameter name 'a' repeats line 1"),
        ("\n  \n", "the parameter block is empty"),
        ("", "the parameter block is empty"),
    ],
)
def test_every_rule_is_refused_naming_line_and_field(text, message):
    with pytest.raises(BlockError) as caught:
        parse_block(text)
    assert message in str(caught.value)


def test_synthetic_tune_prints_what_stockfish_tune_prints_and_parses_back():
    text = synthetic_tune(3, 100)
    assert text == "p0,100,0,200,10,0.0020\np1,100,0,200,10,0.0020\np2,100,0,200,10,0.0020\n"
    assert synthetic_tune(1, -7) == "p0,-7,-14,0,0.7,0.0020\n"
    for count, value in ((1, 1), (12, 37), (64, -250)):
        block = parse_block(synthetic_tune(count, value))
        assert len(block) == count and len(set(block.names)) == count
        assert parse_block(block.to_text()) == block
        np.testing.assert_array_equal(block.c_end, (block.max - block.min) / 20.0)


def test_any_block_round_trips_through_its_text():
    block = parse_block(BLOCK)
    assert parse_block(block.to_text()) == block
    odd = ParamBlock(("x",), [0.1 + 0.2], [-1e-300], [1e300], [1 / 3], [2.5e-7])
    assert parse_block(odd.to_text()) == odd


@pytest.mark.parametrize("count,value", [(0, 100), (3, 0), (2.5, 100), (3, 1.5)])
def test_synthetic_tune_refuses_what_tune_would_not_make(count, value):
    with pytest.raises(BlockError):
        synthetic_tune(count, value)


def test_games_budget_follows_fishtest():
    assert check_games(60000) == 60000 and check_games(1000.0) == 1000
    assert check_games(3_200_000) == 3_200_000
    for bad in (999, 1500, 3_201_000, 0, -1000, float("nan"), float("inf"), "60000", True, 60000.5):
        with pytest.raises(BlockError, match="games"):
            check_games(bad)
