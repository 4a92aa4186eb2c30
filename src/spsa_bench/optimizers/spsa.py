"""Classic SPSA, block-corrected SPSA and SPSA with centred cautious weight decay.

All three share the Fishtest gain schedule (:mod:`.schedules`) and probe with
``c_k`` at the job's dispatch iteration ``k0 = iter_local``. For a report of
``N`` pairs with total result ``S`` and flip ``f`` (maximising Elo)::

    spsa        theta <- clip(theta + (a_k0 / c_k0) * S * f)
    spsa-block  theta <- clip(theta + mean_gain * S * f),
                mean_gain = (1/N) * sum_{k=k0}^{k0+N-1} a_k / c_k
    spsa-cwd    step  = (a_k0 / c_k0) * S * f,   delta = theta - theta_start
                mask  = (step * delta <= 0)      # decay only where it agrees
                theta <- clip(theta + step - lambda * r_k0 * delta * mask)

``spsa-block`` equals ``N`` textbook micro-steps with the mean signal ``S/N``.

Fishtest options, shared by the three kinds (each off by default, and then the
update is bit for bit the one above; docs/optimizers.md):

- ``A_ratio``: ``A = int(A_ratio * num_pairs)`` in place of ``A`` (Fishtest's form
  since fishtest #1326, ``spsa_workflow.build_spsa_state``).
- ``c_scale``, ``r_scale``: multipliers on the per-parameter ``c_end`` (the view's
  ``c_dev``) and ``r_end`` (the view's per-parameter ``r_end`` of a Fishtest
  parameter block when the scenario has one, else the arm's ``r_end``).
- ``delta = "realized"`` (fishtest #1929): the update uses the half-difference the
  two engines really played, ``report.realized``, in place of ``c_k * flip``:
  ``step *= realized / (c * flip)`` elementwise.
- ``min_c`` (fishtest #1912): on integer parameters the probe is
  ``c_eff = max(c_k, min_c)``, and the rate follows it as Fishtest's handout
  computes ``R_k = a_k / c_k**2`` from the ``c_k`` it sends
  (``spsa_workflow.build_spsa_worker_step``): the step is
  ``R_k * c_eff * S * flip = (a_k / c_eff) * S * flip``.

Asynchrony options (fishtest #535; each off by default, and then bit for bit the
update above; also off in effect with one worker or a synchronous batch, where
every report has staleness 0 and the counters agree, except ``batch_step = mean``):

- ``iteration_counter``: the counter of the handout iteration ``k0``; ``run`` takes
  the configuration's run-wide counter, ``arrival`` (Fishtest) or ``dispatch`` (the
  pairs in flight counted in, the original lab's convention) overrides it for this
  arm. The replay reads it (``engine.simulate.replay_arm``); the update does not.
- ``delay_adaptive = tau > 0``: the step (not cwd's decay) is multiplied by
  ``tau / (tau + staleness)``, staleness the pairs that arrived between the job's
  dispatch and its arrival (``Report.staleness``; a report without it counts as
  fresh): a step size decreasing in the job's own delay, the idea of the
  delay-adaptive step sizes of asynchronous SGD (Mishchenko, Bach, Even & Woodworth
  2022, arXiv:2206.07638; Sra, Yu, Li & Smola 2015, AdaDelay, arXiv:1508.05003);
  the form ``tau / (tau + d)`` is this benchmark's choice, not theirs.
- ``batch_step = mean``: the job's result enters as the mean ``S / N`` in place of
  the total ``S`` ("treat a batch as a single iteration and divide the result by
  games/2", fishtest #535); the gain schedule still advances per pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers.base import Optimizer, Report, check_choices, hyperparameter
from spsa_bench.optimizers.gains import GainSchedule

#: ``A``'s default; a different ``A`` given together with ``A_ratio`` is refused.
DEFAULT_A = 5000.0
DELTAS = ("flip", "realized")
#: ``run``: the configuration's run-wide ``iteration_counter``; the others override it
ITERATION_COUNTERS = ("run", "arrival", "dispatch")
BATCH_STEPS = ("sum", "mean")


def c_scale_field():
    return hyperparameter(
        1.0,
        "multiplier on every parameter's c_end (the developer's c_dev); 1 = as given",
        exclusive_minimum=0.0,
    )


def r_scale_field(what: str = "r_end"):
    return hyperparameter(
        1.0,
        f"multiplier on {what}; 1 = as given, 0 = theta never moves",
        minimum=0.0,
    )


def delta_field():
    return hyperparameter(
        "flip",
        "what the update multiplies the result by: flip = c_k * flip (classic SPSA); "
        "realized = the half-difference of the integers the two engines really played "
        "(fishtest #1929; equal integers give no step, swapped ones a reversed step)",
        kind="string",
        enum=DELTAS,
    )


def min_c_field():
    return hyperparameter(
        0.0,
        "smallest probe c_k of an integer parameter (fishtest #1912 proposed 2); the rate "
        "follows the raised c as Fishtest's handout computes R_k = a_k / c_k**2 from the "
        "c_k it sends; 0 = off",
        minimum=0.0,
    )


def iteration_counter_field():
    return hyperparameter(
        "run",
        "counter of the handout iteration k0 = K + 1 of this arm: run = the "
        "configuration's iteration_counter; arrival = pairs arrived before the job's "
        "dispatch (Fishtest, fishtest #82); dispatch = pairs dispatched before it, the "
        "pairs in flight counted in (the original lab's convention, fishtest #535)",
        kind="string",
        enum=ITERATION_COUNTERS,
    )


def delay_adaptive_field():
    return hyperparameter(
        0.0,
        "delay-adaptive step: tau > 0 scales the job's step by tau / (tau + staleness), "
        "staleness the pairs arrived between its dispatch and its arrival (step sizes "
        "decreasing in the delay, the delay-adaptive step sizes of asynchronous SGD: "
        "Mishchenko et al. 2022, AdaDelay 2015); a fresh job's step is unchanged; 0 = off",
        minimum=0.0,
    )


def batch_step_field():
    return hyperparameter(
        "sum",
        "how a job's result enters the step: sum = its total W - L times one "
        "iteration's gain (Fishtest); mean = (W - L) / pairs, the batch as one "
        "averaged gradient (fishtest #535; the gain schedule still advances per pair)",
        kind="string",
        enum=BATCH_STEPS,
    )


@dataclass(frozen=True)
class SpsaHyper:
    A: float = hyperparameter(
        DEFAULT_A,
        "stability offset of the gain schedule a_k = a / (A + k)**alpha (ignored when "
        "A_ratio is given; a non-default A with A_ratio is refused)",
        minimum=0.0,
    )
    alpha: float = hyperparameter(0.602, "decay exponent of the gain a_k", minimum=0.0, maximum=2.0)
    gamma: float = hyperparameter(
        0.101, "decay exponent of the perturbation c_k = c / k**gamma", minimum=0.0, maximum=1.0
    )
    r_end: float = hyperparameter(
        0.002,
        "phi-space learning rate at the end of the run (a_end = r_end * c_end**2); a "
        "scenario's per-parameter r_end (Fishtest parameter block) takes its place",
        minimum=0.0,
    )
    A_ratio: float | None = hyperparameter(
        None,
        "A = int(A_ratio * num_pairs) in place of A, Fishtest's form since fishtest #1326 "
        "(its default 0.1); null = use A",
        minimum=0.0,
        nullable=True,
    )
    c_scale: float = c_scale_field()
    r_scale: float = r_scale_field("r_end (the scenario's per-parameter r_end, else the arm's)")
    delta: str = delta_field()
    min_c: float = min_c_field()
    iteration_counter: str = iteration_counter_field()
    delay_adaptive: float = delay_adaptive_field()
    batch_step: str = batch_step_field()

    def __post_init__(self) -> None:
        check_choices(self)
        if self.A_ratio is not None and self.A != DEFAULT_A:
            raise ValueError(
                f"give A or A_ratio, not both (A = {self.A}, A_ratio = {self.A_ratio}): "
                "A_ratio sets A = int(A_ratio * num_pairs)"
            )


@dataclass(frozen=True)
class SpsaCwdHyper(SpsaHyper):
    lambda_cwd: float = hyperparameter(
        0.0,
        "cautious weight decay strength (decay towards theta_start, scaled by r_k)",
        minimum=0.0,
    )


class SpsaState(NamedTuple):
    theta: np.ndarray  # (seed, param)


def effective_A(hyper: SpsaHyper, num_pairs: int) -> float:
    """``A``, or ``int(A_ratio * num_pairs)`` when ``A_ratio`` is given."""
    return float(int(hyper.A_ratio * num_pairs)) if hyper.A_ratio is not None else hyper.A


def gain_schedule(view: DeveloperView, hyper: SpsaHyper) -> GainSchedule:
    """The arm's Fishtest gain schedule: ``c_end`` the view's ``c_dev`` times ``c_scale``,
    ``r_end`` the view's per-parameter one (else the arm's) times ``r_scale``."""
    r_end = hyper.r_end if view.r_end is None else view.r_end
    return GainSchedule.fishtest(
        view.c_dev * hyper.c_scale,
        r_end * hyper.r_scale,
        effective_A(hyper, view.num_pairs),
        hyper.alpha,
        hyper.gamma,
        view.num_pairs,
    )


class _Probe:
    """The probe ``c_k`` (raised to ``min_c`` on integer parameters) and the step
    corrections of the Fishtest options (``min_c``, ``delta``) and of the asynchrony
    options (``delay_adaptive``, ``batch_step``)."""

    def __init__(
        self,
        view: DeveloperView,
        schedule: GainSchedule,
        min_c: float,
        delta: str,
        delay_adaptive: float = 0.0,
        batch_step: str = "sum",
    ):
        self.schedule = schedule
        self.raised = bool(min_c > 0.0 and view.has_integers)
        self.floor = np.where(view.integer, float(min_c), 0.0)  # (param,)
        self.floor.setflags(write=False)
        self.realized = delta == "realized"
        self.tau = float(delay_adaptive)
        self.mean = batch_step == "mean"

    def c_k(self, k: np.ndarray) -> np.ndarray:
        c = self.schedule.c_k(k)
        return np.maximum(c, self.floor) if self.raised else c

    def raise_step(self, step: np.ndarray, k: np.ndarray) -> np.ndarray:
        """``(a_k / c_k) ...`` turned into ``(a_k / c_eff) ...`` (a no-op without ``min_c``)."""
        if not self.raised:
            return step
        c = self.schedule.c_k(k)
        return step * (c / np.maximum(c, self.floor))

    def realize(self, step: np.ndarray, report: Report) -> np.ndarray:
        """``c * flip`` replaced by the realized half-difference (``delta = realized``)."""
        if not self.realized or report.realized is None:
            return step
        return step * (report.realized / (report.c * report.flip))

    def asynchrony(self, step: np.ndarray, report: Report) -> np.ndarray:
        """The step divided by the job's pairs (``batch_step = mean``) and scaled by
        ``tau / (tau + staleness)`` (``delay_adaptive = tau > 0``); each only when on
        (a report without staleness counts as fresh)."""
        if self.mean:
            step = step / report.n_pairs.astype(np.float64)[:, None]
        if self.tau > 0.0 and report.staleness is not None:
            stale = np.asarray(report.staleness, dtype=np.float64)
            step = step * (self.tau / (self.tau + stale))[:, None]
        return step


def _common(view: DeveloperView, probe: _Probe):
    def init(n_seeds: int) -> SpsaState:
        return SpsaState(theta=np.tile(view.theta_start, (n_seeds, 1)))

    def export(state: SpsaState) -> np.ndarray:
        return state.theta

    return init, probe.c_k, export


def _classic_step(schedule: GainSchedule, report: Report) -> np.ndarray:
    """``(a_k0 / c_k0) * S * flip``, with ``a_k0 / c_k0 = (a / c) * k0**gamma / (A + k0)**alpha``.

    (``report.c`` is ``c_k0`` by construction: the same schedule at the same ``k0``.)
    """
    per_seed = schedule.gain_shape(report.iter_local) * report.signal
    step = per_seed[:, None] * report.flip
    step *= schedule.gain_scale_like(step)
    return step


def _probe_of(view: DeveloperView, hyper, schedule: GainSchedule) -> _Probe:
    """The probe of ``hyper``'s options (the asynchrony options off where ``hyper``
    has none, as spsa-autoselect)."""
    return _Probe(
        view,
        schedule,
        hyper.min_c,
        hyper.delta,
        getattr(hyper, "delay_adaptive", 0.0),
        getattr(hyper, "batch_step", "sum"),
    )


def build_spsa(view: DeveloperView, hyper: SpsaHyper) -> Optimizer:
    return spsa_from_schedule(view, hyper, gain_schedule(view, hyper), "spsa")


def spsa_from_schedule(view: DeveloperView, hyper, schedule: GainSchedule, name: str) -> Optimizer:
    """Classic SPSA on ``schedule``, with the ``min_c`` and ``delta`` options of ``hyper``
    and its asynchrony options, if it has them."""
    probe = _probe_of(view, hyper, schedule)
    init, perturbation, export = _common(view, probe)

    def update(state: SpsaState, report: Report) -> SpsaState:
        step = probe.raise_step(_classic_step(schedule, report), report.iter_local)
        step = probe.realize(step, report)
        step = probe.asynchrony(step, report)
        return SpsaState(theta=view.clip(state.theta + step))

    return Optimizer(name, init, perturbation, update, export)


def _first_raised(schedule: GainSchedule, floor: np.ndarray, last: int) -> np.ndarray:
    """Per parameter, the first iteration ``k`` in ``1..last`` with ``c_k < floor``
    (``last + 1`` if none): from there on the probe is the floor."""
    ks = np.arange(1, last + 1, dtype=np.float64)
    decay = ks**schedule.gamma
    first = np.full(floor.shape, last + 1, dtype=np.int64)
    for j in np.flatnonzero(floor > 0.0):
        below = schedule.c[j] / decay < floor[j]
        if below.any():
            first[j] = int(np.argmax(below)) + 1
    return first


def build_spsa_block(view: DeveloperView, hyper: SpsaHyper) -> Optimizer:
    schedule = gain_schedule(view, hyper)
    probe = _probe_of(view, hyper, schedule)
    init, perturbation, export = _common(view, probe)
    # cumulative_gain[k] = sum_{i=1..k} k**gamma / (A + k)**alpha; a report never
    # reaches past micro-iteration num_pairs, but stay safe for any counter.
    last = 2 * view.num_pairs + 2
    cumulative_gain = np.concatenate(
        ([0.0], np.cumsum(schedule.gain_shape(np.arange(1, last + 1))))
    )
    gain_scale = schedule.gain_scale  # (param,)
    if probe.raised:
        # with min_c, a_k / c_eff = (a / min_c) / (A + k)**alpha from the first raised k on
        ks = np.arange(1, last + 1, dtype=np.float64)
        cumulative_decay = np.concatenate(
            ([0.0], np.cumsum(1.0 / (schedule.A + ks) ** schedule.alpha))
        )
        raised_from = _first_raised(schedule, probe.floor, last)[None, :]
        floor_scale = np.divide(
            schedule.a, probe.floor, out=np.zeros_like(schedule.a), where=probe.floor > 0.0
        )

    def update(state: SpsaState, report: Report) -> SpsaState:
        first = report.iter_local.astype(np.int64)
        n = report.n_pairs.astype(np.int64)
        end = first + n - 1
        if np.any(end > last):
            raise ValueError("spsa-block: report reaches past the precomputed gain table")
        if not probe.raised:
            mean_shape = (cumulative_gain[end] - cumulative_gain[first - 1]) / n
            step = gain_scale[None, :] * (mean_shape * report.signal)[:, None] * report.flip
        else:
            lo, hi = first[:, None], end[:, None]
            top = np.minimum(hi, raised_from - 1)  # the unraised part: lo..top
            unraised = np.where(top >= lo, cumulative_gain[top] - cumulative_gain[lo - 1], 0.0)
            bottom = np.maximum(lo, raised_from)  # the raised part: bottom..hi
            raised = np.where(
                hi >= bottom, cumulative_decay[hi] - cumulative_decay[bottom - 1], 0.0
            )
            mean_gain = (gain_scale * unraised + floor_scale * raised) / n[:, None]
            step = mean_gain * report.signal[:, None] * report.flip
        step = probe.realize(step, report)
        step = probe.asynchrony(step, report)
        return SpsaState(theta=view.clip(state.theta + step))

    return Optimizer("spsa-block", init, perturbation, update, export)


def build_spsa_cwd(view: DeveloperView, hyper: SpsaCwdHyper) -> Optimizer:
    """spsa-cwd; the decay's rate is the schedule's ``r_k`` (per parameter with a
    per-parameter r_end; ``min_c`` raises the probe and step, not the decay)."""
    schedule = gain_schedule(view, hyper)
    probe = _probe_of(view, hyper, schedule)
    init, perturbation, export = _common(view, probe)

    def update(state: SpsaState, report: Report) -> SpsaState:
        step = probe.raise_step(_classic_step(schedule, report), report.iter_local)
        step = probe.realize(step, report)
        step = probe.asynchrony(step, report)
        delta = state.theta - view.theta_start
        mask = step * delta <= 0.0
        decay = hyper.lambda_cwd * schedule.r_k(report.iter_local) * np.where(mask, delta, 0.0)
        return SpsaState(theta=view.clip(state.theta + step - decay))

    return Optimizer("spsa-cwd", init, perturbation, update, export)
