"""Fishtest's worker pool: the batch rule, workers lists, in-flight KPIs, the workers study."""

import copy

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.config.sections.workers import parse as study_settings
from spsa_bench.engine.simulate import simulate
from spsa_bench.model import time_control
from spsa_bench.studies import STUDIES
from spsa_bench.studies.workers import run_workers_study

NUM_PAIRS = 900


def _fishtest_batch_games(base: float, increment: float, concurrency: int) -> int:
    """Fishtest's worker (worker/games.py): adjust_tc's tc_limit = 3 base + 200 inc,
    doubled for SPSA; batch = concurrency * 4 * max(1, round(ltc_limit / tc_limit))."""
    ltc_limit = 3 * 60.0 + 200 * 0.6
    limit = 2 * (3 * base + 200 * increment)
    return concurrency * 4 * max(1, round(ltc_limit / limit))


@pytest.mark.parametrize(
    "tc, base, increment", [("STC", 10, 0.1), ("LTC", 60, 0.6), ("VLTC", 180, 1.8)]
)
def test_batch_rule_is_fishtests_formula(tc, base, increment):
    raw = small_config_dict(num_pairs=NUM_PAIRS)
    raw["batch_modes"] = {"pool": {"workers": 5, "batch": "fishtest", "tc": tc}}
    del raw["cend_study"], raw["workers_study"], raw["budget_study"]
    settings = resolve(raw).batch_mode("pool").settings
    for concurrency in (1, 2, 8, 64):
        games = _fishtest_batch_games(base, increment, concurrency)
        assert time_control.batch_games(tc, concurrency) == games
        assert int(settings.job_pairs(np.array([concurrency]))[0]) == games // 2
    assert time_control.batch_games("STC", 5) == 12 * 5  # 12 x concurrency at STC
    assert time_control.batch_games("LTC", 5) == 4 * 5  # 4 x at LTC


def _pool_config(**pool) -> dict:
    raw = small_config_dict(num_pairs=NUM_PAIRS)
    raw["noise"] = "STC"
    raw["batch_modes"]["pool"] = {"batch": "fishtest", **pool}
    del raw["cend_study"], raw["workers_study"], raw["budget_study"]
    return raw


def test_one_fishtest_worker_of_fixed_concurrency_is_the_sync_mode():
    """Concurrency 2 at STC: 24 games = 12 pairs a batch, as sync with batch_size 12."""
    raw = _pool_config(workers=1, concurrency={"min": 2, "max": 2})
    raw["batch_modes"]["sync"]["batch_size"] = 12
    config = resolve(raw)
    for arm in ("spsa", "adam-block"):
        pool = simulate(config, optimizer=arm, batch_mode="pool", scenario="mixed", seeds=range(3))
        sync = simulate(config, optimizer=arm, batch_mode="sync", scenario="mixed", seeds=range(3))
        np.testing.assert_array_equal(pool["theta"].values, sync["theta"].values)
        assert np.all(pool["in_flight_max_fraction"].values == 0.0)


def test_pairs_in_flight_grow_with_the_workers():
    raw = _pool_config(workers=[1, 4, 16])
    config = resolve(raw)
    means = []
    for mode in ("pool-w1", "pool-w4", "pool-w16"):
        ds = simulate(config, optimizer="spsa", batch_mode=mode, scenario="mixed", seeds=range(3))
        means.append(float(ds["in_flight_mean_fraction"].mean()))
        assert np.all(ds["in_flight_max_fraction"] >= ds["in_flight_mean_fraction"])
    assert means[0] == 0.0 and 0 < means[1] < means[2] < 1


def test_a_workers_list_expands_into_named_modes():
    config = resolve(_pool_config(workers=[1, 10, 50]))
    assert [m for m in config.batch_modes if m.startswith("pool")] == [
        "pool-w1",
        "pool-w10",
        "pool-w50",
    ]
    mode = config.batch_mode("pool-w10")
    assert (mode.workers, mode.batch, mode.sweep) == (10, "fishtest", "pool")
    assert mode.settings.tc_ratio == 3.0  # STC, from the top-level noise preset
    assert config.resolved["batch_modes"]["pool-w10"]["game_duration"] == (
        time_control.game_duration("STC")
    )
    again = resolve(copy.deepcopy(config.resolved))
    assert again.batch_mode("pool-w10").settings == mode.settings


@pytest.mark.parametrize(
    "change, message",
    [
        ({"tc_ratio": 3}, "pool.tc_ratio: not used by batch: fishtest"),
        ({"batch_size": 36}, "pool.batch_size: not used by batch: fishtest"),
        ({"tc": "blitz"}, "tc"),
    ],
)
def test_bad_fishtest_modes_are_refused_naming_the_key(change, message):
    with pytest.raises(ConfigError, match=message):
        resolve(_pool_config(workers=4, **change))


