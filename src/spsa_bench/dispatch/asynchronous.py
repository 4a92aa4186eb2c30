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
from dataclasses import dataclass, fields

import numpy as np

from spsa_bench.dispatch.schedule import Schedule, arrived_before_dispatch
from spsa_bench.model import streams

BATCH_MODES = ("fixed", "variable", "openbench")

#: OpenBench's ``spsa_distribution_type`` (``OpenBench/workloads/get_workload.py``,
#: ``game_distribution``): one perturbation per workload, or one per runner.
DISTRIBUTIONS = ("single", "multiple")

#: OpenBench's ``spsa_reporting_type``: one report at the end of a workload (BULK), or
#: what has finished every ``REPORT_INTERVAL`` seconds (BATCHED; ``Client/worker.py``,
#: ``ResultsReporter``).
REPORTINGS = ("bulk", "batched")

#: ``Client/worker.py``: ``REPORT_INTERVAL = 30 # Seconds between reports to the Server``.
REPORT_INTERVAL = 30.0

#: 95th percentile of the standard normal (spec: sigma = (ln p95 - ln median) / 1.645).
Z95 = 1.645


def _is_int(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def powers_of_two(low: int, high: int) -> np.ndarray:
    """The powers of two in ``[low, high]``, ascending (the allowed worker concurrencies)."""
    levels = []
    power = 1
    while power <= high:
        if power >= low:
            levels.append(power)
        power *= 2
    return np.array(levels, dtype=np.int64)


#: Where each :class:`AsyncSettings` field sits in a batch mode of the configuration.
CONFIG_KEYS = {
    "num_workers": "workers",
    "batch": "batch",
    "batch_size": "batch_size",
    "concurrency_min": "concurrency.min",
    "concurrency_max": "concurrency.max",
    "speed_min": "speed.min",
    "speed_max": "speed.max",
    "tc_ratio": "tc_ratio",
    "duration_median": "game_duration.median",
    "duration_p95": "game_duration.p95",
    "pairs_per": "pairs_per",
    "distribution": "distribution",
    "reporting": "reporting",
}
_INTEGER_FIELDS = ("num_workers", "batch_size", "concurrency_min", "concurrency_max", "pairs_per")
#: Fields only ``batch: openbench`` reads; their defaults are not filled into other modes.
OPENBENCH_FIELDS = ("pairs_per", "distribution", "reporting")
_POSITIVE_FIELDS = ("speed_min", "speed_max", "tc_ratio", "duration_median", "duration_p95")


def _lookup(mapping: dict, dotted_key: str, default):
    """``mapping["a"]["b"]`` for ``"a.b"``, or ``default`` where a level is missing."""
    node = mapping
    for part in dotted_key.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _range_text(name: dict[str, str], low_field: str, high_field: str, low, high) -> str:
    """Two bounds as written by the user: ``concurrency = {min: 5, max: 7}`` for keys
    sharing a parent, else ``concurrency_min = 5, concurrency_max = 7``."""
    low_parent, _, low_key = name[low_field].rpartition(".")
    high_parent, _, high_key = name[high_field].rpartition(".")
    if low_parent and low_parent == high_parent:
        return f"{low_parent} = {{{low_key}: {low}, {high_key}: {high}}}"
    return f"{name[low_field]} = {low}, {name[high_field]} = {high}"


def check_async_settings(values: dict, name: dict[str, str]) -> None:
    """Raise ``ValueError`` for the first invalid asynchronous setting.

    ``values`` maps every :class:`AsyncSettings` field to its value as given
    (not yet converted, so messages quote the user's numbers); ``name`` maps the
    field to what the message calls it (the field itself, or :data:`CONFIG_KEYS`).
    Every message starts with the offending name, so a caller may prefix a path.
    Checks: integers >= 1, a known batch mode, finite positive reals, then
    ``concurrency_min <= concurrency_max`` with a power of two between them,
    ``speed_min <= speed_max`` and ``duration_p95 > duration_median``.
    """
    for field in _INTEGER_FIELDS:
        if not _is_int(values[field]) or values[field] < 1:
            raise ValueError(f"{name[field]} must be an integer >= 1, got {values[field]!r}")
    if values["batch"] not in BATCH_MODES:
        raise ValueError(f"{name['batch']} must be one of {BATCH_MODES}, got {values['batch']!r}")
    for field in _POSITIVE_FIELDS:
        value = values[field]
        if not _is_real(value) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{name[field]} must be a finite number > 0, got {value!r}")
    for low_field, high_field in (
        ("concurrency_min", "concurrency_max"),
        ("speed_min", "speed_max"),
    ):
        low, high = values[low_field], values[high_field]
        if low > high:
            raise ValueError(f"{name[low_field]} = {low}: larger than {name[high_field]} = {high}")
        if low_field == "concurrency_min" and not powers_of_two(low, high).size:
            raise ValueError(
                f"{_range_text(name, low_field, high_field, low, high)}: no power of two in the "
                "range (worker concurrencies are powers of two)"
            )
    if values["distribution"] not in DISTRIBUTIONS:
        raise ValueError(
            f"{name['distribution']} must be one of {DISTRIBUTIONS}, got {values['distribution']!r}"
        )
    if values["distribution"] == "multiple":
        low, high = values["concurrency_min"], values["concurrency_max"]
        if values["batch"] != "openbench":
            raise ValueError(
                f"{name['distribution']} = 'multiple': only batch: openbench distributes runners"
            )
        if low != high or low < 2:
            raise ValueError(
                f"{_range_text(name, 'concurrency_min', 'concurrency_max', low, high)}: "
                "distribution 'multiple' needs one concurrency >= 2 for every machine (its "
                "runners, concurrency // 2, are the schedule's workers)"
            )
    if values["reporting"] not in REPORTINGS:
        raise ValueError(
            f"{name['reporting']} must be one of {REPORTINGS}, got {values['reporting']!r}"
        )
    if values["reporting"] == "batched" and values["batch"] != "openbench":
        raise ValueError(
            f"{name['reporting']} = 'batched': only batch: openbench reports a workload in pieces"
        )
    median, p95 = values["duration_median"], values["duration_p95"]
    if p95 <= median:
        raise ValueError(
            f"{name['duration_p95']} = {p95}: must be larger than "
            f"{name['duration_median']} = {median}"
        )


@dataclass(frozen=True)
class AsyncSettings:
    """Worker pool, batch mode and game-duration model of an asynchronous run.

    The field defaults are the configuration's defaults too
    (:meth:`config_defaults`), and :func:`check_async_settings` is the one
    validation of both.
    """

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
    pairs_per: int = 8  # batch openbench: pairs per runner and perturbation
    distribution: str = "single"  # batch openbench: "single" or "multiple"
    reporting: str = "bulk"  # batch openbench: "bulk" or "batched"

    def __post_init__(self) -> None:
        values = {field.name: getattr(self, field.name) for field in fields(self)}
        check_async_settings(values, {field: field for field in values})

    @classmethod
    def config_defaults(cls) -> dict:
        """Defaults of the optional batch-mode keys, nested as in the configuration
        (``concurrency``, ``speed``, ``tc_ratio``, ``game_duration``)."""
        out: dict = {}
        for field in fields(cls):
            key = CONFIG_KEYS[field.name]
            if key in ("workers", "batch", "batch_size", *OPENBENCH_FIELDS):  # mode-specific
                continue
            parent, _, child = key.rpartition(".")
            (out.setdefault(parent, {}) if parent else out)[child] = field.default
        return out

    @classmethod
    def from_config(cls, mode: dict) -> AsyncSettings:
        """Settings from a batch mode of the configuration (defaults already filled in).

        Errors name the configuration keys (``concurrency.min = 8: larger than
        concurrency.max = 4``) and quote the values as written.
        """
        values = {
            field.name: _lookup(mode, CONFIG_KEYS[field.name], field.default)
            for field in fields(cls)
        }
        check_async_settings(values, CONFIG_KEYS)
        converted = {field.name: type(field.default)(values[field.name]) for field in fields(cls)}
        return cls(**converted)

    def concurrency_levels(self) -> np.ndarray:
        """The powers of two in ``[concurrency_min, concurrency_max]``, ascending."""
        return powers_of_two(self.concurrency_min, self.concurrency_max)

    @property
    def duration_mu(self) -> float:
        """Location of the log-normal game duration: ``ln(median)``."""
        return math.log(self.duration_median)

    @property
    def duration_sigma(self) -> float:
        """Scale of the log-normal game duration: ``(ln p95 - ln median) / 1.645``."""
        return (math.log(self.duration_p95) - math.log(self.duration_median)) / Z95

    @property
    def runners(self) -> int:
        """Runners per machine: ``concurrency // 2`` in OpenBench's MULTIPLE distribution
        (``game_distribution``: ``spsa_count``, each runner at concurrency 2), else 1."""
        if self.batch == "openbench" and self.distribution == "multiple":
            return self.concurrency_min // 2
        return 1

    def job_pairs(self, concurrency) -> np.ndarray:
        """Uncut job size in pairs for workers of the given concurrency (same shape).

        Fixed batch: ``batch_size``. Variable: ``games = concurrency * 4 *
        round(tc_ratio)`` (Python's round), ``pairs = max(games // 2, 1)``.
        OpenBench (``game_distribution``, ``rounds-per-runner // 2`` pairs per runner):
        SINGLE ``pairs_per * concurrency`` (one runner at the machine's concurrency);
        MULTIPLE ``pairs_per * runners``, the machine's whole workload (split into one
        job per runner by :func:`split_runners`).
        """
        concurrency = np.asarray(concurrency, dtype=np.int64)
        if self.batch == "fixed":
            return np.full(concurrency.shape, self.batch_size, dtype=np.int64)
        if self.batch == "openbench":
            per_machine = self.runners if self.distribution == "multiple" else concurrency
            return np.broadcast_to(self.pairs_per * per_machine, concurrency.shape).astype(np.int64)
        games = concurrency * 4 * int(round(self.tc_ratio))
        return np.maximum(games // 2, 1)


def make_workers(entropy: int, seeds, settings: AsyncSettings) -> tuple[np.ndarray, np.ndarray]:
    """Concurrency ``(seed, worker)`` int64 and speed factor ``(seed, worker)`` float64.

    Drawn from each seed's ``"workers"`` stream (one ``random((W, 2))`` call).
    """
    seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
    n_workers = settings.num_workers
    u = np.empty((seeds.shape[0], n_workers, 2))
    for row, stream in enumerate(streams.generators(entropy, seeds, "workers")):  # one call a seed
        stream.random(out=u[row])
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
    block, sorted_cheaper = _makespan_plan(n_rows, n_games - lanes, lanes)
    if method == "sorted" or (method == "auto" and sorted_cheaper):
        return _makespan_sorted(durations, lanes, block)
    return _makespan_argmin(durations, lanes)


def job_makespan(durations: np.ndarray, lanes: int, runners: int = 1) -> np.ndarray:
    """Makespan of every row of ``durations`` (jobs, games) played by ``runners`` match
    runners side by side, runner ``r`` taking games ``[r G / runners, (r + 1) G / runners)``
    over ``lanes`` lanes of its own (:func:`greedy_makespan`): the largest of the runners'
    makespans, as OpenBench's client ends a workload when its last runner finishes
    (``Client/worker.py``, the runners of ``process_until_finished``). One runner: the
    greedy makespan itself."""
    if runners == 1:
        return greedy_makespan(durations, lanes)
    n_rows, n_games = durations.shape
    per_runner = greedy_makespan(durations.reshape(n_rows * runners, n_games // runners), lanes)
    return per_runner.reshape(n_rows, runners).max(axis=1)


def _makespan_plan(n_rows: int, steps: int, lanes: int) -> tuple[int, bool]:
    """The cheapest block for the sorted method, and whether it beats the argmin.

    From measured costs (ns): per numpy call and element, per re-sort, per argmin step.
    """
    call = 500 + 0.3 * n_rows
    setup = 3 * n_rows * lanes

    def cost_sorted(block: int) -> float:
        resorts = -(-steps // block) - 1 if block < lanes else 0
        return steps * 2 * (block - 1) * call + resorts * 4 * n_rows * lanes + setup

    block = min((b for b in {lanes, 8, 12, 16, 24, 32} if b <= lanes), key=cost_sorted)
    cost_argmin = steps * (2000 + n_rows * (30 + 0.25 * lanes))
    return block, cost_sorted(block) < cost_argmin


def _makespan_sorted(durations: np.ndarray, lanes: int, block: int) -> np.ndarray:
    """Greedy makespan keeping the ``block`` smallest lane loads sorted (see
    :func:`greedy_makespan`); all lanes are re-sorted every ``block`` games."""
    rest = np.ascontiguousarray(durations[:, lanes:].T)  # (games after the first round, rows)
    loads = np.ascontiguousarray(np.sort(durations[:, :lanes], axis=1).T)  # (lanes, rows)
    carry = np.empty(durations.shape[0])
    for first in range(0, rest.shape[0], block):
        if first:
            loads.sort(axis=0)
        for game in rest[first : first + block]:
            np.add(loads[0], game, out=carry)  # the least-loaded lane takes the game
            for lane in range(1, block):  # re-insert it: shift smaller loads down
                np.minimum(loads[lane], carry, out=loads[lane - 1])
                np.maximum(loads[lane], carry, out=carry)
            loads[block - 1] = carry
    return loads.max(axis=0)


def _makespan_argmin(durations: np.ndarray, lanes: int) -> np.ndarray:
    """Greedy makespan with a per-game argmin over the lanes (ties to the lowest lane)."""
    loads = durations[:, :lanes].copy()  # the first `lanes` games fill lanes 0..lanes-1
    flat = loads.reshape(-1)
    base = np.arange(durations.shape[0], dtype=np.intp) * lanes
    for game in np.ascontiguousarray(durations[:, lanes:].T):
        target = loads.argmin(axis=1)
        target += base
        flat[target] += game
    return loads.max(axis=1)


def expected_job_time(games: np.ndarray, lanes: np.ndarray, settings: AsyncSettings) -> np.ndarray:
    """A rough estimate of the mean makespan (seconds, speed 1), used only to size arrays.

    Blends the mean lane load with the expected largest game (Blom's
    approximation); an error here costs time, never correctness.
    """
    from scipy.special import ndtri  # here: scipy is slow to import, sync runs skip it

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
        self.runners = settings.runners  # runners sharing a job's games (OpenBench MULTIPLE)
        if self.runners > 1:  # each runner plays its own games at concurrency 2
            concurrency = np.full_like(concurrency, 2)
        self.lanes = np.minimum(concurrency, self.games // self.runners)
        n_seeds, n_workers = size.shape
        self.generators = [[None] * n_workers for _ in range(n_seeds)]
        self.has_generator = np.zeros((n_seeds, n_workers), dtype=bool)
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

    def _make_generators(self, s_idx: np.ndarray, w_idx: np.ndarray) -> None:
        """The duration streams of the (seed, worker) pairs that have none yet, seeded
        together worker by worker (streams.generators)."""
        missing = ~self.has_generator[s_idx, w_idx]
        s_idx, w_idx = s_idx[missing], w_idx[missing]
        for worker in np.unique(w_idx).tolist():
            rows = s_idx[w_idx == worker]
            made = streams.generators(self.entropy, self.seeds[rows], "durations", worker)
            for s, gen in zip(rows.tolist(), made, strict=True):
                self.generators[s][worker] = gen
        self.has_generator[s_idx, w_idx] = True

    def extend(self, more: np.ndarray) -> None:
        """Generate ``more[s, w]`` further jobs for every (seed, worker)."""
        self._grow(int((self.count + more).max()))
        s_all, w_all = np.nonzero(more > 0)
        self._make_generators(s_all, w_all)
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
                self.generators[s][w].standard_normal(out=block[start : start + count].reshape(-1))
            lognormal_durations_(block, self.settings)
            job_time = job_makespan(block, n_lanes, self.runners)
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


def sort_rows(keys: np.ndarray, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """Argsort of each row of ``keys``; ties between finite keys go to the smaller
    ``tiebreak`` (default: the smaller column). Infinite keys (padding) sort last."""
    order = np.argsort(keys, axis=1)
    ranked = np.take_along_axis(keys, order, axis=1)
    if np.any((ranked[:, 1:] == ranked[:, :-1]) & np.isfinite(ranked[:, 1:])):
        if tiebreak is None:
            order = np.argsort(keys, axis=1, kind="stable")
        else:
            order = np.lexsort((tiebreak, keys), axis=1)
    return order


def _worker_pool(entropy, seeds, settings, workers) -> tuple[np.ndarray, np.ndarray]:
    """Phase 0: the drawn pool, or the given ``(concurrency, speed)``, checked."""
    if workers is None:
        return make_workers(entropy, seeds, settings)
    shape = (seeds.shape[0], settings.num_workers)
    concurrency = np.array(workers[0], dtype=np.int64, copy=True)
    speed = np.array(workers[1], dtype=np.float64, copy=True)
    if concurrency.shape != shape or speed.shape != shape:
        raise ValueError(f"workers must be two arrays shaped {shape}")
    if np.any(concurrency < 1) or np.any(speed <= 0):
        raise ValueError("workers need concurrency >= 1 and speed > 0")
    return concurrency, speed


def _generate_estimate(timelines: _Timelines, size: np.ndarray, num_pairs: int) -> None:
    """Phase 1: generate about as many jobs per worker as the budget needs.

    With mean job times ``D_w`` about ``sum_w N_w (1 + T / D_w)`` pairs are
    dispatched by time ``T``: a first guess from :func:`expected_job_time`,
    then a top-up from the measured mean job times (one more vectorized pass).
    """
    rows = np.arange(size.shape[0])[:, None]
    worker_ids = np.arange(size.shape[1])[None, :]
    remaining = np.maximum(num_pairs - size.sum(axis=1), 0)
    job_time = expected_job_time(timelines.games, timelines.lanes, timelines.settings)
    job_time = job_time / timelines.speed
    horizon = remaining / (size / job_time).sum(axis=1)
    timelines.extend(np.floor(0.8 * (horizon[:, None] / job_time)).astype(np.int64) + 1)
    finish = np.cumsum(timelines.duration, axis=2)
    reach = finish[rows, worker_ids, timelines.count - 1]
    mean_time = reach / timelines.count
    target = 1.02 * remaining / (size / mean_time).sum(axis=1)
    missing = np.maximum(target[:, None] - reach, 0.0) / mean_time
    timelines.extend(np.where(missing > 0, np.ceil(missing).astype(np.int64) + 1, 0))


@dataclass
class _Dispatched:
    """The generated jobs of every seed in dispatch order, the budget cut in that order.

    ``worker``, ``k`` (the job's index on its worker), ``pairs`` (uncut size)
    and ``before`` (pairs dispatched before it) are ``(seed, position)``;
    ``start``/``finish`` are the timelines ``(seed, worker, k)``; job ``n_jobs - 1``
    is the one cut to the budget, ``cut_key`` its sort key.
    """

    worker: np.ndarray
    k: np.ndarray
    pairs: np.ndarray
    before: np.ndarray
    n_jobs: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    cut_key: np.ndarray

    @property
    def last(self) -> np.ndarray:
        return self.n_jobs - 1


def _order_and_cut(timelines: _Timelines, size: np.ndarray, num_pairs: int) -> _Dispatched:
    """Phase 2: sort the generated jobs by (dispatch time, worker), time-0 jobs first
    in worker order (the dispatch that follows an arrival happens at its time), and
    cut the budget in that order."""
    n_seeds, n_workers = size.shape
    rows = np.arange(n_seeds)
    cap = timelines.capacity
    finish = np.cumsum(timelines.duration, axis=2)  # inf beyond the generated jobs
    generated = np.arange(cap)[None, None, :] < timelines.count[:, :, None]
    start = np.empty_like(finish)
    start[:, :, 0] = 0.0
    start[:, :, 1:] = finish[:, :, :-1]
    keys = np.where(generated, start, np.inf)
    keys[:, :, 0] = np.arange(n_workers) - n_workers  # time-0 jobs first, in worker order
    keys = keys.reshape(n_seeds, -1)
    order = sort_rows(keys)
    order_w, order_k = np.divmod(order, cap)
    pairs = size[rows[:, None], order_w]
    before = np.cumsum(pairs, axis=1) - pairs
    n_jobs = (before < num_pairs).sum(axis=1)
    cut_key = keys[rows, order[rows, n_jobs - 1]]
    return _Dispatched(order_w, order_k, pairs, before, n_jobs, start, finish, cut_key)


def _jobs_missing(timelines: _Timelines, dispatched: _Dispatched, size, num_pairs) -> np.ndarray:
    """Phase 3: further jobs to generate per (seed, worker), 0 where none are needed.

    Every worker's first ungenerated job must come after the cut job (ties in
    worker order); a worker short of that gets an estimate of the jobs to the
    cut, and if the generated jobs do not even reach the budget, every worker
    of the seed doubles its jobs.
    """
    rows = np.arange(size.shape[0])
    worker_ids = np.arange(size.shape[1])
    cut_worker = dispatched.worker[rows, dispatched.last]
    reached = (timelines.count * size).sum(axis=1) >= num_pairs
    cut_key = np.where(reached, dispatched.cut_key, np.inf)
    next_time = dispatched.finish[rows[:, None], worker_ids[None, :], timelines.count - 1]
    short = (next_time < cut_key[:, None]) | (
        (next_time == cut_key[:, None]) & (worker_ids[None, :] < cut_worker[:, None])
    )
    if not short.any():
        return np.zeros_like(timelines.count)
    reached = reached[:, None]
    mean_time = next_time / timelines.count
    gap = np.where(reached, cut_key[:, None] - next_time, 0.0)
    missing = np.maximum(gap, 0.0) / mean_time
    more = np.ceil(1.1 * missing + 1.5 * np.sqrt(missing)).astype(np.int64) + 1
    more = np.where(reached, more, timelines.count)
    return np.where(short, more, 0)


def _cut_arrival_times(
    timelines: _Timelines, dispatched: _Dispatched, job_dispatch, job_arrival, cut_pairs, size
) -> None:
    """Phase 4a: the cut job plays only its first ``2 * cut_pairs`` games; recompute its
    arrival time in ``job_arrival`` (in place) from its re-drawn block.

    Zero-length padding games change no lane load, so the makespan equals that of
    the played prefix over ``min(concurrency, 2 * cut)`` lanes.
    """
    rows = np.arange(size.shape[0])
    last = dispatched.last
    cut_worker = dispatched.worker[rows, last]
    shortened = cut_pairs < size[rows, cut_worker]
    if not shortened.any():
        return
    s_cut, w_cut = rows[shortened], cut_worker[shortened]
    k_cut = dispatched.k[rows, last][shortened]
    games, lanes = timelines.games[s_cut, w_cut], timelines.lanes[s_cut, w_cut]
    for g, n_lanes in {(int(a), int(b)) for a, b in zip(games, lanes, strict=True)}:
        pick = (games == g) & (lanes == n_lanes)
        s_i, w_i, k_i = s_cut[pick], w_cut[pick], k_cut[pick]
        block = timelines.game_durations(s_i, w_i, k_i)
        block[np.arange(g)[None, :] >= 2 * cut_pairs[s_i][:, None]] = 0.0
        job_time = job_makespan(block, n_lanes, timelines.runners) / timelines.speed[s_i, w_i]
        job_arrival[s_i, last[s_i]] = job_dispatch[s_i, last[s_i]] + job_time


def async_schedule(
    entropy: int,
    seeds,
    num_pairs: int,
    settings: AsyncSettings,
    *,
    workers: tuple[np.ndarray, np.ndarray] | None = None,
) -> Schedule:
    """The asynchronous schedule of every seed (see the module docstring for the phases).

    ``workers`` optionally replaces the drawn pool by given ``(concurrency,
    speed)`` arrays shaped ``(seed, worker)`` (ablations, tests).
    """
    seeds = np.asarray(seeds, dtype=np.int64).reshape(-1)
    if not _is_int(num_pairs) or num_pairs < 1:
        raise ValueError(f"num_pairs must be an integer >= 1, got {num_pairs!r}")
    num_pairs = int(num_pairs)
    concurrency, speed = _worker_pool(entropy, seeds, settings, workers)
    size = settings.job_pairs(concurrency)  # (seed, worker) uncut job size
    timelines = _Timelines(entropy, seeds, concurrency, speed, size, settings)
    _generate_estimate(timelines, size, num_pairs)
    while True:
        dispatched = _order_and_cut(timelines, size, num_pairs)
        more = _jobs_missing(timelines, dispatched, size, num_pairs)
        if not more.any():
            break
        del dispatched  # the next ordering replaces it: never hold both (peak memory)
        timelines.extend(more)

    rows = np.arange(seeds.shape[0])
    n_jobs, last = dispatched.n_jobs, dispatched.last
    n_max = int(n_jobs.max())
    valid = np.arange(n_max)[None, :] < n_jobs[:, None]
    order_w, order_k = dispatched.worker[:, :n_max], dispatched.k[:, :n_max]
    job_pairs = np.where(valid, dispatched.pairs[:, :n_max], 0)
    job_offset = np.where(valid, dispatched.before[:, :n_max], 0)
    cut_pairs = num_pairs - job_offset[rows, last]
    job_pairs[rows, last] = cut_pairs
    job_dispatch = np.where(valid, dispatched.start[rows[:, None], order_w, order_k], np.nan)
    job_arrival = np.where(valid, dispatched.finish[rows[:, None], order_w, order_k], np.nan)
    _cut_arrival_times(timelines, dispatched, job_dispatch, job_arrival, cut_pairs, size)

    # Phase 4b: the arrival order, (arrival time, worker); padding last, then -1.
    job_worker = np.where(valid, order_w, -1)
    arrival_job = sort_rows(np.where(valid, job_arrival, np.inf), tiebreak=job_worker)
    arrival_job = np.where(valid, arrival_job, -1)
    n_workers = settings.num_workers
    if settings.runners > 1:
        schedule = split_runners(
            seeds, num_pairs, settings, n_jobs, job_pairs, job_offset, job_worker,
            job_dispatch, job_arrival, speed,
        )  # fmt: skip
        return split_reports(schedule) if settings.reporting == "batched" else schedule
    schedule = Schedule(
        seeds=seeds,
        num_workers=n_workers,
        num_pairs=num_pairs,
        n_jobs=n_jobs.astype(np.int64),
        job_pairs=job_pairs.astype(np.int64),
        job_offset=job_offset.astype(np.int64),
        job_arrived_before=arrived_before_dispatch(job_pairs, arrival_job, n_workers, n_jobs),
        job_worker=job_worker.astype(np.int64),
        job_dispatch_time=job_dispatch,
        job_arrival_time=job_arrival,
        arrival_job=arrival_job.astype(np.int64),
        worker_concurrency=concurrency.astype(np.int64),
        worker_speed=speed.astype(np.float64),
    )
    return split_reports(schedule) if settings.reporting == "batched" else schedule


def split_runners(
    seeds, num_pairs, settings, n_jobs, job_pairs, job_offset, job_worker, dispatch, arrival, speed
) -> Schedule:
    """OpenBench's MULTIPLE distribution: every machine workload (a job of the machine
    schedule, ``R * pairs_per`` pairs) becomes ``R`` jobs, one per runner, each with its
    own perturbation (``spsa_workload_assignment_dict``: ``permutations = runner_count``).

    Runner ``r`` of machine ``m`` is the schedule's worker ``m R + r`` (concurrency 2,
    the machine's speed); its job plays pairs ``[r pairs_per, (r + 1) pairs_per)`` of the
    workload (offset ``offset + r pairs_per``), is dispatched when the workload is and
    arrives when the workload does (BULK: one report for the workload, after its last
    runner). The workload cut to the budget gives its runners ``pairs_per`` pairs in
    order until the budget ends; runners left with none get no job. Dispatch order is
    the workload's, runners in order (still sorted by dispatch time then worker), so job
    ``W R + e`` goes to the runner freed by arrival ``e``, as the replay dispatches."""
    runners, per = settings.runners, settings.pairs_per
    n_seeds, width = job_pairs.shape
    r = np.arange(runners)
    pairs = np.clip(job_pairs[:, :, None] - per * r, 0, per).reshape(n_seeds, width * runners)
    valid = pairs > 0  # a prefix of every row: only the last (cut) workload loses runners
    offset = np.where(valid, (job_offset[:, :, None] + per * r).reshape(pairs.shape), 0)
    worker = np.where(valid, (job_worker[:, :, None] * runners + r).reshape(pairs.shape), -1)
    times = [np.where(valid, np.repeat(t, runners, axis=1), np.nan) for t in (dispatch, arrival)]
    counts = valid.sum(axis=1)
    keep = int(counts.max())
    pairs, offset, worker = pairs[:, :keep], offset[:, :keep], worker[:, :keep]
    dispatch, arrival = (t[:, :keep] for t in times)
    valid = valid[:, :keep]
    arrival_job = sort_rows(np.where(valid, arrival, np.inf), tiebreak=worker)
    arrival_job = np.where(valid, arrival_job, -1)
    n_workers = settings.num_workers * runners
    return Schedule(
        seeds=seeds,
        num_workers=n_workers,
        num_pairs=num_pairs,
        n_jobs=counts.astype(np.int64),
        job_pairs=pairs.astype(np.int64),
        job_offset=offset.astype(np.int64),
        job_arrived_before=arrived_before_dispatch(pairs, arrival_job, n_workers, counts),
        job_worker=worker.astype(np.int64),
        job_dispatch_time=dispatch,
        job_arrival_time=arrival,
        arrival_job=arrival_job.astype(np.int64),
        worker_concurrency=np.full((n_seeds, n_workers), 2, dtype=np.int64),
        worker_speed=np.repeat(speed, runners, axis=1).astype(np.float64),
    )


def report_pieces(pairs, dispatch, arrival, interval: float = REPORT_INTERVAL):
    """The pieces in which OpenBench's BATCHED reporting sends a job's pairs, for flat
    arrays of jobs: ``(job, cumulative pairs, time)`` per piece, pieces of a job in time
    order.

    A job of ``N`` pairs dispatched at ``t0`` and finished at ``t1`` (``D = t1 - t0``)
    reports at ``tau_k = t0 + interval * k`` for every ``k >= 1`` with ``tau_k < t1``,
    and at ``t1``; by ``tau_k`` it has finished ``floor(N * (interval * k) / D)`` pairs
    (pairs finish at a constant rate over the job: an assumption, docs/frameworks.md),
    by ``t1`` all ``N``. A report with no new pair is a heartbeat, not a piece."""
    pairs = np.asarray(pairs, dtype=np.int64)
    t0, t1 = np.asarray(dispatch, dtype=np.float64), np.asarray(arrival, dtype=np.float64)
    span = t1 - t0
    reports = np.maximum(np.ceil(span / interval).astype(np.int64) - 1, 0)
    # exact: tau_k = t0 + interval * k is a report while tau_k < t1 (as the reference tests)
    while True:
        over = (reports > 0) & (t0 + interval * reports >= t1)
        under = t0 + interval * (reports + 1) < t1
        if not (over.any() or under.any()):
            break
        reports = reports - over + under
    count = reports + 1
    job = np.repeat(np.arange(pairs.shape[0]), count)
    first = np.cumsum(count) - count
    k = np.arange(job.shape[0]) - first[job] + 1  # 1 .. reports + 1
    last = k == count[job]
    elapsed = interval * k.astype(np.float64)
    done = np.minimum(np.floor(pairs[job] * elapsed / span[job]).astype(np.int64), pairs[job])
    done = np.where(last, pairs[job], done)
    time = np.where(last, t1[job], t0[job] + elapsed)
    before = np.concatenate(([0], done[:-1]))
    before = np.where(k == 1, 0, before)
    keep = done > before
    return job[keep], done[keep], time[keep]


def split_reports(schedule: Schedule, interval: float = REPORT_INTERVAL) -> Schedule:
    """OpenBench's BATCHED reporting: every job of ``schedule`` (a workload, or a runner's
    share of one in MULTIPLE) reported in pieces (:func:`report_pieces`), each applied
    with the job's one perturbation when it arrives.

    The pieces are the jobs of the returned schedule. A worker's pieces form a chain:
    each is "dispatched" when the worker's previous piece arrives, so job ``W + e`` is
    still the one the worker freed by arrival ``e`` takes next; a piece with nothing
    after it on its worker (the budget is spent) leaves a hole (``job_worker`` -1,
    ``job_pairs`` 0) in the job numbering. ``job_lead`` gives each piece the job index of
    its job's first piece, whose hand-out it shares: its perturbation, flip, rounding and
    result model; a later piece has the lead's ``job_arrived_before`` (the iteration and
    staleness of the hand-out). ``n_jobs`` counts the pieces (one arrival, one update
    each). Arrivals in (time, worker) order, as every schedule's."""
    n_seeds, width = schedule.job_pairs.shape
    n_workers = schedule.num_workers
    valid = schedule.job_mask()
    seed_of, job_of = np.nonzero(valid)  # row-major: by seed, then dispatch order
    job, done, time = report_pieces(
        schedule.job_pairs[seed_of, job_of],
        schedule.job_dispatch_time[seed_of, job_of],
        schedule.job_arrival_time[seed_of, job_of],
        interval,
    )
    seed = seed_of[job]
    worker = schedule.job_worker[seed_of, job_of][job]
    pairs = done - np.where(np.r_[True, job[1:] != job[:-1]], 0, np.r_[0, done[:-1]])
    offset = schedule.job_offset[seed_of, job_of][job] + done - pairs
    first = np.r_[True, job[1:] != job[:-1]]  # the job's first piece: its lead
    n_pieces = np.bincount(seed, minlength=n_seeds)
    # arrival order within each seed: (time, worker)
    by_arrival = np.lexsort((worker, time, seed))
    seed_start = np.cumsum(n_pieces) - n_pieces
    event = np.empty_like(by_arrival)
    event[by_arrival] = np.arange(by_arrival.shape[0]) - seed_start[seed[by_arrival]]
    # each worker's chain: (seed, worker, time); the predecessor frees the worker
    chain = np.lexsort((time, worker, seed))
    same = (seed[chain][1:] == seed[chain][:-1]) & (worker[chain][1:] == worker[chain][:-1])
    predecessor = np.full(job.shape[0], -1)
    predecessor[chain[1:][same]] = chain[:-1][same]
    has_pred = predecessor >= 0
    index = np.where(has_pred, n_workers + event[np.maximum(predecessor, 0)], worker)
    n_positions = np.zeros(n_seeds, dtype=np.int64)
    np.maximum.at(n_positions, seed, index + 1)
    positions = int(n_positions.max())
    lead_piece = np.maximum.accumulate(np.where(first, np.arange(job.shape[0]), 0))
    arrived = np.zeros(job.shape[0], dtype=np.int64)  # pairs arrived through each event
    cumulative = np.cumsum(pairs[by_arrival])
    cumulative -= np.repeat(np.r_[0, cumulative][seed_start], n_pieces)
    arrived[by_arrival] = cumulative
    before = np.where(has_pred, arrived[np.maximum(predecessor, 0)], 0)
    before = np.where(first, before, before[lead_piece])  # a later piece: its hand-out's

    def per_job(values, fill, dtype):
        out = np.full((n_seeds, positions), fill, dtype=dtype)
        out[seed, index] = values
        return out

    arrival_job = np.full((n_seeds, int(n_pieces.max())), -1, dtype=np.int64)
    arrival_job[seed, event] = index
    dispatch = np.where(
        has_pred, time[np.maximum(predecessor, 0)], schedule.job_dispatch_time[seed_of, job_of][job]
    )
    return Schedule(
        seeds=schedule.seeds,
        num_workers=n_workers,
        num_pairs=schedule.num_pairs,
        n_jobs=n_pieces.astype(np.int64),
        job_pairs=per_job(pairs, 0, np.int64),
        job_offset=per_job(offset, 0, np.int64),
        job_arrived_before=per_job(before, 0, np.int64),
        job_worker=per_job(worker, -1, np.int64),
        job_dispatch_time=per_job(dispatch, np.nan, np.float64),
        job_arrival_time=per_job(time, np.nan, np.float64),
        arrival_job=arrival_job,
        worker_concurrency=schedule.worker_concurrency,
        worker_speed=schedule.worker_speed,
        job_lead=per_job(index[lead_piece], -1, np.int64),
    )
