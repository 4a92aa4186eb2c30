import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = REPO / "config" / "config.yaml"


#: The modules of the ``slurm`` tests: under the README's test command they are one work
#: unit, so one worker runs them one after the other (the one-node cluster of
#: ci/slurm-up.sh has room for one of them at a time).
SLURM_MODULES = ("tests/e2e/test_slurm_smoke.py", "tests/e2e/test_slurm_workflow.py")
#: Modules whose tests share nothing costly (each makes its own workflow run in its own
#: tmp_path): each test is a work unit of its own, so that their long Snakemake runs
#: spread over the workers.
SPLIT_MODULES = ("tests/e2e/test_workflow.py",)


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, when it is installed
def pytest_xdist_make_scheduler(config, log):
    """The README's test command (``-n auto --dist loadfile --no-loadscope-reorder``):
    pytest-xdist's loadfile scheduling, a module's tests on one worker (its module
    fixtures, such as the shared workflow runs of tests/e2e/test_reproducibility.py,
    made once), with two changes: the :data:`SLURM_MODULES` are one unit, the tests of
    :data:`SPLIT_MODULES` one unit each. (xdist's ``--dist loadgroup`` would read
    ``xdist_group`` marks, but it does not group under pytest 9.2:
    pytest-dev/pytest-xdist#1386.) Units are handed out in the workers' collection
    order, which :func:`pytest_collection_modifyitems` sets. Other ``--dist`` modes are
    xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class WorkUnits(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = _module(nodeid)
            if module in SLURM_MODULES:
                return "slurm"
            return nodeid if module in SPLIT_MODULES else module

    return WorkUnits(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a pytest-xdist worker: the modules with a ``slow`` test first (tests/e2e
    before the others), then the rest, each part in collection order, so that the long
    work units are handed out first rather than left for the end while a worker idles
    (the README's command passes ``--no-loadscope-reorder``, which keeps this order
    instead of xdist's sort by the number of tests in a unit). A run without xdist is
    left as it is."""
    if not hasattr(config, "workerinput"):
        return
    slow = {_module(item.nodeid) for item in items if item.get_closest_marker("slow")}

    def rank(item: pytest.Item) -> int:
        module = _module(item.nodeid)
        if module not in slow:
            return 2
        return 0 if module.startswith("tests/e2e/") else 1

    items.sort(key=rank)  # stable: collection order within each rank


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def default_config_path() -> Path:
    return DEFAULT_CONFIG


#: The default grid's hand-set values of the swept hyperparameters (the original lab's
#: settings, each the value the default sweep of that arm holds at its middle or
#: next to it): the tests keep one arm per kind, as the grid was before the sweeps.
HAND_SET = {
    "spsa-block": {"r_scale": 1.0},
    "sf-sgd": {"lr": 0.01},
    "sf-sgd-block": {"lr": 0.01},
    "sf-adam": {"lr": 0.001},
    "sf-adam-block": {"lr": 0.001},
    "adam": {"lr": 0.04},
    "adam-block": {"lr": 0.04},
    "ademamix": {"lr": 0.01},
    "spsa-2": {"curvature_floor": 0.01},
}


def hand_set_arms(optimizers: dict) -> dict:
    """The default config's arms with every sweep collapsed to its hand-set value
    (:data:`HAND_SET`); ``spsa-sweep`` (spsa itself at its middle) left out."""
    arms = {}
    for name, arm in optimizers.items():
        if name == "spsa-sweep":
            continue
        fixed = {key: value for key, value in (arm or {}).items() if not isinstance(value, list)}
        arms[name] = fixed | HAND_SET.get(name, {})
        assert not any(isinstance(value, list) for value in arms[name].values()), name
    return arms


