"""The planner for OpenBench users (``spsa-bench plan --framework openbench``, issue 31
item 2): what its runs replay (OpenBench's SPSA kind, its dispatch and coupled rounding
with the c floor), its budgets and its refusals."""

import io
import sys

import numpy as np
import pytest

from spsa_bench.cli.main import main
from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.config.openbench_block import parse_openbench_block
from spsa_bench.config.param_block import BlockError
from spsa_bench.engine.simulate import simulate
from spsa_bench.plan.run import plan_config, run_plan
from spsa_bench.plan.spec import OPENBENCH, PlanSpec, budgets
from spsa_bench.plan.summary import final_gain, parameter_table, plan_markdown
from spsa_bench.results.cf import open_labelled

#: Every parameter an int, so a benchmark configuration can hold the same scenario.
INT_BLOCK = """\
RfpMargin, int, 76, 30, 150, 6, 0.002
RfpDepth, int, 8, 4, 12, 0.25, 0.002
NmpBase, int, 3, 2, 6, 0.5, 0.002
FutilityMargin, int, 110, 40, 200, 8, 0.002
"""
MIXED_BLOCK = """\
LmrBase, float, 0.77, 0.25, 1.50, 0.06, 0.002
RfpDepth, int, 8, 4, 12, 0.25, 0.002
"""
FISHTEST_BLOCK = "futilityMult,118,0,236,11.8,0.0020\nnullMoveDepthDiv,13,0,26,1.3,0.0020\n"
SMALL_SEARCH = {"c_scales": (1.0,), "r_scales": (1.0,), "games_scales": (1.0,)}


def ob_spec(**changes) -> PlanSpec:
    values = {
        "block_text": INT_BLOCK,
        "games": 4000,
        "seeds": 12,
        "framework": "openbench",
        "machines": 4,
        "concurrency": 4,
        **SMALL_SEARCH,
        **changes,
    }
    return PlanSpec(**values)


def given_gains(ds) -> np.ndarray:
    return final_gain(ds, str(ds.attrs["given_run"]))


def equivalent_config(spec: PlanSpec, rounding: str = "coupled", integer: bool = True) -> dict:
    """The plan's scenario, arm and dispatch written by hand as a benchmark
    configuration: an OpenBench block as its numbers, OpenBench's kind, batch:
    openbench."""
    block = parse_openbench_block(spec.block_text)
    fishtest_text = "".join(
        f"{n},{s:g},{lo:g},{hi:g},{c:g},{r:g}\n"
        for n, s, lo, hi, c, r in zip(
            block.names, block.start, block.min, block.max, block.c_end, block.r_end, strict=True
        )
    )
    return {
        "games": spec.games,
        "noise": "STC",
        "seeds": {"first": 0, "count": spec.seeds},
        "batch_modes": {
            "ob": {
                "workers": spec.machines,
                "batch": "openbench",
                "pairs_per": spec.pairs_per,
                "distribution": spec.distribution,
                "reporting": spec.reporting,
                "concurrency": {"min": spec.concurrency, "max": spec.concurrency},
                "speed": {"min": 0.5, "max": 2.0},
                "game_duration": {"median": 23.5, "p95": 33.6},  # STC (model/time_control.py)
            }
        },
        "scenarios": {
            "tune": {
                "fishtest_params": fishtest_text,
                "rounding": rounding,
                "integer": integer,
                "truth": {
                    "offset": {"distribution": "normal", "scale": 2},
                    "elo_per_c_end": {"min": 0.02, "max": 0.2},
                    "inactive_fraction": 0.25,
                },
            }
        },
        "baseline": "spsa-openbench",
        "optimizers": {"spsa-openbench": {"pairs_per": spec.pairs_per}},
    }


def simulated_gains(config: dict, seeds: int) -> np.ndarray:
    run = simulate(
        resolve(config),
        optimizer="spsa-openbench",
        batch_mode="ob",
        scenario="tune",
        seeds=range(seeds),
    )
    return (run["elo_loss"].isel(pairs=0) - run["elo_loss"].isel(pairs=-1)).values


@pytest.mark.parametrize(
    "distribution, reporting", [("single", "bulk"), ("multiple", "bulk"), ("single", "batched")]
)
def test_the_plan_replays_openbench_kind_dispatch_and_rounding(distribution, reporting):
    """The plan's given run equals, seed by seed, ``simulate`` of OpenBench's kind on
    ``batch: openbench`` with coupled rounding, and not the same with the worker's
    independent rounding: what was replayed is OpenBench's tune."""
    spec = ob_spec(distribution=distribution, reporting=reporting)
    ds = run_plan(spec)
    assert set(ds["arm"].values) == {OPENBENCH} and ds.attrs["autoselect_run"] == "none"
    config = plan_config(spec, spec.games)
    mode = config.resolved["batch_modes"][spec.batch_mode]
    assert (mode["batch"], mode["distribution"], mode["reporting"]) == (
        "openbench",
        distribution,
        reporting,
    )
    assert config.scenario("plan")["rounding"] == "coupled"
    simulated = simulated_gains(equivalent_config(spec), spec.seeds)
    np.testing.assert_allclose(given_gains(ds), simulated, rtol=1e-9, atol=1e-12)
    independent = simulated_gains(equivalent_config(spec, rounding="stochastic"), spec.seeds)
    assert np.abs(given_gains(ds) - independent).max() > 1e-6


