"""The real-tune corpus (issue 30): every shipped record validates, a malformed record
is refused in one line naming the file, the field and the value, moves are computed
in c_end units, and ``spsa-bench tunes list|show`` works end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spsa_bench.corpus.load import DATA, load_corpus, load_record
from spsa_bench.corpus.records import CorpusError

GOOD = {
    "name": "2020-hand-made",
    "title": "A hand-made tune",
    "date": "2020-05-01",
    "kind": "search",
    "sources": [{"id": "c", "ref": "commit abc1234", "what": "message and diff"}],
    "tune": {
        "time_control": "60+0.6", "threads": 1, "games": 120000, "A": None,
        "A_ratio": 0.1, "alpha": 0.602, "gamma": 0.101,
    },
    "parameters": [
        {"name": "a", "start": 100, "final": 130},
        {"name": "b", "start": -40, "final": -45},
    ],
    "verification": [
        {
            "label": "LTC", "time_control": "60+0.6", "threads": 1, "test": "sprt",
            "sprt": [0.5, 2.5], "sprt_scale": "normalized", "games": 10, "wins": 4,
            "losses": 2, "draws": 4, "ptnml": [0, 1, 2, 2, 0], "result": "passed",
            "elo": None, "elo_error": None,
        }
    ],
    "provenance": {
        key: {"status": "quoted", "source": "c"}
        for key in ("time_control", "threads", "games", "A_ratio", "alpha", "gamma",
                    "verification[0]")
    }
    | {
        "parameters": {"status": "inferred", "source": "c", "note": "from the diff"},
        "sprt_scale": {"status": "inferred", "source": "c", "note": "brackets"},
        "block": {"status": "inferred", "source": "c", "note": "from TUNE lines"},
        "step": {"status": "quoted", "source": "c"},
    },
}  # fmt: skip
BLOCK = "a,100,0,200,10,0.002\nb,-40,-80,0,4,0.002\n"


def write(folder: Path, record: dict, block: str | None = BLOCK) -> Path:
    path = folder / f"{record['name']}.yaml"
    path.write_text(yaml.safe_dump(record, sort_keys=False))
    if block is not None:
        path.with_suffix(".block").write_text(block)
    return path


def edited(**changes) -> dict:
    record = yaml.safe_load(yaml.safe_dump(GOOD))
    for dotted, value in changes.items():
        keys = dotted.split("__")
        target = record
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if value is KeyError:
            del target[keys[-1]]
        else:
            target[keys[-1]] = value
    return record


def test_every_shipped_record_validates():
    records = load_corpus()
    assert len(records) >= 30
    assert sum(r.tune.games is not None for r in records) >= 15
    assert len({r.name for r in records}) == len(records)
    assert all(2014 <= r.year <= 2025 for r in records)
    for record in records:
        for key, entry in record.provenance.items():
            assert entry.source in {s.id for s in record.sources}, (record.name, key)


def test_a_shipped_block_gives_the_moves_of_its_diff():
    record = {r.name: r for r in load_corpus()}["2023-shallow-pruning-6"]
    moves = record.moves()
    # fpcEvalOffset 188 -> 239 over SetRange(0, 394): c_end 19.7
    assert moves["fpcEvalOffset"] == pytest.approx((239 - 188) / 19.7)
    assert moves["negSeeDepthMultSq"] == 0.0


def test_the_step_provenance_says_whether_a_source_quotes_the_runs_c_end_and_r_end(tmp_path):
    """A block's step is quoted or inferred (its own provenance entry, required with a
    block); a record without a block has no step entry and is not step-quoted."""
    assert load_record(write(tmp_path, GOOD)).step_quoted
    inferred = edited(provenance__step={"status": "inferred", "source": "c", "note": "tune.cpp"})
    assert not load_record(write(tmp_path, inferred)).step_quoted
    no_block = edited(provenance__block=KeyError, provenance__step=KeyError)
    no_block["name"] = "2020-no-block"
    assert not load_record(write(tmp_path, no_block, block=None)).step_quoted
    stray = edited(provenance__block=KeyError)  # a step entry without a block
    stray["name"] = "2020-stray-step"
    with pytest.raises(CorpusError, match="field provenance.step = .*names no non-null field"):
        load_record(write(tmp_path, stray, block=None))
    shipped = {r.name: r.step_quoted for r in load_corpus()}
    assert shipped["2016-shelter-storm"] and shipped["2018-king-pawn-2m"]
    assert not shipped["2024-fail-low-bonus"] and not shipped["2015-king-safety-spsa"]


def test_moves_of_a_hand_made_record(tmp_path):
    record = load_record(write(tmp_path, GOOD))
    assert record.moves() == {"a": pytest.approx(3.0), "b": pytest.approx(-1.25)}
    assert record.median_abs_move() == pytest.approx(2.125)
    assert record.verification[0].score_elo == pytest.approx(
        -400 * __import__("math").log10(10 / 6 - 1)
    )


@pytest.mark.parametrize(
    ("changes", "field", "value"),
    [
        ({"tune__games": "many"}, "tune.games", "'many'"),
        ({"sources": []}, "sources", "[]"),
        ({"provenance__games__source": "nowhere"}, "provenance.games.source", "'nowhere'"),
        ({"provenance__games": KeyError}, "provenance.games", "None"),
        ({"provenance__parameters__note": KeyError}, "provenance.parameters.note", "None"),
        ({"provenance__step": KeyError}, "provenance.step", "None"),
        ({"provenance__step__status": "guessed"}, "provenance.step.status", "'guessed'"),
        ({"kind": "magic"}, "kind", "'magic'"),
        ({"verification__0__games": 11}, "verification[0].games", "11"),
        ({"verification__0__sprt": None}, "verification[0].sprt", "None"),
        ({"parameters__1__start": -41}, "parameters[1].start", "-41.0"),
        ({"name": "2020-other"}, "name", "'2020-other'"),
        ({"tune__colour": "red"}, "tune.colour", "'red'"),
    ],
)
def test_a_malformed_record_is_refused_naming_file_field_and_value(tmp_path, changes, field, value):
    record = edited(**changes)
    path = tmp_path / "2020-hand-made.yaml"
    path.write_text(yaml.safe_dump(record, sort_keys=False))
    path.with_suffix(".block").write_text(BLOCK)
    with pytest.raises(CorpusError) as error:
        load_record(path)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: field {field} = {value}:"), message


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("a,100,0,200,10,0.002\nb,-90,-80,0,4,0.002\n", "line 2 (b): field start = -90"),
        ("a,100,0,200,10\n", "line 1 ('a,100,0,200,10'): has 5 comma-separated fields"),
        ("a,100,0,200,x,0.002\n", "field c_end = 'x' is not a finite number"),
    ],
)
def test_a_bad_block_line_is_refused_naming_line_field_and_value(tmp_path, block, expected):
    path = write(tmp_path, GOOD, block)
    with pytest.raises(CorpusError) as error:
        load_record(path)
    assert str(error.value).startswith(f"{path.with_suffix('.block')}: ")
    assert expected in str(error.value)


def test_a_block_without_its_record_is_refused(tmp_path):
    (tmp_path / "2020-orphan.block").write_text(BLOCK)
    with pytest.raises(CorpusError, match="2020-orphan.block: a block without its record"):
        load_corpus(tmp_path)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "spsa_bench", "tunes", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_tunes_list_and_show_end_to_end(tmp_path):
    listing = cli("list")
    assert listing.returncode == 0, listing.stderr
    names = sorted(p.stem for p in DATA.glob("*.yaml"))
    rows = [line.split()[0] for line in listing.stdout.splitlines()[1 : 1 + len(names)]]
    assert sorted(rows) == names
    show = cli("show", "2023-shallow-pruning-6")
    assert show.returncode == 0, show.stderr
    assert "fpcEvalOffset                      188       239  +2.59" in show.stdout
    assert "fpcEvalOffset,188,0,394,19.7,0.002" in show.stdout
    write(tmp_path, GOOD)
    own = cli("--corpus", str(tmp_path), "show", "2020-hand-made")
    assert own.returncode == 0 and "+3.00" in own.stdout and "-1.25" in own.stdout


def test_tunes_show_unknown_name_is_one_line_with_close_matches():
    result = cli("show", "2023-shallow-pruning")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert (
        "no tune named '2023-shallow-pruning'; did you mean 2023-shallow-pruning-6" in result.stderr
    )


def test_tunes_refuses_a_malformed_corpus_with_exit_2(tmp_path):
    write(tmp_path, edited(kind="magic"))
    result = cli("--corpus", str(tmp_path), "list")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "2020-hand-made.yaml: field kind = 'magic'" in result.stderr
