"""The budget study (issue 16, item 6): settings, runs per budget, the held-out choice,
constant gains, table, figure and command."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import small_config_dict

from spsa_bench.analysis.budget import budget_markdown, budget_table
from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.config.sections.budget import parse as study_settings
from spsa_bench.engine.simulate import make_problem, simulate
from spsa_bench.optimizers import build, hyper_from_dict
from spsa_bench.optimizers.base import Report
from spsa_bench.optimizers.gains import GainSchedule
from spsa_bench.studies import STUDIES
from spsa_bench.studies.budget import choose_settings, distinct_runs, run_budget_study

BUDGETS = [800, 400]  # given unsorted: the study sorts them
CONSTANT = {"kind": "spsa", "A": 0, "alpha": 0, "gamma": 0}


def raw_config() -> dict:
    raw = small_config_dict(num_pairs=2000)
    raw["budget_study"] = {
        "num_pairs": list(BUDGETS),
        "batch_mode": "sync",
        "scenarios": ["mixed", "tune-16-stc"],
        "tuning_seeds": {"first": 100, "count": 4},
        "baseline": "spsa-decay",
        "arms": {
            "spsa": None,
            "spsa-decay": {"kind": "spsa", "r_scale": [1, 4]},
            "spsa-constant": {**CONSTANT, "r_scale": [1, 4]},
        },
    }
    return raw


@pytest.fixture(scope="module")
def study_run():
    config = resolve(raw_config())
    study = study_settings(config)
    return config, study, run_budget_study(config, study, range(4))


# ---------------------------------------------------------------------- settings


def test_settings_sort_the_budgets_and_expand_the_sweeps():
    study = study_settings(resolve(raw_config()))
    assert study.num_pairs == (400, 800) and study.budget_key == "num_pairs"
    assert [arm.name for arm in study.arms] == ["spsa", "spsa-decay", "spsa-constant"]
    assert [arm.swept for arm in study.arms] == [False, True, True]
    constant = study.arms[2].settings
    assert [s.name for s in constant] == ["spsa-constant-r_scale-1", "spsa-constant-r_scale-4"]
    assert [s.hyper.r_scale for s in constant] == [1.0, 4.0]
    assert {(s.hyper.A, s.hyper.alpha, s.hyper.gamma) for s in constant} == {(0.0, 0.0, 0.0)}
    assert study.tuning_seeds == range(100, 104) and study.baseline == "spsa-decay"
    assert study.owners.tolist() == [0, 1, 1, 2, 2]


def test_games_are_budgets_in_pairs():
    raw = raw_config()
    del raw["budget_study"]["num_pairs"]
    raw["budget_study"]["games"] = [4000, 2000]
    study = study_settings(resolve(raw))
    assert study.num_pairs == (1000, 2000) and study.budget_key == "games"


def test_no_section_gives_none():
    raw = raw_config()
    del raw["budget_study"]
    assert study_settings(resolve(raw)) is None


def _study(**change) -> dict:
    raw = raw_config()
    raw["budget_study"].update(change)
    return raw


def _arms(**arms) -> dict:
    return _study(arms={"spsa": None, **arms})


@pytest.mark.parametrize(
    "raw, message",
    [
        (
            _study(games=[2000, 4000]),
            "budget_study: give the budgets as num_pairs or games, not both",
        ),
        (_study(num_pairs=[400]), r"budget_study.num_pairs = \[400\]: .* too short"),
        (_study(num_pairs=[400, 400]), r"budget_study.num_pairs = \[400, 400\]: .*non-unique"),
        (_study(num_pairs=[0, 400]), r"budget_study.num_pairs\[0\] = 0: 0 is less than"),
        (
            _study(num_pairs=[10, 400]),
            "budget_study.num_pairs: at a budget of 10 pairs: checkpoints",
        ),
        (_study(num_pairs=[30, 400]), "at a budget of 30 pairs: batch_modes.sync.batch_size = 36"),
        (_study(batch_mode="nope"), "budget_study.batch_mode: unknown batch mode 'nope'"),
        (_study(scenarios=["mixed", "nope"]), "budget_study.scenarios: unknown scenario 'nope'"),
        (_study(baseline="adam"), r"budget_study.baseline = 'adam': not one of its arms"),
        (
            _study(tuning_seeds={"first": 2, "count": 4}),
            r"budget_study.tuning_seeds = 2..5: overlaps",
        ),
        (_arms(nope=None), "budget_study.arms.nope: unknown optimizer 'nope'"),
        (_arms(x={"kind": "nope"}), 'budget_study.arms.x.kind = "nope": unknown optimizer kind'),
        (_arms(x={"kind": "spsa", "bogus": 1}), "budget_study.arms.x: unknown key 'bogus'"),
        (_arms(x={"kind": "spsa", "alpha": -1}), r"budget_study.arms.x.alpha = -1"),
        (
            _arms(x={"kind": "spsa", "r_scale": {"log_range": {"min": 0, "max": 2, "num": 3}}}),
            "budget_study.arms.x.r_scale.log_range.min = 0",
        ),
        (_arms(x={"kind": "spsa", "delta": ["flip", "sideways"]}), r"budget_study.arms.x.delta"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(raw, message):
    with pytest.raises(ConfigError, match=message):
        resolve(raw)


def test_games_outside_fishtest_limits_are_refused_naming_the_index():
    raw = raw_config()
    del raw["budget_study"]["num_pairs"]
    raw["budget_study"]["games"] = [2000, 1500]
    with pytest.raises(ConfigError, match=r"budget_study.games\[1\] = 1500: Fishtest accepts"):
        resolve(raw)


def test_a_swept_arm_needs_tuning_seeds():
    raw = raw_config()
    del raw["budget_study"]["tuning_seeds"]
    with pytest.raises(ConfigError, match="budget_study.tuning_seeds: required, the swept arm"):
        resolve(raw)


@pytest.mark.parametrize("key, values", [("num_pairs", [10000, 30000]), ("games", [2000, 4000])])
def test_a_list_of_budgets_at_the_top_level_points_to_the_study(key, values):
    raw = raw_config()
    del raw["num_pairs"]
    raw[key] = values
    with pytest.raises(ConfigError, match=rf"{key} = \[.*\]: the grid takes one budget .* "
                       rf"budget_study.{key}"):  # fmt: skip
        resolve(raw)


# ---------------------------------------------------------------------- runs


def _plain_final_loss(budget: int, scenario: str, arm: dict | None, seeds) -> np.ndarray:
    """A plain ``simulate`` of the grid arm ``spsa`` (or of ``arm``) at ``budget`` pairs."""
    raw = raw_config()
    del raw["budget_study"], raw["cend_study"], raw["workers_study"]
    raw["num_pairs"] = budget
    if arm is not None:
        raw["optimizers"]["study-arm"] = arm
    run = simulate(
        resolve(raw),
        optimizer="spsa" if arm is None else "study-arm",
        batch_mode="sync",
        scenario=scenario,
        seeds=seeds,
    )
    return run["elo_loss"].isel(pairs=-1).values


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("scenario", ["mixed", "tune-16-stc"])
def test_each_budget_equals_a_plain_simulate_at_that_budget(study_run, budget, scenario):
    """The grid arm, and a tuned arm at the setting chosen for it, bit for bit."""
    _, study, ds = study_run
    cell = ds.sel(budget=budget, scenario=scenario)
    np.testing.assert_array_equal(
        cell["final_elo_loss"].sel(arm="spsa", tuning="oracle").values,
        _plain_final_loss(budget, scenario, None, range(4)),
    )
    chosen = study.settings[int(cell["chosen_setting"].sel(arm="spsa-constant", tuning="oracle"))]
    arm = {**CONSTANT, "r_scale": chosen.hyper.r_scale}
    np.testing.assert_array_equal(
        cell["final_elo_loss"].sel(arm="spsa-constant", tuning="oracle").values,
        _plain_final_loss(budget, scenario, arm, range(4)),
    )


def test_the_settings_share_every_random_number():
    """With alpha = gamma = 0, A changes no gain: two settings differing only in A are
    two replays, and they end equal bit for bit (same schedule, flips, rounding and
    match draws) on the tuning and the test seeds."""
    raw = raw_config()
    raw["budget_study"]["arms"] = {"constant": {**CONSTANT, "A": [0, 5000]}}
    raw["budget_study"]["scenarios"] = ["tune-16-stc"]
    del raw["budget_study"]["baseline"]
    config = resolve(raw)
    study = study_settings(config)
    assert len(distinct_runs(study.settings)) == 2
    ds = run_budget_study(config, study, range(3))
    tuning = ds["tuning_final_elo_loss"]
    np.testing.assert_array_equal(tuning.isel(setting=0).values, tuning.isel(setting=1).values)
    assert float(tuning.std()) > 0
    assert (ds["chosen_setting"].values == 0).all()  # a tie goes to the first setting


def test_seeds_in_chunks_give_the_same_study_bit_for_bit(study_run, monkeypatch):
    """Above MAX_SEED_PAIRS seed x pairs a replay runs its seeds in chunks (bounded
    memory at any seeds and budget): chunks of one seed at the 800-pair budget, of
    two at 400, give every loss of the study, tuning and test seeds alike, unchanged."""
    from spsa_bench.studies import budget as budget_study

    config, study, whole = study_run
    monkeypatch.setattr(budget_study, "MAX_SEED_PAIRS", 800)
    assert [len(c) for _, c in budget_study.seed_chunks(np.arange(4), 800)] == [1, 1, 1, 1]
    assert [len(c) for _, c in budget_study.seed_chunks(np.arange(4), 400)] == [2, 2]
    chunked = run_budget_study(config, study, range(4))
    for name in ("final_elo_loss", "tuning_final_elo_loss", "chosen_setting"):
        assert name in whole, name
        np.testing.assert_array_equal(chunked[name].values, whole[name].values)
    assert chunked.equals(whole)


def test_equal_settings_run_once_and_share_the_result(study_run):
    """spsa-decay at r_scale 1 is the grid's spsa written out: one replay serves both."""
    _, study, ds = study_run
    assert len(distinct_runs(study.settings)) == len(study.settings) - 1
    tuning = ds["tuning_final_elo_loss"]
    np.testing.assert_array_equal(
        tuning.sel(setting="spsa-decay-r_scale-1").values, tuning.sel(setting="spsa").values
    )
    assert not np.array_equal(
        tuning.sel(setting="spsa-decay-r_scale-4").values, tuning.sel(setting="spsa").values
    )


