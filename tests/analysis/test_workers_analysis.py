"""The workers study's table, safe concurrency, markdown and figure, on synthetic datasets."""

import numpy as np
import pytest
import xarray as xr
from scipy import stats as sps

from spsa_bench.analysis.stats import holm
from spsa_bench.analysis.workers import (
    safe_concurrency,
    workers_figure,
    workers_markdown,
    workers_table,
)

WORKERS = (1, 10, 50, 200)
MARGIN = 5.0
ASSUMPTION = "the truth is drawn per seed from a made-up prior for this test"


def study(offsets, *, scenarios=("tune-a",), seeds=8, scale=1.0, seed=20260101):
    """A synthetic workers study: per arm (the keys of ``offsets``) the sync loss per
    seed and, per worker count, that loss plus the arm's offset plus small noise."""
    rng = np.random.default_rng(seed)
    arms = list(offsets)
    shape = (len(scenarios), len(arms), seeds)
    sync = scale * rng.uniform(1.0, 3.0, size=shape)
    offset = np.array([offsets[a] for a in arms], dtype=float)  # (arm, workers)
    noise = rng.normal(0.0, 0.2, size=(len(scenarios), len(arms), len(WORKERS), seeds))
    final = sync[:, :, None, :] + offset[None, :, :, None] + noise
    workers_seed = (len(WORKERS), seeds)
    return xr.Dataset(
        {
            "final_elo_loss": (("scenario", "arm", "workers", "seed"), final),
            "sync_final_elo_loss": (("scenario", "arm", "seed"), sync),
            "start_elo_gap": (
                ("scenario", "seed"),
                rng.uniform(20.0, 40.0, (len(scenarios), seeds)),
            ),
            "staleness_p50": (("workers", "seed"), rng.uniform(0, 100, workers_seed)),
            "in_flight_mean_fraction": (("workers", "seed"), rng.uniform(0, 0.1, workers_seed)),
            "in_flight_max_fraction": (("workers", "seed"), rng.uniform(0.1, 0.2, workers_seed)),
        },
        coords={
            "scenario": list(scenarios),
            "arm": arms,
            "workers": list(WORKERS),
            "seed": np.arange(seeds),
            "kind": ("arm", ["spsa"] * len(arms)),
        },
        attrs={
            "batch_mode": "fishtest-async",
            "reference": "sync",
            "margin": MARGIN,
            "num_pairs": 10_000,
            "level": 0.95,
            "assumption": ASSUMPTION,
            "title": "spsa-bench workers study (synthetic)",
        },
    )


RANDOM = {"spsa": [0.5, 1.0, 3.0, 9.0], "spsa-fishtest": [-0.5, 0.0, 2.0, 40.0]}
PATTERNS = {
    "fails-at-200": [0.0, 0.0, 0.0, 20.0],
    "fails-at-10": [0.0, 20.0, 0.0, 20.0],
    "fails-at-1": [20.0, 0.0, 0.0, 0.0],
    "never-fails": [0.0, 0.0, 0.0, 0.0],
}


def test_table_difference_is_the_per_seed_mean_difference():
    ds = study(RANDOM, scenarios=("tune-a", "tune-b"))
    # a missing sync run: the seed drops out of the paired difference only
    ds["sync_final_elo_loss"][1, 0, 3] = np.nan
    table = workers_table(ds)
    assert len(table) == 2 * 2 * len(WORKERS)
    assert list(table["workers"].iloc[: len(WORKERS)]) == list(WORKERS)
    for scenario in ("tune-a", "tune-b"):
        for workers in WORKERS:
            row = table[
                (table["scenario"] == scenario)
                & (table["arm"] == "spsa")
                & (table["workers"] == workers)
            ].iloc[0]
            final = ds["final_elo_loss"].sel(scenario=scenario, arm="spsa", workers=workers).values
            sync = ds["sync_final_elo_loss"].sel(scenario=scenario, arm="spsa").values
            difference = (final - sync)[np.isfinite(sync)]
            assert row["diff_mean"] == pytest.approx(difference.mean(), rel=1e-12)
            half = sps.t.ppf(0.975, difference.size - 1) * sps.sem(difference)
            assert row["diff_high"] == pytest.approx(difference.mean() + half, rel=1e-9)
            assert row["n_paired"] == difference.size and row["n_seeds"] == final.size
            assert row["loss_mean"] == pytest.approx(final.mean(), rel=1e-12)
            assert row["within_margin"] == (row["diff_high"] <= MARGIN)
            assert row["staleness_p50"] == pytest.approx(
                float(ds["staleness_p50"].sel(workers=workers).mean())
            )
    np.testing.assert_allclose(table["p_holm"], holm(table["p"].to_numpy()))
    assert (table["p_holm"] >= table["p"]).all()


