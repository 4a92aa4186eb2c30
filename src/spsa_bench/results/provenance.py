"""Provenance attributes of every file the benchmark writes.

``git_revision`` is ``git rev-parse HEAD`` of the source tree; ``git_dirty`` says
whether tracked files differ from that revision (``git diff HEAD`` is not empty),
and ``git_diff_sha256`` is the SHA-256 of that diff (empty for a clean tree), so
a run from a modified tree never claims a clean revision. Outside a git checkout
(an installed wheel) all three are ``"unknown"``. Untracked files are not counted.
"""

from __future__ import annotations

import datetime as _dt
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from spsa_bench import __version__

#: The directory whose git checkout is inspected (the installed package's own).
SOURCE_DIR = Path(__file__).resolve().parent

UNKNOWN = "unknown"


#: The git queries :func:`start_git_state` started, per directory, until collected.
STARTED_GIT_QUERIES: dict[Path, tuple] = {}
_REVISION = ("rev-parse", "HEAD")
_DIFF = ("diff", "HEAD", "--no-ext-diff", "--binary")


def _start(args: tuple[str, ...], directory: Path) -> subprocess.Popen | None:
    try:
        return subprocess.Popen(
            ["git", *args], cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
    except OSError:  # no git, or no such directory
        return None


def _output(process: subprocess.Popen | None) -> bytes | None:
    """Stdout of a started git query, or None when it failed, was absent or took 10 s."""
    if process is None:
        return None
    try:
        out, _ = process.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return None
    return out if process.returncode == 0 else None


def start_git_state(directory: Path | None = None) -> None:
    """Start the git queries of :func:`git_state` now, to run on another core beside the
    caller's work (a 1000-seed simulate would otherwise wait about 5 ms for them at the
    end); the next :func:`git_state` of ``directory`` collects them."""
    directory = directory or SOURCE_DIR
    if directory not in STARTED_GIT_QUERIES:
        STARTED_GIT_QUERIES[directory] = (_start(_REVISION, directory), _start(_DIFF, directory))


def git_state(directory: Path | None = None) -> dict[str, str]:
    """``git_revision``, ``git_dirty`` (``"true"``/``"false"``) and ``git_diff_sha256``."""
    directory = directory or SOURCE_DIR
    started = STARTED_GIT_QUERIES.pop(directory, None)
    revision, diff = started or (_start(_REVISION, directory), _start(_DIFF, directory))
    revision, diff = _output(revision), _output(diff)
    if not revision or diff is None:
        return {"git_revision": UNKNOWN, "git_dirty": UNKNOWN, "git_diff_sha256": UNKNOWN}
    return {
        "git_revision": revision.decode().strip(),
        "git_dirty": "true" if diff else "false",
        "git_diff_sha256": _sha256(diff) if diff else "",
    }


def _sha256(data: bytes) -> str:
    import hashlib  # only a modified tree needs it

    return hashlib.sha256(data).hexdigest()


def xarray_version() -> str:
    """The xarray this process reads and writes with: the imported one, else the
    installed one (a run file is written without importing xarray)."""
    if "xarray" in sys.modules:
        return sys.modules["xarray"].__version__
    from spsa_bench.distributions import version

    return version("xarray") or UNKNOWN


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def command_line() -> str:
    """The running command, program name without its directory."""
    return shlex.join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "python"


def rule_command(rule: str, wildcards: Mapping[str, object]) -> str:
    """How a Snakemake job names itself in ``history``: ``snakemake rule R (k=v, ...)``."""
    labels = ", ".join(f"{key}={value}" for key, value in wildcards.items())
    return f"snakemake rule {rule} ({labels})" if labels else f"snakemake rule {rule}"


def history(command: str | None = None, *, when: str | None = None) -> str:
    """One CF ``history`` line: ``<ISO time>: <command>``."""
    return f"{when or now()}: {command or command_line()}"


def provenance(resolved_config_json: str, command: str | None = None) -> dict[str, str]:
    """Versions, git state, creation time, CF ``history`` and the resolved configuration."""
    created = now()
    return {
        "spsa_bench_version": __version__,
        "numpy_version": np.__version__,
        "xarray_version": xarray_version(),
        **git_state(),
        "created": created,
        "history": history(command, when=created),
        "config": resolved_config_json,
    }
