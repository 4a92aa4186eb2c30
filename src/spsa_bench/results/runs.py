"""The data contract of a run file, built without xarray (:mod:`spsa_bench.results.layout`).

One run file (one optimizer arm x batch mode x scenario x seed range) has dims
``seed``, ``pairs`` (checkpoint grid of pairs consumed), ``param`` (and
``worker`` for worker-pool KPIs, ``outcome`` for the pentanomial counts); the data
variables of :data:`RUN_VARIABLES`, the optimizer's state extras and per-seed KPIs;
the per-parameter coordinates of :data:`PARAM_COORDS`; scalar coordinates
``optimizer``, ``batch_mode``, ``scenario`` (the cell) and the arm's ``kind`` and
hyperparameters (one scalar each, named as in the configuration). Attributes follow
CF-1.11 (:mod:`spsa_bench.results.cf`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from spsa_bench.model.bowl import Problem, SeedBowls, TrueBowl
from spsa_bench.results.cf import cf_attrs
from spsa_bench.results.layout import Layout
from spsa_bench.results.provenance import provenance

if TYPE_CHECKING:  # the record a run file is written from; engine.simulate imports this module
    from spsa_bench.engine.replay import RunResult

CELL_DIMS = ("optimizer", "batch_mode", "scenario")
THETA = "theta units"
#: The ``long_name`` of an optimizer's state variables beside ``theta`` (the
#: schedule-free arms' ``x`` and ``z``): ``"optimizer state x"``. Run files keep them;
#: ``benchmark.nc`` leaves them out (:func:`optimizer_state`).
STATE_LONG_NAME = "optimizer state"
#: Per-parameter coordinates of a run file (fields of the problem's parameters) and their attributes.
PARAM_COORDS = {
    "param_group": {"long_name": "parameter group"},
    "w_true": {"long_name": "true curvature weight"},
    "w_dev": {"long_name": "developer's curvature weight"},
    "miscalibration": {"long_name": "w_true / w_dev"},
    "c_dev": {"long_name": "developer perturbation c_end", "units": THETA},
    "theta_start": {"long_name": "start value", "units": THETA},
    "theta_peak": {"long_name": "true optimum", "units": THETA},
    "theta_min": {"long_name": "developer lower bound", "units": THETA},
    "theta_max": {"long_name": "developer upper bound", "units": THETA},
}


class _Run(NamedTuple):
    """What the variables of a run file are computed from."""

    result: RunResult
    bowl: TrueBowl | SeedBowls
    elo: np.ndarray  # (seed, pairs): true Elo of theta
    seeds: np.ndarray


def _distance_to_peak(run: _Run) -> np.ndarray:
    """``||theta - theta_peak||_2`` over the active parameters, per (seed, pairs)."""
    if isinstance(run.bowl, SeedBowls):  # the optimum and the active set of each seed
        offset = run.result.theta - run.bowl.theta_peak[:, None, :]
        offset = np.where(run.bowl.active[:, None, :], offset, 0.0)
        return np.sqrt(np.sum(offset**2, axis=-1))
    active = run.bowl.active
    offset = run.result.theta[..., active] - run.bowl.theta_peak[active]
    return np.sqrt(np.sum(offset**2, axis=-1))


_Values = Callable[[_Run], np.ndarray]
#: name -> (dims, long_name, units, values) of every data variable of a run file.
RUN_VARIABLES: dict[str, tuple[tuple[str, ...], str, str, _Values]] = {
    "theta": (("seed", "pairs", "param"), "exported parameters", THETA, lambda r: r.result.theta),
    "elo": (("seed", "pairs"), "true Elo of theta", "Elo", lambda r: r.elo),
    "elo_loss": (
        ("seed", "pairs"),
        "peak_elo - Elo(theta)",
        "Elo",
        lambda r: r.bowl.peak_elo - r.elo,
    ),
    "dist_to_target": (
        ("seed", "pairs"),
        "L2 distance of theta to theta_peak over active parameters",
        THETA,
        _distance_to_peak,
    ),
    "final_elo": (("seed",), "true Elo after the whole budget", "Elo", lambda r: r.elo[:, -1]),
    "avg_step_size_last_100": (
        ("seed",),
        "mean L2 step of theta over the last 100 updates",
        THETA,
        lambda r: r.result.avg_step_size_last_100,
    ),
    "total_pairs": (("seed",), "pairs consumed", "pairs", lambda r: r.result.total_pairs),
    "n_updates": (
        ("seed",),
        "reports applied (optimizer updates)",
        "1",
        lambda r: r.result.n_updates,
    ),
}
#: name -> (dims, long_name, units, values) of the dimension coordinates of a run file.
RUN_AXES: dict[str, tuple[tuple[str, ...], str, str | None, _Values]] = {
    "seed": (("seed",), "seed", None, lambda r: np.asarray(r.seeds, dtype=np.int64)),
    "pairs": (("pairs",), "game pairs consumed", "pairs", lambda r: r.result.pairs_grid),
    "param": (("param",), "parameter index", None, lambda r: np.arange(r.result.theta.shape[-1])),
}


def _param_values(params, name: str) -> np.ndarray:
    """A per-parameter field of the problem; the group labels as an object (string) array."""
    values = getattr(params, name)
    return np.array(values, dtype=object) if name == "param_group" else values


def cf_variable(dims: tuple[str, ...], values, long_name: str, units: str | None = None) -> tuple:
    """``(dims, values, attrs)`` of one variable: its ``long_name`` and ``units`` (where
    given) as CF attributes (:func:`spsa_bench.results.cf.cf_attrs`)."""
    attrs = {"long_name": long_name} if units is None else {"long_name": long_name, "units": units}
    return dims, values, cf_attrs(attrs)


def arm_coords(config_json: str, optimizer: str, kind: str) -> dict[str, tuple]:
    """Scalar coordinates ``kind`` and one per hyperparameter of arm ``optimizer``.

    The hyperparameters are the arm's entry of the resolved configuration (every
    hyperparameter of its kind, defaults filled in); booleans are stored as 0/1,
    strings as strings. A hyperparameter that is ``None`` (null, e.g. an unset
    ``A_ratio``) is left out: a NetCDF scalar coordinate cannot be null, and a NaN
    would fail the finiteness check of ``combine.check_run``; ``combine`` fills the
    gap with NaN (or ``""`` for text) where other arms set it.
    """
    hyper = dict(json.loads(config_json).get("optimizers", {}).get(optimizer, {}))
    hyper.pop("kind", None)
    coords = {"kind": ((), kind, {"long_name": "optimizer kind of the arm"})}
    for name, value in sorted(hyper.items()):
        if value is None:
            continue
        value = int(value) if isinstance(value, bool) else value
        coords[name] = ((), value, {"long_name": f"hyperparameter {name} of the optimizer arm"})
    return coords


#: Run-file variables that are NaN where they do not apply, and why (written as NaN, the
#: CF ``_FillValue`` xarray gives every float variable). Any other non-finite value in a
#: run is an error: the replay refuses to write it and ``combine`` to read it.
NAN_WHERE_NOT_APPLICABLE = {
    "simulated_duration": "the synchronous mode simulates no clock",
    "probe_equal_fraction": "nothing was rounded (no integer parameter, or rounding: none)",
    "probe_swapped_fraction": "nothing was rounded (no integer parameter, or rounding: none)",
}

#: Per-seed variables of a run whose truth is one drawn instance per seed (SeedBowls).
INSTANCE_VARIABLES = {
    "w_true": (
        "true curvature weight of the seed's instance (before rotation)",
        "Elo per theta units squared",
    ),
    "theta_peak": ("true optimum of the seed's instance", THETA),
    "elo_per_c_end": (
        "Elo lost one c_end from the optimum along the axis (before rotation)",
        "Elo",
    ),
    "start_elo_gap": ("true Elo loss of the seed's instance at theta_start", "Elo"),
    "rotation_partner": ("parameter rotated together with this one (itself: none)", None),
    "rotation_cos": ("cosine of the pair's rotation angle", "1"),
    "rotation_sin": ("signed sine of the pair's rotation angle", "1"),
}


def instance_variables(bowl: SeedBowls, theta_start: np.ndarray) -> dict[str, tuple]:
    """The seed's drawn instance (:data:`INSTANCE_VARIABLES`), as data variables."""
    seeds = bowl.num_seeds
    values = {
        "w_true": bowl.w_true,
        "theta_peak": bowl.theta_peak,
        "elo_per_c_end": bowl.elo_per_scale,
        "start_elo_gap": bowl.elo_loss(np.tile(theta_start, (seeds, 1))),
    }
    if bowl.rotated:
        values |= {
            "rotation_partner": bowl.partner,
            "rotation_cos": bowl.cos,
            "rotation_sin": bowl.sin,
        }
    out = {}
    for name, value in values.items():
        long_name, units = INSTANCE_VARIABLES[name]
        dims = ("seed",) if value.ndim == 1 else ("seed", "param")
        out[name] = cf_variable(dims, value, long_name, units)
    return out


