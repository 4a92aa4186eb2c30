"""The analysis package: statistics, tables, grid settings, schedules and figures.

Expected values are worked out by hand in the comments, or computed
independently (scipy's tests, explicit loops).
"""

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from conftest import small_config_dict
from scipy import stats as sps

from spsa_bench import workflow as grid
from spsa_bench.analysis import stats, tables
from spsa_bench.config.loader import resolve

# ------------------------------------------------------------------ statistics


def test_t_interval_by_hand():
    # mean 2.5, sd = sqrt(5/3) = 1.290994, se = 0.645497, t(0.975, 3) = 3.182446
    mean, low, high = stats.t_interval([1.0, 2.0, 3.0, 4.0])
    assert mean == pytest.approx(2.5)
    assert low == pytest.approx(2.5 - 3.182446 * 0.645497, abs=1e-5)
    assert high == pytest.approx(2.5 + 3.182446 * 0.645497, abs=1e-5)


def test_t_interval_edge_cases():
    assert stats.t_interval([3.0])[0] == 3.0 and math.isnan(stats.t_interval([3.0])[1])
    assert all(math.isnan(v) for v in stats.t_interval([]))
    assert stats.t_interval([1.0, np.nan, 3.0])[0] == pytest.approx(2.0)


@pytest.mark.parametrize("successes, n", [(93, 100), (0, 200), (200, 200), (1, 3)])
def test_wilson_interval_matches_scipy(successes, n):
    share, low, high = stats.wilson_interval([True] * successes + [False] * (n - successes))
    expected = sps.binomtest(successes, n).proportion_ci(0.95, method="wilson")
    assert share == successes / n
    assert (low, high) == pytest.approx((expected.low, expected.high), abs=1e-12)
    assert all(math.isnan(v) for v in stats.wilson_interval([]))


def test_paired_pvalue_matches_scipy():
    rng = np.random.default_rng(1)
    d = rng.normal(0.3, 1.0, size=17)
    assert stats.paired_t_pvalue(d) == pytest.approx(sps.ttest_1samp(d, 0.0).pvalue, rel=1e-10)


def test_paired_pvalue_without_spread():
    assert stats.paired_t_pvalue([0.0, 0.0, 0.0]) == 1.0
    assert stats.paired_t_pvalue([0.5, 0.5, 0.5]) == 0.0
    assert math.isnan(stats.paired_t_pvalue([1.0]))


def test_holm_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005 = 0.02, 3*0.01 = 0.03, 2*0.03 = 0.06,
    # 1*0.04 = 0.04 raised to the running maximum 0.06
    adjusted = stats.holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])


def test_holm_ignores_nan_and_caps_at_one():
    adjusted = stats.holm([np.nan, 0.2, 0.6])
    assert math.isnan(adjusted[0])
    np.testing.assert_allclose(adjusted[1:], [0.4, 0.6])
    np.testing.assert_allclose(stats.holm([0.5, 0.9]), [1.0, 1.0])


def test_first_hit():
    loss = np.array([[5.0, 4.0, 3.0, 2.0, 1.0], [np.nan] * 5])
    pairs = np.array([0, 10, 20, 30, 40])
    assert stats.first_hit(loss[:1], pairs, 2.5)[0] == 30
    assert stats.first_hit(loss[:1], pairs, 2.0)[0] == 30  # reaching the target counts
    assert stats.first_hit(loss[:1], pairs, 0.5)[0] == np.inf
    assert math.isnan(stats.first_hit(loss, pairs, 2.5)[1])


def test_average_runtime_by_hand():
    # successes spend 10 and 30, the failure the whole budget 100: (10 + 100 + 30) / 2
    assert stats.average_runtime([10.0, np.inf, 30.0], 100.0) == pytest.approx(70.0)
    assert stats.average_runtime([np.inf, np.inf], 100.0) == math.inf
    assert stats.average_runtime([10.0, np.nan], 100.0) == pytest.approx(10.0)


