"""The noise model through the configuration, the replay, the run file and the CLI."""

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.engine.simulate import make_noise, simulate
from spsa_bench.model import pentanomial
from spsa_bench.model.noise import PRESETS


def _config(**changes):
    raw = small_config_dict(num_pairs=600)
    raw.update(changes)
    return raw


def test_noise_defaults_to_vendored_and_the_top_level_is_each_scenarios_default():
    raw = _config()
    del raw["noise"]
    config = resolve(raw)
    own = {name for name, scenario in raw["scenarios"].items() if "noise" in scenario}
    assert own == {"tune-16-stc"}  # the tune scenario names its own
    assert {make_noise(config, s).name for s in config.scenarios if s not in own} == {"vendored"}
    raw = _config(noise="STC")
    raw["scenarios"]["mixed"]["noise"] = {"draw_rate": 0.6, "sigma2": 0.42}
    config = resolve(raw)
    assert make_noise(config, "calibrated").name == "STC"
    mixed = make_noise(config, "mixed")
    assert (mixed.name, mixed.draw_rate, mixed.sigma2) == ("custom", 0.6, 0.42)
    # the resolved configuration records each scenario's model
    assert config.resolved["scenarios"]["calibrated"]["noise"] == "STC"


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("top", "ltc", 'noise = "ltc"'),
        ("top", {"draw_rate": 0.5}, "noise"),
        ("scenario", {"draw_rate": 0.75, "sigma2": 0.1}, "scenarios.mixed.noise: sigma2 = 0.1"),
        ("scenario", {"draw_rate": 1.0, "sigma2": 0.1}, "scenarios.mixed.noise"),
        ("scenario", {"draw_rate": 0.7, "sigma2": 0.35, "rho": 1}, "scenarios.mixed.noise"),
    ],
)
def test_bad_noise_is_refused_naming_the_key(where, value, message):
    raw = _config()
    if where == "top":
        raw["noise"] = value
    else:
        raw["scenarios"]["mixed"]["noise"] = value
    with pytest.raises(ConfigError) as caught:
        resolve(raw)
    assert message in str(caught.value)


@pytest.mark.parametrize("mode", ["sync", "async-variable"])
def test_a_run_file_counts_every_pair_and_describes_its_noise(mode):
    config = resolve(_config(noise="LTC"))
    ds = simulate(config, optimizer="spsa", batch_mode=mode, scenario="mixed", seeds=[0, 1, 2])
    counts = ds.outcome_counts.transpose("seed", "outcome").values
    assert list(ds.outcome.values) == list(pentanomial.OUTCOMES)
    np.testing.assert_array_equal(counts.sum(axis=1), ds.total_pairs.values)
    assert ds.attrs["noise_model"] == "LTC"
    assert ds.attrs["noise_draw_rate"] == PRESETS["LTC"][0]
    # the probes stay within a few Elo of each other, so the pair outcomes are
    # close to the equal-strength ones: DD dominates at LTC
    share = counts.sum(axis=0) / counts.sum()
    assert share[2] == max(share) and share[2] > 0.55
    vendored = simulate(
        resolve(_config(noise="vendored")),
        optimizer="spsa",
        batch_mode=mode,
        scenario="mixed",
        seeds=[0, 1, 2],
    )
    assert vendored.attrs["noise_model"] == "vendored"
    assert (
        vendored.outcome_counts.sel(outcome="DD").sum() < ds.outcome_counts.sel(outcome="DD").sum()
    )


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "spsa_bench", "noise", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_noise_command_prints_the_preset_and_the_logistic_score():
    done = _cli("--time-control", "STC", "--elo", "0", "-30", "7.5", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [row["elo"] for row in rows] == [0.0, -30.0, 7.5]
    assert round(rows[0]["draw_rate"], 4) == 0.748 and round(rows[0]["sigma2"], 4) == 0.2654
    for row in rows:
        assert row["score"] == pytest.approx(1 / (1 + 10 ** (-row["elo"] / 400)), abs=1e-9)
        assert sum(row["probabilities"].values()) == pytest.approx(1.0, abs=1e-12)
        assert set(row) == {
            "elo", "probabilities", "score", "draw_rate", "sigma2", "correlation", "modelled_elo",
        }  # fmt: skip
        assert row["modelled_elo"] == row["elo"]  # within +-599: the model at the Elo asked
    assert rows[1]["draw_rate"] < rows[0]["draw_rate"]
    text = _cli("--draw-rate", "0.6", "--sigma2", "0.45", "--elo", "10")
    assert text.returncode == 0 and "custom" in text.stdout and "10.00" in text.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--draw-rate", "0.6"], "--draw-rate and --sigma2 go together"),
        (["--time-control", "LTC", "--draw-rate", "0.6", "--sigma2", "0.45"], "exclude each other"),
        (["--draw-rate", "0.6", "--sigma2", "0.1"], "sigma2 = 0.1"),
        (["--elo", "nan"], "--elo nan"),
    ],
)
def test_the_noise_command_refuses_bad_input_in_one_line(args, message):
    done = _cli(*args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
