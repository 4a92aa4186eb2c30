"""The calibration study (issue 30 item 3): the tune-scenario truth prior fitted to the
packaged corpus of real Stockfish tunes by simulation (``spsa-bench calibrate``).

The method is :mod:`spsa_bench.calibration` (statistics, prior family, rejection ABC,
time-split coverage); the section is :mod:`spsa_bench.config.sections.calibration`; the
seeds of the run are the instances every draw plays on every tune. The dataset holds
the observed statistics, the accepted draws and every tune's predictive band; the
numbers are a fit on the named corpus version (its digest), never a measurement of
reality beyond it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.config.records import Config
from spsa_bench.config.sections.calibration import CalibrationSection
from spsa_bench.studies.base import Output, Scope, Study, study_dataset

if TYPE_CHECKING:
    import xarray as xr


def run_calibration(
    config: Config,
    section: CalibrationSection,
    seeds: Sequence[int],
    progress: Callable[[str], None] | None = None,
) -> xr.Dataset:
    """Fit and predict on the packaged corpus (module docstring)."""
    from spsa_bench.calibration.prior import PriorFamily
    from spsa_bench.calibration.run import calibrate, packaged_corpus
    from spsa_bench.calibration.shipped import calibrated_record
    from spsa_bench.results.provenance import start_git_state

    start_git_state()  # the provenance of the code that runs, not of the tree at the end
    family = PriorFamily.of_section(section)
    records, digest = packaged_corpus()
    result = calibrate(
        records,
        family,
        draws=section.draws,
        accept=section.accept,
        seeds=seeds,
        entropy=config.entropy,
        batch_mode=section.batch_settings,
        split_year=section.split_year,
        default_games=section.default_games,
        default_time_control=section.default_time_control,
        step_spread=section.step_spread,
        param_step_spread=section.param_step_spread,
        start_tuned_at=section.start_tuned_at,
        step_sampling=section.step_sampling,
        quoted_step_spread=section.quoted_step_spread,
        verification_tests=section.verification_tests,
        noise=section.noise,
        progress=progress,
    )
    ds = calibration_dataset(config, section, family, result, seeds, digest)
    record = calibrated_record(
        result,
        family,
        digest=digest,
        fitted_on={
            "split_year": section.split_year,
            "draws": section.draws,
            "accept": section.accept,
            "seeds": [int(s) for s in seeds],
            "entropy": int(config.entropy),
            "batch_mode": section.batch_mode,
            "default_games": section.default_games,
            "default_time_control": section.default_time_control,
            "step_spread": section.step_spread,
            "param_step_spread": section.param_step_spread,
            # only when set: the records of sections without it stay as they were
            **({"start_tuned_at": section.start_tuned_at} if section.start_tuned_at else {}),
            **(
                {"step_sampling": section.step_sampling}
                if section.step_sampling != "random"
                else {}
            ),
            **(
                {"quoted_step_spread": section.quoted_step_spread}
                if section.quoted_step_spread is not None
                else {}
            ),
            **(
                {"verification_tests": section.verification_tests}
                if section.verification_tests != 1
                else {}
            ),
            **({"noise": section.noise} if section.noise != "preset" else {}),
        },
    )
    ds.attrs["calibrated_truth"] = json.dumps(record, sort_keys=True)
    if progress is not None:
        for line in shipped_comparison(record):
            progress(line)
    return ds


def shipped_comparison(record: dict) -> list[str]:
    """Lines comparing a calibration's posterior medians with the shipped prior's
    (:func:`spsa_bench.calibration.shipped.compare`)."""
    from spsa_bench.calibration.shipped import compare
    from spsa_bench.model.calibrated import calibrated_record as shipped

    try:
        rows = compare(record, shipped())
    except FileNotFoundError:
        rows = []
    if not rows:
        return ["no shipped calibrated prior to compare with (ci/ship_calibration.py ships one)"]
    lines = [
        f"{key}: median {new:.4g} vs shipped {old:.4g} (difference {new - old:+.3g}, "
        f"2 MC SE {2 * se:.3g}): {'reproduced' if ok else 'NOT reproduced'}"
        for key, new, old, se, ok in rows
    ]
    verdict = all(row[-1] for row in rows)
    lines.append(
        "the shipped calibrated prior is "
        + ("reproduced within its Monte-Carlo error" if verdict else "NOT reproduced")
        + " (src/spsa_bench/model/data/calibrated_truth.json)"
    )
    return lines


def calibration_dataset(config, section, family, result, seeds, digest: str) -> xr.Dataset:
    """The calibration as one CF-1.11 dataset, dims ``tune, stat, draw, free, sample,
    summary``: its coordinates, data and attributes (the three steps below)."""
    return study_dataset(
        config,
        _calibration_data(result),
        _calibration_coords(section, family, result),
        _calibration_attrs(section, result, seeds, digest),
    )


_ONE = {"units": "1"}


def _calibration_coords(section, family, result) -> dict:
    """The per-tune coordinates (what each record simulated) and the other axes."""
    from spsa_bench.calibration import fit
    from spsa_bench.calibration.stats import STATS

    settings, one = result.settings, _ONE

    def tune_coord(name, values, long, **attrs):
        return ("tune", np.array(values, dtype=object if isinstance(values[0], str) else None),
                {"long_name": long, **attrs})  # fmt: skip

    coords = {
        "tune": tune_coord("tune", [s.name for s in settings], "corpus record"),
        "year": tune_coord("year", [s.year for s in settings], "year of the tune's commit"),
        "split": tune_coord(
            "split",
            ["fit" if f else "held-out" for f in result.fit_set],
            f"fit (before {section.split_year}) or held-out",
        ),
        "params": tune_coord("params", [s.params for s in settings], "parameters simulated"),
        "games": tune_coord("games", [s.games for s in settings], "games simulated", units="games"),
        "games_known": tune_coord(
            "games_known", [int(s.games_known) for s in settings], "1: the record's budget", **one
        ),
        "has_block": tune_coord(
            "has_block", [int(s.has_block) for s in settings], "1: the record's block", **one
        ),
        "time_control": tune_coord(
            "time_control", [s.time_control for s in settings], "noise model simulated"
        ),
        "stat": ("stat", np.array(STATS, dtype=object), {"long_name": "statistic"}),
        "draw": ("draw", np.arange(result.values.shape[0]), {"long_name": "hyper-prior draw"}),
        "free": ("free", np.array(family.keys, dtype=object), {"long_name": "free truth key"}),
        "summary": ("summary", np.array(fit.SUMMARIES, dtype=object), {"long_name": "summary"}),
        "sample": ("sample", np.arange(result.samples.shape[1]), {"long_name": "accepted draw x seed x verification test"}),
    }  # fmt: skip
    return coords


def _calibration_data(result) -> dict:
    """The observations, predictive bands and samples, and the ABC's draws."""
    from spsa_bench.calibration import fit

    low, median, high = fit.bands(result.samples)
    inside, _, _ = fit.coverage(result.observed, low, high)
    settings, one = result.settings, _ONE
    per_stat = ("tune", "stat")
    data_vars = {
        "observed": (per_stat, result.observed, {"long_name": "observed statistic"}),
        "observed_se": (
            "tune",
            np.array([s.se for s in settings]),
            {"long_name": "standard error of the observed verification Elo", "units": "Elo"},
        ),
        "band_low": (
            per_stat,
            low,
            {"long_name": "10% end of the prediction interval (order statistic at 0.1 (n + 1))"},
        ),
        "band_median": (per_stat, median, {"long_name": "median of the predictive sample"}),
        "band_high": (
            per_stat,
            high,
            {"long_name": "90% end of the prediction interval (order statistic at 0.9 (n + 1))"},
        ),
        "inside": (per_stat, inside, {"long_name": "1: observed inside the 10-90% band", **one}),
        "samples": (("tune", "sample", "stat"), result.samples, {"long_name": "predictive sample"}),
        "value": (("draw", "free"), result.values, {"long_name": "hyper-prior draw's value"}),
        "distance": ("draw", result.distance, {"long_name": "ABC distance to the fit set", **one}),
        "accepted": ("draw", result.accepted.astype(np.int8), {"long_name": "1: accepted", **one}),
        "observed_summary": ("summary", result.observed_summaries, {"long_name": "fit set"}),
        "simulated_summary": (
            ("draw", "summary"),
            result.simulated_summaries,
            {"long_name": "summary of the draw (mean over seeds)"},
        ),
    }
    return data_vars


