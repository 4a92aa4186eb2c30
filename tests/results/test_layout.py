"""Run files written without xarray (results.layout) hold what xarray writes.

Layout.write defines every variable before writing any data (xarray writes each as it
defines it), so the HDF5 objects sit elsewhere in the file; everything a netCDF reader
sees is compared instead: dimensions, variables in order with their types, dimensions,
attributes, chunking, filters and stored values, and the global attributes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml
from conftest import small_config_dict

from spsa_bench.config.loader import load_config
from spsa_bench.engine.simulate import check_finite_run, simulate, simulate_run
from spsa_bench.results.cf import labels_to_auxiliary
from spsa_bench.results.datasets import open_run
from spsa_bench.results.layout import Layout

SRC = str(Path(__file__).resolve().parents[2] / "src")

#: (arm, batch mode, scenario): one bowl and per-seed instances, sync and both
#: asynchronous modes, an arm with state extras and one with derived scalars.
CELLS = [
    ("spsa", "sync", "calibrated"),
    ("spsa-autoselect", "async-variable", "tune-16-stc"),
    ("adam-block", "async-fixed", "mixed"),
    ("sf-adam-block", "sync", "tune-16-stc"),
]


def _same_value(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return a.shape == b.shape and a.tobytes() == b.tobytes()  # NaN equal to itself
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.all(a == b))


def netcdf_contents(path: Path) -> list:
    """What a netCDF reader sees in ``path``, as comparable entries (values raw)."""
    import netCDF4

    entries: list = []
    with netCDF4.Dataset(path) as nc:
        entries.append(("format", nc.data_model, nc.disk_format))
        entries.append(
            ("dims", [(d.name, d.size, d.isunlimited()) for d in nc.dimensions.values()])
        )
        entries.append(("global", {k: nc.getncattr(k) for k in nc.ncattrs()}))
        for name, var in nc.variables.items():
            var.set_auto_maskandscale(False)
            entries.append(
                (
                    name,
                    str(var.dtype),
                    var.dimensions,
                    {k: var.getncattr(k) for k in var.ncattrs()},
                    var.chunking(),
                    var.filters(),
                    var.endian(),
                    var[...],
                )
            )
    return entries


def assert_same_contents(path: Path, reference: Path) -> None:
    ours, theirs = netcdf_contents(path), netcdf_contents(reference)
    assert [entry[0] for entry in ours] == [entry[0] for entry in theirs]
    for mine, other in zip(ours, theirs, strict=True):
        assert len(mine) == len(other)
        for a, b in zip(mine, other, strict=True):
            if isinstance(a, dict):  # attributes: names in order, values bit for bit
                assert list(a) == list(b), mine[0]
                assert all(_same_value(a[k], b[k]) for k in a), (mine[0], a, b)
            elif isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
                assert _same_value(a, b), mine[0]
            else:
                assert a == b, mine[0]


def xarray_writes(layout: Layout, path: Path, compress: bool) -> Path:
    """The file xarray's netCDF4 engine writes from the layout's dataset and encoding."""
    dataset = labels_to_auxiliary(layout.to_dataset())
    dataset.to_netcdf(path, engine="netcdf4", format="NETCDF4", encoding=layout.encoding(compress))
    return path


@pytest.fixture(scope="module")
def config_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("layout") / "config.yaml"
    path.write_text(yaml.safe_dump(small_config_dict(num_pairs=400)))
    return path


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "zlib"])
@pytest.mark.parametrize("cell", CELLS, ids=["/".join(cell) for cell in CELLS])
def test_a_run_written_without_xarray_holds_what_xarray_writes(
    config_path, tmp_path, cell, compress
):
    arm, mode, scenario = cell
    run = simulate_run(
        load_config(config_path), optimizer=arm, batch_mode=mode, scenario=scenario, seeds=range(3)
    )
    lean = run.write(tmp_path / "lean.nc", compress=compress)
    reference = xarray_writes(run, tmp_path / "xarray.nc", compress)
    assert_same_contents(lean, reference)
    xr.testing.assert_identical(open_run(lean), run.to_dataset())


def test_simulate_is_the_run_layout_as_a_dataset(config_path):
    config = load_config(config_path)
    cell = {"optimizer": "spsa", "batch_mode": "async-fixed", "scenario": "mixed"}
    dataset = simulate(config, seeds=range(2), **cell)
    run = simulate_run(config, seeds=range(2), **cell)
    assert list(dataset.variables) == list(run.variables)
    for name, variable in run.variables.items():
        np.testing.assert_array_equal(dataset[name].values, variable.values, err_msg=name)
        assert dataset[name].attrs == variable.attrs, name
    assert set(dataset.coords) == run.coord_names
    assert {k: v for k, v in dataset.attrs.items() if k != "created"} == {
        k: v for k, v in run.attrs.items() if k != "created"
    } | {"history": dataset.attrs["history"]}


def _synthetic() -> Layout:
    """Every encoding case: booleans, text scalars and labels, NaN, an unused coordinate."""
    layout = Layout.build(
        {
            "loss": (("seed", "pairs"), np.array([[1.0, np.nan], [0.5, 0.25]]), {"units": "Elo"}),
            "done": (("seed",), np.array([True, False]), {"long_name": "finished"}),
            "counts": (("seed", "label"), np.arange(6, dtype=np.int64).reshape(2, 3), {}),
        },
        {
            "seed": ("seed", np.array([3, 4]), {"long_name": "seed"}),
            "pairs": ("pairs", np.array([0, 10]), {}),
            "label": ("label", ["LL", "DD", "WW"], {"long_name": "outcome"}),
            "arm": ((), "spsa", {"long_name": "arm"}),
            "lr": ((), 0.01, {}),
            "steps": ((), 7, {}),
            "tags": ("extra", np.array(["a", "b"], dtype=object), {}),  # on no variable
        },
        {"title": "synthetic", "names": ["x", "y"], "scale": 2.5},
    )
    layout.add("weight", ("pairs",), np.array([0.5, 1.5]), {"long_name": "weight"}, coord=True)
    return layout


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "zlib"])
def test_every_encoding_case_matches_xarray(tmp_path, compress):
    layout = _synthetic()
    lean = layout.write(tmp_path / "lean.nc", compress=compress)
    reference = xarray_writes(layout, tmp_path / "xarray.nc", compress)
    assert_same_contents(lean, reference)
    xr.testing.assert_identical(xr.open_dataset(lean).load(), xr.open_dataset(reference).load())
    import netCDF4

    with netCDF4.Dataset(lean) as nc:
        assert nc.getncattr("coordinates") == "tags"  # attached to no variable
        assert nc["loss"].getncattr("coordinates") == "arm lr steps weight"
        assert nc["counts"].getncattr("coordinates") == "arm label_label lr steps"
        assert nc["done"].getncattr("dtype") == "bool" and nc["done"].dtype == np.int8
        assert np.isnan(nc["loss"].getncattr("_FillValue")) and "label" not in nc.variables
        assert nc["loss"].chunking() == [2, 1] and nc["counts"].chunking() != [2, 1]
        assert nc["loss"].filters()["fletcher32"] and nc["done"].filters()["fletcher32"]
        assert nc["loss"].filters()["zlib"] is compress and nc["arm"].chunking() == "contiguous"


def test_a_layout_refuses_inconsistent_dimensions():
    with pytest.raises(ValueError, match="dimension seed has length 3, not 2"):
        Layout.build(
            {"a": ("seed", np.zeros(2), {}), "b": ("seed", np.zeros(3), {})}, {}, {"title": "t"}
        )
    with pytest.raises(ValueError, match=r"dimensions \('seed', 'pairs'\) for an array of shape"):
        Layout.build({"a": (("seed", "pairs"), np.zeros(2), {})}, {}, {})
    with pytest.raises(ValueError, match="both data variables and coordinates"):
        Layout.build({"a": ("seed", np.zeros(2), {})}, {"a": ("seed", np.zeros(2), {})}, {})


def test_a_non_finite_run_is_refused_naming_variable_and_seed(config_path):
    run = simulate_run(
        load_config(config_path),
        optimizer="spsa",
        batch_mode="sync",
        scenario="calibrated",
        seeds=range(5, 7),
    )
    check_finite_run(run, "ok")  # the NaN simulated_duration of a sync run is allowed
    run["elo_loss"][1, -1] = np.inf
    with pytest.raises(ValueError, match="elo_loss has 1 non-finite values \\(first at seed 6"):
        check_finite_run(run, "spsa/sync/calibrated")


def test_spsa_bench_simulate_imports_no_xarray_jsonschema_or_importlib_metadata(
    config_path, tmp_path
):
    output = tmp_path / "run.nc"
    code = (
        "import sys; from spsa_bench.cli.main import main; "
        f"code = main(['simulate', '--config', {str(config_path)!r}, '--optimizer', 'spsa', "
        "'--batch-mode', 'sync', '--scenario', 'calibrated', '--seeds', '0-1', '--quiet', "
        f"'--output', {str(output)!r}]); "
        "heavy = {'xarray', 'pandas', 'jsonschema', 'importlib.metadata'} & set(sys.modules); "
        "assert code == 0 and not heavy, (code, heavy)"
    )
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert float(open_run(output)["elo_loss"].isel(pairs=0).mean()) > 0
