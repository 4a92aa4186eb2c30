"""The planner's SPSA gain schedule (issue 30 item 4): ``--a-ratio``, ``--alpha`` and
``--gamma`` reach the spsa arm of every run, change the gains as the formula says,
are refused outside the spsa kind's bounds, and leave the plan unchanged at Fishtest's
defaults."""

import dataclasses

import numpy as np
import pytest
import yaml

from spsa_bench.cli.main import main
from spsa_bench.config.loader import PACKAGED_CONFIG, ConfigError, resolve
from spsa_bench.engine.simulate import prepare, simulate
from spsa_bench.optimizers.spsa import SpsaHyper, gain_schedule
from spsa_bench.plan import spec as plan
from spsa_bench.plan.run import _arm, plan_config, run_plan
from spsa_bench.plan.spec import AUTOSELECT, SCENARIO, SPSA, PlanSpec, given_setting
from spsa_bench.plan.summary import final_gain, header

BLOCK = """\
futilityMult,118,0,236,11.8,0.0020
nullMoveDepthDiv,13,0,26,1.3,0.0020
lmrBase,1024,0,2048,102.4,0.0020
seeQuietMargin,-64,-128,0,6.4,0.0020
"""
SMALL = {"c_scales": (1.0,), "r_scales": (1.0,), "games_scales": (1.0,)}
C_END = np.array([11.8, 1.3, 102.4, 6.4])
R_END = 0.002


def spec_of(**changes) -> PlanSpec:
    return PlanSpec(**{"block_text": BLOCK, "games": 20_000, "seeds": 6, **SMALL, **changes})


def schedule_of(spec: PlanSpec, c_scale: float = 1.0):
    config = plan_config(spec, spec.games)
    setup = prepare(
        config, SCENARIO, config.batch_mode(spec.batch_mode), range(2), prior=spec.prior
    )
    setting = dataclasses.replace(given_setting(spec), c_scale=c_scale)
    played, arm = _arm(setup, setting)
    return gain_schedule(played.problem.view, arm.hyper)


@pytest.mark.parametrize(
    ("a_ratio", "alpha", "gamma"),
    [(0.1, 0.602, 0.101), (0.005, 0.602, 0.101), (0.03, 0.5, 0.2), (0.0, 1.0, 0.0)],
)
def test_the_gains_follow_fishtests_formula(a_ratio, alpha, gamma):
    """N = games / 2 = 10,000 iterations; A = int(ratio N); c_k = c_end N^g / k^g and
    a_k = r_end c_end^2 (A + N)^a / (A + k)^a, so c_N = c_end and a_N = r_end c_end^2."""
    n = 10_000
    schedule = schedule_of(spec_of(a_ratio=a_ratio, alpha=alpha, gamma=gamma))
    a_big = int(a_ratio * n)
    assert schedule.A == a_big and schedule.alpha == alpha and schedule.gamma == gamma
    k = np.array([1.0, 10.0, 500.0, n])
    expected_c = C_END[None, :] * n**gamma / k[:, None] ** gamma
    expected_a = R_END * C_END[None, :] ** 2 * (a_big + n) ** alpha / (a_big + k[:, None]) ** alpha
    np.testing.assert_allclose(schedule.c_k(k), expected_c, rtol=1e-12)
    np.testing.assert_allclose(schedule.a_k(k), expected_a, rtol=1e-12)
    np.testing.assert_allclose(schedule.c_k(k)[-1], C_END, rtol=1e-12)
    np.testing.assert_allclose(schedule.a_k(k)[-1], R_END * C_END**2, rtol=1e-12)


def test_a_smaller_a_ratio_gives_larger_early_steps():
    """At k = 1 the gain a_1 = a_end ((A + N) / (A + 1))^alpha grows as A shrinks: the
    0.5% of #1670 steps about 5 times harder than Fishtest's 10% (at alpha 0.602)."""
    k = np.array([1.0])
    big = schedule_of(spec_of()).a_k(k)[0, 0]
    small = schedule_of(spec_of(a_ratio=0.005)).a_k(k)[0, 0]
    assert small / big == pytest.approx(((50 + 10_000) / 51 / (11_000 / 1001)) ** 0.602)
    assert small / big > 4


def test_the_search_multipliers_apply_on_top_of_the_schedule():
    schedule = schedule_of(spec_of(a_ratio=0.03, gamma=0.2), c_scale=2.0)
    np.testing.assert_allclose(schedule.c_k(np.array([10_000.0]))[0], 2 * C_END, rtol=1e-12)
    assert schedule.A == 300


def test_autoselect_keeps_its_own_constant_gains():
    default = plan_config(spec_of(), 20_000).optimizer(AUTOSELECT)
    changed = plan_config(spec_of(a_ratio=0.005, alpha=1.0, gamma=0.3), 20_000)
    assert changed.optimizer(AUTOSELECT) == default
    hyper = changed.optimizer(SPSA).hyper
    assert (hyper.A_ratio, hyper.alpha, hyper.gamma) == (0.005, 1.0, 0.3)


