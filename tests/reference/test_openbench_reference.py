"""The vectorized replay of ``spsa-openbench`` against the literal reference of
OpenBench's SPSA (:mod:`spsa_bench.reference.openbench`), event by event; and the
closed-form shares of equal and swapped integers under coupled rounding."""

import dataclasses
from functools import cache

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench import optimizers
from spsa_bench.config.loader import resolve
from spsa_bench.engine.replay import replay
from spsa_bench.engine.simulate import make_schedule
from spsa_bench.model.bowl import TrueBowl
from spsa_bench.model.developer import DeveloperView
from spsa_bench.model.rounding import coupled_probe_probabilities, probe_probabilities
from spsa_bench.optimizers.base import Report
from spsa_bench.reference.openbench import OpenBenchTune, run_openbench_reference

NUM_PAIRS = 1200
SEEDS = (0, 3, 8)
MODES = ("sync", "async-variable", "ob-bulk", "ob-batched", "ob-multiple", "ob-multiple-batched")
ROUNDINGS = ("coupled", "stochastic", "nearest", "none")
HYPER = {"A_ratio": 0.1, "alpha": 0.602, "gamma": 0.101, "pairs_per": 4, "r_end": 0.02}

# Integer parameters (integer bounds, as the OpenBench block parser requires) with c_end
# below 0.5 (the floor acts), near it and well above; float parameters with fractional
# bounds; the last integer parameter's range is narrow enough to hit its bounds.
THETA_START = np.array([100.0, 40.0, -30.0, 7.3, 250.0, -12.6, 60.0])
C_END = np.array([0.15, 0.8, 2.7, 0.6, 4.3, 1.3, 0.45])
INTEGER = np.array([True, True, True, False, True, False, True])
THETA_MIN = np.array([94.0, 30.0, -70.0, -0.7, 190.0, -32.6, 59.0])
THETA_MAX = np.array([106.0, 50.0, 10.0, 15.3, 310.0, 7.4, 61.0])


@cache
def config():
    raw = small_config_dict(num_pairs=NUM_PAIRS)
    raw["batch_modes"]["async-variable"]["workers"] = 4
    # OpenBench's own dispatch (SINGLE): workloads of pairs_per x concurrency pairs, in
    # bulk or in 30 s batches (games of 6-12 s: several reports per workload)
    openbench = {
        "workers": 3, "batch": "openbench", "pairs_per": HYPER["pairs_per"],
        "concurrency": {"min": 2, "max": 8}, "game_duration": {"median": 6, "p95": 12},
    }  # fmt: skip
    raw["batch_modes"]["ob-bulk"] = openbench
    raw["batch_modes"]["ob-batched"] = {**openbench, "reporting": "batched"}
    # MULTIPLE: 4 runners of concurrency 2 per machine, each 4 pairs with its own
    # perturbation; games of 12-24 s, so a runner's share spans 1-3 reports of 30 s
    multiple = {
        **openbench, "distribution": "multiple", "concurrency": {"min": 8, "max": 8},
        "game_duration": {"median": 12, "p95": 24},
    }  # fmt: skip
    raw["batch_modes"]["ob-multiple"] = multiple
    raw["batch_modes"]["ob-multiple-batched"] = {**multiple, "reporting": "batched"}
    return resolve(raw)


def view() -> DeveloperView:
    return DeveloperView(THETA_START, THETA_MIN, THETA_MAX, C_END, NUM_PAIRS, integer=INTEGER)


def tune() -> OpenBenchTune:
    return OpenBenchTune(
        theta_start=THETA_START.tolist(),
        theta_min=THETA_MIN.tolist(),
        theta_max=THETA_MAX.tolist(),
        c_end=C_END.tolist(),
        r_end=[HYPER["r_end"]] * C_END.size,
        integer=INTEGER.tolist(),
        A_ratio=HYPER["A_ratio"],
        alpha=HYPER["alpha"],
        gamma=HYPER["gamma"],
        pairs_per=HYPER["pairs_per"],
        num_pairs=NUM_PAIRS,
    )


def true_bowl() -> TrueBowl:
    peak = THETA_START + np.array([2.0, -4.0, 15.0, 3.0, -20.0, 6.0, 2.5])
    return TrueBowl.from_start(THETA_START, peak, 1.0 / C_END**2, -6.0, 0.0)


def batch_of(mode_name):
    mode = config().batch_mode(mode_name)
    return mode.batch_size if mode.is_sync else mode.settings


