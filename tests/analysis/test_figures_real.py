"""Every figure drawn from data laid out as the workflow lays it out, panel by panel.

The benchmark is combined from real run files (``simulate`` -> run file ->
``combine_benchmark`` -> ``write_benchmark`` -> ``open_benchmark(lazy=True)``, as the
workflow's figure rules open it), with arms of different kinds, so that the
hyperparameter coordinates are NaN wherever an arm's kind has no such
hyperparameter (as in the default run), and one arm left out of one cell. Each test
counts what every panel holds (lines, points, boxes) against the data it should show;
a blank panel fails.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from conftest import small_config_dict  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402

from spsa_bench import workflow  # noqa: E402
from spsa_bench.analysis import figures  # noqa: E402
from spsa_bench.analysis.tables import convergence_table, hits_to_targets  # noqa: E402
from spsa_bench.config.loader import resolve  # noqa: E402
from spsa_bench.engine.simulate import make_schedule, simulate  # noqa: E402
from spsa_bench.results.atomic import write_atomic  # noqa: E402
from spsa_bench.results.combine import (  # noqa: E402
    combine_benchmark,
    open_benchmark,
    open_schedules,
    write_benchmark,
)
from spsa_bench.results.datasets import schedule_dataset  # noqa: E402

SEEDS = [0, 1, 2]
MODES = ["sync", "async-fixed"]
SCENARIOS = ["calibrated", "mixed"]
#: The arm left out of one cell: its panel shows every other arm and nothing for it.
MISSING = ("adam-lr-0p04", "async-fixed", "mixed")


def _raw() -> dict:
    raw = small_config_dict(num_pairs=400)
    raw["optimizers"] = {
        "spsa": {},
        "spsa-block": {"r_scale": 1.0},
        "sf-sgd": {"lr": 0.01},
        "adam": {"lr": [0.01, 0.04]},  # a sweep: adam-lr-0p01, adam-lr-0p04
    }
    raw["seeds"] = {"first": 0, "count": len(SEEDS), "per_job": len(SEEDS)}
    raw["checkpoints"] = 5
    for study in ("cend_study", "workers_study", "budget_study"):
        raw.pop(study, None)
    raw["batch_modes"] = {mode: raw["batch_modes"][mode] for mode in MODES}
    raw["scenarios"] = {name: raw["scenarios"][name] for name in SCENARIOS}
    return raw


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(config, benchmark opened lazily, schedules) of a small real run."""
    config = resolve(_raw())
    out = tmp_path_factory.mktemp("runs")
    paths = []
    for arm in config.optimizers:
        for mode in MODES:
            for scenario in SCENARIOS:
                if (arm, mode, scenario) == MISSING:
                    continue
                ds = simulate(
                    config, optimizer=arm, batch_mode=mode, scenario=scenario, seeds=SEEDS
                )
                paths.append(write_atomic(ds, out / f"{mode}-{scenario}-{arm}.nc"))
    order = {
        "optimizer": list(config.optimizers),
        "batch_mode": MODES,
        "scenario": SCENARIOS,
    }
    combined = combine_benchmark(paths, order=order, config_json=config.to_json())
    path = write_benchmark(combined, out / "benchmark.nc")
    schedule_paths = []
    for mode in MODES[1:]:
        schedule = make_schedule(config, config.batch_mode(mode), SEEDS)
        dataset = schedule_dataset(schedule, batch_mode=mode, config_json=config.to_json())
        schedule_paths.append(write_atomic(dataset, out / f"schedule-{mode}.nc"))
    ds = open_benchmark(path, ["elo_loss"], lazy=True)
    yield config, ds, open_schedules(schedule_paths, MODES), path
    ds.close()
    plt.close("all")


def _final(path, arm, mode, scenario) -> np.ndarray:
    """The final losses of one cell, read eagerly and independently of the figures."""
    ds = open_benchmark(path, ["elo_loss"], lazy=False)
    return ds["elo_loss"].sel(optimizer=arm, batch_mode=mode, scenario=scenario).values[:, -1]


def test_the_benchmark_is_shaped_like_the_default_runs(run):
    _, ds, _, path = run
    coords = open_benchmark(path, lazy=True)
    # a kind without the hyperparameter: NaN, as for most arms of the default run
    assert np.isnan(coords["lr"].sel(optimizer="spsa")) and np.isnan(
        coords["A"].sel(optimizer="sf-sgd")
    )
    assert not np.isnan(coords["lr"].sel(optimizer="adam-lr-0p04"))
    arm, mode, scenario = MISSING
    assert np.isnan(ds["elo_loss"].sel(optimizer=arm, batch_mode=mode, scenario=scenario)).all()
    coords.close()


