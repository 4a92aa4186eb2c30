"""The studies check their budgets as the main tables do: on small real study runs, a
scenario (or budget) below the predicted need of the grid's reference arm is NOT RANKED
with its need and budget, and gets no safe concurrency; one above the need is read
exactly as without the check."""

import matplotlib

matplotlib.use("Agg")

import math  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from conftest import small_config_dict  # noqa: E402

from spsa_bench.analysis import linear_spsa  # noqa: E402
from spsa_bench.config.loader import resolve  # noqa: E402

#: Above the need of `spsa` on dev-underestimates (about 11,900 pairs), below it on
#: tune-16-stc (about 970,000): computed in the tests, not assumed.
BUDGET = 12_000


def _need(config, scenario, seeds):
    """The baseline's predicted need, from linear_spsa directly."""
    from spsa_bench.engine.simulate import make_problem

    problem = make_problem(config, scenario, list(seeds))
    arm = config.optimizer(config.baseline)
    return linear_spsa.predicted_need(arm, problem, linear_spsa.linearise(arm, problem))


def _unchecked(ds):
    """The same dataset without its recorded configuration: the check cannot run."""
    plain = ds.copy()
    plain.attrs = {k: v for k, v in ds.attrs.items() if k != "config"}
    return plain


@pytest.fixture(scope="module")
def workers_run():
    from spsa_bench.config.sections.workers import parse
    from spsa_bench.studies.workers import run_workers_study

    raw = small_config_dict(num_pairs=BUDGET)
    raw["workers_study"]["workers"] = [1, 10]
    raw["workers_study"]["scenarios"] = ["dev-underestimates", "tune-16-stc"]
    raw["workers_study"]["arms"] = {"spsa": None}
    config = resolve(raw)
    return config, run_workers_study(config, parse(config), range(3))


def test_the_needs_straddle_the_budget(workers_run):
    config, _ = workers_run
    assert _need(config, "dev-underestimates", range(3)) <= BUDGET
    assert _need(config, "tune-16-stc", range(3)) > BUDGET


def test_workers_below_need_is_not_ranked_with_need_and_budget(workers_run):
    from spsa_bench.analysis.workers import workers_table

    config, ds = workers_run
    table = workers_table(ds)
    need = _need(config, "tune-16-stc", range(3))
    below = table[table["scenario"] == "tune-16-stc"]
    assert not below["ranked"].any()
    np.testing.assert_allclose(below["need_pairs"], need)
    np.testing.assert_allclose(below["budget_fraction"], BUDGET / need)
    shortfall = below["shortfall"].iloc[0]
    assert shortfall.startswith("budget below need: ")
    assert f"{BUDGET:,} pairs" in shortfall and f"{need:,.0f} pairs `spsa` needs" in shortfall
    above = table[table["scenario"] == "dev-underestimates"]
    assert above["ranked"].all() and (above["shortfall"] == "").all()


def test_workers_below_need_gets_no_safe_concurrency_above_is_unchanged(workers_run, tmp_path):
    from spsa_bench.analysis.workers import NOT_RANKED, safe_concurrency, write_report

    _, ds = workers_run
    safe = safe_concurrency(ds).set_index("scenario")
    plain = safe_concurrency(_unchecked(ds)).set_index("scenario")
    assert pd.isna(safe.loc["tune-16-stc", "safe_workers"])
    assert safe.loc["tune-16-stc", "safe"] == NOT_RANKED
    assert math.isnan(safe.loc["tune-16-stc", "first_failing"])
    # without the check that scenario would have been given a safe concurrency
    assert not pd.isna(plain.loc["tune-16-stc", "safe_workers"])
    shared = ["safe_workers", "safe", "first_failing", "within_above", "loss_at_max"]
    pd.testing.assert_series_equal(
        safe.loc["dev-underestimates", shared], plain.loc["dev-underestimates", shared]
    )
    paths = [tmp_path / name for name in ("w.nc", "w.csv", "w.md", "w.png", "w.svg", "s.csv")]
    write_report(ds, paths)
    written = pd.read_csv(paths[5]).set_index("scenario")
    assert pd.isna(written.loc["tune-16-stc", "safe_workers"])
    assert (
        written.loc["dev-underestimates", "safe_workers"]
        == plain.loc["dev-underestimates", "safe_workers"]
    )
    markdown = paths[2].read_text()
    assert (
        "`tune-16-stc` at 12,000 pairs: **NOT RANKED**, budget below need: the budget, "
        "12,000 pairs" in markdown
    )
    assert "no safe concurrency is read from it" in markdown
    assert "`dev-underestimates` at 12,000 pairs: ranked" in markdown


