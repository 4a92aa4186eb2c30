"""The framework study: Fishtest's SPSA beside OpenBench's, and each of OpenBench's
rules switched on alone (issue 31; the rules and their sources: docs/frameworks.md).

On one parameter-block scenario, at every ``c_end`` of the section, the arms of
:data:`spsa_bench.config.sections.frameworks.ARMS` play the same instances:

- ``fishtest``: the configured ``spsa`` arm, each engine rounded on its own
  (``floor(v + U)`` with its own ``U``: Fishtest's worker);
- ``ob-all-off``: ``spsa-openbench`` with ``pairs_per = 1`` (``k = 1 + K``, per pair),
  no ``c`` floor, independent rounding: OpenBench's gains with Fishtest's rules;
- ``ob+coupled``, ``ob+c-floor``, ``ob+chunks``: that arm with one rule on (both
  engines rounded with one ``U``; ``c_k >= 0.5`` on integers with the step following
  it; ``k = 1 + K / pairs_per``);
- ``openbench``: all three on (OpenBench as its form configures it).

``c_end`` is played by scaling the view's ``c_end`` (``c_dev``) by ``c / c_block``,
which for ``spsa`` is exactly ``c_scale`` (the c_end study's lever) and for
``spsa-openbench`` the same change of its block (``a_end = r_end c_end**2`` follows);
the truth instances stay those drawn from the block, in units of the block's c_end.
Every arm at one seed shares the instance, the schedule, the flips, the rounding
uniforms (coupled rounding uses the plus engine's independent uniform) and the match
draws (common random numbers): the differences to ``fishtest`` are paired.

The section's optional ``dispatch`` adds a second panel (variables ``dispatch_*``, dims
``(dispatch, c_end, seed)``): the ``openbench`` arm on each ``batch: openbench`` mode
(SINGLE or MULTIPLE distribution, BULK or BATCHED reporting). Its arms share, at each
seed, the instance, the machines (concurrency and speed from the seed's ``workers``
stream), the game durations (each machine's ``durations`` stream) and the match draws
(pair ``i`` of the run plays draw ``i`` whatever job holds it). What differs by
construction is the schedule: which pairs share a perturbation, when each update
arrives, and so the flips and rounding uniforms (drawn per job of the schedule). The
differences to the panel's first arm are paired in the instance, machines, durations and
match draws, not in the flips. The first panel's arms and values do not depend on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.config.records import Config
from spsa_bench.config.sections.frameworks import FrameworkSection
from spsa_bench.studies.base import PROBE_VARIABLES, Output, Scope, Study, start_gap, study_dataset

if TYPE_CHECKING:
    import xarray as xr


def run_framework_study(
    config: Config,
    study: FrameworkSection,
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
    for c, c_end in enumerate(study.c_end):
        view = dataclasses.replace(
            problem.view, c_dev=problem.view.c_dev * (c_end / study.block_c_end)
        )
        scaled = dataclasses.replace(setup, problem=dataclasses.replace(problem, view=view))
        for a, entry in enumerate(study.arms):
            if progress is not None:
                progress(f"{entry.arm.name} at c_end {c_end:g}")
            run = dataclasses.replace(scaled, rounding=entry.rounding).replay(entry.arm)
            results["final_elo_loss"][a, c] = problem.bowl.elo_loss(run.theta[:, -1])
            results["probe_equal_fraction"][a, c] = run.probe_equal_fraction
            results["probe_swapped_fraction"][a, c] = run.probe_swapped_fraction
    dispatch = _dispatch_panel(config, study, seeds, setup, progress) if study.dispatch else None
    return _study_dataset(config, study, seeds, results, gap, setup.noise.name, dispatch)


def _dispatch_panel(config, study, seeds, setup, progress) -> dict:
    """The dispatch panel: every dispatch arm at every c_end, ``(dispatch, c_end, seed)``,
    on the study's instances (``setup.problem``) with its batch mode's schedule."""
    from spsa_bench.engine.simulate import make_schedule

    problem = setup.problem
    shape = (len(study.dispatch), len(study.c_end), seeds.size)
    results = {name: np.full(shape, np.nan) for name in PROBE_VARIABLES}
    for d, entry in enumerate(study.dispatch):
        schedule = make_schedule(config, entry.mode, seeds)
        for c, c_end in enumerate(study.c_end):
            if progress is not None:
                progress(f"{entry.arm.name} at c_end {c_end:g}")
            view = dataclasses.replace(
                problem.view, c_dev=problem.view.c_dev * (c_end / study.block_c_end)
            )
            run = dataclasses.replace(
                setup,
                problem=dataclasses.replace(problem, view=view),
                schedule=schedule,
                rounding=entry.rounding,
            ).replay(entry.arm)
            results["final_elo_loss"][d, c] = problem.bowl.elo_loss(run.theta[:, -1])
            results["probe_equal_fraction"][d, c] = run.probe_equal_fraction
            results["probe_swapped_fraction"][d, c] = run.probe_swapped_fraction
        del schedule
    return results


def _study_dataset(
    config, study, seeds, results, start_gap, noise_name, dispatch=None
) -> xr.Dataset:
    data_vars = {
        name: (("arm", "c_end", "seed"), results[name], {"long_name": long, "units": units})
        for name, (long, units) in PROBE_VARIABLES.items()
    }
    extra_coords = {}
    if dispatch is not None:
        for name, (long, units) in PROBE_VARIABLES.items():
            data_vars[f"dispatch_{name}"] = (
                ("dispatch", "c_end", "seed"),
                dispatch[name],
                {"long_name": f"{long} (dispatch panel)", "units": units},
            )
        extra_coords = _dispatch_coords(study)
    data_vars["start_elo_gap"] = (
        ("seed",),
        start_gap,
        {"long_name": "true Elo loss of the seed's instance at the start", "units": "Elo"},
    )
    arms = [entry.arm for entry in study.arms]

    def per_arm(values, long_name, dtype=object):
        return ("arm", np.array(values, dtype=dtype), {"long_name": long_name})

    coords = {
        "arm": per_arm([arm.name for arm in arms], "arm of the framework study"),
        "kind": per_arm([arm.kind for arm in arms], "optimizer kind"),
        "description": per_arm([e.description for e in study.arms], "what the arm switches on"),
        "rounding": per_arm([e.rounding for e in study.arms], "worker rounding of the arm"),
        "pairs_per": per_arm(
            [getattr(arm.hyper, "pairs_per", 1) for arm in arms],
            "pairs per iteration (1: per pair, as Fishtest)",
            np.int64,
        ),
        "c_floor": per_arm(
            [
                float(getattr(arm.hyper, "c_floor", getattr(arm.hyper, "min_c", 0.0)))
                for arm in arms
            ],
            "smallest c_k of an integer parameter (0: none)",
            np.float64,
        ),
        "c_end": (
            "c_end",
            np.array(study.c_end),
            {"long_name": "c_end every parameter is probed with", "units": "integer steps"},
        ),
        "seed": ("seed", seeds, {"long_name": "seed"}),
        **extra_coords,
    }
    attrs = {
        "title": f"spsa-bench framework study: {study.scenario} / {study.batch_mode}",
        "scenario": study.scenario,
        "batch_mode": study.batch_mode,
        "rounding": "per arm (coordinate rounding)",
        "noise": noise_name,
        "num_pairs": config.num_pairs,
        "baseline": arms[0].name,
        "assumption": (
            "the truth is drawn per seed from the scenario's truth prior, in units of the "
            "block's c_end; game results follow the scenario's noise model; OpenBench's "
            "dispatch is not part of this comparison (every arm plays the study's batch "
            "mode); these are modelling assumptions, not measurements"
        ),
    }
    if dispatch is not None:
        attrs["dispatch_assumption"] = (
            "the dispatch panel plays the openbench arm on batch: openbench modes; its arms "
            "share the instance, machines, game durations and match draws at each seed, not "
            "the flips and rounding uniforms (drawn per job of each schedule); machines, "
            "workloads and reports follow docs/frameworks.md (BATCHED: pairs finish at a "
            "constant rate over their job, reported every 30 s)"
        )
    return study_dataset(config, data_vars, coords, attrs)


def _dispatch_coords(study: FrameworkSection) -> dict:
    """The dispatch panel's per-arm coordinates: arm name, batch mode and its settings."""
    entries = study.dispatch

    def per_arm(values, long_name, dtype=object):
        return ("dispatch", np.array(values, dtype=dtype), {"long_name": long_name})

    settings = [entry.mode.settings for entry in entries]
    return {
        "dispatch": per_arm([e.arm.name for e in entries], "arm of the dispatch panel"),
        "dispatch_mode": per_arm([e.mode.name for e in entries], "its batch mode"),
        "distribution": per_arm([s.distribution for s in settings], "OpenBench distribution"),
        "reporting": per_arm(
            [getattr(s, "reporting", "bulk") for s in settings], "OpenBench reporting"
        ),
        "machines": per_arm([s.num_workers for s in settings], "machines", np.int64),
        "concurrency_max": per_arm(
            [s.concurrency_max for s in settings], "largest machine concurrency", np.int64
        ),
    }


