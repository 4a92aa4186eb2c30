"""Hostile input, round 2 (issue 33): the planner, parameter blocks, the replay's
non-finite message and ``tune``. Each case runs the command line with the exact input
of the issue and asserts the exit status, one line on stderr naming the flag, field,
line or file, and that no file was written or changed (names, sizes, modification
times and bytes of the directory before and after)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hostile_helpers import snapshot

from spsa_bench.cli.main import main
from spsa_bench.config.param_block import BlockError, parse_block
from spsa_bench.plan import output as plan_output

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / ".test" / "config" / "config.yaml"
BLOCK = "a,10,0,20,1,0.002\nb,100,0,200,10,0.002\n"
#: The smallest plan: one setting of the search, 4 instances, 4,000 games.
SMALL = ["--games", "4000", "--seeds", "4", "--c-scales", "1", "--r-scales", "1"]
SMALL += ["--games-scales", "1", "--quiet"]


def one_line(capsys, status: int, argv: list[str], *words: str) -> str:
    """Run ``argv``: exit ``status``, exactly one line on stderr holding ``words``."""
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's refusal of a flag
        code = stop.code
    assert code == status
    err = capsys.readouterr().err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and err.endswith("\n"), err
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------ class 2: the planner's files


@pytest.mark.parametrize("alias", ["same", "symlink", "hardlink", "dotted"])
def test_plan_refuses_an_output_that_is_its_input(tmp_path, capsys, monkeypatch, alias):
    """``spsa-bench plan d/plan.md --output d`` would overwrite its own block: refused,
    whether the block is named directly, through a symlink, a hard link or ``d/./``."""
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "plan.md").write_text(BLOCK)
    params = {"same": "d/plan.md", "dotted": "d/./plan.md"}.get(alias, "d/block.txt")
    if alias == "symlink":
        (folder / "block.txt").symlink_to("plan.md")
    elif alias == "hardlink":
        os.link(folder / "plan.md", folder / "block.txt")
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    line = one_line(capsys, 2, ["plan", params, "--output", "d", *SMALL], "--output", "input")
    assert "plan.md" in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("empty", ["", "  "])
def test_plan_refuses_an_empty_output_directory(tmp_path, capsys, monkeypatch, empty):
    """``--output ''`` would write into the working directory: refused."""
    (tmp_path / "block.txt").write_text(BLOCK)
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    one_line(capsys, 2, ["plan", "block.txt", "--output", empty, *SMALL], "--output", "empty")
    assert snapshot(tmp_path) == before


def _old_set(folder: Path) -> dict[str, bytes]:
    """A complete set of three files and its marker, written by write_set."""
    writers = {name: (lambda path, n=name: Path(path).write_text(f"old {n}")) for name in
               plan_output.OUTPUTS}  # fmt: skip
    plan_output.write_set(folder, writers)
    assert plan_output.set_is_complete(folder)
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_a_failure_while_staging_leaves_the_old_set_untouched(tmp_path):
    """A writer that fails (the figure, after plan.md and plan.nc are staged) leaves the
    old set byte for byte, still complete, and no staging directory."""
    folder = tmp_path / "out"
    old = _old_set(folder)

    def fail(path):
        raise OSError("disk full")

    writers = {
        "plan.md": lambda p: Path(p).write_text("new"),
        "plan.nc": lambda p: Path(p).write_text("new"),
    }
    with pytest.raises(OSError, match="disk full"):
        plan_output.write_set(folder, {**writers, "plan.png": fail})
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == old
    assert plan_output.set_is_complete(folder)


def test_an_interrupted_commit_never_leaves_a_mixed_set_marked_complete(tmp_path, monkeypatch):
    """Killed between two renames (a new plan.md beside an old plan.png): the marker is
    gone, so the directory does not claim to hold one plan."""
    folder = tmp_path / "out"
    _old_set(folder)
    real_replace = os.replace

    def interrupted(source, target):
        if Path(target).name == "plan.png":
            raise KeyboardInterrupt
        return real_replace(source, target)

    monkeypatch.setattr(plan_output.os, "replace", interrupted)
    writers = {name: (lambda path, n=name: Path(path).write_text(f"new {n}")) for name in
               plan_output.OUTPUTS}  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        plan_output.write_set(folder, writers)
    assert (folder / "plan.md").read_text() == "new plan.md"
    assert (folder / "plan.png").read_text() == "old plan.png"
    assert not (folder / plan_output.MARKER).exists()
    assert not plan_output.set_is_complete(folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted(plan_output.OUTPUTS)


def test_a_killed_writers_staging_directory_is_removed_by_the_next_run(tmp_path):
    """A staging directory whose writer is gone (a PID that no longer runs on this host)
    is removed; a live writer's (this process) is kept."""
    folder = tmp_path / "out"
    folder.mkdir()
    host = plan_output._HOST
    dead = folder / f".plan.{host}~{2**22 + 12345}~x.tmp"  # above the default pid_max
    live = folder / f".plan.{host}~{os.getpid()}~y.tmp"
    for stage in (dead, live):
        stage.mkdir()
        (stage / "plan.nc").write_text("partial")
    _old_set(folder)
    assert not dead.exists() and live.exists()


