"""Simulated tunes: one corpus record replayed on many prior draws at once.

A record becomes a :class:`TuneSetting`: its block (or, without one, the block
Stockfish's ``TUNE()`` prints for its number of parameters,
:func:`~spsa_bench.config.param_block.synthetic_tune`), its games (or, unknown, one
budget per instance: :func:`budget_levels`), its time control as the nearest of STC, LTC and VLTC by Fishtest's
``tc_limit = 3 base + 200 increment`` on a log scale (or the default), and its
Fishtest SPSA hyperparameters where the record knows them: ``A_ratio`` as recorded, or
an absolute ``A`` as ``A / N`` (``N = games / 2``); alpha and gamma; else Fishtest's
defaults 0.1, 0.602, 0.101.

:func:`simulate_tune` builds an in-memory configuration (scenario ``tune``: that block,
the time control's calibrated noise, the worker's stochastic rounding; one ``spsa`` arm;
the study's batch mode) and replays it once with one row per (prior draw, seed): the
rows of draw ``j`` hold the instances ``draw_instances(prior_j, ..., seeds)``, stacked
into one :class:`~spsa_bench.model.bowl.SeedBowls`, and every draw uses the same seeds,
so the draws share flips, rounding uniforms and match draws (common random numbers:
the differences between draws come from the truth alone). A record whose budget is
unknown plays seed ``i`` (``i``-th of the seeds) at ``budgets[i mod len(budgets)]``,
one replay per distinct budget, so its predictive sample spreads over the budgets the
corpus knows instead of assuming one. Each record has its own
entropy, ``SeedSequence(entropy, spawn_key=(crc32(name),))``, so different tunes are
independent; the verification noise of seed ``s`` comes from
``SeedSequence(tune entropy, spawn_key=(VERIFY_KEY, s))``.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Sequence

import numpy as np

from spsa_bench.calibration.prior import PriorFamily
from spsa_bench.calibration.selection import row_keys, simulate_sprt
from spsa_bench.calibration.stats import STATS, chosen_test, observed_stats, simulated_stats
from spsa_bench.config.param_block import parse_block, synthetic_tune
from spsa_bench.config.sections.calibration import BUDGET_RULES
from spsa_bench.corpus.records import TuneRecord, Verification
from spsa_bench.model.bowl import TIME_CONTROLS
from spsa_bench.model.instances import (
    TruthPrior,
    draw_instances,
    elo_at_time_control,
    stack_bowls,
)
from spsa_bench.model.time_control import tc_limit

#: Fishtest's SPSA defaults where a record does not say (A as a share of N).
DEFAULT_A_RATIO, DEFAULT_ALPHA, DEFAULT_GAMMA = 0.1, 0.602, 0.101
#: The spawn key of the simulated verification noise, and (below it) of the SPRT's pairs.
VERIFY_KEY = 0x5E
SPRT_KEY = 1
#: Below VERIFY_KEY, the spawn key of a fixed-games record's further tests
#: (:func:`verification_elos`), apart from the SPRT's.
FIXED_KEY = 2
#: The spawn key of the step multipliers (:func:`step_multipliers`).
STEP_KEY = 0x57E9
#: The spawn key of the stratified step multipliers' order (:func:`step_multipliers`).
STRATA_KEY = 0x5724
#: How the step multipliers are drawn: at random per seed, or one per stratum.
STEP_SAMPLINGS = ("random", "stratified")
#: The spawn key of the per-parameter c_end multipliers (:func:`param_multipliers`).
PARAM_STEP_KEY = 0xC0E5
#: A simulated SPRT plays true gains clipped to this many Elo (the tilt of a test's
#: pentanomial cannot reach a score its counts never saw, near 190 Elo): far beyond any
#: test's bounds, so the outcome is the same.
SPRT_GAIN_CLIP = 150.0


@dataclasses.dataclass(frozen=True)
class TuneSetting:
    """What the simulation of one record uses (module docstring) and its observations."""

    name: str
    year: int
    params: int
    block_text: str
    has_block: bool
    games: int
    games_known: bool
    #: the games of each instance slot (one value when the record knows its budget)
    budgets: tuple[int, ...]
    time_control: str
    a_ratio: float
    alpha: float
    gamma: float
    observed: np.ndarray  # (stat,)
    se: float
    #: the verification test the statistic reads (:func:`~.stats.chosen_test`), or None
    verification: Verification | None = None
    #: the time control that test played at (:func:`verification_time_control`)
    verification_time_control: str | None = None
    #: per block parameter: the record committed integers (start and final integral),
    #: so a simulated tune commits its final theta rounded (:func:`committed_values`)
    committed_integers: tuple[bool, ...] | None = None
    #: a source quotes the c_end and r_end the run played (the record's ``step``
    #: provenance), so ``quoted_step_spread`` applies instead of ``step_spread``
    step_quoted: bool = False
    #: the match noise the tune plays: a preset name, or ``{draw_rate, sigma2}`` of its
    #: era (:mod:`~spsa_bench.calibration.era_noise`); None: its time control's preset
    noise: str | dict | None = None


def nearest_time_control(text: str | None, default: str) -> str:
    """STC, LTC or VLTC nearest to ``"base+increment"`` in log ``tc_limit`` (``default``
    when None)."""
    if text is None:
        return default
    base, increment = (float(x) for x in text.split("+"))
    limit = math.log(3.0 * base + 200.0 * increment)
    return min(TIME_CONTROLS, key=lambda tc: abs(math.log(tc_limit(tc)) - limit))


#: The words of a verification label that name a Fishtest time control, in order of
#: length, and the noise model each stands for (VVLTC has none of its own: VLTC's).
_LABEL_TIME_CONTROLS = {"STC": "STC", "LTC": "LTC", "VLTC": "VLTC", "VVLTC": "VLTC"}
_LABEL_ORDER = ("STC", "LTC", "VLTC", "VVLTC")


def tuned_time_control(record: TuneRecord, default: str) -> str:
    """The noise model of ``record``'s tune: the nearest to its quoted time control
    (:func:`nearest_time_control`); unknown, the longest time control among its
    verification tests (their ``base+increment`` or the STC/LTC/VLTC/VVLTC word of their
    label; VVLTC plays VLTC's noise), an inference: a tune is verified at its own time
    control and the commits' tests go up to it; else ``default``."""
    if record.tune.time_control is not None:
        return nearest_time_control(record.tune.time_control, default)
    best = None  # (rank, noise model)
    for test in record.verification:
        found = time_control_of_test(test, default)
        if found is not None and (best is None or found[0] > best[0]):
            best = found
    return default if best is None else best[1]


def time_control_of_test(test: Verification, default: str) -> tuple[float, str] | None:
    """``(rank, noise model)`` of a verification test's time control: its ``base+increment``
    (rank ``tc_limit``, noise model :func:`nearest_time_control`) or the first
    STC/LTC/VLTC/VVLTC word of its label (VVLTC ranked above VLTC, playing VLTC's noise);
    None when it says neither."""
    if test.time_control is not None:
        base, increment = (float(x) for x in test.time_control.split("+"))
        return 3.0 * base + 200.0 * increment, nearest_time_control(test.time_control, default)
    words = [w for w in (test.label or "").upper().split() if w in _LABEL_TIME_CONTROLS]
    if not words:
        return None
    tc = words[0]
    return (tc_limit(_LABEL_TIME_CONTROLS[tc]) * (1 + _LABEL_ORDER.index(tc) / 10),
            _LABEL_TIME_CONTROLS[tc])  # fmt: skip


def verification_time_control(test: Verification | None, tuned: str) -> str:
    """The time control (STC, LTC or VLTC) the verification ``test`` played at: its own
    (:func:`time_control_of_test`), else the tune's ``tuned`` one (an inference: a test
    that names no time control is taken to be at the tune's)."""
    found = None if test is None else time_control_of_test(test, tuned)
    return tuned if found is None else found[1]


def fishtest_games(games: float) -> int:
    """``games`` on Fishtest's grid of budgets: a multiple of 1000 in [1000, 3.2 M]."""
    return int(min(max(1000 * round(games / 1000), 1000), 3_200_000))


def budget_levels(records: Sequence[TuneRecord], slots: int, default) -> tuple[int, ...]:
    """The budgets a tune of unknown games plays, one per instance slot.

    ``default`` a number: that budget alone. ``"corpus"``: the quantiles
    ``q_i = (i + 1/2) / slots``, ``i = 0 .. slots - 1``, of the known budgets of
    ``records`` on a log scale (``exp`` of the quantile of ``ln games``, linear
    interpolation), each on Fishtest's grid: a stratified sample of the budgets real
    tunes used, so that a tune whose budget nobody wrote down is predicted over that
    spread rather than at one assumed value (an assumption too: the corpus's budgets
    stand for the unknown ones). ``"log-uniform"``: the same strata of a log-uniform
    distribution between the smallest and the largest known budget,
    ``exp(ln g_min + q_i (ln g_max - ln g_min))`` (the assumption that an unstated
    budget is any of the corpus's range alike, which puts more weight on long tunes
    than the known budgets, most of them 30 k to 200 k games, do). ``slots`` is the
    number of seeds.
    """
    if default not in BUDGET_RULES:
        return (fishtest_games(default),)
    known = np.array([r.tune.games for r in records if r.tune.games is not None], float)
    if known.size == 0:
        raise ValueError(f"default_games = {default}: no record of the corpus knows its games")
    levels = (np.arange(max(int(slots), 1)) + 0.5) / max(int(slots), 1)
    if default == "log-uniform":
        low, high = np.log(known.min()), np.log(known.max())
        return tuple(fishtest_games(g) for g in np.exp(low + levels * (high - low)))
    return tuple(fishtest_games(g) for g in np.exp(np.quantile(np.log(known), levels)))


def tune_setting(
    record: TuneRecord, unknown_budgets: Sequence[int], default_time_control: str
) -> TuneSetting:
    """The :class:`TuneSetting` of ``record``; ``unknown_budgets`` are the instance
    slots' games when the record does not know its own (:func:`budget_levels`)."""
    tune = record.tune
    if tune.games is not None:
        budgets = (fishtest_games(tune.games),)
    else:
        budgets = tuple(int(b) for b in unknown_budgets)
    games = int(np.median(budgets)) if len(budgets) > 1 else budgets[0]
    pairs = games // 2
    if tune.A_ratio is not None:
        a_ratio = tune.A_ratio
    elif tune.A is not None and tune.games is not None:
        a_ratio = tune.A / pairs
    else:
        a_ratio = DEFAULT_A_RATIO
    if record.block is not None:
        text = record.block.to_text()
    else:
        text = synthetic_tune(max(len(record.parameters), 1))
    observed, se = observed_stats(record)
    chosen = chosen_test(record)
    tuned = tuned_time_control(record, default_time_control)
    return TuneSetting(
        name=record.name,
        year=record.year,
        params=len(parse_block(text)),
        block_text=text,
        has_block=record.block is not None,
        games=int(games),
        games_known=tune.games is not None,
        budgets=budgets,
        time_control=tuned,
        a_ratio=float(a_ratio),
        alpha=DEFAULT_ALPHA if tune.alpha is None else float(tune.alpha),
        gamma=DEFAULT_GAMMA if tune.gamma is None else float(tune.gamma),
        observed=observed,
        se=se,
        verification=None if chosen is None else chosen[0],
        verification_time_control=verification_time_control(
            None if chosen is None else chosen[0], tuned
        ),
        committed_integers=committed_integers(record),
        step_quoted=record.step_quoted,
    )


def committed_integers(record: TuneRecord) -> tuple[bool, ...] | None:
    """Per parameter of ``record``'s block, whether the commit holds integers: its start
    and final values are whole numbers (None without a block: a synthetic ``TUNE()``
    block, all integers). Stockfish's tuned variables are ``int``s, and a developer
    commits the tuned values rounded; a few records hold scaled decimals instead."""
    if record.block is None:
        return None
    final = {p.name: p.final for p in record.parameters}
    return tuple(
        float(start).is_integer() and float(final.get(name, start)).is_integer()
        for name, start in zip(record.block.names, record.block.start, strict=True)
    )


def committed_values(setting: TuneSetting, theta: np.ndarray) -> np.ndarray:
    """The values a simulated tune commits: the exported ``theta`` ``(row, param)``
    rounded to the nearest integer (half to even) where the record committed integers
    (:attr:`TuneSetting.committed_integers`; every parameter of a synthetic block), the
    exported value elsewhere. The verification plays them and the moves are theirs, as
    in the record, so a parameter with ``c_end`` below one unit moves by whole units."""
    mask = (
        np.ones(theta.shape[-1], dtype=bool)
        if setting.committed_integers is None
        else np.asarray(setting.committed_integers, dtype=bool)
    )
    return np.where(mask, np.rint(theta), theta)


def tune_entropy(entropy: int, name: str) -> int:
    """The record's own entropy (module docstring)."""
    sequence = np.random.SeedSequence(entropy, spawn_key=(zlib.crc32(name.encode()),))
    return int(sequence.generate_state(1, np.uint64)[0])


def tune_config(setting: TuneSetting, entropy: int, batch_mode: dict, games: int | None = None):
    """The in-memory configuration of one simulated tune (module docstring), at
    ``games`` (default: the setting's)."""
    from spsa_bench.config.loader import resolve

    noise = setting.time_control if setting.noise is None else setting.noise
    scenario = {
        "description": f"corpus tune {setting.name}",
        "fishtest_params": setting.block_text,
        "noise": noise,
        "rounding": "stochastic",
    }
    spsa = {"kind": "spsa", "A_ratio": setting.a_ratio, "alpha": setting.alpha}
    spsa["gamma"] = setting.gamma
    raw = {
        "games": setting.games if games is None else int(games),
        "checkpoints": 2,
        "noise": noise,
        "entropy": tune_entropy(entropy, setting.name),
        "seeds": {"first": 0, "count": 1, "per_job": 1},
        "baseline": "spsa",
        "batch_modes": {"calibration": batch_mode},
        "scenarios": {"tune": scenario},
        "optimizers": {"spsa": spsa},
    }
    return resolve(raw)


def simulate_tune(setting: TuneSetting, *args, **kwargs) -> np.ndarray:
    """The statistics of :func:`simulate_tune_tests` alone, ``(draw, seed, stat)``: its
    arguments without ``verification_tests`` (one test per simulated tune)."""
    return simulate_tune_tests(setting, *args, **kwargs)[0]


def simulate_tune_tests(
    setting: TuneSetting,
    family: PriorFamily,
    values: np.ndarray,
    seeds: Sequence[int],
    entropy: int,
    batch_mode: dict,
    step_spread: float = 0.0,
    param_step_spread: float = 0.0,
    start_tuned_at: str | None = None,
    step_sampling: str = "random",
    quoted_step_spread: float | None = None,
    verification_tests: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """The statistics of ``setting`` simulated at every prior draw ``values`` ``(draw,
    free)`` and seed, ``(draw, seed, stat)``, and the verification Elo of
    ``verification_tests`` independent tests of each simulated tune, ``(draw, seed,
    test)`` (:func:`verification_elos`; test 0 is the statistics' own): seed slot ``i`` plays
    ``budgets[i mod len(budgets)]`` games with every ``r_end`` times its step multiplier
    (:func:`step_multipliers` at ``step_spread``, or at ``quoted_step_spread`` when
    that is not None and the record quotes its step, :attr:`TuneSetting.step_quoted`;
    drawn as ``step_sampling`` says) and, with ``param_step_spread``, each parameter's
    ``c_end`` times its own multiplier (:func:`param_multipliers`); one replay per
    distinct setting (module docstring). ``start_tuned_at`` (a time control, or ``None``:
    the tune's own) is where the instances' offsets are drawn (:func:`played_bowls`)."""
    seeds = [int(s) for s in seeds]
    out = np.full((values.shape[0], len(seeds), len(STATS)), np.nan)
    gain = np.full((values.shape[0], len(seeds)), np.nan)
    budget = [setting.budgets[i % len(setting.budgets)] for i in range(len(seeds))]
    tune_key = tune_entropy(entropy, setting.name)
    if setting.step_quoted and quoted_step_spread is not None:
        step_spread = quoted_step_spread
    step = step_multipliers(tune_key, seeds, step_spread, step_sampling)
    n_params = len(parse_block(setting.block_text))
    c_steps = param_multipliers(tune_key, seeds, n_params, param_step_spread)
    # with per-parameter multipliers every seed slot is its own setting
    own = [i if param_step_spread > 0 else -1 for i in range(len(seeds))]
    for games, multiplier, slot in sorted(set(zip(budget, step, own, strict=True))):
        key = (games, multiplier, slot)
        chosen = [i for i in range(len(seeds)) if (budget[i], step[i], own[i]) == key]
        out[:, chosen], gain[:, chosen] = _simulate_at(
            setting, family, values, [seeds[i] for i in chosen], entropy, batch_mode, games,
            multiplier, c_steps[chosen[0]], start_tuned_at,
        )  # fmt: skip
    tests = verification_elos(setting, gain, out[:, :, 0], seeds, entropy, verification_tests)
    out[:, :, 0] = tests[:, :, 0]
    return out, tests


def verification_elos(
    setting: TuneSetting,
    gain: np.ndarray,
    fixed: np.ndarray,
    seeds: Sequence[int],
    entropy: int,
    count: int,
) -> np.ndarray:
    """The verification Elo of ``count`` independent tests of each simulated tune,
    ``(draw, seed, test)``, at its true gain ``gain`` ``(draw, seed)``. A record whose
    chosen test is an SPRT: each test played on the gain (:func:`selected_elo`; test
    ``k`` of seed ``s`` keyed by ``spawn_key=(VERIFY_KEY, SPRT_KEY, s)`` at ``k = 0``
    and ``(VERIFY_KEY, SPRT_KEY, k, s)`` after, :func:`~.selection.row_keys`), NaN where
    it did not end as the record's. Otherwise test 0 is ``fixed`` (the fixed-games
    value of :func:`~.stats.simulated_stats`) and test ``k >= 1`` is ``gain + se Z``
    with ``Z`` from ``SeedSequence(tune entropy, spawn_key=(VERIFY_KEY, FIXED_KEY, k,
    s))``. Test 0 is what
    the statistics and the fit use; the others only widen the predictive sample of the
    verification Elo, whose SPRT selection leaves few samples (docs/calibration.md)."""
    count = int(count)
    if count < 1:
        raise ValueError(f"verification tests = {count}: must be at least 1")
    tune_key = tune_entropy(entropy, setting.name)
    test = setting.verification
    out = np.full((*gain.shape, count), np.nan)
    out[:, :, 0] = fixed
    if test is not None and test.test == "sprt" and np.isfinite(setting.se):
        keys = [row_keys(tune_key, seeds, VERIFY_KEY, SPRT_KEY)]
        keys += [row_keys(tune_key, seeds, VERIFY_KEY, SPRT_KEY, k) for k in range(1, count)]
        rows = np.concatenate([np.tile(k, gain.shape[0]) for k in keys])
        elo = selected_elo(np.tile(gain.ravel(), count), test, rows)
        return np.moveaxis(elo.reshape(count, *gain.shape), 0, -1)
    if count > 1 and np.isfinite(setting.se):
        normal = np.array(
            [
                [
                    np.random.default_rng(
                        np.random.SeedSequence(
                            tune_key, spawn_key=(VERIFY_KEY, FIXED_KEY, k, int(s))
                        )
                    ).standard_normal()
                    for s in seeds
                ]
                for k in range(1, count)
            ]
        )  # one number per test and seed: a setup loop, not the replay's
        out[:, :, 1:] = gain[:, :, None] + setting.se * normal.T[None]
    return out


def step_multipliers(
    entropy: int, seeds: Sequence[int], spread: float, sampling: str = "random"
) -> list[float]:
    """One multiplier of the block's ``r_end`` per seed, ``exp(spread Z_s)`` (all 1.0 when
    ``spread`` is 0): the step of a real tune is known only as well as its block, whose
    ``c_end`` and ``r_end`` are mostly inferred from ``TUNE()``'s defaults (an author may
    have edited them on Fishtest unrecorded), so the section may let it vary by a
    log-normal factor, an assumption stated with its value (docs/calibration.md).

    ``sampling`` ``random``: ``Z_s ~ N(0, 1)`` from ``SeedSequence(entropy,
    spawn_key=(STEP_KEY, s))``, each seed on its own. ``stratified``: the ``n`` seeds
    take the ``n`` strata of ``N(0, 1)`` once each, seed slot ``i`` the midpoint quantile
    ``Z = Phi^-1((pi_i + 1/2) / n)`` with ``pi`` a permutation of ``0..n-1`` from
    ``SeedSequence(entropy, spawn_key=(STEP_KEY, STRATA_KEY))`` (``entropy`` is the
    tune's, so each tune pairs strata and slots, and so the budgets of
    :func:`budget_levels`, in its own order): with a few instances per draw a tune's
    factors then span the distribution at every entropy instead of by luck, at the cost
    of making a slot's factor depend on the number of slots, as its budget already does
    (Latin-hypercube sampling)."""
    if sampling not in STEP_SAMPLINGS:
        raise ValueError(f"step sampling {sampling!r}: must be one of {', '.join(STEP_SAMPLINGS)}")
    if sampling == "random" or spread == 0:
        return [float(f) for f in _log_normal_factors(entropy, STEP_KEY, seeds, 1, spread)[:, 0]]
    from scipy.special import ndtri  # here: scipy is slow to import

    n = len(seeds)
    order = np.random.default_rng(
        np.random.SeedSequence(entropy, spawn_key=(STEP_KEY, STRATA_KEY))
    ).permutation(n)
    return [float(f) for f in np.exp(spread * ndtri((order + 0.5) / n))]


def _log_normal_factors(
    entropy: int, key: int, seeds: Sequence[int], size: int, spread: float
) -> np.ndarray:
    """``exp(spread Z)``, ``(seed, size)``: seed ``s``'s row ``Z ~ N(0, I)`` from
    ``SeedSequence(entropy, spawn_key=(key, s))`` (all 1.0 when ``spread`` is 0)."""
    if spread == 0:
        return np.ones((len(seeds), size))
    normals = [
        np.random.default_rng(
            np.random.SeedSequence(entropy, spawn_key=(key, int(s)))
        ).standard_normal(size)
        for s in seeds
    ]  # one generator per seed: a setup loop, not the replay's
    return np.exp(spread * np.reshape(normals, (len(seeds), size)))


def param_multipliers(
    entropy: int, seeds: Sequence[int], n_params: int, spread: float
) -> np.ndarray:
    """One multiplier of each parameter's ``c_end`` per seed, ``(seed, param)``:
    ``exp(spread Z_(s,i))`` with ``Z_(s, .) ~ N(0, I)`` from ``SeedSequence(entropy,
    spawn_key=(PARAM_STEP_KEY, s))`` (all 1.0 when ``spread`` is 0). A record's
    ``c_end`` is mostly ``TUNE()``'s default ``(max - min) / 20`` per parameter, while
    an author sets each range by hand (and may edit a ``c_end`` on Fishtest unrecorded),
    so the ``c_end`` a tune really played may differ from the recorded one parameter by
    parameter. Fishtest's step moves a parameter by ``r_k c_k`` times the report's
    result, so a parameter played at ``m c_end`` moves ``m`` times as far in units of
    the recorded ``c_end`` (the unit of every move statistic), while the landscape stays
    in recorded units. An assumption with its value (docs/calibration.md), like
    :func:`step_multipliers`."""
    return _log_normal_factors(entropy, PARAM_STEP_KEY, seeds, n_params, spread)


def scaled_block(text: str, multiplier: float, c_multipliers: np.ndarray | None = None) -> str:
    """The block ``text`` with every ``r_end`` times ``multiplier`` and, given, each
    parameter's ``c_end`` times its ``c_multipliers`` entry."""
    scale_c = c_multipliers is not None and not np.all(c_multipliers == 1.0)
    if multiplier == 1.0 and not scale_c:
        return text
    block = parse_block(text)
    block = dataclasses.replace(block, r_end=block.r_end * multiplier)
    if scale_c:
        block = dataclasses.replace(block, c_end=block.c_end * np.asarray(c_multipliers))
    return block.to_text()


def _simulate_at(
    setting, family, values, seeds, entropy, batch_mode, games, multiplier=1.0, c_steps=None,
    start_tuned_at=None,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """:func:`simulate_tune` at one budget in one replay: the statistics ``(draw, seed,
    stat)`` (the verification Elo as a fixed-games test) and the true gains ``(draw,
    seed)``. The tune plays each ``c_end`` times its ``c_steps`` entry; the landscape and the
    moves are in the record's own ``c_end``."""
    from spsa_bench.engine.simulate import prepare

    n_draws, n_seeds = values.shape[0], len(seeds)
    played = scaled_block(setting.block_text, multiplier, c_steps)
    config = tune_config(
        dataclasses.replace(setting, block_text=played),
        entropy,
        batch_mode,
        games,
    )
    block = parse_block(setting.block_text)
    bowls = stack_bowls(
        [
            draw_instances(
                tuned_prior(family.prior(v), start_tuned_at or setting.time_control),
                block.start, block.min,
                block.max, block.c_end, config.entropy, seeds,
            )
            for v in values
        ]
    )  # fmt: skip
    rows = np.tile(np.asarray(seeds, dtype=np.int64), n_draws)
    setup = prepare(
        config, "tune", config.batch_mode("calibration"), rows, prior=family.prior(values[0])
    )
    problem = dataclasses.replace(setup.problem, bowl=played_bowls(bowls, setting, start_tuned_at))
    setup = dataclasses.replace(setup, problem=problem)
    result = setup.replay(config.optimizer("spsa"))
    final = committed_values(setting, result.theta[:, -1])
    start = np.tile(block.start, (rows.size, 1))
    gain = verified_gain(bowls, start, final, setting, start_tuned_at)
    normal = np.array(
        [
            np.random.default_rng(
                np.random.SeedSequence(config.entropy, spawn_key=(VERIFY_KEY, s))
            ).standard_normal()
            for s in seeds
        ]
    )  # one number per seed: a setup loop, not the replay's
    out = simulated_stats(
        gain, final, block.start, block.c_end, setting.se, np.tile(normal, n_draws),
        setting.has_block,
    )  # fmt: skip
    return out.reshape(n_draws, n_seeds, len(STATS)), gain.reshape(n_draws, n_seeds)


def tuned_prior(prior: TruthPrior, time_control: str) -> TruthPrior:
    """``prior`` with its ``time_control_shift`` tuned at the tune's ``time_control``
    (the optimum the tune plays is the drawn one); unchanged without a shift."""
    if prior.tc_spread == 0:
        return prior
    return dataclasses.replace(prior, tc_tuned_at=time_control)


def played_bowls(bowls, setting: TuneSetting, start_tuned_at: str | None = None):
    """The instances as the tune plays them: ``bowls`` themselves when their optimum is
    drawn at the tune's own time control (``start_tuned_at`` ``None``, :func:`tuned_prior`),
    else their optimum at the tune's time control. With ``start_tuned_at = STC`` and a
    ``time_control_shift`` of spread ``d``, a tune at VLTC plays the optimum
    ``theta_peak + 2 d delta c_end`` (clipped to the block's range): the start values,
    last tuned at STC, are further from it, so there is more at stake at longer time
    controls (an assumption, off by default: docs/calibration.md)."""
    if start_tuned_at is None or bowls.tc_theta_peak is None:
        return bowls
    return bowls.at_time_control(setting.time_control)


def verified_gain(
    bowls, start, final, setting: TuneSetting, start_tuned_at: str | None = None
) -> np.ndarray:
    """The true gain of each row's tune from ``start`` to ``final`` at the time control
    its verification test played (:func:`verification_time_control`): where the
    instances have a ``time_control_shift`` the optimum there is not the tuned one
    (:func:`~spsa_bench.model.instances.elo_at_time_control`), so a tune can gain at its
    own time control and lose at the test's; without one, ``loss(start) - loss(final)``.
    With ``start_tuned_at`` the instances' own optimum is that time control's, so the
    gain is always read at the test's time control."""
    at = setting.verification_time_control or setting.time_control
    own = start_tuned_at is None and at == setting.time_control
    if bowls.tc_theta_peak is None or own:
        return bowls.elo_loss(start) - bowls.elo_loss(final)
    return elo_at_time_control(bowls, final, at) - elo_at_time_control(bowls, start, at)


def selected_elo(gain: np.ndarray, test: Verification, keys: np.ndarray) -> np.ndarray:
    """The verification Elo of simulated tunes whose record chose an SPRT: the test
    played at the true gains ``gain`` (:func:`~spsa_bench.calibration.selection.simulate_sprt`,
    one counter stream per row ``keys``), its Elo at stopping where the simulated test
    ended as the record's did (passed, or not), NaN where it did not: the predictive
    sample of a quoted SPRT Elo is conditional on the outcome that was quoted (a passed
    SPRT was committed; its stopping rule inflates the Elo), not an unbiased measurement.
    """
    outcome = simulate_sprt(np.clip(gain, -SPRT_GAIN_CLIP, SPRT_GAIN_CLIP), test, keys=keys)
    same = outcome.passed == (test.result == "passed")
    return np.where(same, outcome.elo, np.nan)


__all__ = [
    "TuneSetting",
    "budget_levels",
    "committed_integers",
    "committed_values",
    "fishtest_games",
    "nearest_time_control",
    "played_bowls",
    "selected_elo",
    "scaled_block",
    "simulate_tune",
    "simulate_tune_tests",
    "step_multipliers",
    "stack_bowls",
    "tune_config",
    "tune_entropy",
    "tune_setting",
    "tuned_prior",
    "tuned_time_control",
    "verification_time_control",
    "verification_elos",
    "verified_gain",
]
