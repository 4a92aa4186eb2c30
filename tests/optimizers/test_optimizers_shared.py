"""Properties every optimizer of the registry must have, driven from one table.

The table is :data:`spsa_bench.optimizers.REGISTRY` itself, so a new
optimizer row is covered by every test here without touching this file.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers import REGISTRY, Report, build

KINDS = sorted(REGISTRY)
N_SEEDS = 3
N_PARAMS = 4
BATCH = 36
RATE_NAMES = ("lr", "r_end", "r_scale")  # the step-size knob of each family (first found)


def _view(num_pairs: int = 20_000, bounds=(0.0, 2000.0)) -> DeveloperView:
    return DeveloperView(
        theta_start=np.array([900.0, 1100.0, 900.0, 1100.0]),
        theta_min=np.full(N_PARAMS, bounds[0]),
        theta_max=np.full(N_PARAMS, bounds[1]),
        c_dev=np.full(N_PARAMS, 10.0),
        num_pairs=num_pairs,
    )


def _hyper(kind: str, rate_factor: float | None = None):
    hyper = REGISTRY[kind].hyper()
    if rate_factor is None:
        return hyper
    names = {f.name for f in dataclasses.fields(hyper)}
    rate = [name for name in RATE_NAMES if name in names]
    assert rate, f"{kind}: no step-size hyperparameter among {RATE_NAMES}"
    return dataclasses.replace(hyper, **{rate[0]: getattr(hyper, rate[0]) * rate_factor})


def _random_reports(optimizer, n_reports: int, seed: int = 0, sizes=(1, 128)):
    """Open-loop reports with random sizes, signals and flips (iter_local advancing)."""
    rng = np.random.default_rng(seed)
    pairs = np.zeros(N_SEEDS, dtype=np.int64)
    reports = []
    for _ in range(n_reports):
        n = rng.integers(sizes[0], sizes[1] + 1, size=N_SEEDS)
        iter_local = pairs + 1
        reports.append(
            Report(
                n_pairs=n,
                signal=rng.integers(-2 * n, 2 * n + 1).astype(np.float64),
                flip=2.0 * rng.integers(0, 2, size=(N_SEEDS, N_PARAMS)) - 1.0,
                c=optimizer.perturbation(iter_local),
                iter_local=iter_local,
            )
        )
        pairs = pairs + n
    return reports


def _freeze(state):
    for array in state:
        array.setflags(write=False)
    return state


def _run(optimizer, reports):
    state = optimizer.init(N_SEEDS)
    for report in reports:
        state = optimizer.update(_freeze(state), report)
    return state


@pytest.mark.parametrize("kind", KINDS)
def test_zero_rate_leaves_theta_unchanged(kind):
    view = _view()
    optimizer = build(kind, view, _hyper(kind, 0.0))
    state = _run(optimizer, _random_reports(optimizer, 40))
    start = np.tile(view.theta_start, (N_SEEDS, 1))
    np.testing.assert_array_equal(optimizer.export(state), start)
    for name, values in optimizer.extras(state).items():
        np.testing.assert_array_equal(values, start, err_msg=name)


@pytest.mark.parametrize("kind", KINDS)
def test_huge_rate_stays_in_bounds_and_finite(kind):
    view = _view()
    optimizer = build(kind, view, _hyper(kind, 1e3))
    state = optimizer.init(N_SEEDS)
    for report in _random_reports(optimizer, 60, seed=1):
        state = optimizer.update(state, report)
        theta = optimizer.export(state)
        assert np.all(theta >= view.theta_min) and np.all(theta <= view.theta_max)
        for array in state:
            assert np.all(np.isfinite(array)), kind
    assert not np.array_equal(optimizer.export(state), np.tile(view.theta_start, (N_SEEDS, 1)))


@pytest.mark.parametrize("kind", KINDS)
def test_deterministic_and_pure(kind):
    view = _view()
    optimizer = build(kind, view)
    reports = _random_reports(optimizer, 30, seed=2)
    first = _run(optimizer, reports)  # _run freezes every input state: in-place writes raise
    again = _run(build(kind, view), reports)
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    # the same update on the same input twice gives the same output and leaves the input alone
    state = _freeze(optimizer.init(N_SEEDS))
    before = [array.copy() for array in state]
    one = optimizer.update(state, reports[0])
    two = optimizer.update(state, reports[0])
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, c in zip(state, before, strict=True):
        np.testing.assert_array_equal(a, c)
    # no aliasing with the developer view (spec errata 7)
    for array in one:
        for frozen in (view.theta_start, view.c_dev, view.theta_min, view.theta_max):
            assert not np.shares_memory(array, frozen)


@pytest.mark.parametrize("kind", KINDS)
def test_state_shapes_and_dtypes_are_stable(kind):
    optimizer = build(kind, _view())
    state = optimizer.init(N_SEEDS)
    layout = [(array.shape, array.dtype) for array in state]
    for array in state:
        assert array.shape[0] == N_SEEDS
        assert array.dtype in (np.float64, np.int64)
    for report in _random_reports(optimizer, 25, seed=3):
        state = optimizer.update(state, report)
        assert [(array.shape, array.dtype) for array in state] == layout
    assert optimizer.export(state).shape == (N_SEEDS, N_PARAMS)
    assert optimizer.export(state).dtype == np.float64
    assert optimizer.perturbation(np.ones(N_SEEDS, dtype=np.int64)).shape == (N_SEEDS, N_PARAMS)


# A noiseless test oracle: a quadratic Elo bowl and the expected report result.
PEAK = np.full(N_PARAMS, 1000.0)
WIDTH = 100.0  # Elo(theta) = -sum(((theta - PEAK) / WIDTH)**2)
KAPPA = 1.0  # expected net wins per pair per Elo of difference between the probes


def _elo(theta: np.ndarray) -> np.ndarray:
    return -(((theta - PEAK) / WIDTH) ** 2).sum(axis=-1)


def _bowl_result(view: DeveloperView, theta, c, flip, n) -> np.ndarray:
    plus = view.clip(theta + c * flip)
    minus = view.clip(theta - c * flip)
    return n * KAPPA * (_elo(plus) - _elo(minus))


@pytest.mark.parametrize("kind", KINDS)
def test_noiseless_bowl_moves_towards_peak(kind):
    n_reports = 300
    # bounds 150 either side of the peak: the bowl loses 2.25 Elo half a range from the
    # peak, about what spsa-autoselect assumes (2 Elo; its c_end is range/6, from the bounds)
    view = _view(num_pairs=n_reports * BATCH, bounds=(850.0, 1150.0))
    optimizer = build(kind, view)
    rng = np.random.default_rng(4)
    state = optimizer.init(N_SEEDS)
    start_distance = np.linalg.norm(optimizer.export(state) - PEAK, axis=1)
    n = np.full(N_SEEDS, BATCH, dtype=np.int64)
    distances = []
    for i in range(n_reports):
        iter_local = np.full(N_SEEDS, 1 + i * BATCH, dtype=np.int64)
        c = optimizer.perturbation(iter_local)
        flip = 2.0 * rng.integers(0, 2, size=(N_SEEDS, N_PARAMS)) - 1.0
        signal = _bowl_result(view, optimizer.export(state), c, flip, n)
        state = optimizer.update(state, Report(n, signal, flip, c, iter_local))
        distances.append(np.linalg.norm(optimizer.export(state) - PEAK, axis=1))
    late = np.mean(distances[-30:], axis=0)
    assert np.all(late < 0.95 * start_distance), (kind, late / start_distance)