def test_the_choice_never_sees_the_test_seeds(study_run):
    """Other test seeds: the same tuning runs and choices; a test seed's result does not
    depend on the other test seeds."""
    config, study, ds = study_run
    other = run_budget_study(config, study, [3, 50, 51])
    np.testing.assert_array_equal(other["chosen_setting"].values, ds["chosen_setting"].values)
    np.testing.assert_array_equal(
        other["tuning_final_elo_loss"].values, ds["tuning_final_elo_loss"].values
    )
    np.testing.assert_array_equal(
        other["final_elo_loss"].sel(seed=3).values, ds["final_elo_loss"].sel(seed=3).values
    )


def test_changing_test_results_changes_no_reported_setting(study_run):
    _, _, ds = study_run
    shuffled = ds.copy(deep=True)
    rng = np.random.default_rng(7)
    shuffled["final_elo_loss"].values[:] = rng.exponential(size=ds["final_elo_loss"].shape)
    before, after = budget_table(ds), budget_table(shuffled)
    assert after["setting"].tolist() == before["setting"].tolist()
    assert after["tuning_median"].tolist() == before["tuning_median"].tolist()
    assert not np.allclose(after["loss_mean"], before["loss_mean"])


def test_choose_settings_is_the_median_rule_on_the_tuning_losses():
    """Hand-made tuning losses (setting, scenario, seed) for spsa (1 setting) and two
    swept arms of 2 settings: oracle per scenario by the median, robust by the mean
    ratio to each scenario's best median."""
    study = study_settings(resolve(raw_config()))
    medians = np.array(
        [
            [9.0, 9.0],  # spsa: its only setting whatever the numbers
            [1.0, 4.0],  # spsa-decay r_scale 1: best in mixed, ratio 1 + 2 = 3 / 2
            [2.0, 2.0],  # r_scale 4: best in tune-16-stc, ratio 2 + 1 = 3 / 2 (tie: first)
            [3.0, 1.0],  # spsa-constant r_scale 1: ratios 1.5 and 1 -> robust
            [2.0, 5.0],  # r_scale 4: best in mixed; ratios 1 and 5
        ]
    )
    spread = np.array([-1.0, 0.0, 0.5, 7.0])  # the median of x + spread is x + 0.25
    tuning_loss = medians[:, :, None] - 0.25 + spread
    chosen = choose_settings(study, tuning_loss)  # (arm, tuning, scenario)
    assert chosen[0].tolist() == [[0, 0], [0, 0]]
    assert chosen[1].tolist() == [[1, 2], [1, 1]]
    assert chosen[2].tolist() == [[4, 3], [3, 3]]


