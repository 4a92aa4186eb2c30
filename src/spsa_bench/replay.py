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
    results = np.zeros((n_seeds, n_jobs))
    # A worker holds one job at a time: the perturbation its job was probed with
    # waits in the worker's slot until the job arrives.
    inflight_c = np.zeros((n_seeds, n_workers, n_params))
    one_worker_column = np.all(schedule.job_worker == schedule.job_worker[:1], axis=0)

    # Columns where every seed's job has the same size and offset read a plain slice.
    same_slice = np.all(schedule.job_pairs == schedule.job_pairs[:1], axis=0) & np.all(
        schedule.job_offset == schedule.job_offset[:1], axis=0
    )
    widths = schedule.job_pairs.max(axis=0)

    grid = pairs_grid(schedule.num_pairs, checkpoints)
    n_events = schedule.arrival_job.shape[1]
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
        if one_worker_column[job]:
            inflight_c[:, schedule.job_worker[0, job]] = c
        else:
            inflight_c[rows, np.maximum(schedule.job_worker[:, job], 0)] = c
        step = c * flips[:, job]
        opponent = bowl.opponent_elo(view.clip(theta + step), view.clip(theta - step))
        thresholds = pentanomial.thresholds(pentanomial.probabilities(opponent))
        if same_slice[job]:
            start = schedule.job_offset[0, job]
            u = uniforms[:, start : start + schedule.job_pairs[0, job]]
        else:
            u = _gather_uniforms(uniforms, schedule, job, int(widths[job]))
        net = pentanomial.net_wins_from_uniforms(u, thresholds)
        results[:, job] = np.where(job_exists[:, job], net, 0)

    record(-1)
    for job in range(min(n_workers, n_jobs)):
        dispatch(job)

    step_norm = np.zeros((n_seeds, n_events))
    last_report = time.monotonic() + 0.5  # first progress line after about a second
    for event in range(n_events):
        job = schedule.arrival_job[:, event]
        active = job >= 0
        all_active = bool(active.all())
        first = int(job[0])
        if all_active and np.all(job == first):
            pick = (slice(None), first)
            worker = schedule.job_worker[0, first]
            c = inflight_c[:, worker] if one_worker_column[first] else None
        else:
            pick = (rows, np.maximum(job, 0))
            c = None
        if c is None:
            c = inflight_c[rows, np.maximum(schedule.job_worker[pick], 0)]
        report = Report(
            n_pairs=np.maximum(schedule.job_pairs[pick], 1).astype(np.float64),
            signal=results[pick] * signal_scale,
            flip=flips[pick].astype(np.float64),
            c=c.copy(),
            iter_local=iter_local[pick],
        )
        new_state = optimizer.update(state, report)
        if not all_active:
            new_state = type(new_state)(
                *(
                    np.where(active.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)
                    for new, old in zip(new_state, state, strict=True)
                )
            )
        state = new_state
        new_theta = optimizer.export(state)
        norm = np.sqrt(np.einsum("sp,sp->s", new_theta - theta, new_theta - theta))
        if not np.all(np.isfinite(norm)):
            bad = int(np.flatnonzero(~np.isfinite(norm))[0])
            raise NonFiniteStateError(
                f"optimizer {optimizer.name!r} produced a non-finite state at seed "
                f"{int(schedule.seeds[bad])}, arrival {event} (job {int(job[bad])})"
            )
        step_norm[:, event] = norm
        theta = new_theta
        record(event)
        next_job = n_workers + event
        if next_job < n_jobs:
            dispatch(next_job)
        if progress is not None and (event & 63) == 0 and time.monotonic() - last_report > 0.5:
            progress(event, n_events)
            last_report = time.monotonic() + 0.5  # first progress line after about a second
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
