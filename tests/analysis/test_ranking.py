"""Rankings across problems (analysis.ranking) and the seeds_needed column.

Expected values are worked out by hand in the comments or simulated
independently (the power of the paired t-test by Monte Carlo).
"""

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats as sps

from spsa_bench.analysis import ranking, stats, tables

GAP = 5.0


def benchmark(final: dict, seeds: int, pairs=(0, 100)) -> xr.Dataset:
    """A dataset whose runs start at the gap and hold ``final[(arm, mode, scenario)]``
    (one value per seed, NaN: missing) at every later checkpoint; absent keys are NaN."""
    arms = list(dict.fromkeys(k[0] for k in final))
    modes = list(dict.fromkeys(k[1] for k in final))
    scenarios = list(dict.fromkeys(k[2] for k in final))
    loss = np.full((len(arms), len(modes), len(scenarios), seeds, len(pairs)), np.nan)
    for (arm, mode, scenario), values in final.items():
        cell = loss[arms.index(arm), modes.index(mode), scenarios.index(scenario)]
        values = np.asarray(values, dtype=float)
        cell[:, 0] = np.where(np.isnan(values), np.nan, GAP)
        cell[:, 1:] = values[:, None]
    return xr.Dataset(
        {"elo_loss": (("optimizer", "batch_mode", "scenario", "seed", "pairs"), loss)},
        coords={
            "optimizer": arms,
            "batch_mode": modes,
            "scenario": scenarios,
            "seed": np.arange(seeds),
            "pairs": list(pairs),
        },
    )


# ------------------------------------------------------------------ performance profile


def profile_case() -> xr.Dataset:
    return benchmark(
        {
            # sync/s1: means 1, 2, 4 -> ratios 1, 2, 4
            ("a", "sync", "s1"): [0.5, 1.5],
            ("b", "sync", "s1"): [2.0, 2.0],
            ("c", "sync", "s1"): [3.0, 5.0],
            # sync/s2: means 3, 1.5, 1.5 -> ratios 2, 1, 1
            ("a", "sync", "s2"): [3.0, 3.0],
            ("b", "sync", "s2"): [1.0, 2.0],
            ("c", "sync", "s2"): [1.5, 1.5],
            # async/s1: means 0, 0.02, 0.05, floored at 0.01 -> ratios 1, 2, 5
            ("a", "async", "s1"): [-0.01, 0.01],
            ("b", "async", "s1"): [0.02, 0.02],
            ("c", "async", "s1"): [0.04, 0.06],
            # async/s2: not run for c -> not a problem
            ("a", "async", "s2"): [0.1, 0.1],
            ("b", "async", "s2"): [9.0, 9.0],
            ("c", "async", "s2"): [np.nan, np.nan],
        },
        seeds=2,
    )


def test_performance_profile_by_hand():
    taus = [1.0, 1.5, 2.0, 4.0, 5.0]
    profile = ranking.performance_profile(profile_case(), taus)
    assert list(profile.columns[:3]) == ["arm", "tau", "rho"]
    assert (profile["n_problems"] == 3).all()
    expected = {
        "a": [2 / 3, 2 / 3, 1, 1, 1],  # ratios 1, 2, 1
        "b": [1 / 3, 1 / 3, 1, 1, 1],  # ratios 2, 1, 2
        "c": [1 / 3, 1 / 3, 1 / 3, 2 / 3, 1],  # ratios 4, 1, 5
    }
    for arm, rho in expected.items():
        one = profile[profile["arm"] == arm]
        np.testing.assert_allclose(one["tau"], taus)
        np.testing.assert_allclose(one["rho"], rho, err_msg=arm)


def test_problem_ratios_floor():
    ratios = ranking.problem_ratios(profile_case())
    assert len(ratios) == 9  # three problems x three arms
    one = ratios[(ratios["batch_mode"] == "async")].set_index("arm")
    assert one.loc["a", "mean_loss"] == pytest.approx(0.0)
    np.testing.assert_allclose(one["ratio"], [1.0, 2.0, 5.0])
    # a higher floor flattens the near-zero problem
    high = ranking.problem_ratios(profile_case(), floor=0.1)
    np.testing.assert_allclose(high[high["batch_mode"] == "async"]["ratio"], [1.0, 1.0, 1.0])