#: Per-seed KPIs of the worker's rounding, written in every run (NaN: nothing rounded).
def optimizer_state(ds) -> list[str]:
    """The names of ``ds``'s optimizer state variables (``long_name`` "optimizer state
    NAME": the schedule-free arms' ``x`` and ``z``), which ``combine`` leaves out of
    ``benchmark.nc``: no table or figure reads them, and they were about 40% of the
    default run's file (docs/benchmark.md, "Disk space")."""
    return [
        str(name)
        for name, variable in ds.data_vars.items()
        if str(variable.attrs.get("long_name", "")).startswith(f"{STATE_LONG_NAME} ")
    ]


PROBE_KPIS = {
    "probe_equal_fraction": "share of jobs x integer parameters where both engines played the same integer",
    "probe_swapped_fraction": "share of jobs x integer parameters where the engines played integers in the opposite order to the flip",
}


def run_layout(
    result: RunResult,
    problem: Problem,
    *,
    seeds: np.ndarray,
    optimizer: str,
    optimizer_kind: str,
    batch_mode: str,
    scenario: str,
    config_json: str,
    kpis: dict | None = None,
    kpi_attrs: dict | None = None,
) -> Layout:
    """The layout of one run, following the data contract of this module.

    ``result.arm_info`` holds scalars the arm derived from the developer view (e.g.
    the games Autoselect would ask for); each becomes a scalar coordinate.
    """
    bowl, params = problem.bowl, problem.params
    run = _Run(result, bowl, bowl.elo(result.theta), seeds)
    data_vars = {
        name: cf_variable(dims, values(run), long_name, units)
        for name, (dims, long_name, units, values) in RUN_VARIABLES.items()
    }
    data_vars |= {
        name: cf_variable(("seed", "pairs", "param"), value, f"{STATE_LONG_NAME} {name}", THETA)
        for name, value in result.extras.items()
    }
    data_vars |= {
        name: (dims, values, cf_attrs((kpi_attrs or {}).get(name, {})))
        for name, (dims, values) in (kpis or {}).items()
    }
    for name, long_name in PROBE_KPIS.items():
        value = getattr(result, name)
        if value is None:
            value = np.full(result.theta.shape[0], np.nan)
        data_vars[name] = cf_variable(("seed",), value, long_name, "1")
    if isinstance(bowl, SeedBowls):
        data_vars |= instance_variables(bowl, params.theta_start)
    coords = {
        name: cf_variable(dims, values(run), long_name, units)
        for name, (dims, long_name, units, values) in RUN_AXES.items()
    }
    coords |= {
        name: ("param", _param_values(params, name), cf_attrs(attrs))
        for name, attrs in PARAM_COORDS.items()
        if getattr(params, name) is not None
    }
    cell = {"optimizer": optimizer, "batch_mode": batch_mode, "scenario": scenario}
    coords |= {
        name: ((), label, {"long_name": name.replace("_", " ")}) for name, label in cell.items()
    }
    coords["optimizer"][2].update(long_name="optimizer arm", kind=optimizer_kind)
    arm = arm_coords(config_json, optimizer, optimizer_kind)
    arm |= {
        name: ((), float(value), {"long_name": f"{name}, derived by the optimizer arm"})
        for name, value in sorted(result.arm_info.items())
    }
    clash = sorted(set(arm) & (set(data_vars) | set(coords)))
    if clash:
        raise ValueError(f"hyperparameters of {optimizer!r} clash with run variables: {clash}")
    attrs = {
        "title": f"spsa-bench run: {optimizer} / {batch_mode} / {scenario}",
        "optimizer_kind": optimizer_kind,
        "peak_elo": bowl.peak_elo,
        **provenance(config_json),
    }
    if isinstance(bowl, SeedBowls):
        attrs["truth"] = (
            "one instance drawn per seed from the scenario's truth prior: see w_true, "
            "theta_peak, elo_per_c_end and start_elo_gap"
        )
    else:
        attrs |= {"start_elo": bowl.start_elo, "k_elo": bowl.k_elo}
    return Layout.build(data_vars, coords | arm, attrs)
