"""Replay one optimizer over a schedule, for all seeds at once.

The schedule (jobs, workers, arrival order) is fixed in advance and does not
depend on the optimizer. The replay walks the arrivals in lock-step across
seeds (arrival ``e`` of every seed at the same time; seeds with fewer jobs are
masked), and dispatches job ``W + e`` right after arrival ``e``:

- dispatch of job j: ``theta = export(state)``, ``c = perturbation(iter_local)``,
  probes ``clip(theta -+ c * flip_j)``, the values the worker plays (integer
  parameters rounded, :mod:`spsa_bench.model.rounding`), true Elos, pentanomial
  probabilities, and the job's result from its own match uniforms (common random
  numbers).
  The result depends only on the snapshot, so it is computed at dispatch and
  held until the job arrives.
- arrival of job j: ``state = update(state, report_j)`` on the current state.

A kind whose ``Optimizer.hessian_share`` is positive (``spsa-2``) also plays a
Hessian match in every job (:meth:`_Replay.dispatch_with_hessian`): of the job's ``N``
pairs, ``m = hessian_pairs(N, share)`` play ``theta + c~ D~ + c flip`` against
``theta + c~ D~ - c flip`` (``c~ = hessian_shift * c``, ``D~`` the job's flip of the
seed's ``hessian`` stream; both engines clipped, and rounded as the gradient probes are
but from the ``hessian`` stream's own uniforms) on the job's last ``m`` match draws, the
gradient match its first ``N - m``; its report is a ``SecondOrderReport`` whose
``n_pairs`` are the gradient pairs. The job's size, draws and flip are the schedule's,
so every other arm at the seed is untouched (common random numbers); the equal and
swapped integer shares count the gradient probes only.

A schedule with ``job_lead`` (OpenBench's BATCHED reporting,
:func:`spsa_bench.dispatch.asynchronous.split_reports`) reports a job in pieces that
share one hand-out: a piece whose lead is another job takes, at its dispatch, the
perturbation ``c``, the flip, the realized half-difference and the outcome thresholds
its worker's slot still holds from the previous piece (the probes played from the
lead's snapshot), and plays its own pairs' match draws with them; each piece's arrival
is one update with the lead's ``iter_local``. The equal and swapped integer shares
count hand-outs (leads) only. Without ``job_lead`` nothing here changes.

The optimizer never sees the bowl: the replay evaluates the probes and hands
the optimizer reports only.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from spsa_bench.dispatch.schedule import Schedule
from spsa_bench.engine.stack import tile_bowl, tile_schedule
from spsa_bench.model import pentanomial, streams
from spsa_bench.model.bowl import SeedBowls, TrueBowl
from spsa_bench.model.developer import DeveloperView
from spsa_bench.model.noise import VENDORED, NoiseModel
from spsa_bench.model.rounding import Rounding, probe_outcomes
from spsa_bench.optimizers.base import Optimizer, Report
from spsa_bench.optimizers.second_order import SecondOrderReport, hessian_pairs

SIGNALS = ("raw", "scaled")
LAST_STEPS = 100  # avg_step_size_last_100 averages the last this many updates of a seed
#: Match draws held per seed at a time (streams.MatchWindow; 4 jobs if they are longer):
#: 32 MB for 1000 seeds instead of 4 bytes x pairs (120 MB at 30,000 pairs).
MATCH_WINDOW = 8192
#: The same for a pair-major window (jobs common to every seed), which moves every seed
#: at once: 8 MB for 1000 seeds. Fresh memory is what a short process pays for most
#: (first touch, and stalls while the kernel gathers huge pages): a 1000-seed
#: synchronous run takes a median 0.469 s whole with this window, 0.504 s with 8192.
PAIR_MAJOR_WINDOW = 2048


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
    outcome_counts: np.ndarray  # (seed, 5): LL, DL, DD, WD, WW of every pair played
    # over jobs x integer parameters: the engines played equal integers / the opposite
    # order to the flip (NaN when nothing is rounded)
    probe_equal_fraction: np.ndarray | None = None  # (seed,)
    probe_swapped_fraction: np.ndarray | None = None  # (seed,)
    # scalars the arm derived from the developer view (Optimizer.info), set by the caller
    arm_info: dict[str, float] = dataclasses.field(default_factory=dict)


def _segment_counts(
    uniforms: np.ndarray, thresholds: np.ndarray, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~spsa_bench.model.pentanomial.counts_and_net_wins_from_segments` of the
    concatenated segments ``uniforms`` (row ``r`` the next ``sizes[r]`` draws): when every
    row has the same ``m > 0`` draws (the fixed batch modes' jobs) they are one ``(row,
    m)`` block, counted by :func:`~spsa_bench.model.pentanomial.counts_and_net_wins`
    without the per-pair gathers of the ragged form (the same integers, about twice as
    fast at a few hundred rows)."""
    m = int(sizes[0]) if sizes.shape[0] else 0
    if m > 0 and bool(np.all(sizes == m)):
        return pentanomial.counts_and_net_wins(uniforms.reshape(sizes.shape[0], m), thresholds)
    return pentanomial.counts_and_net_wins_from_segments(uniforms, thresholds, sizes)


def pairs_grid(num_pairs: int, points: int) -> np.ndarray:
    """``points`` checkpoints from 0 to ``num_pairs`` inclusive (integers)."""
    return np.unique(np.round(np.linspace(0, num_pairs, points)).astype(np.int64))


def _checkpoint_events(schedule: Schedule, grid: np.ndarray) -> np.ndarray:
    """For every (seed, grid point) the last arrival index ending at or before it (-1: none)."""
    rows = np.arange(schedule.num_seeds)[:, None]
    cumulative = np.cumsum(schedule.arrival_pairs(), axis=1)  # pairs arrived through event e
    cumulative = np.where(
        schedule.arrival_mask(), cumulative, schedule.num_pairs + 1
    )  # padding last
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


