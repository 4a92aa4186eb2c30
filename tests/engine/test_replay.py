"""The replay engine: determinism, seed-chunk invariance, common random numbers."""

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench import optimizers
from spsa_bench.config.loader import resolve
from spsa_bench.dispatch.schedule import sync_schedule
from spsa_bench.engine.replay import _checkpoint_events, pairs_grid, replay
from spsa_bench.engine.simulate import make_problem
from spsa_bench.model import streams

CONFIG = resolve(small_config_dict(num_pairs=1500))


def run(kind="spsa", seeds=(0, 1, 2, 3), scenario="calibrated", batch=36, **kw):
    problem = make_problem(CONFIG, scenario)
    schedule = sync_schedule(np.asarray(seeds), CONFIG.num_pairs, batch)
    opt = optimizers.build(kind, problem.view)
    return replay(
        opt, schedule, problem.bowl, problem.view, entropy=CONFIG.entropy, checkpoints=31, **kw
    ), problem


def test_replay_is_deterministic():
    a, _ = run()
    b, _ = run()
    np.testing.assert_array_equal(a.theta, b.theta)


@pytest.mark.parametrize("kind", ["spsa", "spsa-block", "spsa-cwd"])
def test_seed_result_does_not_depend_on_other_seeds(kind):
    together, _ = run(kind, seeds=range(0, 12))
    alone, _ = run(kind, seeds=[7])
    np.testing.assert_array_equal(alone.theta[0], together.theta[7])
    np.testing.assert_array_equal(
        alone.avg_step_size_last_100[0], together.avg_step_size_last_100[7]
    )


def test_trajectory_starts_at_start_and_stays_in_bounds():
    result, problem = run(seeds=range(8))
    np.testing.assert_array_equal(
        result.theta[:, 0], np.broadcast_to(problem.view.theta_start, result.theta[:, 0].shape)
    )
    assert np.all(result.theta >= problem.view.theta_min) and np.all(
        result.theta <= problem.view.theta_max
    )
    assert np.all(result.total_pairs == CONFIG.num_pairs)


def test_streams_are_keyed_by_seed_and_purpose():
    u7 = streams.match_draws(1, np.array([7]), 50)[0]
    u_all = streams.match_draws(1, np.arange(10), 50)[7]
    np.testing.assert_array_equal(u7, u_all)
    f_short = streams.flips(1, np.array([3]), 5, 4)[0]
    f_long = streams.flips(1, np.array([3]), 9, 4)[0]
    np.testing.assert_array_equal(f_short, f_long[:5])
    assert not np.array_equal(streams.match_draws(2, np.array([7]), 50)[0], u7)


def test_common_random_numbers_couple_optimizers():
    """Two optimizers at one seed see the same flips and uniforms: with a zero
    learning rate every report's result is the same function of the same draws."""
    from spsa_bench.optimizers import hyper_from_dict

    problem = make_problem(CONFIG, "calibrated")
    schedule = sync_schedule(np.arange(3), CONFIG.num_pairs, 36)
    frozen = [
        optimizers.build(k, problem.view, hyper_from_dict(k, {"r_end": 0.0}))
        for k in ("spsa", "spsa-block")
    ]
    captured = []
    for opt in frozen:
        signals = []
        original = opt.update

        def spy(state, report, original=original, signals=signals):
            signals.append(report.signal.copy())
            return original(state, report)

        import dataclasses

        replay(
            dataclasses.replace(opt, update=spy),
            schedule,
            problem.bowl,
            problem.view,
            entropy=5,
            checkpoints=11,
        )
        captured.append(np.array(signals))
    np.testing.assert_array_equal(captured[0], captured[1])


