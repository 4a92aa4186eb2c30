"""engine/bench.py: the whole-process row runs a real `spsa-bench simulate` (no timing asserted)."""

import io

from conftest import small_config_dict

from spsa_bench.config.loader import resolve
from spsa_bench.engine import bench


def test_bench_ends_with_a_whole_process_row_of_the_largest_r():
    config = resolve(small_config_dict(num_pairs=400))
    out = io.StringIO()
    rows = bench.run_bench(
        config,
        seed_counts=[1, 3],
        optimizers=["spsa"],
        batch_modes=["sync"],
        scenario="mixed",
        repeats=1,
        out=out,
    )
    whole = rows[-1]
    assert whole["whole_process"] and whole["seeds"] == 3 and whole["optimizer"] == "spsa"
    assert whole["speedup"] == 3 * bench.LAB_SEED_S / whole["total_s"]
    assert out.getvalue().splitlines()[-1].startswith("whole process: spsa-bench simulate spsa")


def test_tune_size_rows_time_each_parameter_count():
    """Rows for each parameter count, with the cost per seed x param x pair from the
    median replay time (no timing asserted; the verdict line names the growth)."""
    config = resolve(small_config_dict(num_pairs=200))
    out = io.StringIO()
    noise = bench.make_noise(config, "mixed")
    rows = bench.tune_sizes(config, noise=noise, n_seeds=2, counts=(3, 9), repeats=1, out=out)
    assert [row["params"] for row in rows] == [3, 9]
    for row in rows:
        expected = row["replay_s"] / (2 * row["params"] * 200) * 1e9
        assert row["unit_ns"] == expected
    assert "in parameters x pairs" in out.getvalue().splitlines()[-1]


def test_tune_problem_is_a_stockfish_block_with_per_seed_bowls():
    import numpy as np

    view, bowls = bench._tune_problem(5, 100, np.arange(3), 7)
    assert view.integer.all() and bowls.num_seeds == 3
    np.testing.assert_array_equal(view.theta_max - view.theta_min, np.full(5, 200.0))
    np.testing.assert_array_equal(view.c_dev, np.full(5, 10.0))  # (max - min) / 20


def test_pool_row_times_a_fishtest_pool():
    config = resolve(small_config_dict(num_pairs=400))
    out = io.StringIO()
    row = bench.pool_row(config, scenario="mixed", repeats=1, out=out, workers=7, seeds=2,
                         num_pairs=300)  # fmt: skip
    assert (row["workers"], row["seeds"], row["num_pairs"]) == (7, 2, 300)
    assert row["replay_s"] > 0 and row["schedule_s"] > 0
    assert "Fishtest pool: spsa mixed, 7 workers" in out.getvalue()
