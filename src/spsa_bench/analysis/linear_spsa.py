"""The SPSA kinds linearised on the true bowl: relaxation, convergence budget, mean loss.

Analysis code: it reads the ground truth (the bowl), which no optimizer may. With
``e = theta - theta_peak`` a seed's loss is ``L = e^T H e`` (``H = diag(k_elo w_true)`` for
a groups scenario, the seed's scaled and rotated bowl for a tune scenario; found here by
polarisation of the bowl's own ``elo_loss``). A pair probes ``theta +- c_k f`` (flips
``f = +-1``) at the Elo difference ``x = -4 (c_k f)^T H e``; every noise model scores it
``E[pair net] = 2 tanh(K x) ~ 2 K x`` with ``K = ln 10 / 800``; and the arm steps
``theta_i += (a_k / c_k,i) s S f_i`` (``s = 1``, or ``1 / (2 sqrt P)`` for the scaled
signal). Averaged over the flips, ``c_k`` cancels (``min_c`` changes nothing here)::

    E[delta e] = -kappa g_k D H e,   kappa = 8 K s,   D = diag(a),   a_k = a g_k,   g_k = (A + k)^-alpha

In the modes of ``D^1/2 H D^1/2 = Q diag(lambda) Q^T``, ``u = Q^T D^-1/2 e``::

    E[u_m](n) = u_m(0) exp(-kappa lambda_m I_n),   I_n = sum_{k<=n} g_k,   L = sum_m lambda_m u_m^2

Mode ``m`` relaxes with the time constant ``1 / (kappa lambda_m g_k)`` pairs: at constant
gains (Autoselect) ``C / (8 r c^2 h)`` for an axis of curvature ``h`` (``C = 1 / K``,
``r = a / c^2``), Van den Bergh's ``lambda`` (vdbergh/spsa_simul, which counts it in games:
Autoselect's ``-C / (2 r c^2 H)``, ``H = -2 h``, ``spsa_new.js``).

**Predicted need** (:func:`predicted_need`): the smallest budget ``N`` whose own schedule
(the arm at ``num_pairs = N``) brings the mean loss left from the start,
``sum_m lambda_m u_m(0)^2 exp(-2 kappa lambda_m I_N)``, to :data:`NEED_LOSS_SHARE` =
``exp(-2 * 3)`` of the start loss: Van den Bergh's three relaxation times
(``lambda_ratio = 3``), weighted by the loss each mode carries, so a mode that carries no
loss does not hold the run back; on a bowl whose axes relax at one rate it is exactly
three time constants of the slowest axis. Per-seed instances: the median seed's need.

**Predicted mean loss** (:func:`predicted_mean_loss`): per pair ``u_m`` also gains the
variance ``q_m = g_k^2 sum_i Q_im^2 (a_i / c_k,i^2) (v0 s^2 + B kappa^2 T_k)``, with
``v0 = var(pair net)`` at equal strength, ``T_k = sum_j c_k,j^2 E[(H e)_j^2]`` the other
axes' signal (SPSA's own gradient noise, shared by the ``B`` pairs of a report), so
``V_m <- V_m (1 - kappa lambda_m g_k)^2 + q_m`` and ``E[L] = sum_m lambda_m (E[u_m]^2 + V_m)``;
integrated on at most :data:`MAX_STEPS` steps (exact mean, midpoint noise).

Left out, so measured and predicted may differ by them: ``tanh`` beyond its slope, the
bounds (clipping), integer rounding, staleness (asynchronous jobs step with an old
``theta``), the batch's single gain in ``spsa`` (``spsa-block`` averages it), and the
covariances between modes.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from spsa_bench.optimizers.autoselect import autoselect_schedule
from spsa_bench.optimizers.gains import GainSchedule
from spsa_bench.optimizers.spsa import gain_schedule

if TYPE_CHECKING:
    from spsa_bench.config.loader import OptimizerArm
    from spsa_bench.model.bowl import Problem

#: Expected per-game score slope: ``E[w - l] = tanh(K x)`` for an Elo advantage ``x``.
K = math.log(10.0) / 800.0
#: Van den Bergh's ``lambda_ratio`` (spsa_simul, Autoselect): the budget a run needs, in
#: relaxation times of its amplitude.
RELAXATION_TIMES = 3.0
#: The share of the start loss the predicted need leaves: ``exp(-2 * RELAXATION_TIMES)``.
NEED_LOSS_SHARE = math.exp(-2.0 * RELAXATION_TIMES)
#: The kinds with a linear prediction.
PREDICTED_KINDS = ("spsa", "spsa-block", "spsa-cwd", "spsa-autoselect")
#: Integration steps of the predicted mean loss (plus the checkpoints).
MAX_STEPS = 500
#: Terms summed one by one in :func:`gain_sum` (beyond: the midpoint integral).
EXACT_TERMS = 100_000
#: Largest budget :func:`predicted_need` looks at, in pairs.
MAX_NEED = 10**12


def not_predicted(arm: OptimizerArm, view=None) -> str | None:
    """Why the linearisation does not describe ``arm`` (on ``view``, when given; ``None``:
    it does)."""
    hyper = arm.hyper
    if arm.kind not in PREDICTED_KINDS:
        return f"{arm.kind} is not an SPSA kind"
    if getattr(hyper, "lambda_cwd", 0.0) > 0.0:
        return "cautious weight decay (lambda_cwd > 0)"
    if getattr(hyper, "batch_step", "sum") != "sum":
        return "batch_step = mean"
    if getattr(hyper, "delay_adaptive", 0.0) > 0.0:
        return "delay-adaptive steps"
    if hyper.delta != "flip":
        return "delta = realized"
    if view is not None and np.any(arm_schedule(arm, view).a <= 0.0):
        return "a parameter with a zero gain (r_end or r_scale 0) never moves"
    return None


def arm_schedule(arm: OptimizerArm, view) -> GainSchedule:
    """The gain schedule ``arm`` plays on ``view`` (its budget: ``view.num_pairs``)."""
    if arm.kind == "spsa-autoselect":
        return autoselect_schedule(view, arm.hyper)
    return gain_schedule(view, arm.hyper)


def loss_hessian(bowl, step: np.ndarray) -> np.ndarray:
    """``H`` with ``loss(theta_peak + e) = e^T H e``, shape ``(bowl, param, param)``: one
    bowl for a groups scenario, one per seed for drawn instances.

    Polarisation of ``bowl.elo_loss`` with steps ``step`` (exact for a quadratic):
    ``H_ij = (L(s_i u_i + s_j u_j) - L(s_i u_i) - L(s_j u_j)) / (2 s_i s_j)``.
    """
    peak = np.atleast_2d(bowl.theta_peak)
    n = peak.shape[1]
    offsets = np.diag(step)
    single = bowl.elo_loss(peak[:, None, :] + offsets)  # (bowl, param)
    hessian = np.empty((peak.shape[0], n, n))
    for j in range(n):
        both = bowl.elo_loss(peak[:, None, :] + offsets + offsets[j])
        hessian[:, :, j] = (both - single - single[:, j : j + 1]) / (2.0 * step * step[j])
    return 0.5 * (hessian + hessian.transpose(0, 2, 1))


@dataclasses.dataclass(frozen=True)
class LinearSpsa:
    """One SPSA arm on one problem, linearised (module docstring); arrays per bowl."""

    rates: np.ndarray  # (bowl, mode): lambda_m >= 0
    start: np.ndarray  # (bowl, mode): u_m(0)
    basis: np.ndarray  # (bowl, param, mode): Q
    drive: np.ndarray  # (bowl, param, mode): H D^1/2 Q, so H e = drive @ u
    schedule: GainSchedule
    floor: np.ndarray  # (param,): the smallest probe (min_c on integer parameters)
    signal_scale: float  # s

    @property
    def kappa(self) -> float:
        """``8 K s``: the mean step per unit of ``a_k H e``."""
        return 8.0 * K * self.signal_scale

    @property
    def start_loss(self) -> np.ndarray:
        """``sum_m lambda_m u_m(0)^2`` per bowl: the loss at the start."""
        return np.sum(self.rates * self.start**2, axis=-1)

    def probe(self, k: float) -> np.ndarray:
        """``c_k`` per parameter (raised to the floor), shape ``(param,)``."""
        return np.maximum(self.schedule.c / k**self.schedule.gamma, self.floor)


def linearise(
    arm: OptimizerArm, problem: Problem, signal: str = "raw", hessian: np.ndarray | None = None
) -> LinearSpsa:
    """The linear model of ``arm`` on ``problem`` at the problem's budget (``hessian``: the
    problem's :func:`loss_hessian`, computed when not given); refuses an arm
    :func:`not_predicted` rules out."""
    reason = not_predicted(arm, problem.view)
    if reason is not None:
        raise ValueError(f"no linear prediction for {arm.name}: {reason}")
    view = problem.view
    schedule = arm_schedule(arm, view)
    if hessian is None:
        hessian = loss_hessian(problem.bowl, view.c_dev)
    root = np.sqrt(schedule.a)
    rates, basis = np.linalg.eigh(root[:, None] * hessian * root[None, :])
    offset = view.theta_start - np.atleast_2d(problem.bowl.theta_peak)
    start = np.einsum("bpm,bp->bm", basis, offset / root)
    scale = 1.0 if signal == "raw" else 1.0 / (2.0 * math.sqrt(view.num_params))
    min_c = float(getattr(arm.hyper, "min_c", 0.0))
    return LinearSpsa(
        rates=np.maximum(rates, 0.0),
        start=start,
        basis=basis,
        drive=hessian @ (root[:, None] * basis),
        schedule=schedule,
        floor=np.where(view.integer, min_c, 0.0),
        signal_scale=scale,
    )


def gain_sum(A: float, alpha: float, n: int) -> float:
    """``sum_{k=1}^{n} (A + k)^-alpha``: term by term up to :data:`EXACT_TERMS`, then the
    midpoint integral ``int_{m+1/2}^{n+1/2} (A + x)^-alpha dx``."""
    if alpha == 0.0:
        return float(n)
    m = min(int(n), EXACT_TERMS)
    total = float(np.sum((A + np.arange(1, m + 1, dtype=np.float64)) ** -alpha))
    if n > m:
        low, high = A + m + 0.5, A + n + 0.5
        if alpha == 1.0:
            total += math.log(high / low)
        else:
            total += (high ** (1.0 - alpha) - low ** (1.0 - alpha)) / (1.0 - alpha)
    return total


def _progress(arm: OptimizerArm, model: LinearSpsa, view, budget: int) -> float:
    """``kappa (a(N) / a) I_N`` at budget ``N``: the exponent every mode's ``lambda_m`` multiplies
    after a run of ``N`` pairs on the arm's schedule for ``N`` (``a`` as in ``model``)."""
    schedule = arm_schedule(arm, dataclasses.replace(view, num_pairs=int(budget)))
    moving = model.schedule.a > 0.0
    ratio = float(schedule.a[moving][0] / model.schedule.a[moving][0])
    return model.kappa * ratio * gain_sum(schedule.A, schedule.alpha, int(budget))


