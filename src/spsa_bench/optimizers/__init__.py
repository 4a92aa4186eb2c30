"""The optimizer table: one row per optimizer kind.

The CLI, the configuration schema, the docs and the shared optimizer tests all
read :data:`REGISTRY`. Adding an optimizer is one row here plus its module.
"""

from __future__ import annotations

import dataclasses

from spsa_bench.developer import DeveloperView
from spsa_bench.optimizers.base import Optimizer, OptimizerSpec, Report
from spsa_bench.optimizers.spsa import SpsaCwdHyper, SpsaHyper, build_spsa, build_spsa_block, build_spsa_cwd

REGISTRY: dict[str, OptimizerSpec] = {
    spec.kind: spec
    for spec in (
        OptimizerSpec("spsa", "spsa", "classic Fishtest SPSA: block-start gain a_k/c_k times the report's total result", SpsaHyper, build_spsa),
        OptimizerSpec("spsa-block", "spsa", "SPSA with the mean gain over the block's N micro-iterations (equals N micro-steps)", SpsaHyper, build_spsa_block),
        OptimizerSpec("spsa-cwd", "spsa", "SPSA plus cautious weight decay centred at theta_start", SpsaCwdHyper, build_spsa_cwd),
    )
}


def hyper_from_dict(kind: str, values: dict | None = None):
    """The hyperparameter dataclass of ``kind``, defaults overridden by ``values``."""
    spec = get_spec(kind)
    values = dict(values or {})
    names = {f.name for f in dataclasses.fields(spec.hyper)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"optimizer kind {kind!r} has no hyperparameter {unknown[0]!r}; known: {sorted(names)}")
    return spec.hyper(**values)


def get_spec(kind: str) -> OptimizerSpec:
    try:
        return REGISTRY[kind]
    except KeyError:
        raise ValueError(f"unknown optimizer kind {kind!r}; known: {sorted(REGISTRY)}") from None


def build(kind: str, view: DeveloperView, hyper=None, name: str | None = None) -> Optimizer:
    """Build optimizer ``kind`` from the developer view and hyperparameters only."""
    spec = get_spec(kind)
    if hyper is None:
        hyper = spec.hyper()
    optimizer = spec.build(view, hyper)
    return dataclasses.replace(optimizer, name=name or kind)


__all__ = ["REGISTRY", "Optimizer", "OptimizerSpec", "Report", "build", "get_spec", "hyper_from_dict"]
