"""``simulate --optimizer NAME`` for a name that is not an arm of the configuration:
a swept arm's name runs its hand-set value, a registered kind runs with its defaults,
anything else gets one line with at most five close names."""

import dataclasses
import json

import numpy as np
import pytest
import xarray as xr
import yaml
from conftest import small_config_dict

from spsa_bench.cli.main import main
from spsa_bench.optimizers import REGISTRY


@pytest.fixture(scope="module")
def config_path(tmp_path_factory):
    raw = small_config_dict(num_pairs=300)
    raw["optimizers"] = {
        "spsa": {},
        "spsa-block": {"r_scale": [0.3, 1, 3]},  # the hand-set value (default 1) inside
        "adam": {"lr": [0.001, 0.01]},  # adam's default lr, 0.04, left out
    }
    for study in ("cend_study", "workers_study", "budget_study"):
        raw.pop(study, None)
    path = tmp_path_factory.mktemp("config") / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _simulate(config_path, optimizer, output, capsys):
    argv = ["simulate", "--config", str(config_path), "--optimizer", optimizer]
    argv += ["--batch-mode", "sync", "--scenario", "calibrated", "--seeds", "0-1"]
    code = main([*argv, "--output", str(output)])
    return code, capsys.readouterr().err.splitlines()


def test_a_swept_arms_name_runs_its_hand_set_value(config_path, tmp_path, capsys):
    code, err = _simulate(config_path, "spsa-block", tmp_path / "by-sweep.nc", capsys)
    assert code == 0
    notice = [line for line in err if line.startswith("--optimizer")]
    assert len(notice) == 1 and "spsa-block-r_scale-1" in notice[0]
    assert "hand-set" in notice[0]
    code, _ = _simulate(config_path, "spsa-block-r_scale-1", tmp_path / "by-arm.nc", capsys)
    assert code == 0
    with (
        xr.open_dataset(tmp_path / "by-sweep.nc") as one,
        xr.open_dataset(tmp_path / "by-arm.nc") as two,
    ):
        assert str(one["optimizer"].values) == "spsa-block-r_scale-1"
        np.testing.assert_array_equal(one["elo_loss"].values, two["elo_loss"].values)


def test_a_registered_kind_runs_with_its_default_hyperparameters(config_path, tmp_path, capsys):
    code, err = _simulate(config_path, "spsa-cwd", tmp_path / "kind.nc", capsys)
    assert code == 0
    notice = [line for line in err if line.startswith("--optimizer")]
    assert len(notice) == 1 and "default hyperparameters" in notice[0]
    defaults = dataclasses.asdict(REGISTRY["spsa-cwd"].hyper())
    with xr.open_dataset(tmp_path / "kind.nc") as ds:
        assert str(ds["optimizer"].values) == "spsa-cwd" and str(ds["kind"].values) == "spsa-cwd"
        assert float(ds["lambda_cwd"]) == defaults["lambda_cwd"]
        assert float(ds["r_end"]) == defaults["r_end"]
        recorded = json.loads(ds.attrs["config"])["optimizers"]["spsa-cwd"]
    assert recorded == {"kind": "spsa-cwd", **defaults}


def test_an_unknown_name_gets_one_line_with_at_most_five_close_names(config_path, tmp_path, capsys):
    output = tmp_path / "unknown.nc"
    code, err = _simulate(config_path, "spsa-blok", output, capsys)
    assert code == 2 and len(err) == 1
    assert "--optimizer" in err[0] and "'spsa-blok'" in err[0]
    close = err[0].split("closest: ")[1].split(" (")[0].split(", ")
    assert close[0] == "spsa-block" and 1 <= len(close) <= 5
    assert len(err[0]) < 300 and not output.exists()


def test_a_name_like_nothing_says_so_in_one_line(config_path, tmp_path, capsys):
    code, err = _simulate(config_path, "zzzz", tmp_path / "z.nc", capsys)
    assert code == 2 and len(err) == 1 and "no close name" in err[0]


def test_a_sweep_without_the_hand_set_value_names_its_arms(config_path, tmp_path, capsys):
    code, err = _simulate(config_path, "adam", tmp_path / "adam.nc", capsys)
    assert code == 2 and len(err) == 1
    assert "adam-lr-0p001" in err[0] and "adam-lr-0p01" in err[0]
    assert not (tmp_path / "adam.nc").exists()


def _validate(config_path, optimizer, output, capsys):
    argv = ["validate", "--config", str(config_path), "--optimizer", optimizer]
    code = main([*argv, "--reports", "5", "--output", str(output)])
    return code, capsys.readouterr().err.splitlines()


def test_validate_reads_names_as_simulate_does(config_path, tmp_path, capsys):
    """A sweep's name validates its hand-set arm (said), not the kind's defaults under the
    sweep's name; a sweep without the hand-set value and an unknown name are refused in
    one line (case ignored in the suggestions), nothing written."""
    code, err = _validate(config_path, "spsa-block", tmp_path / "a", capsys)
    assert code == 0 and any("running its hand-set value spsa-block-r_scale-1" in e for e in err)
    assert (tmp_path / "a" / "spsa-block-r_scale-1_gaps.csv").is_file()
    assert not (tmp_path / "a" / "spsa-block_gaps.csv").exists()
    code, err = _validate(config_path, "adam", tmp_path / "b", capsys)
    assert code == 2 and len(err) == 1 and "adam-lr-0p001, adam-lr-0p01" in err[0]
    code, err = _validate(config_path, "SPSA-Block", tmp_path / "c", capsys)
    assert code == 2 and len(err) == 1 and "closest: spsa-block" in err[0]
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    ("flag", "value", "closest"),
    [("--batch-mode", "Sync", "sync"), ("--scenario", "mixd", "mixed")],
)
def test_a_misspelled_batch_mode_or_scenario_gets_its_closest_names(
    config_path, tmp_path, capsys, flag, value, closest
):
    argv = ["simulate", "--config", str(config_path), "--optimizer", "spsa"]
    argv += ["--batch-mode", "sync", "--scenario", "calibrated", "--seeds", "0-1"]
    argv[argv.index(flag) + 1] = value
    assert main([*argv, "--output", str(tmp_path / "x.nc")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert f"{flag} = {value!r}" in line and f"closest: {closest}" in line
    assert len(line) < 300 and not (tmp_path / "x.nc").exists()


def test_bench_refuses_a_bad_lab_checkout_before_any_timing(config_path, tmp_path, capsys):
    argv = ["bench", "--config", str(config_path), "--seeds", "1", "--scenario", "calibrated"]
    assert main([*argv, "--lab", str(tmp_path / "nowhere")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert "--lab" in captured.err