# ---------------------------------------------------------------------- constant gain


def test_alpha_and_gamma_zero_give_constant_gains():
    """a_k = r_end c_end**2 and c_k = c_end at every k, whatever A and the budget;
    gamma > 0 with alpha = 0 would make the step a_k / c_k grow like k**gamma."""
    c_end, r_end = np.array([2.0, 0.5, 10.0]), 0.002
    k = np.arange(1, 30001, dtype=np.float64)
    for A in (0.0, 5000.0):
        for budget in (10_000, 300_000):
            schedule = GainSchedule.fishtest(c_end, r_end, A, 0.0, 0.0, budget)
            np.testing.assert_allclose(schedule.c_k(k), np.tile(c_end, (k.size, 1)), rtol=0)
            np.testing.assert_allclose(
                schedule.a_k(k), np.tile(r_end * c_end**2, (k.size, 1)), rtol=1e-15
            )
            np.testing.assert_allclose(schedule.r_k(k), r_end, rtol=1e-15)
    growing = GainSchedule.fishtest(c_end, r_end, 0.0, 0.0, 0.101, 10_000)
    ratio = growing.gain_shape(k[-1:]) / growing.gain_shape(k[:1])
    assert ratio[0] == pytest.approx(k[-1] ** 0.101, rel=1e-12)


