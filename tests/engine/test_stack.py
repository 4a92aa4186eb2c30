"""A sweep's arms replayed together (engine.stack, engine.simulate.simulate_runs_held_out):
every arm's run and held-out losses are bit-identical to its own replay's, whichever
other arms share the replay; arms that cannot share one are replayed alone."""

import dataclasses

import numpy as np
import pytest
import yaml
from conftest import DEFAULT_CONFIG, small_config_dict

from spsa_bench.config import limits
from spsa_bench.config.limits import MAX_STACKED_ROW_PAIRS, arms_per_replay
from spsa_bench.config.loader import resolve
from spsa_bench.engine import simulate as engine_simulate
from spsa_bench.engine.replay import NonFiniteStateError
from spsa_bench.engine.simulate import held_out, simulate_runs_held_out
from spsa_bench.engine.stack import stack, tile_schedule
from spsa_bench.workflow import sweeps

SEEDS, EXTRA = range(0, 4), [1000, 1001, 1002]
MODES = ("sync", "async-fixed", "async-variable")
#: The default grid's sweeps (the kinds a sweep job stacks), as config/config.yaml has them.
SWEEPS = {
    name: arm
    for name, arm in yaml.safe_load(DEFAULT_CONFIG.read_text())["optimizers"].items()
    if any(isinstance(value, list) for value in (arm or {}).values())
}


@pytest.fixture(scope="module")
def config():
    raw = small_config_dict(num_pairs=1200)
    raw["optimizers"] = {"spsa": raw["optimizers"]["spsa"]} | SWEEPS
    raw["optimizers"]["spsa-counted"] = {"kind": "spsa", "iteration_counter": "dispatch"}
    raw["optimizers"]["spsa-wide"] = {"kind": "spsa", "c_scale": 2.0}
    return resolve(raw)


def arms_of(config, sweep: str) -> list[str]:
    return [name for name, _ in sweeps(config)[sweep]]


def assert_same_runs(runs, alone, arms, mode, scenario) -> None:
    for arm in arms:
        (run, loss), (expected, expected_loss) = runs[arm], alone[arm]
        assert set(run.variables) == set(expected.variables), arm
        for name, variable in expected.variables.items():
            np.testing.assert_array_equal(
                run.variables[name].values, variable.values, err_msg=f"{arm}: {name}"
            )
        np.testing.assert_array_equal(loss, expected_loss, err_msg=arm)
        assert (
            run.attrs["title"]
            == expected.attrs["title"]
            == f"spsa-bench run: {arm} / {mode} / {scenario}"
        )


def replays(config, arms, mode, scenario, stacked=True, extra=EXTRA, report=None):
    schedules = held_out(config, config.batch_mode(mode), SEEDS, extra)
    return simulate_runs_held_out(
        {arm: config for arm in arms},
        batch_mode=mode,
        scenario=scenario,
        schedules=schedules,
        stacked=stacked,
        report=report,
    )


@pytest.fixture
def replayed_rows(monkeypatch):
    """The rows of every replay the engine runs from here on (seeds x stacked copies),
    in order: one entry per replay."""
    calls = []
    real = engine_simulate.replay
    monkeypatch.setattr(
        engine_simulate,
        "replay",
        lambda *a, **k: calls.append(a[1].num_seeds * k.get("copies", 1)) or real(*a, **k),
    )
    return calls


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("sweep", sorted(SWEEPS))
def test_a_stacked_sweep_equals_its_arms_replayed_alone(config, sweep, mode, replayed_rows):
    """Every kind of the default grid, every batch mode, a tune scenario (per-seed
    bowls, stochastic rounding) and held-out rows: each arm's run variables and
    held-out losses are those of its separate replay, bit for bit."""
    arms = arms_of(config, sweep)
    assert len(arms) >= 3  # every default sweep brackets its hand-set value
    alone = replays(config, arms, mode, "tune-16-stc", stacked=False)
    calls = replayed_rows
    calls.clear()
    stacked = replays(config, arms, mode, "tune-16-stc")
    # one replay of every arm's rows (job seeds and held-out seeds), not one per arm
    assert calls == [len(arms) * (len(SEEDS) + len(EXTRA))]
    assert_same_runs(stacked, alone, arms, mode, "tune-16-stc")
    # the arms differ: a stack that mixed up blocks would not pass the comparison above
    finals = {arm: stacked[arm][0].variables["elo_loss"].values[:, -1] for arm in arms}
    assert len({final.tobytes() for final in finals.values()}) == len(arms)


@pytest.mark.parametrize("mode", MODES)
def test_groups_scenario_without_held_out_seeds(config, mode):
    """One bowl for every seed, no held-out rows (rule simulate's shape of a job)."""
    arms = arms_of(config, "adam-block")
    alone = replays(config, arms, mode, "mixed", stacked=False, extra=[])
    assert_same_runs(replays(config, arms, mode, "mixed", extra=[]), alone, arms, mode, "mixed")


@pytest.mark.parametrize("mode", ["sync", "async-variable"])
def test_an_arms_rows_do_not_depend_on_the_other_arms_stacked(config, mode):
    """The same arm stacked with different companions, in different places."""
    a, b, c, d, e = arms_of(config, "sf-adam-block")
    target = replays(config, [a, c, e], mode, "mixed")[c]
    for arms in ([c, a], [e, d, b, a, c], [b, c]):
        assert_same_runs(replays(config, arms, mode, "mixed"), {c: target}, [c], mode, "mixed")


