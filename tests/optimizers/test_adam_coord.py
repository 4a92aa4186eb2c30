"""adam-coord: Adam with one second moment per coordinate, on the theta-space SPSA gradient.

Checked here: the macro is its literal per-pair reference; with equal ``c_i`` its
``v`` is the same for every coordinate and it is ``adam`` (exactly the same path
when ``c = 1``, ``adam`` with ``eps * c`` otherwise); with unequal ``c_i``,
``v_i c_i**2`` and ``m_i c_i`` are ``adam``'s and only ``eps`` feels ``c_i``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers import REGISTRY, Report, build, hyper_from_dict
from spsa_bench.reference.micro import MicroReport, adam_coord_micro, const_mean
from spsa_bench.validation import gates as V

N_SEEDS = 3
WIDE = (-1e7, 1e7)  # bounds that never clip


def _view(c, bounds=WIDE, num_pairs=10_000) -> DeveloperView:
    c = np.asarray(c, dtype=np.float64)
    return DeveloperView(
        theta_start=np.where(np.arange(c.size) % 2 == 0, 900.0, 1100.0),
        theta_min=np.full(c.size, float(bounds[0])),
        theta_max=np.full(c.size, float(bounds[1])),
        c_dev=c,
        num_pairs=num_pairs,
    )


def _reports(optimizer, n_params, n_reports=40, seed=0, sizes=(1, 96)):
    """Random open-loop reports: sizes, signals and flips (a zero signal now and then)."""
    rng = np.random.default_rng(seed)
    pairs = np.zeros(N_SEEDS, dtype=np.int64)
    out = []
    for _ in range(n_reports):
        n = rng.integers(sizes[0], sizes[1] + 1, size=N_SEEDS)
        iter_local = pairs + 1
        signal = rng.integers(-2 * n, 2 * n + 1).astype(np.float64)
        out.append(
            Report(
                n_pairs=n,
                signal=signal,
                flip=2.0 * rng.integers(0, 2, size=(N_SEEDS, n_params)) - 1.0,
                c=optimizer.perturbation(iter_local),
                iter_local=iter_local,
            )
        )
        pairs = pairs + n
    return out


def _run(optimizer, reports):
    state = optimizer.init(N_SEEDS)
    states = [state]
    for report in reports:
        state = optimizer.update(state, report)
        states.append(state)
    return states


def _micro(view, hyper, reports, seed):
    micro_reports = [
        MicroReport(
            const_mean(np.full(int(r.n_pairs[seed]), r.signal[seed] / r.n_pairs[seed])),
            r.flip[seed],
            r.c[seed],
            int(r.iter_local[seed]),
        )
        for r in reports
    ]
    return adam_coord_micro(view, hyper, micro_reports)["theta"]


def test_registry_row():
    row = REGISTRY["adam-coord"]
    assert row.family == "adam" and row.micro_reference() is adam_coord_micro
    assert row.micro_tolerance == 1e-9  # an exact macro: N micro-steps per report
    assert list(REGISTRY.built_ins()).index("adam-coord") == 11  # appended: colours stay put
    hyper = row.hyper()
    assert (hyper.lr, hyper.beta1, hyper.beta2, hyper.eps) == (0.04, 0.9, 0.999, 1e-8)


@pytest.mark.parametrize("overrides", [{}, {"beta1": 0.5, "beta2": 0.9}, {"lr": 0.3, "eps": 1e-3}])
@pytest.mark.parametrize("c", [[10.0, 10.0, 10.0], [0.5, 3.0, 40.0, 7.0]])
def test_macro_equals_micro_reference_on_random_reports(overrides, c):
    view = _view(c)
    hyper = hyper_from_dict("adam-coord", overrides)
    optimizer = build("adam-coord", view, hyper)
    reports = _reports(optimizer, len(c), seed=len(c))
    macro = np.stack([optimizer.export(s) for s in _run(optimizer, reports)], axis=1)
    for seed in range(N_SEEDS):
        micro = _micro(view, hyper, reports, seed)
        scale = np.abs(micro - micro[0]).max()
        assert scale > 0
        assert np.abs(macro[seed] - micro).max() <= 1e-12 * np.abs(micro).max()
        assert np.abs(macro[seed] - micro).max() <= 1e-10 * scale


def test_macro_equals_micro_when_bounds_bite():
    """Both clamp at report boundaries only, so they agree while theta sits on a bound."""
    c = [10.0, 2.0, 5.0]
    view = _view(c, bounds=(880.0, 1110.0))
    hyper = hyper_from_dict("adam-coord", {"lr": 0.5})
    optimizer = build("adam-coord", view, hyper)
    reports = _reports(optimizer, len(c), n_reports=60, seed=7)
    macro = np.stack([optimizer.export(s) for s in _run(optimizer, reports)], axis=1)
    assert np.any(macro == 880.0) or np.any(macro == 1110.0), "the test must clip"
    for seed in range(N_SEEDS):
        np.testing.assert_allclose(macro[seed], _micro(view, hyper, reports, seed), atol=1e-9)


def test_passes_the_validation_gate():
    sequence = V.make_reports(60, 3, n_seeds=2, seed=11)
    view = V.validation_view(3, int(sequence.offsets[:, -1].max()), theta_min=-1e7, theta_max=1e7)
    for seed_index in range(2):
        paths = V.run_paths("adam-coord", view, hyper_from_dict("adam-coord"), sequence, seed_index)
        rows = V.gap_table("adam-coord", paths, ["p0", "p1", "p2"])
        assert V.worst_gap(rows) < 1e-10


def test_a_seed_does_not_depend_on_the_seeds_beside_it():
    """The micro-step axis is as long as the largest N of the batch; the padded steps add
    exact zeros, so a seed run alone gives the same bits."""
    c = [10.0, 3.0]
    view = _view(c)
    optimizer = build("adam-coord", view)
    reports = _reports(optimizer, len(c), seed=3, sizes=(1, 200))
    together = _run(optimizer, reports)[-1]
    for seed in range(N_SEEDS):
        state = optimizer.init(1)
        for r in reports:
            state = optimizer.update(
                state, Report(*(None if a is None else a[seed : seed + 1] for a in r))
            )
        for a, b in zip(state, together, strict=True):
            np.testing.assert_array_equal(a[0], b[seed])


def test_long_reports_are_walked_in_chunks(monkeypatch):
    """A report longer than one chunk of micro-steps gives the same bits as one chunk."""
    import spsa_bench.optimizers.adam as adam_module

    c = [10.0, 3.0, 1.0]
    view = _view(c)
    reports = _reports(build("adam-coord", view), len(c), n_reports=10, seed=5, sizes=(50, 300))
    whole = _run(build("adam-coord", view), reports)[-1]
    monkeypatch.setattr(adam_module, "_COORD_CHUNK", 7 * N_SEEDS * len(c))
    chunked = _run(build("adam-coord", view), reports)[-1]
    for a, b in zip(whole, chunked, strict=True):
        np.testing.assert_array_equal(a, b)


def test_equal_c_gives_the_same_v_for_every_coordinate_and_is_adam():
    # c = 1: the theta-space gradient is adam's phi-space one, so adam-coord IS adam
    view = _view([1.0] * 4)
    coord, adam = build("adam-coord", view), build("adam", view)
    reports = _reports(coord, 4, seed=1)
    for s, a in zip(_run(coord, reports), _run(adam, reports), strict=True):
        assert np.all(s.v == s.v[:, :1])  # bit for bit the same in every coordinate
        np.testing.assert_allclose(s.v[:, 0], a.v, rtol=1e-13, atol=0)
        np.testing.assert_allclose(s.m, a.m, rtol=1e-13, atol=1e-300)
        np.testing.assert_allclose(s.theta, a.theta, rtol=1e-13, atol=0)
    # c = 10 for all: v = adam's v / c**2 (same in every coordinate), m = adam's m / c,
    # and the theta path is adam's with eps * c (made large here so that it shows)
    c = 10.0
    view = _view([c] * 4)
    hyper = hyper_from_dict("adam-coord", {"eps": 0.02})
    coord = build("adam-coord", view, hyper)
    adam = build("adam", view, hyper_from_dict("adam", {"eps": 0.02 * c}))
    plain = build("adam", view, hyper_from_dict("adam", {"eps": 0.02}))
    reports = _reports(coord, 4, seed=2)
    coord_states, adam_states = _run(coord, reports), _run(adam, reports)
    for s, a in zip(coord_states, adam_states, strict=True):
        assert np.all(s.v == s.v[:, :1])
        np.testing.assert_allclose(s.v[:, 0] * c**2, a.v, rtol=1e-12, atol=0)
        np.testing.assert_allclose(s.m * c, a.m, rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(s.theta, a.theta, rtol=1e-12, atol=0)
    # ... and not adam with the same eps: eps is in theta-gradient units here
    plain_theta = _run(plain, reports)[-1].theta
    assert np.abs(plain_theta - coord_states[-1].theta).max() > 1e-3


def test_unequal_c_each_coordinate_is_adam_with_eps_times_its_c():
    c = np.array([0.5, 2.0, 10.0, 40.0])
    eps = 0.01
    view = _view(c)
    coord = build("adam-coord", view, hyper_from_dict("adam-coord", {"eps": eps}))
    reports = _reports(coord, c.size, seed=4)
    states = _run(coord, reports)
    adam = build("adam", view)
    adam_states = _run(adam, reports)
    for s, a in zip(states, adam_states, strict=True):
        # v_i c_i**2 is adam's scalar v in every coordinate; m_i c_i is adam's m_i
        np.testing.assert_allclose(s.v * c**2, np.tile(a.v[:, None], c.size), rtol=1e-12)
        np.testing.assert_allclose(s.m * c, a.m, rtol=1e-12, atol=1e-300)
    # the theta step of coordinate i is adam's with eps replaced by eps * c_i
    for i, ci in enumerate(c):
        per_eps = build("adam", view, hyper_from_dict("adam", {"eps": eps * ci}))
        theta = _run(per_eps, reports)[-1].theta
        np.testing.assert_allclose(states[-1].theta[:, i], theta[:, i], rtol=1e-12)
    # so c_i enters only through eps: with a tiny eps every coordinate moves as adam's
    # does (the 1 / c_i of grad cancels), with a large one the larger c_i move less
    tiny = build("adam-coord", view)
    tiny_states = _run(tiny, reports)
    np.testing.assert_allclose(tiny_states[-1].theta, adam_states[-1].theta, rtol=1e-6, atol=0)

    def path_length(run):
        return np.abs(np.diff([s.theta for s in run], axis=0)).sum(axis=(0, 1))

    shrink = path_length(states) / path_length(tiny_states)
    assert np.all(shrink < 1.0) and np.all(np.diff(shrink) < 0), shrink


def test_step_does_not_scale_with_one_over_c_as_a_shared_denominator_would():
    """A scalar v shared by all coordinates (here the mean of v_i) would move coordinate
    i in proportion to 1 / c_i; the per-coordinate v makes the first step the same."""
    c = np.array([1.0, 4.0])
    view = _view(c)
    coord = build("adam-coord", view)
    report = Report(
        n_pairs=np.array([1] * N_SEEDS),
        signal=np.array([2.0] * N_SEEDS),
        flip=np.ones((N_SEEDS, 2)),
        c=coord.perturbation(np.ones(N_SEEDS, dtype=np.int64)),
        iter_local=np.ones(N_SEEDS, dtype=np.int64),
    )
    state = coord.update(coord.init(N_SEEDS), report)
    step = state.theta - coord.init(N_SEEDS).theta
    hyper = REGISTRY["adam-coord"].hyper()
    np.testing.assert_allclose(step, hyper.lr, rtol=1e-6)  # first Adam step: lr * sign
    # the shared-denominator alternative, from the same moments
    shared = np.sqrt(state.v.mean(axis=1, keepdims=True) / (1 - hyper.beta2))
    alternative = -hyper.lr * (state.m / (1 - hyper.beta1)) / shared
    assert alternative[0, 0] / alternative[0, 1] == pytest.approx(c[1] / c[0])


def test_hyperparameters_are_frozen():
    hyper = REGISTRY["adam-coord"].hyper()
    with pytest.raises(dataclasses.FrozenInstanceError):
        hyper.lr = 1.0  # type: ignore[misc]
