"""The Fishtest options of the SPSA kinds (A_ratio, c_scale, r_scale, delta, min_c),
spsa-autoselect, and the hyperparameter types they need (string enums, nullable numbers)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers import Report, build, hyper_from_dict
from spsa_bench.optimizers.autoselect import chi2_95, draw_ratio
from spsa_bench.optimizers.base import hyper_schema
from spsa_bench.optimizers.spsa import SpsaCwdHyper, SpsaHyper
from spsa_bench.results.datasets import arm_coords

N_SEEDS, N_PARAMS = 3, 5
KINDS = ("spsa", "spsa-block", "spsa-cwd")


def _view(num_pairs=5000, integer=None, r_end=None, c_dev=None) -> DeveloperView:
    return DeveloperView(
        theta_start=np.array([100.0, 120.0, 80.0, 100.0, 95.0]),
        theta_min=np.zeros(N_PARAMS),
        theta_max=np.full(N_PARAMS, 200.0),
        c_dev=np.array([4.0, 2.0, 6.0, 0.8, 3.0]) if c_dev is None else c_dev,
        num_pairs=num_pairs,
        integer=integer,
        r_end=r_end,
    )


def _hyper(kind, **values):
    base = SpsaCwdHyper(lambda_cwd=0.5) if kind == "spsa-cwd" else SpsaHyper()
    return dataclasses.replace(base, **values)


def _reports(optimizer, n_reports=12, seed=0, realized=None):
    """Random reports; ``realized(c, flip, rng)`` makes the realized half-difference."""
    rng = np.random.default_rng(seed)
    pairs = np.zeros(N_SEEDS, dtype=np.int64)
    out = []
    for _ in range(n_reports):
        n = rng.integers(1, 40, size=N_SEEDS)
        k = pairs + 1
        c = optimizer.perturbation(k)
        flip = 2.0 * rng.integers(0, 2, size=(N_SEEDS, N_PARAMS)) - 1.0
        signal = rng.integers(-2 * n, 2 * n + 1).astype(np.float64)
        extra = None if realized is None else realized(c, flip, rng)
        out.append(Report(n, signal, flip, c, k, extra))
        pairs = pairs + n
    return out


def _run(optimizer, reports):
    state = optimizer.init(N_SEEDS)
    for report in reports:
        state = optimizer.update(state, report)
    return optimizer.export(state)


def _same(kind, view, hyper_a, hyper_b, **report_kw):
    one, two = build(kind, view, hyper_a), build(kind, view, hyper_b)
    reports = _reports(one, **report_kw)
    return np.array_equal(_run(one, reports), _run(two, reports))


# -- each option off (or without effect) is today's SPSA bit for bit ---------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_options_at_their_neutral_values_are_todays_spsa(kind):
    view = _view()
    today = _hyper(kind)
    exact = lambda c, flip, rng: c * flip  # noqa: E731  nothing rounded: realized = c * flip
    neutral = _hyper(kind, c_scale=1.0, r_scale=1.0, delta="realized", min_c=3.0)
    assert _same(kind, view, today, neutral)  # no realized in the reports, no integer params
    assert _same(kind, view, today, neutral, realized=exact)
    integer = np.array([True, False, True, False, False])
    int_view = _view(integer=integer)
    assert _same(kind, int_view, today, _hyper(kind, min_c=0.0), realized=exact)
    assert _same(kind, int_view, today, _hyper(kind, delta="flip"), realized=lambda c, f, r: 0 * c)


@pytest.mark.parametrize("kind", KINDS)
def test_A_ratio_sets_A_to_int_of_ratio_times_num_pairs(kind):
    view = _view(num_pairs=4321)
    assert _same(kind, view, _hyper(kind, A_ratio=0.1), _hyper(kind, A=float(432)))
    assert _same(kind, view, _hyper(kind, A_ratio=0.37), _hyper(kind, A=float(int(0.37 * 4321))))
    assert not _same(kind, view, _hyper(kind, A_ratio=0.1), _hyper(kind))


def test_A_with_A_ratio_is_refused():
    with pytest.raises(ValueError, match="A or A_ratio"):
        SpsaHyper(A=3000.0, A_ratio=0.1)
    with pytest.raises(ValueError, match="A or A_ratio"):
        hyper_from_dict("spsa-block", {"A": 100, "A_ratio": 0.2})
    assert hyper_from_dict("spsa", {"A_ratio": 0.1}).A_ratio == 0.1


# -- per-parameter c_end and r_end, c_scale and r_scale ---------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_end_values_are_the_scaled_per_parameter_c_end_and_r_end(kind):
    r_end = np.array([0.001, 0.002, 0.0005, 0.004, 0.003])
    view = _view(num_pairs=3000, r_end=r_end)
    hyper = _hyper(kind, c_scale=1.7, r_scale=0.6, A_ratio=0.1)
    optimizer = build(kind, view, hyper)
    N = np.full(N_SEEDS, view.num_pairs)
    c_k = optimizer.perturbation(N)
    np.testing.assert_allclose(c_k, np.tile(view.c_dev * 1.7, (N_SEEDS, 1)), rtol=1e-12)
    # the step of one pair at k = N is R_k * c_k * S * flip: R_k = step / (c_k * S * flip)
    flip = np.ones((N_SEEDS, N_PARAMS))
    ones = np.ones(N_SEEDS, dtype=np.int64)
    state = optimizer.init(N_SEEDS)
    new = optimizer.update(state, Report(ones, np.ones(N_SEEDS), flip, c_k, N))
    step = optimizer.export(new) - optimizer.export(state)
    # (spsa-cwd decays nothing on its first step: theta = theta_start)
    np.testing.assert_allclose(step / c_k, np.tile(r_end * 0.6, (N_SEEDS, 1)), rtol=1e-9)


def test_schedule_r_k_is_per_parameter_with_a_per_parameter_r_end():
    from spsa_bench.optimizers.spsa import gain_schedule

    r_end = np.array([0.001, 0.002, 0.0005, 0.004, 0.003])
    view = _view(num_pairs=3000, r_end=r_end)
    k = np.array([3000, 1, 17])
    r_k = gain_schedule(view, SpsaHyper(r_scale=2.0)).r_k(k)
    assert r_k.shape == (3, N_PARAMS)
    np.testing.assert_allclose(r_k[0], 2.0 * r_end, rtol=1e-12)
    uniform = gain_schedule(_view(), SpsaHyper()).r_k(k)
    assert uniform.shape == (3, 1)


def test_the_arm_r_end_applies_without_a_scenario_r_end():
    view = _view()
    assert _same("spsa", view, _hyper("spsa", r_end=0.004), _hyper("spsa", r_scale=2.0))


# -- delta = realized (fishtest #1929) --------------------------------------------------------


@pytest.mark.parametrize("kind", ("spsa", "spsa-block"))
def test_realized_delta_zero_where_equal_and_reversed_where_swapped(kind):
    view = _view()
    classic = build(kind, view, _hyper(kind))
    realized = build(kind, view, _hyper(kind, delta="realized"))

    def played(c, flip, rng):
        out = c * flip
        out[:, 0] = 0.0  # the two engines played the same integer
        out[:, 1] = -out[:, 1]  # ... swapped integers
        out[:, 2] = 0.5 * out[:, 2]  # ... half the float difference
        return out

    report = _reports(classic, n_reports=1, seed=5, realized=played)[0]
    start = classic.init(N_SEEDS)
    step_flip = classic.export(classic.update(start, report)) - view.theta_start
    step_real = realized.export(realized.update(start, report)) - view.theta_start
    assert np.all(step_flip[:, :3] != 0.0)
    np.testing.assert_array_equal(step_real[:, 0], 0.0)
    np.testing.assert_allclose(step_real[:, 1], -step_flip[:, 1], rtol=1e-12)
    np.testing.assert_allclose(step_real[:, 2], 0.5 * step_flip[:, 2], rtol=1e-12)
    np.testing.assert_array_equal(step_real[:, 3:], step_flip[:, 3:])


# -- min_c on integer parameters (fishtest #1912) ---------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_min_c_raises_c_k_only_on_integer_parameters(kind):
    integer = np.array([True, True, False, True, False])
    view = _view(integer=integer, c_dev=np.array([0.5, 3.0, 0.5, 1.5, 1.0]))
    plain = build(kind, view, _hyper(kind))
    raised = build(kind, view, _hyper(kind, min_c=2.0))
    k = np.array([1, 100, 5000])
    c, c_raised = plain.perturbation(k), raised.perturbation(k)
    np.testing.assert_array_equal(c_raised[:, ~integer], c[:, ~integer])
    np.testing.assert_array_equal(c_raised[:, integer], np.maximum(c[:, integer], 2.0))
    assert np.all(c[:, 0] < 2.0) and np.all(c_raised[:, 0] == 2.0) and np.all(c_raised[:, 1] > 2.0)


def test_min_c_step_uses_the_raised_c_in_R_k():
    """One pair: step = R_k * c_eff * S * flip with R_k = a_k / c_eff**2."""
    integer = np.array([True, False, False, True, False])
    view = _view(integer=integer, c_dev=np.array([0.5, 0.5, 2.0, 3.0, 1.0]))
    k = np.array([1, 10, 5000])
    plain = build("spsa", view, _hyper("spsa"))
    raised = build("spsa", view, _hyper("spsa", min_c=2.0))
    flip = np.ones((N_SEEDS, N_PARAMS))
    ones = np.ones(N_SEEDS, dtype=np.int64)
    signal = np.full(N_SEEDS, 3.0)
    steps = []
    for opt in (plain, raised):
        report = Report(ones, signal, flip, opt.perturbation(k), k)
        steps.append(opt.export(opt.update(opt.init(N_SEEDS), report)) - view.theta_start)
    c, c_eff = plain.perturbation(k), raised.perturbation(k)
    # a_k / c_k * S = step, so a_k / c_eff * S = step * c / c_eff
    np.testing.assert_allclose(steps[1], steps[0] * c / c_eff, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(steps[1][:, ~integer], steps[0][:, ~integer])


def test_min_c_block_equals_its_micro_steps():
    """spsa-block with min_c: the mean over the block of a_k / max(c_k, min_c), exact."""
    integer = np.array([True, False, True, True, False])
    view = _view(num_pairs=400, integer=integer, c_dev=np.array([1.9, 0.5, 2.1, 0.7, 1.0]))
    hyper = _hyper("spsa-block", min_c=2.0, A=10.0)
    block = build("spsa-block", view, hyper)
    classic = build("spsa", view, hyper)
    rng = np.random.default_rng(3)
    flip = 2.0 * rng.integers(0, 2, size=(1, N_PARAMS)) - 1.0
    first, n, signal = 3, 60, 12.0
    k0 = np.array([first])
    report = Report(np.array([n]), np.array([signal]), flip, block.perturbation(k0), k0)
    theta_block = block.export(block.update(block.init(1), report))
    theta = classic.init(1)
    for k in range(first, first + n):  # n classic one-pair steps with the mean signal, no clip
        kk = np.array([k])
        one = Report(np.array([1]), np.array([signal / n]), flip, classic.perturbation(kk), kk)
        theta = theta._replace(theta=classic.update(theta, one).theta)
    np.testing.assert_allclose(theta_block, classic.export(theta), rtol=1e-12)


# -- spsa-autoselect --------------------------------------------------------------------------


def test_autoselect_gains_and_info():
    view = _view(num_pairs=20_000)
    optimizer = build("spsa-autoselect", view)
    span = view.theta_max - view.theta_min
    for k in (1, 77, 20_000):
        np.testing.assert_allclose(optimizer.perturbation(np.full(2, k)), np.tile(span / 6, (2, 1)))
    info = optimizer.info
    assert set(info) == {"autoselect_games", "autoselect_r", "autoselect_draw_ratio"}
    # spsa_new.js: the STC draw ratio ~ 0.739 (its default); r = precision / (C chi2 (1-d) / 8)
    assert abs(info["autoselect_draw_ratio"] - 0.739) < 5e-4
    C = 800 / math.log(10)
    r = 0.5 / (C * chi2_95(N_PARAMS) * (1 - draw_ratio("STC")) / 8)
    assert info["autoselect_r"] == pytest.approx(r, rel=1e-12)
    # relaxation time 9 C / (4 r elo) games with c = range / 6, times 3, to the 1000-game step
    games = 1000 * round(3 * 9 * C / (4 * r * 2) / 1000)
    assert info["autoselect_games"] == games and games % 1000 == 0
    # a constant gain: one pair's step is r * c_end * S * flip
    c = optimizer.perturbation(np.array([500]))
    report = Report(np.array([1]), np.array([2.0]), np.ones((1, N_PARAMS)), c, np.array([500]))
    step = optimizer.export(optimizer.update(optimizer.init(1), report)) - view.theta_start
    np.testing.assert_allclose(step[0], r * (span / 6) * 2.0, rtol=1e-12)


def test_autoselect_time_controls_and_chi2():
    assert draw_ratio("STC") < draw_ratio("LTC") < draw_ratio("VLTC") < 1
    assert chi2_95(1) == pytest.approx(3.8414588206941236, rel=1e-12)
    assert chi2_95(99) == pytest.approx(123.22522145336157, rel=1e-12)
    ltc = build(
        "spsa-autoselect", _view(), hyper_from_dict("spsa-autoselect", {"time_control": "LTC"})
    )
    assert ltc.info["autoselect_r"] > build("spsa-autoselect", _view()).info["autoselect_r"]
    with pytest.raises(ValueError, match="time_control"):
        hyper_from_dict("spsa-autoselect", {"time_control": "blitz"})


# -- hyperparameter types through the schema, the loader and the run-file coordinates --------


def test_schema_of_enum_and_nullable_hyperparameters():
    props = hyper_schema(SpsaHyper)
    assert props["A_ratio"]["type"] == ["number", "null"] and props["A_ratio"]["default"] is None
    assert props["delta"] == {
        "type": "string",
        "description": props["delta"]["description"],
        "default": "flip",
        "enum": ["flip", "realized"],
    }


def test_loader_and_run_coordinates_with_enum_and_null():
    raw = small_config_dict()
    raw["optimizers"]["spsa"] = {"delta": "realized"}
    raw["optimizers"]["fishtest"] = {"kind": "spsa", "A_ratio": 0.1, "min_c": 2}
    config = resolve(raw)
    assert config.optimizers["spsa"].hyper.delta == "realized"
    resolved = config.resolved["optimizers"]
    assert resolved["spsa"]["A_ratio"] is None and resolved["fishtest"]["A_ratio"] == 0.1
    config_json = json.dumps(config.resolved)
    coords = arm_coords(config_json, "spsa", "spsa")
    assert "A_ratio" not in coords and coords["delta"][1] == "realized"
    assert arm_coords(config_json, "fishtest", "spsa")["A_ratio"][1] == 0.1
    for bad in ({"delta": "rounded"}, {"A_ratio": -1}, {"A_ratio": "x"}):
        raw["optimizers"]["spsa"] = bad
        with pytest.raises(ConfigError):
            resolve(raw)
    raw["optimizers"]["spsa"] = {"A": 10, "A_ratio": 0.1}
    with pytest.raises(ConfigError, match="A or A_ratio"):
        resolve(raw)


def test_micro_reference_follows_a_ratio_and_the_scales(tmp_path):
    """The per-pair micro reference derives A, c_end and r_end as the optimizer does:
    spsa-block equals it to rounding (its 1e-9 gate) with A_ratio, c_scale and r_scale set, and a
    wrong A in the reference would show as a gap far above classic SPSA's tolerance."""
    from spsa_bench.validation.run import validate

    hyper = {"A_ratio": 0.1, "c_scale": 2.0, "r_scale": 0.5}
    block = validate("spsa-block", tmp_path, hyper=hyper)
    assert block.gap <= block.tolerance  # 1e-9: exact up to rounding
    outcome = validate("spsa", tmp_path, hyper={"A_ratio": 0.1})
    assert outcome.gap < outcome.tolerance
