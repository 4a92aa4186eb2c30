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

from spsa_bench.dispatch.schedule import Schedule
from spsa_bench.model import pentanomial, streams
from spsa_bench.model.bowl import TrueBowl
from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers.base import Optimizer, Report

SIGNALS = ("raw", "scaled")
LAST_STEPS = 100  # avg_step_size_last_100 averages the last this many updates of a seed


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


def _job_uniforms(
    flat_uniforms: np.ndarray, pairs_per_seed: int, offsets: np.ndarray, sizes: np.ndarray
) -> np.ndarray:
    """The match uniforms of one job for every seed, concatenated seed after seed.

    Seed ``s`` contributes ``sizes[s]`` uniforms starting at ``offsets[s]`` of its own stream.
    """
    total = int(sizes.sum())
    starts = offsets + np.arange(sizes.shape[0]) * pairs_per_seed  # in the flat array
    # index of pair i of the concatenation: starts[seed] + (i - first position of seed)
    first = np.cumsum(sizes) - sizes
    index = np.repeat(starts - first, sizes) + np.arange(total)
    return flat_uniforms[index]


class _Seeds:
    """Every per-seed array the event loop reads, for the seeds still running.

    Seeds are compacted away once they have no events left (the lock-step over
    arrivals otherwise keeps computing finished seeds when job counts differ, as
    in the variable batch mode). ``origin`` maps rows back to the caller's seeds.
    Column flags say where every remaining seed does the same thing, so the
    loop can take plain slices instead of gathers.
    """

    PER_SEED = (
        "origin", "uniforms", "iter_local", "job_pairs", "job_offset", "job_worker",
        "job_slot", "job_exists", "arrival_active", "arrival_worker", "arrival_pairs",
        "arrival_iter", "n_jobs", "slot_c", "slot_flip", "slot_result",
    )  # fmt: skip

    def __init__(self, flips_by_job: np.ndarray, **arrays):
        self.flips_by_job = flips_by_job
        for name in self.PER_SEED:
            setattr(self, name, arrays[name])
        self._derive()

    def _derive(self) -> None:
        def same(array: np.ndarray) -> np.ndarray:
            return np.all(array == array[:1], axis=0)

        self.rows = np.arange(self.origin.shape[0])
        self.flat_uniforms = self.uniforms.reshape(-1)
        self.job_uniform = same(self.job_pairs) & same(self.job_offset) & same(self.job_worker)
        self.job_uniform &= np.all(self.job_exists, axis=0)
        self.iter_uniform = same(self.iter_local)
        self.event_all_active = np.all(self.arrival_active, axis=0)
        self.event_uniform = self.event_all_active & same(self.arrival_worker)

    def keep(self, rows: np.ndarray) -> None:
        for name in self.PER_SEED:
            setattr(self, name, getattr(self, name)[rows])
        self.flips_by_job = self.flips_by_job[:, rows]  # (job, seed, param): seeds on axis 1
        self._derive()


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
    compact: bool = True,
) -> RunResult:
    """Run ``optimizer`` over ``schedule`` for all its seeds at once.

    ``compact`` drops seeds from the arrays once they have no events left (the
    results are bit-identical either way; ``False`` keeps every row, for tests
    that spy on the reports).
    """
    if signal not in SIGNALS:
        raise ValueError(f"signal must be one of {SIGNALS}, got {signal!r}")
    n_seeds, n_jobs, n_workers = schedule.num_seeds, schedule.max_jobs, schedule.num_workers
    n_params = view.num_params
    n_events = schedule.arrival_job.shape[1]
    signal_scale = 1.0 if signal == "raw" else 1.0 / (2.0 * np.sqrt(n_params))
    all_rows = np.arange(n_seeds)[:, None]

    iter_local = schedule.iter_local(iteration_counter)
    job_exists = schedule.job_mask()
    arrival_jobs = np.maximum(schedule.arrival_job, 0)
    # A worker holds one job at a time: the job's perturbation, flip and result
    # (computed at dispatch from the snapshot) wait in the worker's slot until
    # the job arrives. Slot n_workers absorbs the writes of seeds without the job.
    seeds = _Seeds(
        origin=np.arange(n_seeds),
        # job-major, so that each dispatch reads one contiguous block of flips
        flips_by_job=np.ascontiguousarray(
            streams.flips(entropy, schedule.seeds, n_jobs, n_params).transpose(1, 0, 2)
        ),
        uniforms=streams.match_draws(entropy, schedule.seeds, schedule.num_pairs),
        iter_local=iter_local,
        job_pairs=schedule.job_pairs,
        job_offset=schedule.job_offset,
        job_worker=schedule.job_worker,
        job_slot=np.where(job_exists, schedule.job_worker, n_workers),
        job_exists=job_exists,
        arrival_active=schedule.arrival_job >= 0,
        arrival_worker=np.maximum(schedule.job_worker[all_rows, arrival_jobs], 0),
        arrival_pairs=np.maximum(schedule.job_pairs[all_rows, arrival_jobs], 1).astype(np.float64),
        arrival_iter=iter_local[all_rows, arrival_jobs],
        n_jobs=schedule.n_jobs,
        slot_c=np.zeros((n_seeds, n_workers + 1, n_params)),
        slot_flip=np.zeros((n_seeds, n_workers + 1, n_params)),
        slot_result=np.zeros((n_seeds, n_workers + 1)),
    )

    grid = pairs_grid(schedule.num_pairs, checkpoints)
    recorder = _Recorder(_checkpoint_events(schedule, grid), n_events)
    position = np.arange(n_seeds)  # row of each original seed among the running ones
    state = optimizer.init(n_seeds)
    theta = optimizer.export(state)
    extra_names = list(optimizer.extras(state))
    theta_out = np.full((n_seeds, grid.shape[0], n_params), np.nan)
    extras_out = {name: np.full_like(theta_out, np.nan) for name in extra_names}

    def record(event: int) -> None:
        seed_index, grid_index = recorder.at(event)
        if seed_index.size:
            rows = position[seed_index]
            theta_out[seed_index, grid_index] = theta[rows]
            for name, value in optimizer.extras(state).items():
                extras_out[name][seed_index, grid_index] = value[rows]

    def dispatch(job: int) -> None:
        if seeds.iter_uniform[job]:  # one row, repeated for every seed
            row = optimizer.perturbation(seeds.iter_local[:1, job])
            c = np.repeat(row, seeds.rows.shape[0], axis=0)
        else:
            c = optimizer.perturbation(seeds.iter_local[:, job])
        flip = seeds.flips_by_job[job].astype(np.float64)
        step = c * flip
        opponent = bowl.opponent_elo(view.clip(theta + step), view.clip(theta - step))
        if np.isnan(opponent).any():  # a NaN in theta reaches every probe: stop here, loudly
            bad = int(np.flatnonzero(np.isnan(opponent))[0])
            raise NonFiniteStateError(
                f"optimizer {optimizer.name!r} produced a non-finite state at seed "
                f"{int(schedule.seeds[seeds.origin[bad]])}, arrival {job - n_workers} "
                f"(found probing job {job})"
            )
        thresholds = pentanomial.fast_draw_thresholds(opponent)
        if seeds.job_uniform[job]:
            start = seeds.job_offset[0, job]
            u = seeds.uniforms[:, start : start + seeds.job_pairs[0, job]]
            net = pentanomial.net_wins_from_uniforms(u, thresholds, unpadded=True)
            slot = seeds.job_worker[0, job]
            if lockstep:  # fresh arrays, handed over whole: nothing to copy
                in_flight[slot] = (c, flip, net)
            else:
                seeds.slot_c[:, slot], seeds.slot_flip[:, slot] = c, flip
                seeds.slot_result[:, slot] = net
        else:
            sizes = seeds.job_pairs[:, job]
            u = _job_uniforms(
                seeds.flat_uniforms, schedule.num_pairs, seeds.job_offset[:, job], sizes
            )
            net = pentanomial.net_wins_from_segments(u, thresholds, sizes)
            slot, rows = seeds.job_slot[:, job], seeds.rows
            seeds.slot_c[rows, slot], seeds.slot_flip[rows, slot], seeds.slot_result[rows, slot] = (
                c,
                flip,
                net,
            )

    # Every seed doing the same thing at every step (the synchronous mode): jobs in
    # flight are kept as whole arrays per worker instead of in the slot arrays.
    lockstep = bool(seeds.job_uniform.all() and seeds.event_uniform.all())
    in_flight: dict[int, tuple] = {}

    record(-1)
    for job in range(min(n_workers, n_jobs)):
        dispatch(job)

    step_norm = np.zeros((n_seeds, n_events))
    last_steps_from = int(schedule.n_jobs.min()) - LAST_STEPS
    next_compaction_check = int(schedule.n_jobs.min())
    next_progress = time.monotonic() + 1.0
    for event in range(n_events):
        if compact and event >= next_compaction_check:
            running = seeds.n_jobs > event
            if 2 * int(running.sum()) <= running.shape[0]:  # half are done: drop them
                kept = np.flatnonzero(running)
                seeds.keep(kept)
                state = type(state)(*(field[kept] for field in state))
                theta = theta[kept]
                position[seeds.origin] = np.arange(seeds.origin.shape[0])
            next_compaction_check = event + 1
        if lockstep:
            c, flip, result = in_flight.pop(seeds.arrival_worker[0, event])
        elif seeds.event_uniform[event]:
            slot = seeds.arrival_worker[0, event]
            c, flip = seeds.slot_c[:, slot].copy(), seeds.slot_flip[:, slot].copy()
            result = seeds.slot_result[:, slot]
        else:
            slot, rows = seeds.arrival_worker[:, event], seeds.rows
            c, flip, result = (
                seeds.slot_c[rows, slot],
                seeds.slot_flip[rows, slot],
                seeds.slot_result[rows, slot],
            )
        report = Report(
            n_pairs=seeds.arrival_pairs[:, event].copy(),
            signal=result * signal_scale,
            flip=flip,
            c=c,
            iter_local=seeds.arrival_iter[:, event].copy(),
        )
        new_state = optimizer.update(state, report)
        if not seeds.event_all_active[event]:
            active = seeds.arrival_active[:, event]
            new_state = type(new_state)(
                *(
                    np.where(active.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)
                    for new, old in zip(new_state, state, strict=True)
                )
            )
        state = new_state
        new_theta = optimizer.export(state)
        if event >= last_steps_from:  # only the last 100 steps of a seed are summarised
            moved = new_theta - theta
            step_norm[seeds.origin, event] = np.sqrt(np.einsum("sp,sp->s", moved, moved))
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
    for name, field in zip(type(state)._fields, state, strict=True):
        if not np.all(np.isfinite(field)):
            bad = int(
                np.flatnonzero(~np.all(np.isfinite(field.reshape(field.shape[0], -1)), axis=1))[0]
            )
            raise NonFiniteStateError(
                f"optimizer {optimizer.name!r} ended with a non-finite {name} at seed "
                f"{int(schedule.seeds[seeds.origin[bad]])}"
            )

    return RunResult(
        pairs_grid=grid,
        theta=theta_out,
        extras=extras_out,
        avg_step_size_last_100=_mean_last_steps(step_norm, schedule.n_jobs, LAST_STEPS),
        total_pairs=schedule.job_pairs.sum(axis=1),
        n_updates=schedule.n_jobs.copy(),
    )


def _mean_last_steps(step_norm: np.ndarray, n_steps: np.ndarray, last: int) -> np.ndarray:
    """Mean of the last ``last`` valid entries of each row (rows have ``n_steps`` valid entries).

    The window is gathered into a fixed ``(seed, last)`` array before summing, so the
    summation order (and so the rounding) never depends on the other seeds' lengths.
    """
    count = np.minimum(n_steps, last)
    offsets = np.arange(last)
    index = np.minimum((n_steps - count)[:, None] + offsets, step_norm.shape[1] - 1)
    window = np.take_along_axis(step_norm, np.maximum(index, 0), axis=1)
    window = np.where(offsets < count[:, None], window, 0.0)
    return window.sum(axis=1) / np.maximum(count, 1)
