"""The tune planner (``spsa-bench plan``, issue 17): its runs, statistics and command."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spsa_bench.analysis import stats
from spsa_bench.cli.main import main
from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.engine.simulate import simulate
from spsa_bench.model.calibrated import calibrated_statement, calibrated_truth
from spsa_bench.model.instances import TruthPrior
from spsa_bench.plan.run import run_plan
from spsa_bench.plan.spec import ZERO_OFFSET, PlanSpec, budgets, given_setting, recommend
from spsa_bench.plan.summary import final_gain, outcome, parameter_table, plan_markdown
from spsa_bench.results.cf import open_labelled

BLOCK = """\
futilityMult,118,0,236,11.8,0.0020
nullMoveDepthDiv,13,0,26,1.3,0.0020
lmrBase,1024,0,2048,102.4,0.0020
seeQuietMargin,-64,-128,0,6.4,0.0020
aspirationDelta,10,0,20,1,0.0020
historyBonusMult,300,0,600,30,0.0020
"""
SMALL_SEARCH = {"c_scales": (1.0,), "r_scales": (1.0,), "games_scales": (1.0,)}
BIN = Path(sys.executable).parent


def small_spec(**changes) -> PlanSpec:
    values = {"block_text": BLOCK, "games": 4000, "seeds": 12, **SMALL_SEARCH, **changes}
    return PlanSpec(**values)


def given_gains(ds) -> np.ndarray:
    return final_gain(ds, str(ds.attrs["given_run"]))


def test_every_r_end_zero_gives_exactly_zero_gain():
    block = BLOCK.replace("0.0020", "0")
    ds = run_plan(small_spec(block_text=block, c_scales=(0.5, 1.0, 2.0), r_scales=(1.0, 2.0)))
    for run in ds["run"].values[ds["arm"].values == "spsa"]:
        gain = ds["gain"].sel(run=run).values
        assert np.all(gain == 0.0), run  # theta never moves: exactly the start's Elo
    o = outcome(given_gains(ds))
    assert o["mean"] == 0.0 and o["p_gain"][0] == 0.0
    assert "**0.00 Elo**" in plan_markdown(ds)


def test_optimum_at_the_start_never_gains_and_loses_the_noise_floor():
    """With every optimum at the start the tune cannot gain, and its mean loss is the
    noise floor the plan measures on its zero-offset instances."""
    ds = run_plan(small_spec(prior=TruthPrior(offset_scale=0.0)))
    gains = given_gains(ds)
    assert outcome(gains)["p_gain"][0] == 0.0 and np.all(gains <= 0.0)
    floor = -final_gain(ds, f"{ds.attrs['given_run']} {ZERO_OFFSET}")
    assert floor.mean() > 0  # noise alone moves a tuned engine off its optimum
    assert -gains.mean() == pytest.approx(floor.mean(), rel=1e-12)
    assert np.all(ds["start_elo_gap"].values == 0.0)


def equivalent_config(games: int, seeds: int, batch_mode: str) -> dict:
    """The scenario of a plan, written by hand as a benchmark configuration."""
    import yaml

    from spsa_bench.config.loader import PACKAGED_CONFIG

    default = yaml.safe_load(PACKAGED_CONFIG.read_text())
    return {
        "games": games,
        "noise": "STC",
        "seeds": {"first": 0, "count": seeds},
        "batch_modes": {batch_mode: default["batch_modes"][batch_mode]},
        "scenarios": {
            "tune": {
                "fishtest_params": BLOCK,
                "rounding": "stochastic",
                "truth": {
                    "offset": {"distribution": "normal", "scale": 2},
                    "elo_per_c_end": {"min": 0.02, "max": 0.2},
                    "inactive_fraction": 0.25,
                },
            }
        },
        "optimizers": {"spsa": {"A_ratio": 0.1}},
    }


@pytest.mark.parametrize("batch_mode", ["sync", "async-fixed"])
def test_expected_gain_equals_simulate_on_the_equivalent_scenario(batch_mode):
    seeds = 24
    ds = run_plan(small_spec(seeds=seeds, batch_mode=batch_mode))
    config = resolve(equivalent_config(4000, seeds, batch_mode))
    run = simulate(
        config, optimizer="spsa", batch_mode=batch_mode, scenario="tune", seeds=range(seeds)
    )
    simulated = (run["elo_loss"].isel(pairs=0) - run["elo_loss"].isel(pairs=-1)).values
    standard_error = simulated.std(ddof=1) / np.sqrt(seeds)
    assert abs(given_gains(ds).mean() - simulated.mean()) <= standard_error
    # the same seeds play the same instances and random numbers: equal seed by seed
    np.testing.assert_allclose(given_gains(ds), simulated, rtol=1e-9, atol=1e-12)


def test_rounding_hazard_shares_match_the_closed_form_for_a_fixed_parameter():
    """r_end 0 holds every parameter at its start 10.3; with c_end 0.15 (c_k from 0.15
    to 0.3) the engines play equal and swapped integers, and the shares the replay
    measures equal the plan's closed-form prediction within 4 standard errors."""
    block = "".join(f"p{i},10.3,0,20,0.15,0\n" for i in range(8))
    ds = run_plan(small_spec(block_text=block, seeds=40))
    given = str(ds.attrs["given_run"])
    assert np.all(ds["theta"].sel(run=given).values == 10.3)
    for kind in ("equal", "swapped"):
        predicted = ds[f"predicted_{kind}_share"].sel(run=given).values
        assert np.ptp(predicted) < 1e-12 and 0.01 < predicted[0] < 0.99, kind
        measured = ds[f"probe_{kind}_fraction"].sel(run=given).values
        jobs = int(ds["games"].sel(run=given)) // 2 // 36 + 1
        n = measured.size * jobs * predicted.size
        se = np.sqrt(predicted[0] * (1 - predicted[0]) / n)
        assert abs(measured.mean() - predicted[0]) <= 4 * se, (kind, measured.mean(), predicted[0])
    table = parameter_table(ds)
    assert table["hazard"].all() and table["barely_moves"].all()


