"""The vectorized replay of the built-in ``spsa`` optimizer against the literal
reference of Fishtest's SPSA (:mod:`spsa_bench.reference.fishtest`), event by event:
handouts, the worker's rounding, net wins, every update, the probe counts."""

import dataclasses
from functools import cache

import numpy as np
import pytest
from conftest import random_rotations, small_config_dict

from spsa_bench import optimizers
from spsa_bench.config.loader import resolve
from spsa_bench.engine.replay import replay
from spsa_bench.engine.simulate import make_schedule
from spsa_bench.model.bowl import SeedBowls, TrueBowl
from spsa_bench.model.developer import DeveloperView
from spsa_bench.model.rounding import seed_keys, splitmix_uniforms
from spsa_bench.optimizers.base import Report
from spsa_bench.reference.fishtest import FishtestTune, run_fishtest_reference, splitmix_uniform

NUM_PAIRS = 1200
SEEDS = (0, 3, 8)
MODES = ("sync", "async-variable")
ROUNDINGS = ("stochastic", "nearest", "none")
HYPER = {"A": 120.0, "alpha": 0.602, "gamma": 0.101, "r_end": 0.02}

# Integer parameters with c_end below 1 (equal and swapped integers happen) and above 2,
# and float parameters; starts away from 0 so relative tolerances mean something.
THETA_START = np.array([100.5, 40.0, -30.0, 7.3, 250.0, -12.6, 60.4])
C_END = np.array([0.15, 0.8, 2.7, 0.6, 4.3, 1.3, 0.45])
INTEGER = np.array([True, True, True, False, True, False, True])
HALF_RANGE = np.array([6.0, 10.0, 40.0, 8.0, 60.0, 20.0, 0.8])  # the last one hits its bounds
THETA_MIN, THETA_MAX = THETA_START - HALF_RANGE, THETA_START + HALF_RANGE


def small_config():
    raw = small_config_dict(num_pairs=NUM_PAIRS)
    raw["batch_modes"]["async-variable"]["workers"] = 4
    return resolve(raw)


CONFIG = small_config()
ENTROPY = CONFIG.entropy


def view_of(r_end=None) -> DeveloperView:
    return DeveloperView(
        THETA_START, THETA_MIN, THETA_MAX, C_END, NUM_PAIRS, integer=INTEGER, r_end=r_end
    )


def tune_of(r_end) -> FishtestTune:
    return FishtestTune(
        theta_start=THETA_START.tolist(),
        theta_min=THETA_MIN.tolist(),
        theta_max=THETA_MAX.tolist(),
        c_end=C_END.tolist(),
        r_end=[float(r) for r in np.broadcast_to(r_end, C_END.shape)],
        integer=INTEGER.tolist(),
        A=HYPER["A"],
        alpha=HYPER["alpha"],
        gamma=HYPER["gamma"],
        num_pairs=NUM_PAIRS,
    )


def true_bowl() -> TrueBowl:
    peak = THETA_START + np.array([2.0, -4.0, 15.0, 3.0, -20.0, 6.0, 2.5])
    return TrueBowl.from_start(THETA_START, peak, 1.0 / C_END**2, -6.0, 0.0)


def rotated_seed_bowls() -> SeedBowls:
    """One rotated bowl per seed of ``SEEDS``, built by hand (every parameter paired
    but one, angles up to 45 degrees)."""
    rng = np.random.default_rng(11)
    n_seeds, n_params = len(SEEDS), THETA_START.size
    partner, cos, sin = random_rotations(rng, n_seeds, n_params)
    peak = THETA_START + rng.normal(0, 3, (n_seeds, n_params)) * C_END
    return SeedBowls(
        peak, rng.uniform(0.3, 1.5, (n_seeds, n_params)), C_END, partner, cos, sin, peak_elo=1.0
    )


BOWLS = {"true": true_bowl, "rotated-seed-bowls": rotated_seed_bowls}


def batch_of(mode_name):
    mode = CONFIG.batch_mode(mode_name)
    return mode.batch_size if mode.is_sync else mode.settings


@cache
def schedule_of(mode_name):
    return make_schedule(CONFIG, CONFIG.batch_mode(mode_name), SEEDS)


