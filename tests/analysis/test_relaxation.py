"""Is the budget big enough? The linearised SPSA dynamics (analysis.linear_spsa), the
measured relaxation and the NOT RANKED verdicts (analysis.relaxation, tables, ranking).

The prediction is checked against the optimizers' own update averaged over every flip,
against the deterministic recursion iterated pair by pair, against Autoselect's own
games count (Fishtest's formula), against a pair-by-pair moment recursion and against a
simulation (tolerances from its standard errors); the relaxation rule on trajectories
with a known answer; the verdicts on real small runs.
"""

import dataclasses
import itertools
import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from conftest import random_rotations, small_config_dict

from spsa_bench import optimizers
from spsa_bench.analysis import linear_spsa, ranking, relaxation, tables
from spsa_bench.config.loader import (
    OptimizerArm,
    load_config,
    resolve,
    resolve_core,
    without_studies,
)
from spsa_bench.engine.simulate import make_noise, make_problem, simulate
from spsa_bench.model.bowl import SeedBowls, build_problem
from spsa_bench.optimizers.autoselect import SpsaAutoselectHyper, autoselect
from spsa_bench.optimizers.base import Report
from spsa_bench.optimizers.spsa import SpsaHyper, gain_schedule
from spsa_bench.results.combine import combine_benchmark

K = math.log(10.0) / 800.0


@pytest.fixture(scope="module")
def default_config(default_config_path):
    return load_config(default_config_path)


def groups_problem(w_true, offsets, num_pairs=30000, bounds=None, start_elo=-5.0):
    """One parameter per entry, optimum at 1000, start ``1000 + offset``, Elo 0 at the
    optimum and ``start_elo`` at the start."""
    groups = []
    for i, (w, d) in enumerate(zip(w_true, offsets, strict=True)):
        group = {"name": f"g{i}", "count": 1, "theta_start": 1000.0 + d}
        group |= {"theta_peak": 1000.0, "w_true": w, "w_dev": w if w > 0 else 1.0}
        if bounds is not None:
            group |= {"theta_min": bounds[0], "theta_max": bounds[1]}
        groups.append(group)
    return build_problem(
        groups, start_elo=start_elo, peak_elo=0.0, c_elo_gap=2.0, c_fraction=0.05,
        num_pairs=num_pairs,
    )  # fmt: skip


# ------------------------------------------------------------------ the linear model


def test_the_hessian_reproduces_the_loss_of_both_kinds_of_bowl():
    rng = np.random.default_rng(3)
    problem = groups_problem([2.0, 1.0, 0.0, 0.5], [-100, 100, 0, 50])
    seeds, n = 5, 6
    partner, cos, sin = random_rotations(rng, seeds, n)
    bowls = SeedBowls(
        theta_peak=rng.normal(10.0, 2.0, (seeds, n)),
        elo_per_scale=rng.uniform(0.02, 0.2, (seeds, n)),
        scale=rng.uniform(0.5, 3.0, n),
        partner=partner, cos=cos, sin=sin,
    )  # fmt: skip
    for bowl, step in ((problem.bowl, problem.view.c_dev), (bowls, bowls.scale)):
        hessian = linear_spsa.loss_hessian(bowl, step)
        peak = np.atleast_2d(bowl.theta_peak)
        e = rng.normal(0.0, 3.0, (peak.shape[0], 7, peak.shape[1])) * step
        direct = bowl.elo_loss(peak[:, None, :] + e)
        np.testing.assert_allclose(np.einsum("bnp,bpq,bnq->bn", e, hessian, e), direct, rtol=1e-9)


def flip_average(arm: OptimizerArm, problem, e: np.ndarray, k: int) -> np.ndarray:
    """The arm's own update from ``theta_peak + e``, averaged over every flip vector
    (one flip per seed), each report the expected result of one pair, 2 tanh(K x)."""
    view, bowl = problem.view, problem.bowl
    built = optimizers.build(arm.kind, view, arm.hyper)
    flips = np.array(list(itertools.product((-1.0, 1.0), repeat=view.num_params)))
    seeds = flips.shape[0]
    state = built.init(seeds)._replace(theta=np.tile(bowl.theta_peak + e, (seeds, 1)))
    iters = np.full(seeds, float(k))
    c = built.perturbation(iters)
    advantage = bowl.elo(state.theta + c * flips) - bowl.elo(state.theta - c * flips)
    report = Report(
        n_pairs=np.ones(seeds, dtype=np.int64),
        signal=2.0 * np.tanh(K * advantage),
        flip=flips, c=c, iter_local=iters,
    )  # fmt: skip
    return (built.update(state, report).theta - state.theta).mean(axis=0)


