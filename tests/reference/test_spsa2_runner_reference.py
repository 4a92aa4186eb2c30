"""spsa-2's Hessian match in the replay against the scalar reference runner
(:mod:`spsa_bench.reference.runner`), event by event: the split of every job's pairs,
both matches' draws and results, the shift flips D~, every update and the outcome
counts; and common random numbers with the first-order kinds."""

import dataclasses

import numpy as np
import pytest
from conftest import small_config_dict

from spsa_bench import optimizers
from spsa_bench.config.loader import resolve
from spsa_bench.engine.replay import replay
from spsa_bench.engine.simulate import make_problem, make_schedule
from spsa_bench.model import streams
from spsa_bench.optimizers.second_order import SecondOrderReport, Spsa2Hyper, hessian_pairs
from spsa_bench.reference.runner import run_runner_reference

NUM_PAIRS = 1200
SEEDS = (0, 3, 8)


def _config():
    raw = small_config_dict(num_pairs=NUM_PAIRS)
    raw["batch_modes"]["async-variable"]["workers"] = 4
    return resolve(raw)


CONFIG = _config()
PROBLEM = make_problem(CONFIG, "mixed")
# a share that does not halve the jobs evenly, a shift other than 1, a gain that moves
HYPER = Spsa2Hyper(hessian_share=0.3, c_tilde_ratio=0.7, lr=2.0, curvature_floor=0.02)


def _spied(optimizer):
    log = []

    def update(state, report):
        new = optimizer.update(state, report)
        copied = (None if v is None else np.array(v, copy=True) for v in report)
        log.append((type(report)(*copied), np.array(optimizer.export(new), copy=True)))
        return new

    return dataclasses.replace(optimizer, update=update), log


def _replay(kind, hyper, schedule, signal="raw"):
    optimizer, log = _spied(optimizers.build(kind, PROBLEM.view, hyper))
    result = replay(
        optimizer,
        schedule,
        PROBLEM.bowl,
        PROBLEM.view,
        entropy=CONFIG.entropy,
        signal=signal,
        checkpoints=41,
        compact=False,
    )
    return result, log


def test_hessian_pairs_split():
    """floor(share N + 1/2), at most N - 1, at least 0."""
    n = np.array([0, 1, 2, 3, 4, 10, 36])
    assert hessian_pairs(n, 0.5).tolist() == [0, 0, 1, 2, 2, 5, 18]
    assert hessian_pairs(n, 0.3).tolist() == [0, 0, 1, 1, 1, 3, 11]
    assert hessian_pairs(n, 0.0).tolist() == [0] * 7
    assert hessian_pairs(n, 0.99).tolist() == [0, 0, 1, 2, 3, 9, 35]


@pytest.mark.parametrize(("mode", "signal"), [("sync", "raw"), ("async-variable", "scaled")])
def test_replay_plays_the_hessian_match_like_the_reference(mode, signal):
    schedule = make_schedule(CONFIG, CONFIG.batch_mode(mode), SEEDS)
    result, log = _replay("spsa-2", HYPER, schedule, signal)
    batch = CONFIG.batch_mode(mode)
    batch = batch.batch_size if batch.is_sync else batch.settings
    assert all(isinstance(report, SecondOrderReport) for report, _ in log)
    for row, seed in enumerate(SEEDS):
        ref = run_runner_reference(
            "spsa-2", HYPER, PROBLEM, CONFIG.entropy, seed, NUM_PAIRS, batch, signal=signal
        )
        n = int(schedule.n_jobs[row])
        arriving = [ref.jobs[event.job] for event in ref.events]
        assert len(arriving) == n
        field = {
            name: np.array([getattr(report, name)[row] for report, _ in log[:n]])
            for name in SecondOrderReport._fields
            if name not in ("realized",)
        }
        assert field["hessian_pairs"].tolist() == [j.hessian_pairs for j in arriving]
        assert field["n_pairs"].tolist() == [j.pairs - j.hessian_pairs for j in arriving]
        assert (field["hessian_pairs"] > 0).sum() >= n - 1  # only a 1-pair job plays none
        np.testing.assert_array_equal(field["flip"], [j.flip for j in arriving])
        np.testing.assert_array_equal(field["hessian_flip"], [j.hessian_flip for j in arriving])
        np.testing.assert_array_equal(field["c"], [j.c for j in arriving])
        np.testing.assert_allclose(field["signal"], [j.signal for j in arriving], rtol=1e-12)
        np.testing.assert_allclose(
            field["hessian_signal"], [j.hessian_signal for j in arriving], rtol=1e-12
        )
        theta = np.array([point[row] for _, point in log[:n]])
        np.testing.assert_allclose(theta, ref.theta, rtol=1e-12, atol=0)
        counted = np.sum([j.outcome_counts for j in ref.jobs], axis=0)
        np.testing.assert_array_equal(result.outcome_counts[row], counted)
        assert counted.sum() == NUM_PAIRS  # the Hessian pairs are inside the budget
        # not vacuous: the two matches differ, and the Hessian estimate moved the run
        assert not np.array_equal(field["signal"], field["hessian_signal"])
        assert not np.array_equal(field["hessian_flip"], field["flip"])


def test_common_random_numbers_with_first_order_spsa():
    """spsa-2's gradient match plays spsa's flips (the job's draws are checked against
    the reference above); D~ comes from the seed's own hessian stream."""
    schedule = make_schedule(CONFIG, CONFIG.batch_mode("sync"), SEEDS)
    _, log2 = _replay("spsa-2", HYPER, schedule)
    _, log1 = _replay("spsa", None, schedule)
    flips1 = np.array([report.flip for report, _ in log1])
    flips2 = np.array([report.flip for report, _ in log2])
    np.testing.assert_array_equal(flips1, flips2)
    expected = streams.flips(
        CONFIG.entropy, np.array(SEEDS), len(log2), PROBLEM.view.num_params, purpose="hessian"
    )
    np.testing.assert_array_equal(
        np.array([report.hessian_flip for report, _ in log2]), expected.transpose(1, 0, 2)
    )
    # a zero share is first-order: plain reports, whole jobs to the gradient match
    _, log0 = _replay("spsa-2", dataclasses.replace(HYPER, hessian_share=0.0), schedule)
    assert all(type(report) is optimizers.Report for report, _ in log0)
    np.testing.assert_array_equal(
        np.array([r.n_pairs for r, _ in log0]), np.array([r.n_pairs for r, _ in log1])
    )
