"""Run and schedule datasets: what one simulate job and one schedule job write.

Data contract of one run file (one optimizer arm x batch mode x scenario x seed
range): dims ``seed``, ``pairs`` (checkpoint grid of pairs consumed), ``param``
(and ``worker`` for worker-pool KPIs); the data variables of :data:`RUN_VARIABLES`,
the optimizer's state extras and per-seed KPIs; the per-parameter coordinates of
:data:`PARAM_COORDS`; scalar coordinates ``optimizer``, ``batch_mode``, ``scenario``
(the cell) and the arm's ``kind`` and hyperparameters (one scalar each, named as
in the configuration). Attributes follow CF-1.11 (:mod:`spsa_bench.results.cf`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import xarray as xr

from spsa_bench.engine.replay import RunResult
from spsa_bench.model.bowl import Problem, SeedBowls, TrueBowl
from spsa_bench.results.cf import cf_attrs, conform, labels_to_index
from spsa_bench.results.provenance import provenance

CELL_DIMS = ("optimizer", "batch_mode", "scenario")
THETA = "theta units"
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


def _variable(dims: tuple[str, ...], values, long_name: str, units: str | None = None) -> tuple:
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
        out[name] = _variable(dims, value, long_name, units)
    return out


#: Per-seed KPIs of the worker's rounding, written in every run (NaN: nothing rounded).
PROBE_KPIS = {
    "probe_equal_fraction": "share of jobs x integer parameters where both engines played the same integer",
    "probe_swapped_fraction": "share of jobs x integer parameters where the engines played integers in the opposite order to the flip",
}


def run_dataset(
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
) -> xr.Dataset:
    """The dataset of one run, following the data contract of this module.

    ``result.arm_info`` holds scalars the arm derived from the developer view (e.g.
    the games Autoselect would ask for); each becomes a scalar coordinate.
    """
    bowl, params = problem.bowl, problem.params
    run = _Run(result, bowl, bowl.elo(result.theta), seeds)
    data_vars = {
        name: _variable(dims, values(run), long_name, units)
        for name, (dims, long_name, units, values) in RUN_VARIABLES.items()
    }
    data_vars |= {
        name: _variable(("seed", "pairs", "param"), value, f"optimizer state {name}", THETA)
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
        data_vars[name] = _variable(("seed",), value, long_name, "1")
    if isinstance(bowl, SeedBowls):
        data_vars |= instance_variables(bowl, params.theta_start)
    coords = {
        name: _variable(dims, values(run), long_name, units)
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
    return conform(xr.Dataset(data_vars, coords | arm, attrs))


def schedule_dataset(
    schedule, *, batch_mode: str, config_json: str, command: str | None = None
) -> xr.Dataset:
    """A schedule as a dataset: one row per job (dispatch order) and per arrival, plus its KPIs."""
    from spsa_bench.dispatch import kpis

    job_vars = {
        "job_pairs": (schedule.job_pairs, "pairs in the job (0 = padding)", "pairs"),
        "job_offset": (
            schedule.job_offset,
            "pairs dispatched before the job (its first pair in the match stream)",
            "pairs",
        ),
        "job_arrived_before": (
            schedule.job_arrived_before,
            "pairs arrived before the job's dispatch",
            "pairs",
        ),
        "job_worker": (schedule.job_worker, "worker that ran the job (-1 = padding)", "1"),
        "job_dispatch_time": (schedule.job_dispatch_time, "dispatch time", "s"),
        "job_arrival_time": (schedule.job_arrival_time, "arrival time", "s"),
        "staleness": (
            schedule.staleness_pairs(),
            "pairs arrived between the job's dispatch and its arrival",
            "pairs",
        ),
    }
    data_vars = {
        name: _variable(("seed", "job"), values, long_name, units)
        for name, (values, long_name, units) in job_vars.items()
    }
    data_vars["arrival_job"] = _variable(
        ("seed", "event"), schedule.arrival_job, "job arriving at this event (-1 = padding)"
    )
    data_vars |= {
        name: (dims, values, cf_attrs(kpis.KPI_ATTRS.get(name, {})))
        for name, (dims, values) in kpis.schedule_kpis(schedule).items()
    }
    coords = {
        "seed": _variable(("seed",), schedule.seeds, "seed"),
        "job": _variable(("job",), np.arange(schedule.max_jobs), "job index in dispatch order"),
        "event": _variable(
            ("event",), np.arange(schedule.arrival_job.shape[1]), "arrival index in time order"
        ),
    }
    attrs = {
        "title": f"spsa-bench schedule: {batch_mode}",
        "batch_mode": batch_mode,
        **provenance(config_json, command),
    }
    return conform(xr.Dataset(data_vars, coords, attrs))


def open_run(path: str | Path) -> xr.Dataset:
    """Open one run file fully into memory, with a clear error naming the file."""
    return _open_run(path, lambda ds: ds)


def open_run_head(path: str | Path) -> tuple[xr.Dataset, np.ndarray]:
    """One run file's first checkpoint in memory (every variable without the ``pairs``
    dimension whole, those with it at ``pairs[0]`` only) and its whole ``pairs`` grid;
    the rest is never read. Errors as :func:`open_run`."""
    grid = []

    def head(ds: xr.Dataset) -> xr.Dataset:
        grid.append(ds["pairs"].values)
        return ds.isel(pairs=[0])

    return _open_run(path, head), grid[0]


def _open_run(path: str | Path, part) -> xr.Dataset:
    """``part`` of one run file (a function of the lazily opened dataset), loaded."""
    path = Path(path)
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            loaded = labels_to_index(part(ds).load())
    except Exception as error:  # netCDF4 raises OSError/RuntimeError/ValueError variants
        raise ValueError(f"{path}: not a readable spsa-bench NetCDF file ({error})") from None
    missing = [v for v in ("theta", "elo_loss", *CELL_DIMS) if v not in loaded.variables]
    if missing:
        raise ValueError(f"{path}: not an spsa-bench run file (missing {', '.join(missing)})")
    return loaded
