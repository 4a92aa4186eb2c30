"""The optimizer table: one row per optimizer kind.

The CLI, the configuration schema, the docs and the shared optimizer tests all
read :data:`REGISTRY`. Adding an optimizer is one row here plus its module.
"""

from __future__ import annotations

import dataclasses

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers.adam import AdamHyper, build_adam, build_adam_block
from spsa_bench.optimizers.ademamix import AdemamixHyper, build_ademamix
from spsa_bench.optimizers.base import Optimizer, OptimizerSpec, Report
from spsa_bench.optimizers.schedule_free import (
    SfAdamBlockHyper,
    SfAdamHyper,
    SfSgdHyper,
    build_sf_adam,
    build_sf_adam_block,
    build_sf_sgd,
    build_sf_sgd_block,
)
from spsa_bench.optimizers.spsa import (
    SpsaCwdHyper,
    SpsaHyper,
    build_spsa,
    build_spsa_block,
    build_spsa_cwd,
)

REGISTRY: dict[str, OptimizerSpec] = {
    spec.kind: spec
    for spec in (
        OptimizerSpec(
            "spsa",
            "spsa",
            "classic Fishtest SPSA: block-start gain a_k/c_k times the report's total result",
            SpsaHyper,
            build_spsa,
        ),
        OptimizerSpec(
            "spsa-block",
            "spsa",
            "SPSA with the mean gain over the block's N micro-iterations (equals N micro-steps)",
            SpsaHyper,
            build_spsa_block,
        ),
        OptimizerSpec(
            "spsa-cwd",
            "spsa",
            "SPSA plus cautious weight decay centred at theta_start",
            SpsaCwdHyper,
            build_spsa_cwd,
        ),
        OptimizerSpec(
            "sf-sgd",
            "schedule-free",
            "naive schedule-free SGD: z step lr*c*S*flip, x takes the block as one mass at z_new",
            SfSgdHyper,
            build_sf_sgd,
        ),
        OptimizerSpec(
            "sf-sgd-block",
            "schedule-free",
            "schedule-free SGD with the triangular Polyak surrogate (equals N micro-steps)",
            SfSgdHyper,
            build_sf_sgd_block,
        ),
        OptimizerSpec(
            "sf-adam",
            "schedule-free",
            "naive schedule-free Adam: v from the squared block mean, step lr*S (grows with N)",
            SfAdamHyper,
            build_sf_adam,
        ),
        OptimizerSpec(
            "sf-adam-block",
            "schedule-free",
            "schedule-free Adam: report-level mu2, bias-corrected block v, factor 1, triangular x",
            SfAdamBlockHyper,
            build_sf_adam_block,
        ),
        OptimizerSpec(
            "adam",
            "adam",
            "textbook Adam: N micro-steps per report with the block-mean gradient",
            AdamHyper,
            build_adam,
        ),
        OptimizerSpec(
            "adam-block",
            "adam",
            "block Adam: closed-form m, v, denominator frozen at block end, bias-corrected at T+N",
            AdamHyper,
            build_adam_block,
        ),
        OptimizerSpec(
            "ademamix",
            "ademamix",
            "AdEMAMix: N micro-steps per report (fast + slow EMA) with the block-mean gradient",
            AdemamixHyper,
            build_ademamix,
        ),
    )
}


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


__all__ = [
    "REGISTRY",
    "Optimizer",
    "OptimizerSpec",
    "Report",
    "build",
    "get_spec",
    "hyper_from_dict",
]
