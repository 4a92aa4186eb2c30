"""Reading the job schedules shared between the simulate jobs of one batch mode and
seed chunk.

A schedule depends on the seeds and the batch mode only, never on the
optimizer or the scenario (common random numbers), so the workflow builds it
once per (asynchronous batch mode, seed chunk) and every simulate job of that
chunk replays the same file. The file is written by
:func:`spsa_bench.results.datasets.write_schedule` (the schedule dataset, per-job
sizes, workers, times, staleness and the schedule KPIs, with the budget and worker
count added as attributes); :func:`read_schedule` rebuilds the
:class:`~spsa_bench.dispatch.schedule.Schedule` from it exactly, with xarray only.

A schedule file is input the job did not write, so it is checked before netCDF4 reads
it: here, that it is a regular file (a FIFO with no writer would block the open
forever, a directory or device is not a schedule); the attribute-size cap from the
file's HDF5 metadata (:func:`spsa_bench.results.reading.check_metadata`) lives in
``results``, which the layering puts above ``dispatch`` (docs/architecture.md), so the
caller applies it first, as the simulate job (``workflow/scripts/simulate.py``) does.
"""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path

import numpy as np

from spsa_bench.dispatch.schedule import Schedule

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


def read_schedule(
    path: str | Path,
    *,
    num_pairs: int | None = None,
    num_workers: int | None = None,
    seeds=None,
) -> Schedule:
    """The :class:`~spsa_bench.dispatch.schedule.Schedule` written by
    :func:`spsa_bench.results.datasets.write_schedule`,
    checked against the run that replays it (``num_pairs``, ``num_workers``, ``seeds``
    where given) and for consistency: every seed's jobs add up to ``num_pairs``.
    Any problem is one ``ValueError`` naming the file; a path that is not a regular file
    (a FIFO, directory or device) is refused before it is opened (module docstring)."""
    import xarray as xr  # here: a synchronous simulate job reads no schedule

    check_regular_file(path)
    try:
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
    except (OSError, RuntimeError, KeyError, ValueError, TypeError) as error:
        detail = f"missing {error}" if isinstance(error, KeyError) else " ".join(str(error).split())
        raise ValueError(f"{path}: not a readable schedule file ({detail})") from None
    if "job_lead" in ds:  # OpenBench's BATCHED reporting: pieces sharing a hand-out
        values["job_lead"] = np.ascontiguousarray(ds["job_lead"].values, dtype=np.int64)
    optional = {f.name for f in dataclasses.fields(Schedule) if f.default is None}
    names = {f.name for f in dataclasses.fields(Schedule)} - (optional - set(values))
    missing = names - set(values)
    if missing:  # the Schedule container grew: refuse rather than guess
        raise ValueError(f"{path}: cannot rebuild Schedule fields {sorted(missing)}")
    _check_schedule(path, values, num_pairs=num_pairs, num_workers=num_workers, seeds=seeds)
    return Schedule(**{name: values[name] for name in names})


def check_regular_file(path: str | Path) -> None:
    """Refuse (``ValueError``, ``"PATH: not a readable schedule file (reason)"``) a path
    that does not exist or is not a regular file, without opening it."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        reason = error.strerror or str(error)
        raise ValueError(f"{path}: not a readable schedule file ({reason})") from None
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"{path}: not a readable schedule file (not a regular file: a FIFO, device or "
            "directory)"
        )


def _check_schedule(path, values: dict, *, num_pairs, num_workers, seeds) -> None:
    """The file against the run (where given), then against itself."""
    expected = {"num_pairs": num_pairs, "num_workers": num_workers}
    for key, want in expected.items():
        if want is not None and values[key] != want:
            raise ValueError(f"{path}: {key} = {values[key]}, but the configuration has {want}")
    if seeds is not None and values["seeds"].tolist() != list(seeds):
        raise ValueError(f"{path}: seeds {values['seeds'].tolist()} are not the run's")
    pairs = values["job_pairs"]
    n_seeds = values["seeds"].shape[0]
    if pairs.ndim != 2 or pairs.shape[0] != n_seeds or values["n_jobs"].shape != (n_seeds,):
        raise ValueError(f"{path}: job arrays do not have one row per seed")
    if np.any(values["n_jobs"] < 1) or np.any(values["n_jobs"] > pairs.shape[1]):
        raise ValueError(f"{path}: n_jobs outside 1..{pairs.shape[1]}")
    if np.any(pairs < 0) or np.any(pairs.sum(axis=1) != values["num_pairs"]):
        raise ValueError(f"{path}: job sizes do not add up to num_pairs = {values['num_pairs']}")
    _check_jobs(path, values)


def _check_jobs(path, values: dict) -> None:
    """Each seed's first ``n_jobs`` jobs: arrival order a permutation of them, workers
    within the pool, finite times; the padding after them ``-1``. The replay indexes
    with these, so a value out of range would read another job's row or crash."""
    shape = values["job_pairs"].shape
    for name in ("arrival_job", "job_worker", "job_dispatch_time", "job_arrival_time"):
        if values[name].ndim != 2 or values[name].shape[0] != shape[0]:
            raise ValueError(f"{path}: {name} does not have one row per seed")
    holes = "job_lead" in values  # BATCHED reporting: job indices may skip (no worker)
    for row, (n, seed) in enumerate(zip(values["n_jobs"], values["seeds"], strict=True)):
        arrivals = values["arrival_job"][row]
        if arrivals.shape[0] < n or np.any(arrivals[n:] != -1):
            raise ValueError(f"{path}: arrival_job of seed {seed} has entries beyond its {n} jobs")
        order = np.sort(arrivals[:n])
        jobs = np.flatnonzero(values["job_worker"][row] >= 0) if holes else np.arange(n)
        if holes and np.array_equal(order, jobs):
            order = np.arange(n)  # each job once: checked as the dense case below
        if not np.array_equal(order, np.arange(n)):
            bad = (
                next(int(j) for j in arrivals[:n] if not 0 <= j < n)
                if (order[0] < 0 or order[-1] >= n)
                else int(order[np.flatnonzero(np.diff(order) == 0)[0]])
            )
            raise ValueError(
                f"{path}: arrival_job of seed {seed} holds job index {bad}, not each of "
                f"0..{n - 1} once"
            )
        workers = values["job_worker"][row, jobs]
        outside = workers[(workers < 0) | (workers >= values["num_workers"])]
        if outside.size:
            raise ValueError(
                f"{path}: job_worker of seed {seed} holds worker {int(outside[0])}, outside "
                f"0..{values['num_workers'] - 1}"
            )
        for name in ("job_dispatch_time", "job_arrival_time"):
            if not np.isfinite(values[name][row, jobs]).all():
                raise ValueError(f"{path}: {name} of seed {seed} holds non-finite values")
