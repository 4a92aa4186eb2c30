"""Combining run files: cells into one dataset, and ``results/benchmark.nc``.

The combined dataset has dims optimizer, batch_mode, scenario, seed, pairs, param
(and worker). Each run file's scalar arm coordinates (``kind`` and the
hyperparameters) become coordinates along ``optimizer``; an arm whose kind lacks a
hyperparameter gets :data:`NUMERIC_FILL` (NaN) there, or :data:`TEXT_FILL` for a
hyperparameter that is not a number.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from contextlib import contextmanager
from numbers import Number
from pathlib import Path

import numpy as np
import xarray as xr
from xarray.backends import BackendArray
from xarray.core import indexing

from spsa_bench.results.atomic import write_atomic
from spsa_bench.results.cf import conform, labels_to_auxiliary, labels_to_index, open_labelled
from spsa_bench.results.datasets import (
    CELL_DIMS,
    NAN_WHERE_NOT_APPLICABLE,
    PARAM_COORDS,
    ReadError,
    check_attribute_sizes,
    check_label,
    check_metadata,
    corrupt,
    load_checked,
    open_run,
    optimizer_state,
)
from spsa_bench.results.provenance import provenance

NUMERIC_FILL = np.nan
TEXT_FILL = ""
#: What a scenario with fewer parameters holds beyond its last one in a combined file.
PARAM_PADDING = {"param_group": TEXT_FILL, "rotation_partner": -1}


def check_run(path: str | Path, ds: xr.Dataset, grid: np.ndarray | None) -> None:
    """Refuse a run file with non-finite data or a checkpoint grid other than ``grid``.

    Raises ``ValueError`` naming ``path`` and the variable; variables of
    :data:`NAN_WHERE_NOT_APPLICABLE` or with a ``missing_value`` may hold NaN.
    """
    for name, variable in ds.variables.items():
        check_finite(path, str(name), variable.dtype, variable.values, variable_attrs(variable))
    if grid is not None:
        check_grid(path, ds["pairs"].values, grid)


def check_cell(
    path,
    ds: xr.Dataset,
    key: tuple,
    order: Mapping[str, Sequence[str]] | None,
    params: dict,
    param_counts: Mapping[str, int] | None = None,
) -> None:
    """Refuse a run file whose cell label (``key``) is not among ``order``'s names of its
    dimension, whose parameter count differs from its scenario's in the configuration
    (``param_counts``: ``{scenario: count}``, when given) or from the other files of its
    scenario (``params``: ``{scenario: (count, first file)}``, filled as files are
    read): the combine would add a phantom cell, or pad the file's parameters with NaN."""
    for dim, label in zip(CELL_DIMS, key, strict=True):
        names = (order or {}).get(dim)
        if names is not None and label not in names:
            raise ValueError(
                f"{path}: {dim} {label!r} is not one of the configuration's "
                f"({', '.join(map(str, names))}); the file is corrupt or from another run"
            )
    count = ds.sizes.get("param", 0)
    scenario = key[CELL_DIMS.index("scenario")]
    expected = (param_counts or {}).get(scenario)
    if expected is not None and count != expected:
        raise ValueError(
            f"{path}: {count} parameters (its param axis), but scenario {scenario!r} has "
            f"{expected} in the configuration; the file is corrupt or from another run"
        )
    first, where = params.setdefault(scenario, (count, path))
    if count != first:
        raise ValueError(
            f"{path}: {count} parameters, but scenario {scenario!r} has {first} in {where}"
        )


def variable_attrs(variable: xr.Variable) -> dict:
    """A variable's attributes and encoding: where a ``missing_value`` may be."""
    return {**variable.attrs, **variable.encoding}


def check_finite(path, name: str, dtype: np.dtype, values: np.ndarray, attrs) -> None:
    """Refuse non-finite values of a float variable that must be finite everywhere."""
    allowed = name in NAN_WHERE_NOT_APPLICABLE or "missing_value" in attrs
    if dtype.kind == "f" and not allowed and not np.isfinite(values).all():
        raise ValueError(f"{path}: variable {name} holds non-finite values (NaN or inf)")


