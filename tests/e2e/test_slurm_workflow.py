"""The benchmark workflow on a real SLURM through profiles/slurm.

A small variant of the tiny test benchmark (3 optimizer kinds, a synchronous
and an asynchronous batch mode, 1 scenario, 4 seeds of one per job, 600 pairs:
4 simulate jobs, each the 3 arms in both batch modes, 6 run files; the workflow always runs the macro-versus-micro validation, it has no
switch for it) runs four times:

- locally with ``--cores 2``: the reference;
- with ``--profile profiles/slurm``: it completes, every simulate job ran inside
  a SLURM job (the plugin's per-job logs and squeue say which), the simulate
  jobs were grouped as the profile says, and ``results/benchmark.nc`` equals the
  local one bit for bit;
- with the same profile, the simulate group job cancelled with ``scancel``
  after some of its simulations have finished: the run fails naming the rule
  and its logs;
- the same command again: it re-runs the simulations that had not finished and
  what depends on them, nothing else, and gives the same ``benchmark.nc``.

The SLURM runs add only test-speed options to the profile (the first status
check after 1 s instead of 40 s, 5 s of latency wait) and
``--slurm-keep-successful-logs``, which keeps the per-job logs the plugin
otherwise deletes (the evidence of where each job ran). The local run and the
uninterrupted SLURM run go in the background while the cancelled one runs:
SLURM's start-up and status polling leave the two cores idle much of the time.

Needs a running SLURM with an idle node (``bash ci/slurm-up.sh``) and
snakemake-executor-plugin-slurm (the ``cluster`` extra); skipped otherwise.
"""

import importlib.util
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from spsa_bench.config.loader import without_studies

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SNAKEFILE = REPO / "Snakefile"
PROFILE = REPO / "profiles" / "slurm"
TINY = REPO / ".test" / "config" / "config.yaml"
UP_HINT = "start a local single-node SLURM with: bash ci/slurm-up.sh"

OPTIMIZERS = ["spsa", "sf-adam-block", "ademamix"]
BATCH_MODES = ["sync", "async-variable"]
SCENARIOS = ["calibrated"]
SEEDS = {"first": 0, "count": 4, "per_job": 1}
CHUNKS = [(0, 0), (1, 1), (2, 2), (3, 3)]

SLURM_ARGS = [
    "--profile",
    str(PROFILE),
    # Test speed only: first status query 1 s after a submission or a finished
    # job instead of 40 s (squeue stays in use while MinJobAge >= 3 x 1 s), and
    # outputs on the local disk need no filesystem latency allowance.
    "--slurm-init-seconds-before-status-checks",
    "1",
    "--latency-wait",
    "5",
    # Keep the SLURM log of every job, not only of failed ones: they show which
    # SLURM job ran which workflow job.
    "--slurm-keep-successful-logs",
]
TIMEOUT = 420  # seconds, per Snakemake run

ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED"}
SUBMITTED = re.compile(r"has been submitted with SLURM jobid (\d+) \(log: (\S+)\)\.")
RULE_LINE = re.compile(r"\s*(?:local)?rule (\w+):")
#: A job whose rule has a ``message`` (combine, all, simulate, ...: profiles/default and
#: the rules' one-line messages) is printed as "Job N: <rule>: <message>" instead of a
#: rule block.
MESSAGE_LINE = re.compile(r"\s*Job \d+: (\w+): .*")
#: A simulate job's message names its log (workflow/rules/simulate.smk).
SIMULATE_LOG = re.compile(r"Job \d+: simulate: .*\(log: (results/logs/simulate/\S+\.log)\)")