def small_config_dict(num_pairs: int = 2000) -> dict:
    """A small but complete configuration for fast tests."""
    import yaml

    raw = yaml.safe_load(DEFAULT_CONFIG.read_text())
    raw["num_pairs"] = num_pairs
    raw["seeds"] = {"first": 0, "count": 4, "per_job": 4}
    raw["checkpoints"] = 21
    raw["optimizers"] = hand_set_arms(raw["optimizers"])
    del raw["tuning"]  # it needs a swept arm
    # the framework study names the default's tune scenario and batch mode, which many
    # tests narrow away; tests/studies/test_framework_study.py adds its own section
    raw.pop("framework_study", None)
    # spsa-cwd left the default grid (lambda_cwd 0 equals spsa); the tests keep a decaying arm
    raw["optimizers"]["spsa-cwd"] = {"lambda_cwd": 0.5}
    return raw


@pytest.fixture(scope="session")
def snakemake_env(tmp_path_factory) -> dict[str, str]:
    """The environment for Snakemake subprocesses: a stub ``scontrol`` first on PATH
    (see tests/e2e/test_workflow.py), then this venv's executables."""
    stub_dir = tmp_path_factory.mktemp("stub-bin")
    stub = stub_dir / "scontrol"
    stub.write_text("#!/bin/sh\nexit 1\n")
    stub.chmod(0o755)
    env = dict(os.environ)
    bin_dir = Path(sys.executable).parent
    env["PATH"] = os.pathsep.join([str(stub_dir), str(bin_dir), env.get("PATH", "")])
    return env


sys.path.insert(0, str(Path(__file__).parent))


def random_rotations(rng, n_seeds: int, n_params: int):
    """``(partner, cos, sin)`` of random plane rotations per seed, in the SeedBowls
    convention: parameters paired at random (one left alone when odd), angles up to
    45 degrees. Test data built by hand, independent of ``model.instances``."""
    import numpy as np

    partner = np.tile(np.arange(n_params), (n_seeds, 1))
    cos, sin = np.ones((n_seeds, n_params)), np.zeros((n_seeds, n_params))
    for s in range(n_seeds):
        order = rng.permutation(n_params)
        for i, j in zip(order[0::2], order[1::2], strict=False):
            phi = rng.uniform(-np.pi / 4, np.pi / 4)
            partner[s, i], partner[s, j] = j, i
            cos[s, i] = cos[s, j] = np.cos(phi)
            sin[s, i], sin[s, j] = -np.sin(phi), np.sin(phi)
    return partner, cos, sin


def set_key(path, value):
    """A mutation of a parsed configuration: the key at ``path`` (a sequence of keys)
    set to ``value``."""

    def mutate(raw):
        node = raw
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def tuning_config_dict() -> dict:
    """A small configuration with a tuning section: one swept arm (spsa, two r_end), a
    baseline, two scenarios and two batch modes (tests/studies/test_tuning.py)."""
    raw = small_config_dict(num_pairs=400)
    del raw["cend_study"], raw["workers_study"], raw["budget_study"]
    raw["optimizers"] = {"spsa": {"r_end": [0.001, 0.004]}, "adam-block": {}}
    raw["baseline"] = "adam-block"
    raw["scenarios"] = {name: raw["scenarios"][name] for name in ("calibrated", "mixed")}
    raw["batch_modes"] = {name: raw["batch_modes"][name] for name in ("sync", "async-fixed")}
    raw["tuning"] = {"seeds": {"first": 1000, "count": 4}, "family": ["calibrated", "mixed"]}
    return raw


def tuning_benchmark(rng, arms, seeds=range(4), scenarios=("calibrated", "mixed")):
    """A benchmark dataset with arbitrary final losses on the test seeds."""
    shape = (len(arms), 2, len(scenarios), len(seeds), 3)
    import xarray as xr

    return xr.Dataset(
        {
            "elo_loss": (
                ("optimizer", "batch_mode", "scenario", "seed", "pairs"),
                rng.gamma(2.0, 2.0, shape),
            )
        },  # fmt: skip
        coords={
            "optimizer": list(arms),
            "batch_mode": ["sync", "async-fixed"],
            "scenario": list(scenarios),
            "seed": list(seeds),
            "pairs": [0, 200, 400],
        },
    )