def check_grid(path, pairs: np.ndarray, grid: np.ndarray) -> None:
    """Refuse a checkpoint grid (``pairs``) other than the other run files' ``grid``."""
    if not np.array_equal(pairs, grid):
        raise ValueError(
            f"{path}: checkpoint grid (pairs) differs from the other run files' "
            f"({pairs.size} checkpoints up to {pairs[-1]}, "
            f"expected {grid.size} up to {grid[-1]})"
        )


def _arm_names(ds: xr.Dataset) -> list[str]:
    """The scalar coordinates of a run file that describe its arm (all but the cell labels)."""
    return [name for name, coord in ds.coords.items() if coord.ndim == 0 and name not in CELL_DIMS]


def cell_dataset(parts: list[xr.Dataset], key: tuple[str, ...]) -> tuple[xr.Dataset, dict]:
    """One cell's seed ranges concatenated along ``seed``, expanded to the cell dims.

    Returns the cell without its arm coordinates, and those as ``{name: DataArray}``.
    """
    parts.sort(key=lambda d: int(d.seed.values[0]))
    cell = xr.concat(
        parts,
        dim="seed",
        data_vars="minimal",
        coords="minimal",
        compat="override",
        combine_attrs="drop_conflicts",
    )
    cell = cell.reset_coords([name for name in PARAM_COORDS if name in cell.coords])
    arm = {name: cell[name] for name in _arm_names(cell)}
    cell = cell.drop_vars([*arm, *(d for d in CELL_DIMS if d in cell.variables)])
    return cell.expand_dims({d: [v] for d, v in zip(CELL_DIMS, key, strict=True)}), arm


def optimizer_coords(arms: dict[str, dict[str, xr.DataArray]]) -> dict[str, tuple]:
    """``{name: ("optimizer", values, attrs)}`` over the optimizers in ``arms``, gaps filled."""
    names = sorted({name for arm in arms.values() for name in arm}, key=lambda n: (n != "kind", n))
    coords = {}
    for name in names:
        present = [arm[name] for arm in arms.values() if name in arm]
        values = [arm[name].item() if name in arm else None for arm in arms.values()]
        numeric = all(isinstance(v, Number) for v in values if v is not None)
        fill = NUMERIC_FILL if numeric else TEXT_FILL
        filled = [fill if v is None else v if numeric else str(v) for v in values]
        array = np.array(filled, dtype=np.float64 if numeric else object)
        coords[name] = ("optimizer", array, dict(present[0].attrs))
    return coords


def combine_runs(paths: Iterable[str | Path]) -> xr.Dataset:
    """Combine run files into one dataset with dims optimizer, batch_mode, scenario, seed, pairs, param.

    The optimizer state variables (:func:`~spsa_bench.results.runs.optimizer_state`,
    the schedule-free arms' ``x`` and ``z``) are left out; the run files keep them.
    Seed ranges of one cell are concatenated along ``seed``; cells are aligned
    on the outer product of their labels (missing cells are NaN). Every file must
    pass :func:`check_run` (finite data, one checkpoint grid) and :func:`check_cell`
    (one parameter count per scenario). Per-parameter
    coordinates that differ between scenarios become data indexed by scenario.
    """
    by_cell: dict[tuple, list[xr.Dataset]] = {}
    grid, params = None, {}
    for path in paths:
        ds = open_run(path)
        ds = ds.drop_vars(optimizer_state(ds))
        check_run(path, ds, grid)
        check_cell(path, ds, cell_key(ds), None, params)
        grid = ds["pairs"].values if grid is None else grid
        by_cell.setdefault(cell_key(ds), []).append(ds)
    return combine_cells(by_cell)


def cell_key(ds: xr.Dataset) -> tuple[str, ...]:
    """The cell labels (optimizer, batch_mode, scenario) of a run file."""
    return tuple(str(ds[d].item()) for d in CELL_DIMS)