def _calibration_attrs(section, result, seeds, digest: str) -> dict:
    """The fit's settings, its corpus version and its stated assumptions."""
    from spsa_bench.calibration.stats import STAT_LABELS, STATS

    settings = result.settings
    return {
        "title": "spsa-bench calibration: the truth prior fitted to the corpus of real tunes",
        "corpus_digest": digest,
        "stat_labels": json.dumps([STAT_LABELS[k] for k in STATS]),
        "corpus_tunes": len(settings),
        "split_year": section.split_year,
        "draws": section.draws,
        "accept": section.accept,
        "seeds": f"{min(seeds)}-{max(seeds)}" if len(seeds) else "none",
        "instances_per_draw": len(seeds),
        "verification_tests": result.verification_tests,
        "noise": section.noise,
        "batch_mode": section.batch_mode,
        "default_games": section.default_games,
        "default_time_control": section.default_time_control,
        "step_spread": section.step_spread,
        "step_sampling": section.step_sampling,
        "quoted_step_spread": (
            "step_spread" if section.quoted_step_spread is None else section.quoted_step_spread
        ),
        "param_step_spread": section.param_step_spread,
        "start_tuned_at": section.start_tuned_at or "each tune's own time control",
        "fixed_truth": json.dumps(section.fixed, sort_keys=True),
        "free_ranges": json.dumps([list(f) for f in section.free]),
        "assumption": (
            "a fit of the truth prior to the named corpus version by rejection ABC; a "
            "verification SPRT is played on the simulated gain as Fishtest plays it and kept "
            "only when it ended as the record's did (selection and optional stopping), a "
            "fixed-games test is unbiased; unknown budgets are the corpus's known ones "
            "(quantiles) or the section's number, an unknown time control the longest of "
            "the record's verification tests, else the section's default; unknown A, alpha "
            "and gamma Fishtest's defaults; the moves rest on blocks mostly inferred from "
            "TUNE()'s defaults (step_spread lets their r_end vary, quoted_step_spread where a source quotes the run's step, param_step_spread each c_end); not a measurement of "
            "reality beyond that corpus"
        ),
    }


