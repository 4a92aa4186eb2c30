"""How many bytes a NetCDF-4 file's attributes take, read from its HDF5 metadata.

netCDF-C reads every attribute of a group or variable, values included, the first
time any of them is asked for (``ncattrs()`` already does), and xarray decodes and
copies them all when it opens a file: a 300 MB attribute planted in a run file cost
about 1 GB of memory before any check could see it. This module asks the HDF5
library netCDF4 itself loaded (through :mod:`ctypes`) for each object's header and
attribute storage sizes instead (``H5Oget_native_info``: the object header's total
space, where attributes under 64 KiB live, plus the fractal heap and index that
hold larger ones), which reads no attribute value. For each object ``o`` (the root
group, i.e. the file's own attributes, and every variable)::

    storage(o) = header_total(o) + attribute_heap(o) + attribute_index(o)

an upper bound of the bytes its attributes hold. :func:`attribute_storage` returns
those bounds; the readers (:mod:`spsa_bench.results.datasets`) refuse a file whose
total is over their cap before opening it with netCDF4 or xarray.
"""

from __future__ import annotations

import ctypes
import functools
import re
from pathlib import Path

#: The signature an HDF5 file (so a NetCDF-4 file as spsa-bench writes it) starts with.
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

_HID = ctypes.c_int64
_HSIZE = ctypes.c_uint64
#: ``H5O_NATIVE_INFO_HDR | H5O_NATIVE_INFO_META_SIZE`` (H5Opublic.h), ``H5O_INFO_BASIC``.
_NATIVE_FIELDS, _INFO_BASIC = 0x0008 | 0x0010, 0x0001
#: ``H5_INDEX_NAME``, ``H5_ITER_NATIVE``, ``H5F_ACC_RDONLY``, ``H5P_DEFAULT``, ``H5E_DEFAULT``.
_INDEX_NAME, _ITER_NATIVE, _READ_ONLY, _DEFAULT = 0, 2, 0, 0


class _Space(ctypes.Structure):
    _fields_ = [("total", _HSIZE), ("meta", _HSIZE), ("mesg", _HSIZE), ("free", _HSIZE)]


class _Messages(ctypes.Structure):
    _fields_ = [("present", ctypes.c_uint64), ("shared", ctypes.c_uint64)]


class _Header(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint),
        ("nmesgs", ctypes.c_uint),
        ("nchunks", ctypes.c_uint),
        ("flags", ctypes.c_uint),
        ("space", _Space),
        ("mesg", _Messages),
    ]


class _IndexHeap(ctypes.Structure):
    _fields_ = [("index_size", _HSIZE), ("heap_size", _HSIZE)]


class _NativeInfo(ctypes.Structure):
    """``H5O_native_info_t``: the header, then ``meta_size.obj`` and ``meta_size.attr``."""

    _fields_ = [("hdr", _Header), ("obj", _IndexHeap), ("attr", _IndexHeap)]


_VISIT = ctypes.CFUNCTYPE(ctypes.c_int, _HID, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p)


def _loaded_hdf5() -> str | None:
    """The path of the HDF5 library the netCDF4 module loaded (its wheel bundles one)."""
    import netCDF4  # noqa: F401 - loads libnetcdf and the libhdf5 it links

    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        maps = ""
    for line in maps.splitlines():
        path = line.split(maxsplit=5)[-1] if line.count(" ") >= 5 else ""
        if re.search(r"/libhdf5(-[0-9a-f]+)?\.so", path):
            return path
    import ctypes.util

    return ctypes.util.find_library("hdf5")


@functools.lru_cache(maxsize=1)
def _library():
    """The HDF5 library with the prototypes used here, or None when it is not found."""
    path = _loaded_hdf5()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        lib.H5Fopen.restype = _HID
        lib.H5Fopen.argtypes = [ctypes.c_char_p, ctypes.c_uint, _HID]
        lib.H5Fclose.argtypes = [_HID]
        lib.H5Oget_native_info_by_name.argtypes = [
            _HID,
            ctypes.c_char_p,
            ctypes.POINTER(_NativeInfo),
            ctypes.c_uint,
            _HID,
        ]
        lib.H5Ovisit3.argtypes = [
            _HID,
            ctypes.c_int,
            ctypes.c_int,
            _VISIT,
            ctypes.c_void_p,
            ctypes.c_uint,
        ]
        lib.H5Eset_auto2.argtypes = [_HID, ctypes.c_void_p, ctypes.c_void_p]
    except (OSError, AttributeError):
        return None
    lib.H5Eset_auto2(_DEFAULT, None, None)  # no HDF5 diagnostics on stderr (netCDF-C does the same)
    return lib


class NotHDF5(ValueError):
    """The file is not an HDF5 file HDF5 can open (not NetCDF-4, or truncated)."""


def attribute_storage(path: str | Path) -> dict[str, int] | None:
    """``{object: bytes}``: the bound ``storage(o)`` of the module docstring for the root
    group (``"/"``) and every variable of the NetCDF-4 file ``path``, read from its
    metadata only. ``None`` when the HDF5 library cannot be found (the readers then
    fall back to the size of each attribute once decoded). Raises :class:`NotHDF5`
    when the file does not start with the HDF5 signature or HDF5 cannot open it."""
    path = Path(path)
    with path.open("rb") as handle:
        if handle.read(len(HDF5_SIGNATURE)) != HDF5_SIGNATURE:
            raise NotHDF5("no HDF5 signature: not a NetCDF-4 file")
    lib = _library()
    if lib is None:
        return None
    sizes: dict[str, int] = {}

    def visit(obj, name, _info, _data) -> int:
        try:
            info = _NativeInfo()
            if lib.H5Oget_native_info_by_name(obj, name, ctypes.byref(info), _NATIVE_FIELDS, 0) < 0:
                return -1
            label = "/" if name == b"." else name.decode("utf-8", "replace")
            sizes[label] = int(info.hdr.space.total + info.attr.heap_size + info.attr.index_size)
            return 0
        except Exception:  # never raise through the C library
            return -1

    callback = _VISIT(visit)
    handle = lib.H5Fopen(str(path).encode(), _READ_ONLY, _DEFAULT)
    if handle < 0:
        raise NotHDF5("HDF5 cannot open it (truncated or damaged)")
    try:
        status = lib.H5Ovisit3(handle, _INDEX_NAME, _ITER_NATIVE, callback, None, _INFO_BASIC)
    finally:
        lib.H5Fclose(handle)
    if status < 0:
        raise NotHDF5("HDF5 cannot read its object headers (truncated or damaged)")
    return sizes