def needed_progress(model: LinearSpsa, share: float = NEED_LOSS_SHARE) -> np.ndarray:
    """Per bowl, the progress ``x`` with ``sum_m w_m exp(-2 lambda_m x) = share * sum_m w_m``
    (``w_m = lambda_m u_m(0)^2``), by bisection; 0 where the start loss is 0."""
    weight = model.rates * model.start**2
    total = weight.sum(axis=-1)
    slowest = np.min(np.where(weight > 0.0, model.rates, np.inf), axis=-1)
    with np.errstate(divide="ignore"):
        # every loaded mode has decayed below the share by then
        high = np.where(total > 0.0, -0.5 * math.log(share) / slowest, 0.0)
    low = np.zeros_like(high)
    for _ in range(100):
        mid = 0.5 * (low + high)
        left = np.sum(weight * np.exp(-2.0 * model.rates * mid[:, None]), axis=-1)
        above = left > share * total
        low, high = np.where(above, mid, low), np.where(above, high, mid)
    return high


def predicted_need(arm: OptimizerArm, problem: Problem, model: LinearSpsa) -> float:
    """Pairs the arm needs on ``problem`` (module docstring; ``model`` its :func:`linearise`):
    the smallest budget ``N`` whose own schedule reaches the median bowl's
    :func:`needed_progress`; ``inf`` beyond :data:`MAX_NEED`, 0 when the run starts at the peak."""
    target = float(np.median(needed_progress(model)))
    if target <= 0.0:
        return 0.0
    view = problem.view
    if _progress(arm, model, view, MAX_NEED) < target:
        return math.inf
    low, high = 0, MAX_NEED  # progress(low) < target <= progress(high)
    while high - low > 1:
        mid = (low + high) // 2
        if _progress(arm, model, view, mid) >= target:
            high = mid
        else:
            low = mid
    return float(high)


