"""spsa-2 (2SPSA, optimizers/second_order.py): against its literal per-pair reference,
its exact rate on a noiseless one-parameter quadratic, its Hessian estimate and mean
error on a noiseless multi-parameter quadratic, and its positive-definite preconditioner
on noisy inputs."""

from __future__ import annotations

import dataclasses

import numpy as np

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers import Report, build
from spsa_bench.optimizers.second_order import (
    SecondOrderReport,
    Spsa2Hyper,
    preconditioner_eigen,
)
from spsa_bench.reference.micro import Spsa2MicroReport, spsa2_micro


def _view(n_params: int, num_pairs: int = 20_000, c=10.0, lo=0.0, hi=2000.0) -> DeveloperView:
    return DeveloperView(
        theta_start=np.linspace(900.0, 1100.0, n_params),
        theta_min=np.full(n_params, lo),
        theta_max=np.full(n_params, hi),
        c_dev=np.linspace(c, 2 * c, n_params),
        num_pairs=num_pairs,
    )


def _signs(rng, shape):
    return 2.0 * rng.integers(0, 2, size=shape) - 1.0


def test_matches_the_literal_reference_report_by_report():
    """Noisy per-pair signals, random sizes, Hessian matches on some reports only (and a
    zero-pair one), steps large enough to be shortened and to hit the bounds."""
    n_seeds, n_params, n_reports = 3, 3, 60
    view = _view(n_params, lo=880.0, hi=1120.0)
    hyper = Spsa2Hyper(lr=40.0, max_step=0.8, curvature_floor=0.05, c_tilde_ratio=0.7)
    optimizer = build("spsa-2", view, hyper)
    rng = np.random.default_rng(7)
    state = optimizer.init(n_seeds)
    fast = [optimizer.export(state)]
    micro = [[] for _ in range(n_seeds)]
    pairs = np.zeros(n_seeds, dtype=np.int64)
    for r in range(n_reports):
        n = rng.integers(1, 40, size=n_seeds)
        m = rng.integers(0, 40, size=n_seeds) if r % 3 else np.zeros(n_seeds, dtype=np.int64)
        iter_local = pairs + 1
        c = optimizer.perturbation(iter_local)
        flip, hflip = _signs(rng, (n_seeds, n_params)), _signs(rng, (n_seeds, n_params))
        per_pair = [rng.integers(-2, 3, size=int(k)).astype(float) for k in n]
        hessian = [rng.integers(-2, 3, size=int(k)).astype(float) for k in m]
        with_hessian = r % 5 != 4  # every fifth report is a plain Report
        common = dict(
            n_pairs=n,
            signal=np.array([s.sum() for s in per_pair]),
            flip=flip,
            c=c,
            iter_local=iter_local,
        )
        if with_hessian:
            report = SecondOrderReport(
                **common,
                hessian_signal=np.array([s.sum() for s in hessian]),
                hessian_pairs=m,
                hessian_flip=hflip,
            )
        else:
            report = Report(**common)
        state = optimizer.update(state, report)
        fast.append(optimizer.export(state))
        for s in range(n_seeds):
            micro[s].append(
                Spsa2MicroReport(
                    per_pair[s],
                    flip[s],
                    c[s],
                    int(iter_local[s]),
                    hessian[s] if with_hessian else None,
                    hflip[s] if with_hessian else None,
                )
            )
        pairs = pairs + n
    fast = np.array(fast)  # (report + 1, seed, param)
    moved = np.abs(np.diff(fast, axis=0))
    assert np.any(fast == view.theta_min) or np.any(fast == view.theta_max)  # bounds hit
    assert np.isclose(moved / view.c_dev, 0.8).any()  # some steps shortened
    for s in range(n_seeds):
        reference = spsa2_micro(view, hyper, micro[s])["theta"]
        np.testing.assert_allclose(fast[:, s], reference, rtol=0, atol=1e-9 * 1000)


def _F(phi, Q, peak):
    e = phi - peak
    return -0.5 * np.einsum("sp,pq,sq->s", e, Q, e)