def test_tc_only_with_batch_fishtest_and_no_clash_of_expanded_names():
    raw = _pool_config(workers=4)
    raw["batch_modes"]["async-fixed"]["tc"] = "STC"
    with pytest.raises(ConfigError, match="async-fixed.tc: only batch: fishtest"):
        resolve(raw)
    raw = _pool_config(workers=[4])
    raw["batch_modes"]["pool-w4"] = {"workers": 1, "batch": "fixed", "batch_size": 12}
    with pytest.raises(ConfigError, match="'pool-w4' is also configured"):
        resolve(raw)


def _study_config() -> dict:
    raw = small_config_dict(num_pairs=NUM_PAIRS)
    del raw["cend_study"]
    raw["workers_study"] = {
        "pool": {"batch": "fishtest", "tc": "STC"},
        "workers": [1, 8],
        "reference": "sync",
        "scenarios": ["mixed", "tune-16-stc"],
        "arms": {"spsa": None, "spsa-delay": {"kind": "spsa", "delay_adaptive": 100}},
        "margin": 0.5,
    }
    return raw


@pytest.fixture(scope="module")
def study_run():
    config = resolve(_study_config())
    study = study_settings(config)
    return config, study, run_workers_study(config, study, range(3))


def test_study_runs_equal_ordinary_runs_of_the_same_cells(study_run):
    """The study's pool of 8 and its sync reference are plain simulations, bit for bit."""
    config, _, ds = study_run
    raw = _study_config()
    raw["batch_modes"]["pool8"] = {"workers": 8, "batch": "fishtest", "tc": "STC"}
    plain_config = resolve(raw)
    for scenario in ("mixed", "tune-16-stc"):
        pool = simulate(plain_config, optimizer="spsa", batch_mode="pool8", scenario=scenario,
                        seeds=range(3))  # fmt: skip
        sync = simulate(plain_config, optimizer="spsa", batch_mode="sync", scenario=scenario,
                        seeds=range(3))  # fmt: skip
        np.testing.assert_array_equal(
            ds["final_elo_loss"].sel(scenario=scenario, arm="spsa", workers=8).values,
            pool["elo_loss"].isel(pairs=-1).values,
        )
        np.testing.assert_array_equal(
            ds["sync_final_elo_loss"].sel(scenario=scenario, arm="spsa").values,
            sync["elo_loss"].isel(pairs=-1).values,
        )
        np.testing.assert_array_equal(
            ds["in_flight_mean_fraction"].sel(workers=8).values,
            pool["in_flight_mean_fraction"].values,
        )


def test_study_arms_are_config_arms_or_defined_in_the_study(study_run):
    _, study, ds = study_run
    assert [arm.name for arm in study.arms] == ["spsa", "spsa-delay"]
    assert study.arms[1].hyper.delay_adaptive == 100
    assert list(ds["kind"].values) == ["spsa", "spsa"]
    assert list(ds["workers"].values) == [1, 8]


@pytest.mark.parametrize(
    "change, message",
    [
        (
            {"reference": "async-fixed"},
            "workers_study.reference = 'async-fixed': not a synchronous",
        ),
        ({"reference": "nope"}, "workers_study.reference: unknown batch mode"),
        ({"scenarios": ["nope"]}, "workers_study.scenarios: unknown scenario"),
        ({"arms": ["nope"]}, "workers_study.arms.nope: unknown optimizer"),
        ({"arms": {"x": {"kind": "spsa", "bogus": 1}}}, "workers_study.arms.x"),
        ({"pool": {"batch": "fixed", "batch_size": 36}}, None),
        ({"pool": {"batch": "fishtest", "workers": 3}}, "workers_study.pool.workers"),
    ],
)
def test_bad_study_settings_are_refused_naming_the_key(change, message):
    raw = _study_config()
    raw["workers_study"].update(change)
    if message is None:  # a fixed-batch pool is a valid asynchronous pool (workers > 1 only)
        raw["workers_study"]["workers"] = [2, 4]
        assert study_settings(resolve(raw)).workers == (2, 4)
        raw["workers_study"]["workers"] = [1, 4]
        with pytest.raises(ConfigError, match="must be asynchronous"):
            resolve(raw)
        return
    with pytest.raises(ConfigError, match=message):
        resolve(raw)


def test_workflow_settings_of_the_study_resolve_to_the_same_study():
    from spsa_bench import workflow

    config = resolve(_study_config())
    settings = workflow.study_settings(config, STUDIES["workers_study"])
    assert study_settings(resolve(copy.deepcopy(settings))) == study_settings(config)


def test_workers_study_command_writes_every_output(tmp_path):
    import yaml

    from spsa_bench.cli.main import main

    OUTPUTS = [output.file for output in STUDIES["workers_study"].outputs]

    raw = _study_config()
    raw["workers_study"]["scenarios"] = ["mixed"]
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    assert main(["workers-study", "--config", str(path), "--seeds", "0-2", "--output-dir",
                 str(out), "--quiet"]) == 0  # fmt: skip
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    assert "Safe concurrency" in (out / "workers.md").read_text()
    del raw["workers_study"]
    path.write_text(yaml.safe_dump(raw))
    assert main(["workers-study", "--config", str(path), "--output-dir", str(out)]) == 2
