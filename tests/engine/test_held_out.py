"""Held-out seeds replayed as extra rows of a job's replay (engine.simulate.held_out,
simulate_run_held_out): the job's run is bit-identical to a replay of its seeds
alone, and the extra rows to a replay of the held-out seeds alone."""

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench.config.loader import resolve
from spsa_bench.dispatch.schedule import PER_SEED_FIELDS
from spsa_bench.engine.simulate import (
    held_out,
    make_noise,
    make_problem,
    make_schedule,
    replay_arm,
    scenario_rounding,
    simulate_run,
    simulate_run_held_out,
    stack_schedules,
)

SEEDS, EXTRA = range(0, 4), [1000, 1001, 1002]


@pytest.fixture(scope="module")
def config():
    return resolve(small_config_dict(num_pairs=1500))


@pytest.mark.parametrize("mode", ["async-fixed", "async-variable"])
def test_stacked_schedules_are_the_schedule_of_both_seed_lists(config, mode):
    """Stacking the job's and the held-out seeds' schedules (padded as the builder pads)
    gives exactly what make_schedule builds for both lists at once."""
    batch_mode = config.batch_mode(mode)
    first, second = (
        make_schedule(config, batch_mode, SEEDS),
        make_schedule(config, batch_mode, EXTRA),
    )
    if mode == "async-variable":  # job counts differ per seed: the padding is exercised
        assert first.max_jobs != second.max_jobs
    stacked = stack_schedules(first, second)
    both = make_schedule(config, batch_mode, list(SEEDS) + EXTRA)
    for name in ("seeds", *PER_SEED_FIELDS):
        np.testing.assert_array_equal(getattr(stacked, name), getattr(both, name), err_msg=name)


@pytest.mark.parametrize("mode", ["sync", "async-fixed", "async-variable"])
@pytest.mark.parametrize("scenario", ["mixed", "tune-16-stc"])
def test_the_run_and_the_held_out_losses_equal_separate_replays(config, mode, scenario):
    arm = "spsa"
    schedules = held_out(config, config.batch_mode(mode), SEEDS, EXTRA)
    run, loss = simulate_run_held_out(
        config, optimizer=arm, batch_mode=mode, scenario=scenario, schedules=schedules
    )
    alone = simulate_run(config, optimizer=arm, batch_mode=mode, scenario=scenario, seeds=SEEDS)
    assert set(run.variables) == set(alone.variables)
    for name, variable in alone.variables.items():
        np.testing.assert_array_equal(run.variables[name].values, variable.values, err_msg=name)
    problem = make_problem(config, scenario, EXTRA)
    extra = replay_arm(
        config, config.optimizer(arm), problem,
        make_schedule(config, config.batch_mode(mode), EXTRA),
        noise=make_noise(config, scenario), rounding=scenario_rounding(config, scenario),
    )  # fmt: skip
    np.testing.assert_array_equal(loss, problem.bowl.elo_loss(extra.theta[:, -1]))
    assert loss.shape == (len(EXTRA),) and np.all(loss > 0)


def test_held_out_seeds_must_not_be_the_jobs_own(config):
    with pytest.raises(ValueError, match=r"held-out seeds \[2\] are the job's own"):
        held_out(config, config.batch_mode("sync"), SEEDS, [2, 1000])
