"""The grid of a configuration resolved: its budget, seeds, batch modes, scenarios and
arms checked and turned into a frozen :class:`~spsa_bench.config.records.Config`, every
default filled in.

The budget is ``num_pairs`` or ``games`` (Fishtest's form, ``num_pairs = games // 2``),
exactly one of them. Batch modes, scenarios and arms are resolved by their own modules
(:mod:`~spsa_bench.config.batch_modes`, :mod:`~spsa_bench.config.scenarios`,
:mod:`~spsa_bench.config.arms`). The optional sections are not this module's:
:mod:`~spsa_bench.config.resolution` checks them once the grid exists.
"""

from __future__ import annotations

import copy
from pathlib import Path

from spsa_bench.config.arms import resolve_arms
from spsa_bench.config.batch_modes import resolve_batch_modes
from spsa_bench.config.records import DEFAULTS, Config, ConfigError
from spsa_bench.config.scenarios import check_noise, resolve_scenarios


def _num_pairs(data: dict) -> tuple[int, int | None]:
    """``(num_pairs, games)`` of the budget key given (:func:`~spsa_bench.config.raw_checks.check_budget_keys`)."""
    if "num_pairs" in data:
        return int(data["num_pairs"]), None
    from spsa_bench.config.param_block import BlockError, check_games

    try:
        games = check_games(data["games"])
    except BlockError as error:
        raise ConfigError(str(error)) from None
    data["games"] = games
    return games // 2, games


def _check_counts(data: dict, num_pairs: int) -> None:
    """Seeds within the stated maxima; no more checkpoints than the grid 0..num_pairs has."""
    from spsa_bench.config.limits import LimitError, check_seed_range

    try:
        check_seed_range("seeds", data["seeds"]["first"], data["seeds"]["count"])
    except LimitError as error:
        raise ConfigError(str(error)) from None
    if data["checkpoints"] > num_pairs + 1:
        raise ConfigError(
            f"checkpoints = {data['checkpoints']}: more than the {num_pairs + 1} points "
            f"of the pairs grid 0..num_pairs (num_pairs = {num_pairs})"
        )


def resolve_grid(raw: dict, base_dir: str | Path | None = None) -> Config:
    """The grid of ``raw`` (budget, seeds, batch modes, scenarios, arms) resolved, every
    check beyond the schema run, its optional sections neither checked nor read (a
    budget study re-resolves its configuration once per budget without them)."""
    base_dir = None if base_dir is None else Path(base_dir)
    data = copy.deepcopy(raw)
    for key, value in DEFAULTS.items():
        data.setdefault(key, copy.deepcopy(value))
    num_pairs, games = _num_pairs(data)
    seeds = data["seeds"]
    seeds.setdefault("per_job", seeds["count"])
    _check_counts(data, num_pairs)

    batch_modes = resolve_batch_modes(data, num_pairs)
    check_noise("noise", data["noise"])
    resolve_scenarios(data, num_pairs, base_dir)
    optimizers = resolve_arms(data, raw)
    config = Config(
        num_pairs=num_pairs,
        checkpoints=int(data["checkpoints"]),
        signal=data["signal"],
        iteration_counter=data["iteration_counter"],
        entropy=int(data["entropy"]),
        seeds_first=int(seeds["first"]),
        seeds_count=int(seeds["count"]),
        seeds_per_job=int(seeds["per_job"]),
        baseline=data["baseline"],
        targets=tuple(float(t) for t in data["targets"]),
        batch_modes=batch_modes,
        scenarios=data["scenarios"],
        optimizers=optimizers,
        resolved=data,
        games=games,
    )
    return config
