"""Small statistics used by the benchmark tables (numpy and scipy.special only:
importing scipy.stats costs seconds per job).

- :func:`t_interval` - mean and Student-t confidence interval;
- :func:`paired_t_pvalue` - two-sided one-sample t-test of paired differences;
- :func:`wilson_interval` - a proportion and its Wilson score interval;
- :func:`holm` - Holm's step-down adjustment of p-values;
- :func:`first_hit` - pairs at which a trajectory first reaches a target;
- :func:`average_runtime` - COCO's aRT, and :func:`bootstrap_art` its interval;
- :func:`paired_t_power` and :func:`seeds_needed` - power of the paired t-test and
  the number of seeds it needs to resolve a given mean difference.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special


def _finite(values) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    return x[np.isfinite(x)]


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean and its two-sided Student-t interval.

    Non-finite values are ignored; fewer than two values give NaN bounds.
    """
    x = _finite(values)
    if x.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if x.size < 2:
        return mean, math.nan, math.nan
    half = float(special.stdtrit(x.size - 1, 0.5 + level / 2.0) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half


def wilson_interval(events, level: float = 0.95) -> tuple[float, float, float]:
    """``(share, low, high)``: the share of true entries of ``events`` (booleans) and
    its two-sided Wilson score interval (Wilson 1927), which stays inside [0, 1] and is
    not empty at a share of 0 or 1. No events give NaN."""
    x = np.asarray(events, dtype=bool).ravel()
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan
    share = float(x.mean())
    z = float(special.ndtri(0.5 + level / 2.0))
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if share == 0.0 else max(0.0, centre - half)
    high = 1.0 if share == 1.0 else min(1.0, centre + half)
    return share, low, high


def paired_t_pvalue(differences) -> float:
    """Two-sided p-value of the t-test that the mean paired difference is zero.

    All-equal differences (zero spread) give 1 when they are all zero and 0
    otherwise; fewer than two differences give NaN.
    """
    d = _finite(differences)
    if d.size < 2:
        return math.nan
    sd = float(d.std(ddof=1))
    mean = float(d.mean())
    if sd == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    t = mean / (sd / math.sqrt(d.size))
    return float(2.0 * special.stdtr(d.size - 1, -abs(t)))


def holm(pvalues) -> np.ndarray:
    """Holm-adjusted p-values (family = the finite entries; NaN stays NaN).

    Sorted ascending, ``p_(i)`` becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``;
    an adjusted value below alpha rejects at family-wise level alpha.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    mask = np.isfinite(p)
    m = int(mask.sum())
    if m == 0:
        return out
    order = np.argsort(p[mask], kind="stable")
    scaled = (m - np.arange(m)) * p[mask][order]
    adjusted = np.minimum(np.maximum.accumulate(scaled), 1.0)
    values = np.empty(m)
    values[order] = adjusted
    out[mask] = values
    return out


def first_hit(loss: np.ndarray, pairs: np.ndarray, target) -> np.ndarray:
    """Pairs at the first checkpoint where ``loss <= target`` (to rounding), ``inf`` if never.

    ``loss`` has the checkpoint axis last (``pairs`` its coordinate); ``target``
    broadcasts against ``loss[..., 0]``. Rows whose loss is NaN at the first
    checkpoint (missing runs) give NaN.
    """
    loss = np.asarray(loss, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)[..., None]
    # A relative tolerance of 1e-9 keeps a loss that equals the target up to
    # rounding (e.g. (1 - 0.8) * 5 = 0.9999999999999998) a hit.
    hit = loss <= target + 1e-9 * np.abs(target)
    reached = hit.any(axis=-1)
    first = np.argmax(hit, axis=-1)
    out = np.where(reached, np.asarray(pairs, dtype=np.float64)[first], np.inf)
    return np.where(np.isnan(loss[..., 0]), np.nan, out)


def average_runtime(hits, budget: float) -> float:
    """COCO's aRT: pairs spent over all runs / number of successful runs.

    A successful run spends its pairs to first hit, a failed one (``inf``) the
    whole ``budget``; ``inf`` when no run succeeds. NaN entries are ignored.
    """
    h = np.asarray(hits, dtype=np.float64).ravel()
    h = h[~np.isnan(h)]
    success = np.isfinite(h)
    if not success.any():
        return math.inf
    return float(np.where(success, h, budget).sum() / success.sum())


def bootstrap_art(
    hits, budget: float, *, n_boot: int = 1000, seed: int = 0, probs=(0.1, 0.9)
) -> np.ndarray:
    """Quantiles ``probs`` of aRT over ``n_boot`` resamples of the runs (with replacement).

    The generator is seeded with ``seed`` so the interval is reproducible;
    resamples without a success have aRT ``inf``. Quantiles are order
    statistics (``inverted_cdf``), so they are well defined with ``inf``.
    """
    h = np.asarray(hits, dtype=np.float64).ravel()
    h = h[~np.isnan(h)]
    if h.size == 0:
        return np.full(len(probs), np.nan)
    rng = np.random.default_rng(seed)
    sample = h[rng.integers(0, h.size, size=(n_boot, h.size))]
    success = np.isfinite(sample)
    count = success.sum(axis=1)
    spent = np.where(success, sample, budget).sum(axis=1)
    arts = np.where(count > 0, spent / np.maximum(count, 1), np.inf)
    return np.quantile(arts, probs, method="inverted_cdf")


def paired_t_power(n: int, delta: float, sd: float, alpha: float = 0.05) -> float:
    """Power of the two-sided one-sample (paired) t-test at level ``alpha`` with ``n`` differences.

    Exact under normal differences with mean ``delta`` and standard deviation
    ``sd``: the statistic follows a noncentral t with ``n - 1`` degrees of
    freedom and noncentrality ``delta * sqrt(n) / sd``.
    """
    if n < 2:
        return math.nan
    df = n - 1
    crit = float(special.stdtrit(df, 1.0 - alpha / 2.0))
    nc = abs(delta) * math.sqrt(n) / sd
    return float(1.0 - special.nctdtr(df, nc, crit) + special.nctdtr(df, nc, -crit))


def seeds_needed(differences, delta: float = 0.05, power: float = 0.8, alpha: float = 0.05) -> int:
    """Seeds a two-sided paired t-test at level ``alpha`` needs to detect a mean difference of
    ``delta`` (Elo) with probability ``power``, taking the SD of the per-seed ``differences``
    as the true one.

    Starts from the normal approximation ``((z_{1-alpha/2} + z_power) * sd / delta)^2``
    and refines it with the noncentral t (:func:`paired_t_power`): the result is the
    smallest ``n >= 2`` whose exact power reaches ``power``. A zero SD gives 2 (the
    smallest sample a t-test can use). Non-finite differences are ignored; fewer
    than two raise :class:`ValueError`.
    """
    d = _finite(differences)
    if d.size < 2:
        raise ValueError("seeds_needed needs at least two finite differences")
    if not delta > 0 or not 0 < power < 1 or not 0 < alpha < 1:
        raise ValueError("need delta > 0, 0 < power < 1 and 0 < alpha < 1")
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return 2
    z = float(special.ndtri(1.0 - alpha / 2.0) + special.ndtri(power))
    normal = max(2, math.ceil((z * sd / delta) ** 2))
    # Power grows with n; the t-test needs a few seeds more than the normal
    # approximation, so bracket upwards from it, then bisect.
    low, high = 1, normal
    while paired_t_power(high, delta, sd, alpha) < power:
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        if mid >= 2 and paired_t_power(mid, delta, sd, alpha) >= power:
            high = mid
        else:
            low = mid
    return int(high)
