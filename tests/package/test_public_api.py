"""The public API of ``spsa_bench`` and what importing the package costs."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import spsa_bench

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _python(code: str) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


def test_public_names_are_the_package_functions():
    from spsa_bench.config.loader import load_config
    from spsa_bench.engine.simulate import simulate
    from spsa_bench.optimizers import REGISTRY, build
    from spsa_bench.results.combine import combine_runs

    assert spsa_bench.load_config is load_config and spsa_bench.simulate is simulate
    assert spsa_bench.combine_runs is combine_runs
    assert spsa_bench.REGISTRY is REGISTRY and spsa_bench.build is build
    assert set(spsa_bench.__all__) >= {"load_config", "simulate", "combine_runs", "REGISTRY"}
    assert spsa_bench.__version__ == version("spsa-bench")


def test_the_core_imports_neither_matplotlib_nor_snakemake():
    result = _python(
        "import sys, spsa_bench, spsa_bench.engine.simulate, spsa_bench.validation.run, "
        "spsa_bench.results.combine, spsa_bench.cli.main; spsa_bench.REGISTRY['spsa']; "
        "bad = {'matplotlib', 'snakemake', 'seaborn'} & set(sys.modules); "
        "assert not bad, bad"
    )
    assert result.returncode == 0, result.stderr


def test_importing_the_package_or_the_model_stays_light():
    result = _python(
        "import sys, spsa_bench, spsa_bench.model.developer, spsa_bench.optimizers; "
        "heavy = {'xarray', 'pandas', 'matplotlib', 'snakemake', 'scipy'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    assert result.returncode == 0, result.stderr


def test_an_unknown_attribute_is_an_attribute_error():
    try:
        spsa_bench.no_such_name  # noqa: B018
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("spsa_bench.no_such_name did not raise")


def test_the_command_line_runs_blas_on_one_thread_unless_told_otherwise():
    """spsa_bench.cli (and the workflow) default the BLAS pools to one thread before
    numpy loads; a value the environment sets is kept."""
    code = (
        "import os, spsa_bench.cli, numpy; "
        "print(os.environ['OPENBLAS_NUM_THREADS'], os.environ['MKL_NUM_THREADS'])"
    )
    assert _python(code).stdout.split() == ["1", "1"]
    # numpy loaded after the setting: OpenBLAS started no thread of its own
    threads = "import os, spsa_bench.cli.main, numpy; print(len(os.listdir('/proc/self/task')))"
    assert _python(threads).stdout.strip() == "1"
    env = {"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "3"}
    kept = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert kept.stdout.split() == ["3", "1"], kept.stderr


def test_importing_the_package_leaves_the_thread_settings_alone():
    code = "import os, spsa_bench.engine.simulate; print('OPENBLAS_NUM_THREADS' in os.environ)"
    assert _python(code).stdout.strip() == "False"
