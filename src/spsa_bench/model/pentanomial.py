"""Pentanomial match-noise model of a game pair (vectorized).

With ``a = 100`` and ``b = 22``, a game at value ``v`` with shift ``s`` has

    win(v, s)  = 1 / (1 + exp((a + s - v) / b))
    loss(v, s) = 1 - 1 / (1 + exp((-a + s - v) / b))
    draw(v, s) = 1 - win - loss

A game pair plays ``v = +a`` and ``v = -a``; with ``w+ = win(+a, s)``,
``w- = win(-a, s)`` and likewise for draws and losses, the pair outcomes are

    LL = l+ l-,   DL = l+ d- + d+ l-,   DD = d+ d- + w+ l- + l+ w-,
    WD = w+ d- + d+ w-,   WW = w+ w-,

worth -2, -1, 0, +1, +2 net wins to the hero. The shift ``s`` solves
``EloFromScore((score(+a, s) + score(-a, s)) / 2) = opponent_elo`` with
``score = win + draw / 2`` and ``EloFromScore(p) = 400 log10((1 - p) / p)``;
``opponent_elo = Elo(opponent) - Elo(hero)`` is clipped to +-599 first, so a
negative opponent Elo means the hero is stronger and scores above 1/2.

Computation. With ``t = exp(s / b)`` and ``c = exp(2a / b)`` every game
probability is rational in ``t``:

    w+ = 1 / (1 + t),  l- = t / (1 + t),  w- = 1 / (1 + c t),  l+ = t / (t + c),
    d+ = (c - 1) t / ((1 + t)(t + c)),     d- = (c - 1) t / ((1 + t)(1 + c t)),

(the draws are positive by construction, so no clamping is needed) and the
score equation reads ``g(t) = w+ - l- + w- - l+ = 4p - 2 = -2 tanh(x ln10 / 800)``
for ``x = opponent_elo``, with ``g`` strictly decreasing. At import, ``u = log t``
is found by vectorized bisection on a grid of ``x`` (step 1/2 Elo) and
tabulated as a piecewise cubic Hermite interpolant (with the exact slope
``du/dx``). A call evaluates that interpolant (error below 2e-7 in ``u``) and
polishes it with one Newton step on ``g(t) = q``, which leaves an error of
order 1e-14 in ``u`` (the probabilities move by at most ~0.5 per unit ``u``).

Sampling. ``thresholds`` are the cumulative probabilities ``t1..t4`` of LL, LL+DL, ...;
a pair drawn with uniform ``u`` takes the outcome value ``#{j : u >= t_j} - 2`` (inverse
CDF: ``u`` in ``[0, t1)`` is LL, ``[t1, t2)`` DL, and so on), and ``u < 0`` marks padding.
With common uniforms a stronger hero (lower opponent Elo, so lower thresholds) never gets a
worse outcome for any pair.
"""

from __future__ import annotations

import functools
import math

import numpy as np

OUTCOMES: tuple[str, ...] = ("LL", "DL", "DD", "WD", "WW")
#: Net wins of the hero in each pair outcome, in the order of ``OUTCOMES``.
OUTCOME_VALUES = np.array([-2, -1, 0, 1, 2], dtype=np.int64)
#: Per-game score of the hero in each pair outcome, in the order of ``OUTCOMES``.
OUTCOME_SCORES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
MAX_OPPONENT_ELO = 599.0

_A = 100.0
_B = 22.0
_C = math.exp(2.0 * _A / _B)  # c = exp(2a / b)
_C1 = _C - 1.0
_HALF_C = 0.5 * _C
_K = math.log(10.0) / 800.0  # q = 4p - 2 = -2 tanh(K x)

# Grid of the interpolation table: x_j = -599 + j * _STEP, j = 0 .. _NCELLS.
_STEP = 0.5
_NCELLS = int(round(2.0 * MAX_OPPONENT_ELO / _STEP))
_INV_STEP = 1.0 / _STEP
_OFFSET = MAX_OPPONENT_ELO / _STEP


