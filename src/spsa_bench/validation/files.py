"""The files of a validation: the three paths as NetCDF, the gap table as CSV and
the figure (:mod:`spsa_bench.analysis.validation_figure`), each written atomically."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from spsa_bench.optimizers import OptimizerSpec
from spsa_bench.results.atomic import atomic_write
from spsa_bench.results.cf import conform, labels_to_auxiliary
from spsa_bench.results.provenance import history
from spsa_bench.validation.gates import PATHS, Draw, ReportSequence, outcome_probabilities

_SUFFIXES = {"netcdf": ".nc", "png": ".png", "svg": ".svg", "gaps": "_gaps.csv"}


def output_names(name: str) -> list[str]:
    """The file names a validation of the arm ``name`` writes (:func:`write_outputs`)."""
    return [f"{name}{suffix}" for suffix in _SUFFIXES.values()]


_LONG_NAMES = {"theta": "exported parameter", "x": "Polyak surrogate", "z": "fast iterate"}


def setup_attrs(name: str, spec: OptimizerSpec, hyper, setup: Draw, total_pairs: int) -> dict:
    """The attributes describing one validation: the arm, its kind and the synthetic setup."""
    return {
        "arm": name,
        "kind": spec.kind,
        "family": spec.family,
        "description": spec.description,
        "hyperparameters": json.dumps(dataclasses.asdict(hyper), sort_keys=True),
        "gate_tolerance": float(spec.micro_tolerance),
        "seed": int(setup.seed),
        "n_reports": int(setup.n_reports),
        "sizes": setup.sizes,
        "max_pairs": int(setup.max_pairs),
        "shuffle": int(bool(setup.shuffle)),
        "elo_gap": float(setup.elo_gap),
        "outcome_probabilities_LL_DL_DD_WD_WW": outcome_probabilities(setup.elo_gap),
        "c_dev": float(setup.c_dev),
        "theta_min": float(setup.theta_min),
        "theta_max": float(setup.theta_max),
        "total_pairs": int(total_pairs),
        "clamping": "every pair"
        if setup.clamp_every_pair
        else "report boundaries (micro as macro)",
        "paths": "macro: fast optimizer; micro_const_mean: per-pair reference fed S_i/N_i; "
        "micro_real: per-pair reference fed the real outcomes",
    }


def paths_dataset(paths, sequence: ReportSequence, param_names, attrs: dict):
    """The paths of seed 0 as a Dataset (dims path, report, param) with the report
    boundaries' pairs, sizes and signals as coordinates."""
    import xarray as xr

    pairs = sequence.offsets[0]
    n_pairs = np.concatenate([[0], sequence.n_pairs[0]])
    signal = np.concatenate([[0.0], sequence.signal[0]])
    data_vars = {}
    for name in paths["macro"]:
        stacked = np.stack([paths[p][name] for p in PATHS])
        data_vars[name] = xr.Variable(
            ("path", "report", "param"),
            stacked,
            {"long_name": _LONG_NAMES.get(name, name), "units": "theta units"},
        )
    coords = {
        "path": list(PATHS),
        "report": ("report", np.arange(sequence.n_reports + 1), {"long_name": "report index"}),
        "param": param_names,
        "pairs": ("report", pairs, {"long_name": "pairs played before this boundary"}),
        "n_pairs": (
            "report",
            n_pairs,
            {"long_name": "pairs in the report ending here (0 at the start)"},
        ),
        "signal": ("report", signal, {"long_name": "total result S of the report ending here"}),
    }
    cf = {"title": f"spsa-bench validation: {attrs.get('arm', '')}", "history": history()}
    return conform(xr.Dataset(data_vars, coords=coords, attrs=cf | attrs))


def write_outputs(
    output: Path,
    name: str,
    spec: OptimizerSpec,
    hyper,
    setup: Draw,
    sequence: ReportSequence,
    paths,
    rows: list[dict],
    plot_params: int,
) -> dict[str, Path]:
    """Write ``<name>.nc``, ``<name>_gaps.csv``, ``<name>.png`` and ``<name>.svg``
    into ``output`` (created if missing); returns them by role
    (``netcdf``, ``gaps``, ``png``, ``svg``)."""
    import pandas as pd

    from spsa_bench.analysis.validation_figure import draw_paths

    output.mkdir(parents=True, exist_ok=True)
    targets = {role: output / f"{name}{suffix}" for role, suffix in _SUFFIXES.items()}
    attrs = setup_attrs(name, spec, hyper, setup, int(sequence.offsets[0, -1]))
    param_names = [f"p{i}" for i in range(setup.n_params)]
    dataset = paths_dataset(paths, sequence, param_names, attrs)
    on_disk = labels_to_auxiliary(dataset)
    atomic_write(targets["netcdf"], lambda tmp: on_disk.to_netcdf(tmp, engine="netcdf4"))
    table = pd.DataFrame(rows)
    table.insert(0, "arm", name)
    atomic_write(targets["gaps"], lambda tmp: table.to_csv(tmp, index=False, float_format="%.6g"))
    figure = draw_paths(dataset, plot_params)
    for role in ("png", "svg"):
        atomic_write(
            targets[role],
            lambda tmp, role=role: figure.savefig(tmp, format=role, dpi=150, bbox_inches="tight"),
        )
    return targets