def test_checkpoint_events_pick_last_update_at_or_before_each_point():
    schedule = sync_schedule(np.arange(2), 100, 30)  # jobs end at 30, 60, 90, 100
    grid = pairs_grid(100, 11)  # 0, 10, ..., 100
    events = _checkpoint_events(schedule, grid)
    expected = np.array([-1, -1, -1, 0, 0, 0, 1, 1, 1, 2, 3])
    np.testing.assert_array_equal(events, np.tile(expected, (2, 1)))


def test_scaled_signal_divides_by_two_sqrt_n():
    problem = make_problem(CONFIG, "calibrated")
    schedule = sync_schedule(np.arange(2), 360, 36)
    seen = {}
    for signal in ("raw", "scaled"):
        opt = optimizers.build("spsa", problem.view)
        record = []

        def spy(state, report, record=record, original=opt.update):
            record.append(report.signal.copy())
            return original(state, report)

        import dataclasses

        replay(
            dataclasses.replace(opt, update=spy),
            schedule,
            problem.bowl,
            problem.view,
            entropy=3,
            signal=signal,
            checkpoints=5,
        )
        seen[signal] = np.array(record)
    # the first report is played at the same point in both conventions
    np.testing.assert_allclose(
        seen["scaled"][0], seen["raw"][0] / (2 * np.sqrt(problem.view.num_params))
    )