def _job(view, optimizer, state, Q, peak, rng, n, k, hyper, hessian=True):
    theta = optimizer.export(state)
    n_seeds, n_params = theta.shape
    iter_local = np.full(n_seeds, k, dtype=np.int64)
    c = optimizer.perturbation(iter_local)
    flip = _signs(rng, (n_seeds, n_params))
    phi, p = theta / view.c_dev, c / view.c_dev
    y = _F(phi + p * flip, Q, peak) - _F(phi - p * flip, Q, peak)
    pairs = np.full(n_seeds, n, dtype=np.int64)
    if not hessian:
        return Report(pairs, n * y, flip, c, iter_local)
    hflip = _signs(rng, (n_seeds, n_params))
    shift = hyper.c_tilde_ratio * p * hflip
    y_tilde = _F(phi + shift + p * flip, Q, peak) - _F(phi + shift - p * flip, Q, peak)
    return SecondOrderReport(
        pairs, n * y, flip, c, iter_local, hessian_signal=n * y_tilde, hessian_pairs=pairs,
        hessian_flip=hflip,
    )  # fmt: skip


def test_noiseless_one_parameter_quadratic_contracts_at_the_newton_rate():
    """One parameter: the SPSA gradient and the Hessian sample are exact (D**2 = 1), so
    B = h after the first job and each job contracts the error by exactly
    1 - a_k n h / sqrt(h**2 + delta**2), a_k = lr / (A + k)**alpha."""
    h, n, delta = 0.02, 36, 0.004
    view = _view(1, num_pairs=36_000, lo=0.0, hi=4000.0)
    hyper = Spsa2Hyper(lr=2.0, alpha=1.0, curvature_floor=delta, max_step=100.0)
    optimizer = build("spsa-2", view, hyper)
    Q, peak = np.array([[h]]), np.array([110.0])  # phi 110: theta 1100 for c_end 10
    rng = np.random.default_rng(0)
    state = optimizer.init(2)
    error = optimizer.export(state)[:, 0] / view.c_dev[0] - peak[0]
    A = hyper.A_ratio * view.num_pairs
    for j in range(200):
        k = 1 + j * n
        report = _job(view, optimizer, state, Q, peak, rng, n, k, hyper)
        state = optimizer.update(state, report)
        np.testing.assert_allclose(state.curvature[:, 0, 0], h, rtol=1e-9)
        rate = 1.0 - hyper.lr / (A + k) ** hyper.alpha * n * h / np.hypot(h, delta)
        expected = error * rate
        error = optimizer.export(state)[:, 0] / view.c_dev[0] - peak[0]
        np.testing.assert_allclose(error, expected, rtol=1e-9, atol=1e-9)
    # 200 jobs at these gains: the error fell by the product of the rates, far below start
    assert np.all(np.abs(error) < 0.25 * 10.0)


def test_noiseless_quadratic_learns_the_hessian_and_contracts_in_mean():
    """Three parameters, a non-diagonal Q. Phase 1 (lr 0, theta fixed): B is the mean of
    K exact-on-average samples, so mean over seeds of B is Q within 4 standard errors
    (of the seeds' B). Phase 2 (B frozen: plain reports): with the gradient's E[D D^T] = I
    the mean error follows E[e_j+1] = (I - eta M^-1 Q) E[e_j] per seed (M the seed's
    preconditioner), so the mean over seeds of e_j equals the mean of each seed's
    predicted mean within 4 standard errors, and that contracts at nearly 1 - eta."""
    n_seeds, n_params, n, K = 400, 3, 36, 300
    view = _view(n_params, num_pairs=100_000, lo=-1e6, hi=1e6)
    Q = np.array([[0.03, 0.01, 0.0], [0.01, 0.02, 0.005], [0.0, 0.005, 0.015]])
    peak = np.array([60.0, 50.0, 40.0])
    learn = Spsa2Hyper(lr=0.0, curvature_floor=1e-4, max_step=1e9)
    rng = np.random.default_rng(11)
    optimizer = build("spsa-2", view, learn)
    state = optimizer.init(n_seeds)
    for _ in range(K):
        state = optimizer.update(state, _job(view, optimizer, state, Q, peak, rng, n, 1, learn))
    B = state.curvature
    se = B.std(axis=0, ddof=1) / np.sqrt(n_seeds)
    assert np.all(np.abs(B.mean(axis=0) - Q) <= 4 * se + 1e-15)
    # phase 2: a constant gain eta = a n (alpha 0) with B frozen
    eta = 0.2
    step = Spsa2Hyper(lr=eta / n, alpha=0.0, curvature_floor=1e-4, max_step=1e9)
    mover = build("spsa-2", view, step)
    values, vectors = preconditioner_eigen(B, step.curvature_floor)
    M_inv = np.einsum("spq,sq,srq->spr", vectors, 1.0 / values, vectors)
    contraction = np.eye(n_params) - eta * M_inv @ Q  # (seed, p, p)
    error = mover.export(state) / view.c_dev - peak
    predicted = error.copy()
    for j in range(12):
        state = mover.update(state, _job(view, mover, state, Q, peak, rng, n, 1, step, False))
        error = mover.export(state) / view.c_dev - peak
        predicted = np.einsum("spq,sq->sp", contraction, predicted)
        se = error.std(axis=0, ddof=1) / np.sqrt(n_seeds)
        assert np.all(np.abs(error.mean(axis=0) - predicted.mean(axis=0)) <= 4 * se), j
    # the learned preconditioner is close to Q, so the predicted mean contracts near 1 - eta
    ratio = np.linalg.norm(predicted.mean(axis=0)) / np.linalg.norm(
        (np.tile(view.theta_start, (1, 1)) / view.c_dev - peak)[0]
    )
    assert abs(ratio ** (1 / 12) - (1 - eta)) < 0.02


