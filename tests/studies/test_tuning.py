"""The tuning protocol (issue 16, item 2): settings, runs, choice held out, report."""

import numpy as np
import pytest
import xarray as xr
from conftest import tuning_benchmark as benchmark
from conftest import tuning_config_dict as raw_config

from spsa_bench.analysis.tuning import (
    choose,
    comparison_arms,
    representatives,
    tuned_markdown,
    tuned_table,
)
from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.config.sections.tuning import parse as tuning_settings
from spsa_bench.studies.tuning import run_tuning

LOW, HIGH = "spsa-r_end-0p001", "spsa-r_end-0p004"


@pytest.fixture(scope="module")
def tuning_run():
    config = resolve(raw_config())
    settings = tuning_settings(config)
    return config, settings, run_tuning(config, settings)


def test_settings_name_the_swept_arms_and_the_baseline():
    settings = tuning_settings(resolve(raw_config()))
    assert [arm.name for arm in settings.arms] == [LOW, HIGH]
    assert settings.sweeps == ("spsa",) and settings.criterion == "median"
    assert settings.baseline_sweep == "adam-block" and not settings.baseline_swept
    assert settings.seeds == range(1000, 1004) and settings.test_seeds == range(0, 4)


def test_no_tuning_section_gives_none():
    raw = raw_config()
    del raw["tuning"]
    assert tuning_settings(resolve(raw)) is None


