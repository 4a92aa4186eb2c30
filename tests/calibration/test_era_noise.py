"""The match noise of a tune's era, read from its verification tests."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from spsa_bench.calibration.era_noise import PAIR_CORRELATION, measured_noise, record_noises
from spsa_bench.calibration.simulate import tune_config, tune_setting
from spsa_bench.corpus.records import Parameter, Source, Tune, TuneRecord, Verification
from spsa_bench.model.noise import PRESETS, noise_model

SYNC = {"workers": 1, "batch": "fixed", "batch_size": 36}


def _test(label, *, ptnml=None, wld=None):
    wins, losses, draws = wld if wld is not None else (None, None, None)
    return Verification(
        label=label, time_control=None, threads=None, test="fixed", sprt=None,
        sprt_scale=None, games=None, wins=wins, losses=losses, draws=draws,
        ptnml=ptnml, result="fixed", elo=None, elo_error=None,
    )  # fmt: skip


def _record(name, tests, date="2020-01-01"):
    return TuneRecord(
        name=name, title=name, date=date, kind="search",
        sources=(Source("commit", "hand-made", "test"),),
        tune=Tune("60+0.6", 1, 20000, None, None, None, None),
        parameters=tuple(Parameter(f"p{i}", 100.0, 100.0) for i in range(3)),
        verification=tuple(tests), provenance={}, block=None,
    )  # fmt: skip


def test_a_pentanomial_test_gives_its_pair_variance_at_the_tunes_time_control():
    """The STC test is skipped (the tune plays LTC); the LTC one's pair variance is
    kept, at the draw rate of a 0.005 within-pair correlation; the family accepts it."""
    ptnml = (100, 2000, 5000, 2100, 120)
    record = _record("2020-p", [_test("STC", ptnml=(1, 1, 1, 1, 1)), _test("LTC", ptnml=ptnml)])
    noise = measured_noise(record, "LTC")
    counts, net = np.array(ptnml, float), np.array([-2, -1, 0, 1, 2.0])
    mean = counts @ net / counts.sum()
    assert noise["sigma2"] == pytest.approx(counts @ (net - mean) ** 2 / counts.sum() / 2)
    assert noise["sigma2"] / (1 - noise["draw_rate"]) - 1 == pytest.approx(PAIR_CORRELATION)
    noise_model(noise)
    assert measured_noise(record, "VLTC") is None


def test_a_trinomial_test_keeps_its_draw_rate_and_the_presets_pair_correlation():
    """W/L/D only (a test naming no time control is taken at the tune's): the draw rate
    is the test's, the pair variance (1 - d)(1 + rho) with the preset's rho."""
    record = _record("2016-t", [_test(None, wld=(300, 260, 640))], date="2016-01-01")
    noise = measured_noise(record, "STC")
    d = 640 / 1200
    draws, sigma2 = PRESETS["STC"]
    assert noise["draw_rate"] == pytest.approx(d)
    assert noise["sigma2"] == pytest.approx((1 - d) * sigma2 / (1 - draws))
    noise_model(noise)


def test_a_record_without_a_test_takes_the_noise_of_a_record_of_the_same_day():
    """The 2016 commit lists its tests once: its other runs (same date, same time
    control) play that test's noise; another day or another time control gets None."""
    tested = _record("2016-a", [_test("STC", wld=(300, 260, 640))], date="2016-05-01")
    same_day = _record("2016-b", [], date="2016-05-01")
    other_day = _record("2016-c", [], date="2016-06-01")
    records = [tested, same_day, other_day, same_day]
    noises = record_noises(records, ["STC", "STC", "STC", "LTC"])
    assert noises[1] == noises[0] and noises[0] is not None
    assert noises[2] is None and noises[3] is None


def test_a_setting_with_an_era_noise_plays_it():
    """tune_config's scenario and run play the setting's noise; without one, the preset
    of the tune's time control, as before."""
    record = _record("2020-n", [_test("LTC", ptnml=(100, 2000, 5000, 2100, 120))])
    setting = tune_setting(record, (20000,), "LTC")
    assert tune_config(setting, 3, SYNC).resolved["noise"] == "LTC"
    noise = measured_noise(record, "LTC")
    played = tune_config(dataclasses.replace(setting, noise=noise), 3, SYNC)
    assert played.resolved["noise"] == noise
    assert played.resolved["scenarios"]["tune"]["noise"] == noise


def test_calibrate_plays_each_tune_at_its_eras_noise_only_when_asked():
    """noise = record changes the simulated tunes (a pair variance a third of the
    preset's); preset is the default; any other word is refused."""
    from spsa_bench.calibration.prior import FreeNumber, PriorFamily
    from spsa_bench.calibration.run import calibrate

    family = PriorFamily({"inactive_fraction": 0.0}, (FreeNumber("elo_at_stake.median", 1, 10),))
    quiet = _test("LTC", ptnml=(5, 600, 8800, 620, 5))  # sigma2 about 0.07
    records = [_record("2020-q", [quiet]), _record("2023-q", [quiet], date="2023-01-01")]

    def run(**kw):
        return calibrate(records, family, draws=4, accept=0.5, seeds=[0, 1], entropy=5,
                         batch_mode=SYNC, split_year=2022, default_games=4000,
                         default_time_control="LTC", **kw)  # fmt: skip

    preset, era = run(), run(noise="record")
    np.testing.assert_array_equal(run(noise="preset").samples, preset.samples)
    assert era.settings[0].noise["sigma2"] < 0.1 and preset.settings[0].noise is None
    assert not np.array_equal(era.samples, preset.samples, equal_nan=True)
    with pytest.raises(ValueError, match="noise 'loud'"):
        run(noise="loud")