def _score_gap(t: np.ndarray) -> np.ndarray:
    """``g(t) = w+ - l- + w- - l+ = 4 p - 2`` at ``t = exp(s / b)`` (``p``: mean score)."""
    w_p = 1.0 / (1.0 + t)
    return w_p - t * w_p + 1.0 / (1.0 + _C * t) - t / (t + _C)


def _bisect_log_shift(x: np.ndarray, iterations: int = 80) -> np.ndarray:
    """``u = s / b`` solving the score equation for each Elo in ``x``, by vectorized bisection.

    Bisection on ``s`` in ``[-600, 600]``, run until the interval stops shrinking in floating
    point (``iterations`` halvings of the initial width ``1200 / b`` are ample).
    """
    q = -2.0 * np.tanh(_K * x)
    lo = np.full(x.shape, -600.0 / _B)
    hi = np.full(x.shape, 600.0 / _B)
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        above = _score_gap(np.exp(mid)) > q  # g decreases in u: the root lies above mid
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    return 0.5 * (lo + hi)


def _build_table() -> np.ndarray:
    """Cubic Hermite coefficients of ``u(x)`` per grid cell, rows ``(c3, c2, c1, c0)``.

    On cell ``j`` with local coordinate ``f = (x - x_j) / step`` in ``[0, 1)``,
    ``u = ((c3 f + c2) f + c1) f + c0`` matches ``u`` and ``du/dx`` (exact, from the implicit
    function theorem) at both knots.
    """
    x = -MAX_OPPONENT_ELO + _STEP * np.arange(_NCELLS + 1)
    u = _bisect_log_shift(x)
    t = np.exp(u)
    w_p = 1.0 / (1.0 + t)
    w_m = 1.0 / (1.0 + _C * t)
    d = 1.0 / (t + _C)
    dg_du = -t * (2.0 * w_p * w_p + _C * (w_m * w_m + d * d))
    dq_dx = -2.0 * _K * (1.0 - np.tanh(_K * x) ** 2)
    m = _STEP * dq_dx / dg_du  # du per cell
    u0, u1, m0, m1 = u[:-1], u[1:], m[:-1], m[1:]
    coefs = np.array([2.0 * (u0 - u1) + m0 + m1, 3.0 * (u1 - u0) - 2.0 * m0 - m1, m0, u0])
    # A trailing cell starting at the last knot serves x == +599 exactly (f == 0).
    last = np.array([[0.0], [0.0], [m[-1]], [u[-1]]])
    return np.ascontiguousarray(np.concatenate([coefs, last], axis=1).T)


@functools.cache
def _table() -> np.ndarray:
    """:func:`_build_table`, built on first use (a run of a calibrated model never needs it)."""
    return _build_table()  # shape (_NCELLS + 1, 4)


# Operands of the hot path, as arrays (cheaper for numpy than Python floats). Only elementwise
# ufuncs are used on the per-seed values (no BLAS, whose kernels round differently depending on
# the length and alignment of the batch), so a seed's probabilities are bit-for-bit the same
# whichever seeds are computed beside it.
_ONE = np.array(1.0)
_HALF = np.array(0.5)
_C_A = np.array(_C)
_HALF_C_A = np.array(_HALF_C)
_C1_A = np.array(_C1)
_INV_STEP_A = np.array(_INV_STEP)
_OFFSET_A = np.array(_OFFSET)
_K_A = np.array(_K)


def _reciprocals(t: np.ndarray, rec: np.ndarray) -> np.ndarray:
    """Fill the rows of ``rec`` (shape ``(3, n)``) with ``w+``, ``w-``, ``D`` at ``t``.

    ``w+ = 1 / (1 + t)``, ``w- = 1 / (1 + c t)``, ``D = 1 / (t + c)``; returns ``rec``.
    """
    w_p, w_m, d = rec
    np.add(t, _ONE, out=w_p)
    np.multiply(t, _C_A, out=w_m)
    w_m += _ONE
    np.add(t, _C_A, out=d)
    np.divide(_ONE, rec, out=rec)
    return rec