def test_bootstrap_art_matches_an_explicit_loop():
    hits = np.array([100.0, 250.0, np.inf, 400.0, np.inf, 50.0])
    got = stats.bootstrap_art(hits, 1000.0, n_boot=300, seed=7)
    rng = np.random.default_rng(7)
    index = rng.integers(0, hits.size, size=(300, hits.size))
    arts = sorted(stats.average_runtime(hits[row], 1000.0) for row in index)
    # inverted-cdf quantile q: the smallest order statistic whose rank >= q * n
    expected = [arts[math.ceil(q * 300) - 1] for q in (0.1, 0.9)]
    np.testing.assert_allclose(got, expected)
    assert np.array_equal(got, stats.bootstrap_art(hits, 1000.0, n_boot=300, seed=7))


def test_bootstrap_art_constant_and_hopeless():
    np.testing.assert_allclose(stats.bootstrap_art([20.0, 20.0, 20.0], 100.0), [20.0, 20.0])
    assert np.all(np.isinf(stats.bootstrap_art([np.inf, np.inf], 100.0)))


# ------------------------------------------------------------------ convergence table


def synthetic_benchmark() -> xr.Dataset:
    """Two optimizers, one cell, four seeds, checkpoints 0/100/200/300 pairs, start gap 5."""
    spsa = [[5, 4, 3, 2], [5, 3, 2, 1], [5, 5, 4, 3], [5, 2, 1, 0.5]]
    other = [[5, 3, 1.5, 1], [5, 2, 1, 0.5], [5, 4, 3, 2], [5, 1, 0.5, 0.4]]
    # dims: optimizer, batch mode, scenario, seed, pairs
    loss = np.array([spsa, other], dtype=float)[:, None, None]
    return xr.Dataset(
        {"elo_loss": (("optimizer", "batch_mode", "scenario", "seed", "pairs"), loss)},
        coords={
            "optimizer": ["spsa", "other"],
            "batch_mode": ["sync"],
            "scenario": ["s1"],
            "seed": [0, 1, 2, 3],
            "pairs": [0, 100, 200, 300],
        },
    )


@pytest.fixture(scope="module")
def convergence():
    return tables.convergence_table(
        synthetic_benchmark(), baseline="spsa", targets=[0.5, 0.8], n_boot=200
    )


def test_convergence_table_final_loss(convergence):
    row = convergence.set_index("optimizer").loc["spsa"]
    assert row["n_seeds"] == 4
    assert row["final_loss_mean"] == pytest.approx((2 + 1 + 3 + 0.5) / 4)
    assert row["final_loss_median"] == pytest.approx(1.5)
    assert row["final_loss_q10"] == pytest.approx(np.quantile([2, 1, 3, 0.5], 0.1))
    assert row["final_loss_q90"] == pytest.approx(np.quantile([2, 1, 3, 0.5], 0.9))
    mean, low, high = stats.t_interval([2, 1, 3, 0.5])
    assert (row["final_loss_ci_low"], row["final_loss_ci_high"]) == pytest.approx((low, high))


def test_convergence_table_paired_difference(convergence):
    base = convergence.set_index("optimizer").loc["spsa"]
    assert base["diff_elo_mean"] == 0.0 and math.isnan(base["p_value"])
    row = convergence.set_index("optimizer").loc["other"]
    # final Elo of other minus spsa = final loss of spsa minus other = 1, 0.5, 1, 0.1
    assert row["diff_elo_mean"] == pytest.approx(0.65)
    ref = sps.ttest_rel([2, 1, 3, 0.5], [1, 0.5, 2, 0.4])
    assert row["p_value"] == pytest.approx(ref.pvalue)
    assert row["p_holm"] == pytest.approx(ref.pvalue)  # a family of one comparison
    ci = ref.confidence_interval(0.95)
    assert (row["diff_elo_ci_low"], row["diff_elo_ci_high"]) == pytest.approx((ci.low, ci.high))
    assert bool(row["significant"]) == (ref.pvalue < 0.05)


