"""The command line and the NetCDF data contract, end to end on a small config."""

import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
import yaml
from conftest import small_config_dict

from spsa_bench.cli.main import main
from spsa_bench.results.cf import open_labelled
from spsa_bench.results.combine import combine_runs
from spsa_bench.results.datasets import open_run


@pytest.fixture(scope="module")
def small_config(tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "config.yaml"
    path.write_text(yaml.safe_dump(small_config_dict(num_pairs=1200)))
    return path


def simulate(config, output, optimizer="spsa", mode="sync", scenario="calibrated", seeds="0-3"):
    argv = ["simulate", "--config", str(config), "--optimizer", optimizer, "--batch-mode", mode]
    argv += ["--scenario", scenario, "--seeds", seeds, "--output", str(output), "--quiet"]
    return main(argv)


@pytest.fixture(scope="module")
def run_files(small_config, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    files = {}
    for optimizer in ("spsa", "spsa-block", "spsa-cwd"):
        for scenario in ("calibrated", "mixed"):
            for seeds in ("0-1", "2-3"):
                path = out / f"{optimizer}-{scenario}-{seeds}.nc"
                assert simulate(small_config, path, optimizer, scenario=scenario, seeds=seeds) == 0
                files[(optimizer, scenario, seeds)] = path
    return files


def test_run_file_follows_the_data_contract(run_files):
    ds = open_run(run_files[("spsa", "calibrated", "0-1")])
    assert ds.theta.dims == ("seed", "pairs", "param")
    assert ds.elo_loss.dims == ("seed", "pairs")
    for name in ("elo", "dist_to_target", "final_elo", "avg_step_size_last_100", "total_pairs"):
        assert name in ds and "long_name" in ds[name].attrs
    for name in (
        "param_group",
        "w_true",
        "w_dev",
        "c_dev",
        "theta_start",
        "theta_peak",
        "theta_min",
        "theta_max",
    ):
        assert ds[name].dims == ("param",)
    assert (
        ds.optimizer.item() == "spsa"
        and ds.batch_mode.item() == "sync"
        and ds.scenario.item() == "calibrated"
    )
    assert ds.pairs.values[0] == 0 and ds.pairs.values[-1] == 1200 and ds.pairs.size == 21
    np.testing.assert_allclose(ds.elo_loss, ds.attrs["peak_elo"] - ds.elo)
    assert (ds.total_pairs == 1200).all()
    for key in ("config", "spsa_bench_version", "numpy_version", "created", "git_revision"):
        assert key in ds.attrs
    assert yaml.safe_load(ds.attrs["config"])["num_pairs"] == 1200
    # a run file is checksummed but not compressed (zlib saves a fifth of it at 5x the write)
    assert ds.theta.encoding.get("fletcher32") is True
    assert not ds.theta.encoding.get("zlib")


def test_seed_chunk_is_bit_identical_to_the_same_seed_in_a_larger_run(small_config, tmp_path):
    simulate(small_config, tmp_path / "all.nc", seeds="0-9")
    simulate(small_config, tmp_path / "seven.nc", seeds="7-7")
    together, alone = open_run(tmp_path / "all.nc"), open_run(tmp_path / "seven.nc")
    for name in ("theta", "elo_loss", "final_elo", "avg_step_size_last_100"):
        np.testing.assert_array_equal(
            together[name].sel(seed=7).values, alone[name].sel(seed=7).values
        )


@pytest.mark.parametrize("mode", ["sync", "async-variable"])
def test_a_cell_is_bit_identical_in_a_grid_of_that_cell_alone(small_config, tmp_path, mode):
    """A smaller grid (one scenario, one batch mode, one arm: what a smaller default
    grid would keep of the default's, docs/performance.md) replays the cell it shares
    with the full grid bit for bit: no stream depends on the other cells."""
    raw = yaml.safe_load(small_config.read_text())
    raw["scenarios"] = {"mixed": raw["scenarios"]["mixed"]}
    raw["batch_modes"] = {mode: raw["batch_modes"][mode]}
    raw["optimizers"] = {"adam": raw["optimizers"]["adam"]}
    raw["baseline"] = "adam"
    for study in ("cend_study", "budget_study", "workers_study"):
        raw.pop(study, None)
    alone = tmp_path / "alone.yaml"
    alone.write_text(yaml.safe_dump(raw))
    assert simulate(small_config, tmp_path / "full.nc", "adam", mode, "mixed") == 0
    assert simulate(alone, tmp_path / "alone.nc", "adam", mode, "mixed") == 0
    full, single = open_run(tmp_path / "full.nc"), open_run(tmp_path / "alone.nc")
    assert set(full.data_vars) == set(single.data_vars)
    for name in full.data_vars:
        assert full[name].dtype == single[name].dtype, name
        np.testing.assert_array_equal(full[name].values, single[name].values, err_msg=name)
    assert int(full.n_updates.min()) > 1  # a run, not an empty file


def test_combine_runs_builds_one_cube(run_files, tmp_path):
    combined = combine_runs(run_files.values())
    assert combined.elo_loss.dims == ("optimizer", "batch_mode", "scenario", "seed", "pairs")
    assert (
        combined.sizes["seed"] == 4
        and combined.sizes["optimizer"] == 3
        and combined.sizes["scenario"] == 2
    )
    assert not combined.elo_loss.isnull().any()
    one = open_run(run_files[("spsa-block", "mixed", "2-3")])
    np.testing.assert_array_equal(
        combined.theta.sel(
            optimizer="spsa-block", batch_mode="sync", scenario="mixed", seed=[2, 3]
        ).values,
        one.theta.values,
    )
    combined.to_netcdf(tmp_path / "benchmark.nc")
    with xr.open_dataset(tmp_path / "benchmark.nc") as reopened:
        assert reopened.elo_loss.shape == combined.elo_loss.shape


def test_bad_config_writes_nothing(small_config, tmp_path, capsys):
    raw = yaml.safe_load(small_config.read_text())
    raw["num_pairs"] = -3
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(raw))
    out = tmp_path / "results" / "x.nc"
    assert simulate(bad, out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "num_pairs = -3" in err[0]
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    "flag,value", [("--optimizer", "newton"), ("--batch-mode", "warp"), ("--scenario", "moon")]
)
def test_unknown_names_are_refused(small_config, tmp_path, capsys, flag, value):
    argv = [
        "simulate",
        "--config",
        str(small_config),
        "--optimizer",
        "spsa",
        "--batch-mode",
        "sync",
    ]
    argv += ["--scenario", "calibrated", "--output", str(tmp_path / "r" / "x.nc"), "--quiet"]
    argv[argv.index(flag) + 1] = value
    assert main(argv) == 2
    assert value in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_console_script_help_documents_every_option():
    out = subprocess.run(
        [sys.executable, "-m", "spsa_bench", "simulate", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for option in (
        "--config",
        "--optimizer",
        "--batch-mode",
        "--scenario",
        "--seeds",
        "--output",
        "--quiet",
    ):
        assert option in out


def test_the_entry_point_delivers_output_status_and_exit_handlers(small_config, tmp_path):
    """spsa_bench.cli.run ends with os._exit after main: the exit handlers still run,
    piped output arrives whole, the status is main's, and the run file is complete."""
    code = (
        "import atexit, sys; from spsa_bench.cli import run; "
        "atexit.register(lambda: print('exit handler ran', file=sys.stderr)); "
        "sys.argv = ['spsa-bench', *sys.argv[1:]]; run()"
    )

    def entry(*argv: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-c", code, *argv]
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    listed = entry("list", "--config", str(small_config))
    assert listed.returncode == 0, listed.stderr
    assert "calibrated" in listed.stdout and listed.stdout.endswith("\n")
    assert listed.stderr == "exit handler ran\n"
    output = tmp_path / "run.nc"
    argv = ["--optimizer", "spsa", "--batch-mode", "sync", "--scenario", "calibrated"]
    done = entry(
        "simulate",
        "--config",
        str(small_config),
        *argv,
        "--seeds",
        "0-2",
        "--output",
        str(output),
        "--timings",
    )
    assert done.returncode == 0, done.stderr
    assert "timings: configuration" in done.stderr and "exit handler ran" in done.stderr
    assert open_run(output)["elo_loss"].shape[0] == 3
    missing = str(tmp_path / "missing.yaml")
    refused = entry("simulate", "--config", missing, *argv, "--seeds", "0", "--output", "x.nc")
    assert refused.returncode == 2 and "missing.yaml: cannot read" in refused.stderr
    assert refused.stderr.endswith("exit handler ran\n")


def test_list_shows_the_config(small_config, capsys):
    assert main(["list", "--config", str(small_config)]) == 0
    out = capsys.readouterr().out
    for name in ("spsa-block", "sync", "calibrated", "dev-overestimates"):
        assert name in out


def test_atomic_write_leaves_nothing_on_failure_and_ordinary_permissions(tmp_path):
    from spsa_bench.results.atomic import atomic_write

    target = tmp_path / "out" / "table.csv"

    def failing(tmp):
        with open(tmp, "w") as handle:
            handle.write("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(target, failing)
    assert list(target.parent.iterdir()) == []  # neither the final file nor a temporary one
    atomic_write(target, lambda tmp: open(tmp, "w").write("done"))
    assert target.read_text() == "done"
    import os

    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask  # not mkstemp's 0600


# -- validate: the configured arms, their gates and exit status ------------------------------


def _validation_config(tmp_path, arms: dict) -> str:
    raw = small_config_dict()
    raw["optimizers"] = arms
    raw["baseline"] = next(iter(arms))
    # the studies' arms are not among these
    del raw["cend_study"], raw["workers_study"], raw["budget_study"]
    path = tmp_path / "validate.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


def _validate(config, output, *extra):
    return main(
        ["validate", "--config", config, "--output", str(output), "--reports", "30", *extra]
    )


def test_validate_runs_every_configured_arm_with_its_hyperparameters(tmp_path, capsys):
    config = _validation_config(
        tmp_path, {"spsa-block": {}, "frozen": {"kind": "adam", "lr": 0.0}, "sf-sgd-block": {}}
    )
    assert _validate(config, tmp_path / "v") == 0
    err = capsys.readouterr().err
    assert {p.name for p in (tmp_path / "v").glob("*.nc")} == {
        "spsa-block.nc",
        "frozen.nc",
        "sf-sgd-block.nc",
    }
    with open_labelled(tmp_path / "v" / "frozen.nc") as ds:
        assert ds.attrs["arm"] == "frozen" and ds.attrs["kind"] == "adam"
        assert '"lr": 0.0' in ds.attrs["hyperparameters"]
        theta = ds["theta"].sel(path="macro")
        assert float(abs(theta - theta.isel(report=0)).max()) == 0.0  # lr 0: never moves
    assert err.count("gate passed") == 3


def _patched_row(monkeypatch, kind, **changes):
    import dataclasses

    from spsa_bench.optimizers import REGISTRY

    rows = {name: REGISTRY[name] for name in REGISTRY}
    rows[kind] = dataclasses.replace(rows[kind], **changes)
    monkeypatch.setattr(REGISTRY, "_rows", rows)


def test_validate_exits_non_zero_when_a_gate_fails(tmp_path, capsys, monkeypatch):
    # classic spsa is 1-5% away from its per-pair path: a zero tolerance must fail it
    _patched_row(monkeypatch, "spsa", micro_tolerance=0.0)
    config = _validation_config(tmp_path, {"spsa": {}, "spsa-block": {}})
    assert _validate(config, tmp_path / "v") == 1
    err = capsys.readouterr().err
    assert "validate spsa (spsa): gate FAILED" in err and "gate failed for spsa\n" in err
    assert "validate spsa-block (spsa-block): gate passed" in err
    assert (tmp_path / "v" / "spsa_gaps.csv").is_file()  # the evidence is still written


def test_validate_skips_a_kind_without_micro_reference_with_one_line(tmp_path, capsys, monkeypatch):
    _patched_row(monkeypatch, "adam", micro=None)
    config = _validation_config(tmp_path, {"spsa-block": {}, "adam": {"lr": 0.01}})
    assert _validate(config, tmp_path / "v", "--quiet") == 0
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == ["validate adam: skipped, kind adam has no micro reference"]
    assert not list((tmp_path / "v").glob("adam*"))


def test_config_defaults_to_the_local_file_else_the_packaged_one(tmp_path, monkeypatch, capsys):
    from spsa_bench.cli.common import PACKAGED_CONFIG, default_config

    monkeypatch.chdir(tmp_path)
    assert default_config() == PACKAGED_CONFIG
    assert main(["list"]) == 0
    assert "sf-adam-block" in capsys.readouterr().out
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "config.yaml").write_text(yaml.safe_dump(small_config_dict()))
    assert default_config().resolve() == (tmp_path / "config" / "config.yaml").resolve()
    help_text = subprocess.run(
        [sys.executable, "-m", "spsa_bench", "list", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    words = " ".join(help_text.split())  # argparse wraps the help text
    assert "./config/config.yaml if it exists, else the packaged default" in words


def _subcommands(parser) -> list[str]:
    import argparse

    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return list(action.choices)


def test_a_command_line_builds_only_its_command_parser():
    """main builds just the named command's parser; each name in COMMANDS is the one its
    module registers, and the whole parser has them all, in order."""
    from spsa_bench.cli.main import COMMANDS, build_parser

    assert _subcommands(build_parser()) == list(COMMANDS)
    for name in COMMANDS:
        assert _subcommands(build_parser(only=name)) == [name]
        whole = build_parser()._subparsers._group_actions[0].choices[name].format_help()
        assert (
            build_parser(only=name)._subparsers._group_actions[0].choices[name].format_help()
            == whole
        )


def test_the_top_level_help_and_an_unknown_command_use_the_whole_parser(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in ("simulate", "budget-study", "plan"))
    with pytest.raises(SystemExit) as exit_info:
        main(["simulat"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'simulat'" in capsys.readouterr().err
