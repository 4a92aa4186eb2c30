"""Hostile input and faults (issue 19): every case runs the CLI as a subprocess under
an address-space and CPU-time limit and asserts the exit status, one line on stderr
naming what is wrong, no traceback, and no file written or destroyed."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import set_key

from spsa_bench.cli.common import parse_seed_range
from spsa_bench.config.loader import ConfigError, load_config
from spsa_bench.config.safe_yaml import load_text

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / ".test" / "config" / "config.yaml"
MEMORY_LIMIT = 2 * 2**30  # bytes of address space per command
CPU_SECONDS = 60
ENTRY = [sys.executable, "-c", "import sys; from spsa_bench.cli.main import main; sys.exit(main())"]


def _limits(memory: int = MEMORY_LIMIT) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def cli(*args: str, cwd: Path, extra_limit=None) -> subprocess.CompletedProcess:
    def limits() -> None:
        _limits()
        if extra_limit:
            extra_limit()

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [*ENTRY, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limits,
    )


def refused(result, *words: str, status: int = 2) -> None:
    """Exit ``status``, one line on stderr containing ``words``, no traceback."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def tiny(tmp_path: Path, edit=None, name="config.yaml") -> Path:
    raw = yaml.safe_load(TINY.read_text())
    if edit:
        edit(raw)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw))
    return path


def simulate(config: Path, output: str, *extra: str, cwd: Path):
    return cli(
        "simulate",
        "--config",
        str(config),
        "--optimizer",
        "spsa",
        "--batch-mode",
        "sync",
        "--scenario",
        "calibrated",
        "--seeds",
        "0-1",
        "--output",
        output,
        "--quiet",
        *extra,
        cwd=cwd,
    )


def listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


# ---------------------------------------------------------------- 1. destroying files


@pytest.mark.parametrize(
    "output, words",
    [
        ("/dev/null", ("--output", "/dev/null", "not a regular file")),
        ("", ("--output", "empty path")),
        ("   ", ("--output", "empty path")),
        ("sub/", ("--output", "directory")),
        (".", ("--output", "a directory")),
    ],
)
def test_outputs_that_are_not_regular_files_are_refused_first(tmp_path, output, words):
    config = tiny(tmp_path)
    (tmp_path / "sub").mkdir()
    before = listing(tmp_path)
    result = simulate(config, output, cwd=tmp_path)
    refused(result, *words)
    assert listing(tmp_path) == before
    assert Path("/dev/null").is_char_device()


def test_the_config_itself_is_never_the_output(tmp_path):
    config = tiny(tmp_path)
    text = config.read_text()
    for output in (str(config), f"{tmp_path}/./config.yaml"):
        refused(simulate(config, output, cwd=tmp_path), "--output", "same file as the input")
    link = tmp_path / "link.nc"
    link.symlink_to(config)
    refused(simulate(config, str(link), cwd=tmp_path), "same file as the input")
    assert config.read_text() == text


def test_schedule_output_is_checked_like_simulate(tmp_path):
    config = tiny(tmp_path)
    result = cli("schedule", "--config", str(config), "--batch-mode", "sync", "--output",
                 str(config), cwd=tmp_path)  # fmt: skip
    refused(result, "--output", "same file")


# ----------------------------------------------------- 2. small inputs, huge time or memory


def _laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "text, words",
    [
        (_laughs(10), ("expands to more than",)),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", ("nested deeper than",)),
        ("a: " + "{b: " * 200 + "1" + "}" * 200 + "\n", ("nested deeper than",)),
        ("? [1, 2]\n: x\n", ("mapping key",)),
        ("? {a: 1}\n: x\n", ("mapping key",)),
        ("1: x\n", ("mapping key 1",)),
        ("a: 1\n---\nb: 2\n", ("more than one YAML document",)),
    ],
)
def test_hostile_yaml_is_refused_quickly_naming_the_file(tmp_path, text, words):
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    result = cli("list", "--config", str(config), cwd=tmp_path)
    refused(result, str(config), *words)
    assert listing(tmp_path) == ["bad.yaml"]


def test_non_utf8_config_names_file_line_and_column(tmp_path):
    config = tmp_path / "latin1.yaml"
    config.write_bytes(b"num_pairs: 10\nname: caf\xe9\n")
    refused(cli("list", "--config", str(config), cwd=tmp_path), str(config), "line 2, column 10")