def spied(optimizer):
    """``optimizer`` with ``update`` wrapped to record every report and the new point."""
    reports, theta = [], []

    def update(state, report):
        new = optimizer.update(state, report)
        reports.append(Report(*(None if v is None else np.array(v, copy=True) for v in report)))
        theta.append(np.array(optimizer.export(new), copy=True))
        return new

    return dataclasses.replace(optimizer, update=update), reports, theta


def run_both(mode, rounding, bowl_name, view, r_end):
    """The replay of ``spsa`` (spied, seeds kept in place) and the reference per seed."""
    bowl = BOWLS[bowl_name]()
    schedule = schedule_of(mode)
    hyper = optimizers.hyper_from_dict("spsa", HYPER)
    optimizer, reports, theta = spied(optimizers.build("spsa", view, hyper))
    result = replay(
        optimizer, schedule, bowl, view, entropy=ENTROPY, checkpoints=11, compact=False,
        rounding=rounding,
    )  # fmt: skip
    refs = []
    for row, seed in enumerate(SEEDS):
        seed_bowl = bowl.rows(np.array([row])) if isinstance(bowl, SeedBowls) else bowl
        refs.append(
            run_fishtest_reference(
                tune_of(r_end), seed_bowl, ENTROPY, seed, batch_of(mode), rounding=rounding
            )
        )
    return schedule, result, reports, np.array(theta), refs


def assert_replay_is_fishtest(schedule, result, reports, theta, refs):
    fields = {
        name: np.array([getattr(r, name) for r in reports])
        for name in Report._fields
        if reports[0]._asdict()[name] is not None
    }
    atol = 1e-12 * float(HALF_RANGE.max())  # for a parameter passing near 0
    for row, ref in enumerate(refs):
        n = int(schedule.n_jobs[row])
        assert len(ref.jobs) == len(ref.events) == n
        assert schedule.arrival_job[row, :n].tolist() == ref.arrival_job
        assert schedule.job_pairs[row, :n].tolist() == [job.pairs for job in ref.jobs]
        arriving = [ref.jobs[event.job] for event in ref.events]
        # the handouts: iter + 1 of the report-time counter, c_k and the flips
        assert fields["iter_local"][:n, row].tolist() == [job.k for job in arriving]
        assert fields["n_pairs"][:n, row].tolist() == [job.pairs for job in arriving]
        np.testing.assert_array_equal(fields["flip"][:n, row], [job.flip for job in arriving])
        np.testing.assert_allclose(
            fields["c"][:n, row], [job.c_k for job in arriving], rtol=1e-14, atol=0
        )
        # the results: net wins of the plus engine, exactly
        np.testing.assert_array_equal(fields["signal"][:n, row], [j.net_wins for j in arriving])
        if "realized" in fields:
            np.testing.assert_allclose(
                fields["realized"][:n, row], [j.realized for j in arriving], rtol=1e-12, atol=0
            )
        # every update
        np.testing.assert_allclose(theta[:n, row], ref.theta, rtol=1e-12, atol=atol)
        assert [event.iteration for event in ref.events][-1] == NUM_PAIRS
        # the worker's rounding KPIs and the outcomes played, exactly
        if ref.probes:
            assert result.probe_equal_fraction[row] == ref.probe_equal_fraction
            assert result.probe_swapped_fraction[row] == ref.probe_swapped_fraction
        else:
            assert np.isnan(result.probe_equal_fraction[row])
            assert np.isnan(result.probe_swapped_fraction[row])
        counted = np.sum([job.outcome_counts for job in ref.jobs], axis=0)
        np.testing.assert_array_equal(result.outcome_counts[row], counted)
        # not vacuous: theta moved
        assert not np.allclose(ref.theta[-1], ref.theta_start)


def rounding_happened(refs, rounding):
    """The hazards the rounding test is about did happen (stochastic: both)."""
    equal = sum(job.equal for ref in refs for job in ref.jobs)
    swapped = sum(job.swapped for ref in refs for job in ref.jobs)
    if rounding == "none":
        return equal == swapped == 0
    if rounding == "nearest":
        return equal > 0  # nearest never swaps (rounding is monotone)
    return equal > 0 and swapped > 0


