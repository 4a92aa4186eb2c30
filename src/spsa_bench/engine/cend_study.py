"""The c_end study: how small a c_end can a Fishtest tune of integer parameters afford?

Fishtest's worker rounds each engine's integer parameters on their own
(``floor(v + U)``, official-stockfish/fishtest ``worker/games.py``), so with
``c_k`` below 1 the two engines often play the same integer, or integers in the
opposite order to the flip (Stockfish PR #4776). Two proposals answer it:
fishtest #1912 (never probe with ``c_k`` below 2: ``min_c``) and fishtest #1929
(update with the realized half-difference of the played integers:
``delta: realized``). The study runs the configuration's ``cend_study`` arms over a
list of c_end values on one parameter-block scenario::

    cend_study:
      scenario: tune-16-stc       # a parameter-block scenario with one c_end for all
      batch_mode: sync
      c_end: [0.25, 0.5, 1, 2, 4] # the c_end every variant probes with (integer units)
      base: spsa                  # an SPSA-family arm of the configuration
      variants:                   # hyperparameters over the base arm's; first = baseline
        classic: {}
        realized: {delta: realized}
        min-c2: {min_c: 2}

The variants are not arms of the benchmark grid: they run in this study only.
Each plays c_end ``c`` through ``c_scale = c / c_block`` (the block's c_end);
the truth instances stay those drawn from the block (in units of the block's
c_end), so every value of ``c`` tunes the same engines, and every arm at one seed
shares the instance, the schedule, the flips, the rounding uniforms and the match
draws (common random numbers): the differences to the baseline are paired.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.config.loader import (
    Config,
    ConfigError,
    OptimizerArm,
    scenario_block,
    scenario_kind,
)
from spsa_bench.optimizers import hyper_from_dict

if TYPE_CHECKING:
    import xarray as xr

STUDY_KEY = "cend_study"


@dataclasses.dataclass(frozen=True)
class CendStudy:
    scenario: str
    batch_mode: str
    c_end: tuple[float, ...]
    arms: tuple[OptimizerArm, ...]  # the variants, named, over the base arm
    block_c_end: float


def study_settings(config: Config) -> CendStudy | None:
    """The configuration's ``cend_study``, checked against its scenarios and arms
    (``None`` when the configuration has none)."""
    raw = config.resolved.get(STUDY_KEY)
    if raw is None:
        return None
    where = STUDY_KEY
    scenario = raw["scenario"]
    spec = known(config.scenario, scenario, f"{where}.scenario")
    if scenario_kind(spec) != "block":
        raise ConfigError(
            f"{where}.scenario = {scenario!r}: not a parameter-block scenario "
            "(give fishtest_params, fishtest_params_file or synthetic_tune)"
        )
    block_c_end = _block_c_end(scenario_block(spec).c_end, f"{where}.scenario = {scenario!r}")
    known(config.batch_mode, raw["batch_mode"], f"{where}.batch_mode")
    base = known(config.optimizer, raw["base"], f"{where}.base")
    if "c_scale" not in {field.name for field in dataclasses.fields(base.hyper)}:
        raise ConfigError(f"{where}.base = {raw['base']!r}: has no c_scale (not an SPSA arm)")
    arms = []
    for name, overrides in raw["variants"].items():
        values = {**dataclasses.asdict(base.hyper), **(overrides or {})}
        if "c_scale" in (overrides or {}):
            raise ConfigError(f"{where}.variants.{name}.c_scale: set by the study from c_end")
        try:
            hyper = hyper_from_dict(base.kind, values)
        except (TypeError, ValueError) as error:
            raise ConfigError(f"{where}.variants.{name}: {error}") from None
        arms.append(OptimizerArm(name, base.kind, hyper))
    return CendStudy(
        scenario=scenario,
        batch_mode=raw["batch_mode"],
        c_end=tuple(float(c) for c in raw["c_end"]),
        arms=tuple(arms),
        block_c_end=block_c_end,
    )


def known(pick, name: str, where: str):
    """``pick(name)``, its error naming the study's key."""
    try:
        return pick(name)
    except ConfigError as error:
        raise ConfigError(f"{where}: {error}") from None


