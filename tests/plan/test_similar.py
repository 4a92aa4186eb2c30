"""The corpus tunes most like a plan (``spsa_bench.plan.similar``) and their section of
plan.md, on hand-made records."""

import math

import numpy as np
import pytest
import xarray as xr

from spsa_bench.config.param_block import parse_block
from spsa_bench.corpus.records import Parameter, Source, Tune, TuneRecord, Verification
from spsa_bench.plan import similar
from spsa_bench.plan.summary import similar_section

BLOCK = "a,100,0,200,10,0.002\nb,50,0,100,5,0.002\nc,8,0,16,2,0.002\n"


def a_test(label="STC", tc=None, result="passed", elo=None, error=None, wld=(None, None, None)):
    wins, losses, draws = wld
    games = None if wins is None else wins + losses + draws
    return Verification(
        label, tc, None, "sprt", (0.0, 2.0), "normalized", games, wins, losses, draws, None,
        result, elo, error,
    )  # fmt: skip


def record(name, params, games=None, tc=None, date="2020-01-01", tests=(), block=None):
    if block is None:
        parameters = tuple(Parameter(f"p{i}", 0.0, 1.0) for i in range(params))
    else:
        parameters = tuple(Parameter(n, s, s + 10.0 * (i + 1)) for i, (n, s) in enumerate(
            zip(block.names, block.start, strict=True)
        ))  # fmt: skip
    return TuneRecord(
        name=name,
        title=name,
        date=date,
        kind="search",
        sources=(Source("pr", f"official-stockfish/Stockfish#{len(name)}", "the PR"),),
        tune=Tune(tc, None, games, None, None, None, None),
        parameters=parameters,
        verification=tuple(tests),
        provenance={},
        block=block,
    )


def test_the_distance_is_the_sum_of_log_ratios():
    same = similar.distance(record("x", 12, 20_000, "10+0.1"), 12, 20_000, "STC")
    assert same.distance == 0.0
    m = similar.distance(record("x", 24, 5_000, "60+0.6"), 12, 20_000, "STC")
    assert m.params_term == pytest.approx(math.log(2))
    assert m.games_term == pytest.approx(math.log(4))
    assert m.time_term == pytest.approx(math.log(6))
    assert m.distance == pytest.approx(math.log(2 * 4 * 6))
    # the same at LTC: the time control's term vanishes
    assert similar.distance(record("x", 24, 5_000, "60+0.6"), 12, 20_000, "LTC").distance == (
        pytest.approx(math.log(8))
    )


def test_an_unknown_field_counts_a_factor_of_four():
    m = similar.distance(record("x", 12), 12, 20_000, "VLTC")
    assert m.games_term is None and m.time_term is None
    assert m.distance == pytest.approx(2 * math.log(4))


def test_the_ranking_closest_first_ties_to_the_later_date():
    records = [
        record("far", 100, 2_000_000, "60+0.6"),
        record("exact", 12, 60_000, "10+0.1"),
        record("unknown-games", 12, None, "10+0.1"),  # ln 4
        record("twice-old", 24, 60_000, "10+0.1", date="2016-05-01"),  # ln 2
        record("twice-new", 6, 60_000, "10+0.1", date="2024-05-01"),  # ln 2, later
        record("ltc", 12, 60_000, "60+0.6"),  # ln 6
    ]
    names = [m.record.name for m in similar.most_similar(records, 12, 60_000, "STC", count=6)]
    assert names == ["exact", "twice-new", "twice-old", "unknown-games", "ltc", "far"]
    assert len(similar.most_similar(records, 12, 60_000, "STC")) == similar.SHOWN


def test_a_verification_says_where_what_and_how_much():
    assert similar.verification_text(a_test("LTC", "60+0.6", "failed", -0.6, 1.8)) == (
        "LTC (60+0.6) failed, -0.60 ± 1.80 Elo"
    )
    assert similar.verification_text(a_test("VLTC", elo=2.0)) == "VLTC passed, +2.00 ± unknown Elo"
    wld = similar.verification_text(a_test(None, "60+0.6", wld=(110, 100, 790)))
    expected = -400 * math.log10(1 / (500 / 1000 + 5 / 1000) - 1)
    assert wld == f"60+0.6 passed, ~{expected:+.1f} Elo (from W/L/D)" and expected > 0
    assert similar.verification_text(a_test(None)) == "time control unknown passed, Elo unknown"


def test_the_outcome_fields_say_unknown_where_the_record_does():
    block = parse_block(BLOCK)
    known = similar.outcome_fields(record("b", 3, block=block, tests=[a_test(elo=1.0, error=1.5)]))
    # moves 10/10, 20/5, 30/2 c_end: median 4
    assert known["median |move| (c_end)"] == "4.00"
    assert known["verification"] == "STC passed, +1.00 ± 1.50 Elo"
    assert known["source"] == "official-stockfish/Stockfish#1"
    empty = similar.outcome_fields(record("n", 3))
    assert empty["median |move| (c_end)"] == "unknown" and empty["verification"] == "unknown"
    row = similar.rows([similar.distance(record("n", 3), 3, 2000, "STC")])[0]
    assert row["games"] == "unknown" and row["time control"] == "unknown"


def plan_like(games=60_000, time_control="STC") -> xr.Dataset:
    return xr.Dataset(attrs={"block": BLOCK, "games_given": games, "time_control": time_control})


def test_the_section_lists_three_tunes_in_one_table():
    records = [
        record("near", 3, 60_000, "10+0.1", tests=[a_test("STC", elo=1.2, error=0.9)]),
        record("mid", 6, 60_000, "10+0.1"),
        record("pipe|name", 3, 240_000, "10+0.1"),
        record("far", 300, 3_000_000, "180+1.8"),
    ]
    lines = similar_section(plan_like(), records)
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + 3
    columns = table[0].count(" | ") + 1
    for line in table[2:]:  # escaped: no cell splits the table
        assert len(line.replace("\\|", "").split(" | ")) == columns, line
    assert "near (search)" in table[2] and "+1.20 ± 0.90 Elo" in table[2]
    assert "pipe\\|name" in table[4] and "far" not in "".join(table)
    assert "4 Stockfish tunes" in " ".join(lines)


def test_the_packaged_corpus_gives_three_tunes():
    lines = similar_section(plan_like(2_000_000, "LTC"))
    rows = [line for line in lines if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) == similar.SHOWN
    assert all("Stockfish" in line for line in rows)  # every row names its source
    assert np.all([float(line.split(" | ")[4]) >= 0 for line in rows])
