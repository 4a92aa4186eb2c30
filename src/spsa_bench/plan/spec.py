"""What the planner is asked and how it decides: :class:`PlanSpec`, the search's
settings, the plan's constants and :func:`recommend`.

The bottom of :mod:`spsa_bench.plan`: :mod:`spsa_bench.plan.run`,
:mod:`spsa_bench.plan.summary` and :mod:`spsa_bench.plan.figure` import from here, and
this module imports none of them, so the package has no import circle.

- :class:`PlanSpec`: the framework (Fishtest or OpenBench), the parameter block in
  that framework's format, the games budget, the time control, the dispatch (a batch
  mode of the packaged default configuration for Fishtest; OpenBench's workloads of
  ``pairs_per`` pairs, SINGLE or MULTIPLE, on a pool of machines), the number of
  instances (seeds), the prior over the unknown truth, the tune's SPSA gain schedule
  (``A`` as a share of the iterations, alpha, gamma) and the search (multipliers on
  c_end, r_end and games);
- :class:`Setting`: one run of the plan (an arm, its multipliers, its budget and its
  instances); :func:`search_settings` is every ``c_scale x r_scale x games`` of the
  search, :func:`given_setting` the tune as given (``c_scale = r_scale = 1``);
- :func:`budgets`: ``games x scale`` rounded to the framework's step (Fishtest's 1,000
  games; OpenBench's iteration of ``2 pairs_per`` games), the budgets out of range left
  out and named;
- :func:`recommend`: the cheapest setting whose mean final gain is within the margin of
  the best mean.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from spsa_bench.config.limits import LimitError
from spsa_bench.config.loader import PACKAGED_CONFIG, ConfigError, read_yaml
from spsa_bench.config.openbench_block import OpenBenchBlock, parse_openbench_block
from spsa_bench.config.param_block import (
    GAMES_STEP,
    MAX_GAMES,
    MIN_GAMES,
    BlockError,
    ParamBlock,
    check_games,
    parse_block,
)
from spsa_bench.model.instances import TruthPrior
from spsa_bench.model.time_control import TIME_CONTROLS, game_duration

SCENARIO = "plan"
SPSA = "spsa"
AUTOSELECT = "spsa-autoselect"
#: OpenBench's SPSA (optimizers/openbench.py), the kind of every run of an OpenBench plan.
OPENBENCH = "spsa-openbench"
FISHTEST_FRAMEWORK, OPENBENCH_FRAMEWORK = "fishtest", "openbench"
FRAMEWORKS = (FISHTEST_FRAMEWORK, OPENBENCH_FRAMEWORK)
#: OpenBench's tune form's defaults (AndyGrant/OpenBench at 9906bad18e04,
#: ``Templates/OpenBench/create_workload.html``, the TUNE branch: A-Ratio 0.1, Alpha
#: 0.602, Gamma 0.101, Pairs-Per 8, Distribution SINGLE, Reporting BATCHED; Iterations
#: 25000). The gains' defaults are Fishtest's (below).
OPENBENCH_PAIRS_PER = 8
OPENBENCH_ITERATIONS = 25_000
DISTRIBUTIONS = ("single", "multiple")
#: OpenBench's Reporting (``reporting`` of ``batch: openbench``, docs/frameworks.md). The
#: planner's default is BULK, not the form's BATCHED: BATCHED splits every workload into
#: 30 s reports and made the example's default plan about 8 times slower (170 s against
#: 22 s of CPU), and the framework study measured the two within 0.08 Elo (docs/plan.md).
REPORTINGS = ("bulk", "batched")
DEFAULT_REPORTING = "bulk"
#: The planner's pool of OpenBench machines (assumptions, docs/plan.md): machines, each
#: playing ``concurrency`` games at once, speed factors U(0.5, 2) as the packaged
#: asynchronous pools, game durations of the time control (model/time_control.py).
DEFAULT_MACHINES = 20
DEFAULT_CONCURRENCY = 16
OPENBENCH_SPEED = {"min": 0.5, "max": 2.0}
#: Fishtest's SPSA form's defaults: A = 0.1 N (fishtest #1326, ``spsa_workflow.py``
#: ``build_spsa_state``), alpha 0.602, gamma 0.101 (the spsa kind's defaults).
DEFAULT_A_RATIO = 0.1
DEFAULT_ALPHA = 0.602
DEFAULT_GAMMA = 0.101
#: The bounds of ``--alpha`` and ``--gamma``: the spsa kind's (optimizers/spsa.py,
#: ``SpsaHyper``; tests/plan/test_gains.py checks they agree).
ALPHA_BOUNDS = (0.0, 2.0)
GAMMA_BOUNDS = (0.0, 1.0)
#: ``--a-ratio`` is at least the kind's minimum 0 and at most 1 (A = N): real tunes
#: used 0.005 to 0.1 (docs/plan.md), and the cap keeps ``A`` finite.
A_RATIO_BOUNDS = (0.0, 1.0)
DEFAULT_GAMES = 60_000
DEFAULT_SEEDS = 200
DEFAULT_BATCH_MODE = "sync"
DEFAULT_C_SCALES = (0.5, 1.0, 2.0)
DEFAULT_R_SCALES = (0.5, 1.0, 2.0)
DEFAULT_GAMES_SCALES = (0.5, 1.0, 2.0, 4.0)
#: Elo: the recommendation is the cheapest setting within this of the best expected gain.
DEFAULT_MARGIN = 0.5
CHECKPOINTS = 51
#: The instances of a run: drawn from the prior, or every optimum moved to the start.
PRIOR, ZERO_OFFSET = "prior", "zero-offset"
#: Confidence level of every interval of plan.md and plan.png.
LEVEL = 0.95
#: The largest games multiplier: above it every budget exceeds Fishtest's maximum.
MAX_GAMES_SCALE = MAX_GAMES / MIN_GAMES
#: Seconds a run of the plan takes per game pair, ``(per pair, per pair and instance)``,
#: by the kind of batch mode: one worker (sync), many workers with fixed or variable
#: batches. Measured with 12 parameters at 20 to 1000 instances on a 2-core machine
#: shared with other work, so on the slow side; the variable batches' extra cost is the
#: schedule's union of arrivals over instances, and the asynchronous ones include
#: building the schedule.
REPLAY_SECONDS = {
    "sync": (25e-6, 0.06e-6),
    "fixed": (25e-6, 0.3e-6),
    "variable": (70e-6, 0.7e-6),
}
#: OpenBench's dispatch (``batch: openbench``): seconds per game pair and instance, and
#: per job (a workload in SINGLE, a runner's share in MULTIPLE) and instance. Fitted to
#: the example block's default plans in SINGLE and MULTIPLE (29 s and 167 s of CPU on a
#: shared 2-core machine, docs/plan.md) and doubled, so on the slow side: the job term
#: dominates when jobs are small (MULTIPLE's ``pairs_per`` pairs).
OPENBENCH_SECONDS = (0.1e-6, 8e-6)
#: BATCHED reporting's factor on that estimate: its 30 s reports made the example's
#: default plan's runs 7.7 times slower (170 s against 22 s of CPU).
BATCHED_FACTOR = 8.0
#: The planner refuses a plan whose estimated time (:func:`estimated_seconds`) is above this.
MAX_PLAN_SECONDS = 3600.0


@dataclasses.dataclass(frozen=True)
class PlanSpec:
    """What the planner simulates (module docstring); checked on construction."""

    block_text: str
    games: int = DEFAULT_GAMES
    time_control: str = "STC"
    batch_mode: str = DEFAULT_BATCH_MODE
    seeds: int = DEFAULT_SEEDS
    prior: TruthPrior = dataclasses.field(default_factory=TruthPrior)
    #: where the prior comes from ("calibrated: ..." or "assumed: ..."), for plan.md
    prior_source: str = "assumed: the hand-set prior of docs/plan.md, not fitted to any tune"
    #: the calibration's accepted draws (the posterior predictive: instance ``s`` drawn
    #: from ``prior_draws[s mod K]``); empty: every instance drawn from ``prior``
    prior_draws: tuple[TruthPrior, ...] = ()
    c_scales: tuple[float, ...] = DEFAULT_C_SCALES
    r_scales: tuple[float, ...] = DEFAULT_R_SCALES
    games_scales: tuple[float, ...] = DEFAULT_GAMES_SCALES
    margin: float = DEFAULT_MARGIN
    checkpoints: int = CHECKPOINTS
    source: str = "PARAMS"  # where the block came from, for the report
    a_ratio: float = DEFAULT_A_RATIO  # A = int(a_ratio * games / 2)
    alpha: float = DEFAULT_ALPHA
    gamma: float = DEFAULT_GAMMA
    framework: str = FISHTEST_FRAMEWORK
    # OpenBench only: its pairs per workload and runner, its distribution, the pool
    pairs_per: int = OPENBENCH_PAIRS_PER
    distribution: str = "single"
    reporting: str = DEFAULT_REPORTING
    machines: int = DEFAULT_MACHINES
    concurrency: int = DEFAULT_CONCURRENCY

    def __post_init__(self) -> None:
        if self.framework not in FRAMEWORKS:
            raise ConfigError(f"--framework = {self.framework!r}: one of {', '.join(FRAMEWORKS)}")
        parse_framework_block(self.framework, self.block_text)  # names the line and field
        if self.framework == OPENBENCH_FRAMEWORK:
            _check_openbench(self)
            object.__setattr__(self, "batch_mode", f"openbench-{self.distribution}")
        else:
            object.__setattr__(self, "games", check_games(self.games))
        if self.time_control not in TIME_CONTROLS:
            raise ConfigError(
                f"--time-control = {self.time_control!r}: one of {', '.join(TIME_CONTROLS)}"
            )
        if self.prior.tc_spread > 0 and self.prior.tc_tuned_at != self.time_control:
            # the tune plays at the plan's time control: the drawn optimum is that one's
            tuned = dataclasses.replace(self.prior, tc_tuned_at=self.time_control)
            object.__setattr__(self, "prior", tuned)
        if not 2 <= self.seeds <= 100_000:
            raise ConfigError(f"--seeds = {self.seeds}: give 2 to 100,000 instances")
        if not (math.isfinite(self.margin) and self.margin >= 0):
            raise ConfigError(f"--margin = {self.margin}: must be a finite number >= 0")
        for flag, value, (low, high) in (
            ("--a-ratio", self.a_ratio, A_RATIO_BOUNDS),
            ("--alpha", self.alpha, ALPHA_BOUNDS),
            ("--gamma", self.gamma, GAMMA_BOUNDS),
        ):
            if isinstance(value, bool) or not (
                isinstance(value, (int, float)) and math.isfinite(value) and low <= value <= high
            ):
                raise ConfigError(f"{flag} = {value!r}: must be a number in [{low:g}, {high:g}]")
        for flag, scales in (
            ("--c-scales", self.c_scales),
            ("--r-scales", self.r_scales),
            ("--games-scales", self.games_scales),
        ):
            object.__setattr__(self, flag[2:].replace("-", "_"), _scales(flag, scales))
        for c_scale in (min(self.c_scales), max(self.c_scales)):
            _check_scaled_block(self, c_scale, max(self.r_scales))
        _check_gains(self)

    @property
    def spsa(self) -> dict:
        """The SPSA arm's gain schedule in the configuration's terms (and OpenBench's
        ``pairs_per``, which sets its iterations)."""
        gains = {"A_ratio": self.a_ratio, "alpha": self.alpha, "gamma": self.gamma}
        return {**gains, "pairs_per": self.pairs_per} if self.openbench else gains

    @property
    def openbench(self) -> bool:
        return self.framework == OPENBENCH_FRAMEWORK

    @property
    def spsa_kind(self) -> str:
        """The optimizer kind of the plan's SPSA runs: Fishtest's or OpenBench's."""
        return OPENBENCH if self.openbench else SPSA

    @property
    def games_step(self) -> int:
        """Games of one step of the budget: Fishtest's 1,000, OpenBench's iteration."""
        return 2 * self.pairs_per if self.openbench else GAMES_STEP

    @property
    def block(self):
        """The block as parsed: an OpenBench block carries its ``integer`` flags."""
        return parse_framework_block(self.framework, self.block_text)

    def openbench_mode(self) -> dict:
        """OpenBench's dispatch as a batch mode (``batch: openbench``,
        docs/frameworks.md): the pool of ``machines``, each of ``concurrency`` games at
        once, its workloads of ``pairs_per`` pairs per runner in ``distribution``,
        reported in bulk or in 30 s batches (``reporting``)."""
        return {
            "workers": self.machines,
            "batch": "openbench",
            "pairs_per": self.pairs_per,
            "distribution": self.distribution,
            "reporting": self.reporting,
            "concurrency": {"min": self.concurrency, "max": self.concurrency},
            "speed": dict(OPENBENCH_SPEED),
            "game_duration": game_duration(self.time_control),
        }