def _scope(config: Config, study: FrameworkSection) -> Scope:
    """The Fishtest arm on the study's scenario and batch mode (one grid cell)."""
    fishtest = config.resolved["framework_study"]["fishtest"]
    arms = (fishtest,) if isinstance(fishtest, str) else ()
    return Scope(study.batch_mode, (study.scenario,), arms, config.num_pairs, per_cell=bool(arms))


def _memory_mb(config: Config, study: FrameworkSection) -> float:
    """One simulation of the study's seeds at a time, plus its (arm, c_end, seed)
    results: as the c_end study, whose loop this is (206-213 MB measured at 100 seeds x
    30,000 pairs)."""
    return 150 + config.seeds_count * config.num_pairs * 30 / 1e6


def _runtime_min(config: Config, study: FrameworkSection) -> int:
    """Every arm at every c_end, each at most 3 us per seed x pair (as simulate); a
    dispatch arm counts twice (an asynchronous schedule, and BATCHED's many more updates)."""
    runs = (len(study.arms) + 2 * len(study.dispatch)) * len(study.c_end)
    return 2 + runs * config.seeds_count * config.num_pairs // 20_000_000


STUDY = Study(
    key="framework_study",
    command="framework-study",
    help="final Elo loss of Fishtest's spsa, OpenBench's spsa-openbench and each OpenBench "
    "rule alone at every c_end (the config's framework_study)",
    doc="docs/frameworks.md",
    label="framework study",
    rule="framework_study",
    run=run_framework_study,
    report="spsa_bench.analysis.frameworks:write_report",
    outputs=(
        Output("nc", "results/frameworks/framework_study.nc"),
        Output(
            "csv",
            "results/tables/frameworks.csv",
            "frameworks_table.rst",
            "Tables",
            {"table": "framework study"},
        ),
        Output("md", "results/tables/frameworks.md"),
        Output(
            "png",
            "results/figures/frameworks.png",
            "frameworks.rst",
            "Fishtest tunes",
            {"figure": "framework study"},
        ),
        Output("svg", "results/figures/frameworks.svg"),
    ),
    scope=_scope,
    memory_mb=_memory_mb,
    runtime_min=_runtime_min,
    comment="The framework study (issue 31): Fishtest's spsa beside OpenBench's "
    "spsa-openbench and each OpenBench rule alone, at every c_end on one scenario.",
)
