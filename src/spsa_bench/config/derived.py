"""Derived optimizer quantities checked finite before a run starts.

An optimizer is built from the developer view and its hyperparameters
(:func:`spsa_bench.optimizers.build`); what it derives (gain sequences ``a`` and
``c``, learning rates, bounds) lives in the closures of its functions. Every float
array, float and dataclass field found there must be finite, so a setting whose
gains overflow is refused naming the arm instead of writing NaN later. (Not at
configuration time: some arms tabulate per pair, 16 bytes x num_pairs, so building
every arm of every scenario would cost a run's memory just to load a config.)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import numpy as np


def _values(obj, name: str) -> Iterator[tuple[str, object]]:
    """``(name, value)`` of ``obj`` and, for a dataclass, of its fields (one level)."""
    yield name, obj
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for field in dataclasses.fields(obj):
            yield f"{type(obj).__name__}.{field.name}", getattr(obj, field.name, None)


def first_non_finite(optimizer) -> str | None:
    """The name of the first non-finite derived quantity of ``optimizer``, or None."""
    for function in ("init", "perturbation", "update", "export", "extras"):
        target = getattr(optimizer, function, None)
        code, closure = getattr(target, "__code__", None), getattr(target, "__closure__", None)
        if code is None or not closure:
            continue  # not a Python closure: nothing derived to inspect
        for cell_name, cell in zip(code.co_freevars, closure, strict=True):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            for name, value in _values(contents, cell_name):
                if isinstance(value, np.ndarray) and value.dtype.kind == "f":
                    if not np.all(np.isfinite(value)):
                        return name
                elif isinstance(value, float) and not math.isfinite(value):
                    return name
    return None


def check_gains(optimizer, arm: str) -> None:
    """Raise :class:`~spsa_bench.config.loader.ConfigError` naming ``optimizers.<arm>``
    when ``optimizer`` derived a non-finite quantity."""
    from spsa_bench.config.loader import ConfigError

    name = first_non_finite(optimizer)
    if name is not None:
        raise ConfigError(
            f"optimizers.{arm}: its derived {name} is not finite for this scenario "
            "(smaller gains or a narrower range)"
        )
