"""The c_end study: how small a c_end can a Fishtest tune of integer parameters afford?

Fishtest's worker rounds each engine's integer parameters on their own
(``floor(v + U)``, official-stockfish/fishtest ``worker/games.py``), so with
``c_k`` below 1 the two engines often play the same integer, or integers in the
opposite order to the flip (Stockfish PR #4776). Two proposals answer it:
fishtest #1912 (never probe with ``c_k`` below 2: ``min_c``) and fishtest #1929
(update with the realized half-difference of the played integers:
``delta: realized``). The study runs the configuration's ``cend_study`` variants over a
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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.config.records import Config
from spsa_bench.config.sections.cend import CendSection
from spsa_bench.studies.base import PROBE_VARIABLES, Output, Scope, Study, start_gap, study_dataset

if TYPE_CHECKING:
    import xarray as xr


def run_cend_study(
    config: Config,
    study: CendSection,
    seeds: Sequence[int],
    progress: Callable[[str], None] | None = None,
) -> xr.Dataset:
    """Final Elo loss and probe KPIs of every arm at every c_end, dims ``(arm, c_end, seed)``."""
    from spsa_bench.engine.simulate import prepare

    seeds = np.asarray(list(seeds), dtype=np.int64)
    setup = prepare(config, study.scenario, config.batch_mode(study.batch_mode), seeds)
    problem = setup.problem
    shape = (len(study.arms), len(study.c_end), seeds.size)
    results = {name: np.full(shape, np.nan) for name in PROBE_VARIABLES}
    gap = start_gap(problem, seeds.size)
    for a, arm in enumerate(study.arms):
        for c, c_end in enumerate(study.c_end):
            if progress is not None:
                progress(f"{arm.name} at c_end {c_end:g}")
            run = setup.replay(arm, c_scale=c_end / study.block_c_end)
            final = run.theta[:, -1]
            results["final_elo_loss"][a, c] = problem.bowl.elo_loss(final)
            results["probe_equal_fraction"][a, c] = run.probe_equal_fraction
            results["probe_swapped_fraction"][a, c] = run.probe_swapped_fraction
    return _study_dataset(config, study, seeds, results, gap, setup.rounding, setup.noise.name)


def _study_dataset(config, study, seeds, results, start_gap, rounding, noise_name) -> xr.Dataset:
    data_vars = {
        name: (("arm", "c_end", "seed"), results[name], {"long_name": long, "units": units})
        for name, (long, units) in PROBE_VARIABLES.items()
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
    }
    return study_dataset(config, data_vars, coords, attrs)


def _scope(config: Config, study: CendSection) -> Scope:
    """The base arm on the study's scenario and batch mode (one grid cell)."""
    base = config.resolved["cend_study"]["base"]
    return Scope(study.batch_mode, (study.scenario,), (base,), config.num_pairs, per_cell=True)


def _memory_mb(config: Config, study: CendSection) -> float:
    """One simulation of the study's seeds at a time, plus its (arm, c_end, seed) results:
    206-213 MB measured at 100 seeds x 30,000 pairs."""
    return 150 + config.seeds_count * config.num_pairs * 30 / 1e6


def _runtime_min(config: Config, study: CendSection) -> int:
    """Every arm at every c_end, each at most 3 us per seed x pair (as simulate)."""
    runs = len(study.arms) * len(study.c_end)
    return 2 + runs * config.seeds_count * config.num_pairs // 20_000_000


STUDY = Study(
    key="cend_study",
    command="cend-study",
    help="final Elo loss against c_end for classic SPSA, delta: realized and min_c "
    "(the config's cend_study)",
    doc="docs/fishtest.md",
    label="c_end study",
    rule="cend_study",
    run=run_cend_study,
    report="spsa_bench.analysis.cend:write_report",
    outputs=(
        Output("nc", "results/fishtest/cend_study.nc"),
        Output(
            "csv", "results/tables/cend.csv", "cend_table.rst", "Tables", {"table": "c_end study"}
        ),
        Output("md", "results/tables/cend.md"),
        Output(
            "png",
            "results/figures/cend.png",
            "cend.rst",
            "Fishtest tunes",
            {"figure": "c_end study"},
        ),
        Output("svg", "results/figures/cend.svg"),
    ),
    scope=_scope,
    memory_mb=_memory_mb,
    runtime_min=_runtime_min,
    comment="The c_end study of Fishtest tunes (fishtest #1912 and #1929): the config's "
    "cend_study arms at every c_end on one parameter-block scenario.",
)