@pytest.mark.parametrize("kind", ["spsa", "spsa-autoselect"])
def test_the_mean_step_is_the_optimizers_own_update(kind):
    """E[delta e] = -8 K a_k H e (module docstring), checked against the optimizer's update."""
    problem = groups_problem([2.0, 1.0, 0.5], [-100, 100, 50])
    hyper = SpsaHyper() if kind == "spsa" else SpsaAutoselectHyper()
    arm = OptimizerArm(kind, kind, hyper)
    e = 1e-3 * problem.view.c_dev * np.array([1.0, -2.0, 3.0])  # tanh at its slope
    k = 700
    model = linear_spsa.linearise(arm, problem)
    a_k = model.schedule.a_k(np.array([k]))[0]
    h = np.diag(linear_spsa.loss_hessian(problem.bowl, problem.view.c_dev)[0])
    np.testing.assert_allclose(flip_average(arm, problem, e, k), -8 * K * a_k * h * e, rtol=1e-6)


def loss_left(problem, hyper: SpsaHyper, budget: int) -> float:
    """The share of the start loss left after ``budget`` pairs of the deterministic
    recursion e <- (1 - 8 K a_k h) e, pair by pair, on the schedule built for ``budget``."""
    view = dataclasses.replace(problem.view, num_pairs=budget)
    schedule = gain_schedule(view, hyper)
    k = np.arange(1, budget + 1, dtype=np.float64)
    h = problem.bowl.k_elo * problem.bowl.w_true
    a_k = schedule.a[None, :] / ((schedule.A + k) ** schedule.alpha)[:, None]
    amplitude = np.prod(1.0 - 8.0 * K * a_k * h, axis=0)
    e0 = view.theta_start - problem.bowl.theta_peak
    return float(np.sum(h * (e0 * amplitude) ** 2) / np.sum(h * e0**2))


@pytest.mark.parametrize("scenario", ["calibrated", "mixed"])
def test_the_need_against_the_recursion_pair_by_pair(default_config, scenario):
    problem = make_problem(default_config, scenario)
    arm = default_config.optimizer("spsa")
    model = linear_spsa.linearise(arm, problem)
    need = linear_spsa.predicted_need(arm, problem, model)
    share = linear_spsa.NEED_LOSS_SHARE
    assert loss_left(problem, arm.hyper, int(0.99 * need)) > share
    assert loss_left(problem, arm.hyper, int(1.01 * need)) < share
    if scenario == "calibrated":  # one rate: exactly three time constants of the amplitude
        assert need == pytest.approx(21659, abs=1)


def test_the_need_of_autoselect_is_half_its_own_games_count():
    """A bowl losing Autoselect's assumed 2 Elo half a range from the optimum: the need
    (3 relaxation times, pairs) is Fishtest's games count (3 lambda, games) / 2."""
    h = 2.0 / 100.0**2  # range 900..1100: 2 Elo lost at the half range, 100
    problem = groups_problem([1.0], [50.0], bounds=(900.0, 1100.0), start_elo=-h * 50.0**2)
    assert problem.bowl.k_elo == pytest.approx(h, rel=1e-12)
    arm = OptimizerArm("spsa-autoselect", "spsa-autoselect", SpsaAutoselectHyper())
    need = linear_spsa.predicted_need(arm, problem, linear_spsa.linearise(arm, problem))
    games = autoselect(problem.view, arm.hyper)["games"]  # rounded to 1000 games
    assert abs(2.0 * need - games) <= 500 + 2


