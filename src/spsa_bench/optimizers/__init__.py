"""The optimizers: one module per family, the table of kinds in :mod:`.registry`.

:data:`REGISTRY` maps each kind to its row (built-ins plus entry-point plugins);
:func:`build` makes an optimizer from the developer view and hyperparameters.
"""

from __future__ import annotations

import dataclasses

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers.base import Optimizer, OptimizerSpec, Report
from spsa_bench.optimizers.registry import ENTRY_POINT_GROUP, REGISTRY


def get_spec(kind: str) -> OptimizerSpec:
    try:
        return REGISTRY[kind]
    except KeyError:
        raise ValueError(f"unknown optimizer kind {kind!r}; known: {sorted(REGISTRY)}") from None


def hyper_from_dict(kind: str, values: dict | None = None):
    """The hyperparameter dataclass of ``kind``, defaults overridden by ``values``."""
    spec = get_spec(kind)
    values = dict(values or {})
    names = {f.name for f in dataclasses.fields(spec.hyper)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(
            f"optimizer kind {kind!r} has no hyperparameter {unknown[0]!r}; known: {sorted(names)}"
        )
    return spec.hyper(**values)


def build(kind: str, view: DeveloperView, hyper=None, name: str | None = None) -> Optimizer:
    """Build optimizer ``kind`` from the developer view and hyperparameters only."""
    spec = get_spec(kind)
    if hyper is None:
        hyper = spec.hyper()
    optimizer = spec.build(view, hyper)
    return dataclasses.replace(optimizer, name=name or kind)


__all__ = [
    "ENTRY_POINT_GROUP",
    "REGISTRY",
    "Optimizer",
    "OptimizerSpec",
    "Report",
    "build",
    "get_spec",
    "hyper_from_dict",
]
