"""The framework study (issue 31): Fishtest's spsa beside OpenBench's spsa-openbench and
each OpenBench rule alone, on a small configuration."""

from __future__ import annotations

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


@pytest.mark.parametrize(
    ("changes", "message"),
    [
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