def moments_pair_by_pair(model, problem, budget, variance0, block):
    """E[loss] after each pair from the per-pair mean and variance recursions, diagonal bowl."""
    h = np.diag(linear_spsa.loss_hessian(problem.bowl, problem.view.c_dev)[0])
    sch = model.schedule
    mean = problem.view.theta_start - problem.bowl.theta_peak
    var = np.zeros_like(mean)
    out = [float(np.sum(h * mean**2))]
    for k in range(1, budget + 1):  # a reference loop over pairs (test only)
        a_k, c_k = sch.a / (sch.A + k) ** sch.alpha, sch.c / k**sch.gamma
        rate = 8.0 * K * a_k * h
        signal = (8.0 * K) ** 2 * np.sum(c_k**2 * h**2 * (mean**2 + var))
        var = var * (1.0 - rate) ** 2 + (a_k / c_k) ** 2 * (variance0 + block * signal)
        mean = mean * (1.0 - rate)
        out.append(float(np.sum(h * (mean**2 + var))))
    return np.array(out)


def test_the_predicted_mean_loss_against_the_moments_pair_by_pair():
    problem = groups_problem([2.0, 1.0, 0.5, 0.0], [-100, 100, 100, 0], num_pairs=4000)
    arm = OptimizerArm("spsa", "spsa", SpsaHyper(A=300))
    model = linear_spsa.linearise(arm, problem)
    pairs = np.linspace(0, 4000, 41).astype(int)
    predicted = linear_spsa.predicted_mean_loss(model, pairs, 0.45, 36.0)
    reference = moments_pair_by_pair(model, problem, 4000, 0.45, 36.0)[pairs]
    np.testing.assert_allclose(predicted, reference, rtol=3e-3)


def test_the_prediction_against_a_simulation(default_config):
    """Calibrated, sync, spsa, 100 seeds: the mean loss within 3.5 standard errors at every
    checkpoint, and the predicted relaxation within two checkpoints of the measured."""
    raw = dict(default_config.resolved, checkpoints=61)
    config = resolve_core(raw)
    run = simulate(config, optimizer="spsa", batch_mode="sync", scenario="calibrated",
                   seeds=range(100))  # fmt: skip
    loss = run["elo_loss"].values  # (seed, pairs)
    pairs = run["pairs"].values
    problem = make_problem(config, "calibrated")
    model = linear_spsa.linearise(config.optimizer("spsa"), problem)
    variance0 = linear_spsa.pair_variance(make_noise(config, "calibrated"))
    predicted = linear_spsa.predicted_mean_loss(model, pairs, variance0, 36.0)
    se = loss.std(axis=0, ddof=1) / math.sqrt(loss.shape[0])
    assert np.all(np.abs(predicted - loss.mean(axis=0)) <= 3.5 * se + 1e-12)
    measured = relaxation.measured_relaxation(loss, pairs)
    expected = relaxation.relaxation_pairs(predicted, pairs)
    assert math.isfinite(measured) and abs(expected - measured) <= 2 * (pairs[1] - pairs[0])


def test_arms_without_a_linear_prediction_say_why(default_config):
    view = make_problem(default_config, "calibrated").view
    assert linear_spsa.not_predicted(default_config.optimizer("spsa"), view) is None
    assert "not an SPSA kind" in linear_spsa.not_predicted(default_config.optimizer("adam-lr-0p04"))
    cwd = OptimizerArm("cwd", "spsa-cwd", optimizers.REGISTRY["spsa-cwd"].hyper(lambda_cwd=0.5))
    assert "weight decay" in linear_spsa.not_predicted(cwd)
    frozen = OptimizerArm("s", "spsa", SpsaHyper(r_scale=0.0))
    assert "zero gain" in linear_spsa.not_predicted(frozen, view)


def test_gain_sum_by_terms_and_by_integral():
    n = 250_000
    exact = float(np.sum((5000.0 + np.arange(1, n + 1)) ** -0.602))
    assert linear_spsa.gain_sum(5000.0, 0.602, n) == pytest.approx(exact, rel=1e-12)
    assert linear_spsa.gain_sum(0.0, 0.0, 1234) == 1234.0


# ------------------------------------------------------------------ measured relaxation

PAIRS = np.arange(0, 10001, 100)