class _Seeds:
    """Every per-seed array the event loop reads, for the seeds still running.

    Seeds are compacted away once they have no events left (the lock-step over
    arrivals otherwise keeps computing finished seeds when job counts differ, as
    in the variable batch mode). ``origin`` maps rows back to the caller's seeds.
    Column flags say where every remaining seed does the same thing, so the
    loop can take plain slices instead of gathers.

    A worker holds one job at a time: the job's perturbation, flip and result
    (computed at dispatch from the snapshot) wait in the worker's slot
    (``slot_*``) until the job arrives. Slot ``W`` absorbs the writes of seeds
    without the job.
    """

    PER_SEED = (
        "origin", "iter_local", "job_pairs", "job_offset", "job_worker",
        "job_slot", "job_exists", "arrival_active", "arrival_worker", "arrival_pairs",
        "arrival_iter", "arrival_staleness", "arrival_in_flight", "n_jobs", "slot_c",
        "slot_flip", "slot_result", "slot_realized", "slot_hessian_result",
        "slot_hessian_pairs", "slot_hessian_flip", "job_continues", "slot_thresholds",
    )  # fmt: skip
    #: The per-seed arrays whose columns go into each report as they are.
    REPORTED = ("arrival_pairs", "arrival_iter", "arrival_staleness", "arrival_in_flight")

    def __init__(
        self,
        flips_by_job: np.ndarray,
        draws: streams.MatchWindow | _TiledDraws,
        hessian_flips_by_job: np.ndarray | None = None,
        **arrays,
    ):
        self.flips_by_job = flips_by_job
        self.hessian_flips_by_job = hessian_flips_by_job  # (job, seed, param), or None
        self.draws = draws
        for name in self.PER_SEED:
            setattr(self, name, arrays[name])
        self.n_caller_seeds = self.origin.shape[0]  # rows of the caller's per-seed arrays
        self._derive()

    @classmethod
    def from_schedule(
        cls,
        schedule: Schedule,
        entropy: int,
        iteration_counter: str,
        n_params: int,
        realized: bool = False,
        identical: bool = False,
        hessian: bool = False,
        copies: int = 1,
    ) -> _Seeds:
        """The random streams, the schedule's per-job arrays and their arrival-order
        views, and empty worker slots, for every seed of ``schedule`` (slots for the
        realized half-differences only when ``realized``; the Hessian match's flips and
        slots only when ``hessian``). ``identical``: every seed has the same schedule
        (:meth:`Schedule.identical_seeds`). ``copies``: the rows are that many blocks of
        ``schedule``'s seeds (a stacked replay, :mod:`spsa_bench.engine.stack`); the
        streams and views are built once per seed and repeated, the match draws read
        once per seed (:class:`_TiledDraws`)."""
        n_seeds, n_workers = schedule.num_seeds, schedule.num_workers
        flips, hessian_flips = _flip_streams(schedule, entropy, n_params, hessian)
        longest_job = int(schedule.job_pairs.max(initial=0))
        # jobs common to every seed: a job's draws are one (pair, seed) block
        pieces = schedule.job_lead is not None  # BATCHED: jobs in pieces (may have holes)
        pair_major = (identical or n_seeds == 1) and not pieces
        draws = streams.MatchWindow(
            entropy,
            schedule.seeds,
            schedule.num_pairs,
            width=max(PAIR_MAJOR_WINDOW if pair_major else MATCH_WINDOW, 4 * longest_job),
            longest_job=longest_job,
            pair_major=pair_major,
        )
        per_seed = {
            "job_pairs": schedule.job_pairs,
            "job_offset": schedule.job_offset,
            "job_worker": schedule.job_worker,
            "n_jobs": schedule.n_jobs,
            **_schedule_views(schedule, iteration_counter, identical, pieces),
        }
        if copies > 1:
            draws = _TiledDraws(draws, copies)
            flips = np.tile(flips, (1, copies, 1))  # (job, seed, param): seeds on axis 1
            if hessian_flips is not None:
                hessian_flips = np.tile(hessian_flips, (1, copies, 1))
            per_seed = {name: _repeat_rows(values, copies) for name, values in per_seed.items()}
        return cls(
            origin=np.arange(n_seeds * copies),
            flips_by_job=flips,  # job-major: each dispatch reads one contiguous block
            draws=draws,
            hessian_flips_by_job=hessian_flips,
            **per_seed,
            **_empty_slots(n_seeds * copies, n_workers, n_params, realized, hessian, pieces),
        )

    def _derive(self) -> None:
        """Row indices, where they go in the caller's arrays, and the per-column
        uniformity flags."""

        def same(array: np.ndarray) -> np.ndarray:
            if array.strides[0] == 0:  # one row broadcast to every seed
                return np.ones(array.shape[1:], dtype=bool)
            return np.all(array == array[:1], axis=0)

        self.rows = np.arange(self.origin.shape[0])
        for name in self.REPORTED:  # handed to the optimizer as views: never written
            getattr(self, name).setflags(write=False)
        # where the rows go in the caller's per-seed arrays: a slice (a view, written in
        # place) while every seed still runs, else the gather of the remaining ones
        # (origin is an increasing subset of the caller's rows: all of them iff as many)
        every_seed = self.origin.shape[0] == self.n_caller_seeds
        self.to_origin = slice(None) if every_seed else self.origin
        self.job_uniform = same(self.job_pairs) & same(self.job_offset) & same(self.job_worker)
        self.job_uniform &= np.all(self.job_exists, axis=0)
        self.iter_uniform = same(self.iter_local)
        self.event_all_active = np.all(self.arrival_active, axis=0)
        self.event_uniform = self.event_all_active & same(self.arrival_worker)

    def keep(self, rows: np.ndarray) -> None:
        """Keep only ``rows`` (indices into the running seeds)."""
        for name in self.PER_SEED:
            setattr(self, name, getattr(self, name)[rows])
        self.flips_by_job = self.flips_by_job[:, rows]  # (job, seed, param): seeds on axis 1
        if self.hessian_flips_by_job is not None:
            self.hessian_flips_by_job = self.hessian_flips_by_job[:, rows]
        self.draws.keep(rows)
        self._derive()


