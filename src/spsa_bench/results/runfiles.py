"""NetCDF datasets: building, provenance, atomic writing and combining.

Data contract of one run file (one optimizer arm x batch mode x scenario x
seed range): dims ``seed``, ``pairs`` (checkpoint grid of pairs consumed),
``param`` (and ``worker`` for worker-pool KPIs); data variables ``theta``,
``elo``, ``elo_loss``, ``dist_to_target`` and per-seed KPIs; per-parameter
coordinates; scalar coordinates ``optimizer``, ``batch_mode``, ``scenario``.
"""

from __future__ import annotations

import datetime as _dt
import glob
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import xarray as xr

from spsa_bench import __version__
from spsa_bench.model.bowl import Problem
from spsa_bench.engine.replay import RunResult

CELL_DIMS = ("optimizer", "batch_mode", "scenario")
_THETA = "theta units"
#: Per-parameter coordinates of a run file and their attributes.
PARAM_COORDS = {
    "param_group": {"long_name": "parameter group"},
    "w_true": {"long_name": "true curvature weight"},
    "w_dev": {"long_name": "developer's curvature weight"},
    "miscalibration": {"long_name": "w_true / w_dev"},
    "c_dev": {"long_name": "developer perturbation c_end", "units": _THETA},
    "theta_start": {"long_name": "start value", "units": _THETA},
    "theta_peak": {"long_name": "true optimum", "units": _THETA},
    "theta_min": {"long_name": "developer lower bound", "units": _THETA},
    "theta_max": {"long_name": "developer upper bound", "units": _THETA},
}


def git_revision() -> str:
    """The source tree's git revision, or ``"unknown"``."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def provenance(resolved_config_json: str) -> dict[str, str]:
    return {
        "spsa_bench_version": __version__,
        "numpy_version": np.__version__,
        "xarray_version": xr.__version__,
        "git_revision": git_revision(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "config": resolved_config_json,
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
    """The dataset of one run, following the data contract."""
    bowl, params = problem.bowl, problem.params
    elo = bowl.elo(result.theta)
    active = bowl.active
    dist = np.sqrt(np.sum((result.theta[..., active] - bowl.theta_peak[active]) ** 2, axis=-1))
    ds = xr.Dataset(
        data_vars={
            "theta": (
                ("seed", "pairs", "param"),
                result.theta,
                {"long_name": "exported parameters", "units": "theta units"},
            ),
            "elo": (("seed", "pairs"), elo, {"long_name": "true Elo of theta", "units": "Elo"}),
            "elo_loss": (
                ("seed", "pairs"),
                bowl.peak_elo - elo,
                {"long_name": "peak_elo - Elo(theta)", "units": "Elo"},
            ),
            "dist_to_target": (
                ("seed", "pairs"),
                dist,
                {
                    "long_name": "L2 distance of theta to theta_peak over active parameters",
                    "units": "theta units",
                },
            ),
            "final_elo": (
                ("seed",),
                elo[:, -1],
                {"long_name": "true Elo after the whole budget", "units": "Elo"},
            ),
            "avg_step_size_last_100": (
                ("seed",),
                result.avg_step_size_last_100,
                {
                    "long_name": "mean L2 step of theta over the last 100 updates",
                    "units": "theta units",
                },
            ),
            "total_pairs": (
                ("seed",),
                result.total_pairs,
                {"long_name": "pairs consumed", "units": "pairs"},
            ),
            "n_updates": (
                ("seed",),
                result.n_updates,
                {"long_name": "reports applied (optimizer updates)", "units": "1"},
            ),
        },
        coords={
            "seed": ("seed", np.asarray(seeds, dtype=np.int64), {"long_name": "seed"}),
            "pairs": (
                "pairs",
                result.pairs_grid,
                {"long_name": "game pairs consumed", "units": "pairs"},
            ),
            "param": ("param", np.arange(params.w_true.shape[0]), {"long_name": "parameter index"}),
            "param_group": (
                "param",
                np.array(params.param_group, dtype=object),
                dict(PARAM_COORDS["param_group"]),
            ),
            **{
                name: ("param", getattr(params, name), dict(attrs))
                for name, attrs in PARAM_COORDS.items()
                if name != "param_group"
            },
            "optimizer": ((), optimizer, {"long_name": "optimizer arm", "kind": optimizer_kind}),
            "batch_mode": ((), batch_mode, {"long_name": "batch mode"}),
            "scenario": ((), scenario, {"long_name": "scenario"}),
        },
        attrs={
            "title": f"spsa-bench run: {optimizer} / {batch_mode} / {scenario}",
            "optimizer_kind": optimizer_kind,
            "peak_elo": bowl.peak_elo,
            "start_elo": bowl.start_elo,
            "k_elo": bowl.k_elo,
            **provenance(config_json),
        },
    )
    for name, value in result.extras.items():
        ds[name] = (
            ("seed", "pairs", "param"),
            value,
            {"long_name": f"optimizer state {name}", "units": "theta units"},
        )
    for name, (dims, values) in (kpis or {}).items():
        ds[name] = (dims, values, dict((kpi_attrs or {}).get(name, {})))
    return ds


def schedule_dataset(schedule, *, batch_mode: str, config_json: str) -> xr.Dataset:
    """A schedule as a dataset: one row per job (dispatch order) and per arrival."""
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
    ds = xr.Dataset(
        {
            name: (("seed", "job"), values, {"long_name": doc, "units": units})
            for name, (values, doc, units) in job_vars.items()
        },
        coords={
            "seed": schedule.seeds,
            "job": np.arange(schedule.max_jobs),
            "event": np.arange(schedule.arrival_job.shape[1]),
        },
        attrs={
            "title": f"spsa-bench schedule: {batch_mode}",
            "batch_mode": batch_mode,
            **provenance(config_json),
        },
    )
    ds["arrival_job"] = (
        ("seed", "event"),
        schedule.arrival_job,
        {"long_name": "job arriving at this event (-1 = padding)"},
    )
    for name, (dims, values) in kpis.schedule_kpis(schedule).items():
        ds[name] = (dims, values, dict(kpis.KPI_ATTRS.get(name, {})))
    return ds


def _encoding(ds: xr.Dataset) -> dict:
    return {
        name: {"zlib": True, "complevel": 4}
        for name, var in ds.variables.items()
        if var.dtype.kind in "fiub" and var.ndim > 0
    }


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | Path, write: Callable[[str], object]) -> Path:
    """``write(tmp)`` to a fresh temporary file beside ``path``, then rename it onto ``path``.

    A reader (or a crash) never sees a partial file under the final name; a failed
    write leaves neither the final file nor the temporary one. The file gets the
    permissions of an ordinary new file (0666 less the umask), not ``mkstemp``'s 0600.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A write killed outright (SIGKILL, power loss) cannot remove its temporary
    # file: drop what earlier, interrupted writes of this same path left behind.
    for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp{glob.escape(path.suffix)}"):
        stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=path.parent
    )
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_atomic(ds: xr.Dataset, path: str | Path) -> Path:
    """Write ``ds`` as compressed NetCDF4, atomically (:func:`atomic_write`)."""
    encoding = _encoding(ds)
    return atomic_write(
        path, lambda tmp: ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=encoding)
    )


