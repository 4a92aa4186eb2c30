"""The frozen record types of the real-tune corpus and the rules a record obeys.

A record is one SPSA tune of Stockfish, read from its commit, its pull request and
Fishtest. The YAML layout (``data/<year>-<short-name>.yaml``)::

    name: 2018-shelter-storm-2m        # the file's stem
    title: Tuned Values after 2 million spsa games
    date: 2018-07-14                   # the commit's date (YYYY-MM-DD)
    kind: evaluation                   # search | evaluation | other
    sources:                           # what every number below cites, by id
      - {id: commit, ref: "official-stockfish/Stockfish commit d2d4e85f2", what: message and diff}
    tune:                              # the SPSA run; unknown is null, never guessed
      time_control: "10+0.1"           # "base+increment" in seconds, or null
      threads: 1                       # or null
      games: 2000000                   # or null
      A: 5000                          # absolute A (before 2022), or null
      A_ratio: null                    # A as a share of the iterations (since 2022), or null
      alpha: 0.602
      gamma: 0.101
    parameters:                        # every tuned constant: start and committed value
      - {name: Shelter_0_1, start: 7, final: 10}
    verification:                      # the tests of the tuned values, as quoted
      - {label: LTC, time_control: "60+0.6", threads: 1, test: sprt, sprt: [0, 4], sprt_scale: bayeselo,
         games: 40000, wins: 1, losses: 1, draws: 1, ptnml: null, result: passed,
         elo: null, elo_error: null}
    provenance:                        # one entry per non-null field above
      games: {status: quoted, source: commit}
      parameters: {status: inferred, source: commit, note: read from the diff}
      verification[0]: {status: quoted, source: commit}

``provenance`` covers the keys of :data:`TRACKED` that are not null, ``block`` and
``step`` when the record has a block file (``step``: the ``c_end`` and ``r_end`` the
Fishtest run played; quoted when a source shows the run's own lines or values,
inferred when they are what ``src/tune.cpp`` prints for the ``TUNE()`` lines, which an
author may have edited on Fishtest), ``sprt_scale`` when a test gives one (Fishtest prints
BayesElo bounds in ``[]``, logistic in ``{}``, normalized in ``<>``), ``parameters`` and each ``verification[i]``; a quoted
field names the source it is quoted from, an inferred one also says how (``note``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from spsa_bench.config.param_block import ParamBlock

KINDS = ("search", "evaluation", "other")
STATUSES = ("quoted", "inferred")
TESTS = ("sprt", "fixed")
RESULTS = ("passed", "failed", "fixed")
#: The SPRT bounds' scale: Fishtest's BayesElo (before 2019), logistic Elo, normalized Elo.
SPRT_SCALES = ("bayeselo", "logistic", "normalized")
#: The ``tune`` fields a provenance entry must cover when they are not null.
TRACKED = ("time_control", "threads", "games", "A", "A_ratio", "alpha", "gamma")


class CorpusError(ValueError):
    """A malformed record: one line naming the file, the field and the value."""


@dataclasses.dataclass(frozen=True)
class Source:
    id: str
    ref: str
    what: str


@dataclasses.dataclass(frozen=True)
class Provenance:
    status: str
    source: str
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class Tune:
    time_control: str | None
    threads: int | None
    games: int | None
    A: float | None
    A_ratio: float | None
    alpha: float | None
    gamma: float | None


@dataclasses.dataclass(frozen=True)
class Parameter:
    name: str
    start: float
    final: float
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class Verification:
    label: str | None
    time_control: str | None
    threads: int | None
    test: str
    sprt: tuple[float, float] | None
    sprt_scale: str | None
    games: int | None
    wins: int | None
    losses: int | None
    draws: int | None
    ptnml: tuple[int, int, int, int, int] | None
    result: str
    elo: float | None
    elo_error: float | None

    @property
    def score_elo(self) -> float | None:
        """The logistic Elo of the W/L/D score (None without counts or at a 0/100% score)."""
        if None in (self.wins, self.losses, self.draws):
            return None
        n = self.wins + self.losses + self.draws
        score = (self.wins + 0.5 * self.draws) / n if n else math.nan
        if not 0 < score < 1:
            return None
        return -400.0 * math.log10(1.0 / score - 1.0)


@dataclasses.dataclass(frozen=True)
class TuneRecord:
    """One validated tune; ``block`` is its parameter block or None when unknown."""

    name: str
    title: str
    date: str
    kind: str
    sources: tuple[Source, ...]
    tune: Tune
    parameters: tuple[Parameter, ...]
    verification: tuple[Verification, ...]
    provenance: dict[str, Provenance]
    block: ParamBlock | None
    notes: str | None = None

    @property
    def year(self) -> int:
        return int(self.date[:4])

    def moves(self) -> dict[str, float]:
        """Each block parameter's move ``(final - start) / c_end``, by name (empty
        without a block)."""
        if self.block is None:
            return {}
        final = {p.name: p.final for p in self.parameters}
        return {
            name: (final[name] - self.block.start[i]) / self.block.c_end[i]
            for i, name in enumerate(self.block.names)
        }

    @property
    def step_quoted(self) -> bool:
        """Whether a source quotes the ``c_end`` and ``r_end`` the run played (the
        ``step`` provenance is quoted); False without a block."""
        step = self.provenance.get("step")
        return step is not None and step.status == "quoted"

    def median_abs_move(self) -> float | None:
        moves = list(self.moves().values())
        return float(np.median(np.abs(moves))) if moves else None