def test_an_exponential_relaxes_where_it_enters_the_band():
    tau, floor, start = 1000.0, 0.3, 5.0
    loss = floor + (start - floor) * np.exp(-PAIRS / tau)
    plateau = loss[PAIRS >= 9000].mean()
    band = plateau + 0.1 * (start - plateau)
    expected = 100.0 * math.ceil(-tau * math.log((band - floor) / (start - floor)) / 100.0)
    assert relaxation.relaxation_pairs(loss, PAIRS) == expected == 2400.0  # ln 10 tau


@pytest.mark.parametrize(
    "loss",
    [
        0.3 + 4.7 * np.exp(-PAIRS / 5000.0),  # still falling at the end
        5.0 - 4.0 * PAIRS / PAIRS[-1],  # a straight line
        np.where(PAIRS < 6000, 5.0, 0.3),  # relaxes after half the budget
        np.full(PAIRS.shape, 5.0),  # never falls
    ],
    ids=["slow", "linear", "late", "flat"],
)
def test_trajectories_without_a_plateau_are_not_reached(loss):
    assert relaxation.relaxation_pairs(loss, PAIRS) == math.inf


def test_a_fall_within_the_noise_is_not_a_relaxation():
    rng = np.random.default_rng(7)
    noise = rng.normal(0.0, 0.5, (8, PAIRS.size))
    flat = 5.0 + noise
    falling = 0.3 + 4.7 * np.exp(-PAIRS / 1000.0) + 0.05 * noise
    assert relaxation.measured_relaxation(flat, PAIRS) == math.inf
    assert relaxation.measured_relaxation(falling, PAIRS) == pytest.approx(2400.0, abs=200.0)


# ------------------------------------------------------------------ verdicts


def cells(rows) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["optimizer", "predicted_need_pairs", "relaxation_pairs"])
    frame["batch_mode"], frame["scenario"] = "sync", "s"
    frame["no_prediction"] = np.where(frame["predicted_need_pairs"].isna(), "not SPSA", "")
    return frame


def test_the_reference_is_the_baseline_else_the_first_predicted_arm():
    both = cells([("adam", np.nan, 100.0), ("spsa-b", 500.0, 100.0), ("spsa", 900.0, 100.0)])
    verdict = relaxation.problem_verdicts(both, "spsa", 1000.0).iloc[0]
    assert verdict["reference"] == "spsa" and verdict["need_pairs"] == 900.0 and verdict["ranked"]
    verdict = relaxation.problem_verdicts(both, "adam", 700.0).iloc[0]
    assert verdict["reference"] == "spsa-b" and verdict["ranked"]
    verdict = relaxation.problem_verdicts(both, "spsa", 600.0).iloc[0]
    assert not verdict["ranked"] and verdict["budget_fraction"] == pytest.approx(600 / 900)
    assert "0.67 of the 900 pairs `spsa` needs (short by 300 pairs)" in verdict["shortfall"]


def test_an_unrelaxed_reference_is_not_ranked_and_without_one_the_baseline_decides():
    stuck = cells([("spsa", 100.0, math.inf), ("adam", np.nan, 50.0)])
    verdict = relaxation.problem_verdicts(stuck, "spsa", 1000.0).iloc[0]
    assert not verdict["ranked"] and "has not relaxed" in verdict["shortfall"]
    unpredicted = cells([("adam", np.nan, 50.0), ("sgd", np.nan, math.inf)])
    assert relaxation.problem_verdicts(unpredicted, "adam", 10.0).iloc[0]["ranked"]
    assert not relaxation.problem_verdicts(unpredicted, "sgd", 10.0).iloc[0]["ranked"]


# ------------------------------------------------------------------ NOT RANKED on real runs