def test_the_plan_command_writes_a_complete_set(tmp_path, capsys):
    """The three files and plan.sha256, whose checksums match (``sha256sum -c``)."""
    (tmp_path / "block.txt").write_text(BLOCK)
    out = tmp_path / "out"
    argv = ["plan", str(tmp_path / "block.txt"), "--output", str(out), *SMALL]
    assert main(argv) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([*plan_output.OUTPUTS, "plan.sha256"])
    assert plan_output.set_is_complete(out)
    listed = (out / "plan.sha256").read_text().splitlines()
    assert [line.split("  ")[1] for line in listed] == list(plan_output.OUTPUTS)
    (out / "plan.png").write_bytes(b"tampered")
    assert not plan_output.set_is_complete(out)


# ------------------------------------------------ class 5: the search's size


def test_a_huge_search_is_refused_up_front_with_the_count_the_cap_and_an_estimate(
    tmp_path, capsys, monkeypatch
):
    """300 --c-scales values: 3,603 runs of 200 instances; refused in well under a
    second of work, naming the flags, the runs, the estimate and the cap."""
    (tmp_path / "block.txt").write_text(BLOCK)
    monkeypatch.chdir(tmp_path)
    scales = ",".join(f"{1 + i / 100:g}" for i in range(300))
    before = snapshot(tmp_path)
    start = time.perf_counter()
    line = one_line(
        capsys, 2, ["plan", "block.txt", "--c-scales", scales], "--c-scales", "3,603 runs", "cap"
    )
    assert time.perf_counter() - start < 20  # no replay ran (one takes seconds)
    assert re.search(r"estimated [\d.]+ hours, above the planner's cap of 1\.0 hours", line), line
    assert snapshot(tmp_path) == before


def test_the_default_plan_is_within_the_cap():
    from spsa_bench.plan.spec import MAX_PLAN_SECONDS, PlanSpec, check_plan_size, estimated_seconds

    for mode in ("sync", "async-fixed", "async-variable"):
        spec = PlanSpec(block_text=BLOCK, batch_mode=mode)
        check_plan_size(spec)
        assert 10 < estimated_seconds(spec) < MAX_PLAN_SECONDS / 4, mode


# ------------------------------------------------ class 3: numeric guards


def test_a_block_line_that_overflows_the_model_is_refused_naming_line_and_field(
    tmp_path, capsys, monkeypatch
):
    """``a,10,0,20,1,1e308``: the gain a = r_end c_end^2 (A + N)^alpha overflows;
    refused naming line 1 and r_end, nothing written."""
    (tmp_path / "block.txt").write_text("a,10,0,20,1,1e308\n")
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    one_line(capsys, 2, ["plan", "block.txt", *SMALL], "line 1", "r_end = 1e308", "block.txt")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("a,0,-1e308,1e308,1,0.002", "field max = 1e308"),
        ("a,10,0,20,1e200,0", "field c_end = 1e200"),
        ("a,10,0,20,1e150,1e-300", "field c_end = 1e150"),
        ("a,10,0,20,1e100,1e100", "field r_end = 1e100"),
    ],
)
def test_every_derived_quantity_of_a_block_stays_finite(line, field):
    with pytest.raises(BlockError, match=re.escape(f"line 2 (a): {field}")):
        parse_block(f"ok,1,0,2,0.1,0.002\n{line}\n")
    parse_block("a,10,0,20,1e140,1e-150\n")  # large but finite everywhere: accepted


@pytest.mark.parametrize("flag", ["--games-scales", "--c-scales", "--r-scales"])
def test_a_multiplier_of_1e308_is_refused_naming_the_flag(tmp_path, capsys, monkeypatch, flag):
    """``--games-scales 1e308`` was an OverflowError; a c_end or r_end multiplier that
    overflows the scaled block is refused naming the flags too."""
    (tmp_path / "block.txt").write_text(BLOCK)
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    argv = ["plan", "block.txt", "--seeds", "4", "--quiet", flag, "1e308"]
    one_line(capsys, 2, argv, flag, "1e+308" if flag != "--games-scales" else "1e308")
    assert snapshot(tmp_path) == before


