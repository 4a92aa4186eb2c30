"""The planner's outputs, written as one set: ``plan.md``, ``plan.nc`` and ``plan.png``
in one directory, and ``plan.sha256``, the marker that says they belong together.

:func:`output_paths` refuses, before any work, a directory that is empty text or a
file, an output that is a directory or a device, and an output that is the input
block itself (the same path once symlinks are resolved, or the same file by
``os.path.samefile``, e.g. a hard link).

:func:`write_set` stages every file in a fresh hidden directory inside the target
directory (``.plan.HOST~PID~RANDOM.tmp``, same file system, so each rename is atomic),
then:

1. removes the old marker, so the old set is no longer declared complete;
2. renames each staged file onto its final name;
3. renames the new marker into place, which lists the SHA-256 of each file of the
   new set (``sha256sum`` format: ``cd DIR && sha256sum -c plan.sha256`` checks it).

The three files form a set exactly when the marker is present and every checksum it
lists matches (:func:`set_is_complete`). A run interrupted at any point leaves either
the old complete set, or no marker at all (a mixed set is never marked complete), and
at most a staging directory, which the next run into that directory removes once its
writer is gone (same host and no such process, or older than a day).
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

#: The planner's files, in the order the command reports them.
OUTPUTS = ("plan.md", "plan.nc", "plan.png")
#: The completeness marker: the SHA-256 of every file of the last complete set.
MARKER = "plan.sha256"
_STAGE_PREFIX = ".plan."
_STAGE_SUFFIX = ".tmp"
#: A staging directory older than this is stale whoever made it.
STALE_SECONDS = 24 * 3600
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", platform.node()) or "host"


def _is_input(path: Path, source: str | None) -> bool:
    """Whether writing ``path`` would replace the input file ``source``."""
    if source is None:
        return False
    if os.path.realpath(path) == os.path.realpath(source):
        return True
    try:
        return os.path.samefile(path, source)
    except OSError:  # either does not exist: not the same file
        return False


def output_paths(directory: str, source: str | None = None) -> list[Path]:
    """``plan.md``, ``plan.nc``, ``plan.png`` in ``directory``, refused (naming
    ``--output``) before any work when ``directory`` is empty or a file, an output (or
    the marker) is a directory or a device, or an output is the input ``source``."""
    from spsa_bench.results.atomic import OutputPathError, check_output_dir

    paths = check_output_dir(
        directory, (*OUTPUTS, MARKER), flag="--output", hint=" (e.g. --output plan)"
    )
    for path in paths:
        if _is_input(path, source):
            raise OutputPathError(
                f"--output = {directory!r}: {path} is the input block {source}; "
                "give another directory"
            )
    return paths[: len(OUTPUTS)]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a directory; the renames are done
    finally:
        os.close(fd)


def _writer_gone(stage: Path, now: float) -> bool:
    """Whether the staging directory ``stage`` was left by a writer that no longer
    runs: older than :data:`STALE_SECONDS`, or made on this host by a process that is
    gone."""
    try:
        if now - stage.lstat().st_mtime > STALE_SECONDS:
            return True
    except FileNotFoundError:
        return False
    middle = stage.name[len(_STAGE_PREFIX) : -len(_STAGE_SUFFIX)]
    host, _, rest = middle.partition("~")
    pid = rest.partition("~")[0]
    if host != _HOST or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # exists, another user's
    return False


def _clear_stale_stages(directory: Path) -> None:
    now = time.time()
    for stage in directory.glob(f"{_STAGE_PREFIX}*~*~*{_STAGE_SUFFIX}"):
        try:
            is_directory = stat.S_ISDIR(stage.lstat().st_mode)  # never follow a symlink
        except FileNotFoundError:
            continue
        if is_directory and _writer_gone(stage, now):
            shutil.rmtree(stage, ignore_errors=True)


def write_set(directory: str | Path, writers: Mapping[str, Callable[[str], object]]) -> list[Path]:
    """Write ``writers`` (file name -> ``write(path)``) into ``directory`` as one set
    with its marker (module docstring); returns the final paths in ``writers``' order."""
    from spsa_bench.results.atomic import check_output

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _clear_stale_stages(directory)
    stage = Path(
        tempfile.mkdtemp(
            prefix=f"{_STAGE_PREFIX}{_HOST}~{os.getpid()}~", suffix=_STAGE_SUFFIX, dir=directory
        )
    )
    try:
        for name, write in writers.items():
            write(str(stage / name))
            _fsync_file(stage / name)
        sums = "".join(f"{_sha256(stage / name)}  {name}\n" for name in writers)
        (stage / MARKER).write_text(sums)
        _fsync_file(stage / MARKER)
        finals = [check_output(directory / name, flag="--output") for name in writers]
        marker = check_output(directory / MARKER, flag="--output")
        marker.unlink(missing_ok=True)  # the old set is no longer declared complete
        _fsync_directory(directory)
        for final in finals:
            os.replace(stage / final.name, final)
        _fsync_directory(directory)
        os.replace(stage / MARKER, marker)  # the new set is complete
        _fsync_directory(directory)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return finals


def set_is_complete(directory: str | Path) -> bool:
    """Whether ``directory`` holds a complete set: its marker lists :data:`OUTPUTS` and
    each file's SHA-256 matches."""
    directory = Path(directory)
    try:
        lines = (directory / MARKER).read_text().splitlines()
        listed = {name: digest for digest, name in (line.split("  ", 1) for line in lines)}
        return sorted(listed) == sorted(OUTPUTS) and all(
            _sha256(directory / name) == digest for name, digest in listed.items()
        )
    except (OSError, ValueError):
        return False
