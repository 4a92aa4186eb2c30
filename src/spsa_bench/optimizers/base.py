"""The optimizer interface shared by every optimizer family.

An optimizer is a handful of pure functions closed over its developer view and
hyperparameters (optax style), acting on a state of arrays shaped
``(seed, param)`` (or ``(seed,)`` for per-seed scalars):

- ``init(n_seeds) -> state``
- ``perturbation(iter_local) -> c``, the probe scale ``(seed, param)`` a job
  dispatched at iteration ``iter_local`` (``(seed,)``) plays with
- ``update(state, report) -> state``, one report's update; never mutates its inputs
- ``export(state) -> theta``, the point that is probed and recorded
- ``extras(state) -> {name: array}``, extra trajectories to record (``x``, ``z``)

Optimizers are built from a :class:`~spsa_bench.model.developer.DeveloperView` and a
frozen hyperparameter dataclass only: nothing here can reach ground truth.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from spsa_bench.model.developer import DeveloperView


class Report(NamedTuple):
    """One arriving report, for all seeds at once.

    n_pairs     (seed,)        pairs N in the report (>= 1)
    signal      (seed,)        total result S over the report (raw ``net_wins``
                               or the scaled convention, chosen by the runner)
    flip        (seed, param)  the job's Rademacher vector, +-1.0
    c           (seed, param)  the perturbation the job was played with
    iter_local  (seed,)        the job's dispatch iteration K + 1
    realized    (seed, param)  the half-difference the two engines really played,
                               ``(v_plus - v_minus) / 2`` of the played integers where
                               the worker rounded a parameter, exactly ``c * flip``
                               elsewhere (``None``: nothing was rounded)
    staleness   (seed,)        pairs that arrived between the job's dispatch and its
                               arrival (0 in the synchronous mode; ``None``: unknown)
    in_flight   (seed,)        pairs of other jobs in flight at the job's dispatch
                               (dispatched, not yet arrived; ``None``: unknown)
    """

    n_pairs: np.ndarray
    signal: np.ndarray
    flip: np.ndarray
    c: np.ndarray
    iter_local: np.ndarray
    realized: np.ndarray | None = None
    staleness: np.ndarray | None = None
    in_flight: np.ndarray | None = None


State = Any  # a NamedTuple of numpy arrays with leading axis = seed


def no_extras(state: State) -> dict[str, np.ndarray]:
    return {}


@dataclass(frozen=True)
class Optimizer:
    name: str
    init: Callable[[int], State]
    perturbation: Callable[[np.ndarray], np.ndarray]
    update: Callable[[State, Report], State]
    export: Callable[[State], np.ndarray]
    extras: Callable[[State], dict[str, np.ndarray]] = no_extras
    #: derived scalars worth recording with a run (e.g. the games count Autoselect
    #: would ask for); empty for most optimizers
    info: dict[str, float] = field(default_factory=dict)
    #: share of each job's pairs the replay plays as a second, Hessian match (kind
    #: ``spsa-2``: ``theta + c~ D~ +- c D``, :mod:`spsa_bench.optimizers.second_order`);
    #: 0 for every kind that asks for none (its reports are then plain ``Report``\ s)
    hessian_share: float = 0.0
    #: ``c~ / c``, the shift of the Hessian match's two engines along ``D~`` in units of
    #: the job's probe ``c`` (read only when ``hessian_share > 0``)
    hessian_shift: float = 1.0


def hyperparameter(
    default: float | str | None,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: float | None = None,
    exclusive_maximum: float | None = None,
    kind: str = "number",
    enum: tuple[str, ...] | None = None,
    nullable: bool = False,
) -> Any:
    """A hyperparameter field: its default, description and valid range.

    ``kind`` is the JSON Schema type (``"number"``, ``"integer"`` or ``"string"``);
    ``enum`` lists the values a string may take; ``nullable=True`` also admits
    ``None`` (JSON ``null``), and is required for a ``None`` default. The bounds
    apply to numbers only (``None`` passes them). The registry turns these into
    the JSON Schema, the docs and the CLI listing.
    """
    if default is None and not nullable:
        raise ValueError("a hyperparameter with default None must be nullable=True")
    if enum is not None:
        if kind != "string" or not enum or default not in (*enum, *((None,) if nullable else ())):
            raise ValueError(f"enum {enum!r}: a string hyperparameter whose default is a member")
    bounds = {
        "minimum": minimum,
        "maximum": maximum,
        "exclusiveMinimum": exclusive_minimum,
        "exclusiveMaximum": exclusive_maximum,
    }
    meta = {"doc": doc, "type": kind, **{k: v for k, v in bounds.items() if v is not None}}
    if nullable:
        meta["nullable"] = True
    if enum is not None:
        meta["enum"] = tuple(enum)
    return field(default=default, metadata=meta)


def hyper_schema(hyper_cls: type) -> dict[str, dict]:
    """JSON Schema properties of a hyperparameter dataclass.

    A nullable hyperparameter's type is ``[type, "null"]`` (and ``null`` joins its
    ``enum``, if any); an enum is a list.
    """
    properties = {}
    for f in dataclasses.fields(hyper_cls):
        meta = dict(f.metadata)
        nullable = meta.pop("nullable", False)
        kind = meta.pop("type")
        entry = {
            "type": [kind, "null"] if nullable else kind,
            "description": meta.pop("doc"),
            "default": f.default,
        }
        if "enum" in meta:
            entry["enum"] = [*meta.pop("enum"), *([None] if nullable else [])]
        entry.update(meta)
        properties[f.name] = entry
    return properties


def check_choices(hyper: Any) -> None:
    """Raise ValueError if a string hyperparameter of ``hyper`` is not one of its ``enum``
    (the schema checks configurations; this catches hyperparameters built in code)."""
    for f in dataclasses.fields(hyper):
        choices = f.metadata.get("enum")
        value = getattr(hyper, f.name)
        if (
            choices is not None
            and value not in choices
            and not (value is None and f.metadata.get("nullable"))
        ):
            raise ValueError(f"{f.name} = {value!r}: not one of {', '.join(choices)}")


#: A literal per-pair reference: ``micro(view, hyper, reports, *, clamp_every_pair)``
#: returns ``{"theta": (report + 1, param), ...}`` for one seed (see
#: :mod:`spsa_bench.reference.micro` and :mod:`spsa_bench.validation.gates`).
MicroReference = Callable[..., dict[str, np.ndarray]]


def load_reference(target: str) -> MicroReference:
    """The callable a ``"package.module:function"`` string names, imported now.

    A ValueError names the string if it is not of that form, the module cannot be
    imported or has no such callable."""
    module_name, colon, attribute = target.partition(":")
    if not colon or not module_name or not attribute:
        raise ValueError(f"micro reference {target!r} is not 'package.module:function'")
    try:
        reference = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"micro reference {target!r} cannot be loaded: {error}") from None
    if not callable(reference):
        raise ValueError(f"micro reference {target!r} is not callable")
    return reference


@dataclass(frozen=True)
class OptimizerSpec:
    """One row of the optimizer table (:mod:`spsa_bench.optimizers.registry`).

    kind             the name configs use (``kind:`` of an arm)
    family           a group of related kinds (line styles in figures)
    description      one line for ``spsa-bench list`` and the schema
    hyper            the frozen hyperparameter dataclass (fields from :func:`hyperparameter`)
    build            ``build(view, hyper) -> Optimizer``: the developer view and the
                     hyperparameters are all an optimizer gets
    micro            optional literal per-pair reference, the callable or a
                     ``"package.module:function"`` string naming it (imported on first
                     use by :meth:`micro_reference`, so the table imports no reference
                     code); validation skips kinds without one
    micro_tolerance  the validation gate: largest relative gap allowed between the
                     macro path and the micro const-mean path beyond float rounding
                     (1e-9 for an exact macro; spsa_bench.validation.gates)
    distribution     the distribution that registered the row ("" for the built-ins)
    """

    kind: str
    family: str
    description: str
    hyper: type
    build: Callable[[DeveloperView, Any], Optimizer]
    micro: MicroReference | str | None = None
    micro_tolerance: float = 1e-9
    distribution: str = ""

    def micro_reference(self) -> MicroReference:
        """The micro reference as a callable (a ``"module:function"`` string is imported
        here); ValueError if the row has none or it cannot be loaded."""
        if self.micro is None:
            raise ValueError(f"optimizer kind {self.kind!r} has no micro reference")
        if isinstance(self.micro, str):
            return load_reference(self.micro)
        return self.micro