def test_convergence_table_runtime_to_targets(convergence):
    spsa = convergence.set_index("optimizer").loc["spsa"]
    # f = 0.5: loss <= 2.5 first at 300, 200, never, 100 pairs; failures spend the budget 300
    assert spsa["reached_0.5"] == 3
    assert spsa["aRT_0.5"] == pytest.approx((300 + 200 + 300 + 100) / 3)
    assert spsa["median_pairs_0.5"] == pytest.approx(250.0)
    # f = 0.8: loss <= 1 first never, 300, never, 200
    assert spsa["reached_0.8"] == 2
    assert spsa["aRT_0.8"] == pytest.approx((300 + 300 + 300 + 200) / 2)
    assert spsa["median_pairs_0.8"] == math.inf  # fewer than half of the seeds got there
    other = convergence.set_index("optimizer").loc["other"]
    # f = 0.5 reached at 200, 100, 300, 100
    assert other["reached_0.5"] == 4
    assert other["aRT_0.5"] == pytest.approx(175.0)
    assert other["median_pairs_0.5"] == pytest.approx(150.0)
    assert other["aRT_q10_0.5"] <= other["aRT_0.5"] <= other["aRT_q90_0.5"]


def test_convergence_table_holm_across_cells():
    ds = synthetic_benchmark()
    second = ds.assign_coords(scenario=["s2"])
    second["elo_loss"] = second["elo_loss"] * 1.1
    both = xr.concat([ds, second], dim="scenario")
    table = tables.convergence_table(both, baseline="spsa", targets=[0.5], n_boot=50)
    tested = table[table["optimizer"] != "spsa"]
    np.testing.assert_allclose(tested["p_holm"], stats.holm(tested["p_value"]))
    assert len(table) == 4  # one row per optimizer x batch mode x scenario


def test_convergence_markdown_mentions_the_paired_design(convergence):
    text = tables.convergence_markdown(convergence, baseline="spsa", targets=[0.5, 0.8])
    assert "common random numbers" in text and "Holm" in text
    table_rows = [line for line in text.splitlines() if line.startswith("| sync | s1 |")]
    assert len(table_rows) == 4  # two optimizers in each of the two tables


# ------------------------------------------------------------------ async table


def synthetic_kpis() -> xr.Dataset:
    nan = np.nan
    conc = np.array([[[1, nan, nan], [1, nan, nan]], [[4, 8, 1], [2, 2, 16]]])  # mode, seed, worker
    speed = np.array([[[1, nan, nan], [1, nan, nan]], [[0.5, 1.0, 2.0], [1.5, 1.0, 0.75]]])
    pairs = np.array([[[90, nan, nan], [90, nan, nan]], [[10, 50, 30], [20, 40, 30]]])
    stale = np.array([[0.0, 0.0], [12.0, 20.0]])
    dims = ("optimizer", "scenario", "batch_mode", "seed")
    return xr.Dataset(
        {
            "staleness_mean": (dims, stale[None, None]),
            "n_jobs": (dims, np.array([[5, 5], [7, 9]])[None, None]),
            "budget_exhausted": (dims, np.array([[True, True], [True, False]])[None, None]),
            "concurrency": ((*dims, "worker"), conc[None, None]),
            "speed_factor": ((*dims, "worker"), speed[None, None]),
            "pairs_processed": ((*dims, "worker"), pairs[None, None]),
        },
        coords={
            "optimizer": ["spsa"],
            "scenario": ["s"],
            "batch_mode": ["sync", "async"],
            "seed": [0, 1],
        },
    )


def test_async_table_by_hand():
    table = tables.async_table(synthetic_kpis()).set_index("batch_mode")
    sync, asy = table.loc["sync"], table.loc["async"]
    assert sync["workers"] == 1 and asy["workers"] == 3
    assert sync["staleness_mean_median"] == 0.0
    assert asy["staleness_mean_median"] == pytest.approx(16.0)
    assert asy["n_jobs_median"] == pytest.approx(8.0)
    assert asy["budget_exhausted_share"] == pytest.approx(0.5)
    # per seed min / median / max of pairs per worker: (10, 30, 50) and (20, 30, 40)
    assert asy["pairs_per_worker_min"] == pytest.approx(15.0)
    assert asy["pairs_per_worker_median"] == pytest.approx(30.0)
    assert asy["pairs_per_worker_max"] == pytest.approx(45.0)
    assert sync["pairs_per_worker_max"] == pytest.approx(90.0)
    # pooled concurrency 4, 8, 1, 2, 2, 16
    assert asy["concurrency_distribution"] == "1:17% 2:33% 4:17% 8:17% 16:17%"
    assert (asy["concurrency_min"], asy["concurrency_median"], asy["concurrency_max"]) == (1, 3, 16)
    assert asy["speed_median"] == pytest.approx(1.0)
    text = tables.async_markdown(table.reset_index())
    assert "| async |" in text and "| sync |" in text