def _config_with(tmp_path: Path, arm: str, hyper: str) -> Path:
    text = TINY.read_text()
    assert f"\n  {arm}: {{}}" in text
    config = tmp_path / "config.yaml"
    config.write_text(text.replace(f"\n  {arm}: {{}}", f"\n  {arm}: {hyper}", 1))
    return config


def _simulate(config: Path, arm: str, output: Path) -> list[str]:
    return ["simulate", "--config", str(config), "--optimizer", arm, "--batch-mode", "sync",
            "--scenario", "calibrated", "--seeds", "0-3", "--output", str(output), "--quiet"]  # fmt: skip


@pytest.mark.parametrize(
    ("arm", "hyper"),
    [("ademamix", "{lr: 1e300, alpha: 1e300}"), ("adam", "{eps: 5e-324, beta2: 0}")],
)
def test_a_non_finite_update_is_worded_with_optimizer_seed_and_arrival(
    tmp_path, capsys, monkeypatch, arm, hyper
):
    """The numpy overflow inside ``update`` no longer ends as bare numpy text: the
    replay names the optimizer, the seed and the arrival (exit 1), nothing written."""
    monkeypatch.chdir(tmp_path)
    config = _config_with(tmp_path, arm, hyper)
    before = snapshot(tmp_path)
    line = one_line(capsys, 1, _simulate(config, arm, tmp_path / "run.nc"))
    pattern = rf"optimizer '{arm}' produced a non-finite state at seed \d, arrival \d+ \(\w+"
    assert re.search(pattern, line), line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("arm", "hyper"), [("ademamix", "{lr: 1e300}"), ("adam", "{eps: 5e-324}")])
def test_extreme_but_finite_settings_run_and_write_only_finite_numbers(
    tmp_path, capsys, monkeypatch, arm, hyper
):
    """The issue's ``lr: 1e300`` and ``eps: 5e-324``: every step is clipped to the
    bounds, so the state stays finite and the run is a correct success."""
    monkeypatch.chdir(tmp_path)
    config = _config_with(tmp_path, arm, hyper)
    assert main(_simulate(config, arm, tmp_path / "run.nc")) == 0
    with xr.open_dataset(tmp_path / "run.nc") as ds:
        for name in ("theta", "elo_loss"):
            assert np.isfinite(ds[name].values).all(), name


# ------------------------------------------------ class 8: names


HOSTILE_NAMES = ["<script>alert(1)</script>", "a|b", "tick`x`", "```fence", "c_d*e*"]


def test_hostile_names_are_escaped_in_markdown_and_kept_exact_in_the_block(tmp_path, capsys):
    """Names Fishtest accepts (it keeps any text but a comma) reach plan.md escaped:
    no raw HTML, no extra table cell, and the block to paste reads back exactly."""
    block = "".join(f"{name},10,0,20,1,0.002\n" for name in HOSTILE_NAMES)
    (tmp_path / "block.txt").write_text(block)
    out = tmp_path / "out"
    assert main(["plan", str(tmp_path / "block.txt"), "--output", str(out), *SMALL]) == 0
    text = (out / "plan.md").read_text()
    pasted = re.search(r"^(`{3,})\n(.*?)\n\1$", text, re.S | re.M)
    assert "<script>" not in text.replace(pasted.group(0), "")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "alert" in line]
    header = next(line for line in text.splitlines() if line.startswith("| parameter |"))
    cells = re.compile(r"(?<!\\)\|")  # a cell boundary: an unescaped bar
    assert len(rows) == 1 and len(cells.findall(rows[0])) == len(cells.findall(header))
    assert len(pasted.group(1)) == 4  # longer than the name's ``` run
    assert parse_block(pasted.group(2)).names == tuple(HOSTILE_NAMES)


@pytest.mark.parametrize(
    ("name", "code"), [("a\x1b[31mred", "U+001B"), ("a\x00b", "U+0000"), ("a\u202eb", "U+202E")]
)
def test_names_with_control_characters_are_refused_escaped(tmp_path, capsys, name, code):
    """ANSI escapes, NUL and bidirectional overrides: refused naming the line, the name
    escaped, nothing written; the terminal never receives the raw character."""
    (tmp_path / "block.txt").write_text(f"ok,1,0,2,0.1,0.002\n{name},10,0,20,1,0.002\n")
    before = snapshot(tmp_path)
    argv = ["plan", str(tmp_path / "block.txt"), "--output", str(tmp_path / "out"), *SMALL]
    line = one_line(capsys, 2, argv, "line 2", code, repr(name))
    assert name not in line
    assert snapshot(tmp_path) == before