def test_coupled_rounding_with_the_floor_never_plays_equal_integers():
    """RfpDepth's c_end 0.25 is below 1/2: Fishtest's independent rounding plays it with
    equal integers in a large share of batches, OpenBench's coupled rounding with its
    c >= 0.5 floor never (measured by the replay, and the closed form agrees)."""
    ob = run_plan(ob_spec(block_text="RfpDepth, int, 8, 4, 12, 0.25, 0.002\n"))
    given = str(ob.attrs["given_run"])
    assert np.all(ob["probe_equal_fraction"].sel(run=given).values == 0.0)
    assert np.all(ob["predicted_equal_share"].sel(run=given).values == 0.0)
    fishtest = run_plan(
        PlanSpec(block_text="RfpDepth,8,4,12,0.25,0.002\n", games=4000, seeds=12, **SMALL_SEARCH)
    )
    assert fishtest["probe_equal_fraction"].sel(run=str(fishtest.attrs["given_run"])).mean() > 0.2


def test_float_parameters_are_neither_rounded_nor_floored():
    """The block's types reach the replay: a block of float parameters plays as the
    scenario with ``integer: false`` (no rounding, no c floor), seed by seed, and not as
    the same numbers played as ints; in a mixed block only the int one has a rounding
    share."""
    floats = INT_BLOCK.replace(" int,", " float,")
    spec = ob_spec(block_text=floats)
    ds = run_plan(spec)
    as_floats = simulated_gains(equivalent_config(spec, integer=False), spec.seeds)
    np.testing.assert_allclose(given_gains(ds), as_floats, rtol=1e-9, atol=1e-12)
    as_ints = simulated_gains(equivalent_config(spec, integer=True), spec.seeds)
    assert np.abs(given_gains(ds) - as_ints).max() > 1e-6
    mixed = run_plan(ob_spec(block_text=MIXED_BLOCK))
    assert list(mixed["integer"].values) == [0, 1]
    predicted = mixed["predicted_equal_share"].sel(run=str(mixed.attrs["given_run"])).values
    assert np.isnan(predicted[0]) and predicted[1] == 0.0


def test_coupled_closed_form_matches_the_measured_share_at_a_bound():
    """A parameter held at its max (a negligible r_end): the probe is clipped on one
    side, so coupled rounding plays equal integers with probability 1 - c_k for c_k < 1
    (d = c_k); the measured share equals the closed-form prediction within 4 standard
    errors."""
    block = "".join(f"p{i}, int, 20, 0, 20, 0.5, 1e-12\n" for i in range(6))
    ds = run_plan(ob_spec(block_text=block, seeds=40, machines=1, concurrency=1, pairs_per=4))
    given = str(ds.attrs["given_run"])
    predicted = ds["predicted_equal_share"].sel(run=given).values
    assert np.ptp(predicted) < 1e-9 and 0.05 < predicted[0] < 0.5
    measured = ds["probe_equal_fraction"].sel(run=given).values
    se = measured.std(ddof=1) / np.sqrt(measured.size)
    assert abs(measured.mean() - predicted[0]) <= 4 * max(se, 1e-4), (measured.mean(), predicted)
    assert np.all(ds["probe_swapped_fraction"].sel(run=given).values == 0.0)


def test_budgets_are_whole_iterations():
    """games x scale rounded to whole iterations of 2 x pairs_per games: 40,012 x 0.3 =
    12,003.6 is 857.4 iterations of 14 games, kept as 857 (11,998 games)."""
    spec = ob_spec(pairs_per=7, games=40_012, games_scales=(0.3, 0.5, 1, 2))
    games, skipped = budgets(spec)
    assert not skipped and all(g % 14 == 0 for g in games)
    assert games == [11_998, 20_006, 40_012, 80_024]


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"games": 4004}, "--games = 4004: OpenBench plays whole iterations of 2 x pairs_per = 16"),
        ({"pairs_per": 0}, "--pairs-per = 0"),
        ({"distribution": "both"}, "--distribution = 'both'"),
        ({"reporting": "hourly"}, "--reporting = 'hourly'"),
        ({"distribution": "multiple", "concurrency": 1}, "--concurrency = 1: MULTIPLE"),
        (
            {"block_text": FISHTEST_BLOCK},
            "line 1 ('futilityMult,118,0,236,11.8,0.0020'): has 6 comma-separated fields, "
            "expected 7: name,type,start,min,max,c_end,r_end; the block is in Fishtest's "
            "format: give --framework fishtest",
        ),
        ({"framework": "chess.com"}, "--framework = 'chess.com'"),
    ],
)
def test_bad_openbench_settings_are_refused_naming_the_option(changes, message):
    with pytest.raises((ConfigError, BlockError)) as error:
        ob_spec(**changes)
    assert message in str(error.value)


