"""The vectorized runner (schedule + replay) against the scalar heapq reference
runner (:mod:`spsa_bench.reference.runner`), event by event; common random
numbers across optimizers; seed-chunk invariance; the exact budget."""

import dataclasses
from functools import cache

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench import optimizers
from spsa_bench.config.loader import resolve
from spsa_bench.dispatch import kpis
from spsa_bench.dispatch.asynchronous import AsyncSettings, async_schedule
from spsa_bench.dispatch.schedule import sync_schedule
from spsa_bench.engine.replay import replay
from spsa_bench.engine.simulate import make_problem, make_schedule, simulate
from spsa_bench.model import pentanomial
from spsa_bench.model.noise import VENDORED, noise_model
from spsa_bench.optimizers import REGISTRY, hyper_from_dict
from spsa_bench.optimizers.base import Report
from spsa_bench.reference.runner import run_runner_reference

NUM_PAIRS = 1200
SEEDS = (0, 3, 8)
MODES = ("sync", "async-fixed", "async-variable")
MAIN_KINDS = ("spsa", "spsa-block", "sf-sgd-block", "adam")
OTHER_KINDS = tuple(kind for kind in REGISTRY if kind not in MAIN_KINDS)
CONSTANT_C_KINDS = ("sf-sgd", "sf-sgd-block", "sf-adam", "adam", "adam-block", "ademamix")


def small_config(num_pairs: int = NUM_PAIRS):
    raw = small_config_dict(num_pairs=num_pairs)
    raw["batch_modes"]["async-fixed"]["workers"] = 5
    raw["batch_modes"]["async-variable"]["workers"] = 4
    return resolve(raw)


CONFIG = small_config()
ENTROPY = CONFIG.entropy
PROBLEM = make_problem(CONFIG, "mixed")


def batch_of(mode):
    """What the reference takes for a batch mode: its AsyncSettings or the sync batch size."""
    return mode.batch_size if mode.is_sync else mode.settings


@cache
def schedule_of(mode_name: str, seeds: tuple[int, ...]):
    return make_schedule(CONFIG, CONFIG.batch_mode(mode_name), seeds)


@cache
def reference(kind, mode_name, seed, counter="arrival", signal="raw", hyper=None):
    mode = CONFIG.batch_mode(mode_name)
    return run_runner_reference(
        kind,
        hyper,
        PROBLEM,
        ENTROPY,
        seed,
        NUM_PAIRS,
        batch_of(mode),
        iteration_counter=counter,
        signal=signal,
    )


