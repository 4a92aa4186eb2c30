"""Asynchronous (Fishtest-like) job schedules, vectorized over seeds.

Semantics (spec 000 §3.2). ``W`` workers each hold one job in flight. At time 0
jobs ``0 .. W-1`` go to workers ``0 .. W-1``; from then on the job with the
earliest finish time arrives next, and the worker it frees is immediately given
job ``W + e`` (``e`` = arrival index) while budget remains. Every job is cut to
the budget not yet dispatched, so exactly ``num_pairs`` pairs are dispatched and
all of them arrive. A job of ``N`` pairs plays ``2N`` games with i.i.d.
log-normal durations; its wall time is the greedy list-scheduling makespan of
those games, in order, over ``min(concurrency, 2N)`` lanes (each game to the
least-loaded lane, ties to the lowest lane), divided by the worker's speed.
Simultaneous arrivals (probability zero with continuous durations) are taken in
worker order.

Randomness
----------
- The worker pool comes from the seed's ``"workers"`` stream: one
  ``random((W, 2))`` call; worker ``w`` uses draws ``(w, 0)`` for its
  concurrency (uniform over the allowed powers of two) and ``(w, 1)`` for its
  speed factor, so adding workers never changes the existing ones.
- Game durations come from one stream per (seed, worker):
  ``streams.generator(entropy, seed, "durations", worker)``. The worker's jobs
  consume it job after job, each job a block of ``2N`` standard normals
  (``N`` = the worker's *uncut* job size), mapped to durations as
  ``exp(mu + sigma * z)``; the cut last job of a seed uses the first
  ``2 * N_cut`` draws of its block.

Why this vectorizes
-------------------
With durations keyed by worker, the k-th job of worker ``w`` has a duration that
depends on nothing but ``(seed, w, k)``: a worker's job size is fixed (fixed
batch, or the variable size set by its concurrency), and a freed worker is
re-dispatched at once, so its job ``k`` is dispatched at the sum of its first
``k`` durations whatever the other workers do. Every worker's timeline is
therefore computed on its own, in bulk, as arrays ``(seed, worker, k)``:

1. generate an estimated number of jobs per worker (a first guess from a rough
   mean job time, then a top-up from the measured ones); grouped by game count
   and lane count, the greedy makespan is a loop over the game index only,
   vectorized over all jobs of all seeds;
2. sort each seed's jobs by (dispatch time, worker), with the time-0 jobs first
   in worker order: this is the dispatch order, since the dispatch that follows
   an arrival happens at the arrival's time;
3. cut the budget in that order; if some worker's first *ungenerated* job would
   come before the cut, generate more jobs for it (drawing further blocks from
   the same stream, so the result never depends on the estimate) and repeat;
4. recompute the makespan of the cut job over its shorter prefix of games (its
   block is re-drawn from a fresh generator of its worker's stream; the cut job
   is the last one dispatched, so nothing else changes) and sort the dispatched
   jobs by (arrival time, worker) for the arrival order.

Padding (jobs beyond a seed's ``n_jobs``): ``job_pairs``, ``job_offset`` and
``job_arrived_before`` are 0, ``job_worker`` and ``arrival_job`` are -1, times
are NaN.

The floating-point operations (``exp(mu + sigma * z)``, one addition per game
to the smallest lane load, ``makespan / speed``, and finish = dispatch +
duration accumulated in job order) are the same as in :mod:`spsa_bench.reference.async_runner`, so the two
agree bit for bit, event by event.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from spsa_bench.dispatch.schedule import Schedule
from spsa_bench.model import streams

BATCH_MODES = ("fixed", "variable")

#: 95th percentile of the standard normal (spec: sigma = (ln p95 - ln median) / 1.645).
Z95 = 1.645


def _is_int(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


@dataclass(frozen=True)
class AsyncSettings:
    """Worker pool, batch mode and game-duration model of an asynchronous run."""

    num_workers: int = 20
    batch: str = "fixed"  # "fixed" or "variable"
    batch_size: int = 36  # pairs per job (fixed batch)
    concurrency_min: int = 1
    concurrency_max: int = 64
    speed_min: float = 0.5
    speed_max: float = 2.0
    tc_ratio: float = 1.0
    duration_median: float = 180.0  # seconds
    duration_p95: float = 540.0  # seconds

    def __post_init__(self) -> None:
        for name in ("num_workers", "batch_size", "concurrency_min", "concurrency_max"):
            value = getattr(self, name)
            if not _is_int(value) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.batch not in BATCH_MODES:
            raise ValueError(f"batch must be one of {BATCH_MODES}, got {self.batch!r}")
        for name in ("speed_min", "speed_max", "tc_ratio", "duration_median", "duration_p95"):
            value = getattr(self, name)
            if not _is_real(value) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        if self.concurrency_min > self.concurrency_max:
            raise ValueError(
                f"concurrency_min = {self.concurrency_min} is larger than "
                f"concurrency_max = {self.concurrency_max}"
            )
        if not self.concurrency_levels().size:
            raise ValueError(
                f"no power of two in the concurrency range [concurrency_min = "
                f"{self.concurrency_min}, concurrency_max = {self.concurrency_max}]"
            )
        if self.speed_min > self.speed_max:
            raise ValueError(
                f"speed_min = {self.speed_min} is larger than speed_max = {self.speed_max}"
            )
        if self.duration_p95 <= self.duration_median:
            raise ValueError(
                f"duration_p95 = {self.duration_p95} must be larger than "
                f"duration_median = {self.duration_median}"
            )

    def concurrency_levels(self) -> np.ndarray:
        """The powers of two in ``[concurrency_min, concurrency_max]``, ascending."""
        levels = []
        power = 1
        while power <= self.concurrency_max:
            if power >= self.concurrency_min:
                levels.append(power)
            power *= 2
        return np.array(levels, dtype=np.int64)

    @property
    def duration_mu(self) -> float:
        """Location of the log-normal game duration: ``ln(median)``."""
        return math.log(self.duration_median)

    @property
    def duration_sigma(self) -> float:
        """Scale of the log-normal game duration: ``(ln p95 - ln median) / 1.645``."""
        return (math.log(self.duration_p95) - math.log(self.duration_median)) / Z95

    def job_pairs(self, concurrency) -> np.ndarray:
        """Uncut job size in pairs for workers of the given concurrency (same shape).

        Fixed batch: ``batch_size``. Variable: ``games = concurrency * 4 *
        round(tc_ratio)`` (Python's round), ``pairs = max(games // 2, 1)``.
        """
        concurrency = np.asarray(concurrency, dtype=np.int64)
        if self.batch == "fixed":
            return np.full(concurrency.shape, self.batch_size, dtype=np.int64)
        games = concurrency * 4 * int(round(self.tc_ratio))
        return np.maximum(games // 2, 1)


def make_workers(entropy: int, seeds, settings: AsyncSettings) -> tuple[np.ndarray, np.ndarray]:
    """Concurrency ``(seed, worker)`` int64 and speed factor ``(seed, worker)`` float64.

    Drawn from each seed's ``"workers"`` stream (one ``random((W, 2))`` call).
    """
    seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
    n_workers = settings.num_workers
    u = np.empty((seeds.shape[0], n_workers, 2))
    for row, seed in enumerate(seeds):  # stream setup only: one draw call per seed
        streams.generator(entropy, seed, "workers").random(out=u[row])
    levels = settings.concurrency_levels()
    index = np.minimum((u[..., 0] * levels.shape[0]).astype(np.int64), levels.shape[0] - 1)
    concurrency = levels[index]
    speed = settings.speed_min + (settings.speed_max - settings.speed_min) * u[..., 1]
    return concurrency, speed


def lognormal_durations_(z: np.ndarray, settings: AsyncSettings) -> np.ndarray:
    """Map standard normals to game durations in place: ``exp(mu + sigma * z)``."""
    z *= settings.duration_sigma
    z += settings.duration_mu
    return np.exp(z, out=z)


def game_durations(
    entropy: int, seed: int, worker: int, num_games: int, settings: AsyncSettings
) -> np.ndarray:
    """The first ``num_games`` game durations (seconds) of a worker's stream."""
    z = streams.generator(entropy, seed, "durations", worker).standard_normal(num_games)
    return lognormal_durations_(z, settings)


def greedy_makespan(durations: np.ndarray, lanes: int, method: str = "auto") -> np.ndarray:
    """Greedy list-scheduling makespan of every row of ``durations`` (jobs, games).

    Games are placed in column order, each on the currently least-loaded of
    ``lanes`` lanes (ties to the lowest lane); the makespan is the largest lane
    load. Only the game index is looped over; all rows are processed at once.
    Returns ``(jobs,)``.

    The makespan depends only on the multiset of lane loads, never on which
    lane holds which load, so the loads may be kept in any order. For many rows
    they are kept sorted along the lane axis: the first lane is the least
    loaded, takes the game, and its new load is inserted back with a min/max
    pass, which is exactly the arithmetic of a heap or an argmin (one addition
    per game, to the smallest load). With many lanes only the ``b`` smallest
    loads are kept sorted for ``b`` games in a row (they must hold the minimum
    that long: at least one of them is still untouched), then all lanes are
    re-sorted. ``method`` forces ``"sorted"`` or ``"argmin"`` (a per-game
    argmin over the lanes); ``"auto"`` picks the cheaper one for the shape.
    """
    durations = np.asarray(durations, dtype=np.float64)
    n_rows, n_games = durations.shape
    if lanes < 1:
        raise ValueError(f"lanes must be >= 1, got {lanes}")
    if method not in ("auto", "sorted", "argmin"):
        raise ValueError(f"method must be 'auto', 'sorted' or 'argmin', got {method!r}")
    if n_games == 0:
        return np.zeros(n_rows)
    if lanes >= n_games:  # one game per lane
        return durations.max(axis=1)
    if lanes == 1:  # one lane: the sum in game order (accumulate is sequential)
        return np.add.accumulate(durations, axis=1)[:, -1].copy()
    rest = np.ascontiguousarray(durations[:, lanes:].T)  # (games after the first round, rows)
    steps = rest.shape[0]
    # measured costs (ns): per numpy call and element, per re-sort, per argmin step
    call = 500 + 0.3 * n_rows
    setup = 3 * n_rows * lanes

    def cost_sorted(block: int) -> float:
        resorts = -(-steps // block) - 1 if block < lanes else 0
        return steps * 2 * (block - 1) * call + resorts * 4 * n_rows * lanes + setup

    block = min((b for b in {lanes, 8, 12, 16, 24, 32} if b <= lanes), key=cost_sorted)
    cost_argmin = steps * (2000 + n_rows * (30 + 0.25 * lanes))
    if method == "sorted" or (method == "auto" and cost_sorted(block) < cost_argmin):
        loads = np.ascontiguousarray(np.sort(durations[:, :lanes], axis=1).T)  # (lanes, rows)
        carry = np.empty(n_rows)
        for first in range(0, steps, block):
            if first:
                loads.sort(axis=0)
            for game in rest[first : first + block]:
                np.add(loads[0], game, out=carry)  # the least-loaded lane takes the game
                for lane in range(1, block):  # re-insert it: shift smaller loads down
                    np.minimum(loads[lane], carry, out=loads[lane - 1])
                    np.maximum(loads[lane], carry, out=carry)
                loads[block - 1] = carry
        return loads.max(axis=0)
    loads = durations[:, :lanes].copy()  # the first `lanes` games fill lanes 0..lanes-1
    flat = loads.reshape(-1)
    base = np.arange(n_rows, dtype=np.intp) * lanes
    for game in rest:
        target = loads.argmin(axis=1)
        target += base
        flat[target] += game
    return loads.max(axis=1)


def _expected_job_time(games: np.ndarray, lanes: np.ndarray, settings: AsyncSettings) -> np.ndarray:
    """A rough estimate of the mean makespan (seconds, speed 1), used only to size arrays.

    Blends the mean lane load with the expected largest game (Blom's
    approximation); an error here costs time, never correctness.
    """
    mu, sigma = settings.duration_mu, settings.duration_sigma
    mean = math.exp(mu + 0.5 * sigma * sigma)
    games = games.astype(np.float64)
    largest = np.exp(mu + sigma * ndtri((games - 0.375) / (games + 0.25)))
    balanced = mean * games / lanes + 0.5 * (largest - mean) * (1.0 - 1.0 / lanes)
    return np.maximum(balanced, largest)


class _Timelines:
    """Per-(seed, worker) job timelines, generated lazily from the duration streams."""

    def __init__(self, entropy, seeds, concurrency, speed, size, settings):
        self.entropy = entropy
        self.seeds = seeds
        self.settings = settings
        self.speed = speed
        self.games = 2 * size  # (seed, worker) games of an uncut job
        self.lanes = np.minimum(concurrency, self.games)
        n_seeds, n_workers = size.shape
        self.generators = [[None] * n_workers for _ in range(n_seeds)]
        self.count = np.zeros((n_seeds, n_workers), dtype=np.int64)  # jobs generated
        self.capacity = 0
        self.duration = np.empty((n_seeds, n_workers, 0))  # job wall times, inf beyond `count`

    def _grow(self, capacity: int) -> None:
        if capacity <= self.capacity:
            return
        capacity = max(capacity, int(self.capacity * 1.25))
        extra = capacity - self.capacity
        shape = self.count.shape + (extra,)
        self.duration = np.concatenate([self.duration, np.full(shape, np.inf)], axis=2)
        self.capacity = capacity

    def _generator(self, s: int, w: int) -> np.random.Generator:
        gen = self.generators[s][w]
        if gen is None:
            gen = streams.generator(self.entropy, self.seeds[s], "durations", w)
            self.generators[s][w] = gen
        return gen

    def extend(self, more: np.ndarray) -> None:
        """Generate ``more[s, w]`` further jobs for every (seed, worker)."""
        self._grow(int((self.count + more).max()))
        s_all, w_all = np.nonzero(more > 0)
        keys = self.games[s_all, w_all] * (self.lanes.max() + 1) + self.lanes[s_all, w_all]
        for key in np.unique(keys):
            pick = keys == key
            s_idx, w_idx = s_all[pick], w_all[pick]
            n_games = int(self.games[s_idx[0], w_idx[0]])
            n_lanes = int(self.lanes[s_idx[0], w_idx[0]])
            counts = more[s_idx, w_idx]
            starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
            block = np.empty((int(counts.sum()), n_games))
            for s, w, start, count in zip(s_idx, w_idx, starts, counts, strict=True):
                # stream draws only: the next `count` job blocks of this worker
                self._generator(s, w).standard_normal(out=block[start : start + count].reshape(-1))
            lognormal_durations_(block, self.settings)
            job_time = greedy_makespan(block, n_lanes)
            owner = np.repeat(np.arange(s_idx.shape[0]), counts)
            rows_s, rows_w = s_idx[owner], w_idx[owner]
            rows_k = self.count[rows_s, rows_w] + np.arange(owner.shape[0]) - starts[owner]
            self.duration[rows_s, rows_w, rows_k] = job_time / self.speed[rows_s, rows_w]
        self.count += more

    def game_durations(self, s, w, k) -> np.ndarray:
        """Game durations of jobs ``(s, w, k)`` (all of the same game count), re-drawn.

        Blocks are not kept (memory); a fresh generator skips the worker's first
        ``k`` blocks. One seed's cut job at most, so this is cheap.
        """
        n_games = int(self.games[s[0], w[0]])
        out = np.empty((s.shape[0], n_games))
        for i, (seed_row, worker, job) in enumerate(zip(s, w, k, strict=True)):
            # stream draws only
            gen = streams.generator(self.entropy, self.seeds[seed_row], "durations", worker)
            gen.standard_normal(int(job) * n_games)  # the worker's earlier jobs
            gen.standard_normal(out=out[i])
        return lognormal_durations_(out, self.settings)


def _dispatch_order(keys: np.ndarray) -> np.ndarray:
    """Argsort of each row of ``keys``, ties broken by column (worker-major layout)."""
    order = np.argsort(keys, axis=1)
    ranked = np.take_along_axis(keys, order, axis=1)
    finite = np.isfinite(ranked[:, 1:])
    if np.any((ranked[:, 1:] == ranked[:, :-1]) & finite):
        order = np.argsort(keys, axis=1, kind="stable")
    return order


def async_schedule(
    entropy: int,
    seeds,
    num_pairs: int,
    settings: AsyncSettings,
    *,
    workers: tuple[np.ndarray, np.ndarray] | None = None,
) -> Schedule:
    """The asynchronous schedule of every seed (see the module docstring).

    ``workers`` optionally replaces the drawn pool by given ``(concurrency,
    speed)`` arrays shaped ``(seed, worker)`` (ablations, tests).
    """
    seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
    if not _is_int(num_pairs) or num_pairs < 1:
        raise ValueError(f"num_pairs must be an integer >= 1, got {num_pairs!r}")
    num_pairs = int(num_pairs)
    n_seeds, n_workers = seeds.shape[0], settings.num_workers
    if workers is None:
        concurrency, speed = make_workers(entropy, seeds, settings)
    else:
        concurrency = np.array(workers[0], dtype=np.int64, copy=True)
        speed = np.array(workers[1], dtype=np.float64, copy=True)
        if concurrency.shape != (n_seeds, n_workers) or speed.shape != (n_seeds, n_workers):
            raise ValueError(f"workers must be two arrays shaped {(n_seeds, n_workers)}")
        if np.any(concurrency < 1) or np.any(speed <= 0):
            raise ValueError("workers need concurrency >= 1 and speed > 0")
    size = settings.job_pairs(concurrency)  # (seed, worker) uncut job size
    rows = np.arange(n_seeds)
    worker_ids = np.arange(n_workers)

    timelines = _Timelines(entropy, seeds, concurrency, speed, size, settings)

    # First guess of the jobs each worker needs: with mean job times D_w, about
    # sum_w N_w (1 + T / D_w) pairs are dispatched by time T.
    job_time = _expected_job_time(timelines.games, timelines.lanes, settings) / speed
    rate = (size / job_time).sum(axis=1)
    horizon = np.maximum(num_pairs - size.sum(axis=1), 0) / rate
    expected = horizon[:, None] / job_time
    timelines.extend(np.floor(0.8 * expected).astype(np.int64) + 1)
    # Then top up from the measured mean job times (one more vectorized pass).
    finish = np.cumsum(timelines.duration, axis=2)
    reach = finish[rows[:, None], worker_ids[None, :], timelines.count - 1]
    mean_time = reach / timelines.count
    rate = (size / mean_time).sum(axis=1)
    target = 1.02 * np.maximum(num_pairs - size.sum(axis=1), 0) / rate
    missing = np.maximum(target[:, None] - reach, 0.0) / mean_time
    timelines.extend(np.where(missing > 0, np.ceil(missing).astype(np.int64) + 1, 0))

    while True:
        cap = timelines.capacity
        finish = np.cumsum(timelines.duration, axis=2)  # inf beyond the generated jobs
        generated = np.arange(cap)[None, None, :] < timelines.count[:, :, None]
        start = np.empty_like(finish)
        start[:, :, 0] = 0.0
        start[:, :, 1:] = finish[:, :, :-1]
        keys = np.where(generated, start, np.inf)
        keys[:, :, 0] = worker_ids - n_workers  # time-0 jobs first, in worker order
        order = _dispatch_order(keys.reshape(n_seeds, -1))
        order_w, order_k = np.divmod(order, cap)
        pairs = size[rows[:, None], order_w]
        before = np.cumsum(pairs, axis=1) - pairs
        n_jobs = (before < num_pairs).sum(axis=1)
        last = n_jobs - 1
        cut_key = keys.reshape(n_seeds, -1)[rows, order[rows, last]]
        cut_worker = order_w[rows, last]
        # the generated jobs may not even reach the budget: then double them all
        reached = (timelines.count * size).sum(axis=1) >= num_pairs
        cut_key = np.where(reached, cut_key, np.inf)
        # every worker's first job not generated must come after the cut
        next_time = finish[rows[:, None], worker_ids[None, :], timelines.count - 1]
        short = (next_time < cut_key[:, None]) | (
            (next_time == cut_key[:, None]) & (worker_ids[None, :] < cut_worker[:, None])
        )
        if not short.any():
            break
        reached = reached[:, None]
        mean_time = next_time / timelines.count
        gap = np.where(reached, cut_key[:, None] - next_time, 0.0)
        missing = np.maximum(gap, 0.0) / mean_time
        more = np.ceil(1.1 * missing + 1.5 * np.sqrt(missing)).astype(np.int64) + 1
        more = np.where(reached, more, timelines.count)
        timelines.extend(np.where(short, more, 0))

    n_max = int(n_jobs.max())
    valid = np.arange(n_max)[None, :] < n_jobs[:, None]
    order_w, order_k = order_w[:, :n_max], order_k[:, :n_max]
    job_pairs = np.where(valid, pairs[:, :n_max], 0)
    job_offset = np.where(valid, before[:, :n_max], 0)
    cut_pairs = num_pairs - job_offset[rows, last]
    job_pairs[rows, last] = cut_pairs
    job_dispatch = np.where(valid, start[rows[:, None], order_w, order_k], np.nan)
    job_arrival = np.where(valid, finish[rows[:, None], order_w, order_k], np.nan)

    # The cut job plays only its first 2 * cut_pairs games.
    cut_k = order_k[rows, last]
    shortened = cut_pairs < size[rows, cut_worker]
    if shortened.any():
        s_cut, w_cut, k_cut = rows[shortened], cut_worker[shortened], cut_k[shortened]
        games, lanes = timelines.games[s_cut, w_cut], timelines.lanes[s_cut, w_cut]
        for g, n_lanes in {(int(a), int(b)) for a, b in zip(games, lanes, strict=True)}:
            pick = (games == g) & (lanes == n_lanes)
            s_i, w_i, k_i = s_cut[pick], w_cut[pick], k_cut[pick]
            block = timelines.game_durations(s_i, w_i, k_i)
            played = 2 * cut_pairs[s_i][:, None]
            # zero-length padding games change no lane load: the makespan equals
            # that of the played prefix over min(concurrency, 2 * cut) lanes
            block[np.arange(g)[None, :] >= played] = 0.0
            job_time = greedy_makespan(block, n_lanes) / speed[s_i, w_i]
            job_arrival[s_i, last[s_i]] = job_dispatch[s_i, last[s_i]] + job_time

    job_worker = np.where(valid, order_w, -1)
    arrival_keys = np.where(valid, job_arrival, np.inf)
    arrival_job = np.argsort(arrival_keys, axis=1)
    ranked = np.take_along_axis(arrival_keys, arrival_job, axis=1)
    if np.any((ranked[:, 1:] == ranked[:, :-1]) & np.isfinite(ranked[:, 1:])):
        arrival_job = np.lexsort((job_worker, arrival_keys), axis=1)
    arrival_job = np.where(valid, arrival_job, -1)

    arrived = np.where(valid, job_pairs[rows[:, None], np.maximum(arrival_job, 0)], 0)
    arrived_total = np.cumsum(arrived, axis=1)  # through arrival e inclusive
    job_arrived_before = np.zeros_like(job_pairs)
    if n_max > n_workers:
        job_arrived_before[:, n_workers:] = arrived_total[:, : n_max - n_workers]
    job_arrived_before = np.where(valid, job_arrived_before, 0)

    return Schedule(
        seeds=seeds,
        num_workers=n_workers,
        num_pairs=num_pairs,
        n_jobs=n_jobs.astype(np.int64),
        job_pairs=job_pairs.astype(np.int64),
        job_offset=job_offset.astype(np.int64),
        job_arrived_before=job_arrived_before.astype(np.int64),
        job_worker=job_worker.astype(np.int64),
        job_dispatch_time=job_dispatch,
        job_arrival_time=job_arrival,
        arrival_job=arrival_job.astype(np.int64),
        worker_concurrency=concurrency.astype(np.int64),
        worker_speed=speed.astype(np.float64),
    )