def combine_cells(by_cell: Mapping[tuple, list[xr.Dataset]]) -> xr.Dataset:
    """The runs of each cell (``{cell_key: [run datasets]}``) combined as :func:`combine_runs` says."""
    if not by_cell:
        raise ValueError("no run files to combine")
    cells, arms = [], {}
    for key, parts in sorted(by_cell.items()):
        cell, arms[key[0]] = cell_dataset(parts, key)
        cells.append(cell)
    coords = optimizer_coords(arms)
    # Worker pools differ in size (sync: 1 worker): pad the worker KPIs with NaN.
    n_workers = max(cell.sizes.get("worker", 0) for cell in cells)
    cells = [
        cell.pad(worker=(0, n_workers - cell.sizes["worker"])) if "worker" in cell.dims else cell
        for cell in cells
    ]
    # Scenarios differ in their number of parameters: pad every cell to the largest (NaN,
    # "" for the group labels, -1 for rotation partners), so the cells differ only in
    # their labels and are never laid side by side along param.
    n_params = max(cell.sizes.get("param", 0) for cell in cells)
    cells = [
        cell.reindex(param=np.arange(n_params), fill_value=PARAM_PADDING)
        if "param" in cell.dims and cell.sizes["param"] < n_params
        else cell
        for cell in cells
    ]
    combined = xr.combine_by_coords(
        cells, compat="no_conflicts", combine_attrs="drop_conflicts", data_vars="all", join="outer"
    )
    for name in PARAM_COORDS:
        if name in combined:
            reduced = combined[name]
            for dim in ("optimizer", "batch_mode", "seed"):
                if dim in reduced.dims and _constant_along(reduced, dim):
                    reduced = reduced.isel({dim: 0}, drop=True)
            combined[name] = reduced
    labels = [str(v) for v in combined["optimizer"].values]
    order = [list(arms).index(label) for label in labels]
    return combined.assign_coords(
        {name: (dim, values[order], attrs) for name, (dim, values, attrs) in coords.items()}
    )


def _constant_along(array: xr.DataArray, dim: str) -> bool:
    first = array.isel({dim: 0})
    return bool((array == first).all() | (array.isnull() & first.isnull()).all())


def combine_benchmark(
    paths: Iterable[str | Path],
    order: Mapping[str, Sequence[str]] | None = None,
    config_json: str | None = None,
    command: str | None = None,
) -> xr.Dataset:
    """All run files as one dataset, cell labels in ``order`` (the configuration's order).

    Dims: optimizer, batch_mode, scenario, seed, pairs, param and worker.
    Labels missing from ``order`` keep their (sorted) place after the ordered ones.
    Provenance attributes: ``config`` is ``config_json`` (the workflow passes its
    resolved configuration; each run file keeps its own cell's), ``created`` and
    ``history`` are now and ``command``, and the package and library versions and
    git state are those the run files agree on, else the combining process's.
    """
    return finish_benchmark(combine_runs(paths), order, config_json, command)


def finish_benchmark(
    ds: xr.Dataset,
    order: Mapping[str, Sequence[str]] | None = None,
    config_json: str | None = None,
    command: str | None = None,
) -> xr.Dataset:
    """Cell labels of combined runs ``ds`` in ``order``, dims ordered, attributes set
    (see :func:`combine_benchmark`)."""
    for dim, wanted in (order or {}).items():
        present = [str(v) for v in ds[dim].values]
        labels = [v for v in wanted if v in present] + [v for v in present if v not in wanted]
        ds = ds.sel({dim: labels})
    ds = ds.transpose(*CELL_DIMS, "seed", "pairs", ..., missing_dims="ignore")
    ds.attrs["title"] = "spsa-bench benchmark: every run, combined"
    ds.attrs.pop("config", None)  # each run file keeps its own cell configuration
    ds.attrs.pop("optimizer_kind", None)
    stamp = provenance(config_json or "", command)
    agreed = ("spsa_bench_version", "numpy_version", "xarray_version")
    for key in (*agreed, "git_revision", "git_dirty", "git_diff_sha256"):
        ds.attrs.setdefault(key, stamp[key])
    ds.attrs["created"], ds.attrs["history"] = stamp["created"], stamp["history"]
    if config_json is not None:
        ds.attrs["config"] = config_json
    return conform(ds)


