"""``spsa-bench plan --framework openbench`` as a user runs it: a separate process on
the shipped example block, and its one-line refusals (exit 2, nothing written)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tune-openbench.txt"
FISHTEST_EXAMPLE = ROOT / "examples" / "tune-stc.txt"
BIN = Path(sys.executable).parent


def plan(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [BIN / "spsa-bench", "plan", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )


def test_the_example_block_plans_as_openbench(tmp_path):
    """The shipped example (2 float and 4 int parameters) with a reduced search: the
    three files and their marker, plan.md naming OpenBench's SPSA, coupled rounding and
    the dispatch, and OpenBench's SPSA kind in every run of plan.nc."""
    from spsa_bench.results.cf import open_labelled

    done = plan(
        EXAMPLE, "--framework", "openbench", "--games", "8000", "--seeds", "6",
        "--c-scales", "1,2", "--r-scales", "1", "--games-scales", "1",
        "--output", tmp_path / "out", "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "plan.md",
        "plan.nc",
        "plan.png",
        "plan.sha256",
    ]
    text = (out / "plan.md").read_text()
    assert done.stdout == text
    assert "**OpenBench's SPSA** (A-Ratio 0.1 (A = 50 of 500 iterations)" in text
    assert "with coupled rounding" in text and "distribution **SINGLE**" in text
    assert "reporting **BULK** (one update at the end of each workload)" in text
    with open_labelled(out / "plan.nc") as ds:
        assert set(ds["arm"].values) == {"spsa-openbench"}
        assert ds["integer"].values.tolist() == [0, 0, 1, 1, 1, 1]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            [FISHTEST_EXAMPLE, "--framework", "openbench"],
            "line 1 ('futilityMult,118,0,236,11.8,0.0020'): has 6 comma-separated fields",
        ),
        ([EXAMPLE], "the block is in OpenBench's format: give --framework openbench"),
        (
            [EXAMPLE, "--framework", "openbench", "--batch-mode", "async-fixed"],
            "--batch-mode = 'async-fixed': Fishtest only",
        ),
        ([FISHTEST_EXAMPLE, "--pairs-per", "16"], "--pairs-per = 16: OpenBench only"),
    ],
)
def test_refusals_are_one_line_exit_2_and_write_nothing(tmp_path, args, message):
    done = plan(*args, "--output", tmp_path / "out", cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "out").exists() and done.stdout == ""
