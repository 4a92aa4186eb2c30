"""The calibrated record a calibration yields and its comparison with the shipped one."""

from __future__ import annotations

import math

import numpy as np

from spsa_bench.calibration.shipped import MEDIAN_SE_FACTOR, compare, posterior


def test_posterior_uses_only_the_accepted_draws():
    values = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [100.0, 1000.0], [5.0, 50.0]])
    accepted = np.array([True, True, True, False, True])
    out = posterior(values, accepted, ("a", "b"))
    kept = values[accepted, 0]
    assert out["a"]["median"] == 2.5 and out["b"]["median"] == 25.0
    assert out["a"]["mc_se"] == MEDIAN_SE_FACTOR * np.std(kept, ddof=1) / 2.0
    assert (out["a"]["min"], out["a"]["max"], out["a"]["accepted"]) == (1.0, 5.0, 4)


def _record(median, se):
    return {"posterior": {"k": {"median": median, "mc_se": se}}}


def test_compare_reproduces_within_two_standard_errors_of_the_difference():
    shipped = _record(3.0, 0.3)
    same = compare(_record(3.0, 0.3), shipped)[0]
    assert same[-1] and same[3] == math.sqrt(0.18)
    edge = 3.0 + 2.0 * math.sqrt(0.18) * 0.999
    assert compare(_record(edge, 0.3), shipped)[0][-1]
    assert not compare(_record(3.0 + 2.0 * math.sqrt(0.18) * 1.001, 0.3), shipped)[0][-1]
    assert not compare({"posterior": {}}, shipped)[0][-1]  # a key the new fit lacks


def test_the_record_carries_the_accepted_draws_for_the_planner():
    from types import SimpleNamespace

    from spsa_bench.calibration.prior import FreeNumber, PriorFamily
    from spsa_bench.calibration.shipped import calibrated_record

    family = PriorFamily({"inactive_fraction": 0.0},
                         (FreeNumber("elo_at_stake.median", 0.5, 10), FreeNumber("offset.scale", 0.5, 4)))  # fmt: skip
    values = np.array([[1.0, 0.7], [2.0, 1.5], [9.0, 3.9], [3.0, 2.5]])
    result = SimpleNamespace(values=values, accepted=np.array([True, True, False, True]),
                             settings=(), fit_set=())  # fmt: skip
    record = calibrated_record(result, family, digest="d", fitted_on={"split_year": 2022})
    assert record["posterior_sample"] == [
        {"elo_at_stake.median": 1.0, "offset.scale": 0.7},
        {"elo_at_stake.median": 2.0, "offset.scale": 1.5},
        {"elo_at_stake.median": 3.0, "offset.scale": 2.5},
    ]
    assert record["truth"]["offset"]["scale"] == 1.5  # the median, as before
