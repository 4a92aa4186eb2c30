"""The optimizer table: one :class:`OptimizerSpec` row per optimizer kind.

The CLI, the configuration schema, the docs, validation and the shared optimizer
tests all read :data:`REGISTRY`. The built-in rows are listed below; other
packages add rows through the entry-point group ``spsa_bench.optimizers``:
each entry point is a callable taking no argument and returning an
:class:`OptimizerSpec`. Plugins are loaded once, the first time the table is
read. A plugin that fails to import or to run, returns something that is not a
valid row, or reuses a kind already in the table is skipped with one line on
stderr naming it.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterator, Mapping

from spsa_bench.distributions import entry_points
from spsa_bench.optimizers.adam import (
    AdamCoordHyper,
    AdamHyper,
    build_adam,
    build_adam_block,
    build_adam_coord,
)
from spsa_bench.optimizers.ademamix import AdemamixHyper, build_ademamix
from spsa_bench.optimizers.autoselect import SpsaAutoselectHyper, build_spsa_autoselect
from spsa_bench.optimizers.base import OptimizerSpec
from spsa_bench.optimizers.openbench import OpenBenchHyper, build_spsa_openbench
from spsa_bench.optimizers.schedule_free import (
    SfAdamBlockHyper,
    SfAdamHyper,
    SfSgdHyper,
    build_sf_adam,
    build_sf_adam_block,
    build_sf_sgd,
    build_sf_sgd_block,
)
from spsa_bench.optimizers.second_order import Spsa2Hyper, build_spsa2
from spsa_bench.optimizers.spsa import (
    SpsaCwdHyper,
    SpsaHyper,
    build_spsa,
    build_spsa_block,
    build_spsa_cwd,
)

ENTRY_POINT_GROUP = "spsa_bench.optimizers"

#: The built-in rows name their per-pair references (:mod:`spsa_bench.reference.micro`)
#: as ``"module:function"`` strings, imported only when validation calls one: the
#: optimizers never import the references, which drive the optimizers.
_MICRO = "spsa_bench.reference.micro:"

#: Validation gates of the approximate macros: the largest relative gap to the
#: micro const-mean path allowed, about twice the largest measured with the
#: validation setup (seeds 0-2, uniform, power-of-two and fixed N; docs/optimizers.md):
#: spsa 0.055, sf-sgd 0.34, sf-adam 0.58, sf-adam-block 0.99, adam-block 0.24.
#: spsa-cwd decays once per report where its reference decays every pair: the gap
#: grows with lambda_cwd and levels off below 2 (0.35 at 0.05, 1.44 at 0.5, 1.83 at 5),
#: so its gate only catches a broken macro. Exact macros keep the 1e-9 default.
_APPROXIMATE = {
    "spsa": 0.2,
    "spsa-cwd": 3.0,
    "sf-sgd": 0.6,
    "sf-adam": 1.0,
    "sf-adam-block": 2.0,
    "adam-block": 0.5,
}

# fmt: off
_BUILT_INS = (
    ("spsa", "spsa", SpsaHyper, build_spsa, _MICRO + "spsa_micro",
     "classic Fishtest SPSA: block-start gain a_k/c_k times the report's total result"),
    ("spsa-block", "spsa", SpsaHyper, build_spsa_block, _MICRO + "spsa_micro",
     "SPSA with the mean gain over the block's N micro-iterations (equals N micro-steps)"),
    ("spsa-cwd", "spsa", SpsaCwdHyper, build_spsa_cwd, _MICRO + "spsa_cwd_micro",
     "SPSA plus cautious weight decay centred at theta_start"),
    ("sf-sgd", "schedule-free", SfSgdHyper, build_sf_sgd, _MICRO + "sf_sgd_micro",
     "naive schedule-free SGD: z step lr*c*S*flip, x takes the block as one mass at z_new"),
    ("sf-sgd-block", "schedule-free", SfSgdHyper, build_sf_sgd_block, _MICRO + "sf_sgd_micro",
     "schedule-free SGD with the triangular Polyak surrogate (equals N micro-steps)"),
    ("sf-adam", "schedule-free", SfAdamHyper, build_sf_adam, _MICRO + "sf_adam_micro",
     "naive schedule-free Adam: v from the squared block mean, step lr*S (grows with N)"),
    ("sf-adam-block", "schedule-free", SfAdamBlockHyper, build_sf_adam_block, _MICRO + "sf_adam_micro",
     "schedule-free Adam: report-level mu2, bias-corrected block v, factor 1, triangular x"),
    ("adam", "adam", AdamHyper, build_adam, _MICRO + "adam_micro",
     "textbook Adam: N micro-steps per report with the block-mean gradient"),
    ("adam-block", "adam", AdamHyper, build_adam_block, _MICRO + "adam_micro",
     "block Adam: closed-form m, v, denominator frozen at block end, bias-corrected at T+N"),
    ("ademamix", "ademamix", AdemamixHyper, build_ademamix, _MICRO + "ademamix_micro",
     "AdEMAMix: N micro-steps per report (fast + slow EMA) with the block-mean gradient"),
    # appended, so the kinds above keep their figure colours (tab10 in registry order)
    ("spsa-autoselect", "spsa", SpsaAutoselectHyper, build_spsa_autoselect, None,
     "SPSA with Fishtest Autoselect's constant gains: c_end = range/6, r from a precision target"),
    ("adam-coord", "adam", AdamCoordHyper, build_adam_coord, _MICRO + "adam_coord_micro",
     "Adam with per-coordinate v of grad_i = -(S/N) flip_i / c_i: N micro-steps per report"),
    ("spsa-openbench", "spsa", OpenBenchHyper, build_spsa_openbench, None,
     "OpenBench's SPSA: iteration per pairs_per pairs, A = A_ratio*iterations, int c_k >= 0.5"),
    ("spsa-2", "spsa", Spsa2Hyper, build_spsa2, _MICRO + "spsa2_micro",
     "2SPSA (Spall 2000; fishtest #2126): Newton step a_k M^-1 g, M = (B^2 + delta^2 I)^1/2"),
)
# fmt: on


def _built_in_rows() -> dict[str, OptimizerSpec]:
    rows = {}
    for kind, family, hyper, build, reference, description in _BUILT_INS:
        tolerance = _APPROXIMATE.get(kind, 1e-9)
        rows[kind] = OptimizerSpec(kind, family, description, hyper, build, reference, tolerance)
    return rows


def check_row(row: object) -> OptimizerSpec:
    """``row`` if it is a usable table row; ValueError saying what is wrong otherwise."""
    if not isinstance(row, OptimizerSpec):
        raise ValueError(f"returned {type(row).__name__}, not an OptimizerSpec")
    if not isinstance(row.kind, str) or not row.kind:
        raise ValueError("the row has no kind")
    if not (isinstance(row.hyper, type) and dataclasses.is_dataclass(row.hyper)):
        raise ValueError(f"{row.kind}: hyper is not a dataclass")
    for f in dataclasses.fields(row.hyper):
        if "doc" not in f.metadata or f.default is dataclasses.MISSING:
            raise ValueError(f"{row.kind}: hyperparameter {f.name} is not a hyperparameter(...)")
    if not callable(row.build):
        raise ValueError(f"{row.kind}: build must be a callable")
    if isinstance(row.micro, str):
        module, colon, function = row.micro.partition(":")
        if not (module and colon and function):
            raise ValueError(f"{row.kind}: micro {row.micro!r} is not 'package.module:function'")
    elif row.micro is not None and not callable(row.micro):
        raise ValueError(
            f"{row.kind}: micro must be a callable, a 'module:function' string or None"
        )
    return row


def _warn(message: str) -> None:
    print(f"spsa-bench: {message}", file=sys.stderr)


class Registry(Mapping[str, OptimizerSpec]):
    """The built-in rows, then the plugin rows (loaded on first read)."""

    def __init__(self, built_ins: dict[str, OptimizerSpec], group: str = ENTRY_POINT_GROUP):
        self._built_ins = dict(built_ins)
        self._group = group
        self._rows: dict[str, OptimizerSpec] | None = None

    def _table(self) -> dict[str, OptimizerSpec]:
        if self._rows is None:
            rows = dict(self._built_ins)
            for entry in entry_points(group=self._group):
                row = load_plugin(entry, rows)
                if row is not None:
                    rows[row.kind] = row
            self._rows = rows
        return self._rows

    def __getitem__(self, kind: str) -> OptimizerSpec:
        if self._rows is None and kind in self._built_ins:
            return self._built_ins[kind]  # no plugin may take a built-in kind: no scan yet
        return self._table()[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def built_ins(self) -> dict[str, OptimizerSpec]:
        """The rows shipped with spsa-bench (the packaged schema describes only these)."""
        return dict(self._built_ins)

    def plugins(self) -> dict[str, OptimizerSpec]:
        return {kind: row for kind, row in self._table().items() if kind not in self._built_ins}


def load_plugin(entry, rows: Mapping[str, OptimizerSpec]) -> OptimizerSpec | None:
    """The row an entry point returns, tagged with its distribution; None (and one
    line on stderr) if it fails to load, is not a valid row, or its kind is taken."""
    distribution = getattr(getattr(entry, "dist", None), "name", "") or "unknown distribution"
    label = f"optimizer plugin {entry.name!r} ({entry.value}, from {distribution})"
    try:
        factory: Callable[[], object] = entry.load()
        row = check_row(factory())
    except Exception as error:  # a broken plugin must not break the CLI
        _warn(f"skipped {label}: {type(error).__name__}: {error}")
        return None
    if row.kind in rows:
        _warn(f"skipped {label}: kind {row.kind!r} is already registered")
        return None
    return dataclasses.replace(row, distribution=distribution)


REGISTRY = Registry(_built_in_rows())
