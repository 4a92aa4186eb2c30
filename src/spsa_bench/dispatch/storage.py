"""Job schedules shared between the simulate jobs of one batch mode and seed chunk.

A schedule depends on the seeds and the batch mode only, never on the
optimizer or the scenario (common random numbers), so the workflow builds it
once per (asynchronous batch mode, seed chunk) and every simulate job of that
chunk replays the same file. The file is :func:`spsa_bench.results.datasets.schedule_dataset`
(per-job sizes, workers, times, staleness, plus the schedule KPIs) with the
budget and worker count added as attributes, so it reads back exactly.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import xarray as xr

from spsa_bench.dispatch.schedule import Schedule
from spsa_bench.results.atomic import write_atomic
from spsa_bench.results.datasets import schedule_dataset

#: Schedule fields stored as ``(seed, job)`` / ``(seed, event)`` variables of the same name.
_JOB_FIELDS = (
    "job_pairs",
    "job_offset",
    "job_arrived_before",
    "job_worker",
    "job_dispatch_time",
    "job_arrival_time",
    "arrival_job",
)


def write_schedule(
    schedule: Schedule,
    path: str | Path,
    *,
    batch_mode: str,
    settings_json: str,
    command: str | None = None,
) -> Path:
    """Write ``schedule`` to ``path`` atomically; ``command`` goes into the CF ``history``."""
    ds = schedule_dataset(
        schedule, batch_mode=batch_mode, config_json=settings_json, command=command
    )
    ds.attrs["num_pairs"] = int(schedule.num_pairs)
    ds.attrs["num_workers"] = int(schedule.num_workers)
    return write_atomic(ds, path)


def read_schedule(path: str | Path) -> Schedule:
    """The :class:`~spsa_bench.dispatch.schedule.Schedule` written by :func:`write_schedule`."""
    with xr.open_dataset(path, engine="netcdf4") as ds:
        ds = ds.load()
    values = {name: np.ascontiguousarray(ds[name].values) for name in _JOB_FIELDS}
    values.update(
        seeds=np.asarray(ds["seed"].values, dtype=np.int64),
        num_workers=int(ds.attrs["num_workers"]),
        num_pairs=int(ds.attrs["num_pairs"]),
        n_jobs=np.asarray(ds["n_jobs"].values, dtype=np.int64),
        worker_concurrency=np.asarray(ds["concurrency"].values, dtype=np.int64),
        worker_speed=np.asarray(ds["speed_factor"].values, dtype=np.float64),
    )
    names = {f.name for f in dataclasses.fields(Schedule)}
    missing = names - set(values)
    if missing:  # the Schedule container grew: refuse rather than guess
        raise ValueError(f"{path}: cannot rebuild Schedule fields {sorted(missing)}")
    return Schedule(**{name: values[name] for name in names})
