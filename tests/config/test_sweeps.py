"""Hyperparameter sweeps in optimizer arms (issue 16, item 1): a list or a
``{log_range: {min, max, num}}`` expands an arm into one ordinary arm per value."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench.config.loader import STUDY_SECTIONS, ConfigError, OptimizerArm, resolve
from spsa_bench.optimizers import hyper_from_dict
from spsa_bench.workflow import coerce_strings, validated_arms


def sweep_config(optimizers: dict, baseline: str = "plain", num_pairs: int = 400) -> dict:
    raw = small_config_dict(num_pairs)
    for key in STUDY_SECTIONS:  # they name default grid arms (tuning: a swept arm)
        raw.pop(key, None)
    raw["optimizers"] = {"plain": {"kind": "spsa"}, **optimizers}
    raw["baseline"] = baseline
    return raw


def test_a_product_of_two_lists_gives_one_arm_per_pair_in_order():
    config = resolve(sweep_config({"spsa": {"r_end": [0.001, 0.002], "A": [5000, 1000]}}))
    swept = [arm for arm in config.optimizers.values() if arm.sweep == "spsa"]
    assert [arm.name for arm in swept] == [
        "spsa-r_end-0p001-a-5000",
        "spsa-r_end-0p001-a-1000",
        "spsa-r_end-0p002-a-5000",
        "spsa-r_end-0p002-a-1000",
    ]
    assert swept[1].swept == (("r_end", 0.001), ("A", 1000))
    assert swept[1].hyper == hyper_from_dict("spsa", {"r_end": 0.001, "A": 1000})
    assert all(arm.kind == "spsa" for arm in swept)
    assert config.optimizers["plain"].sweep is None and config.optimizers["plain"].swept == ()
    assert list(config.resolved["optimizers"]) == list(config.optimizers)
    assert "spsa" not in config.optimizers
    resolved = config.resolved["optimizers"]["spsa-r_end-0p002-a-5000"]
    assert resolved["kind"] == "spsa" and resolved["r_end"] == 0.002 and resolved["A"] == 5000


def test_a_log_range_gives_log_spaced_values_rounded_to_six_digits():
    config = resolve(
        sweep_config({"adam": {"lr": {"log_range": {"min": 0.001, "max": 0.1, "num": 5}}}})
    )
    swept = [arm for arm in config.optimizers.values() if arm.sweep == "adam"]
    assert [arm.name for arm in swept] == [
        "adam-lr-0p001",
        "adam-lr-0p00316228",
        "adam-lr-0p01",
        "adam-lr-0p0316228",
        "adam-lr-0p1",
    ]
    assert [arm.hyper.lr for arm in swept] == [0.001, 0.00316228, 0.01, 0.0316228, 0.1]
    assert [arm.swept for arm in swept][1] == (("lr", 0.00316228),)


def test_string_enums_and_odd_numbers_give_path_safe_names():
    config = resolve(
        sweep_config(
            {
                "auto": {"kind": "spsa-autoselect", "time_control": ["STC", "LTC"]},
                "tiny": {"kind": "spsa", "r_end": [1e-05, 1.5e-05]},
            }
        )
    )
    names = list(config.optimizers)[1:]
    assert names == [
        "auto-time_control-stc",
        "auto-time_control-ltc",
        "tiny-r_end-1e-05",
        "tiny-r_end-1p5e-05",
    ]
    assert config.optimizers["auto-time_control-ltc"].hyper.time_control == "LTC"


def test_resolving_the_resolved_configuration_gives_the_same_arms():
    raw = sweep_config(
        {
            "spsa": {"r_end": [0.001, 0.002], "A": [5000, 1000]},
            "adam": {"lr": {"log_range": {"min": 0.001, "max": 0.1, "num": 3}}},
        }
    )
    config = resolve(raw)
    again = resolve(json.loads(config.to_json()))
    assert again.to_json() == config.to_json()
    assert {name: (arm.kind, arm.hyper) for name, arm in again.optimizers.items()} == {
        name: (arm.kind, arm.hyper) for name, arm in config.optimizers.items()
    }


def test_optimizer_arm_stays_backwards_compatible():
    arm = OptimizerArm("spsa", "spsa", hyper_from_dict("spsa"))
    assert arm.sweep is None and arm.swept == ()


@pytest.mark.parametrize(
    ("arm", "needles"),
    [
        ({"kind": "spsa", "foo": [1, 2]}, ["optimizers.bad.foo", "not a hyperparameter"]),
        ({"kind": ["spsa", "adam"]}, ["optimizers.bad.kind", "cannot be swept"]),
        (
            {"kind": "adam", "lr": {"log_range": {"min": 0, "max": 0.1, "num": 3}}},
            ["optimizers.bad.lr.log_range.min"],
        ),
        (
            {"kind": "adam", "lr": {"log_range": {"min": -1, "max": 0.1, "num": 3}}},
            ["optimizers.bad.lr.log_range.min"],
        ),
        (
            {"kind": "adam", "lr": {"log_range": {"min": 0.001, "max": 0.1, "num": 1}}},
            ["optimizers.bad.lr.log_range.num"],
        ),
        (
            {"kind": "adam", "lr": {"log_range": {"min": 0.1, "max": 0.1, "num": 3}}},
            ["optimizers.bad.lr.log_range.max", "above min"],
        ),
        ({"kind": "adam", "lr": []}, ["optimizers.bad.lr"]),
        ({"kind": "adam", "lr": [0.01, 0.01]}, ["optimizers.bad.lr", "non-unique"]),
        ({"kind": "adam", "lr": [0.01, -1]}, ["optimizers.bad.lr[1]"]),
        ({"kind": "spsa", "delta": ["flip", "sideways"]}, ["optimizers.bad.delta[1]"]),
        (
            {"kind": "sf-sgd", "warmup_pairs": {"log_range": {"min": 1, "max": 10, "num": 3}}},
            ["optimizers.bad.warmup_pairs"],
        ),
    ],
)
def test_bad_sweeps_are_refused_by_key(arm, needles):
    with pytest.raises(ConfigError) as error:
        resolve(sweep_config({"bad": arm}))
    for needle in needles:
        assert needle in str(error.value)


def test_an_expanded_name_taken_by_another_arm_is_refused():
    raw = sweep_config(
        {"spsa": {"r_end": [0.001, 0.002]}, "spsa-r_end-0p002": {"kind": "spsa-block"}}
    )
    with pytest.raises(ConfigError, match=r"optimizers\.spsa\.r_end: the expanded arm "):
        resolve(raw)


def test_too_many_swept_arms_are_refused():
    values = [round(0.001 * i, 3) for i in range(1, 41)]
    raw = sweep_config({"spsa": {"r_end": values, "alpha": values}})
    with pytest.raises(ConfigError, match=r"optimizers\.spsa: sweeping r_end, alpha gives 1,600"):
        resolve(raw)


@pytest.mark.parametrize("given", [True, False])
def test_a_baseline_naming_a_swept_arm_is_refused_with_its_expansions(given):
    raw = sweep_config({"spsa": {"r_end": [0.001, 0.002]}}, baseline="spsa")
    if not given:
        del raw["baseline"]  # the default baseline is spsa
    with pytest.raises(ConfigError) as error:
        resolve(raw)
    message = str(error.value)
    assert message.startswith("baseline = 'spsa'")
    assert "spsa-r_end-0p001, spsa-r_end-0p002" in message
    assert ("(the default)" in message) is not given


def test_a_baseline_may_name_an_expanded_arm():
    config = resolve(sweep_config({"spsa": {"r_end": [0.001, 0.002]}}, baseline="spsa-r_end-0p002"))
    assert config.baseline == "spsa-r_end-0p002"


def test_workflow_string_coercion_covers_both_sweep_forms():
    raw = {
        "optimizers": {
            "spsa": {"r_end": ["0.001", "0.002"], "A": "5000"},
            "adam": {"lr": {"log_range": {"min": "0.001", "max": "0.1", "num": "3"}}},
            "sf-sgd": {"warmup_pairs": ["0", "10"]},
            "nullable": {"kind": "spsa", "A_ratio": ["null", "0.1"]},
        }
    }
    assert coerce_strings(raw)["optimizers"] == {
        "spsa": {"r_end": [0.001, 0.002], "A": 5000.0},
        "adam": {"lr": {"log_range": {"min": 0.001, "max": 0.1, "num": 3}}},
        "sf-sgd": {"warmup_pairs": [0, 10]},
        "nullable": {"kind": "spsa", "A_ratio": [None, 0.1]},
    }


def test_a_swept_arm_simulates_like_the_hand_written_arm():
    from spsa_bench.engine.simulate import simulate

    raw = sweep_config({"spsa": {"r_end": [0.001, 0.004], "A": 1000}}, num_pairs=400)
    raw["optimizers"]["hand"] = {"kind": "spsa", "r_end": 0.004, "A": 1000}
    config = resolve(raw)
    mode, scenario = next(iter(config.batch_modes)), next(iter(config.scenarios))
    runs = {
        name: simulate(config, optimizer=name, batch_mode=mode, scenario=scenario, seeds=[0, 1])
        for name in ("spsa-r_end-0p004", "hand", "spsa-r_end-0p001")
    }
    swept, hand, other = runs["spsa-r_end-0p004"], runs["hand"], runs["spsa-r_end-0p001"]
    assert set(swept.data_vars) == set(hand.data_vars)
    for name in swept.data_vars:
        np.testing.assert_array_equal(swept[name].values, hand[name].values, err_msg=name)
    assert not np.array_equal(swept["theta"].values, other["theta"].values)


def test_validation_takes_the_middle_arm_of_each_sweep_and_every_unswept_arm():
    raw = sweep_config(
        {"adam": {"lr": [0.01, 0.02, 0.04, 0.08]}, "auto": {"kind": "spsa-autoselect"}}
    )
    config = resolve(raw)
    # spsa-autoselect has no per-pair reference; adam's four arms, middle = index 2
    assert validated_arms(config) == ["plain", "adam-lr-0p04"]
