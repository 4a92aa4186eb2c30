"""What a resolved configuration is made of: :class:`Config` and its
:class:`BatchMode` and :class:`OptimizerArm` entries, the :class:`ConfigError` every
problem is reported as, and the defaults resolution fills in (:data:`DEFAULTS`,
:data:`DEFAULT_ROUNDING`, the packaged default configuration)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spsa_bench.dispatch.asynchronous import AsyncSettings

DEFAULTS: dict[str, Any] = {
    "checkpoints": 101,
    "signal": "raw",
    "iteration_counter": "arrival",
    "entropy": 20261122,
    "baseline": "spsa",
    "targets": [0.5, 0.8, 0.9],
    "noise": "vendored",
}
#: Default of every scenario's ``rounding`` (how the worker rounds integer parameters).
DEFAULT_ROUNDING = "stochastic"
#: The packaged default configuration (a copy of the repository's config/config.yaml).
PACKAGED_CONFIG = Path(__file__).parent / "data" / "default.yaml"


class ConfigError(ValueError):
    """A configuration problem, phrased as one line naming the key and value."""


@dataclass(frozen=True)
class BatchMode:
    name: str
    workers: int
    batch: str  # "fixed", "variable" or "fishtest" (a variable batch by Fishtest's rule)
    batch_size: int | None
    settings: AsyncSettings | None  # None for the synchronous mode
    sweep: str | None = None  # the configured mode a `workers` list expanded into this one

    @property
    def is_sync(self) -> bool:
        return self.settings is None


@dataclass(frozen=True)
class OptimizerArm:
    name: str
    kind: str
    hyper: Any  # the kind's frozen hyperparameter dataclass
    sweep: str | None = None  # the configured arm a hyperparameter sweep expanded into this one
    swept: tuple[tuple[str, float | str], ...] = ()  # the swept hyperparameters, this arm's values


@dataclass(frozen=True)
class Config:
    num_pairs: int
    checkpoints: int
    signal: str
    iteration_counter: str
    entropy: int
    seeds_first: int
    seeds_count: int
    seeds_per_job: int
    baseline: str
    targets: tuple[float, ...]
    batch_modes: dict[str, BatchMode]
    scenarios: dict[str, dict]
    optimizers: dict[str, OptimizerArm]
    resolved: dict  # the resolved configuration as plain data (provenance)
    games: int | None = None  # the budget in games when the config gave games

    def to_json(self) -> str:
        return json.dumps(self.resolved, sort_keys=True)

    def batch_mode(self, name: str) -> BatchMode:
        return _pick(self.batch_modes, name, "batch mode")

    def scenario(self, name: str) -> dict:
        return _pick(self.scenarios, name, "scenario")

    def optimizer(self, name: str) -> OptimizerArm:
        return _pick(self.optimizers, name, "optimizer")

    def seed_range(self) -> range:
        return range(self.seeds_first, self.seeds_first + self.seeds_count)


def _pick(table: dict, name: str, what: str):
    try:
        return table[name]
    except KeyError:
        raise ConfigError(f"unknown {what} {name!r}; this config has: {', '.join(table)}") from None