def test_recommend_picks_the_cheapest_setting_within_the_margin():
    games = [30000, 60000, 60000, 120000]
    gains = np.array([[1.0, 1.2], [2.0, 2.2], [2.4, 2.6], [2.7, 2.9]])  # means 1.1 2.1 2.5 2.8
    assert recommend(games, gains, 0.5) == 2  # cheapest within 0.5: 60,000, the better one
    assert recommend(games, gains, 0.0) == 3
    assert recommend(games, gains, 5.0) == 0


def test_recommend_refuses_a_cheaper_setting_riskier_than_the_given_one():
    """Within the margin, a cheaper candidate whose P(gain > 0) is below the floor (the
    given setting's lower Wilson bound) is passed over; with no candidate above the
    floor, the margin alone decides."""
    games = [30000, 60000]
    gains = np.array([[3.0, 3.0, -0.5, -0.5], [1.0, 1.0, 1.0, 1.0]])  # means 1.25, 1.0
    assert recommend(games, gains, 0.5) == 0  # no risk criterion: the cheaper one
    assert recommend(games, gains, 0.5, p_floor=0.8) == 1  # P(gain > 0): 0.5 < 0.8 <= 1
    assert recommend(games, gains, 0.5, p_floor=0.4) == 0
    assert recommend(games, gains, 0.5, p_floor=1.1) == 0  # nothing passes: margin alone
    assert recommend(games, gains, 0.1, p_floor=0.8) == 0  # the safe one is out of margin


