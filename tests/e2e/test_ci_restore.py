"""ci/slurm-up.sh and ci/slurm-down.sh leave the machine as they found it.

The scripts run for real against a temporary root (``SLURM_CI_ROOT``, with the state
and log directories under it), on a machine that already has an
``/etc/slurm/slurm.conf`` of its own. Stubs on ``PATH`` stand in for root, dpkg, the
munge tools, ``scontrol`` and ``sinfo``; the ``slurmd`` daemon the up script starts
(``SLURM_CI_SBIN``) is a copy of ``sleep`` named ``slurmd``, so that the down script
finds and stops it by its recorded PID and command name. Every file, directory and
mode under the root is compared before and after.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FOREIGN_CONF = "# the site's own slurm.conf\nClusterName=site\n"

STUBS = {
    "id": 'if [ "$1" = -u ]; then echo 0; fi\n',
    "dpkg-query": "echo 'install ok installed'\n",
    "hostname": "echo node1\n",
    "chown": "exit 0\n",
    # `slurmd -C` on PATH: the node's hardware line
    "slurmd": "echo 'NodeName=node1 CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 "
    "ThreadsPerCore=1 RealMemory=4000'\n",
    "munge": "exit 0\n",  # munge -n | unmunge succeeds: a munged answers already
    "unmunge": "exit 0\n",
    "mungekey": 'for a; do case $a in --keyfile=*) echo key >"${a#--keyfile=}";; esac; done\n',
    "scontrol": 'if [ "$1" = ping ]; then echo "Slurmctld(primary) at node1 is UP"; fi\n',
    "sinfo": 'echo "$SINFO_STATE"\n',
}


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


@pytest.fixture
def machine(tmp_path):
    """(root, environment) of a machine with its own slurm.conf and no munge key."""
    root = tmp_path / "root"
    for directory in ("etc/slurm", "var/spool", "var/log", "usr/sbin", "run"):
        (root / directory).mkdir(parents=True)
    conf = root / "etc/slurm/slurm.conf"
    conf.write_text(FOREIGN_CONF)
    conf.chmod(0o640)
    bin_dir, sbin, real = tmp_path / "bin", tmp_path / "sbin", tmp_path / "real"
    for directory in (bin_dir, sbin, real):
        directory.mkdir()
    for name, body in STUBS.items():
        _script(bin_dir / name, body)
    shutil.copy(shutil.which("sleep"), real / "slurmd")  # a process named slurmd
    _script(
        sbin / "slurmd",
        f'"{real}/slurmd" 300 </dev/null >/dev/null 2>&1 &\n'
        'echo $! >"$SLURM_CI_STATE_DIR/slurmd/slurmd.pid"\n',
    )
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "SLURM_CI_ROOT": str(root),
        "SLURM_CI_SBIN": str(sbin),
        "SLURM_CI_STATE_DIR": str(root / "var/spool/slurm-ci"),
        "SLURM_CI_LOG_DIR": str(root / "var/log/slurm-ci"),
        "SLURM_CI_TIMEOUT": "2",
        "SLURM_CI_STOP_TIMEOUT": "5",
        "SINFO_STATE": "idle",
    }
    return root, env


def _snapshot(root: Path) -> dict:
    """Every path under ``root``: its mode, and a file's bytes."""
    out = {}
    for path in sorted(root.rglob("*")):
        mode = path.lstat().st_mode
        out[str(path.relative_to(root))] = (mode, path.read_bytes() if path.is_file() else None)
    return out


def _run(script: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(REPO / "ci" / script)], env=env, capture_output=True, text=True, timeout=60
    )


def _slurmd_pid(root: Path) -> int:
    pids = (root / "var/spool/slurm-ci/pids").read_text().split()
    return int(pids[pids.index("slurmd") + 1])


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.split(") ", 1)[1][0] != "Z"


def test_up_then_down_restores_slurm_conf_and_removes_what_up_created(machine):
    root, env = machine
    before = _snapshot(root)
    up = _run("slurm-up.sh", env)
    assert up.returncode == 0, up.stderr
    conf = (root / "etc/slurm/slurm.conf").read_text()
    assert conf.startswith("# written by spsa-bench ci/slurm-up.sh") and "NodeName=node1" in conf
    assert (root / "etc/munge/munge.key").exists() and (root / "run/munge").is_dir()
    pid = _slurmd_pid(root)
    assert _alive(pid)
    # running the up script again must not take its own slurm.conf for the original
    again = _run("slurm-up.sh", env)
    assert again.returncode == 0, again.stderr
    down = _run("slurm-down.sh", env)
    assert down.returncode == 0, down.stderr
    assert not _alive(pid)
    assert _snapshot(root) == before
    assert (root / "etc/slurm/slurm.conf").read_text() == FOREIGN_CONF
    assert _run("slurm-down.sh", env).returncode == 0  # nothing left to do


def test_a_failing_up_restores_everything_itself(machine):
    root, env = machine
    before = _snapshot(root)
    up = _run("slurm-up.sh", {**env, "SINFO_STATE": "down"})  # the node never becomes idle
    assert up.returncode != 0
    assert "not ready" in up.stderr and "restoring" in up.stderr
    assert _snapshot(root) == before  # slurm.conf back, no key, no directories, no record


def test_an_existing_munge_key_and_run_directory_are_kept(machine):
    root, env = machine
    (root / "etc/munge").mkdir()
    key = root / "etc/munge/munge.key"
    key.write_bytes(b"the site's key")
    key.chmod(0o600)
    (root / "run/munge").mkdir(mode=0o711)
    (root / "run/munge").chmod(0o711)
    before = _snapshot(root)
    assert _run("slurm-up.sh", env).returncode == 0
    assert oct((root / "run/munge").stat().st_mode & 0o777) == "0o755"  # changed while up
    assert _run("slurm-down.sh", env).returncode == 0
    assert _snapshot(root) == before


def test_ci_run_takes_slurm_down_however_it_ends():
    text = (REPO / ".ci" / "run").read_text()
    trap = text.index("trap 'bash ci/slurm-down.sh' EXIT")
    assert trap < text.index("bash ci/slurm-up.sh")