def test_constant_gain_spsa_steps_by_r_end_c_end_result_flip():
    """Three SPSA updates by hand: theta <- clip(theta + r_end c_end S flip), with the
    probe c_end at every iteration."""
    config = resolve(raw_config())
    view = make_problem(config, "mixed").view
    r_end = 0.002
    gains = {"A": 0, "alpha": 0, "gamma": 0, "r_end": r_end}
    optimizer = build("spsa", view, hyper_from_dict("spsa", gains))
    rng = np.random.default_rng(11)
    state = optimizer.init(3)
    theta = np.tile(view.theta_start, (3, 1))
    for iteration in (1, 37, 9001):
        k = np.full(3, float(iteration))
        c = optimizer.perturbation(k)
        np.testing.assert_array_equal(c, np.tile(view.c_dev, (3, 1)))
        flip = rng.choice([-1.0, 1.0], size=theta.shape)
        signal = rng.integers(-40, 41, size=3).astype(np.float64)
        report = Report(np.full(3, 36), signal, flip, c, k)
        state = optimizer.update(state, report)
        theta = np.clip(
            theta + r_end * view.c_dev * signal[:, None] * flip, view.theta_min, view.theta_max
        )
        np.testing.assert_allclose(optimizer.export(state), theta, rtol=1e-14, atol=0)
    assert not np.array_equal(theta, np.tile(view.theta_start, (3, 1)))


# ---------------------------------------------------------------------- table, figure, command


