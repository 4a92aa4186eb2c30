"""The combined benchmark dataset written to ``results/benchmark.nc``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import xarray as xr

from spsa_bench.results.runfiles import combine_runs, provenance

CELL_DIMS = ("optimizer", "batch_mode", "scenario")


def combine_benchmark(
    paths: Iterable[str | Path],
    order: Mapping[str, Sequence[str]] | None = None,
    config_json: str | None = None,
) -> xr.Dataset:
    """All run files as one dataset, cell labels in ``order`` (the configuration's order).

    Dims: optimizer, batch_mode, scenario, seed, pairs, param and worker.
    Labels missing from ``order`` keep their (sorted) place after the ordered ones.
    Provenance attributes: ``config`` is ``config_json`` (the workflow passes its
    resolved configuration; each run file keeps its own cell's), ``created`` is now,
    and the package and library versions and git revision are those the run files
    agree on, else the combining process's.
    """
    ds = combine_runs(paths)
    for dim, wanted in (order or {}).items():
        present = [str(v) for v in ds[dim].values]
        labels = [v for v in wanted if v in present] + [v for v in present if v not in wanted]
        ds = ds.sel({dim: labels})
    ds = ds.transpose(*CELL_DIMS, "seed", "pairs", ...)
    ds.attrs["title"] = "spsa-bench benchmark: every run, combined"
    ds.attrs.pop("config", None)  # each run file keeps its own cell configuration
    ds.attrs.pop("optimizer_kind", None)
    stamp = provenance(config_json or "")
    for key in ("spsa_bench_version", "numpy_version", "xarray_version", "git_revision"):
        ds.attrs.setdefault(key, stamp[key])
    ds.attrs["created"] = stamp["created"]
    if config_json is not None:
        ds.attrs["config"] = config_json
    return ds


def open_benchmark(path: str | Path, variables: Sequence[str] | None = None) -> xr.Dataset:
    """Open ``results/benchmark.nc``, loading only ``variables`` (default: all) into memory."""
    with xr.open_dataset(path, engine="netcdf4") as ds:
        if variables is not None:
            ds = ds[[v for v in variables if v in ds]]
        return ds.load()


def open_schedules(paths: Iterable[str | Path], modes: Sequence[str]) -> dict[str, xr.Dataset]:
    """The schedule files of each batch mode in ``modes``, seed chunks concatenated along ``seed``.

    Chunks have different job counts; the shorter ones are padded (``job_pairs`` 0, others NaN).
    """
    parts: dict[str, list[xr.Dataset]] = {}
    for path in paths:
        with xr.open_dataset(path, engine="netcdf4") as one:
            parts.setdefault(str(one.attrs["batch_mode"]), []).append(one.load())
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
