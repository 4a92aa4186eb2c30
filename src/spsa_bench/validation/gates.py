"""Macro-versus-micro validation of the optimizers.

Every fast (macro) optimizer compresses the ``N`` pairs of a report into one
update. This module replays one open-loop sequence of reports (random sizes
``N_i``, per-pair outcomes in {-2, ..., 2}, their sums ``S_i``, Rademacher
flips) through three paths and compares them at report boundaries:

- ``macro``             the optimizer from :data:`spsa_bench.optimizers.REGISTRY`,
                        vectorized over seeds (:func:`run_macro`);
- ``micro_const_mean``  the literal per-pair reference
                        (:mod:`spsa_bench.reference.micro`) fed ``S_i / N_i``
                        for every pair of report ``i``;
- ``micro_real``        the same reference fed the real per-pair outcomes.

The outcomes do not depend on the parameters (open loop), so all paths see
the same signals and any difference is the aggregation error of the macro.

:func:`gap_table` gives the largest gaps of the macro path to both micro paths and
:func:`worst_gap` the *gate* statistic: the largest relative gap to the micro
const-mean path beyond float rounding, which must not exceed the row's
``micro_tolerance`` (``1e-9`` for the exact block macros, a documented bound for the
approximate ones).

Float rounding: both paths move parameters of size ``|theta|`` (about 1000 here) by
steps of any size, and each of the ``M`` micro-steps of the sequence (its pairs)
rounds the sum to ``|theta|``'s resolution; so the paths may part by up to about
``rounding_floor = eps * max|theta| * M`` (``eps`` the float64 machine epsilon) however
exact the macro's algebra, which is 3.3e-9 for 200 reports of up to 128 pairs. The gate
compares only the part of a gap beyond that floor with the path's excursion: a macro
whose algebra is wrong by a fraction ``f`` parts from the micro path by ``f`` times
the excursion, which the gate still sees; a tiny learning rate, whose excursion is
small beside the parameters' rounding, no longer fails on rounding alone (an
sf-sgd-block arm at lr 0.0001: a largest relative gap of 2.8e-9, its absolute gaps at
most 1.4e-10, all within its floor of 3.3e-9). Everything
here is computation in memory; :mod:`spsa_bench.validation.run` runs the gate for a
kind or the arms of a configuration and writes the files
(:mod:`spsa_bench.validation.files`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers import Optimizer, Report, build, get_spec
from spsa_bench.reference.micro import MicroReport

PATHS = ("macro", "micro_const_mean", "micro_real")
SIZE_LAWS = ("uniform", "pow2", "fixed")

#: Outcome probabilities (LL, DL, DD, WD, WW) used when the pentanomial model
#: is not available: a slightly favourable, draw-heavy pair.
FALLBACK_PROBABILITIES = np.array([0.05, 0.20, 0.44, 0.24, 0.07])


def outcome_probabilities(elo_gap: float) -> np.ndarray:
    """Pair-outcome probabilities for a hero ``elo_gap`` Elo stronger than its opponent."""
    try:
        from spsa_bench.model.pentanomial import probabilities
    except ImportError:  # pragma: no cover - the pentanomial model ships with the package
        return FALLBACK_PROBABILITIES.copy()
    return np.asarray(probabilities(-float(elo_gap)), dtype=np.float64).reshape(5)


def _generator(seed: int, purpose: int) -> np.random.Generator:
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(entropy=int(seed), spawn_key=(purpose,)))
    )


@dataclass(frozen=True)
class ReportSequence:
    """An open-loop sequence of reports for several seeds (played one after another).

    n_pairs   (seed, report)         pairs ``N_i`` of each report
    outcomes  (seed, pair)           per-pair results in {-2..2}, in play order,
                                     zero-padded past each seed's total
    offsets   (seed, report + 1)     report ``i`` of seed ``s`` is
                                     ``outcomes[s, offsets[s, i]:offsets[s, i + 1]]``
    flips     (seed, report, param)  Rademacher flips, +-1.0
    """

    n_pairs: np.ndarray
    outcomes: np.ndarray
    offsets: np.ndarray
    flips: np.ndarray

    @property
    def n_seeds(self) -> int:
        return int(self.n_pairs.shape[0])

    @property
    def n_reports(self) -> int:
        return int(self.n_pairs.shape[1])

    @property
    def n_params(self) -> int:
        return int(self.flips.shape[2])

    @property
    def signal(self) -> np.ndarray:
        """Total result ``S_i`` of every report, (seed, report)."""
        cumulative = np.concatenate(
            [np.zeros((self.n_seeds, 1)), np.cumsum(self.outcomes, axis=1)], axis=1
        )
        return np.take_along_axis(cumulative, self.offsets[:, 1:], 1) - np.take_along_axis(
            cumulative, self.offsets[:, :-1], 1
        )

    @property
    def iter_local(self) -> np.ndarray:
        """Dispatch iteration ``1 + pairs played before``, (seed, report) int64."""
        return self.offsets[:, :-1] + 1

    def pair_signals(self, seed_index: int, report: int) -> np.ndarray:
        lo, hi = self.offsets[seed_index, report], self.offsets[seed_index, report + 1]
        return self.outcomes[seed_index, lo:hi].astype(np.float64)


def make_reports(
    n_reports: int,
    n_params: int,
    *,
    n_seeds: int = 1,
    seed: int = 0,
    sizes: str = "uniform",
    max_pairs: int = 128,
    shuffle: bool = False,
    elo_gap: float = 5.0,
) -> ReportSequence:
    """Draw an open-loop report sequence.

    sizes      ``"uniform"``: ``N`` uniform on 1..max_pairs; ``"pow2"``: a power of
               two up to max_pairs, uniform over the exponents; ``"fixed"``: max_pairs
    elo_gap    the hero's fixed Elo advantage setting the outcome distribution
               (the pentanomial model), so the per-pair mean is slightly positive
    shuffle    permute the order of the reports (sizes, outcomes and flips move
               together): the same multiset of reports as ``shuffle=False``

    Streams: ``SeedSequence(entropy=seed, spawn_key=(k,))`` with k = 0 sizes,
    1 outcomes, 2 flips, 3 the shuffle permutation.
    """
    if sizes not in SIZE_LAWS:
        raise ValueError(f"sizes must be one of {SIZE_LAWS}, got {sizes!r}")
    if n_reports < 1 or n_params < 1 or n_seeds < 1 or max_pairs < 1:
        raise ValueError("n_reports, n_params, n_seeds and max_pairs must be positive")
    if sizes == "uniform":
        n_pairs = _generator(seed, 0).integers(1, max_pairs + 1, size=(n_seeds, n_reports))
    elif sizes == "pow2":
        top = int(np.floor(np.log2(max_pairs)))
        n_pairs = 2 ** _generator(seed, 0).integers(0, top + 1, size=(n_seeds, n_reports))
    else:
        n_pairs = np.full((n_seeds, n_reports), max_pairs)
    n_pairs = n_pairs.astype(np.int64)
    totals = n_pairs.sum(axis=1)
    probabilities = outcome_probabilities(elo_gap)
    outcomes = _generator(seed, 1).choice(
        np.arange(-2, 3), size=(n_seeds, int(totals.max())), p=probabilities
    )
    for row, total in enumerate(totals):
        outcomes[row, total:] = 0
    flips = 2.0 * _generator(seed, 2).integers(0, 2, size=(n_seeds, n_reports, n_params)) - 1.0
    offsets = np.concatenate(
        [np.zeros((n_seeds, 1), dtype=np.int64), np.cumsum(n_pairs, axis=1)], axis=1
    )
    sequence = ReportSequence(n_pairs, outcomes.astype(np.float64), offsets, flips)
    if shuffle:
        sequence = _permute(sequence, _generator(seed, 3))
    return sequence


def _permute(sequence: ReportSequence, rng: np.random.Generator) -> ReportSequence:
    n_pairs = np.empty_like(sequence.n_pairs)
    outcomes = np.zeros_like(sequence.outcomes)
    flips = np.empty_like(sequence.flips)
    for row in range(sequence.n_seeds):  # test-data preparation, not an optimizer
        order = rng.permutation(sequence.n_reports)
        n_pairs[row] = sequence.n_pairs[row, order]
        flips[row] = sequence.flips[row, order]
        chunks = [sequence.pair_signals(row, i) for i in order]
        joined = np.concatenate(chunks)
        outcomes[row, : joined.shape[0]] = joined
    offsets = np.concatenate(
        [np.zeros((sequence.n_seeds, 1), dtype=np.int64), np.cumsum(n_pairs, axis=1)], axis=1
    )
    return ReportSequence(n_pairs, outcomes, offsets, flips)


def validation_view(
    n_params: int,
    num_pairs: int,
    *,
    c_dev: float = 10.0,
    theta_min: float = 0.0,
    theta_max: float = 2000.0,
) -> DeveloperView:
    """A developer view for validation: starts alternate 900 / 1100, one ``c_dev``, wide bounds."""
    start = np.where(np.arange(n_params) % 2 == 0, 900.0, 1100.0)
    return DeveloperView(
        theta_start=start,
        theta_min=np.full(n_params, float(theta_min)),
        theta_max=np.full(n_params, float(theta_max)),
        c_dev=np.full(n_params, float(c_dev)),
        num_pairs=int(num_pairs),
    )


def run_macro(optimizer: Optimizer, sequence: ReportSequence) -> dict[str, np.ndarray]:
    """Run ``optimizer`` over ``sequence`` for all seeds at once.

    Returns the trajectory at report boundaries: ``"theta"`` (the export) and
    every extra (``"x"``, ``"z"`` for schedule-free), each shaped
    (seed, report + 1, param) with index 0 the initial state.
    """
    state = optimizer.init(sequence.n_seeds)
    signal = sequence.signal
    records: dict[str, list[np.ndarray]] = {}

    def record(current) -> None:
        for name, values in {
            "theta": optimizer.export(current),
            **optimizer.extras(current),
        }.items():
            records.setdefault(name, []).append(np.array(values, dtype=np.float64, copy=True))

    record(state)
    for i in range(sequence.n_reports):
        iter_local = sequence.iter_local[:, i].copy()
        report = Report(
            n_pairs=sequence.n_pairs[:, i].copy(),
            signal=signal[:, i].copy(),
            flip=sequence.flips[:, i].copy(),
            c=optimizer.perturbation(iter_local),
            iter_local=iter_local,
        )
        state = optimizer.update(state, report)
        record(state)
    return {name: np.stack(values, axis=1) for name, values in records.items()}


def micro_reports(
    optimizer: Optimizer, sequence: ReportSequence, seed_index: int, mode: str
) -> list[MicroReport]:
    """The reports of one seed for the micro reference (``mode``: ``"const_mean"``/``"real"``)."""
    if mode not in ("const_mean", "real"):
        raise ValueError(f"mode must be 'const_mean' or 'real', got {mode!r}")
    out = []
    for i in range(sequence.n_reports):
        signals = sequence.pair_signals(seed_index, i)
        if mode == "const_mean":
            signals = np.full(signals.shape[0], signals.sum() / signals.shape[0])
        iter_local = sequence.iter_local[:, i]
        c = optimizer.perturbation(iter_local)[seed_index]
        out.append(
            MicroReport(
                signals, sequence.flips[seed_index, i].copy(), c, int(iter_local[seed_index])
            )
        )
    return out


def run_paths(
    kind: str,
    view: DeveloperView,
    hyper,
    sequence: ReportSequence,
    seed_index: int = 0,
    *,
    clamp_every_pair=False,
) -> dict[str, dict[str, np.ndarray]]:
    """The three paths of one seed: ``{path: {name: (report + 1, param)}}``."""
    optimizer = build(kind, view, hyper)
    macro = run_macro(optimizer, sequence)
    paths = {"macro": {name: values[seed_index] for name, values in macro.items()}}
    for mode in ("const_mean", "real"):
        reports = micro_reports(optimizer, sequence, seed_index, mode)
        paths[f"micro_{mode}"] = run_micro(
            kind, view, hyper, reports, clamp_every_pair=clamp_every_pair
        )
    return paths


def gap_table(
    kind: str,
    paths: dict[str, dict[str, np.ndarray]],
    param_names,
    micro_steps: int = 0,
) -> list[dict]:
    """Largest gaps of the macro path against both micro paths, as tidy rows.

    ``max_abs_gap`` is ``max_i |macro_i - micro_i|`` over report boundaries;
    ``max_rel_gap`` divides it by ``scale = max_i |micro_i - micro_0|``, the
    reference path's largest excursion from its start (NaN if it never moves);
    ``rounding_floor = eps * max_i |micro_i| * micro_steps`` is how far float rounding
    alone may part the paths over ``micro_steps`` micro-steps (module docstring; 0 by
    default), and ``rel_gap_beyond_rounding = max(max_abs_gap - rounding_floor, 0) /
    scale`` (NaN if the path never moves) is the gate's part of the gap.
    Rows ``param = "all"`` summarise: the largest of each column over the parameters.
    """
    eps = float(np.finfo(np.float64).eps)
    rows = []
    for reference in ("micro_const_mean", "micro_real"):
        for quantity in paths["macro"]:
            macro, micro = paths["macro"][quantity], paths[reference][quantity]
            gap = np.abs(macro - micro).max(axis=0)
            scale = np.abs(micro - micro[0]).max(axis=0)
            floor = eps * np.abs(micro).max(axis=0) * float(micro_steps)
            with np.errstate(divide="ignore", invalid="ignore"):
                moved = np.where(scale > 0, scale, 1.0)
                rel = np.where(scale > 0, gap / moved, np.nan)
                beyond = np.where(scale > 0, np.maximum(gap - floor, 0.0) / moved, np.nan)
            for name, g, s, r, f, b in zip(
                param_names, gap, scale, rel, floor, beyond, strict=True
            ):
                rows.append(_row(kind, reference, quantity, str(name), g, r, s, f, b))
            rows.append(
                _row(
                    kind,
                    reference,
                    quantity,
                    "all",
                    gap.max(),
                    _nanmax(rel),
                    scale.max(),
                    floor.max(),
                    _nanmax(beyond),
                )
            )
    return rows


def _nanmax(values: np.ndarray) -> float:
    """The largest finite-or-infinite value, NaN when every value is NaN."""
    return float(np.nanmax(values)) if not np.all(np.isnan(values)) else float("nan")


def _row(kind, reference, quantity, param, gap, rel, scale, floor, beyond) -> dict:
    return {
        "kind": kind,
        "reference": reference,
        "quantity": quantity,
        "param": param,
        "max_abs_gap": float(gap),
        "max_rel_gap": float(rel),
        "scale": float(scale),
        "rounding_floor": float(floor),
        "rel_gap_beyond_rounding": float(beyond),
    }


def run_micro(
    kind: str,
    view: DeveloperView,
    hyper,
    reports: list[MicroReport],
    *,
    clamp_every_pair: bool = False,
) -> dict[str, np.ndarray]:
    """The micro path of ``kind`` at report boundaries, from the row's reference:
    ``{"theta": (report + 1, param)}`` (row 0 the start), plus ``"x"`` and ``"z"``
    for the schedule-free kinds."""
    micro = get_spec(kind).micro_reference()
    return micro(view, hyper, reports, clamp_every_pair=clamp_every_pair)


def worst_gap(rows: Iterable[dict]) -> float:
    """The gate's statistic: the largest relative gap beyond float rounding
    (``rel_gap_beyond_rounding``, :func:`gap_table`) of the macro path to the micro
    const-mean path over every quantity; a reference path that never moves counts 0 if
    the macro stays within the rounding floor of it, infinity otherwise; a non-finite
    gap is infinity."""
    worst = 0.0
    for row in rows:
        if row["reference"] != "micro_const_mean" or row["param"] != "all":
            continue
        gap, floor = row["max_abs_gap"], row.get("rounding_floor", 0.0)
        rel = row.get("rel_gap_beyond_rounding", row["max_rel_gap"])
        if not math.isfinite(gap):
            return math.inf
        still = 0.0 if gap <= floor else math.inf
        worst = max(worst, rel if math.isfinite(rel) else still)
    return worst


def raw_gap(rows: Iterable[dict]) -> float:
    """The largest ``max_rel_gap`` of the macro path to the micro const-mean path (the
    gap before the rounding floor is taken off), NaN when no path moves."""
    values = [
        row["max_rel_gap"]
        for row in rows
        if row["reference"] == "micro_const_mean" and row["param"] == "all"
    ]
    finite = [v for v in values if not math.isnan(v)]
    return max(finite) if finite else math.nan


@dataclass(frozen=True)
class Outcome:
    """What validating one arm gave: the gate statistic and the files written
    (none if the kind has no micro reference and was skipped)."""

    name: str
    kind: str
    gap: float
    tolerance: float
    written: dict[str, Path]
    skipped: bool = False
    raw: float = math.nan  # the relative gap before the rounding floor is taken off

    @property
    def passed(self) -> bool:
        return self.skipped or self.gap <= self.tolerance

    def line(self) -> str:
        """One line for the log: passed, failed or skipped, and why."""
        if self.skipped:
            return f"validate {self.name}: skipped, kind {self.kind} has no micro reference"
        verdict = "passed" if self.passed else "FAILED"
        rounding = ""
        if math.isfinite(self.raw) and self.raw > self.tolerance >= self.gap:
            rounding = f"; {self.raw:.3g} with float rounding, whose floor covers the excess"
        return (
            f"validate {self.name} ({self.kind}): gate {verdict}, relative gap to micro "
            f"const-mean {self.gap:.3g} beyond float rounding (allowed {self.tolerance:.3g})"
            f"{rounding}"
        )


@dataclass(frozen=True)
class Draw:
    """The synthetic setup of a validation: report sequence, developer view, clamping.

    seed              entropy of the random streams (sizes, outcomes, flips, shuffle)
    n_reports         number of reports replayed
    n_params          number of parameters (starts alternate 900 / 1100)
    sizes             law of the report sizes N_i: "uniform" (1..max_pairs), "pow2"
                      (powers of two up to max_pairs) or "fixed" (always max_pairs)
    max_pairs         largest report size
    shuffle           permute the report order (same reports, different order)
    elo_gap           fixed Elo advantage that sets the per-pair outcome distribution
    c_dev             the developer perturbation of every parameter (theta units)
    theta_min/max     bounds of every parameter
    clamp_every_pair  micro paths clamp after every pair (default: at report boundaries)
    """

    seed: int = 0
    n_reports: int = 200
    n_params: int = 4
    sizes: str = "uniform"
    max_pairs: int = 128
    shuffle: bool = False
    elo_gap: float = 5.0
    c_dev: float = 10.0
    theta_min: float = 0.0
    theta_max: float = 2000.0
    clamp_every_pair: bool = False

    def sequence(self) -> ReportSequence:
        return make_reports(
            self.n_reports,
            self.n_params,
            seed=self.seed,
            sizes=self.sizes,
            max_pairs=self.max_pairs,
            shuffle=self.shuffle,
            elo_gap=self.elo_gap,
        )

    def view(self, total_pairs: int) -> DeveloperView:
        return validation_view(
            self.n_params,
            total_pairs,
            c_dev=self.c_dev,
            theta_min=self.theta_min,
            theta_max=self.theta_max,
        )


__all__ = [
    "PATHS",
    "Draw",
    "Outcome",
    "ReportSequence",
    "gap_table",
    "make_reports",
    "micro_reports",
    "run_macro",
    "run_micro",
    "run_paths",
    "validation_view",
    "worst_gap",
]