def test_arms_that_cannot_share_a_replay_are_replayed_alone(config, replayed_rows):
    """A different iteration counter or probe c: no stack, each arm alone (same runs)."""
    calls = replayed_rows
    why = {"spsa-counted": "run settings differ", "spsa-wide": "probes differ"}
    for other in ("spsa-counted", "spsa-wide"):
        calls.clear()
        lines = []
        runs = replays(config, ["spsa", other], "async-variable", "mixed", report=lines.append)
        assert calls == [len(SEEDS) + len(EXTRA)] * 2, other
        assert len(lines) == 1 and lines[0].startswith(f"alone: spsa, {other} (")
        assert why[other] in lines[0]
        alone = replays(config, ["spsa", other], "async-variable", "mixed", stacked=False)
        assert_same_runs(runs, alone, ["spsa", other], "async-variable", "mixed")


def test_stack_refuses_different_probes(config):
    view = engine_simulate.make_problem(config, "mixed").view
    built = [
        engine_simulate.build_arm(config, config.optimizer(name), view)[0]
        for name in ("spsa", "spsa-wide")
    ]
    iterations = np.arange(1, 50)
    assert stack(built, iterations) is None
    assert stack(built[:1] * 2, iterations) is not None


def test_a_non_finite_arm_fails_alone_naming_itself(config, monkeypatch):
    """A stacked replay stopped by a non-finite state is replayed arm by arm, so the
    error names the arm that produced it, as a separate replay's does."""
    arms = arms_of(config, "adam")[:3]
    real_build = engine_simulate.build_arm

    def build_arm(config, arm, view):
        built, counter = real_build(config, arm, view)
        if arm.name != arms[1]:
            return built, counter

        def update(state, report):
            new = built.update(state, report)
            return new._replace(theta=new.theta * np.nan)

        return dataclasses.replace(built, update=update), counter

    monkeypatch.setattr(engine_simulate, "build_arm", build_arm)
    with pytest.raises(NonFiniteStateError, match=f"optimizer '{arms[1]}' produced"):
        replays(config, arms, "async-fixed", "mixed")


def test_tile_schedule_repeats_the_rows_and_keeps_broadcast_ones(config):
    sync = engine_simulate.make_schedule(config, config.batch_mode("sync"), SEEDS)
    tiled = tile_schedule(sync, 3)
    assert tiled.seeds.tolist() == list(SEEDS) * 3
    assert tiled.job_pairs.strides[0] == 0 and tiled.job_pairs.shape[0] == 12
    fixed = engine_simulate.make_schedule(config, config.batch_mode("async-fixed"), SEEDS)
    tiled = tile_schedule(fixed, 2)
    np.testing.assert_array_equal(tiled.job_worker[4:], fixed.job_worker)
    np.testing.assert_array_equal(tiled.job_worker[:4], fixed.job_worker)


def test_arms_per_replay_keeps_the_rows_within_the_cap():
    # the default grid's sweep jobs: 100 + 20 seeds x 30,000 pairs, up to 7 arms at once
    assert arms_per_replay(7, 120, 30_000) == 7
    assert arms_per_replay(7, 1020, 30_000) == 1  # 1000-seed chunks: each arm alone
    per_arm = 120 * 30_000
    assert arms_per_replay(20, 120, 30_000) == MAX_STACKED_ROW_PAIRS // per_arm
    assert arms_per_replay(20, 120, 30_000) * per_arm <= MAX_STACKED_ROW_PAIRS
    assert arms_per_replay(3, 10**9, 30_000) == 1


def test_arms_beyond_the_cap_are_stacked_in_groups(config, monkeypatch, replayed_rows):
    """A cap of two arms' rows: five arms replay as 2 + 2 + 1, each arm as alone."""
    arms = arms_of(config, "sf-sgd-block")
    rows = len(SEEDS) + len(EXTRA)
    monkeypatch.setattr(limits, "MAX_STACKED_ROW_PAIRS", 2 * rows * config.num_pairs)
    calls = replayed_rows
    lines = []
    runs = replays(config, arms, "async-fixed", "mixed", report=lines.append)
    assert calls == [2 * rows, 2 * rows, rows] and list(runs) == arms
    assert lines == [
        f"stacked: {arms[0]}, {arms[1]} (one replay of 2 x {rows} rows)",
        f"stacked: {arms[2]}, {arms[3]} (one replay of 2 x {rows} rows)",
        f"alone: {arms[4]} (a group of one: at most 2 per replay)",
    ]
    alone = replays(config, arms, "async-fixed", "mixed", stacked=False)
    assert_same_runs(runs, alone, arms, "async-fixed", "mixed")


@pytest.mark.parametrize("mode", MODES)
def test_a_one_seed_job_stacked_equals_its_arms_alone(config, mode):
    """One seed and no held-out rows: the stacked replay takes the one-seed replay's
    paths (its decisions are taken on one block of rows, not on the stack)."""
    arms = arms_of(config, "spsa-block")
    schedules = held_out(config, config.batch_mode(mode), [7], [])
    runs = {
        stacked: simulate_runs_held_out(
            {arm: config for arm in arms},
            batch_mode=mode,
            scenario="tune-16-stc",
            schedules=schedules,
            stacked=stacked,
        )
        for stacked in (True, False)
    }
    assert_same_runs(runs[True], runs[False], arms, mode, "tune-16-stc")