# ------------------------------------------------------------------ aggregated ECDF


def test_aggregated_ecdf_constructed_case():
    # target f = 0.5: loss <= 2.5; checkpoints 0, 100, 200, 300
    hit_at = {100: [2, 2, 2], 200: [4, 2, 2], 300: [4, 4, 2], None: [4, 4, 4]}
    traj = {k: [GAP, *v] for k, v in hit_at.items()}
    pairs = [0, 100, 200, 300]
    ds = xr.Dataset(
        {
            "elo_loss": (
                ("optimizer", "batch_mode", "scenario", "seed", "pairs"),
                np.array(
                    [
                        # x: p1 hits at 100 and 300; p2 never and at 200
                        [[[traj[100], traj[300]], [traj[None], traj[200]]]],
                        # y: p1 at 200 and never; p2 never and a missing seed
                        [[[traj[200], traj[None]], [traj[None], [np.nan] * 4]]],
                    ],
                    dtype=float,
                ),
            )
        },
        coords={
            "optimizer": ["x", "y"],
            "batch_mode": ["sync"],
            "scenario": ["p1", "p2"],
            "seed": [0, 1],
            "pairs": pairs,
        },
    )
    ecdf = ranking.aggregated_ecdf(ds, [0.5])
    x = ecdf[ecdf["arm"] == "x"]
    y = ecdf[ecdf["arm"] == "y"]
    np.testing.assert_allclose(x["pairs"], pairs)
    np.testing.assert_allclose(x["fraction"], [0, 1 / 4, 2 / 4, 3 / 4])
    np.testing.assert_allclose(y["fraction"], [0, 0, 1 / 3, 1 / 3])  # the missing seed is out
    assert (x["n_triples"] == 4).all() and (y["n_triples"] == 3).all()
    # a second, unreachable target doubles the triples and halves the shares
    two = ranking.aggregated_ecdf(ds, [0.5, 0.99])
    np.testing.assert_allclose(two[two["arm"] == "x"]["fraction"], [0, 1 / 8, 2 / 8, 3 / 8])


# ------------------------------------------------------------------ rank table


@pytest.fixture(scope="module")
def rank_case() -> xr.Dataset:
    rng = np.random.default_rng(5)
    seeds = 40
    final = {}
    for scenario in ("s1", "s2", "s3"):
        shared = rng.normal(0.0, 1.0, seeds)  # the seed's common random numbers
        for arm, mean in (("best", 0.5), ("mid", 3.0), ("close", 3.1)):
            final[(arm, "sync", scenario)] = mean + 4.0 + shared + rng.normal(0.0, 0.5, seeds)
    return benchmark(final, seeds=seeds)


def test_rank_table_intervals(rank_case):
    table = ranking.rank_table(rank_case, "sync", n_boot=400)
    assert list(table["arm"]) == ["best", "mid", "close"]
    assert ((table["rank_low"] <= table["rank"]) & (table["rank"] <= table["rank_high"])).all()
    best = table.set_index("arm").loc["best"]
    assert (best["rank"], best["rank_low"], best["rank_high"]) == (1.0, 1.0, 1.0)
    assert table["rank"].sum() == pytest.approx(6.0)  # 1 + 2 + 3 in every scenario
    assert (table["n_scenarios"] == 3).all() and (table["n_seeds"] == 40).all()
    again = ranking.rank_table(rank_case, "sync", n_boot=400)
    pd.testing.assert_frame_equal(table, again)  # fixed bootstrap seed


