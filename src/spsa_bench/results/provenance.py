"""Provenance attributes of every file the benchmark writes.

``git_revision`` is ``git rev-parse HEAD`` of the source tree; ``git_dirty`` says
whether tracked files differ from that revision (``git diff HEAD`` is not empty),
and ``git_diff_sha256`` is the SHA-256 of that diff (empty for a clean tree), so
a run from a modified tree never claims a clean revision. Outside a git checkout
(an installed wheel) all three are ``"unknown"``. Untracked files are not counted.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
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


def _git(*args: str, directory: Path) -> bytes | None:
    """Stdout of ``git args`` run in ``directory``, or None when git fails or is absent."""
    try:
        out = subprocess.run(
            ["git", *args], cwd=directory, capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_revision(directory: Path | None = None) -> str:
    """The source tree's git revision, or ``"unknown"``."""
    out = _git("rev-parse", "HEAD", directory=directory or SOURCE_DIR)
    return out.decode().strip() if out else UNKNOWN


def git_state(directory: Path | None = None) -> dict[str, str]:
    """``git_revision``, ``git_dirty`` (``"true"``/``"false"``) and ``git_diff_sha256``."""
    directory = directory or SOURCE_DIR
    revision = git_revision(directory)
    diff = _git("diff", "HEAD", "--no-ext-diff", "--binary", directory=directory)
    if revision == UNKNOWN or diff is None:
        return {"git_revision": UNKNOWN, "git_dirty": UNKNOWN, "git_diff_sha256": UNKNOWN}
    return {
        "git_revision": revision,
        "git_dirty": "true" if diff else "false",
        "git_diff_sha256": hashlib.sha256(diff).hexdigest() if diff else "",
    }


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
