"""Reliability: bad input is refused cleanly, failed writes leave nothing, guards hold.

* Every bad configuration of one table goes through ``spsa-bench simulate``, and
  a representative part of it through the Snakemake workflow (a real run with
  ``--cores 1`` in a temporary working directory, not a dry run): each must end
  with a non-zero status and one message line naming the key and the value, and
  write nothing under ``results/``.
* Truncated or foreign NetCDF files given to the aggregation fail naming the file.
* ``write_atomic``: a failure inside the write leaves neither the final file
  nor a temporary one; a temporary file left by a killed write is cleared.
* Numerical guards through a whole ``simulate``: Elo differences far beyond the
  noise model's ±599 clip, and a NaN state that stops the run naming optimizer,
  seed and event. The schedule-free fast iterate ``z`` is never clamped, for random
  hyperparameters.
* Safe loading: no ``eval``/``exec`` of configuration text anywhere.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import spsa_bench.optimizers as optimizers_pkg
from spsa_bench import workflow as grid
from spsa_bench.cli.main import main
from spsa_bench.config.loader import ConfigError, load_config, resolve
from spsa_bench.config.schema import NAME_PATTERN
from spsa_bench.engine.simulate import make_problem
from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers import REGISTRY, hyper_from_dict
from spsa_bench.optimizers.base import Report
from spsa_bench.results.atomic import write_atomic
from spsa_bench.results.combine import combine_runs
from spsa_bench.results.datasets import open_run

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / ".test" / "config" / "config.yaml"
BIN = Path(sys.executable).parent


def tiny() -> dict:
    return yaml.safe_load(TINY.read_text())


# ------------------------------------------------------------------ the table of bad inputs


def setting(*path_and_value):
    *path, value = path_and_value

    def edit(raw):
        node = raw
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return yaml.safe_dump(raw, sort_keys=False)

    return edit


def removing(*path):
    def edit(raw):
        node = raw
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
        return yaml.safe_dump(raw, sort_keys=False)

    return edit


def renaming(*path_and_new):
    *path, new = path_and_new

    def edit(raw):
        node = raw
        for key in path[:-1]:
            node = node[key]
        node[new] = node.pop(path[-1])
        return yaml.safe_dump(raw, sort_keys=False)

    return edit


def text(transform):
    """An edit of the YAML text itself (duplicate keys, tags): what a dict cannot hold."""
    return lambda raw: transform(yaml.safe_dump(raw, sort_keys=False))


def group(index, **values):
    def edit(raw):
        raw["scenarios"]["calibrated"]["groups"][index].update(values)
        return yaml.safe_dump(raw, sort_keys=False)

    return edit


@dataclasses.dataclass(frozen=True)
class Bad:
    id: str
    edit: object  # raw config -> YAML text, or None for the tiny config unchanged
    needles: tuple[str, ...]  # what the message line must contain: the key and the value
    flags: tuple[str, ...] = ()  # simulate options replacing the defaults (CLI only)
    workflow: bool = False  # also run through the Snakemake workflow


CAL = ("scenarios", "calibrated")
AF = ("batch_modes", "async-fixed")

BAD = [
    # unknown names
    Bad(
        "unknown-optimizer-flag",
        None,
        ("--optimizer = 'newton'", "not an arm, sweep or optimizer kind"),
        ("--optimizer", "newton"),
    ),
    Bad(
        "unknown-batch-mode-flag",
        None,
        ("--batch-mode = 'warp': not a batch mode of this config",),
        ("--batch-mode", "warp"),
    ),
    Bad(
        "unknown-scenario-flag",
        None,
        ("--scenario = 'moon': not a scenario of this config",),
        ("--scenario", "moon"),
    ),
    Bad(
        "unknown-optimizer-kind",
        setting("optimizers", "mine", {"kind": "newton"}),
        ("optimizers.mine.kind", "newton"),
        workflow=True,
    ),
    Bad(
        "unknown-optimizer-name", setting("optimizers", "newton", {}), ("optimizers.newton", "kind")
    ),
    Bad(
        "unknown-batch-kind",
        setting("batch_modes", "sync", "batch", "lumpy"),
        ('batch_modes.sync.batch = "lumpy"',),
    ),
    Bad("unknown-signal", setting("signal", "halved"), ('signal = "halved"',)),
    # misspelled and missing keys
    Bad("misspelled-top-key", renaming("num_pairs", "num_pair"), ("num_pair'",), workflow=True),
    Bad(
        "misspelled-nested-key",
        renaming(*CAL, "c_elo_gap", "c_elo_gapp"),
        ("scenarios.calibrated", "c_elo_gapp"),
    ),
    Bad(
        "misspelled-hyper",
        setting("optimizers", "spsa", "r_ned", 0.1),
        ("optimizers.spsa", "r_ned"),
    ),
    Bad("missing-seeds", removing("seeds"), ("'seeds' is a required property",)),
    Bad(
        "missing-peak-elo",
        removing(*CAL, "peak_elo"),
        ("scenarios.calibrated", "'peak_elo' is a required property"),
        workflow=True,
    ),
    # wrong types
    Bad("budget-string", setting("num_pairs", "many"), ('num_pairs = "many"',)),
    Bad("budget-bool", setting("num_pairs", True), ("num_pairs = true",)),
    Bad("optimizers-list", setting("optimizers", ["spsa"]), ('optimizers = ["spsa"]',)),
    Bad("not-a-mapping", lambda raw: "- 1\n- 2\n", ("<top level> = [1, 2]",)),
    # budgets and batch sizes
    Bad("budget-zero", setting("num_pairs", 0), ("num_pairs = 0",), workflow=True),
    Bad("budget-negative", setting("num_pairs", -5), ("num_pairs = -5",)),
    Bad("budget-non-integer", setting("num_pairs", 100.5), ("num_pairs = 100.5",)),
    Bad(
        "batch-size-zero",
        setting("batch_modes", "sync", "batch_size", 0),
        ("batch_modes.sync.batch_size = 0",),
    ),
    Bad(
        "batch-size-over-budget",
        setting("batch_modes", "sync", "batch_size", 5000),
        ("batch_modes.sync.batch_size = 5000", "num_pairs = 2000"),
        workflow=True,
    ),
    # negative, NaN, infinite, overflowing
    Bad(
        "gap-negative", setting(*CAL, "c_elo_gap", -2.0), ("scenarios.calibrated.c_elo_gap = -2.0",)
    ),
    Bad("w-true-negative", group(0, w_true=-1.0), ("groups[0].w_true = -1.0",)),
    Bad("w-true-nan", group(0, w_true=math.nan), ("groups[0].w_true = nan",), workflow=True),
    Bad("theta-inf", group(0, theta_start=math.inf), ("groups[0].theta_start = inf",)),
    Bad("peak-minus-inf", setting(*CAL, "peak_elo", -math.inf), ("calibrated.peak_elo = -inf",)),
    Bad(
        "bowl-overflows",
        group(0, theta_start=1e200, theta_peak=-1e200),
        ("groups[0].theta_start = 1e+200", "overflows"),
    ),
    # semantic checks
    Bad(
        "w-dev-zero-active", group(0, w_dev=0.0), ("groups[0].w_dev = 0.0", "active"), workflow=True
    ),
    Bad(
        "theta-bounds-reversed",
        group(0, theta_min=2000.0, theta_max=0.0),
        ("groups[0].theta_min = 2000.0", "theta_max = 0.0"),
        workflow=True,
    ),
    Bad(
        "start-equals-peak", setting(*CAL, "start_elo", 0.0), ("start_elo = 0.0", "peak_elo = 0.0")
    ),
    Bad("start-above-peak", setting(*CAL, "start_elo", 3.0), ("calibrated.start_elo = 3.0",)),
    Bad(
        "concurrency-no-power-of-two",
        setting(*AF, "concurrency", {"min": 5, "max": 7}),
        ("batch_modes.async-fixed.concurrency = {min: 5, max: 7}", "power of two"),
        workflow=True,
    ),
    Bad(
        "speed-min-above-max",
        setting(*AF, "speed", {"min": 2.0, "max": 1.0}),
        ("batch_modes.async-fixed.speed.min = 2.0", "speed.max = 1.0"),
    ),
    Bad(
        "p95-below-median",
        setting(*AF, "game_duration", {"median": 180, "p95": 100}),
        ("batch_modes.async-fixed.game_duration.p95 = 100", "median = 180"),
    ),
    Bad(
        "p95-equals-median",
        setting(*AF, "game_duration", {"median": 180, "p95": 180}),
        ("batch_modes.async-fixed.game_duration.p95 = 180",),
    ),
    # seeds
    Bad("seeds-reversed-flag", None, ("--seeds = '9-3'", "reversed"), ("--seeds", "9-3")),
    Bad("seeds-count-zero", setting("seeds", "count", 0), ("seeds.count = 0",), workflow=True),
    Bad("seeds-per-job-zero", setting("seeds", "per_job", 0), ("seeds.per_job = 0",)),
    # duplicate names
    Bad(
        "duplicate-yaml-key",
        text(lambda t: t + "num_pairs: 50\n"),
        ("duplicate key 'num_pairs'",),
        workflow=True,
    ),
    Bad(
        "duplicate-optimizer-arm",
        text(lambda t: t.replace("optimizers:\n", "optimizers:\n  spsa:\n    r_end: 0.01\n", 1)),
        ("duplicate key 'spsa'",),
    ),
    Bad(
        "duplicate-group-name",
        group(1, name="w2-low"),
        ("groups[1].name = 'w2-low'", "duplicate"),
    ),
    # names that would become paths
    Bad("scenario-name-dotdot", renaming("scenarios", "mixed", ".."), ('scenarios: name ".."',)),
    Bad(
        "optimizer-name-slash",
        setting("optimizers", "a/b", {"kind": "spsa"}),
        ('optimizers: name "a/b"',),
        workflow=True,
    ),
    Bad(
        "batch-mode-name-parent",
        renaming("batch_modes", "async-fixed", "../x"),
        ('batch_modes: name "../x"',),
    ),
    Bad(
        "name-trailing-newline",
        renaming("scenarios", "mixed", "mixed\n"),
        ('scenarios: name "mixed\\n"',),
    ),
    Bad(
        "scenario-flag-path",
        None,
        ("--scenario = '../x': not a scenario of this config",),
        ("--scenario", "../x"),
    ),
    # learning rates and betas
    Bad(
        "lr-negative",
        setting("optimizers", "spsa", "r_end", -0.1),
        ("optimizers.spsa.r_end = -0.1",),
    ),
    Bad(
        "sf-lr-negative",
        setting("optimizers", "sf-sgd", "lr", -0.5),
        ("optimizers.sf-sgd.lr = -0.5",),
    ),
    Bad(
        "beta-one",
        setting("optimizers", "adam", "beta1", 1.0),
        ("optimizers.adam.beta1 = 1.0",),
        workflow=True,
    ),
    Bad(
        "beta-above-one",
        setting("optimizers", "ademamix", "beta3", 1.2),
        ("optimizers.ademamix.beta3 = 1.2",),
    ),
    Bad(
        "beta-negative",
        setting("optimizers", "sf-adam", "beta2", -0.1),
        ("optimizers.sf-adam.beta2 = -0.1",),
    ),
    # unsafe or broken YAML
    Bad("not-yaml", lambda raw: "num_pairs: [1\n", ("not valid YAML",)),
    Bad(
        "python-tag",
        text(lambda t: t.replace("targets:", "targets: !!python/tuple", 1)),
        ("not valid YAML", "python/tuple"),
        workflow=True,
    ),
    Bad(
        "yte-template",
        text(
            lambda t: "__use_yte__: true\n" + t.replace("num_pairs: 2000", "num_pairs: ?1000+1000")
        ),
        ("__use_yte__",),
        workflow=True,
    ),
]
WORKFLOW_BAD = [case for case in BAD if case.workflow]


def write_case(case: Bad, folder: Path) -> Path:
    path = folder / "bad.yaml"
    path.write_text(case.edit(tiny()) if case.edit else TINY.read_text())
    return path


def simulate_argv(config: Path, output: Path, flags=()) -> list[str]:
    options = {
        "--config": str(config),
        "--optimizer": "spsa",
        "--batch-mode": "async-fixed",
        "--scenario": "calibrated",
        "--seeds": "0-1",
        "--output": str(output),
    }
    options.update(zip(flags[::2], flags[1::2], strict=True))
    return ["simulate", *(item for pair in options.items() for item in pair), "--quiet"]


def assert_nothing_written(work: Path, allowed=("bad.yaml",)):
    results = work / "results"
    assert not results.exists() or not any(results.rglob("*")), sorted(results.rglob("*"))
    assert sorted(p.name for p in work.iterdir()) == sorted(allowed)


def test_the_table_covers_the_issue():
    assert len(BAD) >= 25 and len(WORKFLOW_BAD) >= 10
    assert len({case.id for case in BAD}) == len(BAD)


@pytest.mark.parametrize("case", BAD, ids=[case.id for case in BAD])
def test_simulate_refuses_bad_input_with_one_line_and_writes_nothing(
    case, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    config = write_case(case, tmp_path)
    output = tmp_path / "results" / "runs" / "run.nc"
    status = main(simulate_argv(config, output, case.flags))
    captured = capsys.readouterr()
    assert status != 0
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("spsa-bench: config error: "), lines[0]
    for needle in case.needles:
        assert needle in lines[0], (needle, lines[0])
    assert captured.out == ""
    assert_nothing_written(tmp_path)


def test_the_console_script_exits_non_zero_with_one_line(tmp_path):
    """The same through the installed entry point, in a separate process."""
    for case in (BAD[0], next(c for c in BAD if c.id == "w-true-nan")):
        config = write_case(case, tmp_path)
        argv = simulate_argv(config, tmp_path / "results" / "run.nc", case.flags)
        done = subprocess.run(
            [sys.executable, "-m", "spsa_bench", *argv],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert all(needle in done.stderr for needle in case.needles)
        assert_nothing_written(tmp_path)


# ------------------------------------------------------------------ the same through Snakemake


@pytest.mark.slow
@pytest.mark.parametrize("case", WORKFLOW_BAD, ids=[case.id for case in WORKFLOW_BAD])
def test_workflow_refuses_bad_config_with_one_line_and_writes_nothing(
    case, tmp_path, snakemake_env
):
    """A real run (not ``-n``): configuration errors stop it while the Snakefile is parsed."""
    config = write_case(case, tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [
            str(BIN / "snakemake"),
            "--directory",
            str(work),
            "--snakefile",
            str(REPO / "Snakefile"),
            "--configfile",
            str(config),
            "--replace-workflow-config",
            "--cores",
            "1",
        ],
        cwd=tmp_path,
        env=snakemake_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    lines = [line for line in output.splitlines() if "invalid configuration:" in line]
    assert len(lines) == 1, output
    for needle in case.needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in output, output
    assert_nothing_written(work, allowed=(".snakemake",))


# ------------------------------------------------------------------ unreadable run files


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("one-run")
    raw = tiny()
    raw["num_pairs"] = 300
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump(raw))
    path = folder / "run.nc"
    argv = simulate_argv(config, path, ("--batch-mode", "sync", "--optimizer", "sf-sgd"))
    assert main(argv) == 0
    return path


def _truncated(fraction):
    def make(good: Path, bad: Path):
        data = good.read_bytes()
        bad.write_bytes(data[: int(len(data) * fraction)])

    return make


BROKEN = {
    "empty": lambda good, bad: bad.write_bytes(b""),
    "truncated-to-100-bytes": lambda good, bad: bad.write_bytes(good.read_bytes()[:100]),
    "truncated-to-half": _truncated(0.5),
    "truncated-to-99-percent": _truncated(0.99),
    "text": lambda good, bad: bad.write_text("theta,elo\n1,2\n"),
    "foreign-netcdf": lambda good, bad: xr.Dataset({"t": ("x", np.arange(3.0))}).to_netcdf(bad),
    "run-file-without-cell": lambda good, bad: (
        xr.open_dataset(good)
        .load()
        .drop_vars(["optimizer", "batch_mode", "scenario"])
        .to_netcdf(bad)
    ),
}


@pytest.mark.parametrize("kind", list(BROKEN))
def test_aggregation_names_the_unreadable_file(kind, run_file, tmp_path):
    bad = tmp_path / "runs" / f"seeds-{kind}.nc"
    bad.parent.mkdir()
    BROKEN[kind](run_file, bad)
    for step in (open_run, lambda path: combine_runs([run_file, path])):
        with pytest.raises(ValueError) as info:
            step(bad)
        message = str(info.value)
        assert message.startswith(str(bad)), message
        assert "\n" not in message


# ------------------------------------------------------------------ atomic writes


def test_a_failed_netcdf_write_leaves_no_file_and_no_temporary(run_file, tmp_path, monkeypatch):
    ds = open_run(run_file)
    target = tmp_path / "results" / "runs" / "seeds-0-1.nc"
    real = xr.Dataset.to_netcdf

    def fails_half_way(self, path, *args, **kwargs):
        real(self, path, *args, **kwargs)  # a complete file under the temporary name ...
        with open(path, "r+b") as handle:  # ... cut short, as a full disk would leave it
            handle.truncate(100)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", fails_half_way)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(ds, target)
    assert list(target.parent.iterdir()) == []

    # an earlier, complete file under the final name survives a failed rewrite untouched
    monkeypatch.setattr(xr.Dataset, "to_netcdf", real)
    write_atomic(ds, target)
    before = target.read_bytes()
    monkeypatch.setattr(xr.Dataset, "to_netcdf", fails_half_way)
    with pytest.raises(OSError):
        write_atomic(ds, target)
    assert target.read_bytes() == before
    assert [p.name for p in target.parent.iterdir()] == [target.name]


def _dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    import subprocess

    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_temporary_file_left_by_a_killed_write_is_cleared(run_file, tmp_path):
    """SIGKILL skips the clean-up: the next write of the same file removes the leftover."""
    import socket

    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname())
    dead = _dead_pid()
    target = tmp_path / "seeds-0-1.nc"
    leftover = tmp_path / f".seeds-0-1.nc.{host}~{dead}~k1ll3d.tmp.nc"
    leftover.write_bytes(b"\x89HDF partial")
    other = tmp_path / f".seeds-2-3.nc.{host}~{dead}~k1ll3d.tmp.nc"  # another file's
    other.write_bytes(b"partial")
    write_atomic(open_run(run_file), target)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, other.name])
    assert open_run(target).sizes["seed"] == 2


# ------------------------------------------------------------------ numerical guards


def test_elo_differences_far_beyond_the_clip_through_a_whole_simulate(tmp_path):
    raw = tiny()
    raw["num_pairs"] = 600
    raw["scenarios"]["calibrated"]["c_elo_gap"] = 1.0e6
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw))
    problem = make_problem(load_config(config), "calibrated")
    start, c = problem.view.theta_start, problem.view.c_dev
    toward_peak = np.where(problem.bowl.theta_peak >= start, 1.0, -1.0)
    probe_gap = problem.bowl.elo(start + c * toward_peak) - problem.bowl.elo(
        start - c * toward_peak
    )
    assert probe_gap > 10 * 599  # the pentanomial model clips the difference to ±599
    for kind in REGISTRY:
        for mode in ("sync", "async-variable"):
            output = tmp_path / f"{kind}-{mode}.nc"
            argv = simulate_argv(config, output, ("--optimizer", kind, "--batch-mode", mode))
            assert main(argv) == 0, (kind, mode)
            ds = open_run(output)
            theta = ds["theta"].values
            assert np.isfinite(theta).all(), (kind, mode)
            assert (theta >= ds["theta_min"].values).all() and (
                theta <= ds["theta_max"].values
            ).all()
            assert np.isfinite(ds["elo_loss"].values).all() and (ds["elo_loss"].values >= 0).all()
            assert (ds["total_pairs"].values == 600).all()
            for name in ("x", "z"):
                if name in ds:
                    assert np.isfinite(ds[name].values).all(), (kind, mode, name)


@pytest.mark.parametrize("mode", ["sync", "async-variable"])
def test_a_nan_state_stops_simulate_naming_optimizer_seed_and_event(
    mode, tmp_path, monkeypatch, capsys
):
    real_build = optimizers_pkg.build
    calls = {"n": 0}

    def poisoned_build(*args, **kwargs):
        opt = real_build(*args, **kwargs)

        def update(state, report):
            new = opt.update(state, report)
            calls["n"] += 1
            if calls["n"] == 4:
                theta = new.theta.copy()
                theta[1, 0] = np.nan  # the second seed of the run: seed 6
                return new._replace(theta=theta)
            return new

        return dataclasses.replace(opt, update=update)

    monkeypatch.setattr(optimizers_pkg, "build", poisoned_build)
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "config.yaml"
    config.write_text(TINY.read_text())
    output = tmp_path / "results" / "runs" / "run.nc"
    argv = simulate_argv(config, output, ("--batch-mode", mode, "--seeds", "5-7"))
    assert main(argv) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert re.search(r"optimizer 'spsa' .*non-finite.* seed 6, arrival \d+", lines[0]), lines[0]
    assert_nothing_written(tmp_path, allowed=("config.yaml",))


SF_KINDS = ["sf-sgd", "sf-sgd-block", "sf-adam", "sf-adam-block"]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    kind=st.sampled_from(SF_KINDS),
    lr=st.floats(1e-4, 50.0),
    beta=st.floats(0.0, 1.0),
    beta2=st.floats(0.0, 0.9999),
    warmup=st.integers(0, 200),
    damping=st.integers(0, 1),
    reports=st.lists(
        st.tuples(st.integers(1, 64), st.floats(-2.0, 2.0), st.integers(0, 2**16)),
        min_size=1,
        max_size=25,
    ),
)
def test_schedule_free_z_is_never_clamped_for_random_hyperparameters(
    kind, lr, beta, beta2, warmup, damping, reports
):
    """The same reports to views that differ only in their bounds give the same ``z``.

    The tight view's bounds sit 1e-9 c around the start, so ``z`` leaves them at the
    first step larger than that (a step below it, e.g. lr 1e-4 on a tiny signal, stays
    inside, so "z moved implies z is outside" is not a property); ``x`` and the
    exported theta stay inside. Derandomized, so CI sees the same examples every run.
    """
    n_params, n_seeds = 3, 2
    c = np.array([2.0, 5.0, 0.5])
    start = np.array([10.0, -3.0, 0.0])
    tight = DeveloperView(start, start - 1e-9 * c, start + 1e-9 * c, c, 10_000)
    wide = DeveloperView(start, start - 1e12, start + 1e12, c, 10_000)
    values = {"lr": lr, "warmup_pairs": warmup}
    if kind.startswith("sf-adam"):
        values.update(beta1=beta, beta2=beta2)
    else:
        values.update(beta=beta)
    if kind == "sf-adam-block":
        values["documented_damping"] = damping
    hyper = hyper_from_dict(kind, values)
    built = {
        name: optimizers_pkg.build(kind, view, hyper) for name, view in (("t", tight), ("w", wide))
    }
    states = {name: opt.init(n_seeds) for name, opt in built.items()}
    pairs = 0
    for n_pairs, mean, flip_bits in reports:
        flip = np.where(
            (flip_bits >> np.arange(n_seeds * n_params).reshape(n_seeds, n_params)) & 1, 1.0, -1.0
        )
        report = Report(
            n_pairs=np.full(n_seeds, n_pairs),
            signal=np.array([round(mean * n_pairs), -round(mean * n_pairs)], dtype=float),
            flip=flip,
            c=np.broadcast_to(c, (n_seeds, n_params)).copy(),
            iter_local=np.full(n_seeds, pairs + 1),
        )
        pairs += n_pairs
        for name, opt in built.items():
            states[name] = opt.update(states[name], report)
        z_tight = built["t"].extras(states["t"])["z"]
        np.testing.assert_array_equal(z_tight, built["w"].extras(states["w"])["z"])
        for exported in (built["t"].export(states["t"]), built["t"].extras(states["t"])["x"]):
            assert np.all(exported >= tight.theta_min) and np.all(exported <= tight.theta_max)


# ------------------------------------------------------------------ safe loading


SOURCES = [
    *sorted((REPO / "src").rglob("*.py")),
    *sorted((REPO / "workflow").rglob("*.py")),
    *sorted((REPO / "workflow").rglob("*.smk")),
    REPO / "Snakefile",
]
UNSAFE = re.compile(
    r"(?<![\w.])(eval|exec|compile|__import__)\s*\("
    r"|\byaml\.(unsafe_load|full_load|load_all)\b"
    r"|\byaml\.load\((?![^)]*Loader=_UniqueKeyLoader)"
    r"|\bpickle\.loads?\b|\bshell\s*=\s*True|\bos\.system\b|^\s*shell:"
)


def test_no_eval_or_exec_of_configuration_text_anywhere():
    """src/ and the workflow: no eval/exec, no unsafe YAML or pickle, no shell commands."""
    assert len(SOURCES) > 30
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in SOURCES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if UNSAFE.search(line)
    ]
    assert found == []
    from spsa_bench.config.safe_yaml import _UniqueKeyLoader

    constructors = [c for c in _UniqueKeyLoader.__mro__ if c.__name__.endswith("Constructor")]
    assert yaml.constructor.SafeConstructor in constructors
    assert not {yaml.constructor.FullConstructor, yaml.constructor.UnsafeConstructor} & set(
        constructors
    )
    loader_source = (REPO / "src" / "spsa_bench" / "config" / "loader.py").read_text()
    assert "safe_yaml.load_file(path)" in loader_source


@settings(max_examples=50, deadline=None)
@given(
    names=st.lists(
        st.from_regex(NAME_PATTERN.replace("$", r"\Z"), fullmatch=True), min_size=3, max_size=3
    ),
    chunk=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
)
def test_paths_from_valid_names_stay_under_results(names, chunk):
    path = Path(grid.run_path(*names, chunk))
    assert path.parts[:2] == ("results", "runs") and len(path.parts) == 6
    assert ".." not in path.parts and not path.is_absolute()


@pytest.mark.parametrize("name", ["..", "../x", "a/b", "/abs", "x\n", "Upper", "-dash", ""])
@pytest.mark.parametrize("table", ["batch_modes", "scenarios", "optimizers"])
def test_names_that_would_escape_are_refused(table, name):
    """Names become path components; the CLI and workflow tables above show nothing is written."""
    raw = tiny()
    first = next(iter(raw[table]))
    raw[table][name] = copy.deepcopy(raw[table][first])
    if table == "optimizers":
        raw[table][name] = {"kind": first}
    with pytest.raises(ConfigError) as info:
        resolve(raw)
    assert str(info.value).startswith(f"{table}: name {json.dumps(name)} is not allowed")
