"""An arm identical to another (a sweep's hand-set member, e.g. the default grid's
``spsa-sweep-r_scale-1`` = ``spsa``) is computed with every arm and shown once."""

import numpy as np
import pandas as pd
import pytest
from conftest import DEFAULT_CONFIG, small_config_dict

from spsa_bench.analysis import ranking, tables
from spsa_bench.config.loader import read_yaml, resolve
from spsa_bench.engine.simulate import simulate
from spsa_bench.results.atomic import write_atomic
from spsa_bench.results.combine import combine_benchmark, open_benchmark, write_benchmark

ARMS = ("spsa", "spsa-sweep-r_scale-0p3", "spsa-sweep-r_scale-1", "spsa-sweep-r_scale-3")


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory):
    """The default config's ``spsa`` and its ``spsa-sweep`` (three r_scale values, 1 the
    hand-set one), two scenarios, sync, 6 seeds: real runs, combined."""
    raw = small_config_dict(num_pairs=600)
    for study in ("cend_study", "workers_study", "budget_study"):
        raw.pop(study, None)
    default = read_yaml(DEFAULT_CONFIG)["optimizers"]
    raw["optimizers"] = {
        "spsa": default["spsa"],
        "spsa-sweep": {**default["spsa-sweep"], "r_scale": [0.3, 1, 3]},
    }
    raw["seeds"] = {"first": 0, "count": 6, "per_job": 6}
    config = resolve(raw)
    assert list(config.optimizers) == list(ARMS)
    tmp = tmp_path_factory.mktemp("duplicates")
    paths = [
        write_atomic(
            simulate(config, optimizer=arm, batch_mode="sync", scenario=scenario, seeds=range(6)),
            tmp / f"{arm}-{scenario}.nc",
        )
        for arm in ARMS
        for scenario in ("calibrated", "mixed")
    ]
    config_json = config.to_json()
    path = write_benchmark(combine_benchmark(paths, config_json=config_json), tmp / "b.nc")
    ds = open_benchmark(path, lazy=False)
    yield ds
    ds.close()


def test_the_hand_set_member_repeats_the_configured_arm(benchmark):
    loss = benchmark["elo_loss"]
    # the premise: same results bit for bit, and the other sweep members differ
    assert np.array_equal(loss.sel(optimizer="spsa"), loss.sel(optimizer="spsa-sweep-r_scale-1"))
    assert not np.array_equal(
        loss.sel(optimizer="spsa"), loss.sel(optimizer="spsa-sweep-r_scale-3")
    )
    assert tables.duplicate_arms(benchmark, "spsa") == {"spsa-sweep-r_scale-1": "spsa"}
    # the configuration's baseline is the default (the config attribute records it)
    assert tables.duplicate_arms(benchmark) == {"spsa-sweep-r_scale-1": "spsa"}
    # the baseline is the arm a group keeps, whatever the order
    assert tables.duplicate_arms(benchmark, "spsa-sweep-r_scale-1") == {
        "spsa": "spsa-sweep-r_scale-1"
    }


def test_equal_hyperparameters_with_different_results_are_not_repeats(benchmark):
    changed = benchmark.copy(deep=True)
    changed["elo_loss"].loc[{"optimizer": "spsa-sweep-r_scale-1", "seed": 3}] += 1e-9
    assert tables.duplicate_arms(changed, "spsa") == {}
    # equal results but another hyperparameter coordinate: not a repeat either
    other = benchmark.copy(deep=True)
    r_scale = other["r_scale"].values.copy()
    r_scale[list(other["optimizer"].values).index("spsa-sweep-r_scale-1")] = 1.5
    other = other.assign_coords(r_scale=("optimizer", r_scale))
    assert tables.duplicate_arms(other, "spsa") == {}
    # without kinds no arm can be called a repeat
    assert tables.duplicate_arms(benchmark.drop_vars("kind"), "spsa") == {}


def test_convergence_table_shown_once_keeps_every_other_number(benchmark):
    targets = [0.5, 0.8]
    full = tables.convergence_table(benchmark, baseline="spsa", targets=targets, n_boot=50)
    duplicates = tables.duplicate_arms(benchmark, "spsa")
    shown = tables.shown_once(full, duplicates)
    assert set(full["optimizer"]) == set(ARMS)
    assert set(shown["optimizer"]) == set(ARMS) - {"spsa-sweep-r_scale-1"}
    expected = full[full["optimizer"] != "spsa-sweep-r_scale-1"].reset_index(drop=True)
    pd.testing.assert_frame_equal(shown, expected)
    # Holm's family still counts the repeat: the table's p_holm are the full family's
    assert np.isfinite(full["p_value"]).sum() == 6  # 3 arms x 2 scenarios against spsa
    text = tables.convergence_markdown(
        full, baseline="spsa", targets=targets, duplicates=duplicates
    )
    assert "across all 6 comparisons" in text
    assert "`spsa-sweep-r_scale-1` is `spsa`" in text
    assert "| spsa-sweep-r_scale-1 " not in text
    assert "| spsa-sweep-r_scale-3 " in text
    plain = tables.convergence_markdown(full, baseline="spsa", targets=targets)
    assert "| spsa-sweep-r_scale-1 " in plain and "Shown once" not in plain


def test_ranks_and_profile_shown_once(benchmark):
    final = benchmark.isel(pairs=[-1])
    duplicates = tables.duplicate_arms(final, "spsa")
    assert duplicates == {"spsa-sweep-r_scale-1": "spsa"}
    ranks = ranking.rank_table(final, n_boot=50)
    shown = tables.shown_once(ranks, duplicates, "arm")
    assert list(shown["arm"]) == [a for a in ranks["arm"] if a != "spsa-sweep-r_scale-1"]
    kept = ranks[ranks["arm"] != "spsa-sweep-r_scale-1"].reset_index(drop=True)
    pd.testing.assert_frame_equal(shown, kept)
    # counted, the twin ties with spsa and pushes every arm it beats down one rank; the
    # workflow ranks the distinct arms: ranks 1..n over the n arms shown
    tied = ranks.set_index("arm")["rank"]
    assert tied["spsa"] == tied["spsa-sweep-r_scale-1"]
    distinct = ranking.rank_table(tables.without_duplicates(final, duplicates), n_boot=50)
    assert set(distinct["arm"]) == set(shown["arm"])
    n_scen = final.sizes["scenario"]
    for _, one in distinct.groupby("batch_mode"):
        assert one["rank"].sum() * n_scen == pytest.approx(n_scen * len(one) * (len(one) + 1) / 2)
    for _, one in ranks.groupby("batch_mode"):  # with the twin: the sum of 1..n+1
        assert one["rank"].sum() == pytest.approx(len(one) * (len(one) + 1) / 2)
    behind = shown.set_index(["batch_mode", "arm"])["rank"]
    ahead = distinct.set_index(["batch_mode", "arm"])["rank"]
    assert (ahead <= behind).all() and (ahead < behind).any()
    profile = ranking.performance_profile(final, [1.0, 2.0])
    pruned = ranking.performance_profile(tables.without_duplicates(final, duplicates), [1.0, 2.0])
    # each shown arm's profile is the same with or without the repeat (same best arm)
    pd.testing.assert_frame_equal(tables.shown_once(profile, duplicates, "arm"), pruned)
    note = tables.duplicates_note(duplicates, "the ranks count both")
    assert note.startswith("Shown once: `spsa-sweep-r_scale-1` is `spsa`")
    assert tables.duplicates_note({}, "x") == ""
