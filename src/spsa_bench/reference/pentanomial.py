"""Scalar reference for the pentanomial match-noise model, found by bisection.

Written straight from the model's definition with Python floats and ``math``,
one opponent Elo at a time; the vectorized ``spsa_bench.model.pentanomial`` is tested
against it.

With ``a = 100`` and ``b = 22``, a game at value ``v`` with shift ``s`` has

    win(v, s)  = 1 / (1 + exp((a + s - v) / b))
    loss(v, s) = 1 - 1 / (1 + exp((-a + s - v) / b))
    draw(v, s) = 1 - win - loss   (clamped into [0, 1])

A game pair plays ``v = +a`` and ``v = -a``. The shift ``s`` solves
``EloFromScore((score(+a, s) + score(-a, s)) / 2) = opponent_elo`` with
``score = win + draw / 2`` and ``EloFromScore(p) = 400 * log10((1 - p) / p)``;
it is found by bisection on ``[lo, hi] = [-600, 600]``. The opponent Elo is
clipped to +-599 first.
"""

from __future__ import annotations

import math

A = 100.0
B = 22.0
MAX_OPPONENT_ELO = 599.0


def win(v: float, s: float) -> float:
    """Probability that the hero wins a game at value ``v`` with shift ``s``."""
    return 1.0 / (1.0 + math.exp((A + s - v) / B))


def loss(v: float, s: float) -> float:
    """Probability that the hero loses a game at value ``v`` with shift ``s``."""
    return 1.0 - 1.0 / (1.0 + math.exp((-A + s - v) / B))


def draw(v: float, s: float) -> float:
    """Probability of a draw, ``1 - win - loss`` clamped into ``[0, 1]``."""
    return game(v, s)[1]


def game(v: float, s: float) -> tuple[float, float, float]:
    """``(win, draw, loss)`` of one game, the draw being ``1 - win - loss`` clamped to [0, 1]."""
    w = win(v, s)
    l = loss(v, s)
    d = min(1.0, max(0.0, 1.0 - w - l))
    return w, d, l


def score(v: float, s: float) -> float:
    """Expected score of the hero in one game: ``win + draw / 2``."""
    w, d, _ = game(v, s)
    return w + d / 2.0


def elo_from_score(p: float) -> float:
    """``400 * log10((1 - p) / p)``: the opponent's Elo advantage implied by score ``p``."""
    return 400.0 * math.log10((1.0 - p) / p)


def clip_opponent_elo(opponent_elo: float) -> float:
    """The opponent Elo clipped into ``[-599, 599]``."""
    return min(MAX_OPPONENT_ELO, max(-MAX_OPPONENT_ELO, float(opponent_elo)))


def pair_elo(s: float) -> float:
    """``EloFromScore`` of the mean score over the two games of a pair at shift ``s``."""
    return elo_from_score((score(+A, s) + score(-A, s)) / 2.0)


def shift_by_bisection(
    opponent_elo: float, tol: float = 1e-7, lo: float = -600.0, hi: float = 600.0
) -> float:
    """The shift ``s`` with ``pair_elo(s) == opponent_elo`` (clipped), by bisection.

    ``pair_elo`` increases with ``s``. Halves ``[lo, hi]`` until it is no wider
    than ``tol`` and returns the midpoint.
    """
    target = clip_opponent_elo(opponent_elo)
    lo = float(lo)
    hi = float(hi)
    while hi - lo > tol:
        mid = (lo + hi) / 2.0
        if mid == lo or mid == hi:  # the interval cannot shrink any further
            break
        if pair_elo(mid) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def probabilities_by_bisection(
    opponent_elo: float, tol: float = 1e-7
) -> tuple[float, float, float, float, float]:
    """Pentanomial probabilities ``(LL, DL, DD, WD, WW)`` of a game pair.

    With ``w+ = win(+a, s)``, ``w- = win(-a, s)`` and likewise for draws and losses:
    ``LL = l+ l-``, ``DL = l+ d- + d+ l-``, ``DD = d+ d- + w+ l- + l+ w-``,
    ``WD = w+ d- + d+ w-``, ``WW = w+ w-``.
    """
    s = shift_by_bisection(opponent_elo, tol=tol)
    w_p, d_p, l_p = game(+A, s)
    w_m, d_m, l_m = game(-A, s)
    ll = l_p * l_m
    dl = l_p * d_m + d_p * l_m
    dd = d_p * d_m + w_p * l_m + l_p * w_m
    wd = w_p * d_m + d_p * w_m
    ww = w_p * w_m
    return (ll, dl, dd, wd, ww)
