"""Optimizer-independent job schedules.

A schedule fixes, per seed, which jobs exist (pairs per job, in dispatch
order), which worker ran each, when each was dispatched and arrived, and the
order of arrivals. It depends only on the seed and the batch-mode settings,
never on the optimizer, so it is built once and replayed for every optimizer
(spec errata 4). The synchronous runner is the one-worker, fixed-batch case.

Conventions (all arrays are padded along the job axis to ``J = max n_jobs``):

- jobs are numbered in dispatch order; the first ``num_workers`` jobs are
  dispatched at time 0, and job ``W + e`` is dispatched to the worker freed by
  the ``e``-th arrival (if budget remains), so the dispatch index of a job is
  the same function of the arrival index at every seed;
- ``job_offset[s, j]`` is the index of the job's first pair in the seed's
  match-uniform stream, which equals the pairs *dispatched* before the job
  (the original lab's counter convention);
- ``job_arrived_before[s, j]`` is the pairs *arrived* before the job's
  dispatch (the Fishtest counter, spec errata 5);
- ``arrival_job[s, e]`` is the job arriving ``e``-th, ``-1`` as padding;
- ``job_lead[s, j]`` (``None`` but for OpenBench's BATCHED reporting,
  :func:`spsa_bench.dispatch.asynchronous.split_reports`) is the job whose hand-out job
  ``j`` shares (its perturbation, flip and rounding; ``j`` itself for a job that has its
  own, ``-1`` for padding). Such a schedule may have holes: a job index with no job
  (``job_worker`` -1) before the last one, where an arrival freed a worker with nothing
  left to play; ``n_jobs`` then counts the jobs (and arrivals), not the indices.

The arrival bookkeeping every other module needs lives here, once:
:meth:`Schedule.by_arrival` (a per-job array in arrival order),
:meth:`Schedule.arrival_pairs`, :meth:`Schedule.arrived_before_arrival`,
:meth:`Schedule.staleness_pairs`, :meth:`Schedule.iter_local` (both counter
conventions) and :func:`arrived_before_dispatch` (which the schedule builders
use for ``job_arrived_before``). The literal references in
:mod:`spsa_bench.reference` keep their own counters on purpose: they check it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

ITERATION_COUNTERS = ("arrival", "dispatch")

#: The :class:`Schedule` arrays with one row per seed (besides ``seeds``).
PER_SEED_FIELDS = (
    "n_jobs", "job_pairs", "job_offset", "job_arrived_before", "job_worker",
    "job_dispatch_time", "job_arrival_time", "arrival_job", "worker_concurrency",
    "worker_speed",
)  # fmt: skip


@dataclass(frozen=True)
class Schedule:
    seeds: np.ndarray  # (seed,) int64
    num_workers: int
    num_pairs: int
    n_jobs: np.ndarray  # (seed,) int64
    job_pairs: np.ndarray  # (seed, job) int64, 0 for padding
    job_offset: np.ndarray  # (seed, job) int64
    job_arrived_before: np.ndarray  # (seed, job) int64
    job_worker: np.ndarray  # (seed, job) int64, -1 for padding
    job_dispatch_time: np.ndarray  # (seed, job) float64 seconds (NaN where not simulated)
    job_arrival_time: np.ndarray  # (seed, job) float64 seconds (NaN where not simulated)
    arrival_job: np.ndarray  # (seed, event) int64, -1 for padding
    worker_concurrency: np.ndarray  # (seed, worker) int64
    worker_speed: np.ndarray  # (seed, worker) float64
    job_lead: np.ndarray | None = None  # (seed, job) int64: BATCHED reporting only

    @property
    def num_seeds(self) -> int:
        return int(self.seeds.shape[0])

    def identical_seeds(self) -> bool:
        """Every seed has the same jobs, workers, times and arrivals (always so in the
        synchronous mode): whatever is computed seed by seed from the schedule alone
        can then be computed once, on :meth:`first_seed`, and repeated.

        Rows broadcast from one (stride 0 along the seeds, as :func:`sync_schedule`
        builds them) are the same by construction and are not compared."""
        if self.job_lead is not None:  # pieces of asynchronous jobs: never all alike
            return False
        for name in PER_SEED_FIELDS:
            values = getattr(self, name)
            if values.strides[0] == 0:
                continue
            first = np.broadcast_to(values[:1], values.shape)
            if not np.array_equal(values, first, equal_nan=values.dtype.kind == "f"):
                return False
        return True

    def first_seed(self) -> Schedule:
        """The schedule of the first seed alone."""
        return dataclasses.replace(
            self,
            seeds=self.seeds[:1],
            **{name: getattr(self, name)[:1] for name in PER_SEED_FIELDS},
            job_lead=None if self.job_lead is None else self.job_lead[:1],
        )

    @property
    def max_jobs(self) -> int:
        return int(self.job_pairs.shape[1])

    def iter_local(self, counter: str = "arrival") -> np.ndarray:
        """The dispatch iteration ``iter_local = K + 1`` of every job, ``(seed, job)``.

        ``counter="arrival"`` counts pairs arrived before dispatch (Fishtest);
        ``counter="dispatch"`` counts pairs dispatched before (the original lab). A job
        that shares a hand-out (``job_lead``) has its lead's.
        """
        if counter == "arrival":
            return self.job_arrived_before + 1
        if counter == "dispatch":
            if self.job_lead is not None:
                lead = np.maximum(self.job_lead, 0)
                return np.take_along_axis(self.job_offset, lead, axis=1) + 1
            return self.job_offset + 1
        raise ValueError(f"iteration_counter must be one of {ITERATION_COUNTERS}, got {counter!r}")

    def job_mask(self) -> np.ndarray:
        """``(seed, job)`` True where the job exists."""
        if self.job_lead is not None:  # holes possible: the job's worker says
            return self.job_worker >= 0
        return np.arange(self.max_jobs)[None, :] < self.n_jobs[:, None]

    def arrival_mask(self) -> np.ndarray:
        """``(seed, event)`` True where the event is a real arrival (not padding)."""
        return self.arrival_job >= 0

    def by_arrival(self, job_values: np.ndarray) -> np.ndarray:
        """``job_values[s, arrival_job[s, e]]``: a per-job array in arrival order, ``(seed, event)``.

        Padding events read job 0 (every seed has it), so the values stay valid
        inputs wherever a caller computes on them before masking.
        """
        rows = np.arange(self.num_seeds)[:, None]
        return job_values[rows, np.maximum(self.arrival_job, 0)]

    def arrival_pairs(self) -> np.ndarray:
        """Pairs of the job arriving at each event, ``(seed, event)``; padding 0."""
        return arrival_pairs(self.job_pairs, self.arrival_job)

    def arrived_before_arrival(self) -> np.ndarray:
        """Pairs arrived before each job's own arrival, ``(seed, job)``; padding 0.

        With ``A[s, e]`` the pairs of arrival ``e``, the job arriving ``e``-th
        sees ``sum_{e' < e} A[s, e']``.
        """
        arrived = self.arrival_pairs()
        by_event = np.cumsum(arrived, axis=1) - arrived
        return by_job(by_event, self.arrival_job, self.max_jobs)

    def staleness_pairs(self) -> np.ndarray:
        """Pairs that arrived between each job's dispatch and its arrival, ``(seed, job)``.

        ``arrived_before_arrival - job_arrived_before``; padding entries are 0.
        """
        return np.where(self.job_mask(), self.arrived_before_arrival() - self.job_arrived_before, 0)


def arrival_pairs(job_pairs: np.ndarray, arrival_job: np.ndarray) -> np.ndarray:
    """``job_pairs`` of the job arriving at each event, ``(seed, event)``; padding (-1) gives 0."""
    rows = np.arange(job_pairs.shape[0])[:, None]
    return np.where(arrival_job >= 0, job_pairs[rows, np.maximum(arrival_job, 0)], 0)


def by_job(event_values: np.ndarray, arrival_job: np.ndarray, n_jobs: int) -> np.ndarray:
    """Scatter per-event values to the arriving jobs, ``(seed, job)``; jobs that never arrive 0.

    The inverse of :meth:`Schedule.by_arrival`. Only real events write (padding
    must not write over job 0 through a clipped index).
    """
    valid = arrival_job >= 0
    rows = np.broadcast_to(np.arange(arrival_job.shape[0])[:, None], valid.shape)
    out = np.zeros((arrival_job.shape[0], n_jobs), dtype=event_values.dtype)
    out[rows[valid], arrival_job[valid]] = event_values[valid]
    return out


def arrived_before_dispatch(
    job_pairs: np.ndarray, arrival_job: np.ndarray, num_workers: int, n_jobs: np.ndarray
) -> np.ndarray:
    """Pairs arrived before each job's dispatch (the Fishtest counter ``K``), ``(seed, job)``.

    Jobs ``0 .. W-1`` go out at time 0 (``K = 0``); job ``W + e`` is dispatched
    right after arrival ``e``, so its ``K`` is the pairs of arrivals ``0 .. e``.
    Padding jobs (``j >= n_jobs``) are 0.
    """
    through = np.cumsum(arrival_pairs(job_pairs, arrival_job), axis=1)  # arrivals 0..e
    width = job_pairs.shape[1]
    out = np.zeros_like(job_pairs)
    if width > num_workers:
        out[:, num_workers:] = through[:, : width - num_workers]
    return np.where(np.arange(width)[None, :] < n_jobs[:, None], out, 0)


def sync_schedule(seeds, num_pairs: int, batch_size: int) -> Schedule:
    """One worker, fixed batches of ``batch_size`` pairs, the last one cut to the budget.

    Durations are not simulated in the synchronous mode (times are NaN). Every seed
    has the same schedule, so each per-seed array is one row broadcast to all seeds
    (read-only, stride 0: no memory per seed).
    """
    seeds = np.asarray(seeds, dtype=np.int64)
    if num_pairs <= 0 or batch_size <= 0:
        raise ValueError("num_pairs and batch_size must be positive")
    n_seeds = seeds.shape[0]
    n_jobs = -(-num_pairs // batch_size)
    pairs = np.full(n_jobs, batch_size, dtype=np.int64)
    pairs[-1] = num_pairs - batch_size * (n_jobs - 1)
    offset = np.concatenate(([0], np.cumsum(pairs)[:-1]))

    def tile(row) -> np.ndarray:
        return np.broadcast_to(np.asarray(row), (n_seeds,) + np.shape(row))

    job_pairs = tile(pairs)
    arrival_job = tile(np.arange(n_jobs, dtype=np.int64))
    n_jobs_per_seed = tile(np.int64(n_jobs))
    nan = tile(np.full(n_jobs, np.nan))
    return Schedule(
        seeds=seeds,
        num_workers=1,
        num_pairs=int(num_pairs),
        n_jobs=n_jobs_per_seed,
        job_pairs=job_pairs,
        job_offset=tile(offset),
        job_arrived_before=tile(
            arrived_before_dispatch(job_pairs[:1], arrival_job[:1], 1, n_jobs_per_seed[:1])[0]
        ),
        job_worker=tile(np.zeros(n_jobs, dtype=np.int64)),
        job_dispatch_time=nan,
        job_arrival_time=nan,
        arrival_job=arrival_job,
        worker_concurrency=tile(np.ones(1, dtype=np.int64)),
        worker_speed=tile(np.ones(1)),
    )
