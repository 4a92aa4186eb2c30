"""The c_end study (fishtest #1912, #1929): settings, runs, table."""

import copy

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench.analysis.cend import cend_markdown, cend_table
from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.config.sections.cend import parse as study_settings
from spsa_bench.engine.simulate import simulate
from spsa_bench.studies import STUDIES
from spsa_bench.studies.cend import run_cend_study

NUM_PAIRS = 600


def raw_config() -> dict:
    raw = small_config_dict(num_pairs=NUM_PAIRS)
    raw["cend_study"]["c_end"] = [0.5, 1, 2]
    return raw


@pytest.fixture(scope="module")
def study_run():
    config = resolve(raw_config())
    study = study_settings(config)
    return config, study, run_cend_study(config, study, range(4))


def test_default_config_has_a_study_on_a_tune_scenario():
    config = resolve(small_config_dict())
    study = study_settings(config)
    assert [arm.name for arm in study.arms] == ["classic", "realized", "min-c2"]
    assert study.block_c_end == 1.0  # synthetic_tune value 10: range 20, c_end 20/20
    assert study.arms[1].hyper.delta == "realized" and study.arms[2].hyper.min_c == 2


@pytest.mark.parametrize(
    "change, message",
    [
        ({"scenario": "mixed"}, "cend_study.scenario = 'mixed': not a parameter-block scenario"),
        ({"scenario": "nope"}, "cend_study.scenario: unknown scenario 'nope'"),
        ({"batch_mode": "nope"}, "cend_study.batch_mode: unknown batch mode 'nope'"),
        ({"base": "adam"}, "cend_study.base = 'adam': has no c_scale"),
        ({"variants": {"x": {"c_scale": 2}}}, "cend_study.variants.x.c_scale: set by the study"),
        ({"variants": {"x": {"delta": "sideways"}}}, "cend_study.variants.x"),
        ({"variants": {"x": {"bogus": 1}}}, "cend_study.variants.x"),
    ],
)
def test_bad_study_settings_are_refused_naming_the_key(change, message):
    raw = raw_config()
    raw["cend_study"].update(change)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        resolve(raw)


def test_a_block_with_several_c_end_values_is_refused():
    raw = raw_config()
    raw["scenarios"]["tune-16-stc"] = {
        "fishtest_params": "a,10,0,20,1,0.002\nb,10,0,20,2,0.002\n",
        "noise": "STC",
    }
    with pytest.raises(ConfigError, match="different c_end values"):
        resolve(raw)


def test_study_row_equals_an_ordinary_run_of_that_arm(study_run):
    """At c_end = the block's, the classic variant is the base arm with its overrides:
    its final loss equals a plain simulate of such an arm, bit for bit."""
    config, study, ds = study_run
    raw = raw_config()
    raw["optimizers"]["fishtest-classic"] = {"kind": "spsa", "A_ratio": 0.1}
    plain = simulate(
        resolve(raw),
        optimizer="fishtest-classic",
        batch_mode="sync",
        scenario="tune-16-stc",
        seeds=range(4),
    )
    np.testing.assert_array_equal(
        ds["final_elo_loss"].sel(arm="classic", c_end=1.0).values,
        plain["elo_loss"].isel(pairs=-1).values,
    )
    np.testing.assert_array_equal(
        ds["probe_equal_fraction"].sel(arm="classic", c_end=1.0).values,
        plain["probe_equal_fraction"].values,
    )
    np.testing.assert_array_equal(ds["start_elo_gap"].values, plain["start_elo_gap"].values)


def test_min_c_is_inert_at_and_above_it_and_removes_equal_integers(study_run):
    _, _, ds = study_run
    loss = ds["final_elo_loss"]
    np.testing.assert_array_equal(
        loss.sel(arm="min-c2", c_end=2.0).values, loss.sel(arm="classic", c_end=2.0).values
    )
    assert float(ds["probe_equal_fraction"].sel(arm="min-c2", c_end=0.5).max()) == 0.0
    assert float(ds["probe_equal_fraction"].sel(arm="classic", c_end=0.5).min()) > 0.0


def test_a_seed_does_not_depend_on_the_other_seeds(study_run):
    config, study, ds = study_run
    alone = run_cend_study(config, study, [2])
    np.testing.assert_array_equal(
        alone["final_elo_loss"].values[..., 0], ds["final_elo_loss"].sel(seed=2).values
    )


def test_table_differences_are_the_paired_means(study_run):
    _, _, ds = study_run
    table = cend_table(ds)
    row = table[(table["arm"] == "realized") & (table["c_end"] == 0.5)].iloc[0]
    difference = (
        ds["final_elo_loss"].sel(arm="realized", c_end=0.5)
        - ds["final_elo_loss"].sel(arm="classic", c_end=0.5)
    ).values
    assert row["diff_mean"] == pytest.approx(difference.mean(), rel=1e-12)
    assert row["diff_low"] < row["diff_mean"] < row["diff_high"]
    assert np.isnan(table[table["arm"] == "classic"]["diff_mean"]).all()
    text = cend_markdown(table, ds)
    assert "Δ vs classic" in text and "modelling assumption" in text


def test_workflow_settings_of_the_study_resolve_to_the_same_study():
    from spsa_bench import workflow

    config = resolve(raw_config())
    settings = workflow.study_settings(config, STUDIES["cend_study"])
    again = study_settings(resolve(copy.deepcopy(settings)))
    assert again == study_settings(config)
    raw = raw_config()
    del raw["cend_study"]
    assert workflow.study_settings(resolve(raw), STUDIES["cend_study"]) is None


def test_cend_study_command_writes_every_output(tmp_path):
    import yaml

    OUTPUTS = [output.file for output in STUDIES["cend_study"].outputs]
    from spsa_bench.cli.main import main

    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(raw_config()))
    out = tmp_path / "out"
    assert main(["cend-study", "--config", str(path), "--seeds", "0-2", "--output-dir",
                 str(out), "--quiet"]) == 0  # fmt: skip
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    assert "fishtest #1912" in (out / "cend.md").read_text()
