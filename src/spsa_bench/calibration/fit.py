"""Approximate Bayesian computation by rejection, and posterior predictive coverage.

**Summaries.** For a set of tunes with statistics ``x[tune, stat]`` (NaN where a tune
has none; :mod:`spsa_bench.calibration.stats`), :func:`summaries` gives

1. the mean verification Elo over the tunes,
2. its standard deviation over the tunes,
3. the least-squares slope of the verification Elo on ``ln(parameters)`` (does the gain
   grow with the block?),
4. to 6. the mean of each move statistic over the tunes that have one (NaN when none do).

**Rejection.** Each hyper-prior draw ``j`` simulates every fit tune at every seed ``s``;
its summaries ``S_js`` are averaged over the seeds, ``S_j = mean_s S_js``. With the
observed summaries ``S_obs`` and each summary's scale ``m_k`` (1.4826 times the median
absolute deviation of ``S_jk`` over the draws; the standard deviation when that is 0;
1 when both are), the distance is ``d_j = sqrt(sum_k ((S_jk - S_obs,k) / m_k)^2)`` over
the summaries the observation has, and the ``ceil(accept * draws)`` draws of smallest
distance (ties by index) are the posterior sample.

**Model choice** (:func:`model_shares`): rejection ABC over several families at
once (Grelaud et al. 2009). The draws of every family are pooled, the scales ``m_k``
come from the pool, the closest ``ceil(accept * pooled draws)`` are accepted, and each
family's share of them estimates its posterior probability under equal prior odds. It
uses only the fit tunes' summaries, so a choice made with it is an in-sample one; the
summaries are not sufficient, so a share is a guide, not a Bayes factor (Robert et
al. 2011).

**Coverage.** For each tune and statistic, the 10-90% band of the predictive sample
(the statistic at every accepted draw and seed, :func:`bands`); a finite observation
is covered when ``low <= observed <= high``; :func:`coverage` gives each statistic's
share of covered tunes among the tunes with an observation.

**The band is a prediction interval for one new observation** (:func:`bands`): from
the ``n`` finite samples of a tune it takes the order statistics at positions
``p (n + 1)`` (1-based, linearly interpolated: numpy's ``weibull`` method). If the
observation and the ``n`` samples are exchangeable (the model is right), the
observation's rank among them is uniform on ``0..n``, so the band between the
``0.1 (n + 1)``-th and ``0.9 (n + 1)``-th order statistics holds it with probability
0.8 whatever ``n`` (Wilks 1941; for continuous statistics). The usual sample quantile
(``(n - 1) p`` positions, numpy's default) instead holds it with probability
``0.8 (n - 1) / (n + 1)``: 0.65 at ``n = 10``, 0.76 at 40, 0.78 at 80, so a right model
would miss the issue's 80% by construction, most where the SPRT selection leaves a
verification band few samples (a simulated test that did not end as the record's is
not a sample).
"""

from __future__ import annotations

import math

import numpy as np

#: The summaries, in the order :func:`summaries` returns them.
SUMMARIES = (
    "mean_verification_elo",
    "sd_verification_elo",
    "slope_elo_per_log_params",
    "mean_median_abs_move",
    "mean_share_move_ge_1",
    "mean_largest_abs_move",
)
BAND = (0.1, 0.9)