def test_preconditioner_is_positive_definite_on_noisy_inputs():
    """Pure-noise reports (every B indefinite in general): M's smallest eigenvalue,
    recomputed from M itself, is at least the floor at every report, and every
    unshortened, unclipped step is an ascent direction of its gradient (g . step > 0)."""
    n_seeds, n_params = 50, 4
    view = _view(n_params, lo=-1e9, hi=1e9)
    hyper = Spsa2Hyper(curvature_floor=0.003, max_step=1e9)
    optimizer = build("spsa-2", view, hyper)
    rng = np.random.default_rng(3)
    state = optimizer.init(n_seeds)
    indefinite = 0
    for r in range(80):
        n = rng.integers(1, 64, size=n_seeds)
        iter_local = np.full(n_seeds, 1 + 30 * r)
        c = optimizer.perturbation(iter_local)
        flip = _signs(rng, (n_seeds, n_params))
        report = SecondOrderReport(
            n, rng.integers(-2 * n, 2 * n + 1).astype(float), flip, c, iter_local,
            hessian_signal=rng.integers(-2 * n, 2 * n + 1).astype(float), hessian_pairs=n,
            hessian_flip=_signs(rng, (n_seeds, n_params)),
        )  # fmt: skip
        before = optimizer.export(state)
        state = optimizer.update(state, report)
        values, vectors = preconditioner_eigen(state.curvature, hyper.curvature_floor)
        M = np.einsum("spq,sq,srq->spr", vectors, values, vectors)
        assert np.all(np.linalg.eigvalsh(M) >= hyper.curvature_floor * (1 - 1e-9))
        indefinite += int(np.sum(np.linalg.eigvalsh(state.curvature)[:, 0] < 0))
        gradient = report.signal[:, None] * flip / (2 * c / view.c_dev)
        moved = (optimizer.export(state) - before) / view.c_dev
        assert np.all(np.einsum("sp,sp->s", gradient, moved) >= 0)
        assert np.all(np.einsum("sp,sp->s", gradient, moved)[report.signal != 0] > 0)
    assert indefinite > 0  # the floor had indefinite estimates to guard against


def test_plain_reports_leave_the_hessian_estimate_alone():
    view = _view(2)
    optimizer = build("spsa-2", view, dataclasses.replace(Spsa2Hyper(), lr=3.0))
    state = optimizer.init(2)
    report = Report(
        np.array([10, 10]), np.array([4.0, -6.0]), np.ones((2, 2)),
        optimizer.perturbation(np.array([1, 1])), np.array([1, 1]),
    )  # fmt: skip
    new = optimizer.update(state, report)
    np.testing.assert_array_equal(new.curvature, 0.0)
    np.testing.assert_array_equal(new.weight, 0.0)
    # M = delta I: the phi step a_k S D / (2 p delta), shortened as a whole to max_step
    p = report.c / view.c_dev
    raw = 3.0 / (0.1 * view.num_pairs + 1) * report.signal[:, None] / (2 * p * 0.01)
    largest = np.max(np.abs(raw), axis=1)
    expected = raw * np.minimum(1.0, 1.0 / largest)[:, None]
    np.testing.assert_allclose((new.theta - state.theta) / view.c_dev, expected, rtol=1e-12)