def write_benchmark(ds: xr.Dataset, path: str | Path) -> Path:
    """Write a combined dataset as ``path``, atomically, its text labels as CF wants them.

    The cell labels (``optimizer``, ``batch_mode``, ``scenario``) are stored as the
    auxiliary coordinates ``optimizer_label`` ... (:func:`~spsa_bench.results.cf.labels_to_auxiliary`);
    :func:`open_benchmark` makes them the index again.
    """
    return write_atomic(labels_to_auxiliary(ds), path)


def open_benchmark(
    path: str | Path, variables: Sequence[str] | None = None, *, lazy: bool = True
) -> xr.Dataset:
    """Open ``results/benchmark.nc``, only ``variables`` (default: all), lazily by default.

    The cell labels are the index of their dimensions (``ds.sel(optimizer="spsa")``
    works), whichever layout the file has.

    ``lazy=True`` (the default) leaves the data on disk and keeps the file open while
    the dataset lives: each selection reads what it needs, and since the checkpoint
    variables are stored one cell per chunk, a cell's trajectories are one read. Its
    memory is the coordinates plus what each selection reads, not the file. The
    tables, figures and ranking read the trajectories so, one cell at a time, in
    memory that does not grow with the grid.

    ``lazy=False`` loads every chosen variable into memory at once and closes the
    file: at least their uncompressed size, ``ds.nbytes`` (which a lazily opened
    dataset tells before anything is loaded), plus the decompression's peak.

    Measured (resident memory over an interpreter that has imported the package,
    about 100 MB): the tiny test run's ``benchmark.nc`` (2.0 MB on disk, nbytes
    2.5 MB; a 2-core AMD EPYC, 23 GB) +7.7 MB and 0.14-0.28 s lazily, +17.2 MB and
    0.25-0.36 s eagerly; the default run's (1.3 GB on disk, nbytes 1.88 GB; 2026-11-27,
    medians of 3 with a mean of the final Elo loss read) peaks at 157 MiB and 0.8 s
    lazily, 2.1 GiB and 10 s eagerly (issue 32 measured 158 MB and 1 s, 5.0 GB and 35 s
    on the 2.0 GB file of an earlier release).

    A file that is not a readable combined benchmark is refused with one
    :class:`~spsa_bench.results.datasets.ReadError` (a ``ValueError``) naming it: not
    NetCDF or truncated, a run file, an attribute over 1 MiB, a label that is not a
    configuration name, or (eagerly; lazily when the data is read) a variable that
    fails its checksum.
    """
    ds = _open_checked(path)
    if variables is not None:
        ds = ds[[v for v in variables if v in ds]]
    if lazy:
        return _named_reads(ds, path)
    with ds:
        return load_checked(path, ds)


class _NamedRead(BackendArray):
    """A lazily read variable whose failed read (a chunk failing its fletcher32 checksum:
    netCDF4's ``RuntimeError: NetCDF: HDF error``) is refused naming the file and the
    variable (:func:`~spsa_bench.results.datasets.corrupt`) whenever it is read."""

    def __init__(self, variable: xr.Variable, path, name: str):
        self.variable, self.path, self.name = variable, path, name
        self.shape, self.dtype = variable.shape, variable.dtype

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read
        )

    def _read(self, key: tuple) -> np.ndarray:
        try:
            return np.asarray(self.variable[key].values)
        except RuntimeError:
            raise corrupt(self.path, self.name) from None