def _solve_t(x: np.ndarray, rec: np.ndarray) -> np.ndarray:
    """``t = exp(s / b)`` solving the score equation at each clipped opponent Elo in ``x``.

    Evaluates the Hermite table and takes one Newton step on ``g(t) = q``; ``rec`` is scratch
    space of shape ``(3, len(x))``. Returns a new array.
    """
    y = np.multiply(x, _INV_STEP_A)
    y += _OFFSET_A
    i = y.astype(np.intp)
    f = np.subtract(y, i, out=y)  # local coordinate in the cell
    c3, c2, c1, c0 = _table().take(i, axis=0).T
    t = np.multiply(c3, f)  # Horner: u = ((c3 f + c2) f + c1) f + c0, then t = exp(u)
    t += c2
    t *= f
    t += c1
    t *= f
    t += c0
    np.exp(t, out=t)
    # Newton step on g(t) = q = -2 tanh(K x), halved: with (w+, w-, D) at t,
    #   r = (g - q) / 2 = tanh(K x) - 1 + w+ + w- / 2 + (c/2) D    (l- = 1 - w+, l+ = 1 - c D),
    #   -g'(t) / 2 = w+^2 + (c/2) (w-^2 + D^2)  (> 0),   t <- t + r / (-g'(t) / 2).
    w_p, w_m, d = _reciprocals(t, rec)
    r = np.multiply(x, _K_A)
    np.tanh(r, out=r)
    r -= _ONE
    r += w_p
    scratch = np.multiply(w_m, _HALF, out=f)
    r += scratch
    np.multiply(d, _HALF_C_A, out=scratch)
    r += scratch
    np.multiply(rec, rec, out=rec)
    w_m += d
    w_m *= _HALF_C_A
    w_m += w_p
    r /= w_m
    t += r
    return t


def clipped_elo(opponent_elo) -> tuple[np.ndarray, tuple[int, ...]]:
    """The opponent Elo as a new flat float64 array clipped to +-599, and its original shape."""
    x = np.asarray(opponent_elo, dtype=np.float64)
    flat = np.maximum(x.reshape(-1), -MAX_OPPONENT_ELO)  # a new array (never aliases the input)
    np.minimum(flat, MAX_OPPONENT_ELO, out=flat)
    if np.isnan(flat).any():
        raise ValueError("opponent Elo must not be NaN")
    return flat, x.shape


def shift(opponent_elo) -> np.ndarray:
    """The shift ``s`` solving the score equation for each (clipped) opponent Elo."""
    x, shape = clipped_elo(opponent_elo)
    t = _solve_t(x, np.empty((3, x.shape[0])))
    return (_B * np.log(t)).reshape(shape)


def probabilities(opponent_elo) -> np.ndarray:
    """Pair-outcome probabilities ``(LL, DL, DD, WD, WW)``, shape ``(..., 5)``, float64.

    ``opponent_elo`` (any shape) is ``Elo(opponent) - Elo(hero)``, clipped to +-599.
    Every entry is non-negative and each row sums to 1 (to rounding); each entry depends
    only on its own opponent Elo, bit for bit.

    With ``E = (c - 1) l-`` (so ``d+ = E D`` and ``d- = E w-``) the outcomes reduce to
    ``LL = l+ l-``, ``DL = E l+ (w+ + w-)``, ``DD = (l+ + E^2 D) w- + w+ l-``,
    ``WD = E w- (w+ + D)``, ``WW = w+ w-``.
    """
    x, shape = clipped_elo(opponent_elo)
    n = x.shape[0]
    rec = np.empty((3, n))
    t = _solve_t(x, rec)
    w_p, w_m, d = _reciprocals(t, rec)
    l_m = np.multiply(t, w_p, out=x)  # l- = t / (1 + t)
    l_p = np.multiply(t, d, out=t)  # l+ = t / (t + c)
    e = np.multiply(l_m, _C1_A)  # E = (c - 1) l-
    out = np.empty((n, 5))
    scratch = np.empty(n)
    np.multiply(l_p, l_m, out=out[:, 0])  # LL
    np.add(w_p, w_m, out=scratch)  # DL
    scratch *= e
    np.multiply(scratch, l_p, out=out[:, 1])
    np.add(w_p, d, out=scratch)  # WD
    scratch *= e
    np.multiply(scratch, w_m, out=out[:, 3])
    np.multiply(w_p, w_m, out=out[:, 4])  # WW
    e *= e  # DD = (l+ + E^2 D) w- + w+ l-
    e *= d
    e += l_p
    e *= w_m
    np.multiply(w_p, l_m, out=scratch)
    np.add(e, scratch, out=out[:, 2])
    return out.reshape(shape + (5,))


