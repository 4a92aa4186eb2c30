"""Streaming combine: ``results/benchmark.nc`` written cell by cell, in bounded memory.

The checkpoint variables (those with the ``pairs`` dimension: ``theta``, ``elo``,
``elo_loss``, ...) are almost all of the data. Pass 1 opens each run file,
checks it (:func:`~spsa_bench.results.combine.check_run`) and keeps a skeleton of
it, its first checkpoint only (the rest of a file is not read in pass 1); the
skeletons are combined exactly as the in-memory
:func:`~spsa_bench.results.combine.combine_benchmark` combines whole files, which
gives every other variable, the labels, the arm coordinates and the attributes.
The file is written from that skeleton with the checkpoint variables created
empty (NaN, chunked one cell per chunk); pass 2 reads each run file's checkpoint
variables with netCDF4 (no xarray decoding), checks them finite and writes them
into their slab. Peak memory: the skeleton (no ``pairs`` dimension) plus one run
file's checkpoint variables, whatever the number of cells.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from spsa_bench.results.atomic import _encoding, atomic_write
from spsa_bench.results.cf import labels_to_auxiliary
from spsa_bench.results.combine import (
    cell_key,
    check_finite,
    check_grid,
    check_run,
    combine_cells,
    finish_benchmark,
)
from spsa_bench.results.datasets import CELL_DIMS, open_run_head

GRID = "pairs"


def _skeletons(paths: Iterable[str | Path]) -> tuple[dict, dict, np.ndarray]:
    """``({cell: [skeleton]}, {cell: [path]}, grid)`` of the run files: each file's first
    checkpoint only, checked (finite values, one checkpoint grid); the checkpoint
    variables' other values are checked as pass 2 reads them (:func:`_write_file`)."""
    skeletons: dict[tuple, list[xr.Dataset]] = {}
    files: dict[tuple, list[Path]] = {}
    grid = None
    for path in paths:
        head, pairs = open_run_head(path)
        check_run(path, head, None)
        if grid is not None:
            check_grid(path, pairs, grid)
        grid = pairs if grid is None else grid
        key = cell_key(head)
        skeletons.setdefault(key, []).append(head)
        files.setdefault(key, []).append(Path(path))
    if grid is None:
        raise ValueError("no run files to combine")
    return skeletons, files, grid


def _coordinates_attr(body: xr.Dataset, dims: Sequence[str]) -> str:
    """CF ``coordinates`` of a variable over ``dims``: the auxiliary coordinates it spans."""
    aux = [
        str(n) for n, c in body.coords.items() if n not in body.dims and set(c.dims) <= set(dims)
    ]
    return " ".join(sorted(aux))


def _position(template: xr.Dataset, dim: str, labels) -> np.ndarray:
    """Positions of ``labels`` along ``dim`` of ``template``."""
    return template.indexes[dim].get_indexer(np.atleast_1d(labels))


def _slab(template: xr.Dataset, dims: Sequence[str], key: tuple, run) -> tuple:
    """The index, in the combined variable over ``dims``, of one run file's values: its
    cell (``key``) on the cell dimensions, its seeds and parameters, every checkpoint."""
    cell = dict(zip(CELL_DIMS, key, strict=True))
    index = []
    for dim in dims:
        if dim in cell:
            index.append(int(_position(template, dim, cell[dim])[0]))
        elif dim in run.variables:  # seed, param: the file's labels
            where = _position(template, dim, run[dim][:])
            contiguous = np.array_equal(where, np.arange(where[0], where[0] + where.size))
            index.append(slice(where[0], where[0] + where.size) if contiguous else list(where))
        else:  # pairs (checked equal to the template's grid), and any unlabelled dim
            index.append(slice(None))
    return tuple(index)


def _write_file(nc, template: xr.Dataset, big: Mapping[str, xr.Variable], key, path) -> None:
    """Copy one run file's checkpoint variables into their slabs of ``nc``, each checked
    finite (the check :func:`_skeletons` made of the first checkpoint only)."""
    import netCDF4

    with netCDF4.Dataset(path) as run:
        run.set_auto_mask(False)  # NaN stays NaN (the _FillValue of float variables)
        for name, variable in big.items():
            if name not in run.variables:
                continue
            source = run[name]
            values = source[:]
            attrs = {k: source.getncattr(k) for k in source.ncattrs()}
            check_finite(path, name, values.dtype, values, attrs)
            kept = [d for d in variable.dims if d not in CELL_DIMS]
            values = np.transpose(values, [source.dimensions.index(d) for d in kept])
            nc[name][_slab(template, variable.dims, key, run)] = values


def _write(tmp: str, template: xr.Dataset, big: Mapping[str, xr.Variable], files: Mapping) -> None:
    """Write ``template``, then create the ``big`` variables (given by their first
    checkpoint; zlib level 1 with the shuffle filter: as small as level 4 on these
    floats, 13% faster to write) and write each run file's data into them."""
    import netCDF4

    body = labels_to_auxiliary(template)
    body.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=_encoding(body))
    with netCDF4.Dataset(tmp, "a") as nc:
        for name, variable in big.items():
            chunks = [1 if d in CELL_DIMS else template.sizes[d] for d in variable.dims]
            out = nc.createVariable(
                name,
                variable.dtype,
                variable.dims,
                zlib=True,
                complevel=1,
                shuffle=True,
                chunksizes=chunks,
                fill_value=np.nan if variable.dtype.kind == "f" else None,
            )
            out.setncatts({**variable.attrs, "coordinates": _coordinates_attr(body, variable.dims)})
        for key, paths in files.items():
            for path in paths:
                _write_file(nc, template, big, key, path)


def stream_benchmark(
    paths: Iterable[str | Path],
    output: str | Path,
    order: Mapping[str, Sequence[str]] | None = None,
    config_json: str | None = None,
    command: str | None = None,
) -> xr.Dataset:
    """Write ``output`` as :func:`combine_benchmark` + :func:`write_benchmark` would,
    holding one cell of checkpoint data at a time; returns the skeleton (no checkpoints).
    """
    skeletons, files, grid = _skeletons(paths)
    template = finish_benchmark(combine_cells(skeletons), order, config_json, command)
    big = {str(n): v.variable for n, v in template.data_vars.items() if GRID in v.dims}
    pairs = template[GRID].attrs
    template = template.drop_vars([*big, GRID]).assign_coords({GRID: (GRID, grid, pairs)})
    atomic_write(output, lambda tmp: _write(tmp, template, big, files))
    return template