def _named_reads(ds: xr.Dataset, path) -> xr.Dataset:
    """``ds`` (lazily opened) with every variable that is not an index read through
    :class:`_NamedRead`: the same values, selections still read only what they need."""
    wrapped = {
        name: xr.Variable(
            v.dims,
            indexing.LazilyIndexedArray(_NamedRead(v, path, str(name))),
            v.attrs,
            v.encoding,
        )
        for name, v in ds.variables.items()
        if name not in ds.indexes
    }
    data = {name: v for name, v in wrapped.items() if name in ds.data_vars}
    coords = {name: v for name, v in wrapped.items() if name not in ds.data_vars}
    return ds.assign_coords(coords).assign(data)


def _open_checked(path: str | Path) -> xr.Dataset:
    """``path`` opened lazily, labels as indexes, refused (:class:`ReadError` naming the
    file) when it is not a readable NetCDF file (truncated, not NetCDF), not a combined
    benchmark (a run file: no ``optimizer``, ``batch_mode`` or ``scenario`` dimension),
    has an oversized attribute or a cell label that is not a configuration name."""
    check_metadata(path)  # a regular NetCDF-4 file, attributes within their cap, none read
    try:
        ds = labels_to_index(xr.open_dataset(path, engine="netcdf4"))
    except Exception as error:  # netCDF4 raises OSError/RuntimeError/ValueError variants
        reason = " ".join(str(error).split()) or type(error).__name__
        raise ReadError(f"{path}: not a readable NetCDF file ({reason})") from None
    try:
        missing = [dim for dim in CELL_DIMS if dim not in ds.dims]
        if missing:
            raise ReadError(
                f"{path}: not a combined benchmark file (no {missing[0]} dimension; a run "
                "file holds one cell: pass results/benchmark.nc)"
            )
        check_attribute_sizes(path, ds)
        for dim in CELL_DIMS:
            check_label(path, dim, ds[dim].values)
    except ReadError:
        ds.close()
        raise
    return ds


def open_schedules(paths: Iterable[str | Path], modes: Sequence[str]) -> dict[str, xr.Dataset]:
    """The schedule files of each batch mode in ``modes``, seed chunks concatenated along ``seed``.

    Chunks have different job counts; the shorter ones are padded (``job_pairs`` 0, others NaN).
    Each file passes :func:`~spsa_bench.results.reading.check_metadata` and its checksums
    (:class:`ReadError` naming it otherwise).
    """
    parts: dict[str, list[xr.Dataset]] = {}
    for path in paths:
        check_metadata(path, "not a readable schedule file")
        with xr.open_dataset(path, engine="netcdf4") as one:
            check_attribute_sizes(path, one)
            if "batch_mode" not in one.attrs:
                raise ReadError(f"{path}: not a schedule file (no batch_mode attribute)")
            parts.setdefault(str(one.attrs["batch_mode"]), []).append(load_checked(path, one))
    merged = {}
    for mode in modes:
        if mode in parts:
            chunks = sorted(parts[mode], key=lambda d: int(d["seed"].values[0]))
            merged[mode] = xr.concat(
                chunks,
                dim="seed",
                data_vars="all",
                coords="minimal",
                compat="override",
                join="outer",
                fill_value={"job_pairs": 0},
            )
    return merged


def open_benchmark_or_exit(
    job: str, path: str | Path, variables: Sequence[str] | None = None, *, lazy: bool = True
) -> xr.Dataset:
    """:func:`open_benchmark` for a workflow script: a file it refuses (truncated, not a
    benchmark, hostile labels or attributes) ends the job with one line on stderr,
    ``JOB: <the refusal, naming the file>``, and exit status 2, not a traceback."""
    try:
        return open_benchmark(path, variables, lazy=lazy)
    except ValueError as error:
        print(f"{job}: {' '.join(str(error).split())}", file=sys.stderr)
        raise SystemExit(2) from None


#: The dimensions of ``final_elo_loss`` in a tuning file (``results/fishtest/tuning.nc``).
TUNING_DIMS = ("arm", "scenario", "batch_mode", "seed")
#: Its text labels, each a configuration name (:func:`~spsa_bench.results.reading.check_label`).
TUNING_LABELS = ("arm", "sweep", "kind", "scenario", "batch_mode")


