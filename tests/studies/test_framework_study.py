"""The framework study (issue 31): Fishtest's spsa beside OpenBench's spsa-openbench and
each OpenBench rule alone, on a small configuration."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench.config import resolve
from spsa_bench.config.records import ConfigError
from spsa_bench.studies import STUDIES

SECTION = {
    "scenario": "tune-16-stc",
    "batch_mode": "sync",
    "c_end": [0.25, 2],
    "fishtest": {"A_ratio": 0.1},
}


def _config(**changes):
    raw = small_config_dict(2000)
    raw["framework_study"] = {**SECTION, **changes}
    return resolve(raw)


@pytest.fixture(scope="module")
def dataset():
    config = _config()
    study = STUDIES["framework_study"]
    return study.run(config, study.section(config), range(8))


def test_openbench_gains_with_its_rules_off_are_fishtests(dataset):
    """A = A_ratio * N is an integer here, so spsa-openbench with pairs_per 1, no floor
    and independent rounding is Fishtest's spsa to rounding error."""
    loss = dataset["final_elo_loss"]
    assert np.allclose(loss.sel(arm="fishtest"), loss.sel(arm="ob-all-off"), rtol=0, atol=1e-9)


def test_coupled_rounding_with_the_floor_never_plays_equal_integers(dataset):
    equal = dataset["probe_equal_fraction"].sel(c_end=0.25)
    swapped = dataset["probe_swapped_fraction"].sel(c_end=0.25)
    assert np.all(equal.sel(arm="openbench") == 0) and np.all(swapped.sel(arm="openbench") == 0)
    # independent rounding at c_end 0.25 plays equal integers about half the time
    assert float(equal.sel(arm="fishtest").mean()) > 0.3
    # coupling alone keeps some (1 - 2c below c = 1/2); the floor alone lowers them
    assert 0 < float(equal.sel(arm="ob+coupled").mean()) < float(equal.sel(arm="fishtest").mean())
    assert float(equal.sel(arm="ob+c-floor").mean()) < float(equal.sel(arm="fishtest").mean())


def test_report_files(dataset, tmp_path):
    study = STUDIES["framework_study"]
    paths = [tmp_path / output.file for output in study.outputs]
    study.write(dataset, paths)
    assert all(path.stat().st_size > 0 for path in paths)
    table = (tmp_path / "frameworks.md").read_text()
    assert "Δ vs ob-all-off" in table and "openbench" in table


#: OpenBench's dispatch panel on a small pool: 4 machines of concurrency 4 (MULTIPLE: 2
#: runners each), the same machines in every mode; STC game durations (BATCHED: a
#: workload of 32 pairs on 4 lanes reports several times).
POOL = {
    "workers": 4, "batch": "openbench", "concurrency": {"min": 4, "max": 4},
    "game_duration": {"median": 23.5, "p95": 33.6},
}  # fmt: skip
DISPATCH = {
    "single": POOL,
    "multiple": {**POOL, "distribution": "multiple"},
    "batched": {**POOL, "reporting": "batched"},
}


@pytest.fixture(scope="module")
def with_dispatch():
    config = _config(c_end=[0.25, 1], dispatch=DISPATCH)
    study = STUDIES["framework_study"]
    return config, study.run(config, study.section(config), range(6))


def test_the_dispatch_panel_leaves_the_rules_panel_unchanged(with_dispatch):
    config, ds = with_dispatch
    plain = _config(c_end=[0.25, 1])
    study = STUDIES["framework_study"]
    alone = study.run(plain, study.section(plain), range(6))
    for name in ("final_elo_loss", "probe_equal_fraction", "probe_swapped_fraction"):
        np.testing.assert_array_equal(ds[name].values, alone[name].values)  # bit for bit
    assert "dispatch" not in alone.dims


