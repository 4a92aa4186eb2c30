"""Streaming combine: ``results/benchmark.nc`` written cell by cell, in bounded memory.

The checkpoint variables (those with the ``pairs`` dimension: ``theta``, ``elo``,
``elo_loss``, ...) are almost all of the data. Pass 1 reads each run file once,
checks it (:func:`~spsa_bench.results.combine.check_run`) and keeps a skeleton of
it, its first checkpoint only; the skeletons are combined exactly as the in-memory
:func:`~spsa_bench.results.combine.combine_benchmark` combines whole files, which
gives every other variable, the labels, the arm coordinates and the attributes.
The file is written from that skeleton with the checkpoint variables created
empty (NaN, chunked one cell per chunk); pass 2 reads one cell's run files at a
time and writes their checkpoint data into the cell's slab. Peak memory: the
skeleton (no ``pairs`` dimension) plus one cell, whatever the number of cells.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from spsa_bench.results.atomic import _encoding, atomic_write
from spsa_bench.results.cf import labels_to_auxiliary
from spsa_bench.results.combine import (
    cell_dataset,
    cell_key,
    check_run,
    combine_cells,
    finish_benchmark,
)
from spsa_bench.results.datasets import CELL_DIMS, open_run

GRID = "pairs"


def _skeletons(paths: Iterable[str | Path]) -> tuple[dict, dict, np.ndarray]:
    """``({cell: [skeleton]}, {cell: [path]}, grid)`` of the run files, each checked."""
    skeletons: dict[tuple, list[xr.Dataset]] = {}
    files: dict[tuple, list[Path]] = {}
    grid = None
    for path in paths:
        ds = open_run(path)
        check_run(path, ds, grid)
        grid = ds[GRID].values if grid is None else grid
        key = cell_key(ds)
        skeletons.setdefault(key, []).append(ds.isel({GRID: [0]}))  # a copy: ds is freed
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


def _slab(template: xr.Dataset, cell: xr.DataArray, dims: Sequence[str]) -> tuple:
    """The index of ``cell``'s values in the variable of ``template`` over ``dims``."""
    index = []
    for dim in dims:
        if dim == GRID:
            index.append(slice(None))
            continue
        where = template.indexes[dim].get_indexer(cell[dim].values)
        contiguous = np.array_equal(where, np.arange(where[0], where[0] + where.size))
        index.append(slice(where[0], where[0] + where.size) if contiguous else list(where))
    return tuple(index)


def _write(tmp: str, template: xr.Dataset, big: Mapping[str, xr.Variable], files: Mapping) -> None:
    """Write ``template``, then create the ``big`` variables (given by their first
    checkpoint) and write each cell's data into them."""
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
                complevel=4,
                chunksizes=chunks,
                fill_value=np.nan if variable.dtype.kind == "f" else None,
            )
            out.setncatts({**variable.attrs, "coordinates": _coordinates_attr(body, variable.dims)})
        for key, paths in files.items():
            cell, _ = cell_dataset([open_run(p) for p in paths], key)
            for name in big:
                if name in cell:
                    values = cell[name].transpose(*big[name].dims)
                    nc[name][_slab(template, values, values.dims)] = values.values


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
