"""results/: arm coordinates in run files and benchmark.nc, git provenance, CF-1.11 attributes."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml
from conftest import small_config_dict

from spsa_bench.config.loader import resolve
from spsa_bench.engine.simulate import simulate
from spsa_bench.results import provenance
from spsa_bench.results.atomic import write_atomic
from spsa_bench.results.cf import cf_attrs, conform
from spsa_bench.results.combine import (
    TEXT_FILL,
    combine_benchmark,
    open_benchmark,
    write_benchmark,
)

BIN = Path(sys.executable).parent


def three_arms_dict() -> dict:
    """Two spsa arms differing in r_end and A, one adam arm."""
    raw = small_config_dict(num_pairs=400)
    raw["optimizers"] = {
        "spsa-slow": {"kind": "spsa", "r_end": 0.001, "A": 100},
        "spsa-fast": {"kind": "spsa", "r_end": 0.004, "A": 100},
        "adam": {"lr": 0.02},
    }
    # the studies' arms are not among these
    del raw["cend_study"], raw["workers_study"], raw["budget_study"]
    raw["baseline"] = "spsa-slow"
    return raw


@pytest.fixture(scope="module")
def three_arms():
    return resolve(three_arms_dict())


@pytest.fixture(scope="module")
def benchmark(three_arms, tmp_path_factory):
    out = tmp_path_factory.mktemp("arms")
    paths = []
    for arm in ("spsa-slow", "spsa-fast", "adam"):
        for seeds in ([0, 1], [2]):
            ds = simulate(
                three_arms, optimizer=arm, batch_mode="sync", scenario="mixed", seeds=seeds
            )
            paths.append(write_atomic(ds, out / f"{arm}-{seeds[0]}.nc"))
    order = {"optimizer": ["spsa-slow", "spsa-fast", "adam"]}
    return combine_benchmark(paths, order=order, config_json=three_arms.to_json()), paths


def test_run_file_carries_the_arm_as_scalar_coordinates(benchmark):
    _, paths = benchmark
    with xr.open_dataset(paths[0]) as run:
        assert run["kind"].item() == "spsa" and run["kind"].ndim == 0
        assert run["r_end"].item() == 0.001 and run["A"].item() == 100.0
        assert float(run["alpha"]) == 0.602  # the default, filled in by the configuration
        assert "lr" not in run.variables
        hyper = json.loads(run.attrs["config"])["optimizers"]["spsa-slow"]
        # every hyperparameter but the null ones (an unset A_ratio), which are left out
        assert hyper["A_ratio"] is None and "A_ratio" not in run.coords
        assert {name for name in hyper if name != "kind" and hyper[name] is not None} == {
            name for name, c in run.coords.items() if c.ndim == 0
        } - {"optimizer", "batch_mode", "scenario", "kind"}


def test_benchmark_keeps_kind_and_hyperparameters_along_optimizer(benchmark):
    ds, _ = benchmark
    assert [str(v) for v in ds["kind"].values] == ["spsa", "spsa", "adam"]
    assert ds["kind"].dims == ("optimizer",)
    np.testing.assert_array_equal(ds["r_end"].values, [0.001, 0.004, np.nan])
    np.testing.assert_array_equal(ds["A"].values, [100.0, 100.0, np.nan])
    np.testing.assert_array_equal(ds["lr"].values, [np.nan, np.nan, 0.02])
    assert ds["beta1"].values[2] == 0.9 and np.isnan(ds["beta1"].values[:2]).all()
    by_r_end = ds["final_elo"].groupby(ds["r_end"]).mean(...)  # the adam arm (NaN) drops out
    np.testing.assert_array_equal(by_r_end["r_end"].values, [0.001, 0.004])
    expected = ds["final_elo"].sel(optimizer="spsa-fast").mean().item()
    assert by_r_end.sel(r_end=0.004).item() == expected
    adam = ds.sel(optimizer=ds["kind"] == "adam")
    assert [str(v) for v in adam["optimizer"].values] == ["adam"]


def test_benchmark_arm_coordinates_survive_the_file(benchmark, tmp_path):
    ds, _ = benchmark
    path = write_benchmark(ds, tmp_path / "benchmark.nc")
    with xr.open_dataset(path) as back:
        np.testing.assert_array_equal(back["r_end"].values, ds["r_end"].values)
        assert [str(v) for v in back["kind"].values] == ["spsa", "spsa", "adam"]


def test_text_labels_are_auxiliary_in_the_file_and_the_index_when_opened(benchmark, tmp_path):
    """CF: no text coordinate variable in the file; the package restores the index."""
    ds, _ = benchmark
    path = write_benchmark(ds, tmp_path / "benchmark.nc")
    with xr.open_dataset(path) as plain:
        for dim in ("optimizer", "batch_mode", "scenario"):
            assert dim not in plain.variables and plain[f"{dim}_label"].dims == (dim,)
        assert [str(v) for v in plain["optimizer_label"].values] == list(ds["optimizer"].values)
        assert "optimizer_label" in plain["elo_loss"].encoding["coordinates"].split()
        one = plain.set_xindex("optimizer_label").sel(optimizer_label="spsa-fast")  # documented
        np.testing.assert_array_equal(one["theta"], ds["theta"].sel(optimizer="spsa-fast"))
    back = open_benchmark(path)
    assert list(back.indexes["optimizer"]) == ["spsa-slow", "spsa-fast", "adam"]
    xr.testing.assert_identical(back.drop_attrs(), ds.drop_attrs())
    assert (
        open_benchmark(path, ["elo_loss"])["elo_loss"]
        .sel(optimizer="adam")
        .equals(ds["elo_loss"].sel(optimizer="adam"))
    )
    old_layout = write_atomic(ds, tmp_path / "old.nc")  # text coordinate variables
    xr.testing.assert_equal(open_benchmark(old_layout).reset_coords(), back.reset_coords())


def test_text_hyperparameters_are_filled_with_the_text_fill():
    from spsa_bench.results.combine import optimizer_coords

    arms = {
        "a": {"kind": xr.DataArray("x"), "mode": xr.DataArray("fast")},
        "b": {"kind": xr.DataArray("y"), "lr": xr.DataArray(0.5)},
    }
    coords = optimizer_coords(arms)
    assert list(coords["mode"][1]) == ["fast", TEXT_FILL]
    np.testing.assert_array_equal(coords["lr"][1], [np.nan, 0.5])
    assert list(coords) == ["kind", "lr", "mode"]


# ---------------------------------------------------------------------- provenance


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def test_git_state_flags_a_modified_tree(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "commit", "-q", "-m", "one")
    clean = provenance.git_state(tmp_path)
    assert len(clean["git_revision"]) == 40
    assert clean["git_dirty"] == "false" and clean["git_diff_sha256"] == ""
    (tmp_path / "a.py").write_text("x = 2\n")
    dirty = provenance.git_state(tmp_path)
    assert dirty["git_revision"] == clean["git_revision"] and dirty["git_dirty"] == "true"
    assert len(dirty["git_diff_sha256"]) == 64
    (tmp_path / "a.py").write_text("x = 3\n")
    assert provenance.git_state(tmp_path)["git_diff_sha256"] != dirty["git_diff_sha256"]


def test_git_state_started_early_is_the_same_state(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "commit", "-q", "-m", "one")
    (tmp_path / "a.py").write_text("x = 2\n")
    provenance.start_git_state(tmp_path)
    assert tmp_path in provenance.STARTED_GIT_QUERIES
    early = provenance.git_state(tmp_path)
    assert tmp_path not in provenance.STARTED_GIT_QUERIES  # collected once
    assert early == provenance.git_state(tmp_path) and early["git_dirty"] == "true"
    outside = tmp_path / "outside"
    outside.mkdir()
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    provenance.start_git_state(outside)
    assert set(provenance.git_state(outside).values()) == {"unknown"}
    provenance.start_git_state(tmp_path / "missing")  # no such folder: nothing started
    assert set(provenance.git_state(tmp_path / "missing").values()) == {"unknown"}


def test_git_state_is_unknown_outside_a_checkout(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.setattr(provenance, "SOURCE_DIR", tmp_path)
    state = provenance.provenance("{}")
    assert {k: state[k] for k in ("git_revision", "git_dirty", "git_diff_sha256")} == dict.fromkeys(
        ("git_revision", "git_dirty", "git_diff_sha256"), "unknown"
    )


def test_history_is_time_and_command():
    line = provenance.history("spsa-bench simulate --seeds 0-3", when="2026-01-02T03:04:05+00:00")
    assert line == "2026-01-02T03:04:05+00:00: spsa-bench simulate --seeds 0-3"
    assert (
        provenance.rule_command("simulate", {"a": 0, "b": 3})
        == "snakemake rule simulate (a=0, b=3)"
    )


# ---------------------------------------------------------------------- CF-1.11


def test_project_units_become_dimensionless_with_a_long_name():
    attrs = cf_attrs({"long_name": "pairs consumed", "units": "pairs", "kept": 1})
    assert attrs == {
        "long_name": "pairs consumed [count of game pairs]",
        "units": "1",
        "spsa_bench_unit": "pairs",
        "kept": 1,
    }
    assert cf_attrs(attrs) == attrs  # idempotent
    assert cf_attrs({"long_name": "time", "units": "s"}) == {"long_name": "time", "units": "s"}
    ds = conform(xr.Dataset({"elo": ("x", np.arange(3.0), {"long_name": "Elo", "units": "Elo"})}))
    assert ds.attrs["Conventions"] == "CF-1.11" and ds["elo"].attrs["units"] == "1"
    assert ds["elo"].values.tolist() == [0.0, 1.0, 2.0]


def _cf_report(path: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / f"{path.stem}.json"
    done = subprocess.run(
        [BIN / "compliance-checker", "--test=cf:1.11", "--criteria=strict", "--format=json"]
        + ["-o", str(report), str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done, json.loads(report.read_text())["cf:1.11"]


def _failed(results: list[dict]) -> list[str]:
    return [f"{r['name']}: {r['msgs']}" for r in results if r["value"][0] < r["value"][1]]


@pytest.mark.slow
def test_every_kind_of_file_passes_the_cf_checker(benchmark, tmp_path):
    """A run file, a schedule file and a validation file from the CLI, and a combined
    benchmark: no failed check, no warning, and no exception inside the checker."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(three_arms_dict()))
    cli = [BIN / "spsa-bench"]
    common = ["--config", str(config), "--batch-mode", "async-fixed", "--seeds", "0-2", "--quiet"]
    files = {"run": tmp_path / "run.nc", "schedule": tmp_path / "schedule.nc"}
    arm = ["--optimizer", "adam", "--scenario", "mixed"]
    subprocess.run([*cli, "simulate", *common, *arm, "--output", files["run"]], check=True)
    subprocess.run([*cli, "schedule", *common, "--output", files["schedule"]], check=True)
    validate = [*cli, "validate", "--config", str(config), "--optimizer", "adam", "--quiet"]
    subprocess.run([*validate, "--output", tmp_path / "validation"], check=True)
    files["validation"] = tmp_path / "validation" / "adam.nc"
    files["benchmark"] = write_benchmark(benchmark[0], tmp_path / "benchmark.nc")
    for kind, path in files.items():
        done, report = _cf_report(path, tmp_path)
        counts = {p: report[f"{p}_count"] for p in ("high", "medium", "low")}
        assert counts == {"high": 0, "medium": 0, "low": 0}, (kind, counts)
        assert _failed(report["all_priorities"]) == [], kind
        assert report["scored_points"] == report["possible_points"], kind
        assert done.returncode == 0, (kind, done.stdout, done.stderr)
        assert "exceptions occurred" not in done.stdout + done.stderr, (kind, done.stdout)