def draw_rate_per_game(opponent_elo) -> np.ndarray:
    """The per-game draw probability at each (clipped) opponent Elo: the mean of
    ``draw(+a, s)`` and ``draw(-a, s)`` over the pair's two book exits."""
    shift_s = shift(opponent_elo)

    def draw(value: float) -> np.ndarray:
        win = 1.0 / (1.0 + np.exp((_A + shift_s - value) / _B))
        loss = 1.0 - 1.0 / (1.0 + np.exp((-_A + shift_s - value) / _B))
        return 1.0 - win - loss

    return 0.5 * (draw(_A) + draw(-_A))


def thresholds(probs: np.ndarray) -> np.ndarray:
    """Inverse-CDF thresholds, shape ``(..., 4)``: ``P(LL)``, ``P(LL + DL)``, ``P(LL + DL + DD)``,
    ``P(LL + DL + DD + WD)`` (cumulative sums, left to right)."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.shape[-1:] != (5,):
        raise ValueError(f"probabilities must have a last axis of length 5, got {probs.shape}")
    out = np.empty(probs.shape[:-1] + (4,))
    np.copyto(out[..., 0], probs[..., 0])
    for j in (1, 2, 3):
        np.add(out[..., j - 1], probs[..., j], out=out[..., j])
    return out


def _check_uniforms(uniforms: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 ``(seed, M)`` uniforms, made C-contiguous, and ``(seed, 4)`` thresholds.

    A strided view (say, a column slice of a seed's whole match stream) is copied once: the
    comparisons then read it five times from cache, which is faster than five strided passes.
    """
    uniforms = np.asarray(uniforms)
    if uniforms.dtype == np.uint32:  # integer draws: see draw_thresholds
        thresholds = np.asarray(thresholds, dtype=np.uint32)
    else:
        uniforms = np.asarray(uniforms, dtype=np.float64)
        thresholds = np.asarray(thresholds, dtype=np.float64)
    if uniforms.ndim != 2 or thresholds.shape != (uniforms.shape[0], 4):
        raise ValueError(
            f"expected uniforms (seed, M) and thresholds (seed, 4), got {uniforms.shape} and "
            f"{thresholds.shape}"
        )
    if not uniforms.flags.c_contiguous:
        uniforms = np.ascontiguousarray(uniforms)
    return uniforms, thresholds


#: Rows shorter than this are summed in float32, exactly (partial sums stay below 2**24).
_FLOAT32_EXACT_PAIRS = 2**22


@functools.lru_cache(maxsize=16)
def _ones(m: int, dtype: type) -> np.ndarray:
    ones = np.ones(m, dtype=dtype)
    ones.setflags(write=False)
    return ones


def _row_sums(values: np.ndarray) -> np.ndarray:
    """Exact int64 sums over the last axis of small integers (int8 or bool) through BLAS."""
    m = values.shape[-1]
    dtype = np.float32 if m < _FLOAT32_EXACT_PAIRS else np.float64
    lead = values.shape[:-1]
    as_float = values.astype(dtype).reshape(math.prod(lead), m)
    return np.dot(as_float, _ones(m, dtype)).astype(np.int64).reshape(lead)


#: Integer match draws k are uniform on 0 .. 2**32 - 1 and stand for u = k / 2**32.
DRAW_LEVELS = 2**32