@dataclasses.dataclass
class Spied:
    """What a spy on ``update`` saw: one entry per replay event (lock-step over seeds)."""

    reports: list
    theta: list

    def stacked(self) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Report fields ``(event, seed, ...)`` and ``export(new_state)`` ``(event, seed, param)``."""
        fields = {
            name: np.array([getattr(r, name) for r in self.reports]) for name in Report._fields
        }
        return fields, np.array(self.theta)


def spied(optimizer):
    """``optimizer`` with its ``update`` wrapped to record every report and the new point."""
    log = Spied([], [])

    def update(state, report):
        new = optimizer.update(state, report)
        log.reports.append(  # a Report, or spsa-2's SecondOrderReport
            type(report)(
                *(None if value is None else np.array(value, copy=True) for value in report)
            )
        )
        log.theta.append(np.array(optimizer.export(new), copy=True))
        return new

    return dataclasses.replace(optimizer, update=update), log


def run_replay(
    kind, schedule, *, counter="arrival", signal="raw", hyper=None, checkpoints=41, noise=VENDORED
):
    optimizer, log = spied(optimizers.build(kind, PROBLEM.view, hyper))
    result = replay(
        optimizer,
        schedule,
        PROBLEM.bowl,
        PROBLEM.view,
        entropy=ENTROPY,
        signal=signal,
        iteration_counter=counter,
        checkpoints=checkpoints,
        compact=False,  # keep every seed's row in every event, so the spy lines up by seed
        noise=noise,
    )
    return result, log


def assert_runner_matches_reference(schedule, result, log, refs, counter):
    """Schedule, staleness, every report and every update of every seed, and the checkpoints.

    Why a spy rather than the checkpoint grid alone: the grid keeps only the
    last state before each grid point, so an error in one update could be
    hidden by later ones (or by a job ending between two points); the spy sees
    ``export(state)`` after every arrival, which is what the reference returns.
    The grid is then checked separately, against the reference's trajectory,
    to cover the recorder too.
    """
    reports, theta = log.stacked()
    stale = schedule.staleness_pairs()
    iter_local = schedule.iter_local(counter)
    for row, ref in enumerate(refs):
        n = int(schedule.n_jobs[row])
        jobs = ref.jobs
        assert len(jobs) == n == len(ref.events)
        # the schedule, in dispatch order
        assert schedule.job_worker[row, :n].tolist() == [j.worker for j in jobs]
        assert schedule.job_pairs[row, :n].tolist() == [j.pairs for j in jobs]
        assert schedule.job_offset[row, :n].tolist() == [j.offset for j in jobs]
        assert schedule.job_arrived_before[row, :n].tolist() == [j.arrived_before for j in jobs]
        assert iter_local[row, :n].tolist() == [j.iter_local for j in jobs]
        assert schedule.arrival_job[row, :n].tolist() == ref.arrival_job
        assert stale[row, :n].tolist() == ref.staleness_by_job()
        if not np.all(np.isnan(schedule.job_arrival_time[row, :n])):
            np.testing.assert_allclose(
                schedule.job_arrival_time[row, :n], [j.finish_time for j in jobs], rtol=1e-12
            )
        # every report, in arrival order
        arriving = [jobs[event.job] for event in ref.events]
        # the gradient match's pairs (all the job's unless it also played a Hessian match)
        assert reports["n_pairs"][:n, row].tolist() == [j.gradient_pairs for j in arriving]
        assert reports["iter_local"][:n, row].tolist() == [j.iter_local for j in arriving]
        np.testing.assert_array_equal(reports["flip"][:n, row], [j.flip for j in arriving])
        np.testing.assert_array_equal(reports["c"][:n, row], [j.c for j in arriving])
        # what the asynchrony-aware options read: staleness at arrival, in flight at dispatch
        assert reports["staleness"][:n, row].tolist() == [e.staleness for e in ref.events]
        in_flight = [j.offset - j.arrived_before for j in arriving]
        assert reports["in_flight"][:n, row].tolist() == in_flight
        np.testing.assert_allclose(
            reports["signal"][:n, row], [j.signal for j in arriving], rtol=1e-12, atol=0
        )
        # every update
        np.testing.assert_allclose(theta[:n, row], ref.theta, rtol=1e-12, atol=0)
        # the checkpoints: the state after the last arrival ending at or before each point
        arrived = np.cumsum([event.pairs for event in ref.events])
        done = np.searchsorted(arrived, result.pairs_grid, side="right")
        states = np.vstack([ref.theta_start[None, :], ref.theta])
        np.testing.assert_allclose(result.theta[row], states[done], rtol=1e-12, atol=0)
        steps = np.sqrt(np.sum(np.diff(states, axis=0) ** 2, axis=1))
        np.testing.assert_allclose(
            result.avg_step_size_last_100[row], np.mean(steps[-100:]), rtol=1e-9, atol=1e-12
        )
        assert result.n_updates[row] == n
        assert result.total_pairs[row] == ref.total_pairs == NUM_PAIRS
        # every pair's outcome, counted
        counted = np.sum([j.outcome_counts for j in jobs], axis=0)
        np.testing.assert_array_equal(result.outcome_counts[row], counted)


@pytest.mark.parametrize("signal", ["raw", "scaled"])
@pytest.mark.parametrize("counter", ["arrival", "dispatch"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", MAIN_KINDS)
def test_vectorized_runner_equals_reference(kind, mode, counter, signal):
    schedule = schedule_of(mode, SEEDS)
    result, log = run_replay(kind, schedule, counter=counter, signal=signal)
    refs = [reference(kind, mode, seed, counter, signal) for seed in SEEDS]
    assert_runner_matches_reference(schedule, result, log, refs, counter)
    for ref in refs:  # not vacuous: the optimizer moved
        assert not np.array_equal(ref.theta[-1], ref.theta_start)


@pytest.mark.parametrize(
    ("mode", "counter", "signal"),
    [("async-variable", "arrival", "raw"), ("async-fixed", "dispatch", "scaled")],
)
@pytest.mark.parametrize("kind", OTHER_KINDS)
def test_vectorized_runner_equals_reference_other_kinds(kind, mode, counter, signal):
    schedule = schedule_of(mode, SEEDS)
    result, log = run_replay(kind, schedule, counter=counter, signal=signal)
    refs = [reference(kind, mode, seed, counter, signal) for seed in SEEDS]
    assert_runner_matches_reference(schedule, result, log, refs, counter)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("setting", ["LTC", {"draw_rate": 0.3, "sigma2": 0.8}])
def test_vectorized_runner_equals_reference_under_calibrated_noise(setting, mode):
    """With a calibrated noise model the replay (table thresholds) and the reference
    (the model's exact probabilities) agree event by event, counts included; and the
    noise is not vacuous: the outcomes differ from the vendored model's."""
    noise = noise_model(setting)
    schedule = schedule_of(mode, SEEDS)
    result, log = run_replay("spsa", schedule, noise=noise)
    refs = [
        run_runner_reference(
            "spsa",
            None,
            PROBLEM,
            ENTROPY,
            seed,
            NUM_PAIRS,
            batch_of(CONFIG.batch_mode(mode)),
            noise=noise,
        )
        for seed in SEEDS
    ]
    assert_runner_matches_reference(schedule, result, log, refs, "arrival")
    vendored, _ = run_replay("spsa", schedule)
    assert not np.array_equal(result.outcome_counts, vendored.outcome_counts)
    # DD is more (LTC) or less (draw rate 0.3) frequent than under the vendored model
    shares = [r.outcome_counts[:, 2].sum() / r.outcome_counts.sum() for r in (result, vendored)]
    expected = [m.probabilities(np.zeros(1))[0, 2] for m in (noise, VENDORED)]
    assert np.sign(shares[0] - shares[1]) == np.sign(expected[0] - expected[1])


def test_conventions_change_the_run():
    """The convention matrix above is not vacuous: in an asynchronous run the two
    counters give different iter_local (hence c and gains), the two signals
    different steps."""
    arrival = reference("spsa", "async-fixed", 0, "arrival", "raw")
    dispatch = reference("spsa", "async-fixed", 0, "dispatch", "raw")
    scaled = reference("spsa", "async-fixed", 0, "arrival", "scaled")
    assert [j.iter_local for j in arrival.jobs] != [j.iter_local for j in dispatch.jobs]
    assert all(
        j.iter_local == j.arrived_before + 1 and k.iter_local == k.offset + 1
        for j, k in zip(arrival.jobs, dispatch.jobs, strict=True)
    )
    assert not np.allclose(arrival.theta, dispatch.theta, rtol=1e-9, atol=0)
    assert not np.allclose(arrival.theta, scaled.theta, rtol=1e-9, atol=0)
    # the first reports are played at the same point: the signals differ by 2 sqrt(P)
    first = arrival.jobs[0]
    assert scaled.jobs[0].net_wins == first.net_wins
    assert scaled.jobs[0].signal == pytest.approx(
        first.net_wins / (2 * np.sqrt(PROBLEM.view.num_params)), rel=1e-15
    )


@pytest.mark.parametrize("kind", ["spsa", "sf-sgd-block", "adam"])
def test_one_worker_async_fixed_replays_like_sync(kind):
    seeds = (0, 1, 2)
    settings = AsyncSettings(num_workers=1, batch="fixed", batch_size=36)
    one_worker = async_schedule(ENTROPY, seeds, NUM_PAIRS, settings)
    sync = sync_schedule(seeds, NUM_PAIRS, 36)
    a_result, a_log = run_replay(kind, one_worker)
    s_result, s_log = run_replay(kind, sync)
    np.testing.assert_array_equal(np.array(a_log.theta), np.array(s_log.theta))
    np.testing.assert_array_equal(a_result.theta, s_result.theta)
    np.testing.assert_array_equal(a_result.avg_step_size_last_100, s_result.avg_step_size_last_100)
    assert np.all(one_worker.staleness_pairs() == 0) and np.all(sync.staleness_pairs() == 0)
    # the reference agrees: an event queue of one worker is the synchronous loop
    for seed in seeds:
        ref_async = run_runner_reference(kind, None, PROBLEM, ENTROPY, seed, NUM_PAIRS, settings)
        ref_sync = run_runner_reference(kind, None, PROBLEM, ENTROPY, seed, NUM_PAIRS, 36)
        np.testing.assert_array_equal(ref_async.theta, ref_sync.theta)
        assert (
            ref_async.staleness_by_job() == ref_sync.staleness_by_job() == [0] * len(ref_sync.jobs)
        )


@pytest.mark.parametrize("batch", ["fixed", "variable"])
def test_many_workers_make_jobs_stale(batch):
    settings = AsyncSettings(num_workers=20, batch=batch)
    seeds = (0, 1, 2, 3)
    schedule = async_schedule(ENTROPY, seeds, 3000, settings)
    stale = schedule.staleness_pairs()[schedule.job_mask()]
    assert np.all(stale >= 0)
    assert np.mean(stale > 0) > 0.8
    ref = run_runner_reference("spsa", None, PROBLEM, ENTROPY, 2, 3000, settings)
    ref_stale = np.array(ref.staleness_by_job())
    np.testing.assert_array_equal(ref_stale, schedule.staleness_pairs()[2, : len(ref.jobs)])
    assert np.all(ref_stale >= 0) and np.mean(ref_stale > 0) > 0.8
    # only a job arriving before any other can be fresh; with 20 workers most wait
    assert np.mean(ref_stale) > 2 * np.mean([j.pairs for j in ref.jobs])


def test_schedule_is_identical_across_optimizers(monkeypatch):
    """Common random numbers (spec errata 4): at one seed every optimizer gets the
    same jobs, in the same order, with the same flips and match uniforms."""
    kinds = ("spsa", "spsa-block", "sf-sgd-block", "sf-adam", "adam", "ademamix")
    seed = (5,)
    seen = {}
    original = pentanomial.at_least_and_net_wins
    for kind in kinds:
        uniforms = []

        def record(u, thresholds, uniforms=uniforms):
            uniforms.append(np.array(u, copy=True))
            return original(u, thresholds)

        monkeypatch.setattr(pentanomial, "at_least_and_net_wins", record)
        schedule = make_schedule(CONFIG, CONFIG.batch_mode("async-variable"), seed)
        _, log = run_replay(kind, schedule)
        reports, _ = log.stacked()
        seen[kind] = (reports, uniforms, schedule)
    monkeypatch.setattr(pentanomial, "at_least_and_net_wins", original)
    base_reports, base_uniforms, base_schedule = seen[kinds[0]]
    assert len(base_reports["n_pairs"]) > 2 * CONFIG.batch_mode("async-variable").workers
    assert len(base_uniforms) == len(base_reports["n_pairs"])  # one draw set per job
    for kind in kinds[1:]:
        reports, uniforms, schedule = seen[kind]
        np.testing.assert_array_equal(schedule.arrival_job, base_schedule.arrival_job)
        for name in ("n_pairs", "iter_local", "flip"):
            np.testing.assert_array_equal(reports[name], base_reports[name], err_msg=name)
        assert len(uniforms) == len(base_uniforms)
        for u, base in zip(uniforms, base_uniforms, strict=True):
            np.testing.assert_array_equal(u, base)
    for group in (("spsa", "spsa-block"), ("sf-sgd-block", "sf-adam", "adam", "ademamix")):
        for kind in group[1:]:
            np.testing.assert_array_equal(seen[kind][0]["c"], seen[group[0]][0]["c"])
    adam_c = seen["adam"][0]["c"]
    np.testing.assert_array_equal(adam_c, np.broadcast_to(PROBLEM.view.c_dev, adam_c.shape))
    # the reference agrees: same jobs (worker, size, uniforms, flip, iter_local) and order
    refs = {kind: reference(kind, "async-variable", 5) for kind in kinds}
    base = refs[kinds[0]]
    for kind in kinds[1:]:
        ref = refs[kind]
        assert ref.arrival_job == base.arrival_job
        for job, base_job in zip(ref.jobs, base.jobs, strict=True):
            assert (job.worker, job.pairs, job.offset, job.iter_local) == (
                base_job.worker,
                base_job.pairs,
                base_job.offset,
                base_job.iter_local,
            )
            np.testing.assert_array_equal(job.flip, base_job.flip)


def frozen_hyper(kind):
    """Hyperparameters of ``kind`` with a zero learning rate (theta never moves)."""
    name = "r_end" if REGISTRY[kind].family == "spsa" else "lr"
    return hyper_from_dict(kind, {name: 0.0})


def test_zero_learning_rate_gives_equal_results():
    """Same snapshot, same c, same flip, same uniforms: the same result (common
    random numbers), for every optimizer that probes with the same c."""
    seeds = (1, 6)
    schedule = schedule_of("async-fixed", seeds)
    signals = {}
    for kind in ("spsa", "spsa-block", "spsa-cwd", *CONSTANT_C_KINDS):
        _, log = run_replay(kind, schedule, hyper=frozen_hyper(kind))
        reports, theta = log.stacked()
        np.testing.assert_array_equal(theta, np.broadcast_to(PROBLEM.view.theta_start, theta.shape))
        signals[kind] = reports["signal"]
    for group in (("spsa", "spsa-block", "spsa-cwd"), CONSTANT_C_KINDS):
        for kind in group[1:]:
            np.testing.assert_array_equal(signals[kind], signals[group[0]], err_msg=kind)
    # results vary from job to job (the noise is real), and the reference agrees
    assert np.unique(signals["adam"]).size > 3
    ref = run_runner_reference(
        "adam",
        frozen_hyper("adam"),
        PROBLEM,
        ENTROPY,
        6,
        NUM_PAIRS,
        batch_of(CONFIG.batch_mode("async-fixed")),
    )
    n = len(ref.events)
    np.testing.assert_array_equal(
        signals["adam"][:n, 1], [ref.jobs[event.job].signal for event in ref.events]
    )
    # at a positive learning rate the jobs dispatched at time 0 (all from theta_start)
    # still share their results across the constant-c optimizers
    first = {kind: reference(kind, "async-fixed", 3).jobs for kind in ("sf-sgd-block", "adam")}
    workers = CONFIG.batch_mode("async-fixed").workers
    assert [j.net_wins for j in first["adam"][:workers]] == [
        j.net_wins for j in first["sf-sgd-block"][:workers]
    ]


@pytest.mark.parametrize("mode", ["async-fixed", "async-variable"])
def test_seed_chunk_invariance(mode):
    alone = schedule_of(mode, (7,))
    together = schedule_of(mode, tuple(range(12)))
    n = int(alone.n_jobs[0])
    assert together.n_jobs[7] == n
    for kind in ("spsa", "adam"):
        a_result, a_log = run_replay(kind, alone)
        t_result, t_log = run_replay(kind, together)
        np.testing.assert_array_equal(np.array(a_log.theta)[:n, 0], np.array(t_log.theta)[:n, 7])
        np.testing.assert_array_equal(a_result.theta[0], t_result.theta[7])
        assert a_result.avg_step_size_last_100[0] == t_result.avg_step_size_last_100[7]
    a_kpis, t_kpis = kpis.schedule_kpis(alone), kpis.schedule_kpis(together)
    assert a_kpis.keys() == t_kpis.keys()
    for name, (dims, values) in a_kpis.items():
        assert t_kpis[name][0] == dims
        np.testing.assert_array_equal(values[0], t_kpis[name][1][7], err_msg=name)


def test_budget_is_exhausted_exactly_in_every_mode():
    num_pairs = 1001  # not a multiple of any job size: the last job is cut
    config = small_config(num_pairs)
    seeds = range(4)
    for mode in MODES:
        ds = simulate(config, optimizer="spsa", batch_mode=mode, scenario="mixed", seeds=seeds)
        np.testing.assert_array_equal(ds["total_pairs"].values, num_pairs)
        assert ds["budget_exhausted"].values.dtype == bool
        assert ds["budget_exhausted"].values.all()
        schedule = make_schedule(config, config.batch_mode(mode), seeds)
        np.testing.assert_array_equal(ds["n_updates"].values, schedule.n_jobs)
        problem = make_problem(config, "mixed")
        ref = run_runner_reference(
            "spsa", None, problem, config.entropy, 3, num_pairs, batch_of(config.batch_mode(mode))
        )
        assert ref.total_pairs == num_pairs == sum(job.pairs for job in ref.jobs)
        assert len(ref.events) == int(ds["n_updates"].values[3])


@pytest.mark.parametrize("kind", ["spsa", "adam", "sf-adam-block"])
def test_compacting_finished_seeds_changes_nothing(kind):
    """Dropping seeds without events left (the default) gives bit-identical results."""
    schedule = make_schedule(CONFIG, CONFIG.batch_mode("async-variable"), np.arange(9))
    assert len(set(schedule.n_jobs.tolist())) > 1  # job counts differ, so seeds do get dropped
    runs = [
        replay(
            optimizers.build(kind, PROBLEM.view),
            schedule,
            PROBLEM.bowl,
            PROBLEM.view,
            entropy=ENTROPY,
            checkpoints=41,
            compact=compact,
        )
        for compact in (False, True)
    ]
    for field in ("theta", "avg_step_size_last_100", "total_pairs", "n_updates"):
        np.testing.assert_array_equal(getattr(runs[0], field), getattr(runs[1], field))
    for name in runs[0].extras:
        np.testing.assert_array_equal(runs[0].extras[name], runs[1].extras[name])
