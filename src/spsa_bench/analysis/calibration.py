"""Table, Markdown and figure of the calibration study (:mod:`spsa_bench.studies.calibration`).

The table has one row per (tune, statistic) the tune observes: its split (fit or
held-out), the observed value, the 10%, 50% and 90% points of the posterior predictive
sample and whether the observation lies in the 10-90% band. The Markdown adds the
posterior (the accepted draws' median and range per free key, beside the hyper-prior
range) and the coverage per statistic on the held-out tunes (and, in-sample, on the fit
tunes). The figure shows, tune by tune, the observed value against its band.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import xarray as xr

from spsa_bench.analysis.tables import markdown_table
from spsa_bench.calibration import fit


def calibration_table(ds: xr.Dataset) -> pd.DataFrame:
    """One row per (tune, statistic) with an observation (module docstring)."""
    rows = []
    for t, tune in enumerate(ds["tune"].values):
        for k, stat in enumerate(ds["stat"].values):
            observed = float(ds["observed"].values[t, k])
            if not np.isfinite(observed):
                continue
            rows.append(
                {
                    "tune": str(tune),
                    "split": str(ds["split"].values[t]),
                    "year": int(ds["year"].values[t]),
                    "params": int(ds["params"].values[t]),
                    "games": int(ds["games"].values[t]),
                    "games_known": bool(ds["games_known"].values[t]),
                    "stat": str(stat),
                    "observed": observed,
                    "low": float(ds["band_low"].values[t, k]),
                    "median": float(ds["band_median"].values[t, k]),
                    "high": float(ds["band_high"].values[t, k]),
                    "inside": bool(ds["inside"].values[t, k] == 1.0),
                }
            )
    return pd.DataFrame(rows)


#: The probability a right 10-90% band covers one tune.
NOMINAL_COVERAGE = 0.8


def binomial_cdf(k: int, n: int, p: float) -> float:
    """``P(X <= k)`` for ``X ~ Binomial(n, p)``, summed exactly: ``sum_{j <= k} C(n, j)
    p^j (1 - p)^(n - j)``."""
    return float(sum(math.comb(n, j) * p**j * (1.0 - p) ** (n - j) for j in range(k + 1)))


#: Bootstrap replicates of :func:`coverage_mc_se` and the key of its fixed stream.
MC_REPLICATES = 200
MC_KEY = 20261126


def coverage_mc_se(ds: xr.Dataset, replicates: int = MC_REPLICATES) -> pd.DataFrame:
    """Per split and statistic, ``mc_se``: the standard deviation of the coverage over
    ``replicates`` bootstrap resamples of the accepted draws (each with its
    ``instances_per_draw`` instances; the bands recomputed from the resampled predictive
    sample as the fit computes them, :func:`~spsa_bench.calibration.fit.bands`). It measures the Monte-Carlo noise of the finite
    posterior sample behind every band, not the whole of a rerun's (a rerun also draws
    other hyper-prior values): docs/calibration.md compares it with reruns at other
    entropies. One fixed stream (``SeedSequence(MC_KEY)``): the same file gives the
    same numbers."""
    samples = ds["samples"].values  # (tune, accepted draw x instance, stat)
    # a draw's samples: its instances, each with its verification tests (older files: one)
    per_draw = int(ds.attrs["instances_per_draw"]) * int(ds.attrs.get("verification_tests", 1))
    n_tunes, n_samples, n_stats = samples.shape
    draws = samples.reshape(n_tunes, n_samples // per_draw, per_draw, n_stats)
    observed = ds["observed"].values
    split = ds["split"].values.astype(str)
    rng = np.random.default_rng(np.random.SeedSequence(MC_KEY))
    picks = rng.integers(0, draws.shape[1], size=(replicates, draws.shape[1]))
    rows = []
    covered = np.empty((replicates, n_tunes, n_stats), dtype=bool)
    for r in range(replicates):  # 200 small quantile calls: analysis, not a hot path
        resampled = draws[:, picks[r]].reshape(n_tunes, -1, n_stats)
        low, _, high = fit.bands(resampled)
        covered[r] = (observed >= low) & (observed <= high)
    for name in dict.fromkeys(split):
        for k, stat in enumerate(ds["stat"].values):
            tunes = (split == name) & np.isfinite(observed[:, k])
            if tunes.any():
                share = covered[:, tunes, k].mean(axis=1)
                se = round(float(share.std()), 4)  # no 1e-16 from a constant coverage
                rows.append({"split": name, "stat": str(stat), "mc_se": se})
    return pd.DataFrame(rows)


def coverage_table(table: pd.DataFrame, ds: xr.Dataset | None = None) -> pd.DataFrame:
    """Per split and statistic: tunes counted, the share inside the 10-90% band, and
    ``p_this_low``, the probability that a right band (each tune covered with
    probability 0.8, independently) covers this few or fewer: ``P(X <= covered)``,
    ``X ~ Binomial(tunes, 0.8)``. With two dozen tunes a right band misses 80% about
    half the time; a small ``p_this_low`` says the band is too narrow or off. Given the
    dataset ``ds``, also :func:`coverage_mc_se`'s ``mc_se``."""
    grouped = table.groupby(["split", "stat"], sort=False)["inside"]
    out = grouped.agg(tunes="size", covered="sum").reset_index()
    out["coverage"] = out["covered"] / out["tunes"]
    out["p_this_low"] = [
        binomial_cdf(int(k), int(n), NOMINAL_COVERAGE)
        for k, n in zip(out["covered"], out["tunes"], strict=True)
    ]
    if ds is not None:
        out = out.merge(coverage_mc_se(ds), on=["split", "stat"], how="left")
    return out