def _repeat_rows(values: np.ndarray, copies: int) -> np.ndarray:
    """``values``' rows repeated ``copies`` times, block after block; rows broadcast
    from one (stride 0) stay broadcast, read-only."""
    if values.ndim and values.strides[0] == 0 and values.shape[0] > 1:
        return np.broadcast_to(values[:1], (values.shape[0] * copies,) + values.shape[1:])
    return np.tile(values, (copies,) + (1,) * (values.ndim - 1))


class _TiledDraws:
    """The match draws of a stacked replay's rows (``copies`` blocks of the same seeds,
    :mod:`spsa_bench.engine.stack`): every block's row ``i`` reads seed ``i``'s draws at
    the same offsets, so they are read once, from a window over one block's seeds, and
    repeated. Compaction keeps the same seeds in every block, so the first block's
    kept rows are the window's."""

    def __init__(self, window: streams.MatchWindow, copies: int):
        self.window, self.copies = window, copies
        self.pair_major = window.pair_major

    def block(self, offset: int, size: int) -> np.ndarray:
        draws = self.window.block(offset, size)
        return np.tile(draws, (1, self.copies) if self.pair_major else (self.copies, 1))

    def segments(self, offsets: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        rows = offsets.shape[0] // self.copies
        return np.tile(self.window.segments(offsets[:rows], sizes[:rows]), self.copies)

    def keep(self, rows: np.ndarray) -> None:
        self.window.keep(rows[: rows.shape[0] // self.copies])


def _take_rows(slots: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """``slots[r, s]`` ``(row, slot, param)`` at the flat indices ``r * slots + s``."""
    return slots.reshape(-1, slots.shape[2]).take(flat, axis=0)


def _flip_streams(schedule: Schedule, entropy: int, n_params: int, hessian: bool) -> tuple:
    """Every seed's job-major flips ``(job, seed, param)`` and, when ``hessian``, the
    Hessian match's flips from the seed's own ``"hessian"`` stream (the flips are
    untouched by it); else None."""
    flips = streams.flips(entropy, schedule.seeds, schedule.max_jobs, n_params, job_major=True)
    if not hessian:
        return flips, None
    hessian_flips = streams.flips(
        entropy, schedule.seeds, schedule.max_jobs, n_params, job_major=True, purpose="hessian"
    )
    return flips, hessian_flips


def _schedule_views(
    schedule: Schedule, iteration_counter: str, identical: bool, pieces: bool
) -> dict[str, np.ndarray]:
    """The per-seed arrays of :class:`_Seeds` read from the schedule alone: the local
    iteration per job, the slot and existence of each job, the arrival-order views and,
    for a schedule of pieces, which jobs continue another's hand-out. Computed once and
    broadcast (read-only, no memory per seed) where every seed has the same schedule
    (``identical``: the synchronous mode)."""
    n_seeds, n_workers = schedule.num_seeds, schedule.num_workers
    source = schedule.first_seed() if identical else schedule

    def per_seed(values: np.ndarray) -> np.ndarray:
        return np.broadcast_to(values, (n_seeds,) + values.shape[1:]) if identical else values

    iter_local = source.iter_local(iteration_counter)
    job_exists = source.job_mask()
    continues = np.zeros((n_seeds, 0), dtype=bool)
    if pieces:  # a piece whose hand-out is another job's
        continues = job_exists & (schedule.job_lead != np.arange(schedule.max_jobs))
    return {
        "iter_local": per_seed(iter_local),
        "job_slot": per_seed(np.where(job_exists, source.job_worker, n_workers)),
        "job_exists": per_seed(job_exists),
        "arrival_active": per_seed(source.arrival_mask()),
        "arrival_worker": per_seed(source.by_arrival(source.job_worker)),
        "arrival_pairs": per_seed(source.by_arrival(source.job_pairs).astype(np.float64)),
        "arrival_iter": per_seed(source.by_arrival(iter_local)),
        "arrival_staleness": per_seed(
            source.by_arrival(source.staleness_pairs()).astype(np.float64)
        ),
        "arrival_in_flight": per_seed(
            source.by_arrival(source.job_offset - source.job_arrived_before).astype(np.float64)
        ),
        "job_continues": continues,
    }


def _empty_slots(
    n_seeds: int, n_workers: int, n_params: int, realized: bool, hessian: bool, pieces: bool
) -> dict[str, np.ndarray]:
    """The worker slots of :class:`_Seeds`, zero: one per worker and a spare, with room
    for the realized half-differences only when ``realized``, for the Hessian match only
    when ``hessian`` and for held thresholds only for a schedule of ``pieces``."""
    slots = n_workers + 1
    hessian_slots = slots if hessian else 0
    return {
        "slot_c": np.zeros((n_seeds, slots, n_params)),
        "slot_flip": np.zeros((n_seeds, slots, n_params)),
        "slot_result": np.zeros((n_seeds, slots)),
        "slot_realized": np.zeros((n_seeds, slots, n_params if realized else 0)),
        "slot_hessian_result": np.zeros((n_seeds, hessian_slots)),
        "slot_hessian_pairs": np.zeros((n_seeds, hessian_slots), dtype=np.int64),
        "slot_hessian_flip": np.zeros((n_seeds, hessian_slots, n_params)),
        "slot_thresholds": np.zeros((n_seeds, slots if pieces else 0, 4), np.uint32),
    }


class _Replay:
    """The event loop of one replay, as named phases over shared loop state.

    After the initial record and the dispatch of jobs ``0 .. W-1``, every
    arrival ``e`` runs: :meth:`compact` (drop finished seeds), :meth:`arrive`
    (update on the arriving report), :meth:`record` (checkpoints ending here),
    :meth:`dispatch` (job ``W + e``); :meth:`check_finite` runs at the end.
    ``state`` and ``theta = export(state)`` cover the running seeds only;
    ``position`` maps each original seed to its row among them.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        schedule: Schedule,
        bowl: TrueBowl | SeedBowls,
        view: DeveloperView,
        *,
        entropy: int,
        signal: str,
        iteration_counter: str,
        checkpoints: int,
        noise: NoiseModel,
        rounding: str,
        copies: int = 1,
    ):
        if isinstance(bowl, SeedBowls) and bowl.num_seeds != schedule.num_seeds:
            raise ValueError(
                f"{bowl.num_seeds} per-seed bowls for a schedule of {schedule.num_seeds} seeds"
            )
        base = schedule  # one block of rows (``copies`` of them: engine.stack)
        if copies > 1:
            schedule = tile_schedule(base, copies)
            bowl = tile_bowl(bowl, base.num_seeds, copies)
        self.optimizer, self.schedule, self.bowl, self.view = optimizer, schedule, bowl, view
        self.noise = noise
        self.rounding = Rounding(rounding, view.integer, entropy, schedule.seeds)
        self.probe_equal = np.zeros(schedule.num_seeds, dtype=np.int64)
        self.probe_swapped = np.zeros(schedule.num_seeds, dtype=np.int64)
        n_params = view.num_params
        self.n_events = schedule.arrival_job.shape[1]
        self.signal_scale = 1.0 if signal == "raw" else 1.0 / (2.0 * np.sqrt(n_params))
        identical = base.num_seeds > 1 and base.identical_seeds()
        self._init_hessian(entropy, rounding)
        self.pieces = schedule.job_lead is not None
        if self.pieces and self.hessian:
            raise ValueError(
                f"optimizer {optimizer.name!r}: a Hessian match with BATCHED reporting (jobs "
                "in pieces) is not modelled"
            )
        self.seeds = _Seeds.from_schedule(
            base,
            entropy,
            iteration_counter,
            n_params,
            realized=self.rounding.active,
            identical=identical,
            hessian=self.hessian,
            copies=copies,
        )
        self._init_dispatch()
        self._init_outputs(checkpoints, identical, base, copies)

    def _init_hessian(self, entropy: int, rounding: str) -> None:
        """spsa-2's Hessian match (module docstring): its share of each job, c~ / c, and
        the rounding of its engines from the seed's hessian stream (sub-key 1)."""
        optimizer, schedule = self.optimizer, self.schedule
        self.hessian_share = float(optimizer.hessian_share)
        self.hessian = self.hessian_share > 0.0
        self.hessian_shift = float(optimizer.hessian_shift)
        self.hessian_rounding = None
        if self.hessian:
            keys = None
            if self.rounding.keys is not None:  # stochastic or coupled rounding
                keys = hessian_rounding_keys(entropy, schedule.seeds)
            self.hessian_rounding = Rounding(
                rounding, self.view.integer, entropy, schedule.seeds, keys=keys
            )
            self.hessian_in_flight: dict[int, tuple] = {}

    def _init_dispatch(self) -> None:
        """How jobs are held in flight, the hand-outs per seed and, when every seed is at
        the same iteration in every job, all the perturbations at once."""
        schedule, seeds = self.schedule, self.seeds
        # Every seed doing the same thing at every step (the synchronous mode): jobs in
        # flight are kept as whole arrays per worker instead of in the slot arrays.
        self.lockstep = bool(seeds.job_uniform.all() and seeds.event_uniform.all())
        self.lockstep &= not self.pieces  # pieces read their lead's slot
        # hand-outs per seed (the denominators of the equal and swapped shares)
        self.handouts = schedule.n_jobs
        if self.pieces:
            self.handouts = (schedule.job_mask() & ~seeds.job_continues).sum(axis=1)
        self.in_flight: dict[int, tuple] = {}
        # every seed at the same iteration in every job: one row a job broadcast to every
        # seed (read-only)
        self.c_by_job = None
        if seeds.iter_uniform.all():
            rows = self.optimizer.perturbation(seeds.iter_local[0])
            shape = (rows.shape[0], schedule.num_seeds, self.view.num_params)
            self.c_by_job = np.broadcast_to(rows[:, None, :], shape)

    def _init_outputs(self, checkpoints: int, identical: bool, base: Schedule, copies: int) -> None:
        """The checkpoint grid and the events that record it, the optimizer's state, and
        the empty outputs: checkpoints, outcome counts and the step norms the last-100
        mean reads."""
        optimizer, schedule = self.optimizer, self.schedule
        n_seeds, n_params = schedule.num_seeds, self.view.num_params
        self.grid = pairs_grid(schedule.num_pairs, checkpoints)
        if identical:  # every seed records at the same events: find them once
            event_of = _checkpoint_events(base.first_seed(), self.grid)
            event_of = np.broadcast_to(event_of, (n_seeds, self.grid.shape[0]))
        else:  # once per seed of one block of rows
            event_of = _repeat_rows(_checkpoint_events(base, self.grid), copies)
        self.recorder = _Recorder(event_of, self.n_events)
        self.position = np.arange(n_seeds)
        self.state = optimizer.init(n_seeds)
        self.theta = optimizer.export(self.state)
        # the first floating-point error (overflow, invalid, divide) of an update, or None
        self.update_error: str | None = None
        self.theta_out = np.full((n_seeds, self.grid.shape[0], n_params), np.nan)
        self.extras_out = {
            name: np.full_like(self.theta_out, np.nan) for name in optimizer.extras(self.state)
        }
        # outcome counts: directly, or through a pair-major window (every job common to
        # every seed, so every pair of the run) as the pairs reaching each threshold
        # (pentanomial.at_least_and_net_wins), turned into counts at the end
        self.outcome_counts = np.zeros((n_seeds, 5), dtype=np.int64)
        self.at_least = np.zeros((4, n_seeds), dtype=np.int64)
        self.last_steps_from = int(schedule.n_jobs.min()) - LAST_STEPS
        # step norms are kept from the first arrival a seed's last-100 mean can read on
        self.steps_from = max(self.last_steps_from, 0)
        self.step_norm = np.zeros((n_seeds, self.n_events - self.steps_from))
        self.next_compaction_check = int(schedule.n_jobs.min())

    def run(self, compact: bool, progress: Callable[[int, int], None] | None) -> RunResult:
        """The whole loop; returns the checkpoints and the per-seed KPIs."""
        n_workers, n_jobs = self.schedule.num_workers, self.schedule.max_jobs
        self.record(-1)
        for job in range(min(n_workers, n_jobs)):
            self.dispatch(job)
        next_progress = time.monotonic() + 1.0
        for event in range(self.n_events):
            if compact and event >= self.next_compaction_check:
                self.compact(event)
            self.arrive(event)
            self.record(event)
            if n_workers + event < n_jobs:
                self.dispatch(n_workers + event)
            if progress is not None and (event & 63) == 0 and time.monotonic() > next_progress:
                progress(event, self.n_events)
                next_progress = time.monotonic() + 0.5
        if progress is not None:
            progress(self.n_events, self.n_events)
        self.check_finite()
        total_pairs = self.schedule.job_pairs.sum(axis=1)
        return RunResult(
            pairs_grid=self.grid,
            theta=self.theta_out,
            extras=self.extras_out,
            avg_step_size_last_100=_mean_last_steps(
                self.step_norm, self.schedule.n_jobs - self.steps_from, LAST_STEPS
            ),
            total_pairs=total_pairs,
            n_updates=self.schedule.n_jobs.copy(),
            outcome_counts=self.outcome_counts
            + pentanomial.counts_from_at_least(
                self.at_least, total_pairs if self.seeds.draws.pair_major else 0
            ),
            **self._probe_fractions(),
        )

    def _probe_fractions(self) -> dict[str, np.ndarray]:
        """Equal and swapped integers per job and integer parameter (NaN: nothing rounded)."""
        probes = self.handouts * self.rounding.count
        if not self.rounding.active:
            probes = np.zeros_like(probes)
        with np.errstate(invalid="ignore", divide="ignore"):
            return {
                "probe_equal_fraction": np.where(probes > 0, self.probe_equal / probes, np.nan),
                "probe_swapped_fraction": np.where(probes > 0, self.probe_swapped / probes, np.nan),
            }

    def dispatch(self, job: int) -> None:
        """Dispatch job ``job`` of every running seed: ``c = perturbation(iter_local)``,
        probes ``clip(theta -+ c * flip)``, their opponent Elo, and the job's net wins
        from its own match uniforms; all held in flight until the job arrives."""
        if self.hessian:
            self.dispatch_with_hessian(job)
            return
        if self.pieces:
            self.dispatch_piece(job)
            return
        seeds = self.seeds
        if self.c_by_job is not None:
            c = self.c_by_job[job]
        elif seeds.iter_uniform[job]:  # one row, repeated for every seed
            row = self.optimizer.perturbation(seeds.iter_local[:1, job])
            c = np.broadcast_to(row, (seeds.rows.shape[0], row.shape[1]))  # read-only
        else:
            c = self.optimizer.perturbation(seeds.iter_local[:, job])
        flip = seeds.flips_by_job[job].astype(np.float64)
        step = c * flip
        opponent, realized = self._opponent_elo(job, step, flip)
        thresholds = self.noise.fast_draw_thresholds(opponent)
        if seeds.job_uniform[job]:
            size = int(seeds.job_pairs[0, job])
            u = seeds.draws.block(int(seeds.job_offset[0, job]), size)
            if seeds.draws.pair_major:  # (pair, seed): counted at the end
                at_least, net = pentanomial.at_least_and_net_wins(u, thresholds)
                self.at_least[:, seeds.to_origin] += at_least
            else:
                counts, net = pentanomial.counts_and_net_wins(u, thresholds)
                self.outcome_counts[seeds.to_origin] += counts
            slot = seeds.job_worker[0, job]
            if self.lockstep:  # fresh arrays, handed over whole: nothing to copy
                self.in_flight[slot] = (c, flip, net, realized)
            else:
                seeds.slot_c[:, slot], seeds.slot_flip[:, slot] = c, flip
                seeds.slot_result[:, slot] = net
                if realized is not None:
                    seeds.slot_realized[:, slot] = realized
        else:
            sizes = seeds.job_pairs[:, job]
            u = seeds.draws.segments(seeds.job_offset[:, job], sizes)
            counts, net = _segment_counts(u, thresholds, sizes)
            self.outcome_counts[seeds.to_origin] += counts
            slot, rows = seeds.job_slot[:, job], seeds.rows
            seeds.slot_c[rows, slot], seeds.slot_flip[rows, slot] = c, flip
            seeds.slot_result[rows, slot] = net
            if realized is not None:
                seeds.slot_realized[rows, slot] = realized

    def dispatch_piece(self, job: int) -> None:
        """:meth:`dispatch` of a schedule of pieces (module docstring): a seed whose job
        ``job`` is its lead's continuation keeps the slot's ``c``, flip, realized
        half-difference and thresholds (the lead's probes); every other seed probes from
        its current snapshot. Then each seed's pairs are played and held in the slot."""
        seeds = self.seeds
        rows, slot = seeds.rows, seeds.job_slot[:, job]
        continues = seeds.job_continues[:, job]
        handout = seeds.job_exists[:, job] & ~continues
        c = self._job_perturbation(job)
        flip = seeds.flips_by_job[job].astype(np.float64)
        if continues.any():
            held = continues[:, None]
            c = np.where(held, seeds.slot_c[rows, slot], c)
            flip = np.where(held, seeds.slot_flip[rows, slot], flip)
        opponent, realized = self._opponent_elo(job, c * flip, flip, counted=handout)
        thresholds = self.noise.fast_draw_thresholds(opponent)
        if continues.any():
            thresholds = np.where(continues[:, None], seeds.slot_thresholds[rows, slot], thresholds)
            if realized is not None:
                realized = np.where(continues[:, None], seeds.slot_realized[rows, slot], realized)
        sizes = seeds.job_pairs[:, job]
        u = seeds.draws.segments(seeds.job_offset[:, job], sizes)
        counts, net = _segment_counts(u, thresholds, sizes)
        self.outcome_counts[seeds.to_origin] += counts
        seeds.slot_c[rows, slot], seeds.slot_flip[rows, slot] = c, flip
        seeds.slot_result[rows, slot] = net
        seeds.slot_thresholds[rows, slot] = thresholds
        if realized is not None:
            seeds.slot_realized[rows, slot] = realized

    def _job_perturbation(self, job: int) -> np.ndarray:
        """``c = perturbation(iter_local)`` of job ``job``, ``(seed, param)``."""
        seeds = self.seeds
        if self.c_by_job is not None:
            return self.c_by_job[job]
        if seeds.iter_uniform[job]:  # one row, repeated for every seed
            row = self.optimizer.perturbation(seeds.iter_local[:1, job])
            return np.broadcast_to(row, (seeds.rows.shape[0], row.shape[1]))  # read-only
        return self.optimizer.perturbation(seeds.iter_local[:, job])

    def dispatch_with_hessian(self, job: int) -> None:
        """:meth:`dispatch` of a kind that plays a Hessian match (module docstring): of
        the job's ``N`` pairs (per seed), the first ``N - m`` match draws play the
        gradient match ``clip(theta +- c flip)`` and the last ``m = hessian_pairs(N,
        share)`` the Hessian match ``clip(theta + c~ D~ +- c flip)``, ``c~ = shift * c``;
        both results, ``m`` and ``D~`` are held in flight until the job arrives."""
        seeds = self.seeds
        c = self._job_perturbation(job)
        flip = seeds.flips_by_job[job].astype(np.float64)
        step = c * flip
        opponent, realized = self._opponent_elo(job, step, flip)
        thresholds = self.noise.fast_draw_thresholds(opponent)
        hessian_flip = seeds.hessian_flips_by_job[job].astype(np.float64)
        shift = self.hessian_shift * c * hessian_flip
        hessian_thresholds = self.noise.fast_draw_thresholds(
            self._hessian_opponent_elo(job, shift, step)
        )
        sizes = seeds.job_pairs[:, job]
        extra = hessian_pairs(sizes, self.hessian_share)  # (seed,)
        if seeds.job_uniform[job]:
            size, m = int(sizes[0]), int(extra[0])
            u = seeds.draws.block(int(seeds.job_offset[0, job]), size)
            pair_major = seeds.draws.pair_major
            parts = (
                (u[: size - m], u[size - m :])
                if pair_major
                else (u[:, : size - m], u[:, size - m :])
            )
            nets = []
            for part, limits in zip(parts, (thresholds, hessian_thresholds), strict=True):
                if pair_major:  # (pair, seed): counted at the end
                    at_least, net = pentanomial.at_least_and_net_wins(part, limits)
                    self.at_least[:, seeds.to_origin] += at_least
                else:
                    counts, net = pentanomial.counts_and_net_wins(part, limits)
                    self.outcome_counts[seeds.to_origin] += counts
                nets.append(net)
            net, hessian_net = nets
            slot = seeds.job_worker[0, job]
            if self.lockstep:
                self.in_flight[slot] = (c, flip, net, realized)
                self.hessian_in_flight[slot] = (hessian_net, extra, hessian_flip)
                return
            slot = np.full(seeds.rows.shape[0], slot)
        else:
            gradient = sizes - extra
            offsets = seeds.job_offset[:, job]
            u = seeds.draws.segments(offsets, gradient)
            counts, net = _segment_counts(u, thresholds, gradient)
            self.outcome_counts[seeds.to_origin] += counts
            u = seeds.draws.segments(offsets + gradient, extra)
            counts, hessian_net = _segment_counts(u, hessian_thresholds, extra)
            self.outcome_counts[seeds.to_origin] += counts
            slot = seeds.job_slot[:, job]
        rows = seeds.rows
        seeds.slot_c[rows, slot], seeds.slot_flip[rows, slot] = c, flip
        seeds.slot_result[rows, slot] = net
        if realized is not None:
            seeds.slot_realized[rows, slot] = realized
        seeds.slot_hessian_result[rows, slot] = hessian_net
        seeds.slot_hessian_pairs[rows, slot] = extra
        seeds.slot_hessian_flip[rows, slot] = hessian_flip

    def _hessian_opponent_elo(self, job: int, shift: np.ndarray, step: np.ndarray) -> np.ndarray:
        """``-(Elo(plus) - Elo(minus))`` per seed of the Hessian match, ``plus``/``minus``
        = ``clip((theta + shift) +- step)`` with the integer parameters rounded by the
        worker's rule from the Hessian stream's uniforms (:attr:`hessian_rounding`)."""
        center = self.theta + shift
        probes = np.empty((2,) + step.shape)
        np.add(center, step, out=probes[0])
        np.subtract(center, step, out=probes[1])
        plus, minus = self.view.clip(probes, out=probes)
        if self.hessian_rounding.active:
            plus, minus = self.hessian_rounding.play(job, plus, minus, in_place=True)
        return self.bowl.opponent_elo(plus, minus)

    def _take_hessian(self, event: int) -> tuple:
        """``(net wins, pairs, D~)`` of the Hessian match of the job arriving at ``event``."""
        seeds = self.seeds
        if self.lockstep:
            return self.hessian_in_flight.pop(seeds.arrival_worker[0, event])
        slot, rows = seeds.arrival_worker[:, event], seeds.rows
        return (
            seeds.slot_hessian_result[rows, slot],
            seeds.slot_hessian_pairs[rows, slot],
            seeds.slot_hessian_flip[rows, slot],
        )

    def _opponent_elo(
        self, job: int, step: np.ndarray, flip: np.ndarray, counted: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``-(Elo(plus) - Elo(minus))`` per seed for the values the engines play,
        ``plus``/``minus`` = ``clip(theta +- step)`` with the integer parameters rounded
        by the worker; and the realized half-difference (``None`` when nothing is
        rounded). A NaN (from a NaN in theta, which reaches every probe) stops the run
        here, loudly. ``counted``: the seeds whose equal and swapped integers count
        (default: those that have the job)."""
        view, rounding = self.view, self.rounding
        probes = np.empty((2,) + step.shape)  # plus and minus, clipped in one pass
        np.add(self.theta, step, out=probes[0])
        np.subtract(self.theta, step, out=probes[1])
        plus, minus = view.clip(probes, out=probes)
        realized = None
        if rounding.active:
            plus, minus = rounding.play(job, plus, minus, in_place=True)  # fresh from clip
            columns = rounding.columns
            difference = plus[:, columns] - minus[:, columns]
            realized = step.copy()
            realized[:, columns] = difference * 0.5
            equal, swapped = probe_outcomes(difference, flip[:, columns])
            exists = self.seeds.job_exists[:, job] if counted is None else counted
            self.probe_equal[self.seeds.to_origin] += np.where(exists, equal, 0)
            self.probe_swapped[self.seeds.to_origin] += np.where(exists, swapped, 0)
        opponent = self.bowl.opponent_elo(plus, minus)
        if np.isnan(opponent).any():
            bad = int(np.flatnonzero(np.isnan(opponent))[0])
            raise NonFiniteStateError(
                f"optimizer {self.optimizer.name!r} produced a non-finite state at seed "
                f"{int(self.schedule.seeds[self.seeds.origin[bad]])}, arrival "
                f"{job - self.schedule.num_workers} (found probing job {job})"
            )
        return opponent, realized

    def _take(self, event: int) -> tuple:
        """``(c, flip, net wins, realized)`` of the job arriving at ``event``, out of its
        worker's slot (``realized`` is ``None`` when nothing is rounded)."""
        seeds = self.seeds
        if self.lockstep:
            return self.in_flight.pop(seeds.arrival_worker[0, event])
        active = self.rounding.active
        if seeds.event_uniform[event]:
            slot = seeds.arrival_worker[0, event]
            c, flip = seeds.slot_c[:, slot].copy(), seeds.slot_flip[:, slot].copy()
            realized = seeds.slot_realized[:, slot].copy() if active else None
            return c, flip, seeds.slot_result[:, slot], realized
        # each row's slot as one index into the (row x slot) axis: a take of whole rows,
        # cheaper than the (row, slot) fancy index at a few hundred rows
        flat = seeds.rows * seeds.slot_c.shape[1] + seeds.arrival_worker[:, event]
        realized = _take_rows(seeds.slot_realized, flat) if active else None
        return (
            _take_rows(seeds.slot_c, flat),
            _take_rows(seeds.slot_flip, flat),
            seeds.slot_result.reshape(-1).take(flat),
            realized,
        )

    def arrive(self, event: int) -> None:
        """Arrival ``event``: ``state = update(state, report)`` on the current state
        (seeds without this event keep theirs), ``theta = export(state)``, and the
        step norm ``|theta_new - theta_old|`` within each seed's last 100 updates."""
        seeds = self.seeds
        c, flip, result, realized = self._take(event)
        report = Report(  # the schedule's columns as read-only views (_Seeds._derive)
            n_pairs=seeds.arrival_pairs[:, event],
            signal=result * self.signal_scale,
            flip=flip,
            c=c,
            iter_local=seeds.arrival_iter[:, event],
            realized=realized,
            staleness=seeds.arrival_staleness[:, event],
            in_flight=seeds.arrival_in_flight[:, event],
        )
        if self.hessian:  # the gradient match's pairs, and the Hessian match
            hessian_net, extra, hessian_flip = self._take_hessian(event)
            report = SecondOrderReport(
                *report._replace(n_pairs=report.n_pairs - extra),
                hessian_signal=hessian_net * self.signal_scale,
                hessian_pairs=extra,
                hessian_flip=hessian_flip,
            )
        # a floating-point error inside the optimizer is recorded, not raised (nor
        # warned), so that the check below can name the optimizer, the seed and the arrival
        with np.errstate(over="call", invalid="call", divide="call", call=self._update_error):
            state = self.optimizer.update(self.state, report)
            if not seeds.event_all_active[event]:
                active = seeds.arrival_active[:, event]
                state = type(state)(
                    *(
                        np.where(active.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)
                        for new, old in zip(state, self.state, strict=True)
                    )
                )
            theta = self.optimizer.export(state)
        if self.update_error is not None:
            self._check_update(event, state, theta)
        self.state = state
        if event >= self.last_steps_from:  # only the last 100 steps of a seed are summarised
            moved = theta - self.theta
            norm = np.sqrt(np.einsum("sp,sp->s", moved, moved))
            self.step_norm[seeds.to_origin, event - self.steps_from] = norm
        self.theta = theta

    def _update_error(self, kind: str, _flag: int) -> None:
        """``np.errstate``'s callback during an update: remember the first error."""
        if self.update_error is None:
            self.update_error = kind

    def _check_update(self, event: int, state, theta: np.ndarray) -> None:
        """After an update that raised a floating-point error: refuse a state or theta
        with NaN or infinity, naming the optimizer, the first such seed and the arrival;
        a state that stayed finite (e.g. an overflow that ends as a zero) goes on."""
        kind, self.update_error = self.update_error, None
        fields = [theta, *state]
        finite = np.ones(theta.shape[0], dtype=bool)
        for field in fields:
            finite &= np.all(np.isfinite(field.reshape(field.shape[0], -1)), axis=1)
        if not finite.all():
            bad = int(np.flatnonzero(~finite)[0])
            raise NonFiniteStateError(
                f"optimizer {self.optimizer.name!r} produced a non-finite state at seed "
                f"{int(self.schedule.seeds[self.seeds.origin[bad]])}, arrival {event} "
                f"({kind} in its update)"
            )

    def record(self, event: int) -> None:
        """Write ``theta`` and the extras into the checkpoints that end at ``event``."""
        seed_index, grid_index = self.recorder.at(event)
        if seed_index.size:
            rows = self.position[seed_index]
            self.theta_out[seed_index, grid_index] = self.theta[rows]
            for name, value in self.optimizer.extras(self.state).items():
                self.extras_out[name][seed_index, grid_index] = value[rows]

    def compact(self, event: int) -> None:
        """Once at least half the running seeds have no events left from ``event`` on,
        drop them from every array (bit-identical: seeds never interact)."""
        seeds = self.seeds
        running = seeds.n_jobs > event
        if 2 * int(running.sum()) <= running.shape[0]:
            kept = np.flatnonzero(running)
            seeds.keep(kept)
            self.bowl = self.bowl.rows(kept)
            self.rounding = self.rounding.rows(kept)
            if self.hessian_rounding is not None:
                self.hessian_rounding = self.hessian_rounding.rows(kept)
            self.state = type(self.state)(*(field[kept] for field in self.state))
            self.theta = self.theta[kept]
            if self.c_by_job is not None:
                self.c_by_job = self.c_by_job[:, kept]
            self.position[seeds.origin] = np.arange(seeds.origin.shape[0])
        self.next_compaction_check = event + 1

    def check_finite(self) -> None:
        """Refuse a final state with NaN or infinity, naming the field and the seed."""
        state = self.state
        for name, field in zip(type(state)._fields, state, strict=True):
            finite = np.all(np.isfinite(field.reshape(field.shape[0], -1)), axis=1)
            if not finite.all():
                bad = int(np.flatnonzero(~finite)[0])
                raise NonFiniteStateError(
                    f"optimizer {self.optimizer.name!r} ended with a non-finite {name} at seed "
                    f"{int(self.schedule.seeds[self.seeds.origin[bad]])}"
                )


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
    noise: NoiseModel = VENDORED,
    rounding: str = "none",
    copies: int = 1,
) -> RunResult:
    """Run ``optimizer`` over ``schedule`` for all its seeds at once (see the module docstring).

    ``compact`` drops seeds from the arrays once they have no events left (the
    results are bit-identical either way; ``False`` keeps every row, for tests
    that spy on the reports). ``progress(event, n_events)`` is called now and then.
    ``noise`` turns each job's opponent Elo into outcome thresholds (default: the
    vendored spec model); the run also counts the pentanomial outcomes it played.
    ``rounding`` is how the worker rounds the view's integer parameters
    (:data:`spsa_bench.model.rounding.ROUNDING_MODES`; default ``"none"``).
    ``bowl`` may be one bowl for every seed or a :class:`SeedBowls` with one row per
    seed of ``schedule``. ``copies``: the replay's rows are that many blocks of
    ``schedule``'s seeds, block after block (the stacked arms of
    :mod:`spsa_bench.engine.stack`, whose ``optimizer`` updates each block with its
    arm); each row is its seed's replay, the seeds' streams, schedule views and match
    draws built once and repeated; the result has ``copies x seeds`` rows.
    """
    if signal not in SIGNALS:
        raise ValueError(f"signal must be one of {SIGNALS}, got {signal!r}")
    loop = _Replay(
        optimizer,
        schedule,
        bowl,
        view,
        entropy=entropy,
        signal=signal,
        iteration_counter=iteration_counter,
        checkpoints=checkpoints,
        noise=noise,
        rounding=rounding,
        copies=copies,
    )
    return loop.run(compact, progress)


def hessian_rounding_keys(entropy: int, seeds) -> np.ndarray:
    """One 64-bit SplitMix64 key per seed for the rounding of the Hessian match's engines,
    from the seed's ``hessian`` stream (sub-key 1), ``(seed,)``: the gradient probes'
    uniforms (the ``rounding`` stream) are untouched."""
    return np.array(
        [
            streams.seed_sequence(entropy, int(seed), "hessian", 1).generate_state(1, np.uint64)[0]
            for seed in seeds  # stream setup only: one key per seed
        ],
        dtype=np.uint64,
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
