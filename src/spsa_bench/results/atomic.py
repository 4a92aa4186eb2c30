"""Atomic file writing: a reader or a crash never sees a partial file under its final name."""

from __future__ import annotations

import glob
import os
import platform
import re
import stat
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # xarray is loaded by whoever built the dataset: checks stay light
    import xarray as xr


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: A temporary file older than this is stale whoever wrote it (a writer on another host).
STALE_SECONDS = 24 * 3600
_HOST = re.sub(r"[^A-Za-z0-9-]", "-", platform.node()) or "host"  # (as socket.gethostname())


class OutputPathError(ValueError):
    """An output path that must not be written (names the flag and the path)."""


def check_output(path: str | Path, *, flag: str = "--output", inputs=()) -> Path:
    """Refuse an output path before any work: empty, a directory, a device or other
    non-regular file, or the same file as one of ``inputs`` (e.g. the configuration)."""
    text = str(path)
    if not text.strip():
        raise OutputPathError(f"{flag} = {text!r}: empty path")
    if text.endswith(os.sep):
        raise OutputPathError(f"{flag} = {text!r}: names a directory, not a file")
    path = Path(text)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise OutputPathError(f"{flag} = {text!r}: {error.strerror}") from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a device or pipe)"
        raise OutputPathError(f"{flag} = {text!r}: {kind}; give a file path")
    for source in inputs:
        if mode is not None and Path(source).exists() and os.path.samefile(path, source):
            raise OutputPathError(f"{flag} = {text!r}: the same file as the input {source}")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise OutputPathError(f"{flag} = {text!r}: {parent} is not a directory")
    return path


def check_output_dir(
    directory: str, names, *, flag: str = "--output-dir", inputs=(), hint: str = ""
) -> list[Path]:
    """The files ``names`` in ``directory``, each checked by :func:`check_output`, before
    any work: the directory refused when it is empty text or an existing non-directory
    (``hint`` is appended to the empty-text message)."""
    text = str(directory)
    if not text.strip():
        raise OutputPathError(f"{flag} = {text!r}: empty path; give a directory{hint}")
    folder = Path(text)
    if folder.exists() and not folder.is_dir():
        raise OutputPathError(f"{flag} = {text!r}: not a directory")
    inputs = [str(path) for path in inputs if path]
    return [check_output(folder / name, flag=flag, inputs=inputs) for name in names]


def _owner_alive(middle: str) -> bool:
    """Whether the writer named in a temporary file's ``HOST~PID~RANDOM`` part may still run."""
    host, _, rest = middle.partition("~")
    pid = rest.partition("~")[0]
    if host != _HOST or not pid.isdigit():
        return True  # another host's, or an unknown name: only age makes it stale
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by another user
    return True


def _clear_stale(path: Path) -> None:
    """Remove temporaries of ``path`` left by writers that died (same host, no such
    process) or that are older than :data:`STALE_SECONDS`; a live writer's stays."""
    prefix, suffix = f".{path.name}.", f".tmp{path.suffix}"
    now = time.time()
    for stale in path.parent.glob(f"{glob.escape(prefix)}*{glob.escape(suffix)}"):
        middle = stale.name[len(prefix) : len(stale.name) - len(suffix)]
        try:
            old = now - stale.lstat().st_mtime > STALE_SECONDS
        except FileNotFoundError:
            continue
        if old or not _owner_alive(middle):
            stale.unlink(missing_ok=True)


def _fsync(path: str | Path, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | Path, write: Callable[[str], object]) -> Path:
    """``write(tmp)`` to a fresh temporary file beside ``path``, fsync it, then rename it
    onto ``path``, which must be a regular file or absent.

    A reader (or a crash) never sees a partial file under the final name; a failed
    write leaves neither the final file nor the temporary one. The temporary name,
    ``.NAME.HOST~PID~RANDOM.tmpSUFFIX``, is unique and names its writer, so the
    clean-up of leftovers never removes a live writer's file. The file gets the
    permissions of an ordinary new file (0666 less the umask), not ``mkstemp``'s 0600.
    """
    path = check_output(path, flag="output")
    path.parent.mkdir(parents=True, exist_ok=True)
    # A write killed outright (SIGKILL, power loss) cannot remove its temporary file.
    _clear_stale(path)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.{_HOST}~{os.getpid()}~", suffix=f".tmp{path.suffix}", dir=path.parent
    )
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        _fsync(tmp)
        check_output(path, flag="output")  # still not a device or directory
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:
        _fsync(path.parent, directory=True)
    except OSError:
        pass  # some file systems cannot sync a directory; the rename is done
    return path


#: zlib level of a compressed file.
COMPLEVEL = 4


def array_encoding(dtype: np.dtype, ndim: int, compress: bool) -> dict | None:
    """A variable's NetCDF4 encoding: the fletcher32 checksum (corruption is detected on
    read) for a numeric or boolean array, with zlib level :data:`COMPLEVEL` if
    ``compress``; ``None`` for scalars and text, stored as they are."""
    if dtype.kind not in "fiub" or ndim == 0:
        return None
    codec = {"zlib": True, "complevel": COMPLEVEL} if compress else {}
    return {**codec, "fletcher32": True}


def dataset_encoding(ds: xr.Dataset, compress: bool = True) -> dict:
    """:func:`array_encoding` of every variable of ``ds`` that has one."""
    encodings = {
        name: array_encoding(var.dtype, var.ndim, compress) for name, var in ds.variables.items()
    }
    return {name: encoding for name, encoding in encodings.items() if encoding is not None}


def write_atomic(ds: xr.Dataset, path: str | Path, *, compress: bool = True) -> Path:
    """Write ``ds`` as NetCDF4, atomically (:func:`atomic_write`), zlib-compressed
    unless ``compress`` is false.

    A run file is written uncompressed: its trajectories are float noise that zlib
    shrinks by only a fifth (20.6 MB to 16.1 MB for 1000 seeds), at 0.40 s of a
    1.0 s job, against 0.07 s uncompressed (docs/cluster.md); ``benchmark.nc``,
    the file users keep, is compressed.

    Text dimension labels (e.g. a run's ``outcome``) are written as CF auxiliary
    ``<dim>_label`` coordinates; :func:`spsa_bench.results.cf.open_labelled` restores them.
    """
    from spsa_bench.results.cf import labels_to_auxiliary

    ds = labels_to_auxiliary(ds)
    encoding = dataset_encoding(ds, compress)

    def write(tmp: str) -> None:
        try:
            ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=encoding)
        except (RuntimeError, OSError) as error:  # netCDF4 reports a full disk as RuntimeError
            raise cannot_write(path, error) from None

    return atomic_write(path, write)


def cannot_write(path: str | Path, error: Exception) -> OSError:
    """The error a failed NetCDF write raises: the path and the reason in one line."""
    reason = getattr(error, "strerror", None) or str(error)
    return OSError(f"{path}: cannot write ({reason})")