def _nanmean(x, axis):
    finite = np.isfinite(x)
    count = finite.sum(axis=axis)
    total = np.where(finite, x, 0.0).sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def summaries(x: np.ndarray, log_params: np.ndarray) -> np.ndarray:
    """The summaries (module docstring) of ``x`` ``(..., tune, stat)``, ``(..., summary)``;
    ``log_params`` ``(tune,)``."""
    elo = x[..., 0]
    finite = np.isfinite(elo)
    count = finite.sum(axis=-1)
    mean = _nanmean(elo, -1)
    dev = np.where(finite, elo - mean[..., None], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.where(count > 1, np.sqrt((dev**2).sum(-1) / np.maximum(count - 1, 1)), np.nan)
        lp = np.where(finite, log_params, np.nan)
        lp_dev = np.where(finite, lp - _nanmean(lp, -1)[..., None], 0.0)
        var = (lp_dev**2).sum(-1)
        slope = np.where((count > 1) & (var > 0), (lp_dev * dev).sum(-1) / var, np.nan)
    moves = [_nanmean(x[..., k], -1) for k in range(1, x.shape[-1])]
    return np.stack([mean, sd, slope, *moves], axis=-1)


def _scale(values: np.ndarray) -> np.ndarray:
    """1.4826 MAD per column (the sd when 0, 1 when both are 0 or undefined)."""
    med = np.nanmedian(values, axis=0)
    mad = 1.4826 * np.nanmedian(np.abs(values - med), axis=0)
    sd = np.nanstd(values, axis=0)
    out = np.where(mad > 0, mad, sd)
    return np.where(np.isfinite(out) & (out > 0), out, 1.0)


def distances(simulated: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``d_j`` (module docstring) of ``simulated`` ``(draw, summary)`` to ``observed``
    ``(summary,)``; summaries the observation lacks are left out, and a draw whose
    summary is NaN where the observation has one is infinitely far."""
    use = np.isfinite(observed)
    if not use.any():
        raise ValueError("the fit tunes have no observed statistic to fit")
    z = (simulated[:, use] - observed[use]) / _scale(simulated[:, use])
    d = np.sqrt((z**2).sum(axis=1))
    return np.where(np.isfinite(d), d, np.inf)


def accept(d: np.ndarray, share: float) -> np.ndarray:
    """Boolean mask of the ``ceil(share * draws)`` draws of smallest distance (ties by
    index)."""
    count = min(max(math.ceil(share * d.size - 1e-9), 1), d.size)
    mask = np.zeros(d.size, dtype=bool)
    mask[np.argsort(d, kind="stable")[:count]] = True
    return mask


def model_shares(simulated: list[np.ndarray], observed: np.ndarray, share: float) -> np.ndarray:
    """Each family's share of the pooled accepted draws (module docstring, "Model
    choice"): ``simulated`` one ``(draw, summary)`` array per family, ``observed``
    ``(summary,)``; ``(family,)`` shares summing to 1."""
    if not simulated:
        raise ValueError("model choice needs at least one family")
    pooled = np.concatenate(simulated, axis=0)
    family = np.repeat(np.arange(len(simulated)), [s.shape[0] for s in simulated])
    chosen = family[accept(distances(pooled, observed), share)]
    return np.bincount(chosen, minlength=len(simulated)) / chosen.size


def bands(samples: np.ndarray, levels=BAND) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(low, median, high)`` of ``samples`` ``(tune, sample, stat)`` over the sample
    axis (NaN samples ignored), each ``(tune, stat)``: the prediction interval's order
    statistics at ``p (n + 1)`` (module docstring; the median is the sample median)."""
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            q = np.nanquantile(samples, [levels[0], 0.5, levels[1]], axis=1, method="weibull")
    return q[0], q[1], q[2]


def coverage(observed: np.ndarray, low: np.ndarray, high: np.ndarray):
    """``(inside, share, count)``: ``inside`` ``(tune, stat)`` is 1.0 where the finite
    observation lies in ``[low, high]``, 0.0 where it does not, NaN where there is no
    observation or no band; ``share`` ``(stat,)`` the covered share and ``count``
    ``(stat,)`` the tunes counted."""
    known = np.isfinite(observed) & np.isfinite(low) & np.isfinite(high)
    inside = np.where(known, ((observed >= low) & (observed <= high)).astype(float), np.nan)
    count = known.sum(axis=0)
    share = _nanmean(inside, 0)
    return inside, share, count


__all__ = [
    "BAND",
    "SUMMARIES",
    "accept",
    "bands",
    "coverage",
    "distances",
    "model_shares",
    "summaries",
]
