"""Atomic file writing: a reader or a crash never sees a partial file under its final name."""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import xarray as xr


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, write: Callable[[str], object]) -> Path:
    """``write(tmp)`` to a fresh temporary file beside ``path``, then rename it onto ``path``.

    A reader (or a crash) never sees a partial file under the final name; a failed
    write leaves neither the final file nor the temporary one. The file gets the
    permissions of an ordinary new file (0666 less the umask), not ``mkstemp``'s 0600.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A write killed outright (SIGKILL, power loss) cannot remove its temporary
    # file: drop what earlier, interrupted writes of this same path left behind.
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp{glob.escape(path.suffix)}"):
        stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent
    )
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _encoding(ds: xr.Dataset) -> dict:
    """zlib level 4 for every numeric array (scalars and strings are stored as they are)."""
    return {
        name: {"zlib": True, "complevel": 4}
        for name, var in ds.variables.items()
        if var.dtype.kind in "fiub" and var.ndim > 0
    }


def write_atomic(ds: xr.Dataset, path: str | Path) -> Path:
    """Write ``ds`` as compressed NetCDF4, atomically (:func:`atomic_write`)."""
    encoding = _encoding(ds)
    return atomic_write(
        path, lambda tmp: ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=encoding)
    )
