"""Streaming combine: ``results/benchmark.nc`` written cell by cell, in bounded memory.

The checkpoint variables (those with the ``pairs`` dimension: ``theta``, ``elo``,
``elo_loss``, ...; not the optimizer state ``x``, ``z``, which stay in the run files) are almost all of the data, the per-seed variables (KPIs, outcome
counts, per-worker figures) most of the rest. Pass 1 opens each run file and keeps a
skeleton of it: its first checkpoint at its first :data:`SKELETON_SEEDS` seeds, plus
its few bytes a seed of integer and boolean per-seed values whole (:func:`_kept_whole`),
both checked (:func:`~spsa_bench.results.combine.check_run`). The skeletons are combined exactly
as the in-memory :func:`~spsa_bench.results.combine.combine_benchmark` combines whole
files, which gives every variable's dims, dtype and attributes, the labels, the arm
coordinates and the attributes of the file; the seed axis is the union of the
files' seeds. The file is written from that template with the streamed variables
(:func:`_streamed`: the checkpoint variables, the per-seed float variables and, when
every cell has every seed, the per-seed integer variables over more than the seed,
such as the per-worker counts) created empty (NaN for floats) and chunked one cell
per chunk; pass 2 reads each run file's streamed variables with
netCDF4 (no xarray decoding), checks them finite and writes them into their slab.
Peak memory: the template (two seeds per file), one run file's data and one cell's
chunk of each streamed variable (the chunk cache, :data:`CACHE_SLACK`), whatever the
number of cells; the file equals the in-memory one bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from spsa_bench.results.atomic import atomic_write, dataset_encoding
from spsa_bench.results.cf import labels_to_auxiliary
from spsa_bench.results.combine import (
    PARAM_PADDING,
    cell_key,
    check_cell,
    check_finite,
    check_grid,
    check_run,
    combine_cells,
    finish_benchmark,
)
from spsa_bench.results.datasets import CELL_DIMS, corrupt, open_run_head, optimizer_state

GRID = "pairs"


#: Seeds of each run file a skeleton keeps: two, so that "constant along seed" (how
#: the combine reduces per-parameter coordinates) reads the same as on every seed:
#: a per-seed instance differs between any two seeds, a shared one never does.
SKELETON_SEEDS = 2

#: Bytes of each streamed variable's chunk cache beyond its one chunk (HDF5 caches a
#: chunk only if it fits), and the slots of its hash table (a small prime).
CACHE_SLACK = 1 << 16
CACHE_SLOTS = 7


def _per_seed(variable) -> bool:
    return "seed" in variable.dims and GRID not in variable.dims


def _wide_integer(name, variable) -> bool:
    """A per-seed integer variable over more than the seed (the per-worker counts, the
    outcome counts): streamed when every cell has every seed (:func:`_streamed`)."""
    return (
        _per_seed(variable)
        and variable.dtype.kind in "iu"
        and bool(set(variable.dims) - {"seed", *CELL_DIMS})
        and name not in PARAM_PADDING
    )


def _kept_whole(head: xr.Dataset) -> list[str]:
    """Per-seed variables a skeleton keeps whole, a few bytes a seed: the integer and
    boolean ones over the seed alone, and the padded-with-a-value
    :data:`~spsa_bench.results.combine.PARAM_PADDING` ones. The float ones are always
    streamed, the :func:`_wide_integer` ones when every cell has every seed."""
    kept = [
        str(n)
        for n, v in head.data_vars.items()
        if _per_seed(v) and (v.dtype.kind != "f" or n in PARAM_PADDING) and not _wide_integer(n, v)
    ]
    # a padded-with-a-value one the file shares over its seeds (a coordinate over the
    # parameter alone) becomes per seed when some cell lacks some seed: keep it too
    return kept + [n for n in PARAM_PADDING if n in head.variables and n not in kept]


#: ``progress(step, done, total)``: after each run file of a pass (``step`` is
#: :data:`READING` or :data:`WRITING`), ``done`` files of ``total``; pass 2 is also
#: reported at ``done = 0`` as it starts (with the template of every cell).
Progress = Callable[[str, int, int], None]
READING, WRITING = "reading", "writing"


def quarter_lines(write: Callable[[str], None], label: str = "combine") -> Progress:
    """A :data:`Progress` that calls ``write`` with one line at each quarter of each pass
    (the last file of a pass included, and a pass's start when it is reported at 0
    files), with the seconds since it was made: about nine lines for a combine of any
    size, e.g. ``combine: writing, 435 of 870 run files (50%, 62 s)``."""
    import time

    start = time.perf_counter()
    told: dict[str, int] = {}

    def progress(step: str, done: int, total: int) -> None:
        quarter = 4 * done // max(total, 1)
        if quarter > told.get(step, 0) or (done == 0 and step not in told):
            told[step] = quarter
            seconds = time.perf_counter() - start
            write(
                f"{label}: {step}, {done:,} of {total:,} run files "
                f"({100 * done // max(total, 1)}%, {seconds:.0f} s)"
            )

    return progress


def _skeletons(
    paths: Iterable[str | Path],
    order: Mapping[str, Sequence[str]] | None = None,
    param_counts: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> tuple[dict, dict, dict, np.ndarray, np.ndarray]:
    """``({cell: [skeleton]}, {cell: [whole]}, {cell: [path]}, seeds, grid)`` of the run
    files. A skeleton is a file's first checkpoint at its first :data:`SKELETON_SEEDS`
    seeds; ``whole`` its :func:`_kept_whole` variables at every seed. Both are checked
    (finite values, one checkpoint grid), and each file's cell against the others
    (:func:`~spsa_bench.results.combine.check_cell`: labels among ``order``'s, one
    parameter count per scenario, ``param_counts``' when given); the other values are checked as pass 2 reads them
    (:func:`_write_file`)."""
    skeletons: dict[tuple, list[xr.Dataset]] = {}
    wholes: dict[tuple, list[xr.Dataset]] = {}
    files: dict[tuple, list[Path]] = {}
    seeds, grid, params = [], None, {}
    paths = list(paths)
    for done, path in enumerate(paths, start=1):
        head, pairs = open_run_head(path)
        head = head.drop_vars(optimizer_state(head))  # not in benchmark.nc (combine_runs)
        whole = head[_kept_whole(head)].copy(deep=True)  # not a view holding the file's head
        skeleton = head.isel(seed=slice(0, SKELETON_SEEDS)).copy(deep=True)  # not a view
        check_run(path, skeleton, None)
        check_run(path, whole, None)
        if grid is not None:
            check_grid(path, pairs, grid)
        grid = pairs if grid is None else grid
        key = cell_key(head)
        check_cell(path, head, key, order, params, param_counts)
        seeds.append(head["seed"].values)
        skeletons.setdefault(key, []).append(skeleton)
        wholes.setdefault(key, []).append(whole)
        files.setdefault(key, []).append(Path(path))
        del head
        if progress is not None:
            progress(READING, done, len(paths))
    if grid is None:
        raise ValueError("no run files to combine")
    return skeletons, wholes, files, np.unique(np.concatenate(seeds)), grid


def _streamed(template: xr.Dataset, wide_integers: bool) -> dict[str, xr.Variable]:
    """The variables pass 2 writes file by file: the checkpoint variables, every
    per-seed float variable (padded with NaN where a cell lacks it) and, if
    ``wide_integers``, the :func:`_wide_integer` ones. Those take the combined dtype
    of the template, which two seeds a file decide as well as every seed does only
    when every cell has every seed (no cell is padded along the seed); an integer
    variable the combine pads (along the worker, or for a missing cell) is a float
    there, NaN where it was padded, as in memory."""
    return {
        str(n): v.variable
        for n, v in template.data_vars.items()
        if GRID in v.dims
        or (_per_seed(v) and v.dtype.kind == "f" and n not in PARAM_PADDING)
        or (wide_integers and _wide_integer(n, v))
    }


def _cell_seeds(wholes: Sequence[xr.Dataset]) -> np.ndarray:
    """The seeds a cell's run files hold, sorted."""
    return np.unique(np.concatenate([whole["seed"].values for whole in wholes]))


def _with_wide_integers(wholes: Mapping, files: Mapping) -> dict:
    """``wholes`` with every file's :func:`_wide_integer` variables added, read again
    (only when some cell lacks some seed)."""
    out = {}
    for key, parts in wholes.items():
        out[key] = []
        for whole, path in zip(parts, files[key], strict=True):
            head, _ = open_run_head(path)
            wide = [str(n) for n, v in head.data_vars.items() if _wide_integer(n, v)]
            out[key].append(whole.merge(head[wide], compat="no_conflicts", join="outer"))
    return out


def _coordinates_attr(body: xr.Dataset, dims: Sequence[str]) -> str:
    """CF ``coordinates`` of a variable over ``dims``: the auxiliary coordinates it spans."""
    aux = [
        str(n) for n, c in body.coords.items() if n not in body.dims and set(c.dims) <= set(dims)
    ]
    return " ".join(sorted(aux))


def _position(indexes: Mapping, dim: str, labels) -> np.ndarray:
    """Positions of ``labels`` along ``dim`` of the template whose ``indexes`` these are
    (``template.indexes``, built once: xarray makes the mapping anew at each access)."""
    return indexes[dim].get_indexer(np.atleast_1d(labels))


def _slab(indexes: Mapping, dims: Sequence[str], key: tuple, run) -> tuple:
    """The index, in the combined variable over ``dims``, of one run file's values: its
    cell (``key``) on the cell dimensions, its seeds and parameters, every checkpoint
    (``indexes``: the template's, as :func:`_position`)."""
    cell = dict(zip(CELL_DIMS, key, strict=True))
    index = []
    for dim in dims:
        if dim in cell:
            index.append(int(_position(indexes, dim, cell[dim])[0]))
        elif dim in run.variables:  # seed, param: the file's labels
            where = _position(indexes, dim, run[dim][:])
            contiguous = np.array_equal(where, np.arange(where[0], where[0] + where.size))
            index.append(slice(where[0], where[0] + where.size) if contiguous else list(where))
        else:  # pairs (checked equal to the grid), worker (padded at its end), outcome
            index.append(slice(0, len(run.dimensions[dim])))
    return tuple(index)


def _write_file(
    nc, indexes: Mapping, big: Mapping[str, xr.Variable], key, path, pending: dict
) -> None:
    """Copy one run file's streamed variables (:func:`_streamed`) into their slabs of
    ``nc``, each checked finite (the check :func:`_skeletons` made of a skeleton only).
    A variable the file has over fewer dimensions than the combined one (a
    per-parameter coordinate that other scenarios have per seed) holds for each, at
    every seed of the combined file (the cell's missing seeds too, as the in-memory
    combine broadcasts it).
    The checkpoint variables are written at once; the per-seed ones (a few numbers a
    seed, but one write call each: most of their cost) are appended to
    ``pending[name]`` as ``(slab, values)``, for :func:`_write_pending`."""
    import netCDF4

    with netCDF4.Dataset(path) as run:
        run.set_auto_mask(False)  # NaN stays NaN (the _FillValue of float variables)
        slabs: dict[tuple, tuple] = {}  # variables over the same dims share their slab
        for name, variable in big.items():
            if name not in run.variables:
                continue
            source = run[name]
            try:
                values = source[:]
            except RuntimeError:  # NetCDF: HDF error: a chunk failed its fletcher32 checksum
                raise corrupt(path, name) from None
            attrs = {k: source.getncattr(k) for k in source.ncattrs()}
            check_finite(path, name, values.dtype, values, attrs)
            kept = [d for d in variable.dims if d not in CELL_DIMS]
            present = [d for d in kept if d in source.dimensions]
            values = np.transpose(values, [source.dimensions.index(d) for d in present])
            values = np.expand_dims(values, [i for i, d in enumerate(kept) if d not in present])
            if variable.dims not in slabs:
                slabs[variable.dims] = _slab(indexes, variable.dims, key, run)
            slab = slabs[variable.dims]
            if "seed" in kept and "seed" not in present:  # shared by the file's seeds: it
                at = variable.dims.index("seed")  # holds at every seed, as in memory
                slab = (*slab[:at], slice(0, nc.dimensions["seed"].size), *slab[at + 1 :])
            shape = [
                _extent(where, nc.dimensions[d].size)
                for d, where in zip(variable.dims, slab, strict=True)
                if d not in CELL_DIMS
            ]
            values = np.broadcast_to(values, shape).astype(variable.dtype, copy=False)
            if GRID in variable.dims:
                nc[name][slab] = values
            else:
                pending.setdefault(name, []).append((slab, values))


def _box(parts: Sequence[tuple], shape: Sequence[int]) -> tuple[slice, ...] | None:
    """The box (one slice a dimension) that the slabs of ``parts`` fill exactly, each
    position once; ``None`` when they do not (a slab with a list of positions, a gap, an
    overlap)."""
    bounds = []
    for slab, _ in parts:
        if any(not isinstance(where, int | np.integer | slice) for where in slab):
            return None
        bounds.append([
            (int(w), int(w) + 1) if not isinstance(w, slice) else w.indices(size)[:2]
            for w, size in zip(slab, shape, strict=True)
        ])  # fmt: skip
    low = [min(b[d][0] for b in bounds) for d in range(len(shape))]
    high = [max(b[d][1] for b in bounds) for d in range(len(shape))]
    filled = np.zeros([h - lo for lo, h in zip(low, high, strict=True)], dtype=bool)
    for b in bounds:
        region = tuple(slice(a - lo, z - lo) for (a, z), lo in zip(b, low, strict=True))
        if filled[region].any():
            return None
        filled[region] = True
    if not filled.all():
        return None
    return tuple(slice(lo, h) for lo, h in zip(low, high, strict=True))


def _write_pending(nc, pending: dict) -> None:
    """Write each variable's pending ``(slab, values)`` (:func:`_write_file`): in one call
    when the slabs fill a box exactly (the cells of one batch mode and scenario, every
    seed), else one call a slab; the same values land in the same places either way."""
    for name, parts in pending.items():
        out = nc[name]
        box = _box(parts, out.shape)
        if box is None:
            for slab, values in parts:
                out[slab] = values
            continue
        buffer = np.empty([b.stop - b.start for b in box], dtype=parts[0][1].dtype)
        for slab, values in parts:
            local = tuple(
                slice(w.indices(size)[0] - b.start, w.indices(size)[1] - b.start)
                if isinstance(w, slice)
                else slice(int(w) - b.start, int(w) - b.start + 1)
                for w, b, size in zip(slab, box, out.shape, strict=True)
            )
            buffer[local] = values.reshape(buffer[local].shape)
        out[box] = buffer
    pending.clear()


def _extent(where, size: int) -> int:
    """How many positions an index of :func:`_slab` selects along a dimension of ``size``."""
    if isinstance(where, slice):
        return len(range(*where.indices(size)))
    return len(where)


def _write(
    tmp: str,
    template: xr.Dataset,
    big: Mapping[str, xr.Variable],
    files: Mapping,
    sizes: Mapping,
    progress: Progress | None = None,
) -> None:
    """Write ``template``, then create the ``big`` variables (given by their first
    checkpoint; zlib level 1 with the shuffle filter: as small as level 4 on these
    floats, 13% faster to write) and write each run file's data into them."""
    import netCDF4

    body = labels_to_auxiliary(template)
    body.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=dataset_encoding(body))
    with netCDF4.Dataset(tmp, "a") as nc:
        for dim in {d for variable in big.values() for d in variable.dims} - set(nc.dimensions):
            nc.createDimension(dim, sizes[dim])  # e.g. worker: only streamed variables span it
        for name, variable in big.items():
            chunks = [1 if d in CELL_DIMS else sizes[d] for d in variable.dims]
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
            # HDF5 caches up to 64 MB of chunks per variable by default, and keeps what it
            # caches (832 MB at 120 cells of 1000 seeds): room for one chunk, one cell,
            # instead, which a cell's files (written one after another) share
            chunk_bytes = int(np.prod(chunks)) * variable.dtype.itemsize
            out.set_var_chunk_cache(size=chunk_bytes + CACHE_SLACK, nelems=CACHE_SLOTS)
        indexes = dict(template.indexes)
        # the cells of one batch mode and scenario (every optimizer) together: their
        # per-seed values are written in one call a variable
        groups: dict[tuple, list] = {}
        for key, paths in files.items():
            rest = tuple(k for d, k in zip(CELL_DIMS, key, strict=True) if d != "optimizer")
            groups.setdefault(rest, []).append((key, paths))
        total, done = sum(len(paths) for paths in files.values()), 0
        for cells in groups.values():
            pending: dict[str, list] = {}
            for key, paths in cells:
                for path in paths:
                    _write_file(nc, indexes, big, key, path, pending)
                    done += 1
                    if progress is not None:
                        progress(WRITING, done, total)
            _write_pending(nc, pending)