def test_an_openbench_block_without_the_framework_names_the_flag():
    with pytest.raises(BlockError) as error:
        PlanSpec(block_text=INT_BLOCK, games=4000, seeds=4)
    assert "line 1 ('RfpMargin, int, 76, 30, 150, 6, 0.002'): has 7" in str(error.value)
    assert "give --framework openbench" in str(error.value)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--framework", "openbench", "--batch-mode", "sync"],
            "--batch-mode = 'sync': Fishtest only",
        ),
        (["--pairs-per", "4"], "--pairs-per = 4: OpenBench only; give --framework openbench"),
        (["--distribution", "multiple"], "--distribution = multiple: OpenBench only"),
        (["--machines", "3"], "--machines = 3: OpenBench only"),
        (["--reporting", "batched"], "--reporting = batched: OpenBench only"),
        (["--framework", "openbench", "--block", "fishtest"], "give --framework fishtest"),
        (["--block", "openbench"], "give --framework openbench"),
    ],
)
def test_the_command_refuses_the_other_frameworks_options(tmp_path, capsys, argv, message):
    """One line naming the flag (or the block's line and field), exit 2, nothing written."""
    kind = "fishtest"
    if "--block" in argv:
        kind = argv[argv.index("--block") + 1]
        argv = argv[: argv.index("--block")]
    params = tmp_path / "block.txt"
    params.write_text(INT_BLOCK if kind == "openbench" else FISHTEST_BLOCK)
    out = tmp_path / "plan"
    assert main(["plan", str(params), "--output", str(out), "--seeds", "4", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == [params]  # nothing written


def test_the_command_writes_an_openbench_plan(tmp_path, capsys, monkeypatch):
    """The three files for a mixed block from standard input: plan.md names OpenBench
    and its hyperparameters, has no Autoselect, gives the block to paste in OpenBench's
    format, and is made again from plan.nc."""
    out = tmp_path / "plan"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(MIXED_BLOCK.encode())))
    argv = [
        "plan", "-", "--framework", "openbench", "--games", "4000", "--seeds", "8",
        "--pairs-per", "4", "--machines", "3", "--concurrency", "8", "--reporting", "batched",
        "--distribution", "multiple", "--c-scales", "1,2", "--r-scales", "1",
        "--games-scales", "1", "--output", str(out), "--quiet",
    ]  # fmt: skip
    assert main(argv) == 0
    text = (out / "plan.md").read_text()
    assert capsys.readouterr().out == text
    for expected in (
        "# spsa-bench plan (OpenBench)",
        "**OpenBench's SPSA** (A-Ratio 0.1 (A = 50 of 500 iterations), α 0.602, γ 0.101, "
        "Pairs-Per 4",
        "distribution **MULTIPLE** (one perturbation per runner: 4 runners of 4 pairs) on 3 "
        "machines of 8 concurrent games, reporting **BATCHED** (what has finished every 30 s",
        "4,000 games (500 iterations)",
        "OpenBench has no Autoselect",
    ):
        assert expected in text, expected
    assert "*Autoselect*" not in text and "Tick Autoselect" not in text
    pasted = text.split("The block to paste for it,")[1].split("```")[1].strip("\n")
    recommended = str(open_labelled(out / "plan.nc").attrs["recommended_run"])
    c_scale = 2.0 if recommended.startswith("c2") else 1.0
    block = parse_openbench_block(pasted)
    np.testing.assert_allclose(block.c_end, np.array([0.06, 0.25]) * c_scale)
    assert block.integer.tolist() == [False, True]
    ds = open_labelled(out / "plan.nc").load()
    assert plan_markdown(ds) == text
    assert ds.attrs["framework"] == "openbench" and int(ds.attrs["openbench_pairs_per"]) == 4
    assert ds.attrs["openbench_reporting"] == "batched"
    assert parameter_table(ds)["hazard"].tolist() == [False, True]  # c_end 0.25 < the floor


def test_an_openbench_plan_estimated_above_the_cap_is_refused():
    """The default search at 200,000 games in MULTIPLE with one pair per runner: every
    job is one pair, the estimate (docs/plan.md) is hours, refused before any run
    naming the flags; the same plan in SINGLE (jobs of 4 pairs) is under the cap."""
    from spsa_bench.config.limits import LimitError
    from spsa_bench.plan.spec import check_plan_size, estimated_seconds

    search = {"c_scales": (0.5, 1, 2), "r_scales": (0.5, 1, 2), "games_scales": (0.5, 1, 2, 4)}
    multiple = ob_spec(games=200_000, pairs_per=1, distribution="multiple", seeds=200, **search)
    with pytest.raises(LimitError) as error:
        check_plan_size(multiple)
    assert "--c-scales, --r-scales, --games-scales, --seeds" in str(error.value)
    single = ob_spec(games=200_000, pairs_per=1, seeds=200, **search)
    assert estimated_seconds(single) < estimated_seconds(multiple) / 3  # jobs of 4 pairs, not 1
    check_plan_size(single)
    batched = ob_spec(games=200_000, pairs_per=1, seeds=200, reporting="batched", **search)
    assert estimated_seconds(batched) > estimated_seconds(single)  # its 30 s reports cost
