"""The calibrated prior a calibration yields, and its comparison with the shipped one.

:func:`calibrated_record` turns a :class:`~spsa_bench.calibration.run.Calibration` into
the record :mod:`spsa_bench.model.calibrated` ships: the fixed truth with every free
number at the median ``m`` of its accepted draws, each with its Monte-Carlo standard
error ``se = 1.2533 s / sqrt(n)`` (``s`` the sample standard deviation of the ``n``
accepted values; ``sqrt(pi / 2) = 1.2533`` is the ratio of the median's to the mean's
large-sample standard error for a normal sample, an approximation for the accepted
draws), and what the fit saw. :func:`compare` checks a new calibration against the
shipped record: free number ``k`` is reproduced when ``|m_new - m_shipped| <= 2
sqrt(se_new^2 + se_shipped^2)`` (two standard errors of the difference of two
independent medians; a rerun with the shipped configuration and entropy reproduces it
exactly, difference 0).
"""

from __future__ import annotations

import math

import numpy as np

#: ``sqrt(pi / 2)``: the median's large-sample standard error over the mean's (normal).
MEDIAN_SE_FACTOR = math.sqrt(math.pi / 2.0)


def posterior(values: np.ndarray, accepted: np.ndarray, keys) -> dict:
    """``{key: {median, mc_se, min, max, accepted}}`` of the accepted draws
    ``values[accepted]`` ``(draw, free)`` (module docstring)."""
    kept = np.asarray(values)[np.asarray(accepted, dtype=bool)]
    out = {}
    for i, key in enumerate(keys):
        column = kept[:, i]
        sd = float(np.std(column, ddof=1)) if column.size > 1 else math.nan
        out[key] = {
            "median": float(np.median(column)),
            "mc_se": MEDIAN_SE_FACTOR * sd / math.sqrt(column.size)
            if column.size > 1
            else math.nan,
            "min": float(column.min()),
            "max": float(column.max()),
            "accepted": int(column.size),
        }
    return out


def calibrated_record(result, family, *, digest: str, fitted_on: dict) -> dict:
    """The record :mod:`spsa_bench.model.calibrated` reads (module docstring)."""
    summary = posterior(result.values, result.accepted, family.keys)
    truth = family.truth([summary[k]["median"] for k in family.keys])
    fit_names = [s.name for s, f in zip(result.settings, result.fit_set, strict=True) if f]
    statement = (
        f"truth prior calibrated to {len(fit_names)} real Stockfish tunes dated before "
        f"{fitted_on['split_year']} (corpus {digest}; docs/calibration.md): free numbers "
        + ", ".join(f"{k} = {summary[k]['median']:.3g}" for k in family.keys)
        + " at the median of the accepted draws; a fit by simulation, not a measurement"
    )
    kept = np.asarray(result.values)[np.asarray(result.accepted, dtype=bool)]
    return {
        "truth": truth,
        "posterior": summary,
        # the accepted draws themselves: the planner draws its instances from them
        "posterior_sample": [
            {key: float(row[i]) for i, key in enumerate(family.keys)} for row in kept
        ],
        "fitted_on": {**fitted_on, "corpus_digest": digest, "fit_tunes": fit_names},
        "statement": statement,
    }


def compare(new: dict, shipped: dict) -> list[tuple[str, float, float, float, bool]]:
    """``(key, new median, shipped median, the difference's standard error,
    reproduced)`` per free number of ``shipped`` (module docstring); a key the new
    calibration does not have is not reproduced."""
    rows = []
    for key, old in shipped["posterior"].items():
        now = new["posterior"].get(key)
        if now is None:
            rows.append((key, math.nan, old["median"], math.nan, False))
            continue
        se = math.sqrt(np.nan_to_num(now["mc_se"]) ** 2 + np.nan_to_num(old["mc_se"]) ** 2)
        rows.append((key, now["median"], old["median"], se,
                     abs(now["median"] - old["median"]) <= 2.0 * se))  # fmt: skip
    return rows


__all__ = ["MEDIAN_SE_FACTOR", "calibrated_record", "compare", "posterior"]
