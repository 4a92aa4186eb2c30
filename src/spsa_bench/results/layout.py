"""A dataset's layout without xarray: variables, coordinates and attributes as numpy
arrays, written straight to NetCDF4 in the layout ``xarray.Dataset.to_netcdf`` gives.

A ``spsa-bench simulate`` process builds one run and writes it: importing xarray
(and pandas with it) for that alone costs it more than a sixth of its time
(docs/performance.md, "Whole process"). :class:`Layout` holds what the run's
:class:`xarray.Dataset` would, :meth:`Layout.write` writes it with netCDF4 the way
xarray's ``netcdf4`` engine does, and :meth:`Layout.to_dataset` gives the dataset
to whoever wants one. Every variable is defined before any data is written: the
netCDF library leaves define mode once instead of once per variable (xarray's way),
which costs about 10 ms of a 1000-seed run's write. The HDF5 objects then sit
elsewhere in the file than in xarray's, so the tests check that a file written here
and the file xarray writes from :meth:`Layout.to_dataset` hold the same for a netCDF
reader: dimensions, variables in order with their types, attributes, chunking,
filters and values bit for bit, and the global attributes.

The CF encoding reproduced here covers what a run holds (no dates, no packing):

- a float variable gets ``_FillValue = NaN`` (xarray's default), an integer or
  string variable none;
- a boolean is stored as ``int8`` with the attribute ``dtype = "bool"``;
- text is a variable-length string; a text dimension coordinate ``d`` is written
  as the auxiliary coordinate ``d_label`` (:func:`spsa_bench.results.cf.labels_to_auxiliary`);
- every data variable lists, sorted, in its ``coordinates`` attribute the
  non-dimension coordinates whose dimensions it has; a coordinate listed by no
  variable goes in the global ``coordinates`` attribute;
- numeric arrays get the fletcher32 checksum (and zlib with the shuffle filter
  when compressed), as :func:`spsa_bench.results.atomic.write_atomic` asks, and
  trajectories one chunk per checkpoint (:meth:`Layout.encoding`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.results.atomic import COMPLEVEL, array_encoding, atomic_write, cannot_write
from spsa_bench.results.cf import CONVENTIONS, LABEL_SUFFIX, cf_attrs

if TYPE_CHECKING:
    import xarray as xr


@dataclasses.dataclass
class Variable:
    """One variable: its dimensions, values (a numpy array, 0-d for a scalar; text as
    ``str`` in a unicode or object array) and attributes."""

    dims: tuple[str, ...]
    values: np.ndarray
    attrs: dict[str, object]

    @classmethod
    def of(cls, dims, values, attrs: Mapping[str, object] | None = None) -> Variable:
        values = np.asarray(values)
        dims = (dims,) if isinstance(dims, str) else tuple(dims)
        if len(dims) != values.ndim:
            raise ValueError(f"dimensions {dims} for an array of shape {values.shape}")
        return cls(dims, values, cf_attrs(dict(attrs or {})))

    @property
    def is_text(self) -> bool:
        return self.values.dtype.kind in "OU"


@dataclasses.dataclass
class Layout:
    """Variables in file order, which of them are coordinates, and the global attributes."""

    variables: dict[str, Variable]
    coord_names: set[str]
    attrs: dict[str, object]

    @classmethod
    def build(
        cls,
        data_vars: Mapping[str, tuple],
        coords: Mapping[str, tuple],
        attrs: Mapping[str, object],
    ) -> Layout:
        """From ``{name: (dims, values, attrs)}`` of data variables and coordinates (file
        order: the data variables, then the coordinates), with ``Conventions`` set."""
        variables = {name: Variable.of(*spec) for name, spec in data_vars.items()}
        clash = sorted(set(variables) & set(coords))
        if clash:
            raise ValueError(f"both data variables and coordinates: {clash}")
        variables |= {name: Variable.of(*spec) for name, spec in coords.items()}
        layout = cls(variables, set(coords), {**attrs, "Conventions": CONVENTIONS})
        layout.check_dims()
        return layout

    def add(self, name: str, dims, values, attrs=None, *, coord: bool = False) -> None:
        """Append a variable (a coordinate when ``coord``) at the end of the file order."""
        self.variables[name] = Variable.of(dims, values, attrs)
        if coord:
            self.coord_names.add(name)
        self.check_dims()

    def __getitem__(self, name: str) -> np.ndarray:
        return self.variables[name].values

    def check_dims(self) -> None:
        """Every dimension has one length, and a variable named like a dimension is 1-D along it."""
        sizes: dict[str, int] = {}
        for name, variable in self.variables.items():
            for dim, size in zip(variable.dims, variable.values.shape, strict=True):
                if sizes.setdefault(dim, size) != size:
                    raise ValueError(f"{name}: dimension {dim} has length {size}, not {sizes[dim]}")
            if name in sizes and variable.dims not in ((name,), ()) and name not in variable.dims:
                raise ValueError(
                    f"{name} is a dimension name but its dimensions are {variable.dims}"
                )

    def to_dataset(self) -> xr.Dataset:
        """The :class:`xarray.Dataset` (variables in this order, the same attributes)."""
        import xarray as xr

        data = {name: (v.dims, v.values, dict(v.attrs)) for name, v in self.variables.items()}
        return xr.Dataset(data, attrs=dict(self.attrs)).set_coords(sorted(self.coord_names))

    def encoding(self, compress: bool = True) -> dict[str, dict]:
        """Per numeric array: the fletcher32 checksum (corruption is detected on read),
        zlib level :data:`COMPLEVEL` with the shuffle filter if ``compress``, and one
        chunk per checkpoint for the variables along ``pairs`` (others: netCDF's default).

        One chunk per checkpoint writes a 1000-seed run's theta in 16 ms instead of the
        38 ms of netCDF's default chunks (whose checksums and copies into chunk order
        cost more than the data) and reads the first checkpoint (``combine``'s first
        pass) in 1 ms instead of 10 (docs/performance.md, "Whole process"). Text and scalars are
        stored as they are."""
        out = {}
        for name, variable in self.variables.items():
            values = variable.values
            encoding = array_encoding(values.dtype, values.ndim, compress)
            if encoding is None:
                continue
            out[name] = encoding
            if "pairs" in variable.dims and variable.values.ndim > 1:
                shape = variable.values.shape
                pairs = zip(variable.dims, shape, strict=True)
                chunks = [1 if dim == "pairs" else size for dim, size in pairs]
                out[name]["chunksizes"] = tuple(chunks)
        return out

    def write(self, path: str | Path, *, compress: bool = True) -> Path:
        """Write atomically as NetCDF4 (:func:`spsa_bench.results.atomic.atomic_write`),
        what xarray's ``to_netcdf`` writes from :meth:`to_dataset` with :meth:`encoding`
        (the text dimension labels made auxiliary first, as
        :func:`spsa_bench.results.atomic.write_atomic` does), the variables all defined
        before any is written."""

        def write(tmp: str) -> None:
            try:
                _write_netcdf(self, tmp, compress)
            except (RuntimeError, OSError) as error:  # a full disk is a RuntimeError
                raise cannot_write(path, error) from None

        return atomic_write(path, write)


def _file_variables(layout: Layout) -> tuple[dict[str, Variable], set[str]]:
    """The variables as they go in a file: a text dimension coordinate ``d`` renamed
    ``d_label`` (then no longer a dimension coordinate); and the coordinate names."""
    variables, coords = {}, set()
    for name, variable in layout.variables.items():
        text_dim = variable.is_text and variable.dims == (name,) and name in layout.coord_names
        new_name = f"{name}{LABEL_SUFFIX}" if text_dim else name
        variables[new_name] = variable
        if name in layout.coord_names:
            coords.add(new_name)
    return variables, coords


def _coordinates(variables: dict[str, Variable], coords: set[str]) -> tuple[dict, str | None]:
    """The ``coordinates`` attribute of each variable and the global one (xarray's rule)."""
    non_dim = [name for name in variables if name in coords and variables[name].dims != (name,)]
    listed: dict[str, list[str]] = {name: [] for name in variables}
    for coord in non_dim:
        target = set(variables[coord].dims)
        for name, variable in variables.items():
            if name not in non_dim and name not in variable.dims and target <= set(variable.dims):
                listed[name].append(coord)
    per_variable = {name: " ".join(sorted(found)) for name, found in listed.items() if found}
    written = {coord for text in per_variable.values() for coord in text.split()}
    left = sorted(set(non_dim) - written)
    return per_variable, " ".join(left) if left else None


def _write_netcdf(layout: Layout, path: str, compress: bool) -> None:
    import netCDF4

    variables, coords = _file_variables(layout)
    per_variable, global_coordinates = _coordinates(variables, coords)
    attrs = dict(layout.attrs)
    if global_coordinates is not None:
        attrs["coordinates"] = global_coordinates
    with netCDF4.Dataset(path, mode="w", format="NETCDF4") as nc:
        for key, value in attrs.items():
            _set_attribute(nc, key, value)
        sizes: dict[str, int] = {}
        for variable in variables.values():
            sizes.update(zip(variable.dims, variable.values.shape, strict=True))
        for dim, size in sizes.items():
            nc.createDimension(dim, size)
        encoding = layout.encoding(compress)
        defined = [
            _define_variable(nc, name, variable, per_variable.get(name), encoding.get(name, {}))
            for name, variable in variables.items()
        ]
        for nc_var, values in defined:  # once every variable is defined: one end of define mode
            nc_var[...] = values


def _define_variable(nc, name: str, variable: Variable, coordinates, encoding: dict) -> tuple:
    """Define ``name`` in ``nc`` with its attributes; returns it and the values to write."""
    values, attrs = variable.values, dict(variable.attrs)
    if coordinates is not None:
        attrs["coordinates"] = coordinates
    if values.dtype.kind == "b":
        values = values.astype(np.int8)
        attrs["dtype"] = "bool"
    fill = np.nan if values.dtype.kind == "f" else None
    datatype = str if variable.is_text else values.dtype
    if values.dtype.kind == "U":
        values = values.astype(object)
    nc_var = nc.createVariable(
        name,
        datatype,
        variable.dims,
        zlib=encoding.get("zlib", False),
        complevel=encoding.get("complevel", COMPLEVEL),
        shuffle=True,
        fletcher32=encoding.get("fletcher32", False),
        contiguous=False,
        chunksizes=encoding.get("chunksizes"),
        endian="native",
        fill_value=fill,
    )
    nc_var.setncatts(attrs)
    nc_var.set_auto_maskandscale(False)
    return nc_var, values


def _set_attribute(target, key: str, value) -> None:
    """As xarray's netCDF4 backend: a list of strings as a string array, else as given."""
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        target.setncattr_string(key, value)
    else:
        target.setncattr(key, value)
