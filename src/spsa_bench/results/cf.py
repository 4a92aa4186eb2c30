"""CF-1.11 attributes: the benchmark's own units as dimensionless quantities.

UDUNITS knows none of the benchmark's units (game pairs, games, jobs, Elo points,
the engine's parameter units). CF wants them as dimensionless, ``units: "1"``, with
the ``long_name`` saying what is counted or measured; the human unit is kept in the
project attribute ``spsa_bench_unit``. Values never change, only attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # a run is built and written without xarray (results.layout)
    import xarray as xr

CONVENTIONS = "CF-1.11"
#: Project attribute holding the human unit of a variable whose CF ``units`` is ``"1"``.
UNIT_ATTR = "spsa_bench_unit"
#: Project unit -> what its dimensionless values are, appended to the long_name in brackets.
PROJECT_UNITS = {
    "pairs": "count of game pairs",
    "games": "count of games",
    "jobs": "count of jobs",
    "batches": "multiples of the job's own size in pairs",
    "Elo": "Elo rating points",
    "theta units": "the engine's parameter units",
    "Elo per theta units squared": "Elo rating points per squared parameter unit",
}


def cf_attrs(attrs: Mapping[str, object]) -> dict[str, object]:
    """``attrs`` with a project unit rewritten as ``units: "1"`` (idempotent).

    ``{"long_name": L, "units": U}`` becomes ``{"long_name": f"{L} [{what U is}]",
    "units": "1", "spsa_bench_unit": U}``; other attributes pass through.
    """
    unit = attrs.get("units")
    if unit not in PROJECT_UNITS:
        return dict(attrs)
    what = PROJECT_UNITS[unit]
    long_name = str(attrs.get("long_name", ""))
    return {
        **attrs,
        "long_name": f"{long_name} [{what}]" if long_name else what,
        "units": "1",
        UNIT_ATTR: unit,
    }


def conform(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with every variable's attributes through :func:`cf_attrs` and ``Conventions`` set.

    Changes ``ds`` in place (attributes only) and returns it.
    """
    for variable in ds.variables.values():
        variable.attrs = cf_attrs(variable.attrs)
    ds.attrs["Conventions"] = CONVENTIONS
    return ds


#: Suffix of the auxiliary coordinate holding a text dimension's labels in a file.
LABEL_SUFFIX = "_label"


def text_dims(ds: xr.Dataset) -> list[str]:
    """The dimensions of ``ds`` whose coordinate variable holds text (not allowed by CF)."""
    return [str(dim) for dim in ds.dims if dim in ds.coords and ds[dim].dtype.kind in "OUS"]


def labels_to_auxiliary(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` as CF wants it in a file: each text dimension coordinate ``d`` becomes the
    auxiliary coordinate ``d_label(d)``, leaving ``d`` without a coordinate variable.

    CF requires a coordinate variable (a variable named like its dimension) to be
    numeric and monotonic; text labels are auxiliary coordinates. Values unchanged;
    a ``coordinates`` encoding kept from the files ``ds`` was read from is dropped,
    so xarray lists the coordinates the new file has.
    """
    dims = text_dims(ds)
    out = ds.drop_indexes(dims).rename_vars({dim: f"{dim}{LABEL_SUFFIX}" for dim in dims})
    for variable in out.variables.values():
        variable.encoding = {k: v for k, v in variable.encoding.items() if k != "coordinates"}
    return out


def labels_to_index(ds: xr.Dataset) -> xr.Dataset:
    """The inverse of :func:`labels_to_auxiliary`: each auxiliary ``d_label(d)`` becomes
    the dimension coordinate ``d`` again, indexed, so ``ds.sel(d=label)`` works.

    A file written before the labels moved (text coordinate variables) passes unchanged.
    """
    for name in [str(n) for n in ds.coords if str(n).endswith(LABEL_SUFFIX)]:
        dim = name.removesuffix(LABEL_SUFFIX)
        if ds[name].dims == (dim,) and dim not in ds.variables:
            ds = ds.rename_vars({name: dim}).set_xindex(dim)
    return ds


def open_labelled(path) -> xr.Dataset:
    """Open a NetCDF file of the benchmark lazily, text labels as dimension indexes
    (:func:`labels_to_index`), so ``ds.sel(path="macro")`` works on any layout.

    The rules every reader applies (:mod:`spsa_bench.results.reading`) hold: a regular
    NetCDF-4 file whose attributes are within their caps by its metadata and once
    decoded, else one :class:`~spsa_bench.results.reading.ReadError` naming it. The
    files with a known layout have their own readers with more checks
    (``open_benchmark``, ``open_tuning``)."""
    import xarray as xr

    from spsa_bench.results.reading import ReadError, check_attribute_sizes, check_metadata

    check_metadata(path)
    try:
        ds = labels_to_index(xr.open_dataset(path, engine="netcdf4"))
    except Exception as error:  # netCDF4 raises OSError/RuntimeError/ValueError variants
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ReadError(f"{path}: not a readable NetCDF file ({reason})") from None
    try:
        check_attribute_sizes(path, ds)
    except ReadError:
        ds.close()
        raise
    return ds