def test_an_oversized_config_is_not_read(tmp_path):
    config = tmp_path / "huge.yaml"
    config.write_text("# " + "x" * 2_000_000 + "\n")
    refused(cli("list", "--config", str(config), cwd=tmp_path), str(config), "larger than")


@pytest.mark.parametrize(
    "args, words",
    [
        (("--seeds", "0-999999999"), ("--seeds", "more than the limit")),
        (("--seeds", "9007199254740992"), ("--seeds", "above the largest")),
        (("--seeds", ""), ("--seeds", "expected FIRST")),
        (("--seeds", "٣"), ("--seeds", "expected FIRST")),  # ARABIC-INDIC DIGIT THREE
        (("--seeds", "3-1"), ("--seeds", "reversed")),
        (("--seeds", "0-" + "9" * 5000), ("--seeds",)),
    ],
)
def test_seed_ranges_beyond_the_limits_are_refused(tmp_path, args, words):
    config = tiny(tmp_path)
    result = cli("simulate", "--config", str(config), "--optimizer", "spsa", "--batch-mode",
                 "sync", "--scenario", "calibrated", "--output", "x.nc", *args, cwd=tmp_path)  # fmt: skip
    refused(result, *words)
    assert listing(tmp_path) == ["config.yaml"]


def test_a_run_larger_than_the_memory_is_refused_before_it_starts(tmp_path):
    def edit(raw):
        raw["num_pairs"] = 10**9
        raw["checkpoints"] = 101

    config = tiny(tmp_path, edit)
    result = simulate(config, "out.nc", cwd=tmp_path)  # 2 seeds x 1e9 pairs: ~60 GB
    refused(result, "--seeds", "GiB of memory")
    assert not (tmp_path / "out.nc").exists()


@pytest.mark.parametrize(
    "args, flag",
    [
        (("validate", "--reports", "100000000"), "--reports"),
        (("validate", "--reports", "0"), "--reports"),
        (("validate", "--max-pairs", "-3"), "--max-pairs"),
        (("validate", "--seed", "x"), "--seed"),
        (("bench", "--seeds", "0"), "--seeds"),
        (("bench", "--seeds", "1,,2"), "--seeds"),
        (("bench", "--repeats", "0"), "--repeats"),
        (("simulate", "--optimizer"), "--optimizer"),
        (
            (
                "simulate",
                "--optimizer",
                "nope",
                "--batch-mode",
                "sync",
                "--scenario",
                "calibrated",
                "--output",
                "o.nc",
            ),
            "--optimizer = 'nope'",
        ),
        (
            (
                "simulate",
                "--optimizer",
                "spsa",
                "--batch-mode",
                "nope",
                "--scenario",
                "calibrated",
                "--output",
                "o.nc",
            ),
            "--batch-mode = 'nope'",
        ),
        (
            (
                "simulate",
                "--optimizer",
                "spsa",
                "--batch-mode",
                "sync",
                "--scenario",
                "nope",
                "--output",
                "o.nc",
            ),
            "--scenario = 'nope'",
        ),
        (("schedule", "--batch-mode", "nope", "--output", "o.nc"), "--batch-mode = 'nope'"),
        (("bench", "--optimizers", "nope"), "--optimizers = 'nope'"),
        (("bench", "--scenario", "nope"), "--scenario = 'nope'"),
        (("validate", "--optimizer", "nope"), "--optimizer = 'nope'"),
    ],
)
def test_argument_errors_are_one_line_naming_the_flag(tmp_path, args, flag):
    config = tiny(tmp_path)
    extra = ("--output", str(tmp_path / "v")) if args[0] == "validate" else ()
    result = cli(args[0], "--config", str(config), *extra, *args[1:], cwd=tmp_path)
    refused(result, flag)
    assert listing(tmp_path) == ["config.yaml"]


# --------------------------------------------------- 3 and 4. numbers the model cannot hold


CAL = ("scenarios", "calibrated")
ASYNC = ("batch_modes", "async-fixed")


