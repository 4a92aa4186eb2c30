"""OpenBench parameter blocks: the same error rules as Fishtest's (line, field, value),
the int|float type, and printing round-trips."""

from pathlib import Path

import numpy as np
import pytest

from spsa_bench.config.openbench_block import OpenBenchBlock, parse_openbench_block
from spsa_bench.config.param_block import BlockError, ParamBlock

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tune-openbench.txt"

BLOCK = """\
Futility, int, 140, 0, 280, 14, 0.0020
  LMRBase , float, -12.5, -25, 0, 1.25, 0.002

reduction,int,7,1,15,0.5,0.01
"""


def test_a_block_parses_field_by_field():
    block = parse_openbench_block(BLOCK)
    assert isinstance(block, ParamBlock)
    assert block.names == ("Futility", "LMRBase", "reduction")
    np.testing.assert_array_equal(block.start, [140, -12.5, 7])
    np.testing.assert_array_equal(block.min, [0, -25, 1])
    np.testing.assert_array_equal(block.max, [280, 0, 15])
    np.testing.assert_array_equal(block.c_end, [14, 1.25, 0.5])
    np.testing.assert_array_equal(block.r_end, [0.002, 0.002, 0.01])
    np.testing.assert_array_equal(block.integer, [True, False, True])
    with pytest.raises(ValueError):
        block.integer[0] = False  # read-only


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,int,1,0,2,0.1\n", "line 1 ('a,int,1,0,2,0.1'): has 6 comma-separated fields"),
        ("a,1,0,2,0.1,0.002\n", "has 6 comma-separated fields, expected 7"),
        ("a,int,1,0,2,0.1,0.002,7\n", "has 8 comma-separated fields"),
        ("a,double,1,0,2,0.1,0.002\n", "line 1 (a): field type = 'double' must be int or float"),
        ("a,INT,1,0,2,0.1,0.002\n", "field type = 'INT' must be int or float"),
        (
            "a,int,1,0,2,0.1,0.002\nb,int,x,0,2,0.1,0.002\n",
            "line 2 ('b,int,x,0,2,0.1,0.002'): field start = 'x'",
        ),
        ("a,float,1,0,inf,0.1,0.002\n", "field max = 'inf' is not a finite number"),
        ("a,float,1,nan,2,0.1,0.002\n", "field min = 'nan' is not a finite number"),
        ("a,float,1,0,2,0,0.002\n", "line 1 (a): field c_end = 0 must be > 0"),
        ("a,int,1,0,2,-1,0.002\n", "field c_end = -1 must be > 0"),
        ("a,int,1,0,2,0.1,0\n", "field r_end = 0 must be > 0"),
        ("a,int,1,0,2,0.1,-0.002\n", "field r_end = -0.002 must be > 0"),
        ("a,int,2,2,2,0.1,0.002\n", "field min = 2 must be below max = 2"),
        ("a,int,3,0,2,0.1,0.002\n", "field start = 3 must be within [min, max] = [0, 2]"),
        ("a,int,1,0.5,2,0.5,0.002\n", "field min = 0.5 of an int parameter must be an integer"),
        ("a,int,1,0,2.5,0.5,0.002\n", "field max = 2.5 of an int parameter must be an integer"),
        (",int,1,0,2,0.1,0.002\n", "field name is empty"),
        ("a\tb,int,1,0,2,0.1,0.002\n", "line 1: field name = 'a\\tb' holds the control"),
        ("a\u202eb,int,1,0,2,0.1,0.002\n", "character U+202E"),
        ("a,float,0,-1.5e308,1.5e308,0.1,0.002\n", "the range max - min"),
        ("a,float,0,-1,1,1e150,0.002\n", "field c_end = 1e150 is too large"),
        ("a,float,0,-1,1,1e100,1e100\n", "field r_end = 1e100 is too large"),
        (
            "a,int,1,0,2,0.1,0.002\n\na,int,1,0,2,0.1,0.002\n",
            "line 3: parameter name 'a' repeats line 1",
        ),
        ("\n  \n", "the parameter block is empty"),
        ("", "the parameter block is empty"),
    ],
)
def test_every_rule_is_refused_naming_line_and_field(text, message):
    with pytest.raises(BlockError) as caught:
        parse_openbench_block(text)
    assert message in str(caught.value)


def test_a_float_parameter_may_have_fractional_bounds_and_a_byte_order_mark_is_dropped():
    block = parse_openbench_block("\ufeffx, float, 0.5, 0.25, 0.75, 0.01, 0.002\n")
    assert block.names == ("x",) and not block.integer[0]


def test_any_block_round_trips_through_its_text():
    block = parse_openbench_block(BLOCK)
    assert parse_openbench_block(block.to_text()) == block
    odd = OpenBenchBlock(
        ("x", "y"), [0.1 + 0.2, 3], [-1e-300, -4], [1e300, 9], [1 / 3, 0.5], [2.5e-7, 1.0],
        integer=[False, True],
    )  # fmt: skip
    assert parse_openbench_block(odd.to_text()) == odd
    flipped = OpenBenchBlock(odd.names, odd.start, odd.min, odd.max, odd.c_end, odd.r_end,
                             integer=[False, False])  # fmt: skip
    assert flipped != odd  # the type is part of the block


def test_the_example_block_parses_with_int_and_float_parameters():
    block = parse_openbench_block(EXAMPLE.read_text(encoding="utf-8"))
    assert len(block) == 6
    assert block.integer.any() and not block.integer.all()
    assert np.all((block.min <= block.start) & (block.start <= block.max))