def tiny_benchmark(num_pairs: int):
    """calibrated, sync, 8 seeds: spsa (the baseline, need 21,659 pairs), adam, sf-sgd."""
    raw = small_config_dict(num_pairs=num_pairs)
    raw["seeds"] = {"first": 0, "count": 8, "per_job": 8}
    raw["scenarios"] = {"calibrated": raw["scenarios"]["calibrated"]}
    raw["batch_modes"] = {"sync": raw["batch_modes"]["sync"]}
    raw["optimizers"] = {"spsa": {}, "adam": {}, "sf-sgd": {}}
    config = resolve_core(raw)
    runs = [
        simulate(config, optimizer=arm, batch_mode="sync", scenario="calibrated", seeds=range(8))
        for arm in config.optimizers
    ]
    return combined(runs, config)


def combined(runs, config):
    """The runs written and combined as the workflow does, loaded into memory."""
    import tempfile
    from pathlib import Path

    from spsa_bench.results.atomic import write_atomic

    with tempfile.TemporaryDirectory() as tmp:
        paths = [write_atomic(run, Path(tmp) / f"{i}.nc") for i, run in enumerate(runs)]
        order = {"optimizer": list(config.optimizers)}
        return combine_benchmark(paths, order=order, config_json=config.to_json()).load()


@pytest.fixture(scope="module", params=[600, 45000], ids=["tiny", "generous"])
def budget_case(request):
    ds = tiny_benchmark(request.param)
    cells = relaxation.relaxation_table(ds)
    table = tables.convergence_table(ds, baseline="spsa", targets=[0.5], n_boot=20,
                                     relaxation=cells)  # fmt: skip
    text = tables.convergence_markdown(table, baseline="spsa", targets=[0.5])
    verdicts = relaxation.problem_verdicts(cells, "spsa", float(request.param))
    ranks = ranking.rank_table(ds, n_boot=20, verdicts=verdicts)
    return request.param, table, text, ranks, ranking.rank_markdown(ranks)


def optimizer_column(text: str) -> list[str]:
    """The optimizer column of the first comparison's table in the convergence markdown."""
    block = text.split("### calibrated · sync", 1)[1].split("\n\n")[2]
    return [line.split("|")[2].strip() for line in block.splitlines()[2:]]


def test_not_ranked_for_a_tiny_budget_and_ranked_for_a_generous_one(budget_case):
    budget, table, text, ranks, rank_text = budget_case
    assert (table["predicted_need_pairs"].dropna() == 21659).all()
    if budget == 600:
        assert "**NOT RANKED**" in text and "**NOT RANKED**" in rank_text
        assert "short by 21,059 pairs" in text
        assert not table["ranked"].any() and table["rank"].isna().all()
        assert ranks["rank"].isna().all() and (ranks["n_scenarios"] == 0).all()
    else:
        assert "**NOT RANKED**" not in text and "**NOT RANKED**" not in rank_text
        assert table["ranked"].all() and math.isfinite(
            table.set_index("optimizer").loc["spsa", "relaxation_pairs"]
        )
        assert sorted(table["rank"]) == [1.0, 2.0, 3.0]


def test_rows_come_in_name_order_under_the_banner_and_by_loss_when_ranked(budget_case):
    budget, table, text, ranks, _ = budget_case
    shown = optimizer_column(text)
    if budget == 600:
        assert shown == sorted(shown) == ["adam", "sf-sgd", "spsa"]
        assert list(ranks["arm"]) == ["adam", "sf-sgd", "spsa"]
    else:
        by_loss = table.sort_values("final_loss_mean")["optimizer"].tolist()
        assert shown == by_loss and list(ranks.sort_values("rank")["arm"]) == list(ranks["arm"])


def test_the_recorded_configuration_of_a_tuned_sweep_resolves():
    """A combined file records the resolved configuration, which keeps no sweep: its
    tuning section would be refused (no swept arm), so the grid is read without it."""
    raw = without_studies(small_config_dict(num_pairs=600))
    raw["optimizers"] = {"spsa": {}, "adam": {"lr": [0.02, 0.04]}}
    raw["tuning"] = {"seeds": {"first": 100, "count": 3}}
    config = resolve(raw)
    recorded = relaxation.benchmark_config(xr.Dataset(attrs={"config": config.to_json()}))
    assert set(recorded.optimizers) == {"spsa", "adam-lr-0p02", "adam-lr-0p04"}
    assert recorded.optimizer("adam-lr-0p04").hyper == config.optimizer("adam-lr-0p04").hyper