def posterior_table(ds: xr.Dataset) -> pd.DataFrame:
    """Per free key: the hyper-prior range and the accepted draws' median, min and max."""
    accepted = ds["accepted"].values.astype(bool)
    ranges = json.loads(ds.attrs["free_ranges"])
    rows = []
    for f, key in enumerate(ds["free"].values):
        kept = ds["value"].values[accepted, f]
        low, high, log = ranges[f][1:]
        rows.append(
            {
                "key": str(key),
                "prior": f"{'log-' if log else ''}U[{low:g}, {high:g}]",
                "median": float(np.median(kept)),
                "min": float(kept.min()),
                "max": float(kept.max()),
            }
        )
    return pd.DataFrame(rows)


def calibration_markdown(table: pd.DataFrame, ds: xr.Dataset) -> str:
    """The posterior, the coverage and the per-tune table, with what they rest on."""
    a = ds.attrs
    cover = coverage_table(table, ds)
    lines = [
        "# Calibration of the truth prior to the corpus of real tunes",
        "",
        f"Corpus version **{a['corpus_digest']}** ({int(a['corpus_tunes'])} tunes), fit on the "
        f"tunes before {int(a['split_year'])}, predicted on the others. Rejection ABC: "
        f"{int(a['draws'])} hyper-prior draws, the closest {float(a['accept']):.0%} accepted, "
        f"{int(a['instances_per_draw'])} instances (seeds {a['seeds']}) per draw and tune, "
        f"batch mode {a['batch_mode']}. Fixed truth: `{a['fixed_truth']}`.",
        "",
        f"Assumption: {a['assumption']}.",
        "",
        "## Posterior (accepted draws)",
        "",
        markdown_table(
            posterior_table(ds),
            {
                "key": "free key",
                "prior": "hyper-prior",
                "median": "median",
                "min": "min",
                "max": "max",
            },
        ),  # fmt: skip
        "",
        "## Coverage of the 10-90% predictive band",
        "",
        "held-out: a validation; fit: in-sample (the same tunes the draws were chosen on). "
        "P(this low): the chance that a right band (each tune inside with probability "
        "0.8) covers this few tunes or fewer, binomial; with two dozen tunes a right band "
        "misses 80% about half the time, so a small value, not a coverage under 80%, says "
        "the band is wrong. MC s.e.: the coverage's standard deviation over bootstrap "
        "resamples of the accepted draws, the Monte-Carlo noise of this run's bands (a "
        "rerun at another entropy varies somewhat more: docs/calibration.md).",
        "",
        markdown_table(
            cover,
            {
                "split": "split",
                "stat": "statistic",
                "tunes": "tunes",
                "covered": "covered",
                "coverage": "coverage",
                "mc_se": "MC s.e.",
                "p_this_low": "P(this low)",
            },
        ),  # fmt: skip
        "",
        "## Tune by tune",
        "",
        markdown_table(
            table,
            {
                "tune": "tune",
                "split": "split",
                "params": "params",
                "games": "games sim.",
                "stat": "statistic",
                "observed": "observed",
                "low": "10%",
                "median": "50%",
                "high": "90%",
                "inside": "inside",
            },
        ),  # fmt: skip
    ]
    return "\n".join(lines) + "\n"