def draw_thresholds(thresholds: np.ndarray) -> np.ndarray:
    """Thresholds for integer draws, uint32 ``(..., 4)``: ``u >= t`` iff ``k >= ceil(t 2**32)``.

    For ``u = k / 2**32`` the comparison is exact; the one level lost by capping at
    ``2**32 - 1`` (when ``t`` rounds to 1) moves a probability by at most ``2**-32``,
    so sampled outcome probabilities match the model to 2.3e-10. The functions that
    take uniforms accept uint32 draws with these thresholds in their place.
    """
    scaled = np.ceil(np.asarray(thresholds, dtype=np.float64) * float(DRAW_LEVELS))
    return np.minimum(scaled, float(DRAW_LEVELS - 1)).astype(np.uint32)


def net_wins_from_uniforms(
    uniforms: np.ndarray, thresholds: np.ndarray, *, unpadded: bool = False
) -> np.ndarray:
    """Net wins of each row, int64 shape ``(seed,)``, by inverse-CDF sampling.

    Pair ``k`` of row ``r`` has outcome value ``#{j : u[r, k] >= thresholds[r, j]} - 2``
    (``u`` in ``[0, P(LL))`` gives LL = -2, and so on up to WW = +2); entries with ``u < 0``
    are padding and count nothing. Returns the sum of the outcome values over each row.
    The thresholds must be non-negative and non-decreasing along a row, as ``thresholds``
    returns them. ``unpadded=True`` promises that no entry is padding, which skips the
    padding pass (the hot path of fixed-size jobs); the result is the same.
    """
    uniforms, thresholds = _check_uniforms(uniforms, thresholds)
    rows, m = uniforms.shape
    # Per-pair values in int8: the four comparisons, minus 2 for every non-padding pair (the
    # thresholds are >= 0, so padding fails every comparison).
    acc = np.empty((rows, m), dtype=np.int8)
    hit = np.empty((rows, m), dtype=np.bool_)
    hit8 = hit.view(np.int8)
    np.greater_equal(uniforms, thresholds[:, 0:1], out=acc.view(np.bool_))
    for j in (1, 2, 3):
        np.greater_equal(uniforms, thresholds[:, j : j + 1], out=hit)
        acc += hit8
    if unpadded:
        return _row_sums(acc) - 2 * m
    np.greater_equal(uniforms, 0.0, out=hit)
    acc -= hit8
    acc -= hit8
    return _row_sums(acc)


#: Base of the packed outcome sums: each pair adds ``BASE**k`` for its outcome index ``k``, so a
#: row of ``M < BASE`` pairs sums (exactly, below 2**53) to ``sum_k n_k BASE**k``.
_PACK_BASE = 1024
_PACK_BITS = np.array(10, dtype=np.int8)  # 1024**k = 2**(10 k)
_PACK_SHIFTS = np.arange(0, 50, 10, dtype=np.int64)


