"""Fishtest's time controls and the worker's batch size at each.

A Fishtest worker plays an SPSA task in batches (official-stockfish/fishtest
``worker/games.py``, ``run_games``)::

    batch_size = concurrency * 4 * max(1, round(tc_limit_ltc / tc_limit))   games

with ``tc_limit = 3 * base + 200 * increment`` seconds (``adjust_tc``; the CPU
factor cancels in the ratio), ``tc_limit_ltc`` that of 60+0.6, and ``tc_limit``
doubled for an SPSA task. So a batch is 12 x concurrency games at STC (10+0.1),
4 x at LTC (60+0.6) and at VLTC (180+1.8): "every 4 games at LTC, or a similar
time interval at shorter TCs", as the worker's comment says.

Game durations are an assumption, stated where they are used: a game of
``base + increment`` with about 68 moves per side takes at most
``2 * (base + 68 * increment)`` seconds of clock; the defaults take the median at
about 70% of that and the 95th percentile at the full clock.
"""

from __future__ import annotations

#: Base seconds and increment of Fishtest's standard time controls.
TIME_CONTROLS = {"STC": (10.0, 0.1), "LTC": (60.0, 0.6), "VLTC": (180.0, 1.8)}
#: Moves per side a game is assumed to last (Fishtest's Autoselect form uses 68 too).
MOVES_PER_GAME = 68.0
#: The LTC reference of the worker's batch rule.
LTC = "LTC"


def tc_limit(time_control: str) -> float:
    """``3 * base + 200 * increment``: the worker's time budget unit for a time control."""
    base, increment = TIME_CONTROLS[time_control]
    return 3.0 * base + 200.0 * increment


def batch_multiplier(time_control: str, spsa: bool = True) -> int:
    """``max(1, round(tc_limit(LTC) / tc_limit))``, ``tc_limit`` doubled for SPSA tasks
    (Python's round, as the worker's): 3 at STC, 1 at LTC and VLTC."""
    limit = tc_limit(time_control) * (2.0 if spsa else 1.0)
    return max(1, round(tc_limit(LTC) / limit))


def batch_games(time_control: str, concurrency: int) -> int:
    """Games in one batch of a worker of ``concurrency`` at ``time_control`` (SPSA)."""
    return int(concurrency) * 4 * batch_multiplier(time_control)


def game_duration(time_control: str) -> dict[str, float]:
    """Assumed log-normal game duration (seconds) at ``time_control``: median 70% and
    95th percentile 100% of the clock of a 68-move game, ``2 * (base + 68 * inc)``."""
    base, increment = TIME_CONTROLS[time_control]
    clock = 2.0 * (base + MOVES_PER_GAME * increment)
    return {"median": round(0.7 * clock, 1), "p95": round(clock, 1)}