def run_both(mode, rounding):
    cfg = config()
    schedule = make_schedule(cfg, cfg.batch_mode(mode), SEEDS)
    hyper = optimizers.hyper_from_dict("spsa-openbench", HYPER)
    inner = optimizers.build("spsa-openbench", view(), hyper)
    reports, theta = [], []

    def update(state, report):
        new = inner.update(state, report)
        reports.append(Report(*(None if v is None else np.array(v, copy=True) for v in report)))
        theta.append(np.array(inner.export(new), copy=True))
        return new

    spied = dataclasses.replace(inner, update=update)
    result = replay(
        spied, schedule, true_bowl(), view(), entropy=cfg.entropy, checkpoints=11,
        compact=False, rounding=rounding,
    )  # fmt: skip
    refs = [
        run_openbench_reference(
            tune(), true_bowl(), cfg.entropy, seed, batch_of(mode), rounding=rounding
        )
        for seed in SEEDS
    ]
    return schedule, result, reports, np.array(theta), refs


@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_replay_of_spsa_openbench_equals_openbench_reference(mode, rounding):
    schedule, result, reports, theta, refs = run_both(mode, rounding)
    c = np.array([r.c for r in reports])
    signal = np.array([r.signal for r in reports])
    iter_local = np.array([r.iter_local for r in reports])
    flip = np.array([r.flip for r in reports])
    for row, ref in enumerate(refs):
        n = int(schedule.n_jobs[row])
        assert len(ref.events) == n
        if schedule.job_lead is None:
            assert len(ref.jobs) == n
            assert schedule.arrival_job[row, :n].tolist() == ref.arrival_job
        else:  # BATCHED: each piece arrives as one event, its hand-out the lead's
            arrival = schedule.arrival_job[row, :n]
            leads = schedule.job_lead[row, arrival]
            assert len(ref.jobs) == len(set(leads.tolist())) < n  # pieces share hand-outs
            handout = {lead: i for i, lead in enumerate(dict.fromkeys(sorted(leads.tolist())))}
            assert [handout[int(lead)] for lead in leads] == ref.arrival_job
            assert schedule.job_pairs[row, arrival].tolist() == [e.pairs for e in ref.events]
        arriving = [ref.jobs[event.job] for event in ref.events]
        # OpenBench's iteration 1 + games / (2 pairs_per) from the replay's K + 1
        np.testing.assert_allclose(
            1.0 + (iter_local[:n, row] - 1.0) / HYPER["pairs_per"],
            [job.k for job in arriving], rtol=1e-15,
        )  # fmt: skip
        np.testing.assert_array_equal(flip[:n, row], [job.flip for job in arriving])
        np.testing.assert_allclose(c[:n, row], [job.c_k for job in arriving], rtol=1e-14)
        if schedule.job_lead is None:
            np.testing.assert_array_equal(signal[:n, row], [job.net_wins for job in arriving])
        else:  # a piece's W - L; the hand-out's pieces add up to its whole result
            pieces = {}
            for event, value in zip(ref.events, signal[:n, row], strict=True):
                pieces[event.job] = pieces.get(event.job, 0.0) + value
            assert pieces == {j: float(job.net_wins) for j, job in enumerate(ref.jobs)}
        np.testing.assert_allclose(theta[:n, row], ref.theta, rtol=1e-12, atol=1e-10)
        counted = np.sum([job.outcome_counts for job in ref.jobs], axis=0)
        np.testing.assert_array_equal(result.outcome_counts[row], counted)
        if ref.probes:
            assert result.probe_equal_fraction[row] == ref.probe_equal_fraction
            assert result.probe_swapped_fraction[row] == ref.probe_swapped_fraction
        assert not np.allclose(ref.theta[-1], ref.theta_start)  # not vacuous
    jobs = [job for ref in refs for job in ref.jobs]
    # not vacuous: the floor acted (parameter 0's c_end = 0.15 < 0.5) and the
    # iteration took fractional values between chunks
    assert all(job.c_k[0] == 0.5 for job in jobs)
    # (OpenBench's BULK workloads are whole chunks: integer iterations but at the cut)
    # (MULTIPLE BULK: every report a runner's whole share of pairs_per pairs, but at the cut)
    assert any(job.k != int(job.k) for job in jobs) or mode in ("sync", "ob-bulk", "ob-multiple")
    if rounding == "coupled":  # c >= 0.5 on every integer: never equal, never swapped,
        # but where a bound clips both engines to the same value (parameter 6's narrow range)
        assert sum(job.swapped for job in jobs) == 0
        for job in jobs:
            for i in np.flatnonzero(INTEGER):
                if job.played_plus[i] == job.played_minus[i]:
                    assert job.played_plus[i] in (THETA_MIN[i], THETA_MAX[i])
    if rounding == "stochastic":
        assert sum(job.equal for job in jobs) > 0
    if mode != "sync":
        assert any(event.staleness > 0 for ref in refs for event in ref.events)
    if mode.startswith("ob-multiple"):  # not vacuous: 3 machines x 4 runners, each runner
        # of a workload (same machine, same start) its own perturbation
        assert schedule.num_workers == 12
        assert {job.worker for job in jobs} == set(range(12))
        workloads = {}
        for row, ref in enumerate(refs):
            for job in ref.jobs:
                workloads.setdefault((row, job.worker // 4, job.dispatch_time), []).append(job)
        assert max(len(group) for group in workloads.values()) == 4
        assert any(len({tuple(j.flip) for j in group}) > 1 for group in workloads.values())
    if mode == "ob-multiple-batched":  # some runner's share arrives in several pieces
        assert any(
            sum(event.job == j for event in ref.events) > 1
            for ref in refs
            for j in range(len(ref.jobs))
        )


def test_the_first_handout_follows_openbench():
    """iteration 1: c_k = max(c_end I**gamma, 0.5 on integers), r_k = a / (A + 1)**alpha / c_k**2."""
    ref = run_openbench_reference(tune(), true_bowl(), config().entropy, 0, batch_of("sync"))
    first = ref.jobs[0]
    total = NUM_PAIRS // HYPER["pairs_per"]
    c = np.maximum(C_END * total ** HYPER["gamma"], np.where(INTEGER, 0.5, 0.0))
    a = HYPER["r_end"] * C_END**2 * (1.1 * total) ** HYPER["alpha"]
    assert first.k == 1.0
    np.testing.assert_allclose(first.c_k, c, rtol=1e-15)
    np.testing.assert_allclose(
        first.R_k, a / (0.1 * total + 1.0) ** HYPER["alpha"] / c**2, rtol=1e-14
    )
    # the next hand-out after a report of B pairs: iteration 1 + B / pairs_per
    second = ref.jobs[1]
    assert second.k == 1.0 + first.pairs / HYPER["pairs_per"]


@pytest.mark.parametrize("c", [0.1, 0.3, 0.45, 0.5, 0.8, 1.7])
def test_coupled_rounding_shares_match_their_closed_form(c):
    """Share of jobs x integer parameters playing equal (swapped) integers, measured on
    the replay with ``rounding: coupled``, against :func:`coupled_probe_probabilities`
    (1 - 2c below c = 1/2, else 0; never swapped) within 4 standard errors; and
    against independent (stochastic) rounding's closed form on the same draws
    (:func:`probe_probabilities`, theta spread over a unit so its fractional part
    varies). Coupled removes equal integers only from c = 1/2 on; for small c it plays
    them more often than independent rounding, whose share tends to
    ``E[1 - 2 p (1 - p)] = 2/3`` over a uniform fractional part ``p``."""
    n_params, num_pairs = 8, 4000
    theta0 = np.linspace(10.3, 17.9, n_params)
    c_end = np.full(n_params, c)
    v = DeveloperView(
        theta0, theta0 - 1000, theta0 + 1000, c_end, num_pairs, integer=np.ones(n_params, bool)
    )
    # r_end = 0 keeps theta in place; gamma = 0 keeps c_k = c_end; no floor
    hyper = optimizers.hyper_from_dict(
        "spsa-openbench", {"r_end": 0.0, "gamma": 0.0, "c_floor": 0.0, "pairs_per": 1}
    )
    cfg = config()
    raw = small_config_dict(num_pairs=num_pairs)
    cfg = resolve(raw)
    schedule = make_schedule(cfg, cfg.batch_mode("sync"), (0, 1))
    measured = {}
    for rounding in ("coupled", "stochastic"):
        result = replay(
            optimizers.build("spsa-openbench", v, hyper), schedule, true_bowl_of(theta0, c_end),
            v, entropy=cfg.entropy, checkpoints=3, compact=False, rounding=rounding,
        )  # fmt: skip
        measured[rounding] = (
            float(np.mean(result.probe_equal_fraction)),
            float(np.mean(result.probe_swapped_fraction)),
        )
    probes = int(schedule.n_jobs.sum()) * n_params
    equal, swapped = coupled_probe_probabilities(c)
    se = np.sqrt(max(float(equal) * (1 - float(equal)), 1e-12) / probes)
    assert abs(measured["coupled"][0] - float(equal)) <= 4 * se
    assert measured["coupled"][1] == 0.0 == float(swapped)
    if c >= 0.5:
        assert measured["coupled"][0] == 0.0
    ind_equal, _ = probe_probabilities(theta0, c, -np.inf, np.inf)
    p = float(np.mean(ind_equal))
    assert abs(measured["stochastic"][0] - p) <= 4 * np.sqrt(p * (1 - p) / probes) + 1e-12
    if 0.5 <= c < 1.0:  # independent rounding plays equal integers where coupled does not
        assert measured["stochastic"][0] > 0.0 == measured["coupled"][0]
    if c <= 0.1:  # ... and below c = 1/2 coupled plays them MORE often (1 - 2c vs ~2/3)
        assert measured["coupled"][0] > measured["stochastic"][0]


def true_bowl_of(theta0, c_end) -> TrueBowl:
    return TrueBowl.from_start(theta0, theta0 + 3 * c_end, 1.0 / c_end**2, -6.0, 0.0)


def test_one_piece_per_job_replays_as_bulk():
    """The replay of pieces (``job_lead`` set, every job its own lead: no interim report)
    is the BULK replay bit for bit: the piece path changes nothing but the bookkeeping."""
    from spsa_bench.dispatch.asynchronous import split_reports

    cfg = config()
    bulk = make_schedule(cfg, cfg.batch_mode("ob-bulk"), SEEDS)
    pieces = split_reports(bulk, interval=1e12)
    hyper = optimizers.hyper_from_dict("spsa-openbench", HYPER)
    runs = [
        replay(
            optimizers.build("spsa-openbench", view(), hyper),
            schedule,
            true_bowl(),
            view(),
            entropy=cfg.entropy,
            checkpoints=11,
            rounding="stochastic",
        )  # fmt: skip
        for schedule in (bulk, pieces)
    ]
    np.testing.assert_array_equal(runs[0].theta, runs[1].theta)
    np.testing.assert_array_equal(runs[0].outcome_counts, runs[1].outcome_counts)
    np.testing.assert_array_equal(runs[0].probe_equal_fraction, runs[1].probe_equal_fraction)
    np.testing.assert_array_equal(runs[0].avg_step_size_last_100, runs[1].avg_step_size_last_100)


@pytest.mark.parametrize("mode", ["ob-bulk", "ob-batched"])
def test_summed_reports_change_nothing_in_single(mode):
    """SINGLE: a machine's report is one job's piece, so OpenBench's summed rule plays
    the same events, hand-outs and thetas, bit for bit."""
    cfg = config()
    for seed in SEEDS:
        runs = [
            run_openbench_reference(
                tune(), true_bowl(), cfg.entropy, seed, batch_of(mode), summed=summed
            )
            for summed in (False, True)
        ]
        assert runs[0].jobs == runs[1].jobs
        assert runs[0].events == runs[1].events


@pytest.mark.parametrize("mode", ["ob-multiple", "ob-multiple-batched"])
def test_summed_reports_follow_openbench_in_multiple(mode):
    """MULTIPLE with OpenBench's own rule (``Client/worker.py`` ``report_results``,
    ``OpenBench/utils.py`` ``update_test``, ``spsa_utils.py``
    ``spsa_workload_assignment_dict``): a machine's report is one update, the sum of its
    runners' deltas clipped once, and a workload's runners are handed out together, from
    one theta and one iteration. The replay's convention (the default) hands runner r out
    after its own report, so the runners of one workload see different thetas."""
    cfg = config()
    for seed in SEEDS:
        convention, summed = (
            run_openbench_reference(
                tune(), true_bowl(), cfg.entropy, seed, batch_of(mode), summed=flag
            )
            for flag in (False, True)
        )
        assert convention.jobs[:12] == summed.jobs[:12]  # the first workloads: time 0
        assert sum(e.pairs for e in summed.events) == NUM_PAIRS
        assert len(summed.events) < len(convention.events)  # runners' pieces summed

        def workloads(run):
            groups = {}
            for job in run.jobs:
                groups.setdefault((job.worker // 4, job.dispatch_time), []).append(job)
            return [group for group in groups.values() if len(group) > 1]

        for group in workloads(summed):
            assert all(job.theta == group[0].theta and job.k == group[0].k for job in group)
        assert any(
            any(job.theta != group[0].theta for job in group) for group in workloads(convention)
        )
        if mode != "ob-multiple":
            continue
        # BULK: a report is a whole workload, whose update_test is
        # theta_i <- clip(theta_i + sum over runners of r c (W - L) flip_i), once
        theta = list(summed.theta_start)
        for event in summed.events:
            lead = summed.jobs[event.job]
            runners = [
                job
                for job in summed.jobs
                if (job.worker // 4, job.dispatch_time) == (lead.worker // 4, lead.dispatch_time)
            ]
            assert event.pairs == sum(job.pairs for job in runners)
            for i in range(len(theta)):
                delta = sum(job.R_k[i] * job.c_k[i] * job.net_wins * job.flip[i] for job in runners)
                theta[i] = min(max(theta[i] + delta, THETA_MIN[i]), THETA_MAX[i])
            np.testing.assert_allclose(event.theta, theta, rtol=1e-13, atol=1e-12)
            theta = list(event.theta)