def open_tuning(path: str | Path, settings=None) -> xr.Dataset:
    """The tuning runs' file (``results/fishtest/tuning.nc``, written by ``spsa-bench
    tune`` and the workflow's tuning_runs job), loaded, after the rules of
    :func:`open_benchmark`: a regular NetCDF-4 file whose attributes are within their
    caps by its metadata and once decoded, ``final_elo_loss`` over :data:`TUNING_DIMS`
    with at least one arm, scenario, batch mode and seed, a ``sweep`` per arm and a
    ``family`` attribute naming scenarios it has, labels that are configuration names
    and unique, every variable passing its checksum. With ``settings`` (the
    configuration's :class:`~spsa_bench.config.sections.tuning.TuningSection`), its
    arms, scenarios, batch modes and seeds must be the section's. A refusal is one
    :class:`ReadError` naming the file and the field."""
    ds = open_labelled(path)  # the rules every reader applies (metadata, attribute caps)
    with ds:
        loss = ds.get("final_elo_loss")
        if (
            loss is None
            or set(loss.dims) != set(TUNING_DIMS)
            or "sweep" not in ds.variables
            or "family" not in ds.attrs
        ):
            raise ReadError(
                f"{path}: not a tuning file (expected final_elo_loss over "
                f"{', '.join(TUNING_DIMS)}, a sweep per arm and a family attribute; pass "
                "results/fishtest/tuning.nc)"
            )
        for dim in TUNING_DIMS:
            if ds.sizes[dim] == 0:
                raise ReadError(f"{path}: holds no {dim} (its {dim} dimension has length 0)")
            values = [str(v) for v in ds[dim].values]
            if len(set(values)) != len(values):
                twice = next(v for v in values if values.count(v) > 1)
                raise ReadError(f"{path}: {dim} {twice!r} appears twice")
        for name in TUNING_LABELS:
            if name in ds.variables:
                check_label(path, name, ds[name].values)
        scenarios = [str(v) for v in ds["scenario"].values]
        for name in str(ds.attrs["family"]).split(", "):
            if name and name not in scenarios:
                raise ReadError(
                    f"{path}: attribute family names scenario {name[:80]!r}, which the file "
                    f"has not ({', '.join(scenarios)})"
                )
        if settings is not None:
            _check_tuning_cells(path, ds, settings)
        return load_checked(path, ds)


def _check_tuning_cells(path, ds: xr.Dataset, settings) -> None:
    """Refuse a tuning file whose arms, scenarios, batch modes or seeds are not those of
    the tuning section ``settings`` (a file of another configuration, or edited)."""
    wanted = {
        "arm": [arm.name for arm in settings.arms],
        "scenario": [str(name) for name in settings.scenarios],
        "batch_mode": [mode.name for mode in settings.batch_modes],
        "seed": [str(seed) for seed in settings.seeds],
    }
    for dim, names in wanted.items():
        have = [str(v) for v in ds[dim].values]
        extra = [v for v in have if v not in names]
        missing = [v for v in names if v not in have]
        if extra or missing:
            what = f"has {dim} {extra[0]!r}" if extra else f"has no {dim} {missing[0]!r}"
            raise ReadError(
                f"{path}: {what}, but the configuration's tuning section has "
                f"{len(names)} ({', '.join(names[:6])}{', ...' if len(names) > 6 else ''}); "
                "the file is from another configuration: rerun the tuning runs"
            )


@contextmanager
def exit_on_read_error(job: str):
    """For a workflow script: a file a reader refuses (:class:`ReadError`: not NetCDF,
    oversized attributes, hostile labels, a checksum failing when lazily read data is
    computed) ends the job with one line on stderr, ``JOB: <the refusal, naming the
    file>``, and exit status 2, not a traceback."""
    try:
        yield
    except ReadError as error:
        print(f"{job}: {' '.join(str(error).split())}", file=sys.stderr)
        raise SystemExit(2) from None
