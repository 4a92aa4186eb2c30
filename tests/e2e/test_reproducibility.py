"""Bit-for-bit reproducibility and recovery from interruption, on a small workflow.

A small variant of the tiny test benchmark (three optimizer kinds, the
synchronous and one asynchronous batch mode, one scenario, 4 seeds, 600 pairs)
runs through the real Snakemake workflow in temporary working directories. Each
distinct run (seeds per job, cores) is made once per module and shared:

* two runs, on 2 cores and on 1, write bit-identical data in every NetCDF file
  (run files, schedules, ``benchmark.nc``);
* splitting the seeds into jobs of 1, 2 or all 4 gives the same ``benchmark.nc``;
* every file carries its provenance (resolved configuration, versions, git revision);
* by default the run files are deleted once combined (temp files), the same
  ``benchmark.nc`` written; these runs keep them (``keep_run_files: true``) to compare them;
* a run killed with SIGKILL in the middle of its simulate jobs resumes (after
  ``--unlock``) to the same files, Snakemake re-running the jobs it marked incomplete,
  and no file under its final name is ever partial;
* the combine rule names a truncated run file.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

import spsa_bench
from spsa_bench.config.loader import resolve
from spsa_bench.results.datasets import open_run
from spsa_bench.results.provenance import git_state

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / ".test" / "config" / "config.yaml"
BIN = Path(sys.executable).parent
TARGET = "results/benchmark.nc"  # with the run files and schedules it is built from
OPTIMIZERS = ("spsa", "sf-adam", "ademamix")
MODES = ("sync", "async-variable")
N_RUN_FILES = {4: 6, 2: 12, 1: 24}  # per seeds.per_job: 3 arms x 2 modes x chunks


def seeds(per_job: int) -> str:
    return f"seeds={{first: 0, count: 4, per_job: {per_job}}}"


@pytest.fixture(scope="module")
def small_config(tmp_path_factory) -> Path:
    raw = yaml.safe_load(TINY.read_text())
    raw["num_pairs"] = 600
    raw["checkpoints"] = 13
    raw["batch_modes"] = {name: raw["batch_modes"][name] for name in MODES}
    raw["scenarios"] = {"mixed": raw["scenarios"]["mixed"]}
    raw["optimizers"] = {name: {} for name in OPTIMIZERS}
    del raw["cend_study"]  # its tune scenario is not among these
    raw["budget_study"]["scenarios"] = ["mixed"]  # its study file is compared too
    raw["keep_run_files"] = True  # the run files are compared too (default: deleted)
    path = tmp_path_factory.mktemp("config") / "small.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def planned_outputs(text: str) -> set[str]:
    """The outputs of the jobs a (dry) run's console ``text`` lists: each rule block's
    ``output:`` line, and for a simulate job (printed as its one-line message, which names
    its log ``results/logs/simulate/{scenario}/unswept/seeds-{a}-{b}.log``) the run file
    of every arm (all unswept here) in every batch mode of that scenario and chunk."""
    outputs = set()
    for line in text.splitlines():
        if line.strip().startswith("output: "):
            outputs |= {p.strip() for p in line.strip().removeprefix("output: ").split(",")}
    for scenario, chunk in re.findall(
        r"\(log: results/logs/simulate/([^/]+)/unswept/(seeds-\d+-\d+)\.log\)", text
    ):
        outputs |= {
            f"results/runs/{mode}/{scenario}/{arm}/{chunk}.nc"
            for mode in MODES
            for arm in OPTIMIZERS
        }
    return outputs


def command(work: Path, config: Path, *args: str) -> list[str]:
    return [
        str(BIN / "snakemake"),
        TARGET,
        "--directory",
        str(work),
        "--snakefile",
        str(REPO / "Snakefile"),
        "--configfile",
        str(config),
        "--replace-workflow-config",
        *args,
    ]


def snakemake(env, work: Path, config: Path, *args: str, check=True):
    done = subprocess.run(
        command(work, config, *args),
        cwd=work.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def run(tmp_path_factory, small_config, snakemake_env):
    """``run(per_job, cores)``: the working directory of that complete run (made once)."""
    made: dict[tuple[int, int], Path] = {}

    def get(per_job: int, cores: int) -> Path:
        if (per_job, cores) not in made:
            work = tmp_path_factory.mktemp(f"per-job-{per_job}-cores-{cores}") / "work"
            work.mkdir()
            args = ("--cores", str(cores), "--quiet", "all", "--config", seeds(per_job))
            snakemake(snakemake_env, work, small_config, *args)
            made[(per_job, cores)] = work
        return made[(per_job, cores)]

    return get


def netcdf_files(work: Path) -> dict[str, Path]:
    """Every NetCDF file under ``results/`` by its relative name (no temporary files)."""
    return {
        str(path.relative_to(work)): path
        for path in (work / "results").rglob("*.nc")
        if not path.name.startswith(".")
    }


def assert_same_data(a: Path, b: Path, what: str) -> None:
    """Same variables, dims, dtypes and bytes (NaN payloads included); attributes may differ."""
    with xr.open_dataset(a) as x, xr.open_dataset(b) as y:
        assert sorted(x.variables) == sorted(y.variables), what
        assert len(x.data_vars) > 0, what
        for name in x.variables:
            u, v = x[name].variable, y[name].variable
            assert (u.dims, u.dtype) == (v.dims, v.dtype), (what, name)
            if u.dtype.kind in "biufc":
                assert u.values.tobytes() == v.values.tobytes(), (what, name)
            else:
                assert u.values.tolist() == v.values.tolist(), (what, name)


def test_two_runs_on_two_cores_and_one_are_bit_identical(run):
    first, second = run(4, 2), run(4, 1)
    files = netcdf_files(first)
    assert files.keys() == netcdf_files(second).keys()
    assert len([f for f in files if f.startswith("results/runs/")]) == N_RUN_FILES[4]
    assert {"results/benchmark.nc", "results/schedules/async-variable/seeds-0-3.nc"} <= set(files)
    for name, path in files.items():
        assert_same_data(path, second / name, name)


@pytest.mark.parametrize("per_job", [1, 2])
def test_seed_chunks_of_any_size_give_the_same_benchmark(run, per_job):
    whole, split = run(4, 2), run(per_job, 2)
    assert_same_data(whole / TARGET, split / TARGET, f"benchmark.nc, per_job {per_job}")
    runs = [f for f in netcdf_files(split) if f.startswith("results/runs/")]
    assert len(runs) == N_RUN_FILES[per_job]
    # and every chunk's file is the matching slice of the one-chunk file
    for name in runs:
        a, b = (int(x) for x in Path(name).stem.removeprefix("seeds-").split("-"))
        with (
            xr.open_dataset(split / name) as part,
            xr.open_dataset(whole / Path(name).parent / "seeds-0-3.nc") as full,
        ):
            for var in part.data_vars:
                expected = (
                    full[var].sel(seed=slice(a, b)) if "seed" in full[var].dims else full[var]
                )
                assert part[var].values.tobytes() == expected.values.tobytes(), (name, var)


def test_every_file_carries_its_provenance(run, small_config):
    work = run(4, 2)
    files = netcdf_files(work)
    git = git_state()  # the files were written from this same source tree
    for name, path in files.items():
        with xr.open_dataset(path) as ds:
            attrs = ds.attrs
        assert attrs["spsa_bench_version"] == spsa_bench.__version__, name
        assert attrs["numpy_version"] == np.__version__, name
        assert attrs["xarray_version"] == xr.__version__, name
        assert len(git["git_revision"]) == 40, git
        for key in ("git_revision", "git_dirty", "git_diff_sha256"):
            assert attrs[key] == git[key], (name, key)
        assert attrs["Conventions"] == "CF-1.11", name
        assert attrs["created"].startswith("20"), name
        assert isinstance(json.loads(attrs["config"]), dict), name
    # benchmark.nc records the whole resolved configuration of the run
    raw = yaml.safe_load(small_config.read_text())
    raw["seeds"] = {"first": 0, "count": 4, "per_job": 4}  # the --config override
    del raw["keep_run_files"]  # a setting of the workflow, recorded nowhere
    with xr.open_dataset(work / TARGET) as ds:
        assert json.loads(ds.attrs["config"]) == json.loads(resolve(raw).to_json())
    # a run file records the settings its cell depends on
    with xr.open_dataset(work / "results/runs/async-variable/mixed/sf-adam/seeds-0-3.nc") as ds:
        cell = json.loads(ds.attrs["config"])
    assert list(cell["optimizers"]) == ["sf-adam"] and cell["num_pairs"] == 600


def test_run_files_are_deleted_once_combined_unless_kept(
    run, small_config, snakemake_env, tmp_path
):
    """By default the run files are temp files: combine reads them, then Snakemake deletes
    them; benchmark.nc is the same as a run that keeps them (keep_run_files: true)."""
    kept = run(4, 2)
    raw = yaml.safe_load(small_config.read_text())
    del raw["keep_run_files"]
    config = tmp_path / "default.yaml"
    config.write_text(yaml.safe_dump(raw, sort_keys=False))
    work = tmp_path / "work"
    work.mkdir()
    snakemake(snakemake_env, work, config, "--cores", "2", "--quiet", "--config", seeds(4))
    assert not list((work / "results" / "runs").rglob("*.nc"))
    assert len([f for f in netcdf_files(kept) if f.startswith("results/runs/")]) == 6
    assert_same_data(work / TARGET, kept / TARGET, "benchmark.nc with the run files deleted")
    with xr.open_dataset(work / TARGET) as ds, xr.open_dataset(kept / TARGET) as other:
        assert ds.attrs["config"] == other.attrs["config"]  # the key is recorded nowhere
    # the deleted run files are not missing: Snakemake has nothing to do
    dry = snakemake(snakemake_env, work, config, "-n", "--config", seeds(4))
    assert "Nothing to be done" in dry.stdout + dry.stderr


# ------------------------------------------------------------------ interruption


def final_names(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return [p for p in folder.rglob("*.nc") if not p.name.startswith(".")]


def processes_in(work: Path) -> list[int]:
    """Live processes running in or naming ``work`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cmdline and (str(work) in cmdline or cwd == str(work)):
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="needs Linux /proc")
def test_an_interrupted_run_resumes_to_identical_results(
    run, small_config, snakemake_env, tmp_path
):
    reference = run(2, 2)
    work = tmp_path / "work"
    work.mkdir()
    args = ("--cores", "2", "--config", seeds(2))
    runs, markers = work / "results" / "runs", work / ".snakemake" / "incomplete"
    process = subprocess.Popen(
        command(work, small_config, *args),
        cwd=tmp_path,
        env=snakemake_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: the jobs too
    )
    try:
        deadline = time.monotonic() + 300
        while True:
            written = len(final_names(runs))
            if 0 < written < N_RUN_FILES[2] and markers.is_dir() and any(markers.iterdir()):
                os.killpg(process.pid, signal.SIGKILL)  # in the middle of the simulate jobs
                break
            assert process.poll() is None, "the workflow ended before it could be interrupted"
            assert time.monotonic() < deadline, "no simulate job ran within 300 s"
            time.sleep(0.02)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    for _ in range(100):  # the killed jobs are gone (orphans reaped by init)
        if not processes_in(work):
            break
        time.sleep(0.05)
    assert processes_in(work) == []

    # what the kill left: some files under their final names, each complete ...
    left = final_names(work / "results")
    assert 0 < len([p for p in left if p.is_relative_to(runs)]) < N_RUN_FILES[2]
    for path in left:
        if path.is_relative_to(runs):
            open_run(path)
        else:
            xr.open_dataset(path).close()
    # ... and Snakemake's marks on the outputs of the jobs that were running
    marked = sorted(base64.urlsafe_b64decode(m.name).decode() for m in markers.iterdir())
    assert marked and all(name.startswith("results/") for name in marked), marked
    # Stand in for jobs that died half-way through writing under the final names (a
    # simulate job writes several files): every marked output not there is torn, so
    # only the incomplete marks can tell Snakemake these are not finished outputs.
    for name in marked:
        torn = work / name
        if not torn.exists():
            torn.parent.mkdir(parents=True, exist_ok=True)
            torn.write_bytes(b"\x89HDF\r\n\x1a\n torn")

    # A killed Snakemake cannot release its lock on the working directory.
    locked = snakemake(snakemake_env, work, small_config, *args, check=False)
    assert locked.returncode != 0 and "cannot be locked" in locked.stdout + locked.stderr
    snakemake(snakemake_env, work, small_config, "--unlock", *args)

    # rerun-incomplete (profiles/default) schedules the marked job; ignoring the marks would not
    plan = snakemake(snakemake_env, work, small_config, "-n", *args)
    assert marked[0] in planned_outputs(plan.stdout + plan.stderr)
    ignored = snakemake(snakemake_env, work, small_config, "-n", "--ignore-incomplete", *args)
    assert marked[0] not in planned_outputs(ignored.stdout + ignored.stderr)

    snakemake(snakemake_env, work, small_config, *args)
    assert not any(markers.iterdir())
    assert [p for p in (work / "results").rglob("*") if ".tmp" in p.name] == []
    files = netcdf_files(work)
    expected = netcdf_files(reference)
    assert files.keys() == expected.keys()
    for name, path in files.items():
        assert_same_data(path, expected[name], name)


def test_the_combine_rule_names_a_truncated_run_file(run, small_config, snakemake_env, tmp_path):
    work = tmp_path / "work"
    shutil.copytree(run(4, 2), work, symlinks=True)
    victim = "results/runs/sync/mixed/spsa/seeds-0-3.nc"
    data = (work / victim).read_bytes()
    (work / victim).write_bytes(data[: len(data) // 2])
    done = snakemake(
        snakemake_env, work, small_config, "--cores", "1", "--config", seeds(4), check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"{victim}: not a readable spsa-bench NetCDF file" in output, output
    # the quiet default console (profiles/default: no reason lines, combine's one-line
    # message) still shows the failed job in full: its error block and its log
    assert "combine: the run files into results/benchmark.nc" in output, output
    assert "Error in rule combine:" in output and "results/logs/combine.log" in output, output
    assert not (work / TARGET).exists()