def test_budgets_follow_fishtest_limits():
    assert budgets(small_spec(games=60000, games_scales=(0.5, 1, 4)))[0] == [30000, 60000, 240000]
    games, skipped = budgets(small_spec(games=1000, games_scales=(0.5, 1, 2)))
    assert games == [1000, 2000] and "x0.5" in skipped[0]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"batch_mode": "nope"}, "--batch-mode = 'nope': not a batch mode of the packaged"),
        ({"time_control": "blitz"}, "--time-control = 'blitz'"),
        ({"c_scales": (0.0,)}, "--c-scales: 0 is not a finite multiplier"),
        ({"games": 1500}, "multiples of 1,000"),
    ],
)
def test_bad_plan_settings_are_refused_naming_the_option(changes, message):
    from spsa_bench.config.param_block import BlockError
    from spsa_bench.plan.run import plan_config

    with pytest.raises((ConfigError, BlockError), match=message.replace("(", r"\(")):
        spec = small_spec(**changes)
        plan_config(spec, spec.games)


@pytest.mark.parametrize(
    "line, message",
    [
        ("lmrBase,1024,0,2048,0,0.0020", "line 3 (lmrBase): field c_end = 0 must be > 0"),
        ("lmrBase,1024,0,2048,102.4", "line 3 ('lmrBase,1024,0,2048,102.4'): has 5"),
        (
            "lmrBase,10x24,0,2048,102.4,0.002",
            "line 3 ('lmrBase,10x24,0,2048,102.4,0.002'): "
            "field start = '10x24' is not a finite number",
        ),
        ("lmrBase,1024,0,2048,102.4,-1", "line 3 (lmrBase): field r_end = -1 must be >= 0"),
    ],
)
def test_a_malformed_block_is_refused_naming_line_and_field(tmp_path, capsys, line, message):
    lines = BLOCK.splitlines()
    lines[2] = line
    params = tmp_path / "block.txt"
    params.write_text("\n".join(lines) + "\n")
    out = tmp_path / "plan"
    assert main(["plan", str(params), "--output", str(out), "--seeds", "4"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()  # nothing written
    assert list(tmp_path.iterdir()) == [params]


def test_the_command_writes_the_three_files_with_every_section(tmp_path, capsys, monkeypatch):
    """A small block from standard input, a reduced search: plan.md (also printed),
    a CF-1.11 plan.nc the Markdown can be made again from, and plan.png."""
    import io

    out = tmp_path / "plan"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(BLOCK.encode())))
    argv = [
        "plan",
        "-",
        "--games",
        "4000",
        "--seeds",
        "8",
        "--output",
        str(out),
        "--c-scales",
        "1,2",
        "--r-scales",
        "1",
        "--games-scales",
        "1,2",
        "--quiet",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    text = (out / "plan.md").read_text()
    assert printed == text
    for heading in (
        "The prior over the unknown truth",
        "1. The outcome",
        "2. Per parameter",
        "3. The noise floor",
        "4. Better settings",
        "**Recommended:",
        "*Autoselect*",
        "P(weaker by more than 1 Elo)",
        "rounding hazard",
    ):
        assert heading in text, heading
    assert (out / "plan.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ds = open_labelled(out / "plan.nc").load()
    assert plan_markdown(ds) == text  # the file holds everything the text says
    # the default prior is the shipped calibrated one, and plan.md says where it comes from
    calibrated = TruthPrior.from_mapping(calibrated_truth()).to_dict()
    assert json.loads(ds.attrs["truth_prior"]) == calibrated
    # its instances are the posterior predictive over the shipped record's accepted draws
    from spsa_bench.model.calibrated import calibrated_truths

    draws = len(calibrated_truths())
    assert draws >= 10 and int(ds.attrs["truth_prior_draws"]) == draws
    assert ds.attrs["truth_prior_source"] == (
        f"calibrated: {calibrated_statement()}; the instances are its posterior predictive: "
        f"instance s drawn from accepted draw s mod {draws}, so the plan's spread includes "
        "the fit's uncertainty"
    )
    assert calibrated_statement().rstrip(".") in text
    assert f"median of the fit's {draws} accepted draws" in text
    assert ds.sizes["seed"] == 8 and set(ds["games"].values) == {4000, 8000}
    done = subprocess.run(
        [BIN / "compliance-checker", "--test=cf:1.11", "--criteria=strict", str(out / "plan.nc")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "All tests passed" in done.stdout, done.stdout


def test_settings_share_their_instances_so_differences_are_paired():
    """Every setting of the search plays the same instances; at one seed two settings
    differ only through their multipliers, so the paired interval is narrower than the
    unpaired one."""
    ds = run_plan(small_spec(c_scales=(1.0, 2.0), seeds=30))
    given, other = given_gains(ds), final_gain(ds, "c2 r1 g4000")
    paired = stats.t_interval(other - given)
    width_unpaired = 2 * 1.96 * np.sqrt(other.var(ddof=1) / 30 + given.var(ddof=1) / 30)
    assert paired[2] - paired[1] < width_unpaired
    assert given_setting(small_spec()).label == ds.attrs["given_run"] == "c1 r1 g4000"


def test_a_time_control_shift_gives_the_gain_at_every_time_control():
    """With a time-control shift the plan tunes at its own time control (the prior's
    tuned_at follows --time-control), records the final gain at each time control's
    optimum, equal to the gain at its own, and reports P(gain > 0) at the two others;
    without one it says the gain is the same everywhere."""
    prior = TruthPrior(tc_spread=1.0, tc_tuned_at="STC", elo_min=0.2, elo_max=0.2)
    ds = run_plan(small_spec(prior=prior, time_control="LTC", seeds=40))
    assert json.loads(ds.attrs["truth_prior"])["time_control_shift"]["tuned_at"] == "LTC"
    given = str(ds.attrs["given_run"])
    by_tc = ds["final_gain_at_time_control"].sel(run=given)
    np.testing.assert_allclose(
        by_tc.sel(time_control="LTC").values, given_gains(ds), rtol=0, atol=1e-9
    )
    assert np.abs(by_tc.sel(time_control="STC").values - given_gains(ds)).max() > 1e-3
    zero = f"{given} {ZERO_OFFSET}"
    assert np.isnan(ds["final_gain_at_time_control"].sel(run=zero).values).all()
    text = plan_markdown(ds)
    for tc in ("STC", "VLTC"):
        share = stats.wilson_interval(by_tc.sel(time_control=tc).values > 0, 0.95)
        assert f"| P(gain > 0) at {tc} (the optimum moved" in text
        assert (
            f"{share[0]:.1%} [{share[1]:.1%}, {share[2]:.1%}]"
            in text.split(f"at {tc} (the optimum moved")[1].split("\n")[0]
        )
    assert "at LTC (the optimum moved" not in text
    flat = plan_markdown(run_plan(small_spec()))
    assert "no `time_control_shift`: one truth at every time control" in flat


def test_prior_draws_give_each_instance_its_draws_optimum_and_say_so():
    """With the calibration's accepted draws the plan's instance s is the bowl draw
    s mod K gives at that seed (theta_peak of plan.nc), and plan.md says the instances
    come from the draws."""
    from spsa_bench.config.param_block import parse_block
    from spsa_bench.model.instances import draw_instances

    draws = (TruthPrior(offset_scale=0.5), TruthPrior(offset_scale=4.0))
    spec = small_spec(prior=TruthPrior(offset_scale=2.0), prior_draws=draws,
                      prior_source="calibrated: a test fit")  # fmt: skip
    ds = run_plan(spec)
    from spsa_bench.plan.run import plan_config

    block = parse_block(BLOCK)
    entropy = plan_config(spec, spec.games).entropy
    peaks = ds["theta_peak"].values
    for seed in range(spec.seeds):
        alone = draw_instances(draws[seed % 2], block.start, block.min, block.max,
                               block.c_end, entropy, [seed])  # fmt: skip
        np.testing.assert_array_equal(peaks[seed], alone.theta_peak[0])
    assert int(ds.attrs["truth_prior_draws"]) == 2
    assert "each instance is a bowl drawn from one of those draws" in plan_markdown(ds)