@pytest.mark.parametrize(
    "edit, words",
    [
        (set_key((*CAL, "c_fraction"), 5e-324), ("c_fraction",)),
        (set_key((*CAL, "groups", 0, "theta_start"), 1e200), ("scenarios.calibrated",)),
        (set_key((*ASYNC, "game_duration"), {"median": 180, "p95": 1e30}), ("game_duration.p95",)),
        (set_key((*ASYNC, "speed"), {"min": 5e-324, "max": 1}), ("speed.min",)),
        (set_key(("seeds", "first"), 2**63), ("seeds.first",)),
        (set_key(("seeds", "count"), 10**9), ("seeds.count",)),
        (set_key(("seeds", "count"), 1e9), ("seeds.count",)),
        (set_key(("entropy",), 2**70), ("entropy",)),
        (set_key(("checkpoints",), 2002), ("checkpoints = 2002", "num_pairs = 2000")),
    ],
)
def test_settings_the_model_cannot_represent_are_refused_naming_the_key(tmp_path, edit, words):
    config = tiny(tmp_path, edit)
    result = simulate(config, "out.nc", cwd=tmp_path)
    refused(result, "config error", *words)
    assert listing(tmp_path) == ["config.yaml"]


TUNE = ("scenarios", "tune")


def _budget_games(games):
    def mutate(raw):
        del raw["num_pairs"]
        raw["games"] = games

    return mutate


@pytest.mark.parametrize(
    "edit, words",
    [
        (set_key(("games",), 4000), ("num_pairs, games", "not both")),
        (_budget_games(2500), ("games = 2500", "multiples of 1,000")),
        (_budget_games(10**7), ("games = 10000000",)),
        (set_key(TUNE, {"fishtest_params": "a,1,0,2,1,0\nb,1,0,2,x,0\n"}), ("line 2", "field c_end")),
        (set_key(TUNE, {"fishtest_params_file": "missing.txt"}), ("fishtest_params_file", "cannot read")),
        (set_key(TUNE, {"synthetic_tune": {"params": 4}, "fishtest_params": "a,1,0,2,1,0"}),
         ("scenarios.tune", "exactly one")),
        (set_key(TUNE, {"synthetic_tune": {"params": 4}, "truth": {"interaction": 2}}),
         ("scenarios.tune.truth.interaction",)),
        (set_key(TUNE, {"synthetic_tune": {"params": 4}, "truth": {"elo_per_c_end": {"min": 1, "max": 0.1}}}),
         ("scenarios.tune.truth.elo_per_c_end.min",)),
        (set_key(TUNE, {"synthetic_tune": {"params": 4}, "peak_elo": 0}),
         ("scenarios.tune.peak_elo",)),
    ],
)  # fmt: skip
def test_bad_budgets_and_tune_scenarios_are_refused_naming_the_key(tmp_path, edit, words):
    config = tiny(tmp_path, edit)
    refused(cli("list", "--config", str(config), cwd=tmp_path), "config error", *words)
    assert listing(tmp_path) == ["config.yaml"]


def test_a_config_with_tune_scenarios_lists_their_kind(tmp_path):
    (tmp_path / "block.txt").write_text("A,10,0,20,1,0.002\nB,5,0,10,0.5,0.002\n")

    def edit(raw):
        raw["scenarios"]["synth"] = {"synthetic_tune": {"params": 64}, "description": "d"}
        raw["scenarios"]["file"] = {"fishtest_params_file": "block.txt"}

    result = cli("list", "--config", str(tiny(tmp_path, edit)), cwd=tmp_path / "..")
    assert result.returncode == 0, result.stderr
    assert "synth              parameter block, 64 params" in result.stdout
    assert "file               parameter block, 2 params" in result.stdout
    assert "calibrated         groups, 8 params" in result.stdout


def test_tiny_config_uses_the_modes_and_budget_the_cases_assume():
    config = load_config(TINY)
    assert "async-fixed" in config.batch_modes and config.num_pairs == 2000


def test_yaml_12_floats_are_numbers():
    assert load_text("eps: 1e-8\nb: 1.5E+3\nc: .5e1\nd: -2e2\ne: 1_0e1\n") == {
        "eps": 1e-8,
        "b": 1500.0,
        "c": 5.0,
        "d": -200.0,
        "e": 100.0,
    }
    assert load_text("v: 1e\nw: e5\nx: 1.0.0\n") == {"v": "1e", "w": "e5", "x": "1.0.0"}