def _step_grid(pairs: np.ndarray) -> np.ndarray:
    """The checkpoints and at most :data:`MAX_STEPS` evenly spaced steps, as integers."""
    even = np.rint(np.linspace(0.0, float(pairs[-1]), MAX_STEPS + 1))
    return np.unique(np.concatenate([np.asarray(pairs, dtype=np.float64), even])).astype(np.int64)


def _step_noise(model, u_mid, variance, k_mid, pair_variance, pairs_per_report):
    """``q_m`` per pair at pair ``k_mid`` (module docstring), shape ``(bowl, mode)``."""
    probe2 = model.probe(k_mid) ** 2
    gain = (model.schedule.A + k_mid) ** -model.schedule.alpha
    mean_drive = np.einsum("bjm,bm->bj", model.drive, u_mid)
    signal_power = np.einsum("bj,j->b", mean_drive**2, probe2)
    signal_power += np.einsum("bjm,j,bm->b", model.drive**2, probe2, variance)
    weight = np.einsum("bpm,p->bm", model.basis**2, model.schedule.a / probe2)
    noise = pair_variance * model.signal_scale**2 + pairs_per_report * model.kappa**2 * signal_power
    return gain**2 * weight * noise[:, None]


def predicted_mean_loss(
    model: LinearSpsa, pairs, pair_variance: float, pairs_per_report: float
) -> np.ndarray:
    """The mean loss over the bowls at each of ``pairs`` (a grid from 0 to the run's budget),
    ``sum_m lambda_m (E[u_m]^2 + V_m)``: the mean exactly, the variance by steps of at most
    ``budget / MAX_STEPS`` pairs (midpoint noise, exact decay within a step)."""
    pairs = np.asarray(pairs, dtype=np.int64)
    grid = _step_grid(pairs)
    ks = np.arange(1, grid[-1] + 1, dtype=np.float64)
    progress = np.concatenate(([0.0], np.cumsum((model.schedule.A + ks) ** -model.schedule.alpha)))
    variance = np.zeros_like(model.start)
    loss = np.empty(grid.shape[0])
    loss[0] = float(np.mean(model.start_loss))
    for step, (k0, k1) in enumerate(zip(grid[:-1], grid[1:], strict=True), start=1):
        k_mid = 0.5 * (k0 + 1 + k1)
        u_mid = model.start * np.exp(-model.kappa * model.rates * progress[int(k_mid)])
        q = _step_noise(model, u_mid, variance, k_mid, pair_variance, pairs_per_report)
        x = 2.0 * model.kappa * model.rates * (progress[k1] - progress[k0])
        spread = np.where(x > 1e-12, -np.expm1(-x) / np.where(x > 1e-12, x, 1.0), 1.0)
        variance = variance * np.exp(-x) + q * (k1 - k0) * spread
        u1 = model.start * np.exp(-model.kappa * model.rates * progress[k1])
        loss[step] = float(np.mean(np.sum(model.rates * (u1**2 + variance), axis=-1)))
    return loss[np.searchsorted(grid, pairs)]


def pair_variance(noise) -> float:
    """``var(pair net)`` at equal strength for a noise model (``2 sigma2``)."""
    probabilities = np.asarray(noise.probabilities(np.zeros(1)))[0]
    net = np.arange(-2.0, 3.0)
    mean = float(probabilities @ net)
    return float(probabilities @ net**2 - mean**2)