# ---------------------------------------------------------------------- combine refusals


def test_combine_refuses_non_finite_data_naming_the_file(benchmark, tmp_path):
    from spsa_bench.results.combine import combine_runs
    from spsa_bench.results.datasets import open_run

    _, paths = benchmark
    run = open_run(paths[1])
    assert run["simulated_duration"].isnull().all()  # sync: NaN where not applicable, allowed
    bad = run.copy(deep=True)
    bad["elo"][0, 3] = np.inf
    bad_path = write_atomic(bad, tmp_path / "bad.nc")
    with pytest.raises(ValueError, match=r"^\S*bad\.nc: variable elo holds non-finite") as error:
        combine_runs([paths[0], bad_path])
    assert "\n" not in str(error.value)
    declared = bad.copy()
    declared["elo"].attrs["missing_value"] = np.nan
    ok = write_atomic(declared.isel(seed=[0]), tmp_path / "declared.nc")
    assert np.isinf(combine_runs([paths[0], ok])["elo"].values).sum() == 1


def test_combine_refuses_another_checkpoint_grid(benchmark, tmp_path):
    from spsa_bench.results.combine import combine_runs
    from spsa_bench.results.datasets import open_run

    _, paths = benchmark
    other = open_run(paths[1]).isel(pairs=slice(0, -1))
    other_path = write_atomic(other, tmp_path / "short.nc")
    with pytest.raises(ValueError, match=r"short\.nc: checkpoint grid \(pairs\) differs"):
        combine_runs([paths[0], other_path])
