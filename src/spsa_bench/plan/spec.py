"""What the planner is asked and how it decides: :class:`PlanSpec`, the search's
settings, the plan's constants and :func:`recommend`.

The bottom of :mod:`spsa_bench.plan`: :mod:`spsa_bench.plan.run`,
:mod:`spsa_bench.plan.summary` and :mod:`spsa_bench.plan.figure` import from here, and
this module imports none of them, so the package has no import circle.

- :class:`PlanSpec`: the parameter block, the games budget, the time control, a batch
  mode of the packaged default configuration, the number of instances (seeds), the
  prior over the unknown truth and the search (multipliers on c_end, r_end and games);
- :class:`Setting`: one run of the plan (an arm, its multipliers, its budget and its
  instances); :func:`search_settings` is every ``c_scale x r_scale x games`` of the
  search, :func:`given_setting` the tune as given (``c_scale = r_scale = 1``);
- :func:`budgets`: ``games x scale`` rounded to Fishtest's step of 1,000, the budgets
  Fishtest would refuse left out and named;
- :func:`recommend`: the cheapest setting whose mean final gain is within the margin of
  the best mean.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from spsa_bench.config.loader import ConfigError
from spsa_bench.config.param_block import (
    GAMES_STEP,
    MAX_GAMES,
    MIN_GAMES,
    check_games,
    parse_block,
)
from spsa_bench.model.instances import TruthPrior
from spsa_bench.model.time_control import TIME_CONTROLS

SCENARIO = "plan"
SPSA = "spsa"
AUTOSELECT = "spsa-autoselect"
#: Fishtest's SPSA today: A = 0.1 N (fishtest #1326); alpha, gamma: the kind's defaults.
FISHTEST_SPSA = {"A_ratio": 0.1}
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


@dataclasses.dataclass(frozen=True)
class PlanSpec:
    """What the planner simulates (module docstring); checked on construction."""

    block_text: str
    games: int = DEFAULT_GAMES
    time_control: str = "STC"
    batch_mode: str = DEFAULT_BATCH_MODE
    seeds: int = DEFAULT_SEEDS
    prior: TruthPrior = dataclasses.field(default_factory=TruthPrior)
    c_scales: tuple[float, ...] = DEFAULT_C_SCALES
    r_scales: tuple[float, ...] = DEFAULT_R_SCALES
    games_scales: tuple[float, ...] = DEFAULT_GAMES_SCALES
    margin: float = DEFAULT_MARGIN
    checkpoints: int = CHECKPOINTS
    source: str = "PARAMS"  # where the block came from, for the report

    def __post_init__(self) -> None:
        parse_block(self.block_text)  # BlockError names the line and the field
        object.__setattr__(self, "games", check_games(self.games))
        if self.time_control not in TIME_CONTROLS:
            raise ConfigError(
                f"--time-control = {self.time_control!r}: one of {', '.join(TIME_CONTROLS)}"
            )
        if not 2 <= self.seeds <= 100_000:
            raise ConfigError(f"--seeds = {self.seeds}: give 2 to 100,000 instances")
        if not (math.isfinite(self.margin) and self.margin >= 0):
            raise ConfigError(f"--margin = {self.margin}: must be a finite number >= 0")
        for flag, scales in (
            ("--c-scales", self.c_scales),
            ("--r-scales", self.r_scales),
            ("--games-scales", self.games_scales),
        ):
            object.__setattr__(self, flag[2:].replace("-", "_"), _scales(flag, scales))

    @property
    def block(self):
        return parse_block(self.block_text)


def _scales(flag: str, scales: Sequence[float]) -> tuple[float, ...]:
    """Sorted, unique, positive and finite multipliers, 1 (the given setting) included."""
    values = [float(s) for s in scales]
    bad = [s for s in values if not (math.isfinite(s) and s > 0)]
    if bad:
        raise ConfigError(f"{flag}: {bad[0]:g} is not a finite multiplier > 0")
    return tuple(sorted({*values, 1.0}))


@dataclasses.dataclass(frozen=True)
class Setting:
    """One run of the plan: an arm's multipliers, its games and its instances."""

    kind: str  # SPSA or AUTOSELECT
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
    """The games budgets of the search (``games x scale`` rounded to Fishtest's step of
    1,000) and a note for each scale whose budget Fishtest would refuse."""
    kept, skipped = set(), []
    for scale in spec.games_scales:
        games = int(round(spec.games * scale / GAMES_STEP)) * GAMES_STEP
        if MIN_GAMES <= games <= MAX_GAMES:
            kept.add(games)
        else:
            skipped.append(
                f"x{scale:g} ({spec.games * scale:,.0f} games: Fishtest takes "
                f"{MIN_GAMES:,} to {MAX_GAMES:,})"
            )
    return sorted(kept), skipped


def search_settings(spec: PlanSpec, games: Sequence[int]) -> list[Setting]:
    """Every ``c_scale x r_scale x games`` of the search, cheapest budget first."""
    return [Setting(SPSA, c, r, g) for g in games for c in spec.c_scales for r in spec.r_scales]


def given_setting(spec: PlanSpec) -> Setting:
    return Setting(SPSA, 1.0, 1.0, spec.games)


def recommend(games, final_gains: np.ndarray, margin: float) -> int:
    """Index of the cheapest setting (fewest ``games``) whose mean final gain is within
    ``margin`` Elo of the best mean; among equally cheap ones, the highest mean.
    ``final_gains`` is ``(setting, seed)``."""
    means = np.asarray(final_gains, dtype=np.float64).mean(axis=1)
    within = np.flatnonzero(means >= means.max() - margin)
    return int(min(within, key=lambda i: (games[i], -means[i])))
