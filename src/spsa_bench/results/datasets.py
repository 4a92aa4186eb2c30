"""Run and schedule datasets: what one simulate job and one schedule job write.

The run file's data contract and its xarray-free builder are in
:mod:`spsa_bench.results.runs` (names re-exported here); this module builds the
schedule dataset, writes schedule files and opens run files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from spsa_bench.results.atomic import write_atomic
from spsa_bench.results.cf import cf_attrs, conform, labels_to_index
from spsa_bench.results.provenance import provenance
from spsa_bench.results.reading import (  # noqa: F401 - the readers' checks, re-exported
    LABEL,
    MAX_ATTRIBUTE_BYTES,
    MAX_ATTRIBUTE_STORAGE,
    ReadError,
    check_attribute_sizes,
    check_label,
    check_metadata,
    corrupt,
    load_checked,
)
from spsa_bench.results.runs import (  # noqa: F401 - the run contract, re-exported
    CELL_DIMS,
    INSTANCE_VARIABLES,
    NAN_WHERE_NOT_APPLICABLE,
    PARAM_COORDS,
    PROBE_KPIS,
    RUN_AXES,
    RUN_VARIABLES,
    THETA,
    arm_coords,
    cf_variable,
    instance_variables,
    optimizer_state,
    run_layout,
)


def schedule_dataset(
    schedule, *, batch_mode: str, config_json: str, command: str | None = None
) -> xr.Dataset:
    """A schedule as a dataset: one row per job (dispatch order) and per arrival, plus its KPIs."""
    from spsa_bench.dispatch import kpis

    job_vars = {
        "job_pairs": (schedule.job_pairs, "pairs in the job (0 = padding)", "pairs"),
        "job_offset": (
            schedule.job_offset,
            "pairs dispatched before the job (its first pair in the match stream)",
            "pairs",
        ),
        "job_arrived_before": (
            schedule.job_arrived_before,
            "pairs arrived before the job's dispatch",
            "pairs",
        ),
        "job_worker": (schedule.job_worker, "worker that ran the job (-1 = padding)", "1"),
        "job_dispatch_time": (schedule.job_dispatch_time, "dispatch time", "s"),
        "job_arrival_time": (schedule.job_arrival_time, "arrival time", "s"),
        "staleness": (
            schedule.staleness_pairs(),
            "pairs arrived between the job's dispatch and its arrival",
            "pairs",
        ),
    }
    data_vars = {
        name: cf_variable(("seed", "job"), values, long_name, units)
        for name, (values, long_name, units) in job_vars.items()
    }
    data_vars["arrival_job"] = cf_variable(
        ("seed", "event"), schedule.arrival_job, "job arriving at this event (-1 = padding)"
    )
    if schedule.job_lead is not None:  # OpenBench's BATCHED reporting
        data_vars["job_lead"] = cf_variable(
            ("seed", "job"), schedule.job_lead, "job whose hand-out this piece shares (-1 = none)"
        )
    data_vars |= {
        name: (dims, values, cf_attrs(kpis.KPI_ATTRS.get(name, {})))
        for name, (dims, values) in kpis.schedule_kpis(schedule).items()
    }
    coords = {
        "seed": cf_variable(("seed",), schedule.seeds, "seed"),
        "job": cf_variable(("job",), np.arange(schedule.max_jobs), "job index in dispatch order"),
        "event": cf_variable(
            ("event",), np.arange(schedule.arrival_job.shape[1]), "arrival index in time order"
        ),
    }
    attrs = {
        "title": f"spsa-bench schedule: {batch_mode}",
        "batch_mode": batch_mode,
        **provenance(config_json, command),
    }
    return conform(xr.Dataset(data_vars, coords, attrs))


def write_schedule(
    schedule,
    path: str | Path,
    *,
    batch_mode: str,
    settings_json: str,
    command: str | None = None,
) -> Path:
    """Write ``schedule`` to ``path`` atomically as the file the workflow's simulate jobs
    replay (:func:`spsa_bench.dispatch.storage.read_schedule`): :func:`schedule_dataset`
    with the budget ``num_pairs`` and the pool size ``num_workers`` as attributes;
    ``command`` goes into the CF ``history``."""
    ds = schedule_dataset(
        schedule, batch_mode=batch_mode, config_json=settings_json, command=command
    )
    ds.attrs["num_pairs"] = int(schedule.num_pairs)
    ds.attrs["num_workers"] = int(schedule.num_workers)
    return write_atomic(ds, path)


def open_run(path: str | Path) -> xr.Dataset:
    """Open one run file fully into memory, with a clear error naming the file."""
    return _open_run(path, lambda ds: ds)


def open_run_head(path: str | Path) -> tuple[xr.Dataset, np.ndarray]:
    """One run file's first checkpoint in memory (every variable without the ``pairs``
    dimension whole, those with it at ``pairs[0]`` only) and its whole ``pairs`` grid;
    the rest is never read. Errors as :func:`open_run`."""
    grid = []

    def head(ds: xr.Dataset) -> xr.Dataset:
        grid.append(ds["pairs"].values)
        return ds.isel(pairs=[0])

    return _open_run(path, head), grid[0]


def _open_run(path: str | Path, part) -> xr.Dataset:
    """``part`` of one run file (a function of the lazily opened dataset), loaded; refused
    (:class:`ReadError`, naming the file) when it fails :func:`check_metadata` (not a
    regular or NetCDF-4 file, attributes over their cap by its metadata), an attribute is oversized, a variable
    fails its checksum, it holds no seeds or a cell label is not a configuration name."""
    path = Path(path)
    check_metadata(path, "not a readable spsa-bench NetCDF file")  # before netCDF4 reads attributes
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            check_attribute_sizes(path, ds)
            loaded = labels_to_index(load_checked(path, part(ds)))
    except ReadError:
        raise
    except Exception as error:  # netCDF4 raises OSError/RuntimeError/ValueError variants
        raise ValueError(f"{path}: not a readable spsa-bench NetCDF file ({error})") from None
    missing = [v for v in ("theta", "elo_loss", *CELL_DIMS) if v not in loaded.variables]
    if missing:
        raise ValueError(f"{path}: not an spsa-bench run file (missing {', '.join(missing)})")
    if loaded.sizes.get("seed", 0) == 0:
        raise ReadError(f"{path}: holds no seeds (its seed dimension has length 0)")
    for dim in CELL_DIMS:
        check_label(path, dim, loaded[dim].values)
    return loaded