def _outcome_index(uniforms: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Each pair's outcome index ``k = #{j : u >= t_j}`` (0 = LL .. 4 = WW), int8 ``(seed, M)``."""
    index = np.empty(uniforms.shape, dtype=np.int8)
    hit = np.empty(uniforms.shape, dtype=np.bool_)
    np.greater_equal(uniforms, thresholds[:, 0:1], out=index.view(np.bool_))
    for j in (1, 2, 3):
        np.greater_equal(uniforms, thresholds[:, j : j + 1], out=hit)
        index += hit.view(np.int8)
    return index


def counts_and_net_wins(
    uniforms: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pentanomial counts ``(seed, 5)`` and net wins ``(seed,)`` of unpadded rows, int64.

    The hot path's form of :func:`counts_from_uniforms`. Each pair's outcome index
    ``k = #{j : u >= t_j}`` (0 = LL .. 4 = WW) is summed per row as ``1024**k`` in float64,
    one BLAS row sum for all five counts (exact while a row has fewer than 1024 pairs;
    longer rows take one row sum per threshold). Net wins are ``sum_k (k - 2) n_k``,
    equal to :func:`net_wins_from_uniforms`.
    """
    uniforms, thresholds = _check_uniforms(uniforms, thresholds)
    rows, m = uniforms.shape
    if m >= _PACK_BASE:
        hits = np.empty((4, rows, m), dtype=np.bool_)
        for j in range(4):
            np.greater_equal(uniforms, thresholds[:, j : j + 1], out=hits[j])
        return _counts_from_at_least(_row_sums(hits), m)
    index = _outcome_index(uniforms, thresholds)
    index *= _PACK_BITS
    packed = np.dot(np.ldexp(1.0, index), _ones(m, np.float64)).astype(np.int64)
    counts = np.right_shift(packed[:, None], _PACK_SHIFTS)
    counts &= _PACK_BASE - 1
    net = counts[:, 4] - counts[:, 0]
    net *= 2
    net += counts[:, 3]
    net -= counts[:, 1]
    return counts, net


def _reach_dtype(m: int) -> type:
    """The narrowest unsigned integer that counts ``m`` pairs."""
    return np.uint8 if m < 2**8 else np.uint16 if m < 2**16 else np.uint32


def at_least_and_net_wins(
    uniforms_by_pair: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """A job's pairs laid out ``(M, seed)`` (unpadded): how many of each seed's pairs reach
    each threshold, ``(4, seed)``, and the net wins ``(seed,)``, int64.

    With pair ``k``'s outcome index ``#{j : u_k >= t_j}`` (0 = LL .. 4 = WW)::

        at_least[j, s] = #{k : u[k, s] >= t[s, j]}        j = 0..3
        net_wins[s]    = sum_j at_least[j, s] - 2 M

    The hot path of jobs common to every seed: each comparison runs along a row of every
    seed against one contiguous row of thresholds, and the counts sum down the pairs in
    the narrowest unsigned integer that holds ``M`` (the dtype of ``at_least``). At-least
    counts add up over jobs; :func:`counts_from_at_least` turns their totals into the
    five counts. ``thresholds`` is ``(seed, 4)``, as :func:`fast_draw_thresholds` gives it
    (a transposed view, so each threshold's row is contiguous); ``uint32`` draws take
    :func:`draw_thresholds`.
    """
    uniforms_by_pair = np.asarray(uniforms_by_pair)
    integer = uniforms_by_pair.dtype == np.uint32
    if not integer:
        uniforms_by_pair = uniforms_by_pair.astype(np.float64, copy=False)
    by_threshold = np.asarray(thresholds, dtype=np.uint32 if integer else np.float64).T
    if uniforms_by_pair.ndim != 2 or by_threshold.shape != (4, uniforms_by_pair.shape[1]):
        raise ValueError(
            f"expected uniforms (M, seed) and thresholds (seed, 4), got "
            f"{uniforms_by_pair.shape} and {by_threshold.T.shape}"
        )
    m = uniforms_by_pair.shape[0]
    hits = np.empty((4,) + uniforms_by_pair.shape, dtype=np.bool_)
    for j in range(4):
        np.greater_equal(uniforms_by_pair, by_threshold[j], out=hits[j])
    at_least = np.add.reduce(hits.view(np.uint8), axis=1, dtype=_reach_dtype(m))
    net = at_least.sum(axis=0, dtype=np.int64)
    net -= 2 * m
    return at_least, net


def counts_from_at_least(at_least: np.ndarray, pairs) -> np.ndarray:
    """The counts ``(seed, 5)`` (LL, DL, DD, WD, WW), int64, of ``pairs`` pairs a seed of
    which ``at_least[j]`` reach threshold ``j`` (``(4, seed)``, summed over any number of
    jobs, as :func:`at_least_and_net_wins` gives them); counts no pairs have (the at-least
    counts not non-increasing from ``pairs``) raise ``ValueError``."""
    at_least = np.asarray(at_least, dtype=np.int64)
    counts = _counts_from_at_least(at_least, pairs)[0]
    if (counts < 0).any():
        raise ValueError("at-least counts that no outcome counts have")
    return counts


def _counts_from_at_least(at_least: np.ndarray, pairs) -> tuple[np.ndarray, np.ndarray]:
    """Counts and net wins from ``at_least`` ``(4, seed)`` and the pairs per row."""
    counts = np.empty((at_least.shape[1], 5), dtype=np.int64)
    counts[:, 0] = pairs - at_least[0]
    np.subtract(at_least[:3].T, at_least[1:].T, out=counts[:, 1:4])
    counts[:, 4] = at_least[3]
    return counts, at_least.sum(axis=0) - 2 * np.asarray(pairs, dtype=np.int64)


def counts_and_net_wins_from_segments(
    uniforms: np.ndarray, thresholds: np.ndarray, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The hot path's ragged form: :func:`counts_and_net_wins` for rows of different lengths (row ``r`` is the next ``sizes[r]``
    entries of the flat ``uniforms``; rows of size 0 count nothing)."""
    uniforms = np.asarray(uniforms)
    integer = uniforms.dtype == np.uint32
    uniforms = uniforms if integer else uniforms.astype(np.float64, copy=False)
    sizes = np.asarray(sizes, dtype=np.int64)
    row_of_pair = np.repeat(np.arange(sizes.shape[0]), sizes)
    by_threshold = np.asarray(thresholds, dtype=np.uint32 if integer else np.float64).T
    at_least = np.empty((4, sizes.shape[0]), dtype=np.int64)
    for j in range(4):  # bincount sums small integers in float64: exact in any order
        hit = uniforms >= by_threshold[j][row_of_pair]
        at_least[j] = np.bincount(row_of_pair, weights=hit, minlength=sizes.shape[0])
    return _counts_from_at_least(at_least, sizes)


def counts_from_uniforms(uniforms: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Pentanomial counts ``(LL, DL, DD, WD, WW)`` of each row, int64 shape ``(seed, 5)``.

    Same inverse-CDF rule as ``net_wins_from_uniforms`` (padding ``u < 0`` excluded), so
    ``counts_from_uniforms(u, t) @ OUTCOME_VALUES == net_wins_from_uniforms(u, t)``.
    """
    uniforms, thresholds = _check_uniforms(uniforms, thresholds)
    rows, m = uniforms.shape
    # at_least[j] = #{k : u_k >= bound_j} for the bounds (0, t1, t2, t3, t4).
    hits = np.empty((5, rows, m), dtype=np.bool_)
    np.greater_equal(uniforms, 0.0, out=hits[0])
    for j in range(4):
        np.greater_equal(uniforms, thresholds[:, j : j + 1], out=hits[j + 1])
    at_least = _row_sums(hits)
    counts = np.empty((rows, 5), dtype=np.int64)
    np.subtract(at_least[:4].T, at_least[1:].T, out=counts[:, :4])
    counts[:, 4] = at_least[4]
    return counts


def _weighted_sum(probs: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``probs @ weights`` over the last axis, elementwise (no BLAS: bitwise per row)."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.shape[-1:] != (5,):
        raise ValueError(f"probabilities must have a last axis of length 5, got {probs.shape}")
    total = probs[..., 0] * weights[0]
    for j in range(1, 5):
        total = total + probs[..., j] * weights[j]
    return total


def expected_net_wins_per_pair(probs: np.ndarray) -> np.ndarray:
    """Mean net wins of one pair, ``probs @ OUTCOME_VALUES`` (shape ``probs.shape[:-1]``)."""
    return _weighted_sum(probs, OUTCOME_VALUES.astype(np.float64))


def expected_score(probs: np.ndarray) -> np.ndarray:
    """Per-game score of the hero (0..1): LL -> 0, DL -> 1/4, DD -> 1/2, WD -> 3/4, WW -> 1.

    That is ``probs @ OUTCOME_SCORES``, the pair's points divided by its two games.
    """
    return _weighted_sum(probs, OUTCOME_SCORES)


# --------------------------------------------------------------------------- hot path
#: Grid step (Elo) of the threshold table: cubic Hermite error ~1e-11 at this step.
_THRESHOLD_STEP = 0.125


def _build_threshold_table() -> np.ndarray:
    """Cubic Hermite coefficients of the four thresholds per grid cell, ``(cells, 4, 4)``.

    Values are the exact thresholds at the grid points; slopes are central differences
    of the exact thresholds (step 1e-3 Elo, error far below the interpolation's).
    """
    step = _THRESHOLD_STEP
    grid = np.linspace(
        -MAX_OPPONENT_ELO, MAX_OPPONENT_ELO, int(round(2 * MAX_OPPONENT_ELO / step)) + 1
    )
    values = thresholds(probabilities(grid))
    delta = 1e-3
    hi = np.minimum(grid + delta, MAX_OPPONENT_ELO)
    lo = np.maximum(grid - delta, -MAX_OPPONENT_ELO)
    slopes = (thresholds(probabilities(hi)) - thresholds(probabilities(lo))) / (hi - lo)[:, None]
    f0, f1 = values[:-1], values[1:]
    m0, m1 = slopes[:-1] * step, slopes[1:] * step
    # p(t) = ((c3 t + c2) t + c1) t + c0 on t in [0, 1]
    table = np.stack([2 * (f0 - f1) + m0 + m1, 3 * (f1 - f0) - 2 * m0 - m1, m0, f0], axis=1)
    table.setflags(write=False)
    return table


@functools.cache
def _threshold_columns() -> np.ndarray:
    """Coefficient-major copy of :func:`_build_threshold_table`, shape (16, cells), built on
    first use: rows c3 (4 thresholds) | c2 | c1 | c0. A gather along its last axis gives
    (16, n), so every Horner step below runs over rows of length n instead of n rows of
    length 4 (numpy's per-row overhead dominates rows that short)."""
    table = _build_threshold_table()
    columns = np.ascontiguousarray(table.reshape(table.shape[0], 16).T)
    columns.setflags(write=False)
    return columns


def _fast_threshold_columns(opponent_elo: np.ndarray) -> np.ndarray:
    """The interpolated thresholds, shape ``(4, n)``: row ``j`` is threshold ``j`` of every input."""
    return threshold_table_columns(_threshold_columns(), _THRESHOLD_STEP, opponent_elo)


def threshold_table_columns(
    columns: np.ndarray, step: float, opponent_elo: np.ndarray
) -> np.ndarray:
    """Evaluate a coefficient-major Hermite threshold table, shape ``(4, n)``.

    ``columns`` is ``(16, cells)`` (rows c3 of the four thresholds, then c2, c1, c0) on a grid
    of ``step`` Elo from -599; the opponent Elo is clipped to +-599 first. On cell ``j`` with
    local coordinate ``f`` a threshold is ``((c3 f + c2) f + c1) f + c0``. Shared by every
    noise model's table.
    """
    x = np.asarray(opponent_elo, dtype=np.float64)
    if np.isnan(x).any():
        raise ValueError("opponent Elo must not be NaN")
    y = np.maximum(x, -MAX_OPPONENT_ELO)
    np.minimum(y, MAX_OPPONENT_ELO, out=y)
    y += MAX_OPPONENT_ELO
    y *= 1.0 / step
    cell = y.astype(np.intp)
    np.minimum(cell, columns.shape[1] - 1, out=cell)
    local = y - cell
    coefficients = columns.take(cell, axis=1)
    out = coefficients[0:4] * local
    out += coefficients[4:8]
    out *= local
    out += coefficients[8:12]
    out *= local
    out += coefficients[12:16]
    return out


def fast_thresholds(opponent_elo: np.ndarray) -> np.ndarray:
    """``thresholds(probabilities(opponent_elo))`` for a 1-d array, from a table, ``(n, 4)``.

    The simulator's hot path: a piecewise cubic Hermite interpolant of the exact
    thresholds on a 1/8-Elo grid over +-599 (about a dozen numpy calls instead of
    ~60). Agrees with the exact computation to ~2e-11 and with the bisection
    reference to 1e-9 everywhere (tests); each value depends only on its own input.
    (A transposed view of a ``(4, n)`` array.)
    """
    return _fast_threshold_columns(opponent_elo).T


def fast_draw_thresholds(opponent_elo: np.ndarray) -> np.ndarray:
    """``draw_thresholds(fast_thresholds(opponent_elo))``, uint32 ``(n, 4)``, the same bits.

    (A transposed view of a ``(4, n)`` array: threshold ``j`` of all inputs is contiguous.)
    """
    return draw_thresholds(_fast_threshold_columns(opponent_elo)).T
