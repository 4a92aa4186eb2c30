"""Summary statistics of a tune, observed (from a corpus record) and simulated.

Four statistics per tune, in the order of :data:`STATS`:

* ``verification_elo``: the Elo of the tune's verification test. **Observed**: the
  record's chosen test (:func:`chosen_test`: a passed SPRT first, then a fixed-games
  test, then a failed SPRT; within a group the most games): the quoted Elo when the
  record quotes one (its quoted error is a 95% interval, so the standard error is
  ``error / 1.96``), else the logistic Elo of the score,
  ``elo(s) = -400 log10(1/s - 1)``, whose standard error is the delta method's
  ``se_elo = 400 / (ln 10 s (1 - s)) se_s`` with ``se_s`` from the pentanomial pair
  scores (0, 1/4, 1/2, 3/4, 1 per game; ``se_s^2 = var_pair / pairs``) when the record
  has them, else from the trinomial game scores (``se_s^2 = var_game / games``).
  **Simulated** (:func:`simulated_stats`): the true gain ``G`` of the simulated tune
  (true Elo at the committed values minus at the start, at the test's time control)
  plus that test's own noise, ``G + se_elo Z`` with ``Z ~ N(0, 1)``: a fixed-games
  test, unbiased, with the record's standard error. A record whose chosen test is an
  SPRT replaces it: the SPRT played at ``G``, its Elo at stopping kept where it ended
  as the record's did (:func:`~spsa_bench.calibration.simulate.selected_elo`,
  :mod:`~spsa_bench.calibration.selection`).
* ``median_abs_move``, ``share_move_ge_1``, ``largest_abs_move``: the moves
  ``(final - start) / c_end`` of the block's parameters, their median absolute value,
  the share with ``|move| >= 1`` and the largest ``|move|``. **Observed** only for a
  record with a block (its committed values); **simulated** from the values the
  simulated tune commits, the replay's exported theta rounded to integers where the
  record committed integers (:func:`~spsa_bench.calibration.simulate.committed_values`),
  ``(theta - start) / c_end``, in the same units.

A statistic the record does not support is NaN.
"""

from __future__ import annotations

import math

import numpy as np

from spsa_bench.corpus.records import TuneRecord, Verification

#: The statistics, in the order of every ``stat`` axis.
STATS = ("verification_elo", "median_abs_move", "share_move_ge_1", "largest_abs_move")
#: What each statistic is, for tables and the dataset.
STAT_LABELS = {
    "verification_elo": "verification Elo",
    "median_abs_move": "median |move| (c_end)",
    "share_move_ge_1": "share |move| >= 1 c_end",
    "largest_abs_move": "largest |move| (c_end)",
}
#: A quoted Elo error is a 95% interval (Fishtest's): its half-width over this is the SE.
Z95 = 1.959963984540054
_ELO_PER_LOGIT = 400.0 / math.log(10.0)
_GROUPS = {"passed": 0, "fixed": 1, "failed": 2}


def _elo_of_score(score: float) -> float:
    return -400.0 * math.log10(1.0 / score - 1.0)


def test_elo(test: Verification) -> tuple[float, float] | None:
    """``(Elo, standard error)`` of one verification test (module docstring), or None
    when the record gives neither a quoted Elo with its error nor usable counts."""
    if test.elo is not None and test.elo_error is not None and test.elo_error > 0:
        return float(test.elo), float(test.elo_error) / Z95
    if test.ptnml is not None and sum(test.ptnml) > 0:
        counts = np.asarray(test.ptnml, dtype=float)
        pairs = counts.sum()
        scores = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
        mean = float(counts @ scores / pairs)
        var = float(counts @ (scores - mean) ** 2 / pairs)
        se_score = math.sqrt(var / pairs)
    elif None not in (test.wins, test.losses, test.draws):
        games = test.wins + test.losses + test.draws
        if games == 0:
            return None
        mean = (test.wins + 0.5 * test.draws) / games
        var = (
            test.wins * (1.0 - mean) ** 2 + test.losses * mean**2 + test.draws * (0.5 - mean) ** 2
        ) / games
        se_score = math.sqrt(var / games)
    else:
        return None
    if not 0.0 < mean < 1.0 or se_score <= 0:
        return None
    return _elo_of_score(mean), _ELO_PER_LOGIT / (mean * (1.0 - mean)) * se_score


def _games(test: Verification) -> int:
    if test.games is not None:
        return test.games
    if test.ptnml is not None:
        return 2 * sum(test.ptnml)
    return 0


def chosen_test(record: TuneRecord) -> tuple[Verification, float, float] | None:
    """The verification test the statistic uses, with its Elo and standard error: among
    the tests :func:`test_elo` can read, a passed SPRT first, then a fixed-games test,
    then a failed SPRT, and within a group the one with the most games (the first on a
    tie). None when no test is readable."""
    best, key = None, None
    for index, test in enumerate(record.verification):
        value = test_elo(test)
        if value is None:
            continue
        rank = (_GROUPS[test.result], -_games(test), index)
        if key is None or rank < key:
            best, key = (test, *value), rank
    return best


def move_stats(moves) -> np.ndarray:
    """``(median |move|, share |move| >= 1, largest |move|)`` along the last axis of
    ``moves`` (in c_end units); any leading axes (seeds) are kept."""
    size = np.abs(np.asarray(moves, dtype=float))
    return np.stack(
        [np.median(size, axis=-1), np.mean(size >= 1.0, axis=-1), np.max(size, axis=-1)],
        axis=-1,
    )


def observed_stats(record: TuneRecord) -> tuple[np.ndarray, float]:
    """The record's statistics (order of :data:`STATS`, NaN where unsupported) and the
    standard error of its verification Elo (NaN without a readable test)."""
    out = np.full(len(STATS), np.nan)
    se = math.nan
    chosen = chosen_test(record)
    if chosen is not None:
        out[0], se = chosen[1], chosen[2]
    moves = record.moves()
    if moves:
        out[1:] = move_stats(np.array(list(moves.values())))
    return out, se


def simulated_stats(
    gain: np.ndarray,
    theta: np.ndarray,
    start: np.ndarray,
    c_end: np.ndarray,
    se: float,
    normal: np.ndarray,
    has_block: bool,
) -> np.ndarray:
    """The statistics of simulated tunes, ``(row, stat)``: ``gain`` ``(row,)`` the true
    gain, ``theta`` ``(row, param)`` the exported values, ``normal`` ``(row,)`` standard
    normals of the verification noise, ``se`` the record's standard error (NaN: the
    Elo statistic is NaN too). The move statistics are NaN unless ``has_block``: a
    record without a block has no observed moves to compare with."""
    rows = gain.shape[0]
    out = np.full((rows, len(STATS)), np.nan)
    if math.isfinite(se):
        out[:, 0] = gain + se * normal
    if has_block:
        out[:, 1:] = move_stats((theta - start) / c_end)
    return out


__all__ = [
    "STATS",
    "STAT_LABELS",
    "chosen_test",
    "move_stats",
    "observed_stats",
    "simulated_stats",
    "test_elo",
]
