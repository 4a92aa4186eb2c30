"""Replay one optimizer over a schedule, for all seeds at once.

The schedule (jobs, workers, arrival order) is fixed in advance and does not
depend on the optimizer. The replay walks the arrivals in lock-step across
seeds (arrival ``e`` of every seed at the same time; seeds with fewer jobs are
masked), and dispatches job ``W + e`` right after arrival ``e``:

- dispatch of job j: ``theta = export(state)``, ``c = perturbation(iter_local)``,
  probes ``clip(theta -+ c * flip_j)``, true Elos, pentanomial probabilities,
  and the job's result from its own match uniforms (common random numbers).
  The result depends only on the snapshot, so it is computed at dispatch and
  held until the job arrives.
- arrival of job j: ``state = update(state, report_j)`` on the current state.

The optimizer never sees the bowl: the replay evaluates the probes and hands
the optimizer reports only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from spsa_bench import pentanomial, streams
from spsa_bench.developer import DeveloperView
from spsa_bench.optimizers.base import Optimizer, Report
from spsa_bench.oracle import TrueBowl
from spsa_bench.schedule import Schedule

SIGNALS = ("raw", "scaled")


class NonFiniteStateError(RuntimeError):
    """An optimizer produced NaN or infinity; the run is refused, not written."""


@dataclass(frozen=True)
class RunResult:
    """Trajectories on the pairs grid and per-seed KPIs of one replay."""

    pairs_grid: np.ndarray  # (pairs,)
    theta: np.ndarray  # (seed, pairs, param)
    extras: dict[str, np.ndarray]  # name -> (seed, pairs, param)
    avg_step_size_last_100: np.ndarray  # (seed,)
    total_pairs: np.ndarray  # (seed,)
    n_updates: np.ndarray  # (seed,)


def pairs_grid(num_pairs: int, points: int) -> np.ndarray:
    """``points`` checkpoints from 0 to ``num_pairs`` inclusive (integers)."""
    return np.unique(np.round(np.linspace(0, num_pairs, points)).astype(np.int64))


def _checkpoint_events(schedule: Schedule, grid: np.ndarray) -> np.ndarray:
    """For every (seed, grid point) the last arrival index ending at or before it (-1: none)."""
    rows = np.arange(schedule.num_seeds)[:, None]
    valid = schedule.arrival_job >= 0
    arrived = np.where(valid, schedule.job_pairs[rows, np.maximum(schedule.arrival_job, 0)], 0)
    cumulative = np.cumsum(arrived, axis=1)
    cumulative = np.where(valid, cumulative, schedule.num_pairs + 1)  # padding sorts last
    stride = np.int64(schedule.num_pairs + 1) * 4
    keys = (cumulative + rows * stride).ravel()
    queries = (grid[None, :] + rows * stride).ravel()
    position = np.searchsorted(keys, queries, side="right").reshape(
        schedule.num_seeds, grid.shape[0]
    )
    return position - rows * cumulative.shape[1] - 1


class _Recorder:
    """Writes the exported state into the checkpoint arrays at the right events."""

    def __init__(self, event_of: np.ndarray, n_events: int):
        order = np.argsort(event_of, axis=None, kind="stable")
        self.seed_index, self.grid_index = np.unravel_index(order, event_of.shape)
        sorted_events = event_of.ravel()[order]
        # bounds[e + 1] .. bounds[e + 2] are the entries recorded after event e (e = -1: initial)
        self.bounds = np.searchsorted(sorted_events, np.arange(-1, n_events + 1)).tolist()

    def at(self, event: int) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = self.bounds[event + 1], self.bounds[event + 2]
        return self.seed_index[lo:hi], self.grid_index[lo:hi]


def _gather_uniforms(uniforms: np.ndarray, schedule: Schedule, job: int, width: int) -> np.ndarray:
    """Match uniforms of job ``job`` for every seed, padded with -1 to ``width``."""
    offsets = schedule.job_offset[:, job]
    sizes = schedule.job_pairs[:, job]
    index = offsets[:, None] + np.arange(width)[None, :]
    valid = np.arange(width)[None, :] < sizes[:, None]
    rows = np.arange(schedule.num_seeds)[:, None]
    picked = uniforms[rows, np.minimum(index, uniforms.shape[1] - 1)]
    return np.where(valid, picked, -1.0)


def replay(
    optimizer: Optimizer,
    schedule: Schedule,
    bowl: TrueBowl,
    view: DeveloperView,
    *,
    entropy: int,
    signal: str = "raw",
    iteration_counter: str = "arrival",
    checkpoints: int = 101,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Run ``optimizer`` over ``schedule`` for all its seeds at once."""
    if signal not in SIGNALS:
        raise ValueError(f"signal must be one of {SIGNALS}, got {signal!r}")
    n_seeds, n_jobs, n_workers = schedule.num_seeds, schedule.max_jobs, schedule.num_workers
    n_params = view.num_params
    rows = np.arange(n_seeds)
    signal_scale = 1.0 if signal == "raw" else 1.0 / (2.0 * np.sqrt(n_params))

    flips = streams.flips(entropy, schedule.seeds, n_jobs, n_params)
    uniforms = streams.match_uniforms(entropy, schedule.seeds, schedule.num_pairs)
    iter_local = schedule.iter_local(iteration_counter)
    job_exists = schedule.job_mask()
    # A worker holds one job at a time: the job's perturbation, flip and result
    # (computed at dispatch from the snapshot) wait in the worker's slot until
    # the job arrives.
    slot_c = np.zeros((n_seeds, n_workers, n_params))
    slot_flip = np.zeros((n_seeds, n_workers, n_params))
    slot_result = np.zeros((n_seeds, n_workers))

    def same_for_all_seeds(array: np.ndarray) -> np.ndarray:
        return np.all(array == array[:1], axis=0)

    # Columns where every seed does the same thing take plain slices, not gathers.
    job_uniform = same_for_all_seeds(schedule.job_pairs) & same_for_all_seeds(schedule.job_offset)
    job_uniform &= same_for_all_seeds(schedule.job_worker) & np.all(job_exists, axis=0)
    widths = schedule.job_pairs.max(axis=0)
    n_events = schedule.arrival_job.shape[1]
    arrival_active = schedule.arrival_job >= 0
    arrival_jobs = np.maximum(schedule.arrival_job, 0)
    arrival_worker = np.maximum(schedule.job_worker[rows[:, None], arrival_jobs], 0)
    arrival_pairs = np.maximum(schedule.job_pairs[rows[:, None], arrival_jobs], 1).astype(
        np.float64
    )
    arrival_iter = iter_local[rows[:, None], arrival_jobs]
    event_uniform = np.all(arrival_active, axis=0) & same_for_all_seeds(arrival_worker)

    grid = pairs_grid(schedule.num_pairs, checkpoints)
    recorder = _Recorder(_checkpoint_events(schedule, grid), n_events)
    state = optimizer.init(n_seeds)
    theta = optimizer.export(state)
    extra_names = list(optimizer.extras(state))
    theta_out = np.full((n_seeds, grid.shape[0], n_params), np.nan)
    extras_out = {name: np.full_like(theta_out, np.nan) for name in extra_names}

    def record(event: int) -> None:
        seed_index, grid_index = recorder.at(event)
        if seed_index.size:
            theta_out[seed_index, grid_index] = theta[seed_index]
            for name, value in optimizer.extras(state).items():
                extras_out[name][seed_index, grid_index] = value[seed_index]

    def dispatch(job: int) -> None:
        c = optimizer.perturbation(iter_local[:, job])
        flip = flips[:, job].astype(np.float64)
        step = c * flip
        opponent = bowl.opponent_elo(view.clip(theta + step), view.clip(theta - step))
        thresholds = pentanomial.thresholds(pentanomial.probabilities(opponent))
        if job_uniform[job]:
            start = schedule.job_offset[0, job]
            u = uniforms[:, start : start + schedule.job_pairs[0, job]]
            net = pentanomial.net_wins_from_uniforms(u, thresholds, unpadded=True)
            worker = schedule.job_worker[0, job]
            slot_c[:, worker], slot_flip[:, worker], slot_result[:, worker] = c, flip, net
        else:
            exists = job_exists[:, job]
            u = _gather_uniforms(uniforms, schedule, job, int(widths[job]))
            net = pentanomial.net_wins_from_uniforms(u, thresholds)
            worker = np.maximum(schedule.job_worker[:, job], 0)
            keep = ~exists  # seeds without this job keep their slot untouched
            slot_c[rows, worker] = np.where(keep[:, None], slot_c[rows, worker], c)
            slot_flip[rows, worker] = np.where(keep[:, None], slot_flip[rows, worker], flip)
            slot_result[rows, worker] = np.where(keep, slot_result[rows, worker], net)

    record(-1)
    for job in range(min(n_workers, n_jobs)):
        dispatch(job)

    step_norm = np.zeros((n_seeds, n_events))
    next_progress = time.monotonic() + 1.0
    for event in range(n_events):
        if event_uniform[event]:
            worker = arrival_worker[0, event]
            c, flip, result = (
                slot_c[:, worker].copy(),
                slot_flip[:, worker].copy(),
                slot_result[:, worker],
            )
        else:
            worker = arrival_worker[:, event]
            c, flip, result = (
                slot_c[rows, worker],
                slot_flip[rows, worker],
                slot_result[rows, worker],
            )
        report = Report(
            n_pairs=arrival_pairs[:, event].copy(),
            signal=result * signal_scale,
            flip=flip,
            c=c,
            iter_local=arrival_iter[:, event].copy(),
        )
        new_state = optimizer.update(state, report)
        if not event_uniform[event]:
            active = arrival_active[:, event]
            new_state = type(new_state)(
                *(
                    np.where(active.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)
                    for new, old in zip(new_state, state, strict=True)
                )
            )
        state = new_state
        new_theta = optimizer.export(state)
        moved = new_theta - theta
        norm = np.sqrt(np.einsum("sp,sp->s", moved, moved))
        if not np.all(np.isfinite(norm)):
            bad = int(np.flatnonzero(~np.isfinite(norm))[0])
            raise NonFiniteStateError(
                f"optimizer {optimizer.name!r} produced a non-finite state at seed "
                f"{int(schedule.seeds[bad])}, arrival {event} (job {int(schedule.arrival_job[bad, event])})"
            )
        step_norm[:, event] = norm
        theta = new_theta
        record(event)
        next_job = n_workers + event
        if next_job < n_jobs:
            dispatch(next_job)
        if progress is not None and (event & 63) == 0 and time.monotonic() > next_progress:
            progress(event, n_events)
            next_progress = time.monotonic() + 0.5
    if progress is not None:
        progress(n_events, n_events)

    return RunResult(
        pairs_grid=grid,
        theta=theta_out,
        extras=extras_out,
        avg_step_size_last_100=_mean_last_steps(step_norm, schedule.n_jobs, 100),
        total_pairs=schedule.job_pairs.sum(axis=1),
        n_updates=schedule.n_jobs.copy(),
    )


def _mean_last_steps(step_norm: np.ndarray, n_steps: np.ndarray, last: int) -> np.ndarray:
    """Mean of the last ``last`` valid entries of each row (rows have ``n_steps`` valid entries)."""
    columns = np.arange(step_norm.shape[1])[None, :]
    window = (columns < n_steps[:, None]) & (columns >= (n_steps - last)[:, None])
    return np.sum(np.where(window, step_norm, 0.0), axis=1) / np.maximum(np.sum(window, axis=1), 1)