def stream_benchmark(
    paths: Iterable[str | Path],
    output: str | Path,
    order: Mapping[str, Sequence[str]] | None = None,
    config_json: str | None = None,
    command: str | None = None,
    param_counts: Mapping[str, int] | None = None,
    progress: Progress | None = None,
) -> xr.Dataset:
    """Write ``output`` as :func:`combine_benchmark` + :func:`write_benchmark` would,
    holding one cell of checkpoint data at a time; returns the skeleton (no checkpoints).

    ``order`` gives the configuration's names of each cell dimension it has: a run file
    whose label is not among them (a flipped byte in ``calibrated``) is refused, as is
    one whose ``param`` axis differs from its scenario's count in ``param_counts``
    (``{scenario: parameters}``, the configuration's; the workflow passes it), as is
    any file :func:`~spsa_bench.results.datasets.open_run_head` or
    :func:`~spsa_bench.results.combine.check_cell` refuses; a refusal is one
    ``ValueError`` naming the file, raised before ``output`` is touched, or (a checksum
    failing in pass 2) before the temporary file replaces it. ``progress``
    (:data:`Progress`), if given, hears of each run file as each pass finishes it.
    """
    skeletons, wholes, files, seeds, grid = _skeletons(paths, order, param_counts, progress)
    if progress is not None:  # pass 2 starts with the template, its longest silent part
        progress(WRITING, 0, sum(len(paths) for paths in files.values()))
    template = finish_benchmark(combine_cells(skeletons), order, config_json, command)
    every_seed = all(np.array_equal(_cell_seeds(cell), seeds) for cell in wholes.values())
    big = _streamed(template, wide_integers=every_seed)
    sizes = {**template.sizes, "seed": seeds.size, GRID: grid.size}
    pairs = template[GRID].attrs
    template = template.drop_vars([*big, GRID]).assign_coords({GRID: (GRID, grid, pairs)})
    whole_names = [str(n) for n, v in template.data_vars.items() if "seed" in v.dims]
    template = template.drop_vars(whole_names).reindex(seed=seeds)
    if whole_names:  # the per-seed variables not streamed, combined whole
        if not every_seed:  # the wide integers too: the combine may pad them along seed
            wholes = _with_wide_integers(wholes, files)
        whole = finish_benchmark(combine_cells(wholes), order, config_json, command)
        template = template.assign({name: whole[name] for name in whole_names})
    atomic_write(output, lambda tmp: _write(tmp, template, big, files, sizes, progress))
    return template