# ------------------------------------------------------------------ grid settings


@pytest.fixture(scope="module")
def small_config():
    return resolve(small_config_dict(num_pairs=600))


def test_seed_chunks():
    assert grid.seed_chunks(0, 100, 100) == [(0, 99)]
    assert grid.seed_chunks(5, 7, 3) == [(5, 7), (8, 10), (11, 11)]
    with pytest.raises(ValueError):
        grid.seed_chunks(0, 0, 3)


def test_cell_settings_hold_only_the_cell(small_config):
    cell = grid.cell_settings(small_config, "spsa-cwd", "async-fixed", "mixed")
    assert list(cell["optimizers"]) == ["spsa-cwd"]
    assert list(cell["batch_modes"]) == ["async-fixed"]
    assert list(cell["scenarios"]) == ["mixed"]
    assert "description" not in cell["scenarios"]["mixed"]
    assert cell["optimizers"]["spsa-cwd"]["kind"] == "spsa-cwd"
    # written 180 in the YAML, canonical as a float
    assert cell["batch_modes"]["async-fixed"]["game_duration"]["median"] == 180.0


def test_cell_settings_simulate_like_the_full_config(small_config):
    from spsa_bench.engine.simulate import simulate

    cell = grid.cell_settings(small_config, "sf-sgd", "async-variable", "calibrated")
    alone = resolve(grid.with_seeds(json.loads(grid.to_json(cell)), 2, 3))
    a = simulate(
        alone, optimizer="sf-sgd", batch_mode="async-variable", scenario="calibrated", seeds=[2, 3]
    )
    b = simulate(
        small_config,
        optimizer="sf-sgd",
        batch_mode="async-variable",
        scenario="calibrated",
        seeds=[2, 3],
    )
    np.testing.assert_array_equal(a["theta"].values, b["theta"].values)


def test_editing_one_arm_changes_only_its_settings():
    raw = small_config_dict(num_pairs=600)
    before = resolve(raw)
    raw["optimizers"]["sf-sgd"]["lr"] = 0.02
    after = resolve(raw)
    for optimizer in before.optimizers:
        old = grid.to_json(grid.cell_settings(before, optimizer, "sync", "mixed"))
        new = grid.to_json(grid.cell_settings(after, optimizer, "sync", "mixed"))
        assert (old != new) == (optimizer == "sf-sgd"), optimizer


def test_equivalent_spellings_give_identical_settings():
    raw = small_config_dict(num_pairs=600)
    base = grid.to_json(grid.cell_settings(resolve(raw), "spsa", "sync", "calibrated"))
    raw["optimizers"]["spsa"] = {"r_end": 0.002, "gamma": 0.101, "alpha": 0.602, "A": 5000.0}
    raw["scenarios"]["calibrated"]["description"] = "reworded"
    raw["scenarios"]["calibrated"]["start_elo"] = -5  # an int for the float -5.0
    assert grid.to_json(grid.cell_settings(resolve(raw), "spsa", "sync", "calibrated")) == base


def test_kinds_and_async_modes(small_config):
    assert grid.kinds(small_config)[0] == "spsa" and len(grid.kinds(small_config)) == len(
        small_config.optimizers
    )
    assert grid.async_modes(small_config) == ["async-fixed", "async-variable"]


# ------------------------------------------------------------------ schedules and combining