def test_final_loss_draws_every_seed_of_every_arm_in_every_panel(run):
    config, ds, _, path = run
    arms = list(config.optimizers)
    fig = figures.final_loss(ds)
    cells = [(m, s) for m in MODES for s in SCENARIOS]
    assert [ax.get_title() for ax in fig.axes] == [f"{m} · {s}" for m, s in cells]
    for ax, (mode, scenario) in zip(fig.axes, cells, strict=True):
        present = [a for a in arms if (a, mode, scenario) != MISSING]
        points = [c for c in ax.collections if isinstance(c, PathCollection)]
        assert len(points) == len(present), ax.get_title()
        assert len(ax.patches) == len(present)  # one box per arm with data
        for dots, arm in zip(points, present, strict=True):
            expected = np.clip(_final(path, arm, mode, scenario), figures.FINAL_LOSS_FLOOR, None)
            x, y = dots.get_offsets().T
            np.testing.assert_array_equal(np.sort(y), np.sort(expected))
            assert np.all(np.abs(x - arms.index(arm)) <= 0.25)
        assert [t.get_text() for t in ax.get_xticklabels()] == arms
    plt.close(fig)


def test_final_loss_wraps_into_rows_no_wider_than_the_report():
    # the default run: 12 arms (one column at a time) x 3 batch modes x 5 scenarios
    width = figures.FINAL_LOSS_WIDTH_PER_ARM * 12 + 1.2
    fig, axes = figures.wrapped_grid(15, width=width, height=3.6)
    columns = int(figures.MAX_GRID_WIDTH // width)
    assert columns >= 2 and len(fig.axes) == len(axes) == 15
    assert fig.get_figwidth() == pytest.approx(columns * width)
    assert fig.get_figwidth() <= figures.MAX_GRID_WIDTH
    assert fig.get_figheight() == pytest.approx(3.6 * -(-15 // columns))
    assert [ax.get_subplotspec().colspan.start for ax in axes] == [i % columns for i in range(15)]
    plt.close(fig)


def test_convergence_draws_each_arms_median_in_every_panel(run):
    config, ds, _, path = run
    fig = figures.convergence(ds)
    cells = [(m, s) for m in MODES for s in SCENARIOS]
    assert len(fig.axes) == len(cells)
    for ax, (mode, scenario) in zip(fig.axes, cells, strict=True):
        present = [a for a in config.optimizers if (a, mode, scenario) != MISSING]
        lines = ax.get_lines()
        assert len(lines) == len(present) and len(ax.collections) == len(present)  # + bands
        full = open_benchmark(path, ["elo_loss"], lazy=False)["elo_loss"]
        for line, arm in zip(lines, present, strict=True):
            cell = full.sel(optimizer=arm, batch_mode=mode, scenario=scenario).values
            np.testing.assert_allclose(line.get_ydata(), np.median(cell, axis=0))
    plt.close(fig)


def test_ecdf_has_a_step_per_arm_with_a_point_per_reached_target(run):
    config, ds, _, _ = run
    targets = [0.5, 0.8]
    fig = figures.ecdf_pairs_to_target(ds, targets)
    hits = hits_to_targets(ds, targets)
    assert len(fig.axes) == len(MODES)
    for ax, mode in zip(fig.axes, MODES, strict=True):
        lines = ax.get_lines()
        assert len(lines) == len(config.optimizers)
        for line, arm in zip(lines, config.optimizers, strict=True):
            h = hits.sel(optimizer=arm, batch_mode=mode).values.ravel()
            h = h[~np.isnan(h)]
            reached = int(np.isfinite(h).sum())
            assert len(line.get_xdata()) == reached + 2  # the start, each hit, the budget
            assert line.get_ydata()[-1] == pytest.approx(reached / h.size)
    plt.close(fig)


def test_paired_difference_colours_every_arm_and_cell_with_data(run):
    config, ds, _, _ = run
    table = convergence_table(
        open_benchmark(run[3], lazy=False), baseline="spsa", targets=[0.5], n_boot=50
    )
    fig = figures.paired_difference(table, "spsa", list(config.optimizers))
    mesh = fig.axes[0].collections[0]
    values = np.ma.filled(mesh.get_array(), np.nan).reshape(4, len(MODES) * len(SCENARIOS))
    missing = np.isnan(values)
    assert missing.sum() == 1  # only the arm left out of one cell
    assert missing[list(config.optimizers).index(MISSING[0]) - 1, 1 * len(SCENARIOS) + 1]
    annotated = [t for t in fig.axes[0].texts if t.get_text()]
    assert len(annotated) == values.size - 1
    plt.close(fig)


def test_async_figures_show_every_job_and_worker(run):
    _, _, schedules, _ = run
    fig = figures.async_staleness(schedules)
    hist, boxes = fig.axes[0], fig.axes[1]
    assert len(hist.patches) == len(schedules)  # a step histogram per asynchronous mode
    assert len(boxes.patches) == 4 * len(schedules)  # p50, p90, p99, max per mode
    plt.close(fig)
    fig = figures.async_workers(schedules)
    mode = next(iter(schedules))
    expected = np.isfinite(schedules[mode]["pairs_processed"].values).sum()
    for ax in fig.axes[:2]:
        (dots,) = [c for c in ax.collections if isinstance(c, PathCollection)]
        assert len(dots.get_offsets()) == expected == len(SEEDS) * schedules[mode].sizes["worker"]
    plt.close(fig)


def test_sensitivity_draws_each_sweep_per_batch_mode_wrapped(run):
    from spsa_bench.analysis.sensitivity import sensitivity_figure, sensitivity_table

    config, ds, _, path = run
    table = sensitivity_table(ds, workflow.sweeps(config))
    fig = sensitivity_figure(table)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels] == [f"adam ({m})" for m in MODES]
    for ax, mode in zip(panels, MODES, strict=True):
        lines = ax.get_lines()
        assert [line.get_label() for line in lines] == SCENARIOS
        for line, scenario in zip(lines, SCENARIOS, strict=True):
            arms = [a for a in ("adam-lr-0p01", "adam-lr-0p04") if (a, mode, scenario) != MISSING]
            expected = [_final(path, arm, mode, scenario).mean() for arm in arms]
            np.testing.assert_allclose(line.get_ydata(), expected)
    plt.close(fig)


def test_sensitivity_of_many_sweeps_wraps_to_the_report_width():
    import pandas as pd

    from spsa_bench.analysis.sensitivity import sensitivity_figure

    rows = [
        {"sweep": f"s{k}", "arm": f"s{k}-{v}", "hyperparameter": "lr", "value": v,
         "batch_mode": m, "scenario": "a", "loss_mean": 1.0 + v, "loss_median": 1.0}
        for k in range(8) for m in ("sync", "async-fixed", "async-variable") for v in (0.1, 1.0)
    ]  # fmt: skip
    fig = sensitivity_figure(pd.DataFrame(rows))
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 24 and all(len(ax.get_lines()) == 1 for ax in panels)
    assert fig.get_figwidth() <= figures.MAX_GRID_WIDTH
    # three batch modes side by side: a row is one sweep
    for row in range(8):
        in_row = [ax for ax in panels if ax.get_subplotspec().rowspan.start == row]
        assert [ax.get_title() for ax in in_row] == [
            f"s{row} ({m})" for m in ("sync", "async-fixed", "async-variable")
        ]
    plt.close(fig)


def test_noise_figure_draws_each_model_in_each_panel():
    from spsa_bench.analysis.noise_figure import noise_figure
    from spsa_bench.model.noise import noise_model

    settings = ["vendored", "STC", "LTC", "VLTC"]
    fig = noise_figure([noise_model(s) for s in settings])
    assert len(fig.axes) == 6
    for ax in fig.axes:
        lines = ax.get_lines()
        assert len(lines) == len(settings)
        assert all(
            len(line.get_xdata()) == 401 and np.isfinite(line.get_ydata()).all() for line in lines
        )
    # P(LL) + ... + P(WW) = 1 at every advantage, for every model
    for k in range(len(settings)):
        total = sum(ax.get_lines()[k].get_ydata() for ax in fig.axes[:5])
        np.testing.assert_allclose(total, 1.0, atol=1e-12)


def test_validation_figure_draws_every_path_of_every_parameter(tmp_path):
    from spsa_bench.analysis.validation_figure import LABELS, draw_paths
    from spsa_bench.results.cf import open_labelled
    from spsa_bench.validation.run import validate

    outcome = validate("sf-sgd-block", tmp_path, seed=2, n_reports=25, n_params=3)
    with open_labelled(outcome.written["netcdf"]) as ds:
        fig = draw_paths(ds, plot_params=2)
        rows = 2 + sum(name in ds for name in ("x", "z"))  # theta, x, z, theta - macro theta
        assert len(fig.axes) == rows * 2
        for ax in fig.axes:
            lines = ax.get_lines()
            assert len(lines) == len(LABELS)
            assert all(len(line.get_ydata()) == ds.sizes["report"] for line in lines)
