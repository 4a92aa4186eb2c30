"""The study figures (c_end, budget, workers) drawn from real, small study runs, panel
by panel: every arm's line holds a point per c_end, budget or pool size, with the
value of the study's own table; a blank or short panel fails."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import small_config_dict  # noqa: E402

from spsa_bench.config.loader import resolve  # noqa: E402


def _lines_with_markers(ax) -> list:
    """The data lines of a panel: drawn with a line and a marker at every point (not
    the reference lines, nor the open circles marking a setting at a sweep's edge)."""
    return [
        line
        for line in ax.get_lines()
        if line.get_marker() not in ("None", None, "") and line.get_linestyle() != "None"
    ]


def test_cend_figure_draws_every_arm_at_every_c_end():
    from spsa_bench.analysis.cend import cend_figure, cend_table
    from spsa_bench.config.sections.cend import parse
    from spsa_bench.studies.cend import run_cend_study

    raw = small_config_dict(num_pairs=300)
    raw["cend_study"]["c_end"] = [0.5, 1, 2]
    config = resolve(raw)
    ds = run_cend_study(config, parse(config), range(3))
    table = cend_table(ds)
    arms = [str(a) for a in ds["arm"].values]
    fig = cend_figure(ds)
    left, right = fig.axes[:2]
    assert len(_lines_with_markers(left)) == len(arms)
    assert len(_lines_with_markers(right)) == len(arms) - 1  # no difference of the baseline
    for line, arm in zip(_lines_with_markers(left), arms, strict=True):
        rows = table[table["arm"] == arm]
        np.testing.assert_allclose(line.get_xdata(), [0.5, 1, 2])
        np.testing.assert_allclose(line.get_ydata(), rows["loss_mean"])
        assert np.isfinite(line.get_ydata()).all()
    # the loss bands stop at 0 (a loss is never negative), though 3 seeds' intervals do not
    bands = [p.get_paths()[0].vertices[:, 1] for p in left.collections]
    assert len(bands) == len(arms) and min(float(b.min()) for b in bands) >= 0.0
    assert (table["loss_low"] < 0).any()
    plt.close(fig)


def test_budget_figure_draws_every_arm_at_every_budget_in_every_scenario():
    from spsa_bench.analysis.budget import budget_figure, budget_table
    from spsa_bench.config.sections.budget import parse
    from spsa_bench.studies.budget import run_budget_study

    raw = small_config_dict(num_pairs=800)
    raw["budget_study"] = {
        "num_pairs": [200, 400],
        "batch_mode": "sync",
        "scenarios": ["mixed", "tune-16-stc"],
        "tuning_seeds": {"first": 100, "count": 3},
        "baseline": "spsa-decay",
        "arms": {"spsa": None, "spsa-decay": {"kind": "spsa", "r_scale": [1, 4]}},
    }
    config = resolve(raw)
    ds = run_budget_study(config, parse(config), range(3))
    table = budget_table(ds)
    fig = budget_figure(ds)
    scenarios = [str(s) for s in ds["scenario"].values]
    tops = fig.axes[: len(scenarios)]
    for ax, scenario in zip(tops, scenarios, strict=True):
        assert ax.get_title() == scenario
        rows = table[table["scenario"] == scenario]
        # one loss line per (arm, tuning) row group, each a point per budget
        groups = rows.groupby(["arm", "tuning"], sort=False)
        lines = [line for line in _lines_with_markers(ax) if len(line.get_xdata()) == 2]
        assert len(lines) == groups.ngroups
        drawn = sorted(tuple(np.round(line.get_ydata(), 12)) for line in lines)
        expected = sorted(tuple(np.round(g["loss_mean"].to_numpy(), 12)) for _, g in groups)
        assert drawn == expected
        # the means set the log scale, not a band reaching below 0 (3 seeds: it does)
        assert ax.get_ylim()[0] == pytest.approx(rows["loss_mean"].min() / 2)
    assert (table["loss_low"] < 0).any()  # the case the floor is for
    plt.close(fig)


def test_workers_figure_draws_every_arm_at_every_pool_size():
    from spsa_bench.analysis.workers import workers_figure, workers_table
    from spsa_bench.config.sections.workers import parse
    from spsa_bench.studies.workers import run_workers_study

    raw = small_config_dict(num_pairs=300)
    raw["workers_study"]["workers"] = [1, 10]
    raw["workers_study"]["scenarios"] = ["mixed"]
    raw["workers_study"]["arms"] = {
        "spsa": None,
        "spsa-delay": {"kind": "spsa", "delay_adaptive": 1000},
    }
    config = resolve(raw)
    ds = run_workers_study(config, parse(config), range(3))
    table = workers_table(ds)
    fig = workers_figure(ds)
    top, bottom = fig.axes[0], fig.axes[1]
    arms = [str(a) for a in ds["arm"].values]
    assert len(_lines_with_markers(top)) == len(arms) == len(_lines_with_markers(bottom))
    for line, arm in zip(_lines_with_markers(top), arms, strict=True):
        rows = table[table["arm"] == arm]
        np.testing.assert_allclose(line.get_xdata(), [1, 10])
        np.testing.assert_allclose(line.get_ydata(), rows["loss_mean"])
    plt.close(fig)


def test_plan_figure_draws_every_role_in_both_panels():
    from spsa_bench.plan.figure import plan_figure
    from spsa_bench.plan.run import run_plan
    from spsa_bench.plan.spec import PlanSpec
    from spsa_bench.plan.summary import final_gain, roles

    block = "a,100,0,200,10,0.0020\nb,50,0,100,5,0.0020\nc,20,0,40,2,0.0020\n"
    spec = PlanSpec(block_text=block, games=4000, seeds=8, c_scales=(0.5, 1.0),
                    r_scales=(1.0, 2.0), games_scales=(1.0,))  # fmt: skip
    ds = run_plan(spec)
    shown = roles(ds)
    fig = plan_figure(ds)
    left, right = fig.axes[:2]
    stairs = [p for p in left.patches if type(p).__name__ == "StepPatch"]
    assert len(stairs) == len(shown)  # a histogram of the final gain per role
    for patch, run in zip(stairs, shown.values(), strict=True):
        counts = patch.get_data().values
        assert counts.sum() == pytest.approx(1.0)  # shares of all the instances
        assert final_gain(ds, run).size == ds.sizes["seed"]
    checkpoints = ds["games_played"].sel(run=shown["given"]).size
    trajectories = [line for line in right.get_lines() if len(line.get_xdata()) == checkpoints]
    assert len(trajectories) == len(shown)
    for line, run in zip(trajectories, shown.values(), strict=True):
        expected = ds["gain"].sel(run=run).values.mean(axis=0)
        np.testing.assert_allclose(line.get_ydata(), expected)
    # the title says what the prior is, as plan.md's prior section does
    assert "(an assumption)" in fig._suptitle.get_text()
    plt.close(fig)
    ds.attrs["truth_prior_source"] = "calibrated: truth prior calibrated to 21 real tunes"
    fig = plan_figure(ds)
    title = fig._suptitle.get_text()
    assert "calibrated to real tunes: a fit, not a fact" in title and "assumption" not in title
    plt.close(fig)