@pytest.mark.parametrize("bowl_name", sorted(BOWLS))
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_replay_of_spsa_equals_fishtest_reference(mode, rounding, bowl_name):
    schedule, result, reports, theta, refs = run_both(
        mode, rounding, bowl_name, view_of(), HYPER["r_end"]
    )
    assert_replay_is_fishtest(schedule, result, reports, theta, refs)
    assert rounding_happened(refs, rounding)
    assert any(  # not vacuous: some probes were clipped to the bounds
        job.plus[i] != job.theta[i] + job.c_k[i] * job.flip[i]
        for ref in refs
        for job in ref.jobs
        for i in range(C_END.size)
    )
    if mode != "sync":  # asynchronous: jobs are handed out while others are out
        assert any(event.staleness > 0 for ref in refs for event in ref.events)


def _reads_view_r_end() -> bool:
    """Whether ``spsa`` takes its gains from ``view.r_end`` (another change adds it):
    the same report moves theta differently with a per-parameter r_end in the view."""
    hyper = optimizers.hyper_from_dict("spsa", HYPER)
    report = Report(
        n_pairs=np.array([36]), signal=np.array([5.0]), flip=np.ones((1, C_END.size)),
        c=np.tile(C_END, (1, 1)), iter_local=np.array([1]),
    )  # fmt: skip
    moved = []
    for view in (view_of(), view_of(r_end=np.linspace(0.005, 0.05, C_END.size))):
        optimizer = optimizers.build("spsa", view, hyper)
        moved.append(optimizer.export(optimizer.update(optimizer.init(1), report)))
    return not np.array_equal(moved[0], moved[1])


@pytest.mark.parametrize("rounding", ["stochastic", "nearest"])
@pytest.mark.parametrize("mode", MODES)
def test_replay_with_per_parameter_r_end_equals_fishtest_reference(mode, rounding):
    """Per-parameter r_end of a Fishtest parameter block (``DeveloperView.r_end``)."""
    assert _reads_view_r_end()
    r_end = np.linspace(0.005, 0.05, C_END.size)
    schedule, result, reports, theta, refs = run_both(
        mode, rounding, "rotated-seed-bowls", view_of(r_end=r_end), r_end
    )
    assert_replay_is_fishtest(schedule, result, reports, theta, refs)


def test_python_splitmix_equals_the_vectorized_stream():
    keys = seed_keys(ENTROPY, list(SEEDS))
    positions = np.array([0, 1, 2, 13, 999, 2**32 + 5, 2**63 - 1, 2**64 - 2], dtype=np.uint64)
    expected = splitmix_uniforms(keys, positions)
    for row, key in enumerate(keys):
        got = [splitmix_uniform(int(key), int(p)) for p in positions]
        np.testing.assert_array_equal(got, expected[row])


def test_fishtest_reference_handout_follows_the_rules():
    """The first handout: k' = 1, c_k = c_end N**gamma, each side clipped on its own;
    a report moves iter by its pairs only."""
    ref = run_fishtest_reference(
        tune_of(HYPER["r_end"]), true_bowl(), ENTROPY, 0, batch_of("async-variable")
    )
    first = ref.jobs[0]
    assert first.k == 1 and first.iteration == 0
    np.testing.assert_allclose(first.c_k, C_END * NUM_PAIRS ** HYPER["gamma"], rtol=1e-15)
    expected_plus = np.clip(THETA_START + np.array(first.c_k) * first.flip, THETA_MIN, THETA_MAX)
    np.testing.assert_array_equal(first.plus, expected_plus)
    # every worker asked at time 0, before any report: all from theta_start with k' = 1
    workers = CONFIG.batch_mode("async-variable").workers
    assert [job.k for job in ref.jobs[:workers]] == [1] * workers
    iterations = [event.iteration for event in ref.events]
    assert np.all(np.diff([0, *iterations]) == [event.pairs for event in ref.events])
    for job in ref.jobs:
        assert job.k == job.iteration + 1
    for job in ref.jobs:  # the integers played are integers, the floats untouched
        for i, flag in enumerate(INTEGER):
            if flag:
                assert job.played_plus[i] == np.floor(job.played_plus[i])
            else:
                assert job.played_plus[i] == job.plus[i]
