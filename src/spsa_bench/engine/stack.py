"""Several arms of one sweep in one replay: their rows stacked arm by arm.

The arms of a hyperparameter sweep differ only in their hyperparameters: at one seed
they see the same schedule, flips, rounding uniforms and match draws (common random
numbers, :mod:`spsa_bench.model.streams`), and the replay's work outside the
optimizer's update (dispatch, probes, outcome thresholds, match draws, bookkeeping) is
the same per-event Python work for every arm. Replaying ``K`` arms over ``S`` seeds as
one replay of ``K x S`` rows pays that per-event work once instead of ``K`` times.

Rows are arm-major: rows ``k S .. (k + 1) S - 1`` are arm ``k`` at the seeds
``s_0 .. s_{S-1}``, each row the schedule and keyed streams of its seed alone
(:func:`tile_schedule`, :func:`tile_bowl`). :func:`stack` wraps the arms' optimizers in
one :class:`~spsa_bench.optimizers.base.Optimizer` whose ``update`` (and ``init``,
``export``, ``extras``) calls each arm's own function on its block of rows, so every
arm's arithmetic is exactly that of its separate replay over ``S`` rows; the replay's
compaction drops a finished seed from every block at once (its rows finish together),
so the blocks stay ``rows / K`` rows each. Everything else in the replay reads the
optimizer only through ``perturbation`` (the probe ``c`` of a job), the Hessian match's
``hessian_share`` and ``hessian_shift``, and the iteration counter the arm counts with:
arms are stacked only when these agree (the perturbations compared on every iteration
the schedule hands out), else :func:`stack` returns ``None`` and the caller replays
each arm alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from spsa_bench.dispatch.schedule import PER_SEED_FIELDS, Schedule
from spsa_bench.model.bowl import SeedBowls, TrueBowl
from spsa_bench.optimizers.base import Optimizer


def _blocks(rows: int, arms: int) -> list[slice]:
    """The ``arms`` equal blocks of ``rows`` stacked rows, in arm order."""
    if rows % arms:
        raise ValueError(f"{rows} stacked rows are not {arms} equal blocks")
    size = rows // arms
    return [slice(k * size, (k + 1) * size) for k in range(arms)]


def _split(record, block: slice):
    """The rows in ``block`` of every field of ``record`` (a state or a report: a
    NamedTuple of per-row arrays, a report's absent fields ``None``), as views."""
    return record._make([None if field is None else field[block] for field in record])


def _join(parts: Sequence):
    """The blocks ``parts`` (records of arrays, or arrays) stacked back into rows."""
    first = parts[0]
    if isinstance(first, tuple):
        return type(first)(*(np.concatenate(fields) for fields in zip(*parts, strict=True)))
    return np.concatenate(parts)


def _same_states(arms: Sequence[Optimizer]) -> bool:
    """Every arm's state has the same record type and the same per-row field shapes
    and dtypes (what stacking the rows needs)."""

    def signature(arm: Optimizer):
        state = arm.init(1)
        return type(state), tuple((field.shape[1:], field.dtype) for field in state)

    first = signature(arms[0])
    return all(signature(arm) == first for arm in arms[1:])


def _same_extras(arms: Sequence[Optimizer]) -> bool:
    names = [tuple(arm.extras(arm.init(1))) for arm in arms]
    return all(name == names[0] for name in names[1:])


def _same_perturbation(arms: Sequence[Optimizer], iterations: np.ndarray) -> bool:
    """Every arm hands out the same probe ``c`` at every iteration in ``iterations``
    (bit for bit): ``perturbation`` is a function of a row's iteration alone."""
    first = arms[0].perturbation(iterations)
    return all(np.array_equal(arm.perturbation(iterations), first) for arm in arms[1:])


def stack(arms: Sequence[Optimizer], iterations: np.ndarray, name: str = "") -> Optimizer | None:
    """One optimizer over the arm-major rows of ``arms`` (module docstring), or ``None``
    when the arms cannot share a replay: different Hessian matches, state records or
    extras, or a probe ``c`` that differs at one of ``iterations`` (every ``iter_local``
    the replay hands out, e.g. ``np.unique(schedule.iter_local(counter))``).

    The stacked ``perturbation`` is the first arm's (equal to every arm's at these
    iterations); ``info`` is empty (each arm's own is the caller's to attach); ``name``
    names the stack in the replay's error messages (default: the arms' names)."""
    arms = list(arms)
    if not arms:
        raise ValueError("no arms to stack")
    first = arms[0]
    hessian = {(float(arm.hessian_share), float(arm.hessian_shift)) for arm in arms}
    if len(hessian) > 1 or not _same_states(arms) or not _same_extras(arms):
        return None
    if not _same_perturbation(arms, np.asarray(iterations)):
        return None
    count = len(arms)

    def init(rows: int):
        size = _blocks(rows, count)[0].stop  # every block's
        return _join([arm.init(size) for arm in arms])

    def update(state, report):
        blocks = _blocks(state[0].shape[0], count)
        return _join(
            [
                arm.update(_split(state, block), _split(report, block))
                for arm, block in zip(arms, blocks, strict=True)
            ]
        )

    def export(state) -> np.ndarray:
        blocks = _blocks(state[0].shape[0], count)
        return _join([arm.export(_split(state, b)) for arm, b in zip(arms, blocks, strict=True)])

    def extras(state) -> dict[str, np.ndarray]:
        blocks = _blocks(state[0].shape[0], count)
        parts = [arm.extras(_split(state, b)) for arm, b in zip(arms, blocks, strict=True)]
        return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}

    return Optimizer(
        name=name or "+".join(arm.name for arm in arms),
        init=init,
        perturbation=first.perturbation,
        update=update,
        export=export,
        extras=extras,
        hessian_share=first.hessian_share,
        hessian_shift=first.hessian_shift,
    )


def tile_schedule(schedule: Schedule, copies: int) -> Schedule:
    """``schedule``'s rows repeated ``copies`` times, one block after another (the rows
    of :func:`stack`): row ``k S + i`` is seed ``i``'s schedule. Rows broadcast from
    one (the synchronous mode's) stay broadcast."""

    def tiled(values: np.ndarray) -> np.ndarray:
        if values.ndim and values.strides[0] == 0:  # one row for every seed
            return np.broadcast_to(values[:1], (values.shape[0] * copies,) + values.shape[1:])
        return np.concatenate([values] * copies)

    names = ("seeds", *PER_SEED_FIELDS) + (() if schedule.job_lead is None else ("job_lead",))
    return dataclasses.replace(schedule, **{name: tiled(getattr(schedule, name)) for name in names})


def tile_bowl(bowl: TrueBowl | SeedBowls, seeds: int, copies: int) -> TrueBowl | SeedBowls:
    """The true bowl of every stacked row: one bowl serves every row; per-seed bowls
    (``seeds`` rows) repeated ``copies`` times as :func:`tile_schedule` repeats the seeds."""
    return bowl.rows(np.tile(np.arange(seeds), copies))