def parse_framework_block(framework: str, text: str):
    """The block in ``framework``'s format; a block that only the other framework's
    parser takes is refused naming the line and field, and the flag that would take it."""
    parse, other, flag, name = (
        (parse_openbench_block, parse_block, FISHTEST_FRAMEWORK, "Fishtest")
        if framework == OPENBENCH_FRAMEWORK
        else (parse_block, parse_openbench_block, OPENBENCH_FRAMEWORK, "OpenBench")
    )
    try:
        return parse(text)
    except BlockError as error:
        try:
            other(text)
        except BlockError:
            raise error from None
        raise BlockError(
            f"{error}; the block is in {name}'s format: give --framework {flag}"
        ) from None


def _check_openbench(spec: PlanSpec) -> None:
    """OpenBench's options: ``pairs_per`` an integer >= 1 (the form's check), the
    distribution, the pool, and games a whole number of iterations (``2 pairs_per``
    games each) within the planner's range."""
    for flag, value, low in (
        ("--pairs-per", spec.pairs_per, 1),
        ("--machines", spec.machines, 1),
        ("--concurrency", spec.concurrency, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 10_000:
            raise ConfigError(f"{flag} = {value!r}: must be an integer in [{low}, 10000]")
    if spec.distribution not in DISTRIBUTIONS:
        raise ConfigError(
            f"--distribution = {spec.distribution!r}: one of {', '.join(DISTRIBUTIONS)}"
        )
    if spec.reporting not in REPORTINGS:
        raise ConfigError(f"--reporting = {spec.reporting!r}: one of {', '.join(REPORTINGS)}")
    if spec.distribution == "multiple" and spec.concurrency < 2:
        raise ConfigError(
            f"--concurrency = {spec.concurrency}: MULTIPLE runs concurrency // 2 runners of "
            "2 games each, so it needs at least 2"
        )
    step = 2 * spec.pairs_per
    if not (MIN_GAMES <= spec.games <= MAX_GAMES and spec.games % step == 0):
        raise ConfigError(
            f"--games = {spec.games}: OpenBench plays whole iterations of 2 x pairs_per = "
            f"{step} games; give a multiple of {step} from {MIN_GAMES:,} to {MAX_GAMES:,}"
        )


def _scales(flag: str, scales: Sequence[float]) -> tuple[float, ...]:
    """Sorted, unique, positive and finite multipliers, 1 (the given setting) included;
    a games multiplier at most :data:`MAX_GAMES_SCALE`."""
    values = [float(s) for s in scales]
    bad = [s for s in values if not (math.isfinite(s) and s > 0)]
    if bad:
        raise ConfigError(f"{flag}: {bad[0]:g} is not a finite multiplier > 0")
    if flag == "--games-scales" and max(values) > MAX_GAMES_SCALE:
        raise ConfigError(
            f"{flag}: {max(values):g} is above {MAX_GAMES_SCALE:g}, where every budget exceeds "
            f"Fishtest's {MAX_GAMES:,} games"
        )
    return tuple(sorted({*values, 1.0}))


def scaled_block(block: ParamBlock, c_scale: float, r_scale: float) -> ParamBlock:
    """``block`` (of either framework) with every c_end multiplied by ``c_scale`` and
    every r_end by ``r_scale``."""
    with np.errstate(over="ignore", under="ignore"):  # inf or 0: refused by the checks
        c_end, r_end = block.c_end * c_scale, block.r_end * r_scale
    fields = (block.names, block.start, block.min, block.max, c_end, r_end)
    if isinstance(block, OpenBenchBlock):
        return OpenBenchBlock(*fields, integer=block.integer)
    return ParamBlock(*fields)


def _check_scaled_block(spec: PlanSpec, c_scale: float, r_scale: float) -> None:
    """The block with every c_end multiplied by ``c_scale`` and every r_end by
    ``r_scale`` passes the block's checks (its derived quantities stay finite), else
    the error names the flags."""
    scaled = scaled_block(spec.block, c_scale, r_scale)
    try:
        parse_framework_block(spec.framework, scaled.to_text())
    except BlockError as error:
        raise ConfigError(
            f"--c-scales {c_scale:g}, --r-scales {r_scale:g}: the scaled block's {error}"
        ) from None


def _check_gains(spec: PlanSpec) -> None:
    """The largest gains of the search are finite: ``c = c_end N^gamma`` and ``a =
    r_end c_end^2 (A + N)^alpha`` at the largest multipliers and budget (the block's
    checks assume A <= 0.1 N; ``--a-ratio`` may be larger), else the error names the
    flags. For OpenBench ``N`` is its iterations, ``pairs // pairs_per``, and ``A =
    A_ratio N`` is not truncated (``spsa_utils.create_spsa_run``)."""
    pairs = max(budgets(spec)[0], default=spec.games) // 2
    block, c_scale, r_scale = spec.block, max(spec.c_scales), max(spec.r_scales)
    n = max(1, pairs // spec.pairs_per) if spec.openbench else pairs
    offset = spec.a_ratio * n if spec.openbench else int(spec.a_ratio * pairs)
    with np.errstate(over="ignore", invalid="ignore"):
        c_end = block.c_end * c_scale
        a = block.r_end * r_scale * c_end**2 * (offset + n) ** spec.alpha
        c = c_end * float(n) ** spec.gamma
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(c))):
        raise ConfigError(
            f"--a-ratio {spec.a_ratio:g}, --alpha {spec.alpha:g}, --gamma {spec.gamma:g}: the "
            f"block's gains a = r_end c_end^2 (A + N)^alpha or c = c_end N^gamma overflow at "
            f"{2 * pairs:,} games with c_end x{c_scale:g}, r_end x{r_scale:g}"
        )


@dataclasses.dataclass(frozen=True)
class Setting:
    """One run of the plan: an arm's multipliers, its games and its instances."""

    kind: str  # SPSA, AUTOSELECT or OPENBENCH
    c_scale: float
    r_scale: float
    games: int
    instances: str = PRIOR

    @property
    def label(self) -> str:
        name = (
            f"autoselect g{self.games}"
            if self.kind == AUTOSELECT
            else f"c{self.c_scale:g} r{self.r_scale:g} g{self.games}"
        )
        return name if self.instances == PRIOR else f"{name} {ZERO_OFFSET}"

    def at_zero_offset(self) -> Setting:
        return dataclasses.replace(self, instances=ZERO_OFFSET)


def budgets(spec: PlanSpec) -> tuple[list[int], list[str]]:
    """The games budgets of the search (``games x scale`` rounded to the framework's
    step: Fishtest's 1,000 games, OpenBench's iteration of ``2 pairs_per`` games) and a
    note for each scale whose budget is out of range (Fishtest's limits; the planner
    keeps OpenBench's budgets in the same range, OpenBench itself has no cap)."""
    kept, skipped = set(), []
    step, who = spec.games_step, "OpenBench plans take" if spec.openbench else "Fishtest takes"
    for scale in spec.games_scales:
        games = int(round(spec.games * scale / step)) * step
        if MIN_GAMES <= games <= MAX_GAMES:
            kept.add(games)
        else:
            skipped.append(
                f"x{scale:g} ({spec.games * scale:,.0f} games: {who} "
                f"{MIN_GAMES:,} to {MAX_GAMES:,})"
            )
    return sorted(kept), skipped


def packaged_batch_modes() -> dict:
    """The batch modes of the packaged default configuration, as configured."""
    return read_yaml(PACKAGED_CONFIG)["batch_modes"]


def check_batch_mode(name: str) -> None:
    modes = packaged_batch_modes()
    if name not in modes:
        raise ConfigError(
            f"--batch-mode = {name!r}: not a batch mode of the packaged default "
            f"configuration ({', '.join(modes)})"
        )


def search_settings(spec: PlanSpec, games: Sequence[int]) -> list[Setting]:
    """Every ``c_scale x r_scale x games`` of the search, cheapest budget first."""
    kind = spec.spsa_kind
    return [Setting(kind, c, r, g) for g in games for c in spec.c_scales for r in spec.r_scales]


def given_setting(spec: PlanSpec) -> Setting:
    return Setting(spec.spsa_kind, 1.0, 1.0, spec.games)


def recommend(games, final_gains: np.ndarray, margin: float, p_floor: float | None = None) -> int:
    """Index of the recommended candidate among every setting the plan simulated (the
    search and Autoselect). ``final_gains`` is ``(candidate, seed)``. A candidate is
    eligible when

        mean gain >= best mean - margin           (as good as the best, within the margin)
        P(gain > 0) >= p_floor                    (no riskier than the tune as given)

    with ``p_floor`` the lower end of the 95% Wilson interval of the given setting's
    P(gain > 0) (``None``: no risk criterion), so a cheaper setting may not trade the
    chance of gaining at all for its expected gain by more than the given setting's own
    uncertainty. The recommendation is the cheapest eligible candidate (fewest
    ``games``), among equally cheap ones the highest mean; when no candidate passes the
    risk criterion, the margin alone decides."""
    gains = np.asarray(final_gains, dtype=np.float64)
    means = gains.mean(axis=1)
    within = means >= means.max() - margin
    eligible = np.flatnonzero(within)
    if p_floor is not None:
        safe = np.flatnonzero(within & ((gains > 0).mean(axis=1) >= p_floor))
        eligible = safe if safe.size else eligible
    return int(min(eligible, key=lambda i: (games[i], -means[i])))


def planned_games(spec: PlanSpec) -> list[int]:
    """The games budget of every run the plan may replay: the search, Autoselect (Fishtest
    only) and the given setting's noise floor at the given games, and the recommended
    setting's noise floor (counted at the largest budget, as it is not known before the
    search)."""
    games, _ = budgets(spec)
    search = [g for g in games for _ in spec.c_scales for _ in spec.r_scales]
    given = [spec.games] if spec.openbench else [spec.games, spec.games]
    return [*search, *given, max(games, default=spec.games)]


def estimated_seconds(spec: PlanSpec) -> float:
    """The plan's estimated time: every planned run's game pairs ``P`` (``games / 2``)
    times ``a + b S`` for ``S`` instances, with ``(a, b)`` of :data:`REPLAY_SECONDS`
    for the batch mode's kind; for OpenBench ``S (P p + J j)`` with ``(p, j)`` of
    :data:`OPENBENCH_SECONDS` and ``J`` the jobs, ``P / (pairs_per concurrency)``
    (SINGLE) or ``P / pairs_per`` (MULTIPLE), times :data:`BATCHED_FACTOR` for BATCHED
    reporting."""
    if spec.openbench:
        pairs = sum(planned_games(spec)) // 2
        per_job = spec.pairs_per * (spec.concurrency if spec.distribution == "single" else 1)
        per_pair, per_job_seconds = OPENBENCH_SECONDS
        factor = BATCHED_FACTOR if spec.reporting == "batched" else 1.0
        return factor * spec.seeds * (pairs * per_pair + pairs / per_job * per_job_seconds)
    mode = packaged_batch_modes().get(spec.batch_mode, {})
    kind = "sync" if mode.get("workers") == 1 else str(mode.get("batch", "variable"))
    per_pair, per_instance_pair = REPLAY_SECONDS.get(kind, REPLAY_SECONDS["variable"])
    pairs = sum(planned_games(spec)) // 2
    return pairs * (per_pair + per_instance_pair * spec.seeds)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} hours"


def check_plan_size(spec: PlanSpec) -> None:
    """Refuse, before any run, a plan whose :func:`estimated_seconds` is above
    :data:`MAX_PLAN_SECONDS`; the message gives the runs, the game pairs, the estimate
    and the cap."""
    seconds = estimated_seconds(spec)
    if seconds <= MAX_PLAN_SECONDS:
        return
    games = planned_games(spec)
    search = len(spec.c_scales) * len(spec.r_scales) * len(budgets(spec)[0])
    raise LimitError(
        f"--c-scales, --r-scales, --games-scales, --seeds: the plan replays {len(games):,} runs "
        f"({len(spec.c_scales)} c_end x {len(spec.r_scales)} r_end x "
        f"{len(budgets(spec)[0])} budgets = {search:,} in the search) of {spec.seeds:,} "
        f"instances, {sum(games) // 2:,} game pairs per instance, estimated "
        f"{_duration(seconds)}, above the planner's cap of {_duration(MAX_PLAN_SECONDS)}; "
        "narrow the search or give fewer --seeds (docs/plan.md)"
    )
