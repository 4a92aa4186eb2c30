"""The sensitivity figure's table: every swept arm's final loss against its value."""

import numpy as np
import xarray as xr
from conftest import small_config_dict

from spsa_bench import workflow
from spsa_bench.analysis.sensitivity import sensitivity_figure, sensitivity_table
from spsa_bench.config.loader import resolve


def _benchmark(rng) -> xr.Dataset:
    arms = ["spsa", "adam-lr-0p01", "adam-lr-0p1"]
    loss = rng.uniform(0.1, 3.0, (3, 2, 2, 5, 4))
    loss[1, :, 1] = np.nan  # a missing cell
    return xr.Dataset(
        {"elo_loss": (("optimizer", "batch_mode", "scenario", "seed", "pairs"), loss)},
        coords={
            "optimizer": arms,
            "batch_mode": ["sync", "async"],
            "scenario": ["a", "b"],
            "seed": np.arange(5),
            "pairs": [0, 10, 20, 30],
        },
    )


def test_table_holds_each_swept_arm_mean_final_loss():
    ds = _benchmark(np.random.default_rng(3))
    sweeps = {"adam": [["adam-lr-0p01", {"lr": 0.01}], ["adam-lr-0p1", {"lr": 0.1}]]}
    table = sensitivity_table(ds, sweeps)
    assert set(table["arm"]) == {"adam-lr-0p01", "adam-lr-0p1"}  # spsa is not swept
    assert len(table) == 2 * 2 * 2 - 2  # the missing cell has no row
    row = table[(table["arm"] == "adam-lr-0p1") & (table["batch_mode"] == "async")
                & (table["scenario"] == "b")].iloc[0]  # fmt: skip
    expected = ds["elo_loss"].sel(optimizer="adam-lr-0p1", batch_mode="async", scenario="b")
    assert row["loss_mean"] == float(expected.isel(pairs=-1).mean())
    assert (row["hyperparameter"], row["value"]) == ("lr", 0.1)
    fig = sensitivity_figure(table)
    assert len(fig.axes) == 2  # one sweep x two batch modes


def test_workflow_sweeps_come_from_the_users_configuration():
    raw = small_config_dict(num_pairs=400)
    raw["optimizers"]["adam"] = {"lr": [0.01, 0.1]}
    del raw["workers_study"]  # it names the adam-block arm only: keep it simple
    config = resolve(raw)
    assert workflow.sweeps(config) == {
        "adam": [["adam-lr-0p01", {"lr": 0.01}], ["adam-lr-0p1", {"lr": 0.1}]]
    }
    assert workflow.sweeps(resolve(small_config_dict(num_pairs=400))) == {}