def test_the_family_defaults_to_every_scenario():
    raw = raw_config()
    del raw["tuning"]["family"]
    assert tuning_settings(resolve(raw)).family == ("calibrated", "mixed")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"seeds": {"first": 2, "count": 5}}, r"tuning.seeds = 2..6: overlaps the benchmark's"),
        ({"seeds": {"first": 0, "count": 1}}, r"tuning.seeds = 0..0: overlaps"),
        ({"family": ["calibrated", "nope"]}, r"tuning.family: unknown scenario 'nope'"),
        ({"criterion": "mean"}, r"tuning.criterion"),
        ({"bogus": 1}, r"tuning"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(change, message):
    raw = raw_config()
    raw["tuning"].update(change)
    with pytest.raises(ConfigError, match=message):
        resolve(raw)


def test_a_configuration_without_a_sweep_is_refused():
    raw = raw_config()
    raw["optimizers"]["spsa"] = {"r_end": 0.002}
    with pytest.raises(ConfigError, match="tuning: no arm of this configuration is swept"):
        resolve(raw)


def test_runs_are_on_the_tuning_seeds_with_the_swept_values(tuning_run):
    _, _, ds = tuning_run
    assert ds["final_elo_loss"].dims == ("arm", "scenario", "batch_mode", "seed")
    assert list(ds["seed"].values) == [1000, 1001, 1002, 1003]
    assert list(ds["swept_r_end"].values) == [0.001, 0.004]
    assert list(ds["sweep"].values) == ["spsa", "spsa"]
    assert np.isfinite(ds["final_elo_loss"]).all()


def constructed(losses: dict) -> xr.Dataset:
    """A tuning dataset of one sweep ``s`` (arms a, b, c) on scenarios x, y, z in one
    batch mode, family x, y; ``losses[arm]`` is the per-scenario loss at every seed."""
    arms = ["a", "b", "c"]
    values = np.array([[[[v] * 5] for v in losses[arm]] for arm in arms])
    return xr.Dataset(
        {"final_elo_loss": (("arm", "scenario", "batch_mode", "seed"), values)},
        coords={
            "arm": arms,
            "sweep": ("arm", ["s"] * 3),
            "setting": ("arm", ["v=1", "v=2", "v=3"]),
            "scenario": ["x", "y", "z"],
            "batch_mode": ["sync"],
            "seed": np.arange(100, 105),
        },
        attrs={"family": "x, y", "tuning_seeds_first": 100, "tuning_seeds_count": 5},
    )


def test_choose_picks_the_documented_oracle_and_robust_arms():
    """a is best on x, b best on y, c best on z (outside the family); the ratios to the
    best median over the family are a: (1 + 3) / 2 = 2, b: (1.5 + 1) / 2 = 1.25,
    c: (4 + 4) / 2 = 4, so robust is b, which is no scenario's oracle on x or z."""
    ds = constructed({"a": [1.0, 3.0, 5.0], "b": [1.5, 1.0, 5.0], "c": [4.0, 4.0, 1.0]})
    choice = choose(ds).set_index(["tuning", "scenario"])
    assert choice.loc[("oracle", "x"), "arm"] == "a"
    assert choice.loc[("oracle", "y"), "arm"] == "b"
    assert choice.loc[("oracle", "z"), "arm"] == "c"
    assert set(choice.loc["robust", "arm"]) == {"b"}
    assert choice.loc[("robust", "x"), "robust_score"] == pytest.approx(1.25)
    assert choice.loc[("robust", "x"), "setting"] == "v=2"
    assert not choice.loc[("robust", "z"), "in_family"]


def test_a_choice_at_either_end_of_its_sweep_is_flagged():
    """The swept values are v = 2, 1, 3 for arms a, b, c (not in arm order): b and c
    are the ends of the sweep, a is inside; a text coordinate has no ends."""
    ds = constructed({"a": [1.0, 3.0, 5.0], "b": [1.5, 1.0, 5.0], "c": [4.0, 4.0, 1.0]})
    ds = ds.assign_coords(
        swept_v=("arm", [2.0, 1.0, 3.0]),
        swept_rule=("arm", np.array(["p", "q", "r"], dtype=object)),
    )
    choice = choose(ds).set_index(["tuning", "scenario"])
    assert not choice.loc[("oracle", "x"), "at_edge"]  # a
    assert choice.loc[("oracle", "y"), "at_edge"]  # b, the smallest v
    assert choice.loc[("oracle", "z"), "at_edge"]  # c, the largest v
    assert choice.loc["robust", "at_edge"].all()  # b everywhere
    assert not choose(constructed({"a": [1.0] * 3, "b": [2.0] * 3, "c": [3.0] * 3}))[
        "at_edge"
    ].any()  # no swept number recorded: nothing to call an edge


def test_the_representative_is_robust_over_the_family_and_every_batch_mode():
    """Two batch modes. In sync b is robust (as above). In async the family ratios are
    a: 1 and 1, b: 3 and 2, c: 4 and 4. Over the four (scenario, mode) pairs the mean
    ratio is a: (1 + 3 + 1 + 1) / 4 = 1.5, b: (1.5 + 1 + 3 + 2) / 4 = 1.875 and
    c: 4, so the representative is a, though sync alone would pick b."""
    sync = constructed({"a": [1.0, 3.0, 5.0], "b": [1.5, 1.0, 5.0], "c": [4.0, 4.0, 1.0]})
    late = constructed({"a": [1.0, 1.0, 5.0], "b": [3.0, 2.0, 5.0], "c": [4.0, 4.0, 1.0]})
    ds = xr.concat([sync, late.assign_coords(batch_mode=["async"])], dim="batch_mode")
    ds.attrs = sync.attrs
    assert representatives(ds) == {"s": "a"}
    # the comparison keeps unswept arms in the benchmark's order, and one arm per sweep
    assert comparison_arms(["spsa", "a", "b", "c", "auto"], ds) == ["spsa", "a", "auto"]


def test_the_choice_cannot_see_the_test_seeds(tuning_run):
    """The held-out property: whatever the benchmark's test-seed losses are (here
    random, then permuted, then all replaced), the choice is the same, and it is
    the one made from the tuning dataset alone; only the reported losses change."""
    config, _, ds = tuning_run
    before = choose(ds)
    rng = np.random.default_rng(7)
    arms = list(config.optimizers)
    reports = []
    for _ in range(3):
        bench = benchmark(rng, arms)
        table = tuned_table(choose(ds), bench, "adam-block")
        reports.append(table)
        permuted = bench.copy(data={"elo_loss": rng.permutation(bench["elo_loss"].values)})
        assert choose(ds).equals(before)
        assert tuned_table(choose(ds), permuted, "adam-block")["arm"].equals(table["arm"])
    assert all((r["arm"] == before["arm"]).all() for r in reports)
    assert not reports[0]["loss_mean"].equals(reports[1]["loss_mean"])


def test_tuned_table_reports_test_losses_paired_with_the_baseline(tuning_run):
    config, _, ds = tuning_run
    bench = benchmark(np.random.default_rng(3), list(config.optimizers))
    choice = choose(ds)
    table = tuned_table(choice, bench, "adam-block")
    row = table.iloc[0]
    final = bench["elo_loss"].isel(pairs=-1)
    cell = {"batch_mode": row["batch_mode"], "scenario": row["scenario"]}
    values = final.sel(optimizer=row["arm"], **cell).values
    assert row["loss_mean"] == pytest.approx(values.mean())
    base = final.sel(optimizer="adam-block", **cell).values
    assert row["diff_mean"] == pytest.approx((values - base).mean())
    assert row["loss_low"] < row["loss_mean"] < row["loss_high"]
    text = tuned_markdown(table, choice)
    assert "tuning seeds only" in text and "divided by the best median" in text
    assert "tuning seeds 1000..1003" in text


def test_a_swept_baseline_is_compared_by_its_own_choice():
    ds = constructed({"a": [1.0, 3.0, 5.0], "b": [1.5, 1.0, 5.0], "c": [4.0, 4.0, 1.0]})
    other = ds.assign_coords(arm=["d", "e", "f"], sweep=("arm", ["t"] * 3))
    both = xr.concat([ds, other], "arm")
    choice = choose(both)
    rng = np.random.default_rng(1)
    bench = benchmark(rng, list("abcdef"), seeds=range(6), scenarios=("x", "y", "z"))
    bench = bench.sel(batch_mode=["sync"])
    table = tuned_table(choice, bench, "s").set_index(["sweep", "tuning", "scenario"])
    assert table.loc[("t", "oracle", "x"), "baseline"] == "a"
    assert table.loc[("t", "robust", "z"), "baseline"] == "b"
    assert np.isnan(table.loc[("s", "oracle", "x"), "diff_mean"])


def test_a_benchmark_on_tuning_seeds_is_refused(tuning_run):
    config, _, ds = tuning_run
    bench = benchmark(np.random.default_rng(0), list(config.optimizers), seeds=range(999, 1003))
    with pytest.raises(ValueError, match="include tuning seeds"):
        tuned_table(choose(ds), bench, "adam-block")


def test_the_tune_command_writes_its_outputs(tmp_path):
    import yaml

    from spsa_bench.cli.main import main

    config = tmp_path / "config.yaml"
    raw = raw_config()
    config.write_text(yaml.safe_dump(raw))
    bench = benchmark(np.random.default_rng(5), list(resolve(raw).optimizers))
    bench.to_netcdf(tmp_path / "benchmark.nc", engine="netcdf4")
    out = tmp_path / "out"
    args = ["tune", "--config", str(config), "--benchmark", str(tmp_path / "benchmark.nc")]
    assert main([*args, "--output-dir", str(out), "--quiet"]) == 0
    assert {p.name for p in out.iterdir()} == {"tuning.nc", "tuned.csv", "tuned.md"}
    assert "Held out" in (out / "tuned.md").read_text()
    # its files there again: refused unless --force, nothing touched
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main([*args, "--output-dir", str(out), "--quiet"]) == 2
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert main([*args, "--output-dir", str(out), "--quiet", "--force"]) == 0
    del raw["tuning"]
    config.write_text(yaml.safe_dump(raw))
    assert main([*args, "--output-dir", str(out), "--quiet"]) == 2


def test_a_seed_without_a_finite_loss_is_refused_not_dropped(tuning_run):
    """A NaN (or inf) final loss of a chosen arm would shrink n and move the mean; the
    table refuses it, naming the arm, the cell and the seed."""
    config, _, ds = tuning_run
    choice = choose(ds)
    bench = benchmark(np.random.default_rng(3), list(config.optimizers))
    row = choice.iloc[0]
    cell = {"optimizer": row.arm, "batch_mode": row.batch_mode, "scenario": row.scenario}
    for bad in (np.nan, np.inf):
        broken = bench.copy(deep=True)
        seed = int(broken["seed"].values[1])
        broken["elo_loss"].loc[{**cell, "seed": seed}] = bad
        with pytest.raises(
            ValueError, match=f"{row.arm} on {row.scenario} / {row.batch_mode}.* at seed {seed} "
        ):
            tuned_table(choice, broken, "adam-block")


def sweep_job_parts(raw: dict) -> list[tuple[str, dict]]:
    """What the workflow's sweep jobs write: for every batch mode, scenario and seed
    chunk, each swept arm replayed from its own cell configuration (as
    workflow/scripts/simulate.py does) on the chunk's seeds plus its share of the
    tuning seeds, the share's final losses as a tuning part."""
    from spsa_bench import workflow as grid
    from spsa_bench.engine.simulate import held_out, simulate_run_held_out
    from spsa_bench.studies.tuning import tuning_part

    config = resolve(raw)
    swept = [name for name, arm in config.optimizers.items() if arm.sweep is not None]
    parts = []
    for mode in config.batch_modes:
        for scenario in config.scenarios:
            for a, b in grid.config_chunks(config):
                extra = grid.chunk_tuning_seeds(config, a, b)
                cells = {
                    arm: resolve(grid.with_seeds(grid.cell_settings(config, arm, mode, scenario), a, b))
                    for arm in swept
                }  # fmt: skip
                shared = cells[swept[0]]
                schedules = held_out(shared, shared.batch_mode(mode), range(a, b + 1), extra)
                losses = {
                    arm: simulate_run_held_out(
                        cell, optimizer=arm, batch_mode=mode, scenario=scenario,
                        schedules=schedules,
                    )[1]
                    for arm, cell in cells.items()
                }  # fmt: skip
                parts.append(
                    (f"{mode}/{scenario}/{a}-{b}", tuning_part(mode, scenario, extra, losses))
                )
    return parts


def test_the_sweep_jobs_tuning_losses_equal_run_tuning(tuning_run):
    """The workflow's path (the tuning seeds as extra rows of the sweep jobs' replays,
    shared out over two seed chunks, gathered) gives run_tuning's dataset bit for bit."""
    from spsa_bench import workflow as grid
    from spsa_bench.studies.tuning import gather_tuning

    config, settings, reference = tuning_run
    raw = raw_config()
    raw["seeds"] = {"first": 0, "count": 4, "per_job": 2}
    chunked = resolve(raw)
    assert grid.chunk_tuning_seeds(chunked, 0, 1) == [1000, 1001]
    assert grid.chunk_tuning_seeds(chunked, 2, 3) == [1002, 1003]
    assert grid.chunk_tuning_seeds(chunked, 0, 3) == []  # not one of the chunks
    parts = sweep_job_parts(raw)
    gathered = gather_tuning(config, settings, parts)
    np.testing.assert_array_equal(
        gathered["final_elo_loss"].values, reference["final_elo_loss"].values
    )
    stamps = ("created", "history")  # when it was made differs
    gathered, reference = (
        ds.copy().assign_attrs({k: "" for k in stamps}) for ds in (gathered, reference)
    )
    xr.testing.assert_identical(gathered, reference)  # coordinates and attributes too


def test_one_chunk_replays_every_tuning_seed_and_none_without_a_section():
    from spsa_bench import workflow as grid

    config = resolve(raw_config())
    assert grid.chunk_tuning_seeds(config, 0, 3) == [1000, 1001, 1002, 1003]
    raw = raw_config()
    del raw["tuning"]
    assert grid.chunk_tuning_seeds(resolve(raw), 0, 3) == []


def part(mode="sync", scenario="mixed", seeds=(1000, 1001), arms=(LOW, HIGH)):
    from spsa_bench.studies.tuning import tuning_part

    return tuning_part(mode, scenario, seeds, {arm: [1.0] * len(seeds) for arm in arms})


@pytest.mark.parametrize(
    "parts, message",
    [
        (
            [("f.json", part(seeds=(1000, 1001, 1002, 1003)))],
            r"no tuning run of .* \(\d+ missing\)",
        ),
        (
            [("f.json", part(arms=("nope",)))],
            r"f.json: not a tuning run of this configuration \('nope'\)",
        ),
        ([("f.json", part(scenario="nope"))], r"f.json: not a tuning run"),
        ([("f.json", part(seeds=(7,)))], r"f.json: not a tuning run .*\(7\)"),
        ([("a.json", part()), ("b.json", part())], r"b.json: .* a tuning seed a second time"),
        ([("f.json", part(seeds=(1000, 1000)))], r"f.json: a tuning seed is listed twice"),
    ],
)
def test_gather_refuses_a_missing_or_foreign_part_naming_it(parts, message):
    from spsa_bench.studies.tuning import gather_tuning

    config = resolve(raw_config())
    with pytest.raises(ValueError, match=message):
        gather_tuning(config, tuning_settings(config), parts)
