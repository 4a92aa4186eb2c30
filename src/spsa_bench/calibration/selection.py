"""The verification test of a simulated tune, played as Fishtest plays it (issue 30).

Real tunes were committed almost only when their verification SPRT passed, and an
SPRT that stops when it passes over-states the Elo (optional stopping). This module
plays a record's verification test on simulated true gains ``G`` (logistic Elo),
row by row but vectorised over rows, and returns what the commit message would
quote: passed or not, the logistic Elo of the score at stopping and the game pairs.

**Game pairs.** Fishtest plays games in pairs (each opening with both colours) and
counts a pair by its score ``s in {0, 1/4, 1/2, 3/4, 1}`` per game (the pentanomial
``LL, LD+DL, LW+DD+WL, DW+WD, WW``). A test's *base* pair distribution ``q`` is its
observed pentanomial frequencies; a test quoting only W/L/D gets the pairs of two
independent games, ``q = (l^2, 2ld, d^2 + 2lw, 2dw, w^2)`` (an assumption: real
pairs are correlated through their opening, which this ignores).

**Pair probabilities at a true gain** (:func:`tilt`). At gain ``G`` the expected
score is ``score(G) = 1 / (1 + 10^(-G/400))``; the pair probabilities are the
exponential tilt of ``q`` to that mean, ``p_i = q_i exp(lam s_i) / Z(lam)``, with
``lam`` the root of ``sum_i p_i s_i = score(G)`` (the mean of the tilted family is
increasing in ``lam``, its derivative being the tilted variance, so the root is
unique). Among all distributions on the five scores with mean ``score(G)`` the tilt is
the one closest to ``q`` in relative entropy, ``argmin_p KL(p || q)`` (the I-projection;
Lagrange: ``log(p_i / q_i) = lam s_i - log Z``): it departs from the observed test (its
draw rate, its pair correlation) only as far as the new mean forces, assuming nothing
else - the maximum-entropy choice relative to ``q``. At ``G`` equal to the test's own
observed Elo, ``lam = 0`` and ``p = q``. (An inferred model: nothing in the corpus says
how a test's pentanomial would look at another Elo.)

**The SPRT** (:func:`sprt_llr`, Fishtest ``server/fishtest/stats/LLRcalc.py`` and
``stat_util.py``, ``update_SPRT``; fetched at commit b8eecff2 of
official-stockfish/fishtest). With ``n`` the pentanomial counts so far, zero counts
replaced by ``1e-3`` (``regularize``), ``N = sum n`` and ``w = n / N`` the empirical
distribution on the scores ``a = (0, 1/4, 1/2, 3/4, 1)``, the generalized
log-likelihood ratio is ``LLR = N sum_i w_i log(p1_i / p0_i)``, where ``p_k`` is the
maximum-likelihood distribution (on the same support) under hypothesis ``k``:

* logistic bounds ``elo0, elo1`` (``LLR_logistic``): ``p_k`` has mean
  ``s_k = score(elo_k)``; ``p_k,i = w_i / (1 + x (a_i - s_k))`` with ``x`` the root of
  the secular equation ``sum_i w_i (a_i - s_k) / (1 + x (a_i - s_k)) = 0``;
* normalized bounds ``nelo0, nelo1`` (``LLR_normalized``): ``p_k`` has t-value
  ``(mu - 1/2) / sigma = t_k`` over the pair scores, ``t_k = sqrt(2) nelo_k ln(10) /
  800`` (normalized Elo is the per-game t-value times ``800 / ln 10``, and Fishtest
  takes a game's standard deviation as ``sqrt(2)`` times the pair score's); found by Fishtest's fixed point ``p_i = w_i / (1 + x
  d_i)``, ``d_i = a_i - 1/2 - t_k sigma (1 + ((mu - a_i) / sigma)^2) / 2`` with ``mu``,
  ``sigma`` of the previous ``p`` and ``x`` the secular root for ``d``;
* BayesElo bounds (Fishtest's tests until 2019) are converted to logistic Elo as
  ``update_SPRT`` does, ``elo(P_win + P_draw / 2)`` of the BayesElo probabilities with
  the test's draw Elo, here the draw Elo of the record's whole W/L/D (Fishtest
  re-estimates it from the running counts; the historical test used the trinomial
  BayesElo likelihood, ``LLRlegacy``, which this replaces by the pentanomial GSPRT).

The test stops when ``LLR < log(beta / (1 - alpha)) + o0`` (rejected, checked first)
or ``LLR > log((1 - beta) / alpha) - o1`` (accepted), ``alpha = beta = 0.05``
(Fishtest's ``views_run.py``), evaluated every ``chunk`` pairs (Fishtest's batch,
``views_run.py``, is ``max(1, int(0.5 + 16 / tc_ratio))`` pairs: 16 at STC, 3 at LTC),
with the dynamic overshoot correction of ``update_SPRT`` (Siegmund, Corollary 8.33): ``o1 = sum(delta^2) / (2 sum(delta))`` over
the increments ``delta`` of the running maximum of the LLR (from 0), ``o0`` likewise
over the running minimum. A test still running at ``max_pairs`` is truncated and
counted as not passed; the default is Fishtest's cap of 800,000 games
(``num_games`` in ``views_run.py``), 400,000 pairs.

**Fixed-games tests** play ``games // 2`` pairs drawn the same way: an unbiased
measurement that selects nothing (``passed`` is True on every row).

``elo`` is ``elo(s) = -400 log10(1/s - 1)`` of the observed score ``s = sum_i n_i a_i /
sum_i n_i`` at stopping (unregularized counts; ``s`` clipped to ``[1e-3, 1 - 1e-3]``
as Fishtest's ``stat_util.elo``), the Elo a commit message quotes. Randomness comes
only from what the caller passes: one generator, or one counter key per row
(:func:`simulate_sprt`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from spsa_bench.corpus.records import Verification
from spsa_bench.model.rounding import splitmix_uniforms

#: A game pair's score per game, in Fishtest's pentanomial order (LL ... WW).
PAIR_SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
#: Fishtest's SPRT error rates (``views_run.py``: ``alpha=0.05, beta=0.05``).
ALPHA = BETA = 0.05
#: Fishtest's cap on an SPRT's games (``views_run.py``: ``num_games = 800000``), in pairs.
DEFAULT_MAX_PAIRS = 400_000
#: Pairs between two evaluations of the LLR (Fishtest's STC batch: 32 games).
DEFAULT_CHUNK = 16
#: Fishtest's regularization of a zero count (``LLRcalc.regularize``).
EPSILON = 1e-3
_NELO_PER_NT = 800.0 / math.log(10.0)


class SprtOutcome(NamedTuple):
    """One simulated verification test per row: ``passed`` (bool), ``elo`` (the logistic
    Elo of the score at stopping) and ``pairs`` (game pairs played)."""

    passed: np.ndarray
    elo: np.ndarray
    pairs: np.ndarray


def score_of_elo(elo):
    """``score(G) = 1 / (1 + 10^(-G/400))``, elementwise."""
    return 1.0 / (1.0 + 10.0 ** (-np.asarray(elo, dtype=float) / 400.0))


def elo_of_score(score):
    """``elo(s) = -400 log10(1/s - 1)`` with ``s`` clipped to ``[1e-3, 1 - 1e-3]``."""
    s = np.clip(np.asarray(score, dtype=float), 1e-3, 1.0 - 1e-3)
    return -400.0 * np.log10(1.0 / s - 1.0)


def base_frequencies(test: Verification) -> np.ndarray:
    """The test's pair distribution ``q`` (5,): its pentanomial frequencies, else the
    pairs of two independent games of its W/L/D (module docstring)."""
    if test.ptnml is not None and sum(test.ptnml) > 0:
        q = np.asarray(test.ptnml, dtype=float)
        return q / q.sum()
    if None not in (test.wins, test.losses, test.draws) and test.wins + test.losses + test.draws:
        n = test.wins + test.losses + test.draws
        w, l, d = test.wins / n, test.losses / n, test.draws / n
        return np.array([l * l, 2 * l * d, d * d + 2 * l * w, 2 * d * w, w * w])
    raise ValueError(
        f"verification test {test.label!r}: no pentanomial or W/L/D counts to simulate from"
    )


def tilt(q: np.ndarray, target) -> np.ndarray:
    """The exponential tilt of ``q`` (5,) to mean pair score ``target`` (row,):
    ``p_i = q_i exp(lam s_i) / Z`` with ``sum_i p_i s_i = target`` (module docstring),
    shape ``(row, 5)``. Newton's method on ``lam`` (the mean's derivative is the tilted
    variance) kept inside a bisection bracket. ``target`` must lie strictly between the
    smallest and largest score ``q`` gives weight to."""
    q = np.asarray(q, dtype=float)
    target = np.atleast_1d(np.asarray(target, dtype=float))
    support = PAIR_SCORES[q > 0]
    if np.any(target <= support.min()) or np.any(target >= support.max()):
        raise ValueError("tilt: a target score lies outside the support of the pair outcomes")
    with np.errstate(divide="ignore"):
        logq = np.log(q)
    lo = np.full(target.shape, -1e4)
    hi = np.full(target.shape, 1e4)
    lam = np.zeros(target.shape)
    for _ in range(200):
        z = logq + lam[:, None] * PAIR_SCORES
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        mean = p @ PAIR_SCORES
        var = p @ PAIR_SCORES**2 - mean**2
        f = mean - target
        lo = np.where(f < 0, lam, lo)
        hi = np.where(f >= 0, lam, hi)
        step = np.where(var > 0, f / np.maximum(var, 1e-300), 0.0)
        done = np.abs(step) <= 1e-13 * (1.0 + np.abs(lam))
        new = lam - step
        lam = np.where(done | ((new > lo) & (new < hi)), new, 0.5 * (lo + hi))
        if done.all():
            break
    z = logq + lam[:, None] * PAIR_SCORES
    z -= z.max(axis=1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=1, keepdims=True)


def pair_probabilities(test: Verification, gain) -> np.ndarray:
    """The pair probabilities ``(row, 5)`` of ``test`` at true gains ``gain`` (row,)."""
    return tilt(base_frequencies(test), score_of_elo(gain))


def _draw_elo(test: Verification) -> float:
    """Fishtest's ``draw_elo_calc`` of the test's W/L/D (zeros regularized)."""
    if None in (test.wins, test.losses, test.draws):
        raise ValueError(
            f"verification test {test.label!r}: BayesElo bounds need W/L/D for the draw Elo"
        )
    counts = [c if c else EPSILON for c in (test.losses, test.draws, test.wins)]
    total = sum(counts)
    p_loss, p_win = counts[0] / total, counts[2] / total
    return 200.0 * math.log10((1 - p_loss) / p_loss * (1 - p_win) / p_win)


def _bayeselo_to_elo(belo: float, drawelo: float) -> float:
    p_win = 1.0 / (1.0 + 10.0 ** ((-belo + drawelo) / 400.0))
    p_loss = 1.0 / (1.0 + 10.0 ** ((belo + drawelo) / 400.0))
    return float(elo_of_score(p_win + 0.5 * (1.0 - p_win - p_loss)))


def sprt_bounds(test: Verification) -> tuple[str, float, float]:
    """``(model, h0, h1)`` of an SPRT test: ``("logistic", elo0, elo1)`` in logistic Elo
    (BayesElo bounds converted with the test's draw Elo) or ``("normalized", t0, t1)``,
    the pair t-values ``sqrt(2) nelo ln(10) / 800``."""
    if test.test != "sprt" or test.sprt is None:
        raise ValueError(f"verification test {test.label!r}: not an SPRT with bounds")
    elo0, elo1 = (float(b) for b in test.sprt)
    if test.sprt_scale == "logistic":
        return "logistic", elo0, elo1
    if test.sprt_scale == "bayeselo":
        drawelo = _draw_elo(test)
        return "logistic", _bayeselo_to_elo(elo0, drawelo), _bayeselo_to_elo(elo1, drawelo)
    if test.sprt_scale == "normalized":
        return "normalized", *(math.sqrt(2.0) * b / _NELO_PER_NT for b in (elo0, elo1))
    raise ValueError(
        f"verification test {test.label!r}: sprt_scale {test.sprt_scale!r} is not one of "
        "bayeselo, logistic, normalized"
    )


def logistic_bounds(test: Verification) -> tuple[float, float]:
    """The true gains (logistic Elo) at which the test's H0 and H1 hold for the pair
    distributions of :func:`pair_probabilities`: the bounds themselves for logistic
    (and converted BayesElo) bounds; for normalized bounds the ``G`` solving
    ``(score(G) - 1/2) / sigma(G) = t_k``, ``sigma(G)`` the pair-score standard
    deviation of the tilt at ``G`` (bisection on ``[-400, 400]``)."""
    model, h0, h1 = sprt_bounds(test)
    if model == "logistic":
        return h0, h1
    q = base_frequencies(test)
    t = np.array([h0, h1])
    lo, hi = np.full(2, -400.0), np.full(2, 400.0)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        p = tilt(q, score_of_elo(mid))
        mean = p @ PAIR_SCORES
        sd = np.sqrt(p @ PAIR_SCORES**2 - mean**2)
        above = (mean - 0.5) / sd > t
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    g = 0.5 * (lo + hi)
    return float(g[0]), float(g[1])


def _secular(w: np.ndarray, d: np.ndarray, x0: np.ndarray | None = None) -> np.ndarray:
    """The root ``x`` (M,) of ``sum_i w_i d_i / (1 + x d_i) = 0`` on
    ``(-1/max d, -1/min d)`` (Fishtest's ``secular``), for ``w, d`` laid out (5, M),
    each column's ``d`` straddling zero. The left side decreases strictly in ``x`` (its
    derivative is ``-sum w d^2 / (1 + x d)^2``), so Newton's method inside a shrinking
    bisection bracket converges; it starts from ``x0`` if given, else from the
    linearisation ``sum w d / sum w d^2``, and stops when every Newton step is below
    ``1e-13 (1 + |x|)``."""
    lo = -1.0 / d.max(axis=0)
    hi = -1.0 / d.min(axis=0)
    if x0 is None:
        wd = w * d
        x = wd.sum(axis=0) / (wd * d).sum(axis=0)
    else:
        x = x0
    x = np.where((x > lo) & (x < hi), x, 0.5 * (lo + hi))
    for _ in range(100):
        r = d / (1.0 + x * d)
        wr = w * r
        f = wr.sum(axis=0)
        fp = -(wr * r).sum(axis=0)
        lo = np.where(f > 0, x, lo)
        hi = np.where(f > 0, hi, x)
        step = f / fp
        done = np.abs(step) <= 1e-13 * (1.0 + np.abs(x))
        new = x - step
        x = np.where(done | ((new > lo) & (new < hi)), new, 0.5 * (lo + hi))
        if done.all():
            break
    return x


def _mle_t(w: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Fishtest's ``MLE_t_value`` (ref 1/2) for every column of ``w`` (5, M): the fixed
    point of the module docstring, started from ``w`` (Fishtest starts from the uniform
    distribution; the fixed point is the same), iterated to ``max |change| < 1e-11``.
    Returns ``(x, d)`` of the last step, the MLE being ``w / (1 + x d)``."""
    scores = PAIR_SCORES[:, None]
    p, x = w, None
    for _ in range(200):
        mu = (p * scores).sum(axis=0)
        sigma = np.sqrt((p * scores * scores).sum(axis=0) - mu * mu)
        dev = (mu - scores) / sigma
        d = scores - 0.5 - t * sigma * (1.0 + dev * dev) / 2.0
        x = _secular(w, d, x)
        new = w / (1.0 + x * d)
        done = np.max(np.abs(new - p)) < 1e-11
        p = new
        if done:
            break
    return x, d


def sprt_llr(counts: np.ndarray, model: str, h0: float, h1: float) -> np.ndarray:
    """Fishtest's generalized LLR (module docstring) of pentanomial ``counts`` (..., 5),
    shape ``counts.shape[:-1]``; ``model, h0, h1`` as :func:`sprt_bounds` returns. With
    ``p_k = w / (1 + x_k d_k)``, ``LLR = N sum_i w_i (log(1 + x_0 d_0i) - log(1 + x_1 d_1i))``."""
    counts = np.asarray(counts, dtype=float)
    shape = counts.shape[:-1]
    n = counts.reshape(-1, 5).T
    n = np.where(n == 0, EPSILON, n)
    total = n.sum(axis=0)
    w = n / total
    if model == "logistic":
        solved = []
        for s in score_of_elo(np.array([h0, h1])):
            d = np.broadcast_to((PAIR_SCORES - s)[:, None], w.shape)
            solved.append((_secular(w, d), d))
    elif model == "normalized":
        solved = [_mle_t(w, h0), _mle_t(w, h1)]
    else:
        raise ValueError(f"unknown SPRT model {model!r}")
    (x0, d0), (x1, d1) = solved
    jumps = np.log1p(x0 * d0) - np.log1p(x1 * d1)
    return (total * (w * jumps).sum(axis=0)).reshape(shape)


def run_sprt(
    draw: Callable[[np.ndarray, int, int], np.ndarray],
    rows: int,
    model: str,
    h0: float,
    h1: float,
    *,
    chunk: int,
    max_chunks: int,
    alpha: float = ALPHA,
    beta: float = BETA,
    overshoot: bool = True,
    states_per_block: int = 1 << 16,
) -> SprtOutcome:
    """Play the SPRT on ``rows`` rows from the counts ``draw(active, first, k)`` returns:
    the pentanomial counts ``(k, active.size, 5)`` of chunks ``first .. first + k - 1``
    of the rows ``active`` (each chunk ``chunk`` pairs). Vectorised over rows: chunks
    are taken in blocks of about ``states_per_block / active rows``, the LLR of every
    cumulative state of a block computed at once, the overshoot terms from running
    extrema (``np.minimum.accumulate``), and a row leaves the active set at its first
    stopping chunk; only the loop over blocks is in Python. A row that has not stopped
    after ``max_chunks`` chunks is truncated (not passed)."""
    lower = math.log(beta / (1.0 - alpha))
    upper = math.log((1.0 - beta) / alpha)
    counts = np.zeros((rows, 5), dtype=np.int64)
    ref0, m0, sq0 = np.zeros(rows), np.zeros(rows), np.zeros(rows)
    ref1, m1, sq1 = np.zeros(rows), np.zeros(rows), np.zeros(rows)
    passed = np.zeros(rows, dtype=bool)
    stop_counts = np.zeros((rows, 5), dtype=np.int64)
    stop_chunks = np.full(rows, max_chunks, dtype=np.int64)
    active = np.arange(rows)
    first = 0
    while active.size and first < max_chunks:
        k = int(min(max_chunks - first, max(1, states_per_block // active.size), 4096))
        new = np.asarray(draw(active, first, k), dtype=np.int64)
        cum = counts[active][None] + np.cumsum(new, axis=0)  # (k, n, 5)
        llr = sprt_llr(cum, model, h0, h1)  # (k, n)
        if overshoot:
            low = np.minimum.accumulate(np.concatenate([ref0[active][None], llr]), axis=0)
            high = np.maximum.accumulate(np.concatenate([ref1[active][None], llr]), axis=0)
            inc0, inc1 = np.diff(low, axis=0), np.diff(high, axis=0)
            m0c = m0[active] + np.cumsum(inc0, axis=0)
            sq0c = sq0[active] + np.cumsum(inc0 * inc0, axis=0)
            m1c = m1[active] + np.cumsum(inc1, axis=0)
            sq1c = sq1[active] + np.cumsum(inc1 * inc1, axis=0)
            with np.errstate(divide="ignore", invalid="ignore"):
                o0 = np.where(m0c != 0, -sq0c / m0c / 2.0, 0.0)
                o1 = np.where(m1c != 0, sq1c / m1c / 2.0, 0.0)
        else:
            o0 = o1 = 0.0
        rejected = llr < lower + o0
        accepted = ~rejected & (llr > upper - o1)
        stop = rejected | accepted
        stopped = stop.any(axis=0)
        at = np.argmax(stop, axis=0)
        done, keep = active[stopped], active[~stopped]
        cols = np.flatnonzero(stopped)
        passed[done] = accepted[at[cols], cols]
        stop_counts[done] = cum[at[cols], cols]
        stop_chunks[done] = first + at[cols] + 1
        cols = np.flatnonzero(~stopped)
        counts[keep] = cum[-1, cols]
        if overshoot:
            ref0[keep], m0[keep], sq0[keep] = low[-1, cols], m0c[-1, cols], sq0c[-1, cols]
            ref1[keep], m1[keep], sq1[keep] = high[-1, cols], m1c[-1, cols], sq1c[-1, cols]
        active = keep
        first += k
    stop_counts[active] = counts[active]
    pairs = stop_counts.sum(axis=1)
    score = (stop_counts @ PAIR_SCORES) / np.maximum(pairs, 1)
    return SprtOutcome(passed, elo_of_score(score), stop_chunks * chunk)


def row_keys(entropy: int, seeds, *spawn_prefix: int) -> np.ndarray:
    """One 64-bit counter key per seed, ``(seed,)`` uint64: the first word of
    ``SeedSequence(entropy, spawn_key=(*spawn_prefix, seed))`` (stream setup: one key per
    seed, a loop over seeds outside the hot path). Tile the result over prior draws to
    give every draw of a seed the same pair uniforms (common random numbers)."""
    return np.array(
        [
            np.random.SeedSequence(
                int(entropy), spawn_key=(*(int(k) for k in spawn_prefix), int(seed))
            ).generate_state(1, np.uint64)[0]
            for seed in seeds
        ],
        dtype=np.uint64,
    )


def keyed_pair_counts(
    keys: np.ndarray, probs: np.ndarray, start: int, pairs: int, k: int = 1
) -> np.ndarray:
    """Pentanomial counts ``(k, row, 5)`` of ``k`` consecutive chunks of ``pairs`` pairs
    from pair ``start`` on, each row from its own counter stream: pair ``j`` of row ``r``
    has the uniform ``u`` at position ``j`` of the SplitMix64 stream keyed ``keys[r]``
    (:func:`spsa_bench.model.rounding.splitmix_uniforms`) and the outcome
    ``#{i < 4 : u >= F_r(i)}``, ``F_r`` the cumulative pair probabilities ``probs[r]``
    (inverse CDF). A row's pairs therefore depend on its key alone, never on the other
    rows or on when it stops; and since a tilt to a higher mean lowers every ``F(i)``
    (monotone likelihood ratio), a row's outcomes at a higher gain are pair by pair at
    least as good as at a lower one with the same key."""
    positions = np.arange(start, start + k * pairs, dtype=np.uint64).reshape(k, pairs)
    u = splitmix_uniforms(np.asarray(keys, dtype=np.uint64), positions)  # (row, k, pairs)
    cdf = np.cumsum(probs, axis=1)[:, :4]
    below = np.stack(
        [(u < cdf[:, i, None, None]).sum(axis=2) for i in range(4)], axis=-1
    )  # (row, k, 4): pairs with outcome <= i
    counts = np.diff(below, prepend=0, append=pairs, axis=-1)
    return counts.transpose(1, 0, 2)


def simulate_sprt(
    gain,
    test: Verification,
    rng: np.random.Generator | np.random.SeedSequence | None = None,
    *,
    keys: np.ndarray | None = None,
    max_pairs: int | None = None,
    chunk: int = DEFAULT_CHUNK,
    alpha: float = ALPHA,
    beta: float = BETA,
    overshoot: bool = True,
) -> SprtOutcome:
    """Play ``test`` (a record's verification) at the true gains ``gain`` (row,) in
    logistic Elo (module docstring): an SPRT stops at its bounds (or is truncated at
    ``max_pairs``, rounded up to whole chunks, default :data:`DEFAULT_MAX_PAIRS`); a
    fixed-games test plays ``games // 2`` pairs and passes on every row.

    The randomness comes from exactly one of: ``rng``, one generator for all rows (each
    chunk's counts ``rng.multinomial(chunk, p_row)`` of the rows still running, so a
    row's draws depend on the others), or ``keys`` (row,) uint64, one counter stream
    per row (:func:`keyed_pair_counts`, keys from :func:`row_keys`), so a row's result
    depends on its key and gain alone."""
    gain = np.atleast_1d(np.asarray(gain, dtype=float))
    rows = gain.shape[0]
    if (rng is None) == (keys is None):
        raise ValueError("simulate_sprt: pass exactly one of rng and keys")
    if keys is not None:
        keys = np.asarray(keys, dtype=np.uint64)
        if keys.shape != (rows,):
            raise ValueError(f"simulate_sprt: keys has shape {keys.shape}, gain ({rows},)")
    elif not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(rng)
    probs = pair_probabilities(test, gain)
    if test.test == "fixed":
        games = test.games
        if games is None:
            games = (
                2 * sum(test.ptnml)
                if test.ptnml is not None
                else test.wins + test.losses + test.draws
            )
        n = games // 2
        if keys is None:
            counts = rng.multinomial(n, probs)
        else:
            counts = np.zeros((rows, 5), dtype=np.int64)
            step = max(1, (1 << 22) // max(rows, 1))
            for first in range(0, n, step):  # blocks of pairs, bounded memory
                counts += keyed_pair_counts(keys, probs, first, min(step, n - first))[0]
        score = counts @ PAIR_SCORES / max(n, 1)
        return SprtOutcome(np.ones(rows, dtype=bool), elo_of_score(score), np.full(rows, n))
    if chunk < 1:
        raise ValueError(f"chunk must be a positive number of pairs, got {chunk}")
    model, h0, h1 = sprt_bounds(test)
    cap = DEFAULT_MAX_PAIRS if max_pairs is None else int(max_pairs)
    if cap < 1:
        raise ValueError(f"max_pairs must be positive, got {max_pairs}")
    max_chunks = -(-cap // chunk)

    def draw(active: np.ndarray, first: int, k: int) -> np.ndarray:
        if keys is None:
            return rng.multinomial(chunk, probs[active], size=(k, active.size))
        return keyed_pair_counts(keys[active], probs[active], first * chunk, chunk, k)

    return run_sprt(
        draw, rows, model, h0, h1, chunk=chunk, max_chunks=max_chunks,
        alpha=alpha, beta=beta, overshoot=overshoot,
    )  # fmt: skip


__all__ = [
    "ALPHA",
    "BETA",
    "DEFAULT_CHUNK",
    "DEFAULT_MAX_PAIRS",
    "PAIR_SCORES",
    "SprtOutcome",
    "base_frequencies",
    "elo_of_score",
    "logistic_bounds",
    "pair_probabilities",
    "keyed_pair_counts",
    "row_keys",
    "run_sprt",
    "score_of_elo",
    "simulate_sprt",
    "sprt_bounds",
    "sprt_llr",
    "tilt",
]