def test_a_leading_byte_order_mark_is_dropped():
    block = parse_block("\ufeffa,10,0,20,1,0.002\n")
    assert block.names == ("a",)
    with pytest.raises(BlockError, match="U\\+FEFF"):  # one inside the text is refused
        parse_block("a,10,0,20,1,0.002\n\ufeffb,10,0,20,1,0.002\n")


# ------------------------------------------------ classes 6 and 7: tune


@pytest.fixture
def tune_setup(tmp_path, monkeypatch):
    """A configuration with a tuning section and a matching benchmark file (the
    fixtures of tests/conftest.py); ``argv(benchmark, output_dir)``."""
    import yaml
    from conftest import tuning_benchmark as benchmark
    from conftest import tuning_config_dict as raw_config

    from spsa_bench.config.loader import resolve

    monkeypatch.chdir(tmp_path)
    raw = raw_config()
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(raw))
    bench = benchmark(np.random.default_rng(5), list(resolve(raw).optimizers))
    bench.to_netcdf(tmp_path / "benchmark.nc", engine="netcdf4")

    def argv(benchmark_path="benchmark.nc", output_dir="out") -> list[str]:
        return ["tune", "--config", "config.yaml", "--benchmark", str(benchmark_path),
                "--output-dir", str(output_dir), "--quiet"]  # fmt: skip

    return tmp_path, bench, argv


def refused_before_any_run(capsys, tmp_path, argv, *words) -> str:
    """Exit 2, one line with ``words``, in less time than one tuning run, nothing
    written or changed."""
    before = snapshot(tmp_path)
    start = time.perf_counter()
    line = one_line(capsys, 2, argv, *words)
    assert time.perf_counter() - start < 10
    assert snapshot(tmp_path) == before
    return line


def test_tune_refuses_a_missing_benchmark_up_front(tune_setup, capsys):
    tmp_path, _, argv = tune_setup
    refused_before_any_run(capsys, tmp_path, argv("missing.nc"), "--benchmark", "missing.nc")


def test_tune_refuses_a_truncated_benchmark_up_front(tune_setup, capsys):
    tmp_path, _, argv = tune_setup
    data = (tmp_path / "benchmark.nc").read_bytes()
    (tmp_path / "truncated.nc").write_bytes(data[: len(data) // 2])
    refused_before_any_run(capsys, tmp_path, argv("truncated.nc"), "--benchmark", "truncated.nc")


@pytest.mark.parametrize("wrong", ["text", "no_elo_loss", "missing_arm", "tuning_seeds"])
def test_tune_refuses_a_wrong_benchmark_up_front(tune_setup, capsys, wrong):
    tmp_path, bench, argv = tune_setup
    path = tmp_path / "wrong.nc"
    if wrong == "text":
        path.write_text("not netcdf\n")
    elif wrong == "no_elo_loss":
        bench.rename(elo_loss="elo").to_netcdf(path, engine="netcdf4")
    elif wrong == "missing_arm":
        bench.isel(optimizer=slice(1, None)).to_netcdf(path, engine="netcdf4")
    else:
        bench.assign_coords(seed=[998, 999, 1000, 1001]).to_netcdf(path, engine="netcdf4")
    refused_before_any_run(capsys, tmp_path, argv(path), "--benchmark", "wrong.nc")


def test_tune_refuses_a_fifo_benchmark_without_blocking(tune_setup, capsys):
    tmp_path, _, argv = tune_setup
    os.mkfifo(tmp_path / "fifo.nc")
    refused_before_any_run(capsys, tmp_path, argv("fifo.nc"), "--benchmark", "not a regular file")


def test_tune_refuses_an_output_dir_that_is_a_file_up_front(tune_setup, capsys):
    tmp_path, _, argv = tune_setup
    (tmp_path / "out").write_text("a file\n")
    refused_before_any_run(capsys, tmp_path, argv(output_dir="out"), "--output-dir", "out")


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_tune_refuses_a_non_finite_benchmark_seed_naming_file_cell_and_seed(
    tune_setup, capsys, bad
):
    """The report's mean used to drop the seed (n 3 -> 2) silently; now the file, the
    cell and the seed are named before any run."""
    tmp_path, bench, argv = tune_setup
    arm = str(bench["optimizer"].values[0])
    bench["elo_loss"].loc[{"optimizer": arm, "batch_mode": "sync", "scenario": "mixed",
                           "seed": 2}] = bad  # fmt: skip
    bench.to_netcdf(tmp_path / "bad.nc", engine="netcdf4")
    line = refused_before_any_run(capsys, tmp_path, argv("bad.nc"), "--benchmark", "bad.nc")
    for word in (f"optimizer {arm!r}", "batch mode 'sync'", "scenario 'mixed'", "at seed 2"):
        assert word in line, line
