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
- ``arrival_job[s, e]`` is the job arriving ``e``-th, ``-1`` as padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ITERATION_COUNTERS = ("arrival", "dispatch")


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

    @property
    def num_seeds(self) -> int:
        return int(self.seeds.shape[0])

    @property
    def max_jobs(self) -> int:
        return int(self.job_pairs.shape[1])

    def iter_local(self, counter: str = "arrival") -> np.ndarray:
        """The dispatch iteration ``iter_local = K + 1`` of every job, ``(seed, job)``.

        ``counter="arrival"`` counts pairs arrived before dispatch (Fishtest);
        ``counter="dispatch"`` counts pairs dispatched before (the original lab).
        """
        if counter == "arrival":
            return self.job_arrived_before + 1
        if counter == "dispatch":
            return self.job_offset + 1
        raise ValueError(f"iteration_counter must be one of {ITERATION_COUNTERS}, got {counter!r}")

    def job_mask(self) -> np.ndarray:
        """``(seed, job)`` True where the job exists."""
        return np.arange(self.max_jobs)[None, :] < self.n_jobs[:, None]

    def staleness_pairs(self) -> np.ndarray:
        """Pairs that arrived between each job's dispatch and its arrival, ``(seed, job)``.

        Padding entries are 0.
        """
        rows = np.arange(self.num_seeds)[:, None]
        valid = self.arrival_job >= 0
        jobs = np.where(valid, self.arrival_job, 0)
        arrived_pairs = np.where(valid, self.job_pairs[rows, jobs], 0)
        arrived_before_arrival = (
            np.cumsum(arrived_pairs, axis=1) - arrived_pairs
        )  # by arrival index
        values = arrived_before_arrival - self.job_arrived_before[rows, jobs]
        # Scatter only the real arrivals: padding events must not write (they
        # used to write 0 over job 0's value through the clipped index).
        stale = np.zeros_like(self.job_pairs)
        seed_index = np.broadcast_to(rows, valid.shape)[valid]
        stale[seed_index, self.arrival_job[valid]] = values[valid]
        return np.where(self.job_mask(), stale, 0)


def sync_schedule(seeds, num_pairs: int, batch_size: int) -> Schedule:
    """One worker, fixed batches of ``batch_size`` pairs, the last one cut to the budget.

    Durations are not simulated in the synchronous mode (times are NaN).
    """
    seeds = np.asarray(seeds, dtype=np.int64)
    if num_pairs <= 0 or batch_size <= 0:
        raise ValueError("num_pairs and batch_size must be positive")
    n_seeds = seeds.shape[0]
    n_jobs = -(-num_pairs // batch_size)
    pairs = np.full(n_jobs, batch_size, dtype=np.int64)
    pairs[-1] = num_pairs - batch_size * (n_jobs - 1)
    offset = np.concatenate(([0], np.cumsum(pairs)[:-1]))

    def tile(row: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.broadcast_to(row, (n_seeds, row.shape[0])))

    nan = np.full((n_seeds, n_jobs), np.nan)
    return Schedule(
        seeds=seeds,
        num_workers=1,
        num_pairs=int(num_pairs),
        n_jobs=np.full(n_seeds, n_jobs, dtype=np.int64),
        job_pairs=tile(pairs),
        job_offset=tile(offset),
        job_arrived_before=tile(offset),
        job_worker=np.zeros((n_seeds, n_jobs), dtype=np.int64),
        job_dispatch_time=nan,
        job_arrival_time=nan.copy(),
        arrival_job=tile(np.arange(n_jobs, dtype=np.int64)),
        worker_concurrency=np.ones((n_seeds, 1), dtype=np.int64),
        worker_speed=np.ones((n_seeds, 1)),
    )