def test_rank_table_ties_and_all_modes(rank_case):
    best = rank_case["elo_loss"].sel(optimizer=["best"])
    twins = xr.concat([best, best], dim="optimizer").assign_coords(optimizer=["u", "v"])
    # a second batch mode where v is 1 Elo worse everywhere
    worse = twins + xr.DataArray([0.0, 1.0], dims="optimizer", coords={"optimizer": ["u", "v"]})
    modes = xr.concat([twins, worse.assign_coords(batch_mode=["async"])], dim="batch_mode")
    table = ranking.rank_table(xr.Dataset({"elo_loss": modes}), n_boot=50)
    assert list(table["batch_mode"]) == ["sync", "sync", "async", "async"]
    np.testing.assert_allclose(table["rank"], [1.5, 1.5, 1.0, 2.0])
    np.testing.assert_allclose(table["rank_low"], [1.5, 1.5, 1.0, 2.0])
    assert list(table["arm"][2:]) == ["u", "v"]
    text = ranking.rank_markdown(table)
    assert "## sync" in text and "## async" in text and "| u | 1.50 | [1.50, 1.50] |" in text
    with pytest.raises(ValueError):
        ranking.rank_table(rank_case, "nope")


# ------------------------------------------------------------------ seeds_needed


def simulated_power(n: int, delta: float, sd: float, reps: int = 4000, seed: int = 11) -> float:
    """Share of simulated paired samples of size n whose two-sided t-test rejects at 5%."""
    rng = np.random.default_rng(seed)
    d = rng.normal(delta, sd, size=(reps, n))
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    return float(np.mean(np.abs(t) > sps.t.ppf(0.975, n - 1)))


def test_seeds_needed_against_monte_carlo():
    observed = np.random.default_rng(3).normal(0.2, 1.0, size=300)
    sd = float(observed.std(ddof=1))
    n = stats.seeds_needed(observed, delta=0.5, power=0.8, alpha=0.05)
    normal = ((sps.norm.ppf(0.975) + sps.norm.ppf(0.8)) * sd / 0.5) ** 2
    assert normal <= n <= normal + 3  # the t-test needs a seed or two more
    assert simulated_power(n, 0.5, sd) >= 0.75
    assert simulated_power(n // 2, 0.5, sd) < 0.6
    assert stats.paired_t_power(n, 0.5, sd) >= 0.8 > stats.paired_t_power(n - 1, 0.5, sd)


def test_seeds_needed_edge_cases():
    assert ranking.seeds_needed([0.3, 0.3, 0.3]) == 2
    with pytest.raises(ValueError):
        stats.seeds_needed([1.0])
    d = np.random.default_rng(0).normal(0.0, 1.0, 50)
    assert stats.seeds_needed(d, delta=0.05) > stats.seeds_needed(d, delta=0.1)


def test_convergence_table_has_seeds_needed():
    from test_analysis import synthetic_benchmark

    table = tables.convergence_table(
        synthetic_benchmark(), baseline="spsa", targets=[0.5], n_boot=20
    ).set_index("optimizer")
    assert math.isnan(table.loc["spsa", "seeds_needed"])
    # per-seed differences of other against spsa: 1, 0.5, 1, 0.1
    assert table.loc["other", "seeds_needed"] == stats.seeds_needed([1, 0.5, 1, 0.1], 0.05)
    text = tables.convergence_markdown(table.reset_index(), baseline="spsa", targets=[0.5])
    assert "seeds for 0.05 Elo" in text and "noncentral t" in text


# ------------------------------------------------------------------ figures


def test_ranking_figures_draw(tmp_path, rank_case):
    from spsa_bench.analysis import figures

    drawn = {
        "profile": ranking.profile_figure(
            ranking.performance_profile(profile_case(), np.geomspace(1, 10, 20))
        ),
        "ecdf": ranking.aggregated_ecdf_figure(
            ranking.aggregated_ecdf(rank_case.assign_coords(pairs=[0, 100]), [0.5])
        ),
    }
    for name, fig in drawn.items():
        assert len(fig.axes[0].get_lines()) == 3
        figures.save(fig, tmp_path / f"{name}.png", tmp_path / f"{name}.svg")
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