def _block_c_end(c_end: np.ndarray, where: str) -> float:
    if not np.all(c_end == c_end[0]):
        raise ConfigError(
            f"{where}: its parameters have different c_end values "
            f"({float(c_end.min()):g} to {float(c_end.max()):g}); the study needs one"
        )
    return float(c_end[0])


def run_cend_study(
    config: Config,
    study: CendStudy,
    seeds: Sequence[int],
    progress: Callable[[str], None] | None = None,
) -> xr.Dataset:
    """Final Elo loss and probe KPIs of every arm at every c_end, dims ``(arm, c_end, seed)``."""
    from spsa_bench.engine.simulate import prepare

    seeds = np.asarray(list(seeds), dtype=np.int64)
    setup = prepare(config, study.scenario, config.batch_mode(study.batch_mode), seeds)
    problem = setup.problem
    shape = (len(study.arms), len(study.c_end), seeds.size)
    results = {name: np.full(shape, np.nan) for name in _STUDY_VARIABLES}
    start_gap = problem.bowl.elo_loss(np.tile(problem.view.theta_start, (seeds.size, 1)))
    for a, arm in enumerate(study.arms):
        for c, c_end in enumerate(study.c_end):
            if progress is not None:
                progress(f"{arm.name} at c_end {c_end:g}")
            run = setup.replay(arm, c_scale=c_end / study.block_c_end)
            final = run.theta[:, -1]
            results["final_elo_loss"][a, c] = problem.bowl.elo_loss(final)
            results["probe_equal_fraction"][a, c] = run.probe_equal_fraction
            results["probe_swapped_fraction"][a, c] = run.probe_swapped_fraction
    return _study_dataset(
        config, study, seeds, results, start_gap, setup.rounding, setup.noise.name
    )


_STUDY_VARIABLES = {
    "final_elo_loss": ("true Elo loss at the end of the budget", "Elo"),
    "probe_equal_fraction": (
        "share of jobs x integer parameters where both engines played the same integer",
        "1",
    ),
    "probe_swapped_fraction": (
        "share of jobs x integer parameters played in the opposite order to the flip",
        "1",
    ),
}


def _study_dataset(config, study, seeds, results, start_gap, rounding, noise_name) -> xr.Dataset:
    import xarray as xr

    from spsa_bench.results.cf import conform
    from spsa_bench.results.provenance import provenance

    data_vars = {
        name: (("arm", "c_end", "seed"), results[name], {"long_name": long, "units": units})
        for name, (long, units) in _STUDY_VARIABLES.items()
    }
    data_vars["start_elo_gap"] = (
        ("seed",),
        start_gap,
        {"long_name": "true Elo loss of the seed's instance at the start", "units": "Elo"},
    )
    kinds = [arm.kind for arm in study.arms]
    hyper = [arm.hyper for arm in study.arms]
    names = [arm.name for arm in study.arms]
    coords = {
        "arm": ("arm", np.array(names, dtype=object), {"long_name": "variant of the base arm"}),
        "kind": ("arm", np.array(kinds, dtype=object), {"long_name": "optimizer kind"}),
        "delta": (
            "arm",
            np.array([str(getattr(h, "delta", "flip")) for h in hyper], dtype=object),
            {"long_name": "the arm's step direction (flip or realized, fishtest #1929)"},
        ),
        "min_c": (
            "arm",
            np.array([float(getattr(h, "min_c", 0.0)) for h in hyper]),
            {"long_name": "the arm's smallest c_k on integer parameters (fishtest #1912)"},
        ),
        "c_end": (
            "c_end",
            np.array(study.c_end),
            {"long_name": "c_end every parameter is probed with", "units": "integer steps"},
        ),
        "seed": ("seed", seeds, {"long_name": "seed"}),
    }
    attrs = {
        "title": f"spsa-bench c_end study: {study.scenario} / {study.batch_mode}",
        "scenario": study.scenario,
        "batch_mode": study.batch_mode,
        "rounding": rounding,
        "noise": noise_name,
        "num_pairs": config.num_pairs,
        "baseline": names[0],
        "assumption": (
            "the truth is drawn per seed from the scenario's truth prior, in units of the "
            "block's c_end; it is a modelling assumption, not a measurement"
        ),
        **provenance(config.to_json()),
    }
    return conform(xr.Dataset(data_vars, coords, attrs))


def print_progress(message: str) -> None:
    print(f"c_end study: {message}", file=sys.stderr, flush=True)
