"""Simulated tunes: one corpus record replayed on many prior draws at once.

A record becomes a :class:`TuneSetting`: its block (or, without one, the block
Stockfish's ``TUNE()`` prints for its number of parameters,
:func:`~spsa_bench.config.param_block.synthetic_tune`), its games (or the section's
default), its time control as the nearest of STC, LTC and VLTC by Fishtest's
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
the differences between draws come from the truth alone). Each record has its own
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
from spsa_bench.calibration.stats import STATS, observed_stats, simulated_stats
from spsa_bench.config.param_block import parse_block, synthetic_tune
from spsa_bench.corpus.records import TuneRecord
from spsa_bench.model.bowl import TIME_CONTROLS, SeedBowls
from spsa_bench.model.instances import draw_instances
from spsa_bench.model.time_control import tc_limit

#: Fishtest's SPSA defaults where a record does not say (A as a share of N).
DEFAULT_A_RATIO, DEFAULT_ALPHA, DEFAULT_GAMMA = 0.1, 0.602, 0.101
#: The spawn key of the simulated verification noise.
VERIFY_KEY = 0x5E


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
    time_control: str
    a_ratio: float
    alpha: float
    gamma: float
    observed: np.ndarray  # (stat,)
    se: float


def nearest_time_control(text: str | None, default: str) -> str:
    """STC, LTC or VLTC nearest to ``"base+increment"`` in log ``tc_limit`` (``default``
    when None)."""
    if text is None:
        return default
    base, increment = (float(x) for x in text.split("+"))
    limit = math.log(3.0 * base + 200.0 * increment)
    return min(TIME_CONTROLS, key=lambda tc: abs(math.log(tc_limit(tc)) - limit))


def tune_setting(record: TuneRecord, default_games: int, default_time_control: str):
    """The :class:`TuneSetting` of ``record``."""
    tune = record.tune
    games = tune.games if tune.games is not None else default_games
    games = min(max(1000 * round(games / 1000), 1000), 3_200_000)  # Fishtest's grid
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
    return TuneSetting(
        name=record.name,
        year=record.year,
        params=len(parse_block(text)),
        block_text=text,
        has_block=record.block is not None,
        games=int(games),
        games_known=tune.games is not None,
        time_control=nearest_time_control(tune.time_control, default_time_control),
        a_ratio=float(a_ratio),
        alpha=DEFAULT_ALPHA if tune.alpha is None else float(tune.alpha),
        gamma=DEFAULT_GAMMA if tune.gamma is None else float(tune.gamma),
        observed=observed,
        se=se,
    )


def tune_entropy(entropy: int, name: str) -> int:
    """The record's own entropy (module docstring)."""
    sequence = np.random.SeedSequence(entropy, spawn_key=(zlib.crc32(name.encode()),))
    return int(sequence.generate_state(1, np.uint64)[0])


def tune_config(setting: TuneSetting, entropy: int, batch_mode: dict):
    """The in-memory configuration of one simulated tune (module docstring)."""
    from spsa_bench.config.loader import resolve

    scenario = {
        "description": f"corpus tune {setting.name}",
        "fishtest_params": setting.block_text,
        "noise": setting.time_control,
        "rounding": "stochastic",
    }
    spsa = {"kind": "spsa", "A_ratio": setting.a_ratio, "alpha": setting.alpha}
    spsa["gamma"] = setting.gamma
    raw = {
        "games": setting.games,
        "checkpoints": 2,
        "noise": setting.time_control,
        "entropy": tune_entropy(entropy, setting.name),
        "seeds": {"first": 0, "count": 1, "per_job": 1},
        "baseline": "spsa",
        "batch_modes": {"calibration": batch_mode},
        "scenarios": {"tune": scenario},
        "optimizers": {"spsa": spsa},
    }
    return resolve(raw)


def stack_bowls(bowls: Sequence[SeedBowls]) -> SeedBowls:
    """The bowls of several draws as one, rows in order; an option off in some draws
    is filled with its neutral value (no rotation, no plateau, one optimum at every
    time control)."""
    first = bowls[0]

    def field(name, neutral):
        values = [getattr(b, name) for b in bowls]
        if all(v is None for v in values):
            return None
        return np.concatenate(
            [neutral(b) if v is None else v for b, v in zip(bowls, values, strict=True)],
            axis=1 if name == "tc_theta_peak" else 0,
        )

    return SeedBowls(
        theta_peak=np.concatenate([b.theta_peak for b in bowls]),
        elo_per_scale=np.concatenate([b.elo_per_scale for b in bowls]),
        scale=first.scale,
        partner=field("partner", lambda b: np.tile(np.arange(b.theta_peak.shape[1]),
                                                   (b.theta_peak.shape[0], 1))),
        cos=field("cos", lambda b: np.ones_like(b.theta_peak)),
        sin=field("sin", lambda b: np.zeros_like(b.theta_peak)),
        peak_elo=first.peak_elo,
        plateau=field("plateau", lambda b: np.zeros_like(b.theta_peak)),
        tc_theta_peak=field(
            "tc_theta_peak", lambda b: np.broadcast_to(b.theta_peak, (len(TIME_CONTROLS),
                                                                       *b.theta_peak.shape))
        ),
    )  # fmt: skip


def simulate_tune(
    setting: TuneSetting,
    family: PriorFamily,
    values: np.ndarray,
    seeds: Sequence[int],
    entropy: int,
    batch_mode: dict,
) -> np.ndarray:
    """The statistics of ``setting`` simulated at every prior draw ``values`` ``(draw,
    free)`` and seed, ``(draw, seed, stat)``, in one replay (module docstring)."""
    from spsa_bench.engine.simulate import prepare

    seeds = [int(s) for s in seeds]
    n_draws, n_seeds = values.shape[0], len(seeds)
    config = tune_config(setting, entropy, batch_mode)
    block = parse_block(setting.block_text)
    bowls = stack_bowls(
        [
            draw_instances(
                family.prior(v), block.start, block.min, block.max, block.c_end,
                config.entropy, seeds,
            )
            for v in values
        ]
    )  # fmt: skip
    rows = np.tile(np.asarray(seeds, dtype=np.int64), n_draws)
    setup = prepare(
        config, "tune", config.batch_mode("calibration"), rows, prior=family.prior(values[0])
    )
    problem = dataclasses.replace(setup.problem, bowl=bowls)
    setup = dataclasses.replace(setup, problem=problem)
    result = setup.replay(config.optimizer("spsa"))
    final = result.theta[:, -1]
    start = np.tile(block.start, (rows.size, 1))
    gain = bowls.elo_loss(start) - bowls.elo_loss(final)
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
    return out.reshape(n_draws, n_seeds, len(STATS))


__all__ = [
    "TuneSetting",
    "nearest_time_control",
    "simulate_tune",
    "stack_bowls",
    "tune_config",
    "tune_entropy",
    "tune_setting",
]