def test_schedule_round_trip(tmp_path, small_config):
    from spsa_bench.dispatch.storage import read_schedule
    from spsa_bench.engine.simulate import make_schedule
    from spsa_bench.results.datasets import write_schedule

    schedule = make_schedule(small_config, small_config.batch_mode("async-variable"), [3, 4, 5])
    path = write_schedule(
        schedule, tmp_path / "s.nc", batch_mode="async-variable", settings_json="{}"
    )
    back = read_schedule(path)
    for field in dataclasses.fields(schedule):
        a, b = getattr(schedule, field.name), getattr(back, field.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype, field.name
            np.testing.assert_array_equal(a, b, err_msg=field.name)
        else:
            assert a == b, field.name


def test_combine_aligns_worker_pools_of_different_sizes(tmp_path, small_config):
    """io.combine_runs pads the 1-worker synchronous pool to the asynchronous pool size with NaN."""
    from spsa_bench.engine.simulate import simulate
    from spsa_bench.results.atomic import write_atomic
    from spsa_bench.results.combine import combine_benchmark

    paths = []
    for mode in ("async-fixed", "sync"):
        for seeds in ([0, 1], [2]):
            ds = simulate(
                small_config, optimizer="spsa", batch_mode=mode, scenario="mixed", seeds=seeds
            )
            paths.append(write_atomic(ds, tmp_path / f"{mode}-{seeds[0]}.nc"))
    combined = combine_benchmark(paths, order={"batch_mode": ["sync", "async-fixed"]})
    assert [str(v) for v in combined["batch_mode"].values] == ["sync", "async-fixed"]
    assert combined["elo_loss"].dims == ("optimizer", "batch_mode", "scenario", "seed", "pairs")
    assert combined["concurrency"].dims == ("optimizer", "batch_mode", "scenario", "seed", "worker")
    assert combined.sizes["worker"] == 20 and combined.sizes["seed"] == 3
    sync = combined["pairs_processed"].sel(batch_mode="sync").values[0, 0]
    assert np.all(sync[:, 0] == small_config.num_pairs) and np.all(np.isnan(sync[:, 1:]))
    assert not combined["elo_loss"].isnull().any()


# ------------------------------------------------------------------ figures


def test_palette_is_keyed_by_name():
    from spsa_bench.analysis.figures import optimizer_palette

    one = optimizer_palette(["spsa", "adam", "my-arm"])
    two = optimizer_palette(["adam", "ademamix", "spsa", "my-arm"])
    assert (
        one["spsa"] == two["spsa"] and one["adam"] == two["adam"] and one["my-arm"] == two["my-arm"]
    )
    from spsa_bench.optimizers import REGISTRY

    assert len(set(optimizer_palette(list(REGISTRY)).values())) == len(REGISTRY)


def test_figures_draw_the_synthetic_benchmark(tmp_path, convergence):
    from spsa_bench.analysis import figures

    ds = synthetic_benchmark()
    drawn = {
        "convergence": figures.convergence(ds),
        "ecdf": figures.ecdf_pairs_to_target(ds, [0.5, 0.8]),
        "final_loss": figures.final_loss(ds),
        "paired": figures.paired_difference(convergence, "spsa"),
    }
    for name, fig in drawn.items():
        figures.save(fig, tmp_path / f"{name}.png", tmp_path / f"{name}.svg")
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
        assert (tmp_path / f"{name}.svg").read_text().lstrip().startswith("<?xml")


def test_ecdf_tops_out_at_the_success_share():
    import matplotlib.pyplot as plt

    from spsa_bench.analysis import figures

    fig = figures.ecdf_pairs_to_target(synthetic_benchmark(), [0.5, 0.8])
    tops = {line.get_color(): line.get_ydata()[-1] for line in fig.axes[0].get_lines()}
    palette = figures.optimizer_palette(["spsa", "other"])
    # spsa: 3 of 4 seeds reach f = 0.5 and 2 of 4 reach f = 0.8 -> 5 / 8
    spsa_colour = next(
        c for c in tops if np.allclose(plt.matplotlib.colors.to_rgb(c), palette["spsa"])
    )
    assert tops[spsa_colour] == pytest.approx(5 / 8)
    plt.close(fig)


def test_markdown_table_formats():
    frame = pd.DataFrame({"a": ["x"], "b": [math.inf], "c": [np.nan], "d": [1234.5678]})
    text = tables.markdown_table(frame, {"a": "A", "b": "B", "c": "C", "d": "D"}, digits=1)
    assert text.splitlines()[2] == "| x | ∞ | – | 1,234.6 |"