def test_table_rows_and_paired_differences(study_run):
    _, _, ds = study_run
    table = budget_table(ds)
    # spsa one row per cell; each tuned arm an oracle and a robust row
    assert len(table) == 2 * 2 * (1 + 2 + 2)
    assert set(table[table["arm"] == "spsa"]["tuning"]) == {"as configured"}
    row = table[
        (table["arm"] == "spsa-constant")
        & (table["tuning"] == "robust")
        & (table["budget"] == 800)
        & (table["scenario"] == "tune-16-stc")
    ].iloc[0]
    cell = ds.sel(budget=800, scenario="tune-16-stc", tuning="robust")
    difference = (
        cell["final_elo_loss"].sel(arm="spsa-constant")
        - cell["final_elo_loss"].sel(arm="spsa-decay")
    ).values
    assert row["diff_mean"] == pytest.approx(difference.mean(), rel=1e-12)
    assert row["diff_low"] < row["diff_mean"] < row["diff_high"]
    index = int(cell["chosen_setting"].sel(arm="spsa-constant"))
    assert row["setting"] == f"r_scale={ds['swept_r_scale'].values[index]:g}"
    assert row["at_edge"]  # two settings: each is an end of the sweep
    assert np.isnan(table[table["arm"] == "spsa-decay"]["diff_mean"]).all()
    text = budget_markdown(table, ds)
    assert "Δ vs spsa-decay" in text and "never saw" in text and "modelling assumptions" in text


def _write_config(tmp_path: Path, raw: dict) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_budget_study_command_writes_every_output(tmp_path):
    OUTPUTS = [output.file for output in STUDIES["budget_study"].outputs]
    from spsa_bench.cli.main import main
    from spsa_bench.results.cf import open_labelled

    raw = raw_config()
    raw["budget_study"]["arms"] = {"spsa": None, "spsa-constant": {**CONSTANT, "r_scale": [1, 4]}}
    del raw["budget_study"]["baseline"]
    path = _write_config(tmp_path, raw)
    out = tmp_path / "out"
    assert main(["budget-study", "--config", str(path), "--seeds", "0-2", "--output-dir",
                 str(out), "--quiet"]) == 0  # fmt: skip
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    assert (out / "budget_study.png").stat().st_size > 5000
    assert "Δ vs spsa" in (out / "budget_study.md").read_text()
    with open_labelled(out / "budget_study.nc") as ds:
        assert ds["final_elo_loss"].sizes == {
            "arm": 2, "tuning": 2, "budget": 2, "scenario": 2, "seed": 3
        }  # fmt: skip
        assert json.loads(ds.attrs["config"])["budget_study"]["num_pairs"] == BUDGETS


def test_test_seeds_overlapping_the_tuning_seeds_are_refused(tmp_path, capsys):
    from spsa_bench.cli.main import main

    path = _write_config(tmp_path, raw_config())
    status = main(["budget-study", "--config", str(path), "--seeds", "98-101", "--output-dir",
                   str(tmp_path / "out"), "--quiet"])  # fmt: skip
    assert status == 2
    assert "--seeds = 98-101: overlaps budget_study.tuning_seeds" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_workflow_settings_of_the_study_resolve_to_the_same_study():
    from spsa_bench import workflow

    config = resolve(raw_config())
    settings = workflow.study_settings(config, STUDIES["budget_study"])
    assert study_settings(resolve(copy.deepcopy(settings))) == study_settings(config)
    raw = raw_config()
    del raw["budget_study"]
    assert workflow.study_settings(resolve(raw), STUDIES["budget_study"]) is None


@pytest.mark.slow
def test_the_study_file_passes_the_cf_checker(study_run, tmp_path):
    from spsa_bench.results.atomic import write_atomic

    path = write_atomic(study_run[2], tmp_path / "budget_study.nc")
    checker = Path(sys.executable).parent / "compliance-checker"
    done = subprocess.run(
        [checker, "--test=cf:1.11", "--criteria=strict", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "All tests passed!" in done.stdout, done.stdout