def test_safe_concurrency_reads_the_first_failure():
    ds = study(PATTERNS)
    table = workers_table(ds)
    expected_within = {arm: [o == 0.0 for o in offsets] for arm, offsets in PATTERNS.items()}
    for arm, within in expected_within.items():
        assert list(table[table["arm"] == arm]["within_margin"]) == within
    safe = safe_concurrency(ds).set_index("arm")
    assert safe.loc["fails-at-200", "safe_workers"] == 50
    assert safe.loc["fails-at-200", "safe"] == "50"
    assert safe.loc["fails-at-200", "first_failing"] == 200
    # monotone: within at 50 again does not extend the range past the failure at 10
    assert safe.loc["fails-at-10", "safe_workers"] == 1
    assert safe.loc["fails-at-10", "within_above"] == "50"
    assert safe.loc["fails-at-1", "safe_workers"] == 0
    assert safe.loc["fails-at-1", "safe"] == "none"
    assert safe.loc["never-fails", "safe_workers"] == 200
    assert safe.loc["never-fails", "safe"] == "200 (largest tested)"
    assert np.isnan(safe.loc["never-fails", "first_failing"])
    sync = ds["sync_final_elo_loss"].sel(arm="fails-at-200").values
    assert safe.loc["fails-at-200", "sync_mean"] == pytest.approx(sync.mean())
    last = ds["final_elo_loss"].sel(arm="fails-at-200", workers=200).values
    assert safe.loc["fails-at-200", "loss_at_max"] == pytest.approx(last.mean())


def test_a_pool_without_an_interval_is_not_within_the_margin():
    ds = study(PATTERNS, seeds=1)
    assert not workers_table(ds)["within_margin"].any()
    assert (safe_concurrency(ds)["safe"] == "none").all()


def test_markdown_states_margin_rule_and_assumption_with_safe_concurrency_first():
    ds = study(PATTERNS, scenarios=("tune-a", "tune-b"))
    table = workers_table(ds)
    text = workers_markdown(table, safe_concurrency(ds, table), ds)
    assert f"{MARGIN:g} Elo" in text and ASSUMPTION in text
    assert text.index("## Safe concurrency") < text.index("## Every worker count")
    assert "| arm | tune-a | tune-b |" in text
    assert "| fails-at-1 | none | none |" in text
    assert "synchronous tune of the same games" in text


@pytest.mark.parametrize("scenarios", [("tune-a",), ("tune-a", "tune-b")])
def test_figure_draws_a_column_per_scenario(tmp_path, scenarios):
    from spsa_bench.analysis.figures import save

    fig = workers_figure(study(RANDOM, scenarios=scenarios))
    assert len(fig.axes) == 2 * len(scenarios)
    dotted = [line for line in fig.axes[0].get_lines() if line.get_linestyle() == ":"]
    assert len(dotted) == len(RANDOM)  # one sync reference per arm
    bottom = fig.axes[-1]
    assert bottom.get_xscale() == "log"
    assert [t.get_text() for t in bottom.get_xticklabels()] == [str(w) for w in WORKERS]
    save(fig, tmp_path / "workers.png", tmp_path / "workers.svg")
    assert (tmp_path / "workers.png").stat().st_size > 0


def test_figure_uses_symlog_when_losses_span_decades():
    fig = workers_figure(study({"spsa": [0.0, 0.5, 1.0, 2.0]}))
    assert fig.axes[0].get_yscale() == "linear" and fig.axes[1].get_yscale() == "linear"
    assert "linear scale" in fig.axes[0].get_ylabel()
    wide = study({"spsa": [0.0, 10.0, 100.0, 1000.0]}, scale=0.3)
    fig = workers_figure(wide)
    assert fig.axes[0].get_yscale() == "symlog" and "symlog scale" in fig.axes[0].get_ylabel()
    assert fig.axes[1].get_yscale() == "symlog"