def test_cend_below_need_is_not_ranked_and_the_losses_are_unchanged():
    from spsa_bench.analysis.cend import cend_markdown, cend_table
    from spsa_bench.config.sections.cend import parse
    from spsa_bench.studies.cend import run_cend_study

    raw = small_config_dict(num_pairs=300)
    raw["cend_study"]["c_end"] = [1, 2]
    config = resolve(raw)
    ds = run_cend_study(config, parse(config), range(3))
    scenario = ds.attrs["scenario"]
    need = _need(config, scenario, range(3))
    assert need > 300
    table = cend_table(ds)
    assert not table["ranked"].any()
    np.testing.assert_allclose(table["need_pairs"], need)
    assert table["shortfall"].str.startswith("budget below need: the budget, 300 pairs").all()
    plain = cend_table(_unchecked(ds))
    assert plain["ranked"].all()
    pd.testing.assert_frame_equal(
        table.drop(columns=["need_pairs", "budget_fraction", "ranked", "shortfall"]),
        plain.drop(columns=["need_pairs", "budget_fraction", "ranked", "shortfall"]),
    )
    text = cend_markdown(table, ds)
    assert f"`{scenario}` at 300 pairs: **NOT RANKED**, budget below need" in text
    assert "no winner is read from it" in text


def _budget_run(scenario: str, arms: dict):
    """``(config, dataset)`` of a budget study at 2,000 and :data:`BUDGET` pairs on one
    scenario, 3 seeds."""
    from spsa_bench.config.sections.budget import parse
    from spsa_bench.studies.budget import run_budget_study

    raw = small_config_dict(num_pairs=BUDGET)
    raw["budget_study"] = {
        "num_pairs": [2_000, BUDGET],
        "batch_mode": "sync",
        "scenarios": [scenario],
        "tuning_seeds": {"first": 100, "count": 2},
        "arms": arms,
    }
    config = resolve(raw)
    return config, run_budget_study(config, parse(config), range(3))


def test_budget_study_marks_only_the_budgets_below_need():
    from spsa_bench.analysis.budget import budget_markdown, budget_table

    config, ds = _budget_run("dev-underestimates", {"spsa": None, "spsa-cwd": None})
    need = _need(config, "dev-underestimates", range(3))
    table = budget_table(ds)
    small, large = table[table["budget"] == 2_000], table[table["budget"] == BUDGET]
    assert not small["ranked"].any() and large["ranked"].all()
    assert small["shortfall"].str.contains(f"{need:,.0f} pairs `spsa` needs").all()
    np.testing.assert_allclose(small["budget_fraction"], 2_000 / need)
    plain = budget_table(_unchecked(ds))
    checked = ["need_pairs", "budget_fraction", "ranked", "shortfall"]
    pd.testing.assert_frame_equal(table.drop(columns=checked), plain.drop(columns=checked))
    text = budget_markdown(table, ds)
    assert "| dev-underestimates | 2,000 (NOT RANKED) |" in text
    assert f"| dev-underestimates | {BUDGET:,} |" in text


def test_the_budget_studys_need_is_the_reference_arms_at_each_budget():
    """A decaying arm's gains are laid out over its budget, so its need depends on the
    budget it runs at: each budget's row carries the need at that budget (read at the
    study's first budget, tune-16-stc's need once differed from the main tables')."""
    from spsa_bench.analysis.budget import budget_table
    from spsa_bench.analysis.relaxation import config_at_budget

    config, ds = _budget_run("tune-16-stc", {"spsa": None})
    table = budget_table(ds)
    needs = {
        budget: _need(config_at_budget(config, budget), "tune-16-stc", range(3))
        for budget in (2_000, BUDGET)
    }
    assert needs[2_000] != needs[BUDGET]  # the case this is about
    assert needs[BUDGET] == _need(config, "tune-16-stc", range(3))  # the grid's, at its budget
    for budget, rows in table.groupby("budget"):
        np.testing.assert_array_equal(rows["need_pairs"], needs[int(budget)])
