"""engine/bench.py: the whole-process row runs a real `spsa-bench simulate` (no timing asserted)."""

import io
from pathlib import Path

import pytest
import yaml
from conftest import small_config_dict

from spsa_bench.config.loader import ConfigError, resolve
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
    *_, line, phases_line = out.getvalue().splitlines()
    assert line.startswith("whole process: spsa-bench simulate spsa")
    # the phases simulate --timings reports, and the start-up the rest of the wall time
    phases = whole["phases"]
    assert list(phases) == ["start-up and imports", "configuration", "simulation", "write"]
    assert all(seconds > 0 for seconds in phases.values())
    assert abs(sum(phases.values()) - whole["total_s"]) < 1e-9
    assert phases_line.startswith("  its phases") and "simulation" in phases_line


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


def test_whole_process_row_runs_a_configuration_with_sweeps_and_a_tuning_section(
    default_config_path,
):
    """The simulate process reads the resolved configuration without the studies: a
    tuning section names sweeps, which the resolved arms no longer are."""
    raw = yaml.safe_load(default_config_path.read_text())
    raw["num_pairs"] = 360
    config = resolve(raw)
    assert "tuning" in config.resolved and any(arm.sweep for arm in config.optimizers.values())
    row = bench.whole_process(
        config, optimizer="spsa", batch_mode="sync", scenario="calibrated", n_seeds=2,
        repeats=1, out=io.StringIO(),
    )  # fmt: skip
    assert row["seeds"] == 2 and row["total_s"] > 0


def _fake_lab(root: Path, seconds: float) -> Path:
    """A checkout laid out like the lab's whose runner takes ``seconds`` per seed."""
    package = root / "src" / "fishtest_spsa_lab" / "simulator"
    package.mkdir(parents=True)
    for folder in (package.parent, package):
        (folder / "__init__.py").write_text("")
    (package / "config.py").write_text(
        "class SPSAConfig:\n    def __init__(self, **settings):\n        self.settings = settings\n"
    )
    (package / "runner.py").write_text(
        "import time\n\nclass SpsaRunner:\n    def __init__(self, config):\n"
        "        assert config.settings['batch_size'] == 36, config.settings\n"
        f"    def run(self):\n        time.sleep({seconds})\n"
    )
    return root


def test_lab_time_is_measured_in_the_same_run_from_a_checkout(tmp_path):
    lab = _fake_lab(tmp_path / "lab", 0.05)
    seconds = bench.lab_seed_seconds(lab, num_pairs=360, batch_size=36, repeats=3)
    assert 0.05 <= seconds < 0.5  # the fake runner sleeps 0.05 s per seed
    config = resolve(small_config_dict(num_pairs=360))
    row = bench.whole_process(
        config, optimizer="spsa", batch_mode="sync", scenario="mixed", n_seeds=2, repeats=1,
        out=io.StringIO(), lab=lab,
    )  # fmt: skip
    assert row["lab_seed_s"] >= 0.05 and row["speedup"] == 2 * row["lab_seed_s"] / row["total_s"]


def test_lab_is_refused_for_an_asynchronous_whole_process_row(tmp_path):
    config = resolve(small_config_dict(num_pairs=360))
    with pytest.raises(ConfigError, match="'async-fixed' .* is not synchronous"):
        bench.whole_process(
            config, optimizer="spsa", batch_mode="async-fixed", scenario="mixed", n_seeds=2,
            repeats=1, out=io.StringIO(), lab=_fake_lab(tmp_path / "lab", 0.0),
        )  # fmt: skip


def test_a_folder_that_is_not_the_lab_is_refused_naming_the_flag(tmp_path):
    with pytest.raises(ConfigError, match="--lab .*fishtest-spsa-lab"):
        bench.lab_seed_seconds(tmp_path, num_pairs=360, batch_size=36, repeats=1)
    broken = _fake_lab(tmp_path / "broken", 0.0)
    (broken / "src" / "fishtest_spsa_lab" / "simulator" / "runner.py").write_text(
        "raise OSError('no')\n"
    )
    with pytest.raises(RuntimeError, match="the lab's runner failed: OSError: no"):
        bench.lab_seed_seconds(broken, num_pairs=360, batch_size=36, repeats=1)