def _scope(config: Config, section: CalibrationSection) -> Scope:
    """Only the batch mode of the configuration matters (the tunes come from the corpus)."""
    return Scope(section.batch_mode, (), (), config.num_pairs)


def _memory_mb(config: Config, section: CalibrationSection) -> float:
    """One replay of draws x seeds rows at a time (at most 124 parameters, 1.6 M pairs)."""
    rows = section.draws * config.seeds_count
    return 300 + rows * 2.0


def _runtime_min(config: Config, section: CalibrationSection) -> int:
    """Measured: 96 s for 8 draws x 2 seeds on the 45 tunes (2 shared cores); the
    replay's time grows about as the rows to the power 0.6."""
    rows = section.draws * config.seeds_count
    return 2 + int(2 * (rows / 16) ** 0.6)


STUDY = Study(
    key="calibration",
    command="calibrate",
    help="fit the truth prior to the corpus of real tunes by simulation (rejection ABC), "
    "fit before calibration.split_year and check the coverage after it",
    doc="docs/calibration.md",
    label="calibration",
    rule="calibration",
    run=run_calibration,
    report="spsa_bench.analysis.calibration:write_report",
    outputs=(
        Output("nc", "results/calibration/calibration.nc"),
        Output(
            "csv",
            "results/tables/calibration.csv",
            "calibration_table.rst",
            "Tables",
            {"table": "calibration coverage"},
        ),
        Output("md", "results/tables/calibration.md"),
        Output(
            "png",
            "results/figures/calibration.png",
            "calibration.rst",
            "Fishtest tunes",
            {"figure": "calibration coverage"},
        ),
        Output("svg", "results/figures/calibration.svg"),
    ),
    scope=_scope,
    memory_mb=_memory_mb,
    runtime_min=_runtime_min,
    comment="The calibration of the truth prior to the corpus of real tunes (issue 30).",
)
