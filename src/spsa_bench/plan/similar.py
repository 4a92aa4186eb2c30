"""The real tunes of the corpus (:mod:`spsa_bench.corpus`) most like the planned one,
and what happened to them: the section "Similar real tunes" of ``plan.md``.

Similarity is a distance over what a plan knows of its tune, each term a log ratio so
that twice as many is as far as half as many::

    d = |ln(P / P_t)| + |ln(G / G_t)| + |ln(B / B_t)|

with ``P`` the parameters of the block, ``G`` the games and ``B`` the base time of the
time control in seconds (STC 10, LTC 60, VLTC 180; a corpus tune's own ``base+inc``),
``_t`` the corpus tune's. A term the record does not know (its games or its time
control is null) counts :data:`UNKNOWN_TERM` = ln 4, as far as a factor of 4: an
unknown neither ranks a tune first nor rules it out. A block does not say whether it
tunes search or evaluation, so the kind is not a term. The closest :data:`SHOWN`
tunes are listed, ties broken by the later date, then the name.

A record's outcome is shown as it is: the median |final - start| / c_end of its
parameters where the record has its block (else unknown), every verification test
(its label or time control, passed, failed or fixed games, the Elo with its error as
quoted, else the logistic Elo of the quoted W/L/D marked ``~``, else unknown) and its
sources.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

from spsa_bench.corpus.records import TuneRecord, Verification
from spsa_bench.model.time_control import TIME_CONTROLS

#: How many similar tunes ``plan.md`` lists.
SHOWN = 3
#: The distance term of a field the record does not know: ln 4.
UNKNOWN_TERM = math.log(4.0)
UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class Match:
    """A corpus tune and its distance to the plan, with each term (None: unknown)."""

    record: TuneRecord
    distance: float
    params_term: float
    games_term: float | None
    time_term: float | None


def base_seconds(time_control: str | None) -> float | None:
    """The base time in seconds of ``STC``/``LTC``/``VLTC`` or of ``"base+inc"``;
    None when unknown or not positive."""
    if time_control is None:
        return None
    if time_control in TIME_CONTROLS:
        return float(TIME_CONTROLS[time_control][0])
    try:
        base = float(time_control.split("+", 1)[0])
    except ValueError:
        return None
    return base if math.isfinite(base) and base > 0 else None


def _log_ratio(mine: float, theirs: float | None) -> float | None:
    if theirs is None or theirs <= 0:
        return None
    return abs(math.log(mine / theirs))


def distance(record: TuneRecord, params: int, games: int, time_control: str) -> Match:
    """The record's distance to a plan of ``params`` parameters, ``games`` games at
    ``time_control`` (module docstring)."""
    params_term = _log_ratio(params, len(record.parameters))
    games_term = _log_ratio(games, record.tune.games)
    time_term = _log_ratio(base_seconds(time_control), base_seconds(record.tune.time_control))
    terms = (params_term, games_term, time_term)
    total = sum(UNKNOWN_TERM if t is None else t for t in terms)
    return Match(record, total, params_term, games_term, time_term)


def most_similar(
    records: Iterable[TuneRecord], params: int, games: int, time_control: str, count=SHOWN
) -> list[Match]:
    """The ``count`` records closest to the plan, closest first; ties: later date, then
    name."""
    matches = [distance(r, params, games, time_control) for r in records]
    matches.sort(key=lambda m: (m.distance, _negated_date(m.record.date), m.record.name))
    return matches[:count]


def _negated_date(date: str) -> tuple[int, ...]:
    return tuple(-int(part) for part in date.split("-"))


def verification_text(test: Verification) -> str:
    """One test: where it ran, its result and its Elo."""
    where = test.label or test.time_control or "time control unknown"
    if test.label and test.time_control and test.time_control != test.label:
        where = f"{test.label} ({test.time_control})"
    result = "fixed games" if test.result == "fixed" else test.result
    if test.elo is not None:
        error = UNKNOWN if test.elo_error is None else f"{test.elo_error:.2f}"
        elo = f"{test.elo:+.2f} ± {error} Elo"
    elif test.score_elo is not None:
        elo = f"~{test.score_elo:+.1f} Elo (from W/L/D)"
    else:
        elo = f"Elo {UNKNOWN}"
    return f"{where} {result}, {elo}"


def outcome_fields(record: TuneRecord) -> dict[str, str]:
    """What happened to the tune, as text: its move, its verification and its sources."""
    move = record.median_abs_move()
    return {
        "median |move| (c_end)": UNKNOWN if move is None else f"{move:.2f}",
        "verification": "; ".join(verification_text(t) for t in record.verification) or UNKNOWN,
        "source": "; ".join(s.ref for s in record.sources),
    }


def _known(value, fmt) -> str:
    return UNKNOWN if value is None else fmt(value)


def rows(matches: Sequence[Match]) -> list[dict[str, str]]:
    """One row per match: the tune, how close and what happened to it."""
    out = []
    for m in matches:
        r = m.record
        out.append(
            {
                "tune": f"{r.name} ({r.kind})",
                "parameters": str(len(r.parameters)),
                "games": _known(r.tune.games, lambda g: f"{g:,}"),
                "time control": _known(r.tune.time_control, str),
                "distance": f"{m.distance:.2f}",
                **outcome_fields(r),
            }
        )
    return out