def _slurm_unavailable() -> str | None:
    """Why SLURM cannot run the tests, or None when an idle node is there."""
    for tool in ("sinfo", "scontrol", "squeue", "scancel"):
        if shutil.which(tool) is None:
            return f"{tool} not found"
    try:
        # Answers at once when no controller runs (sinfo retries for ~10 s).
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
        if "is UP" not in ping.stdout:
            first = (ping.stdout.strip().splitlines() or [ping.stderr.strip()])[0]
            return f"no SLURM controller up ({first})"
        idle = subprocess.run(
            ["sinfo", "-h", "-t", "idle", "-o", "%n"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"SLURM query failed: {exc}"
    if idle.returncode != 0:
        return f"sinfo failed: {idle.stderr.strip()}"
    if not idle.stdout.strip():
        return "sinfo shows no idle node"
    return None


# ---------------------------------------------------------------- helpers


def run_files() -> set[str]:
    return {
        f"results/runs/{mode}/{scenario}/{optimizer}/seeds-{a}-{b}.nc"
        for mode in BATCH_MODES
        for scenario in SCENARIOS
        for optimizer in OPTIMIZERS
        for a, b in CHUNKS
    }


def job_outputs(log: str) -> set[str]:
    """The run files of the simulate job whose log is ``log``
    (``results/logs/simulate/{scenario}/unswept/seeds-{a}-{b}.log``: every arm outside a
    sweep, here all of them, in every batch mode of that scenario and seed chunk)."""
    path = Path(log)
    scenario, chunk = path.parts[-3], path.stem
    return {
        f"results/runs/{mode}/{scenario}/{optimizer}/{chunk}.nc"
        for mode in BATCH_MODES
        for optimizer in OPTIMIZERS
    }


def simulate_jobs_in(text: str) -> list[str]:
    """The logs of the simulate jobs a Snakemake's console ``text`` started."""
    return SIMULATE_LOG.findall(text)


def squeue_jobs(*, workdir: Path | None = None, ids=None) -> dict[str, tuple[str, str, str]]:
    """SLURM job id -> (state, comment, partition), finished jobs included (MinJobAge)."""
    cmd = ["squeue", "-h", "--states=all", "-o", "%i|%T|%k|%P|%Z"]
    if ids:
        cmd += ["-j", ",".join(ids)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=True).stdout
    jobs = {}
    for line in out.splitlines():
        jobid, state, comment, partition, directory = line.split("|")
        if workdir is None or Path(directory) == workdir:
            jobs[jobid] = (state, comment, partition)
    return jobs


class Snakemake:
    """One Snakemake run in its own working directory, started in the background."""

    def __init__(self, workdir: Path, variant: Path, *extra: str, name: str):
        self.workdir = workdir
        self.log = workdir / f"{name}.log"
        env = dict(os.environ)
        # The jobs and the status checks must use this interpreter's snakemake.
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        command = [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            str(SNAKEFILE),
            "--directory",
            str(workdir),
            "--configfile",
            str(variant),
            "--replace-workflow-config",
            *extra,
        ]
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                command, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, env=env
            )
        self.deadline = time.monotonic() + TIMEOUT

    def output(self) -> str:
        return self.log.read_text()

    def running(self) -> bool:
        if time.monotonic() > self.deadline:
            self.stop()
            pytest.fail(f"snakemake still running after {TIMEOUT} s\n{self.output()[-5000:]}")
        return self.process.poll() is None

    def result(self) -> tuple[int, str]:
        """Wait for the end: the return code and everything Snakemake printed."""
        try:
            code = self.process.wait(timeout=max(self.deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"snakemake still running after {TIMEOUT} s\n{self.output()[-5000:]}")
        return code, self.output()

    def stop(self) -> None:
        """Kill Snakemake if it still runs, and cancel the SLURM jobs it leaves behind."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
            left = [j for j, job in squeue_jobs(workdir=self.workdir).items() if job[0] in ACTIVE]
            if left:
                subprocess.run(["scancel", *left], timeout=30)


def submitted(output: str) -> dict[str, Path]:
    """SLURM job id -> the plugin's log file, for every job a run submitted."""
    return {jobid: Path(path) for jobid, path in SUBMITTED.findall(output)}


def jobs_run(output: str) -> list[tuple[str, str]]:
    """(rule, first output) of every job a Snakemake run started, group members included
    (the output is "" for a job printed by its rule's message)."""
    started = []
    lines = output.splitlines()
    for i, line in enumerate(lines):
        match = RULE_LINE.fullmatch(line)
        if match:
            first = ""
            for following in lines[i + 1 : i + 12]:
                if RULE_LINE.fullmatch(following):
                    break
                if following.strip().startswith("output: "):
                    first = following.strip().removeprefix("output: ").split(",")[0]
                    break
            started.append((match.group(1), first))
        else:
            match = MESSAGE_LINE.fullmatch(line)
            if match:
                started.append((match.group(1), ""))
    return started


def result_files(workdir: Path) -> dict[str, int]:
    """Every file under results/ but the logs: path -> modification time (ns)."""
    return {
        str(path.relative_to(workdir)): path.stat().st_mtime_ns
        for path in (workdir / "results").rglob("*")
        if path.is_file() and "logs" not in path.relative_to(workdir).parts
    }


def assert_same_data(path: Path, reference: Path) -> None:
    """Equal coordinates and bit-identical data variables (attributes such as `created` differ)."""
    with xr.open_dataset(path) as ds, xr.open_dataset(reference) as ref:
        assert sorted(ds.data_vars) == sorted(ref.data_vars)
        xr.testing.assert_equal(ds.coords.to_dataset(), ref.coords.to_dataset())
        for name in ref.data_vars:
            a, b = ds[name], ref[name]
            assert a.dims == b.dims and a.dtype == b.dtype, name
            assert np.asarray(a.values).tobytes() == np.asarray(b.values).tobytes(), name


def cancel_mid_run(workdir: Path, output: str) -> str | None:
    """scancel a running simulate group job once one of its simulate jobs has
    finished and another has started but not finished; its SLURM job id, or None."""
    logs = submitted(output)
    for jobid, (state, comment, _) in squeue_jobs(workdir=workdir).items():
        if state != "RUNNING" or not comment.startswith("rule_simulate") or jobid not in logs:
            continue
        if not logs[jobid].exists():  # SLURM creates it when the job starts
            continue
        started = set(simulate_jobs_in(logs[jobid].read_text()))
        done = [log for log in started if all((workdir / p).exists() for p in job_outputs(log))]
        if done and len(done) < len(started):
            subprocess.run(["scancel", jobid], check=True, timeout=30)
            return jobid
    return None


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def slurm() -> None:
    reason = _slurm_unavailable()
    if reason is not None:
        pytest.skip(f"{reason}; {UP_HINT}")
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip("snakemake-executor-plugin-slurm not installed (pip install -e '.[cluster]')")


@pytest.fixture(scope="module")
def variant(tmp_path_factory) -> Path:
    config = yaml.safe_load(TINY.read_text())
    config["num_pairs"] = 600
    config["checkpoints"] = 7
    config["seeds"] = dict(SEEDS)
    config["batch_modes"] = {name: config["batch_modes"][name] for name in BATCH_MODES}
    config["scenarios"] = {name: config["scenarios"][name] for name in SCENARIOS}
    config["optimizers"] = {name: {} for name in OPTIMIZERS}
    config["baseline"] = OPTIMIZERS[0]
    config = without_studies(config)  # the studies name scenarios and arms not among these
    # the interrupted run is checked file by file, run files included: keep them
    config["keep_run_files"] = True
    path = tmp_path_factory.mktemp("config") / "variant.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def background(slurm, variant, tmp_path_factory):
    """The local reference run and the uninterrupted SLURM run, both started at once."""
    runs = {
        "local": Snakemake(tmp_path_factory.mktemp("local"), variant, "--cores", "2", name="local"),
        "slurm": Snakemake(tmp_path_factory.mktemp("slurm"), variant, *SLURM_ARGS, name="slurm"),
    }
    yield runs
    for run in runs.values():
        run.stop()


@pytest.fixture(scope="module")
def local_run(background) -> Path:
    run = background["local"]
    code, output = run.result()
    assert code == 0, output[-5000:]
    return run.workdir


@pytest.fixture(scope="module")
def slurm_run(background) -> tuple[Path, str]:
    run = background["slurm"]
    code, output = run.result()
    assert code == 0, output[-8000:]
    return run.workdir, output


# ---------------------------------------------------------------- tests
# The cancelled run comes first, so that it runs while the background runs do.


def test_a_cancelled_job_fails_the_run_and_a_rerun_redoes_only_unfinished_jobs(
    background, variant, tmp_path_factory
):
    workdir = tmp_path_factory.mktemp("cancelled")
    first_run = Snakemake(workdir, variant, *SLURM_ARGS, name="first")
    try:
        cancelled = None
        while cancelled is None and first_run.running():
            cancelled = cancel_mid_run(workdir, first_run.output())
            time.sleep(0.2)
        assert cancelled is not None, f"no simulate job to cancel\n{first_run.output()[-5000:]}"
        code, first = first_run.result()
    finally:
        first_run.stop()

    # The run fails, naming the group, its SLURM log (which says the job was
    # cancelled), and each simulate job of the group with its own log.
    assert code != 0, first[-5000:]
    error = first[first.index("Error in group simulate") :]
    error = error[: error.find("Shutting down")]
    assert f"log: {submitted(first)[cancelled]}" in error, error[:3000]
    assert f"JOB {cancelled} ON" in error and "CANCELLED" in error, error[:3000]
    member_logs = set(re.findall(r"log: (results/logs/simulate/\S+\.log)", error))
    assert member_logs, error[:3000]
    members = set().union(*(job_outputs(log) for log in member_logs))
    assert set(re.findall(r"results/runs/[^\s,]+\.nc", error)) <= members, error[:3000]
    # The simulations that finished before the cancel keep their outputs
    # (keep-incomplete in profiles/slurm; every output is written atomically).
    present = {path for path in run_files() if (workdir / path).exists()}
    lost = run_files() - present
    assert lost and lost <= members and present & members, (sorted(present), sorted(members))
    unfinished = {log for log in member_logs if not job_outputs(log) <= present}
    redone = set().union(*(job_outputs(log) for log in unfinished))
    kept = {path: t for path, t in result_files(workdir).items() if path not in redone}

    # The same command again completes, running exactly the jobs that had not
    # finished (the lost simulations and what depends on them), nothing else.
    code, second = Snakemake(workdir, variant, *SLURM_ARGS, name="second").result()
    assert code == 0, second[-8000:]
    again = jobs_run(second)
    assert set(simulate_jobs_in(second)) == unfinished, again
    assert not [(rule, path) for rule, path in again if path in kept], again
    assert {"simulate", "combine", "all"} <= {rule for rule, _ in again}, again
    after = result_files(workdir)
    assert {path: after.get(path) for path in kept} == kept

    # ... and gives what an uninterrupted run gives.
    local = background["local"]
    assert local.result()[0] == 0, local.output()[-5000:]
    reference = local.workdir / "results" / "benchmark.nc"
    assert_same_data(workdir / "results" / "benchmark.nc", reference)


def test_every_simulate_job_ran_inside_a_slurm_job(slurm_run):
    workdir, output = slurm_run
    ids = submitted(output)
    assert ids, output[-5000:]
    # The main Snakemake ran no simulation itself ...
    assert "localrule simulate:" not in output
    # ... each one ran exactly once, inside a SLURM job of this run ...
    where: dict[str, list[str]] = {}
    for jobid, log in ids.items():
        # the group's Snakemake and the job's own (under srun) both print its message
        for job in set(simulate_jobs_in(log.read_text())):
            where.setdefault(job, []).append(jobid)
    simulate_logs = {
        f"results/logs/simulate/{scenario}/unswept/seeds-{a}-{b}.log"
        for scenario in SCENARIOS
        for a, b in CHUNKS
    }
    assert set(where) == simulate_logs, sorted(where)
    assert set().union(*(job_outputs(log) for log in where)) == run_files()
    assert all(len(jobids) == 1 for jobids in where.values()), where
    # ... grouped as profiles/slurm says (group-components simulate=N) ...
    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    per_group = int(dict(item.split("=") for item in profile["group-components"])["simulate"])
    groups = {jobids[0] for jobids in where.values()}
    assert len(groups) == math.ceil(len(simulate_logs) / per_group), where
    # ... and SLURM knows every job of the run as completed, in the profile's partition.
    partition = str(profile["default-resources"]["slurm_partition"])
    jobs = squeue_jobs(ids=list(ids))
    assert set(jobs) == set(ids), (ids, jobs)
    assert all(state == "COMPLETED" and part == partition for state, _, part in jobs.values()), jobs
    assert all(jobs[jobid][1].startswith("rule_simulate") for jobid in groups), jobs


def test_slurm_result_equals_the_local_run(slurm_run, local_run):
    workdir, _ = slurm_run
    assert_same_data(workdir / "results" / "benchmark.nc", local_run / "results" / "benchmark.nc")
    for table in ("convergence.csv", "async.csv"):
        ours = (workdir / "results" / "tables" / table).read_text()
        assert ours == (local_run / "results" / "tables" / table).read_text(), table