def open_run(path: str | Path) -> xr.Dataset:
    """Open one run file fully into memory, with a clear error naming the file."""
    path = Path(path)
    try:
        with xr.open_dataset(path, engine="netcdf4") as ds:
            loaded = ds.load()
    except Exception as error:  # netCDF4 raises OSError/RuntimeError/ValueError variants
        raise ValueError(f"{path}: not a readable spsa-bench NetCDF file ({error})") from None
    missing = [v for v in ("theta", "elo_loss", *CELL_DIMS) if v not in loaded.variables]
    if missing:
        raise ValueError(f"{path}: not an spsa-bench run file (missing {', '.join(missing)})")
    return loaded


def combine_runs(paths: Iterable[str | Path]) -> xr.Dataset:
    """Combine run files into one dataset with dims optimizer, batch_mode, scenario, seed, pairs, param.

    Seed ranges of one cell are concatenated along ``seed``; cells are aligned
    on the outer product of their labels (missing cells are NaN). Per-parameter
    coordinates that differ between scenarios become data indexed by scenario.
    """
    by_cell: dict[tuple, list[xr.Dataset]] = {}
    for path in paths:
        ds = open_run(path)
        key = tuple(str(ds[d].item()) for d in CELL_DIMS)
        by_cell.setdefault(key, []).append(ds)
    if not by_cell:
        raise ValueError("no run files to combine")
    cells = []
    for key, parts in sorted(by_cell.items()):
        parts.sort(key=lambda d: int(d.seed.values[0]))
        cell = xr.concat(
            parts,
            dim="seed",
            data_vars="minimal",
            coords="minimal",
            compat="override",
            combine_attrs="drop_conflicts",
        )
        for name in PARAM_COORDS:
            if name in cell.coords:
                cell = cell.reset_coords(name)
        cell = cell.drop_vars([d for d in CELL_DIMS if d in cell.variables])
        cell = cell.expand_dims({d: [v] for d, v in zip(CELL_DIMS, key, strict=True)})
        cells.append(cell)
    # Worker pools differ in size (sync: 1 worker): pad the worker KPIs with NaN.
    n_workers = max(cell.sizes.get("worker", 0) for cell in cells)
    cells = [
        cell.pad(worker=(0, n_workers - cell.sizes["worker"])) if "worker" in cell.dims else cell
        for cell in cells
    ]
    combined = xr.combine_by_coords(
        cells, combine_attrs="drop_conflicts", data_vars="all", join="outer"
    )
    for name in PARAM_COORDS:
        if name in combined:
            reduced = combined[name]
            for dim in ("optimizer", "batch_mode", "seed"):
                if dim in reduced.dims:
                    reduced = (
                        reduced.isel({dim: 0}, drop=True)
                        if _constant_along(reduced, dim)
                        else reduced
                    )
            combined[name] = reduced
    return combined


def _constant_along(array: xr.DataArray, dim: str) -> bool:
    first = array.isel({dim: 0})
    return bool((array == first).all() | (array.isnull() & first.isnull()).all())