def test_a_finished_run_is_finite_and_written(tmp_path):
    config = tiny(tmp_path)
    result = simulate(config, "out.nc", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    import xarray as xr

    with xr.open_dataset(tmp_path / "out.nc") as ds:
        for name in ("elo", "elo_loss", "final_elo"):
            if name in ds:
                assert np.all(np.isfinite(ds[name].values)), name


def test_a_non_finite_run_is_refused_before_writing(tmp_path, monkeypatch):
    from spsa_bench.engine import simulate as engine

    config = load_config(tiny(tmp_path))
    run = engine.simulate_run(config, optimizer="spsa", batch_mode="sync", scenario="calibrated",
                              seeds=range(2))  # fmt: skip
    run["elo_loss"][0, -1] = np.inf
    with pytest.raises(ValueError, match="elo_loss has 1 non-finite"):
        engine.check_finite_run(run, "spsa/sync/calibrated")
    run["elo_loss"][0, -1] = 1.0
    engine.check_finite_run(run, "ok")  # NaN simulated_duration of a sync run is allowed


# ---------------------------------------------------------------- 5. accepted wrongly


def test_a_schedule_file_that_disagrees_with_the_config_is_refused(tmp_path):
    from spsa_bench.dispatch.storage import read_schedule
    from spsa_bench.engine.simulate import make_schedule
    from spsa_bench.results.datasets import write_schedule

    config = load_config(tiny(tmp_path))
    mode = config.batch_mode("async-fixed")
    path = tmp_path / "schedule.nc"
    write_schedule(make_schedule(config, mode, range(2)), path, batch_mode=mode.name,
                   settings_json="{}")  # fmt: skip
    read_schedule(path, num_pairs=config.num_pairs, num_workers=mode.workers, seeds=range(2))
    with pytest.raises(ValueError, match=f"{path}: num_pairs"):
        read_schedule(path, num_pairs=config.num_pairs + 1)
    with pytest.raises(ValueError, match=f"{path}: num_workers"):
        read_schedule(path, num_workers=mode.workers + 1)
    with pytest.raises(ValueError, match=f"{path}: seeds"):
        read_schedule(path, seeds=range(1, 3))
    garbage = tmp_path / "garbage.nc"
    garbage.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    with pytest.raises(ValueError, match=f"{garbage}: not a readable schedule file"):
        read_schedule(garbage)


def test_non_ascii_and_empty_seed_ranges_are_refused_in_the_parser():
    for text in ("", " ", "１-２", "0x1", "1-", "-1"):
        with pytest.raises(ConfigError, match="--seeds"):
            parse_seed_range(text)
    assert parse_seed_range(" 3 - 5 ") == range(3, 6)


# ---------------------------------------------------------------- 6. concurrency


def test_a_concurrent_writers_temporary_file_survives_the_clean_up(tmp_path):
    from spsa_bench.results.atomic import atomic_write

    target = tmp_path / "run.nc"
    started, release = threading.Event(), threading.Event()
    seen = {}

    def slow(tmp: str) -> None:
        Path(tmp).write_text("first")
        seen["tmp"] = tmp
        started.set()
        release.wait(10)

    first = threading.Thread(target=atomic_write, args=(target, slow))
    first.start()
    started.wait(10)
    atomic_write(target, lambda tmp: Path(tmp).write_text("second"))  # cleans stale only
    assert Path(seen["tmp"]).exists()  # the live writer's temporary file is untouched
    release.set()
    first.join()
    assert target.read_text() == "first" and listing(tmp_path) == ["run.nc"]


def test_two_identical_simulations_to_one_output_both_succeed(tmp_path):
    config = tiny(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    args = [*ENTRY, "simulate", "--config", str(config),
            "--optimizer", "spsa", "--batch-mode", "async-fixed", "--scenario", "calibrated",
            "--seeds", "0-3", "--output", "out.nc", "--quiet"]  # fmt: skip
    runs = [
        subprocess.Popen(
            args, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True, preexec_fn=_limits
        )  # fmt: skip
        for _ in range(2)
    ]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
    assert listing(tmp_path) == ["config.yaml", "out.nc"]


# ---------------------------------------------------------------- 7. faults and messages


def test_a_full_disk_is_one_line_and_leaves_no_file(tmp_path):
    config = tiny(tmp_path)

    def tiny_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    result = cli("simulate", "--config", str(config), "--optimizer", "spsa", "--batch-mode",
                 "sync", "--scenario", "calibrated", "--seeds", "0-1", "--output", "out.nc",
                 cwd=tmp_path, extra_limit=tiny_files)  # fmt: skip
    refused(result, "out.nc", "cannot write", status=1)
    assert listing(tmp_path) == ["config.yaml"]


def test_a_full_disk_keeps_the_previous_file(tmp_path):
    config = tiny(tmp_path)
    assert simulate(config, "out.nc", cwd=tmp_path).returncode == 0
    before = (tmp_path / "out.nc").read_bytes()

    def tiny_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    result = cli("simulate", "--config", str(config), "--optimizer", "spsa", "--batch-mode",
                 "sync", "--scenario", "calibrated", "--seeds", "0-3", "--output", "out.nc",
                 "--force", cwd=tmp_path, extra_limit=tiny_files)  # fmt: skip
    refused(result, "out.nc", status=1)
    assert (tmp_path / "out.nc").read_bytes() == before
    assert listing(tmp_path) == ["config.yaml", "out.nc"]


def test_an_unreadable_config_is_one_line(tmp_path):
    missing = tmp_path / "nope.yaml"
    refused(cli("list", "--config", str(missing), cwd=tmp_path), str(missing), "cannot read")
    refused(cli("list", "--config", str(tmp_path), cwd=tmp_path), str(tmp_path))


def test_a_successful_run_prints_no_warning(tmp_path):
    config = tiny(tmp_path)
    result = simulate(config, "out.nc", cwd=tmp_path)
    assert result.returncode == 0 and "Warning" not in result.stderr


# ---------------------------------------------------------------- 8. which code runs


def test_the_job_script_refuses_a_package_from_another_checkout():
    script = (REPO / "workflow" / "scripts" / "simulate.py").read_text()
    assert "not from this repository's" in script
    assert script.index("sys.path.insert(0, str(SRC))") < script.index("import spsa_bench")


# ------------------------------------------------------- 2 and 8 again: through the workflow


def workflow(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``snakemake -n`` in ``cwd`` under the same limits (4 GiB: Snakemake's own imports)."""

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    command = [str(Path(sys.executable).parent / "snakemake"), "-n", "--cores", "1"]
    return subprocess.run(
        [*command, "--snakefile", str(REPO / "Snakefile"), "--directory", str(cwd), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: _limits(2 * MEMORY_LIMIT),
    )


def test_the_workflow_reads_config_configfile_with_the_bounded_loader(tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_laughs(10))
    result = workflow("--config", f"configfile={bomb}", cwd=tmp_path)
    text = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"invalid configuration: {bomb}" in text and "expands to more than" in text, text
    assert "Traceback" not in text
    assert listing(tmp_path) == ["bomb.yaml"] or ".snakemake" in listing(tmp_path)
    assert not (tmp_path / "results").exists()


def test_the_workflow_refuses_unrepresentable_settings_before_any_job(tmp_path):
    config = tiny(tmp_path, set_key((*CAL, "c_fraction"), 5e-324))
    result = workflow("--config", f"configfile={config}", cwd=tmp_path)
    text = result.stdout + result.stderr
    assert result.returncode != 0 and "scenarios.calibrated.c_fraction" in text, text
    assert not (tmp_path / "results").exists()


def test_the_workflow_accepts_yaml_12_floats_through_configfile(tmp_path):
    config = tmp_path / "config.yaml"
    text = TINY.read_text().replace("  adam: {}", "  adam: {eps: 1e-8}")
    assert "eps: 1e-8" in text
    config.write_text(text)
    assert load_config(config).optimizer("adam").hyper.eps == 1e-8
    result = workflow("--config", f"configfile={config}", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_derived_gains_are_inspected_for_non_finite_values():
    from spsa_bench.config.derived import check_gains, first_non_finite
    from spsa_bench.engine.simulate import make_problem
    from spsa_bench.optimizers import build
    from spsa_bench.optimizers.base import Optimizer

    config = load_config(TINY)
    view = make_problem(config, "calibrated").view
    for arm in config.optimizers.values():
        assert first_non_finite(build(arm.kind, view, arm.hyper, name=arm.name)) is None
    gains = np.array([1.0, np.inf])

    def update(state, report):
        return state * gains

    broken = Optimizer("broken", init=int, perturbation=abs, update=update, export=abs)
    assert first_non_finite(broken) == "gains"
    with pytest.raises(ConfigError, match="optimizers.broken: its derived gains is not finite"):
        check_gains(broken, "broken")