def calibration_figure(ds: xr.Dataset):
    """Observed value (dot; filled inside the band) against the 10-90% predictive band
    (bar, median tick), tune by tune, one panel per statistic with observations."""
    import matplotlib.pyplot as plt

    table = calibration_table(ds)
    stats = [s for s in ds["stat"].values if (table["stat"] == s).any()]
    heights = [max(2.0, 0.22 * int((table["stat"] == s).sum())) for s in stats]
    fig, axes = plt.subplots(len(stats), 1, figsize=(7.5, sum(heights) + 0.6),
                             gridspec_kw={"height_ratios": heights}, squeeze=False,
                             constrained_layout=True)  # fmt: skip
    labels = dict(zip(ds["stat"].values, json.loads(ds.attrs["stat_labels"]), strict=True))
    for ax, stat in zip(axes[:, 0], stats, strict=True):
        rows = table[table["stat"] == stat].reset_index(drop=True)
        y = np.arange(len(rows))
        colour = np.where(rows["split"] == "fit", "0.55", "tab:blue")
        ax.hlines(y, rows["low"], rows["high"], colors=colour, linewidth=3, alpha=0.6)
        ax.scatter(rows["median"], y, marker="|", color="k", s=40)
        face = np.where(rows["inside"], "tab:green", "white")
        ax.scatter(rows["observed"], y, facecolors=face, edgecolors="tab:red", zorder=3, s=22)
        ax.set_yticks(y, [f"{t} ({s})" for t, s in zip(rows["tune"], rows["split"], strict=True)],
                      fontsize=6)  # fmt: skip
        ax.invert_yaxis()
        ax.set_xlabel(str(labels[stat]))
    fig.suptitle(
        f"Observed (dot: filled = inside) vs 10-90% predictive band; grey fit, blue held-out; "
        f"corpus {ds.attrs['corpus_digest']}",
        fontsize="small",
    )
    return fig


def write_report(ds: xr.Dataset, paths) -> list:
    """The calibration's NetCDF file, CSV and Markdown table, PNG and SVG figure at
    ``paths`` (in that order), each written atomically."""
    from spsa_bench.analysis.study_files import write_study_files

    table = calibration_table(ds)
    return write_study_files(
        ds, paths, table, calibration_markdown(table, ds), calibration_figure(ds)
    )


def shipped_dataset() -> xr.Dataset:
    """The calibration the package ships (``model/data/calibration_shipped.nc``, written by
    ``ci/ship_calibration.py``; its ``calibrated_truth`` attribute is the planner's
    default prior), loaded into memory."""
    from importlib import resources

    from spsa_bench.results.cf import open_labelled

    path = resources.files("spsa_bench.model").joinpath("data", "calibration_shipped.nc")
    with resources.as_file(path) as local, open_labelled(local) as ds:
        return ds.load()


def write_shipped_report(paths) -> list:
    """:func:`write_report` of :func:`shipped_dataset` (the workflow's
    ``calibration_shipped`` rule)."""
    return write_report(shipped_dataset(), paths)