def test_per_seed_arrays_of_identical_seeds_equal_the_seed_by_seed_ones(monkeypatch):
    """A synchronous schedule's seeds are identical, so the replay derives its per-seed
    arrays and its checkpoint events from the schedule once and broadcasts them: every
    array, dtype and value, as the general path builds it seed by seed; and the replay's
    result (checkpoints included) is the same."""
    from spsa_bench.dispatch.schedule import Schedule
    from spsa_bench.engine.replay import _Seeds

    schedule = sync_schedule(np.arange(6), CONFIG.num_pairs, 36)
    assert schedule.identical_seeds()
    fast = _Seeds.from_schedule(
        schedule, CONFIG.entropy, "arrival", 3, realized=True, identical=True
    )
    fast_run, _ = run(seeds=range(6))
    monkeypatch.setattr(Schedule, "identical_seeds", lambda self: False)
    general = _Seeds.from_schedule(schedule, CONFIG.entropy, "arrival", 3, realized=True)
    general_run, _ = run(seeds=range(6))
    for name in (*_Seeds.PER_SEED, "flips_by_job"):
        a, b = getattr(fast, name), getattr(general, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(fast_run.theta, general_run.theta)
    np.testing.assert_array_equal(fast_run.outcome_counts, general_run.outcome_counts)


def test_flips_are_each_seed_stream_bits_in_job_order():
    """Literal reference: bit b of a seed's own flips stream (64-bit outputs, least
    significant bit first) is the flip of job b // params, param b % params, as +-1;
    for more seeds than are unpacked at once, and any order of seeds."""
    seeds = np.array([130, 2, 77] + list(range(3, 140, 2)))
    num_jobs, num_params = 11, 7
    got = streams.flips(9, seeds, num_jobs, num_params)
    for row, seed in enumerate(seeds):
        words = streams.bit_generator(9, seed, "flips").random_raw(-(-num_jobs * num_params // 64))
        bits = [(int(word) >> shift) & 1 for word in words for shift in range(64)]
        expected = np.array(bits[: num_jobs * num_params]).reshape(num_jobs, num_params) * 2 - 1
        np.testing.assert_array_equal(got[row], expected, err_msg=f"seed {seed}")
    assert streams.flips(9, seeds[:0], num_jobs, num_params).shape == (0, num_jobs, num_params)
    assert streams.flips(9, seeds, 0, num_params).shape == (seeds.shape[0], 0, num_params)
    assert streams.flips(9, seeds, num_jobs, 0, job_major=True).shape == (
        num_jobs,
        seeds.shape[0],
        0,
    )


def test_job_major_flips_are_the_seed_major_flips_transposed():
    seeds = np.array([0, 5, 9])
    job_major = streams.flips(3, seeds, 7, 5, job_major=True)
    assert job_major.flags.c_contiguous and job_major.shape == (7, 3, 5)
    np.testing.assert_array_equal(job_major, streams.flips(3, seeds, 7, 5).transpose(1, 0, 2))


def test_a_sync_schedule_is_one_row_broadcast_and_replays_as_a_materialized_one(monkeypatch):
    """sync_schedule keeps one row per array (stride 0 along the seeds, read-only); a
    copy with a row per seed, replayed on the general (seed by seed) path, gives the
    same result bit for bit."""
    import dataclasses

    from spsa_bench.dispatch.schedule import PER_SEED_FIELDS, Schedule

    schedule = sync_schedule(np.arange(5), CONFIG.num_pairs, 36)
    for name in PER_SEED_FIELDS:
        values = getattr(schedule, name)
        assert values.strides[0] == 0 and not values.flags.writeable, name
    rows = {name: np.array(getattr(schedule, name)) for name in PER_SEED_FIELDS}
    materialized = dataclasses.replace(schedule, **rows)
    assert materialized.identical_seeds()
    problem = make_problem(CONFIG, "mixed")

    def replayed(schedule):
        opt = optimizers.build("adam", problem.view)
        return replay(opt, schedule, problem.bowl, problem.view, entropy=CONFIG.entropy)

    broadcast_run = replayed(schedule)
    monkeypatch.setattr(Schedule, "identical_seeds", lambda self: False)
    general_run = replayed(materialized)
    np.testing.assert_array_equal(broadcast_run.theta, general_run.theta)
    for name, values in broadcast_run.extras.items():
        np.testing.assert_array_equal(values, general_run.extras[name], err_msg=name)
    np.testing.assert_array_equal(broadcast_run.outcome_counts, general_run.outcome_counts)
    np.testing.assert_array_equal(
        broadcast_run.avg_step_size_last_100, general_run.avg_step_size_last_100
    )


def test_the_match_window_reads_what_the_whole_streams_hold():
    """MatchWindow gives the draws of match_draws whatever the jobs: blocks common to
    every seed, ragged jobs with padding (size 0), windows moved seed by seed, and
    seeds dropped in between."""
    seeds, num_pairs = np.array([4, 0, 11, 7, 2]), 997
    whole = streams.match_draws(5, seeds, num_pairs)
    window = streams.MatchWindow(5, seeds, num_pairs, width=40, longest_job=19)
    assert window.buffer.shape == (5, 40)
    rows = np.arange(5)
    offset = 0
    for size in (7, 19, 3, 19, 19, 1, 12):  # every seed alike: plain slices
        np.testing.assert_array_equal(window.block(offset, size), whole[:, offset : offset + size])
        offset += size
    rng = np.random.default_rng(0)
    offsets = np.full(5, offset)
    while (offsets < num_pairs).any():  # ragged: each seed at its own pace
        sizes = np.minimum(rng.integers(0, 20, size=rows.shape[0]), num_pairs - offsets)
        expected = np.concatenate(
            [whole[row, o : o + z] for row, o, z in zip(rows, offsets, sizes, strict=True)]
        )
        np.testing.assert_array_equal(window.segments(offsets, sizes), expected)
        offsets = offsets + sizes
        if rows.shape[0] == 5 and offsets.min() > 500:  # drop two seeds midway
            kept = np.array([0, 2, 4])
            window.keep(kept)
            rows, offsets = rows[kept], offsets[kept]
    window.keep(np.array([], dtype=np.int64))  # every seed done
    assert window.block(990, 5).shape == (0, 5) and window.segments(rows[:0], rows[:0]).size == 0
    with pytest.raises(ValueError, match="cannot hold a job of 50"):
        streams.MatchWindow(5, seeds, num_pairs, width=40, longest_job=50)


def test_a_pair_major_match_window_reads_what_the_whole_streams_hold():
    """A pair-major window gives match_draws transposed, (size, seed), contiguous:
    across moves that keep draws, jumps past the window (draws skipped), dropped seeds
    and more seeds than are filled at a time."""
    seeds, num_pairs = np.arange(37) * 3 + 1, 1999
    whole = streams.match_draws(5, seeds, num_pairs)
    window = streams.MatchWindow(5, seeds, num_pairs, width=40, longest_job=19, pair_major=True)
    assert window.buffer.shape == (40, 37)
    rng = np.random.default_rng(1)
    offset, rows = 0, np.arange(37)
    while offset < num_pairs - 20:
        size = int(rng.integers(1, 20))
        if rng.uniform() < 0.1:
            offset += int(rng.integers(40, 200))  # past the window: draws skipped
        block = window.block(offset, size)
        assert block.flags.c_contiguous
        np.testing.assert_array_equal(block, whole[rows, offset : offset + size].T)
        offset += size
        if rows.shape[0] == 37 and offset > 1000:
            kept = np.flatnonzero(rows % 4 != 1)
            window.keep(kept)
            rows = rows[kept]
    with pytest.raises(ValueError, match="pair-major"):
        window.segments(np.zeros(rows.shape[0], dtype=np.int64), np.ones(rows.shape[0], np.int64))


@pytest.mark.parametrize("mode", ["sync", "async-fixed", "async-variable"])
def test_a_replay_through_a_small_match_window_is_the_same(mode, monkeypatch):
    """Windows of four jobs (moved every few jobs, seed by seed in the asynchronous
    modes, through compaction in async-variable) replay bit for bit as the default
    window, which holds a 1500-pair budget whole."""
    from spsa_bench.engine import replay as replay_module
    from spsa_bench.engine.simulate import make_schedule

    problem = make_problem(CONFIG, "mixed")
    schedule = make_schedule(CONFIG, CONFIG.batch_mode(mode), list(range(6)))

    def replayed():
        opt = optimizers.build("spsa", problem.view)
        return replay(opt, schedule, problem.bowl, problem.view, entropy=CONFIG.entropy)

    whole = replayed()
    monkeypatch.setattr(replay_module, "MATCH_WINDOW", 1)
    monkeypatch.setattr(replay_module, "PAIR_MAJOR_WINDOW", 1)
    windowed = replayed()
    np.testing.assert_array_equal(windowed.theta, whole.theta)
    np.testing.assert_array_equal(windowed.outcome_counts, whole.outcome_counts)
    assert whole.outcome_counts.sum() == 6 * CONFIG.num_pairs


def test_compaction_down_to_the_first_rows_keeps_each_seed_tallies_in_its_row():
    """Compaction that keeps exactly the first rows (seeds 0 and 39 below run longest)
    still writes the per-seed tallies (step norms, outcome counts) to those rows only:
    bit for bit the replay without compaction (a regression: every row was written)."""
    from spsa_bench.dispatch.asynchronous import AsyncSettings, async_schedule

    mode = AsyncSettings(
        num_workers=2, batch="variable", batch_size=1, concurrency_min=1, concurrency_max=16
    )
    schedule = async_schedule(3, np.array([0, 39, 24, 2]), 40, mode)
    assert schedule.n_jobs.tolist() == [5, 5, 4, 2]  # at arrival 4 rows 0 and 1 are left
    problem = make_problem(CONFIG, "mixed")

    def replayed(compact: bool):
        opt = optimizers.build("spsa", problem.view)
        return replay(
            opt, schedule, problem.bowl, problem.view, entropy=CONFIG.entropy, compact=compact
        )

    compacted, whole = replayed(True), replayed(False)
    np.testing.assert_array_equal(compacted.theta, whole.theta)
    np.testing.assert_array_equal(compacted.avg_step_size_last_100, whole.avg_step_size_last_100)
    np.testing.assert_array_equal(compacted.outcome_counts, whole.outcome_counts)
    assert np.all(compacted.avg_step_size_last_100 > 0)
