"""Run the validation gate (:mod:`spsa_bench.validation.gates`) for one optimizer kind
or for the arms of a configuration, and write its files
(:mod:`spsa_bench.validation.files`): ``<name>.nc``, ``<name>.png``/``.svg`` and
``<name>_gaps.csv``. A kind whose row has no micro reference is skipped."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from pathlib import Path

from spsa_bench.optimizers import get_spec, hyper_from_dict
from spsa_bench.validation.files import write_outputs
from spsa_bench.validation.gates import (
    Draw,
    Outcome,
    gap_table,
    raw_gap,
    run_paths,
    worst_gap,
)


def validate(
    kind: str,
    output_dir,
    *,
    hyper=None,
    name: str | None = None,
    plot_params: int = 3,
    **draw,
) -> Outcome:
    """Compare optimizer ``kind``'s macro path with its two micro paths, write the
    results and check the gate.

    hyper        the hyperparameters: a dataclass of the kind, or overrides
                 ({name: value}) of its defaults
    name         the file stem and label (default: the kind), e.g. a config arm's name
    plot_params  how many parameters the figure shows
    draw         the synthetic setup, fields of :class:`Draw`

    Writes ``<name>.nc``, ``<name>.png``/``.svg`` and ``<name>_gaps.csv``
    (:func:`spsa_bench.validation.files.write_outputs`) unless the kind has no
    micro reference (then nothing is written and the outcome is ``skipped``).
    """
    spec = get_spec(kind)
    name = name or kind
    if spec.micro is None:
        return Outcome(name, kind, math.nan, spec.micro_tolerance, {}, skipped=True)
    if not dataclasses.is_dataclass(hyper):
        hyper = hyper_from_dict(kind, hyper)
    setup = Draw(**draw)
    sequence = setup.sequence()
    view = setup.view(int(sequence.offsets[0, -1]))
    paths = run_paths(kind, view, hyper, sequence, 0, clamp_every_pair=setup.clamp_every_pair)
    param_names = [f"p{i}" for i in range(setup.n_params)]
    rows = gap_table(kind, paths, param_names, micro_steps=int(sequence.offsets[0, -1]))
    written = write_outputs(
        Path(output_dir), name, spec, hyper, setup, sequence, paths, rows, plot_params
    )
    return Outcome(name, kind, worst_gap(rows), spec.micro_tolerance, written, raw=raw_gap(rows))


def validate_arms(config, names: Iterable[str], output_dir, **draw) -> list[Outcome]:
    """:func:`validate` every arm in ``names``: an arm of ``config`` runs with its
    own kind and hyperparameters, any other name must be a kind (its defaults)."""
    outcomes = []
    for name in names:
        if name in config.optimizers:
            arm = config.optimizers[name]
            kind, hyper = arm.kind, arm.hyper
        else:
            kind, hyper = get_spec(name).kind, None
        outcomes.append(validate(kind, output_dir, hyper=hyper, name=name, **draw))
    return outcomes


__all__ = ["validate", "validate_arms"]
