"""Smoke test: a tiny workflow run through profiles/slurm on a real SLURM.

Needs a running SLURM with an idle node (``bash ci/slurm-up.sh`` starts a
single-node one) and snakemake-executor-plugin-slurm (the ``cluster`` extra);
skipped otherwise.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "profiles" / "slurm"
UP_HINT = "start a local single-node SLURM with: bash ci/slurm-up.sh"

N_A = 3  # jobs of rule a; one more job for rule b

SNAKEFILE = textwrap.dedent(
    f"""\
    localrules: all

    rule all:
        input:
            "summary.txt",

    rule a:
        output:
            "a/{{i}}.txt",
        resources:
            mem_mb=200,
            runtime=5,
        shell:
            'echo "${{{{SLURM_JOB_ID:-}}}}" > {{output}}'

    rule b:
        input:
            expand("a/{{i}}.txt", i=range({N_A})),
        output:
            "summary.txt",
        resources:
            mem_mb=200,
            runtime=5,
        shell:
            'cat {{input}} > {{output}} && echo "${{{{SLURM_JOB_ID:-}}}}" >> {{output}}'
    """
)


def _idle_slurm_node() -> str | None:
    """Why SLURM is unusable, or None when sinfo shows an idle node."""
    if shutil.which("sinfo") is None or shutil.which("scontrol") is None:
        return "sinfo/scontrol not found"
    try:
        # Answers at once when no controller runs (sinfo retries for ~10 s).
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30)
        if "is UP" not in ping.stdout:
            first = (ping.stdout.strip().splitlines() or [ping.stderr.strip()])[0]
            return f"no SLURM controller up ({first})"
        out = subprocess.run(
            ["sinfo", "-h", "-t", "idle", "-o", "%n"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"sinfo failed: {exc}"
    if out.returncode != 0:
        return f"sinfo failed: {out.stderr.strip()}"
    if not out.stdout.strip():
        return "sinfo shows no idle node"
    return None


@pytest.mark.slurm
@pytest.mark.slow
def test_tiny_workflow_runs_every_job_under_slurm(tmp_path: Path) -> None:
    reason = _idle_slurm_node()
    if reason is not None:
        pytest.skip(f"{reason}; {UP_HINT}")
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip("snakemake-executor-plugin-slurm not installed (pip install -e '.[cluster]')")

    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "--profile",
        str(PROFILE),
        "--directory",
        str(tmp_path),
        "-s",
        str(tmp_path / "Snakefile"),
        # Test-only speed-up, kept out of the profile: first status query after
        # 5 s instead of 40 s (squeue stays in use while MinJobAge >= 3 x 5 s).
        "--slurm-init-seconds-before-status-checks",
        "5",
        # Outputs are on the local disk: no filesystem latency to wait for.
        "--latency-wait",
        "5",
        # Keep the SLURM logs so a failure can be diagnosed from tmp_path.
        "--slurm-keep-successful-logs",
        # Only profiles/slurm: the repository's workflow profile
        # (profiles/default) would replace its default-resources.
        "--workflow-profile",
        "none",
    ]
    env = dict(os.environ)
    # The jobs and the status checks must use this interpreter's snakemake.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    start = time.monotonic()
    try:
        run = subprocess.run(
            cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env
        )
    except subprocess.TimeoutExpired as exc:
        # The symptom of status checks that never see the jobs finish.
        pytest.fail(f"snakemake still running after 600 s\n--- stderr\n{exc.stderr}")
    elapsed = time.monotonic() - start
    log = f"--- stdout\n{run.stdout}\n--- stderr\n{run.stderr}"
    assert run.returncode == 0, f"snakemake failed after {elapsed:.0f}s\n{log}"

    a_ids = [(tmp_path / "a" / f"{i}.txt").read_text().strip() for i in range(N_A)]
    summary = (tmp_path / "summary.txt").read_text().splitlines()
    assert summary[:N_A] == a_ids
    b_id = summary[N_A].strip()
    ids = [*a_ids, b_id]
    assert all(ids), f"a job ran outside SLURM (empty SLURM_JOB_ID): {ids}\n{log}"
    assert all(i.isdigit() for i in ids), ids
    assert len(set(ids)) == len(ids), f"jobs shared a SLURM job: {ids}"

    # The controller knows every one of them as a completed job, submitted
    # with the partition and account of the profile's default-resources.
    defaults = yaml.safe_load((PROFILE / "config.yaml").read_text())["default-resources"]
    want = ("COMPLETED", str(defaults["slurm_partition"]), str(defaults["slurm_account"]))
    q = subprocess.run(
        ["squeue", "-h", "--states=all", "-o", "%i|%T|%P|%a", "-j", ",".join(ids)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    jobs = {f[0]: tuple(f[1:]) for f in (line.split("|") for line in q.stdout.split())}
    assert all(jobs.get(i) == want for i in ids), (want, jobs, q.stderr)