def test_the_defaults_are_the_plan_before_the_flags():
    """The default spec's configuration is the one the planner built before the flags
    (its spsa arm was ``{"A_ratio": 0.1}``), to the byte of the resolved JSON."""
    spec = spec_of()
    config = plan_config(spec, 20_000)
    raw = yaml.safe_load(config.to_json())
    raw["optimizers"][SPSA] = {"A_ratio": 0.1}
    before = resolve(raw)
    assert config.to_json() == before.to_json()
    assert (plan.DEFAULT_A_RATIO, plan.DEFAULT_ALPHA, plan.DEFAULT_GAMMA) == (0.1, 0.602, 0.101)


def test_the_bounds_are_the_spsa_kinds():
    fields = {f.name: f for f in dataclasses.fields(SpsaHyper)}
    for name, bounds, default in (
        ("alpha", plan.ALPHA_BOUNDS, plan.DEFAULT_ALPHA),
        ("gamma", plan.GAMMA_BOUNDS, plan.DEFAULT_GAMMA),
    ):
        meta = fields[name].metadata
        assert bounds == (meta["minimum"], meta["maximum"]) and fields[name].default == default
    assert plan.A_RATIO_BOUNDS[0] == fields["A_ratio"].metadata["minimum"]


def test_the_replay_uses_the_given_gains_seed_by_seed():
    """A plan with A 3%, alpha 0.5, gamma 0.2 equals, seed by seed, ``simulate`` on the
    same scenario with those hyperparameters written by hand, and differs from the
    default plan."""
    seeds = 6
    spec = spec_of(a_ratio=0.03, alpha=0.5, gamma=0.2, seeds=seeds)
    ds = run_plan(spec)
    default = run_plan(spec_of(seeds=seeds))
    raw = {
        "games": 20_000,
        "noise": "STC",
        "seeds": {"first": 0, "count": seeds},
        "batch_modes": {"sync": yaml.safe_load(PACKAGED_CONFIG.read_text())["batch_modes"]["sync"]},
        "scenarios": {
            "tune": {
                "fishtest_params": BLOCK,
                "rounding": "stochastic",
                "truth": spec.prior.to_dict(),
            }
        },
        "optimizers": {"spsa": {"A_ratio": 0.03, "alpha": 0.5, "gamma": 0.2}},
    }
    run = simulate(
        resolve(raw), optimizer="spsa", batch_mode="sync", scenario="tune", seeds=range(seeds)
    )
    simulated = (run["elo_loss"].isel(pairs=0) - run["elo_loss"].isel(pairs=-1)).values
    gains = final_gain(ds, str(ds.attrs["given_run"]))
    np.testing.assert_allclose(gains, simulated, rtol=1e-9, atol=1e-12)
    assert not np.allclose(gains, final_gain(default, str(default.attrs["given_run"])))
    assert (ds.attrs["spsa_A_ratio"], ds.attrs["spsa_alpha"], ds.attrs["spsa_gamma"]) == (
        0.03,
        0.5,
        0.2,
    )
    text = " ".join(header(ds))
    assert "A = 0.03 N = 300 at the given games, α 0.5, γ 0.2" in text
    assert "A = 0.1 N, α 0.602, γ 0.101" in " ".join(header(default))


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--a-ratio", "-0.1"),
        ("--a-ratio", "1.5"),
        ("--a-ratio", "nan"),
        ("--alpha", "2.5"),
        ("--alpha", "-1"),
        ("--gamma", "1.01"),
        ("--gamma", "inf"),
        ("--gamma", "x"),
    ],
)
def test_a_value_outside_the_bounds_is_refused_naming_the_flag(tmp_path, capsys, flag, value):
    params = tmp_path / "block.txt"
    params.write_text(BLOCK)
    out = tmp_path / "plan"
    with pytest.raises(SystemExit) as exit_:  # argparse refuses the value
        main(["plan", str(params), "--output", str(out), f"{flag}={value}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert flag in err and value in err and err.count("\n") == 1, err
    assert not out.exists()


@pytest.mark.parametrize(
    ("field", "value", "flag"),
    [
        ("a_ratio", -0.01, "--a-ratio"),
        ("alpha", 2.01, "--alpha"),
        ("gamma", float("nan"), "--gamma"),
    ],
)
def test_the_spec_refuses_out_of_bounds_values(field, value, flag):
    with pytest.raises(ConfigError, match=f"^{flag} = "):
        spec_of(**{field: value})


def test_gains_that_overflow_are_refused():
    """A block the parser takes at A = 0.1 N overflows a = r_end c_end^2 (A + N)^alpha
    at A = N and alpha 2."""
    block = "p,0,-1e150,1e150,5e147,1\n"
    spec_of(block_text=block, games=3_200_000, alpha=2.0)
    with pytest.raises(ConfigError, match="^--a-ratio 1, --alpha 2, --gamma 0.101: .* overflow"):
        spec_of(block_text=block, games=3_200_000, alpha=2.0, a_ratio=1.0)