def test_a_dispatch_arm_is_the_openbench_arm_replayed_on_its_mode(with_dispatch):
    """At the block's c_end (1 on tune-16-stc: no scaling) each dispatch arm equals a
    replay of spsa-openbench (every rule on, coupled rounding) on its batch mode."""
    from spsa_bench.engine.simulate import prepare

    config, ds = with_dispatch
    section = STUDIES["framework_study"].section(config)
    assert section.block_c_end == 1.0
    for entry in section.dispatch:
        setup = prepare(config, "tune-16-stc", entry.mode, range(6))
        run = dataclasses.replace(setup, rounding="coupled").replay(entry.arm)
        expected = setup.problem.bowl.elo_loss(run.theta[:, -1])
        got = ds["dispatch_final_elo_loss"].sel(dispatch=entry.arm.name, c_end=1.0).values
        np.testing.assert_array_equal(got, expected)
        assert entry.arm.hyper.pairs_per == entry.mode.settings.pairs_per == 8
    settings = [(e.mode.settings.distribution, e.mode.settings.reporting) for e in section.dispatch]
    assert settings == [("single", "bulk"), ("multiple", "bulk"), ("single", "batched")]
    assert ds["reporting"].values.tolist() == ["bulk", "bulk", "batched"]
    single, multiple, batched = ds["dispatch_final_elo_loss"].values
    assert not np.array_equal(single, multiple)  # different schedules, different runs
    assert not np.array_equal(single, batched)
    # coupled rounding with the floor: never equal integers, whatever the dispatch
    assert np.all(ds["dispatch_probe_equal_fraction"].values == 0)


def test_dispatch_report(with_dispatch, tmp_path):
    import pandas as pd

    _, ds = with_dispatch
    study = STUDIES["framework_study"]
    paths = [tmp_path / output.file for output in study.outputs]
    study.write(ds, paths)
    table = pd.read_csv(tmp_path / "frameworks.csv")
    dispatch = table[table["panel"] == "dispatch"]
    assert set(dispatch["arm"]) == {"openbench@single", "openbench@multiple", "openbench@batched"}
    assert (table["panel"] == "rules").sum() == 6 * 2
    # the panel's differences are to its first arm, paired seed by seed
    loss = ds["dispatch_final_elo_loss"].sel(c_end=0.25)
    row = dispatch[(dispatch["arm"] == "openbench@multiple") & (dispatch["c_end"] == 0.25)]
    expected = float(np.mean(loss.values[1] - loss.values[0]))
    assert float(row["diff_mean"].iloc[0]) == pytest.approx(expected, rel=1e-12)
    markdown = (tmp_path / "frameworks.md").read_text()
    assert "Δ vs openbench@single" in markdown and "SINGLE vs MULTIPLE" in markdown


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"dispatch": {"x": {"workers": 4, "batch": "variable"}}},
            "framework_study.dispatch.x.batch = 'variable': the dispatch panel plays "
            "OpenBench's dispatch",
        ),
        (
            {"dispatch": {"x": {**POOL, "pairs_per": 4}}},
            "framework_study.dispatch.x.pairs_per: set by framework_study.openbench.pairs_per",
        ),
        (
            {"dispatch": {"x": {"workers": 4, "batch": "openbench", "distribution": "multiple"}}},
            "framework_study.dispatch.x.concurrency = {min: 1, max: 64}: distribution 'multiple'",
        ),
        ({"dispatch": {}}, "framework_study.dispatch = {}: {} should be non-empty"),
        ({"fishtest": "adam"}, "framework_study.fishtest = 'adam': kind adam, not spsa"),
        ({"scenario": "nope"}, "framework_study.scenario"),
        ({"openbench": {"kind": "spsa"}}, "framework_study.openbench.kind"),
        ({"openbench": {"pairs_per": 0}}, "framework_study.openbench"),
    ],
)
def test_bad_sections_are_refused(changes, message):
    with pytest.raises(ConfigError) as error:
        _config(**changes)
    assert message in str(error.value)
