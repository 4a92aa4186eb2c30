"""The example optimizer plugin (examples/optimizer-plugin), installed for real.

pip installs it (no network, no build isolation) into a temporary directory put
on PYTHONPATH ahead of nothing but this repository's src; then the CLI lists
it, `spsa-bench simulate` and `snakemake` run it, and the shared optimizer and
isolation tests run with its row in the table.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from spsa_bench.results.cf import open_labelled

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PLUGIN = REPO / "examples" / "optimizer-plugin"
TINY = REPO / ".test" / "config" / "config.yaml"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    root = tmp_path_factory.mktemp("plugin")
    source = root / "source"  # pip builds in the source tree: build a copy
    shutil.copytree(PLUGIN, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    site = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
        + ["--target", str(site), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    stub_dir = root / "stub-bin"  # see tests/e2e/test_workflow.py: no SLURM probe delay
    stub_dir.mkdir()
    (stub_dir / "scontrol").write_text("#!/bin/sh\nexit 1\n")
    (stub_dir / "scontrol").chmod(0o755)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO / "src")])
    env["PATH"] = os.pathsep.join([str(stub_dir), str(BIN), env.get("PATH", "")])
    return env


def _run(env, *args, cwd=REPO, timeout=600):
    result = subprocess.run(
        [*args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{' '.join(map(str, args))}:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def plugin_config(tmp_path_factory):
    """The tiny grid with two built-in arms and two arms of the plugin kind."""
    raw = yaml.safe_load(TINY.read_text())
    raw["optimizers"] = {
        "spsa": {},
        "spsa-block": {},
        "spsa-momentum": {"beta": 0.5},
        "momentum-off": {"kind": "spsa-momentum", "beta": 0.0},
    }
    raw["baseline"] = "spsa"
    path = tmp_path_factory.mktemp("config") / "config.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def test_list_shows_the_plugin_with_its_distribution(plugin_env):
    result = _run(plugin_env, BIN / "spsa-bench", "list", "--config", "config/config.yaml")
    line = next(ln for ln in result.stdout.splitlines() if "spsa-momentum" in ln)
    assert "[plugin from spsa-bench-momentum]" in line and "no micro reference" in line
    assert result.stderr == ""  # loaded cleanly: no skipped-plugin line


def test_simulate_runs_the_plugin_and_beta_zero_is_spsa(plugin_env, plugin_config, tmp_path):
    files = {}
    for arm in ("spsa", "spsa-momentum", "momentum-off"):
        files[arm] = tmp_path / f"{arm}.nc"
        _run(
            plugin_env,
            BIN / "spsa-bench",
            "simulate",
            "--config",
            str(plugin_config),
            "--optimizer",
            arm,
            "--batch-mode",
            "sync",
            "--scenario",
            "calibrated",
            "--output",
            str(files[arm]),
            "--quiet",
        )
    theta = {arm: xr.open_dataset(path)["theta"].load().values for arm, path in files.items()}
    # heavy-ball with beta 0 is classic spsa (up to rounding: a_k * (S f / c_k))
    np.testing.assert_allclose(theta["momentum-off"], theta["spsa"], rtol=1e-12, atol=1e-9)
    assert np.abs(theta["spsa-momentum"] - theta["spsa"]).max() > 1e-3


def test_snakemake_runs_the_plugin_and_validation_skips_it(plugin_env, plugin_config, tmp_path):
    _run(
        plugin_env,
        BIN / "snakemake",
        "--directory",
        str(tmp_path),
        "--snakefile",
        str(REPO / "Snakefile"),
        "--configfile",
        str(plugin_config),
        "--cores",
        "2",
        "--quiet",
    )
    results = tmp_path / "results"
    with open_labelled(results / "benchmark.nc") as ds:
        arms = [str(v) for v in ds["optimizer"].values]
        assert arms == ["spsa", "spsa-block", "spsa-momentum", "momentum-off"]
        assert not ds["elo_loss"].isnull().any()
    assert {p.stem for p in (results / "validation").glob("*.nc")} == {"spsa", "spsa-block"}
    log = (results / "logs" / "validate_optimizers.log").read_text()
    assert "validate spsa-momentum: skipped, kind spsa-momentum has no micro reference" in log
    assert "validate momentum-off: skipped" in log


def test_shared_optimizer_and_isolation_tests_check_the_plugin_row(plugin_env):
    result = _run(
        plugin_env,
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/optimizers/test_optimizers_shared.py",
        "tests/optimizers/test_isolation.py",
        "-k",
        "spsa-momentum or isolation or import or ground_truth or hyperparameters_only",
        "-rA",
    )
    assert "spsa-momentum" in result.stdout  # the parametrized shared tests ran on it
    assert " passed" in result.stdout and "failed" not in result.stdout
