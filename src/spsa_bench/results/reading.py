"""The rules every reader of a file spsa-bench wrote applies before trusting it.

A refusal is one :class:`ReadError` (a ``ValueError``) naming the file and the field:

- the path is a regular file (a FIFO with no writer would block the read, a device
  or a directory is not a result) and an HDF5 (NetCDF-4) file HDF5 can open;
- its attributes, measured from the file's metadata before any is read
  (:mod:`spsa_bench.results.hdf5meta`), take at most :data:`MAX_ATTRIBUTE_STORAGE`
  bytes in all, and once decoded each is at most :data:`MAX_ATTRIBUTE_BYTES`;
- a cell label is a configuration name (:data:`LABEL`);
- a variable's chunks pass their fletcher32 checksum when read (:func:`load_checked`
  eagerly; :func:`spsa_bench.results.combine.open_benchmark` lazily).
"""

from __future__ import annotations

import os
import re
import stat
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import xarray as xr

#: The largest attribute a reader accepts, in bytes (the largest real one, a run file's
#: ``config``, is a few kB; the combined file's is the resolved configuration).
MAX_ATTRIBUTE_BYTES = 1 << 20
#: A cell label as the configuration's names are (``NAME_PATTERN`` of
#: :mod:`spsa_bench.config.schema_fragments`): no path separator, no dot, no control.
LABEL = re.compile(r"[a-z0-9][a-z0-9_-]*")


class ReadError(ValueError):
    """A file a reader refuses; the message names the file and the variable or field."""


def check_attribute_sizes(path, ds: xr.Dataset) -> None:
    """Refuse an attribute of the file or of a variable larger than
    :data:`MAX_ATTRIBUTE_BYTES`, before anything copies it."""
    owners = [("", ds.attrs), *((f"{name}:", v.attrs) for name, v in ds.variables.items())]
    for prefix, attrs in owners:
        for key, value in attrs.items():
            size = np.asarray(value).nbytes if not isinstance(value, str) else len(value)
            if size > MAX_ATTRIBUTE_BYTES:
                raise ReadError(
                    f"{path}: attribute {prefix}{key} is {size:,} bytes, more than the "
                    f"limit of {MAX_ATTRIBUTE_BYTES:,}"
                )


def check_label(path, dim: str, values) -> None:
    """Refuse a cell label that is not a configuration name (``../../etc``, a control)."""
    for value in np.atleast_1d(values).tolist():
        if not isinstance(value, str) or not LABEL.fullmatch(value):
            raise ReadError(
                f"{path}: {dim} label {str(value)[:80]!r} is not a configuration name "
                "(lower-case letters, digits, '-' and '_')"
            )


def corrupt(path, name: str) -> ReadError:
    """The refusal of a variable whose data the file's checksum (or HDF5) rejects."""
    return ReadError(
        f"{path}: checksum mismatch in variable {name} (the file is corrupt; rerun the job "
        "that wrote it)"
    )


def load_checked(path, ds: xr.Dataset) -> xr.Dataset:
    """``ds`` loaded variable by variable, a variable whose chunks fail their fletcher32
    checksum (netCDF4's ``RuntimeError: NetCDF: HDF error``) refused by name."""
    for name, variable in ds.variables.items():
        try:
            variable.load()
        except RuntimeError:
            raise corrupt(path, str(name)) from None
    return ds


#: The most bytes all attributes of a file may take by its HDF5 metadata (the object
#: headers, where small attributes live, plus the heaps of large ones), checked before
#: any attribute is read. A real file's is far below it: the tiny test run's
#: ``benchmark.nc`` 90 kB, a run file 49 kB (most of it the headers of the variables).
MAX_ATTRIBUTE_STORAGE = 16 << 20


def check_metadata(path, unreadable: str = "not a readable NetCDF file") -> None:
    """Refuse ``path`` (:class:`ReadError`, ``"PATH: <unreadable> (reason)"`` or naming
    the attributes' size) unless it is a regular file, an HDF5 file HDF5 can open and
    its attributes take at most :data:`MAX_ATTRIBUTE_STORAGE` bytes by its metadata::

        sum over objects o (the file, each variable) of header(o) + attribute heap(o)

    read without reading any attribute value, so a planted 300 MB attribute costs no
    memory. Where the HDF5 library cannot be found, only the first two rules apply and
    :func:`check_attribute_sizes` (after decoding) is the guard."""
    from spsa_bench.results.hdf5meta import NotHDF5, attribute_storage

    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise ReadError(f"{path}: {unreadable} ({error.strerror or error})") from None
    if not stat.S_ISREG(mode):
        raise ReadError(f"{path}: {unreadable} (not a regular file: a FIFO, device or directory)")
    try:
        sizes = attribute_storage(path)
    except NotHDF5 as error:
        raise ReadError(f"{path}: {unreadable} ({error})") from None
    except OSError as error:
        raise ReadError(f"{path}: {unreadable} ({error.strerror or error})") from None
    if sizes is None:
        return
    total = sum(sizes.values())
    if total > MAX_ATTRIBUTE_STORAGE:
        largest = max(sizes, key=sizes.__getitem__)
        owner = "the file's own attributes" if largest == "/" else f"variable {largest}"
        raise ReadError(
            f"{path}: its attributes take {total:,} bytes by the file's metadata (most in "
            f"{owner}: {sizes[largest]:,}), more than the limit of "
            f"{MAX_ATTRIBUTE_STORAGE:,}; refused before reading them"
        )
