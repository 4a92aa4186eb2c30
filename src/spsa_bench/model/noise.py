"""Game noise: the vendored pentanomial model and a family calibrated to Fishtest.

A noise model turns the Elo difference of the two probes of a game pair into the
probabilities of the five pair outcomes ``(LL, DL, DD, WD, WW)`` (net wins -2 .. +2 to
the hero) and, for the hot path, into inverse-CDF thresholds for 32-bit draws.

``vendored`` is the model of spec 000 §1.2 (``spsa_bench.model.pentanomial``): a
deterministic ±100 cp book exit and a per-game logistic; it draws about half of its
games at equal strength. Real Fishtest SPSA tunes draw 75-79% (the presets below).

**The calibrated family.** Two games of a pair share a random component
``eta ~ N(0, tau^2)``; given ``eta`` the games are independent, and a game's latent
result ``mu + eta + eps`` (``eps`` standard logistic, CDF ``F``) is a win above the
draw margin ``delta``, a loss below ``-delta``, a draw between:

    w(eta) = F(mu + eta - delta),    l(eta) = F(-mu - eta - delta),    d = 1 - w - l,

    LL = E[l^2],  DL = E[2 l d],  DD = E[d^2 + 2 w l],  WD = E[2 w d],  WW = E[w^2]

(expectations over ``eta`` by Gauss-Hermite quadrature). ``delta`` and ``tau`` are
calibrated once per preset so that at equal strength (``mu = 0``) the per-game draw
rate is ``draw_rate`` and ``sigma2 = var(net wins of a pair) / 2`` is ``sigma2``; since

    var(pair net) = 2 (1 - d) + 2 E[(w - l)^2] = 2 (1 - d)(1 + rho),

``tau`` sets the within-pair correlation ``rho = E[(w - l)^2] / (1 - d)`` (0 at
``tau = 0``, towards 1 as ``tau`` grows). For each Elo advantage ``x`` of the hero
the shift ``mu(x)`` is re-solved so that the hero's expected per-game score is exactly
the project's Elo convention:

    E[w + d / 2] = 1 / (1 + 10^(-x / 400))   <=>   E[w - l] = tanh(x ln10 / 800).

The draw rate then falls smoothly as ``|x|`` grows. With common uniforms a stronger
hero never gets a worse outcome (each game is stochastically increasing in ``mu``).

The hot path reads a piecewise cubic Hermite table of the four cumulative thresholds
on a 1/8-Elo grid over ±599 (values exact, slopes analytic), like the vendored model.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path

import numpy as np

from spsa_bench.model import pentanomial

MAX_OPPONENT_ELO = pentanomial.MAX_OPPONENT_ELO
OUTCOMES = pentanomial.OUTCOMES

#: Calibration targets measured on real Fishtest SPSA tunes (figures published with the
#: original lab's later work; issue 14): per-game draw rate and sigma2 = var(pair net) / 2
#: at equal strength. STC: 3 tunes, LTC: 4, VLTC: 1.
PRESETS: dict[str, tuple[float, float]] = {
    "STC": (0.748, 0.2654),
    "LTC": (0.775, 0.2274),
    "VLTC": (0.787, 0.2133),
}
PRESET_SOURCE = (
    "draw rate and var(pair net)/2 at equal strength measured on real Fishtest SPSA tunes "
    "(STC 3 tunes, LTC 4, VLTC 1), as published with the original lab's later work"
)
#: ``(delta, tau)`` of each preset, as :func:`_solve_calibration` found them when they
#: were stored (a test re-solves them: equal within the root finder's tolerance; its last bits
#: move between scipy releases). Stored, so that a preset's results do not depend on
#: the installed scipy, and a process playing a preset neither imports scipy's root
#: finder (a third of a second) nor re-solves.
PRESET_PARAMETERS: dict[str, tuple[float, float]] = {
    "STC": (2.0436338404148655, 0.5430261081422347),
    "LTC": (2.0889209520941905, 0.24683094522473767),
    "VLTC": (2.130263173610974, 0.09108132120898943),
}
#: Largest pair-component scale (logistic units): 64-point Gauss-Hermite quadrature is
#: exact to about 1e-12 up to there (the logistic's poles limit it as tau grows). It
#: bounds the reachable within-pair correlation: about 0.26 at a draw rate of 0.775,
#: 0.35 at 0.3, 0.17 at 0.9 (real tunes need at most 0.06).
MAX_PAIR_SCALE = 1.5


@functools.cache
def _unit_rule() -> tuple[np.ndarray, np.ndarray]:
    """64-node Gauss-Hermite rule for ``E[f(eta)]``, ``eta ~ N(0, 1)``: nodes and weights
    (built on first use: numpy.polynomial is not imported by a run from stored knots)."""
    import numpy.polynomial.hermite

    nodes, weights = numpy.polynomial.hermite.hermgauss(64)
    return math.sqrt(2.0) * nodes, weights / math.sqrt(math.pi)


_K = math.log(10.0) / 800.0  # E[w - l] = tanh(K x)
_STEP = 0.125  # grid step of the threshold table (Elo)


class NoiseError(ValueError):
    """A noise setting that no member of the family reaches."""


def _logistic(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _game_probabilities(mu: np.ndarray, eta: np.ndarray, delta: float):
    """Per-game ``(w, d, l)`` at shifts ``mu[:, None]`` and pair components ``eta[None, :]``."""
    z = mu[:, None] + eta[None, :]
    win = _logistic(z - delta)
    loss = _logistic(-z - delta)
    draw = _logistic(delta - z) - _logistic(-delta - z)  # = 1 - w - l without cancellation
    return win, draw, loss


def _equal_strength(delta: float, tau: float) -> tuple[float, float]:
    """Draw rate and ``E[(w - l)^2]`` at ``mu = 0``."""
    win, draw, loss = _game_probabilities(np.zeros(1), tau * _unit_rule()[0], delta)
    return float(draw[0] @ _unit_rule()[1]), float(((win - loss) ** 2)[0] @ _unit_rule()[1])


def _margin_for_draw_rate(draw_rate: float, tau: float) -> float:
    """The draw margin ``delta`` giving ``draw_rate`` at equal strength for this ``tau``."""
    from scipy import optimize  # only when a calibrated model is built

    return optimize.brentq(
        lambda delta: _equal_strength(delta, tau)[0] - draw_rate, 0.0, 200.0, xtol=1e-15, rtol=1e-15
    )


def _correlation(draw_rate: float, tau: float) -> float:
    delta = _margin_for_draw_rate(draw_rate, tau)
    return _equal_strength(delta, tau)[1] / (1.0 - draw_rate)


@functools.lru_cache(maxsize=32)
def _calibrate(draw_rate: float, sigma2: float) -> tuple[float, float]:
    """``(delta, tau)`` hitting ``draw_rate`` and ``sigma2`` at equal strength (a
    preset's from :data:`PRESET_PARAMETERS`)."""
    for name, target in PRESETS.items():
        if target == (draw_rate, sigma2):
            return PRESET_PARAMETERS[name]
    return _solve_calibration(draw_rate, sigma2)


def _solve_calibration(draw_rate: float, sigma2: float) -> tuple[float, float]:
    """:func:`_calibrate` by root finding: ``delta`` for the draw rate, then ``tau`` for
    the within-pair correlation ``sigma2 / (1 - draw_rate) - 1``."""
    if not 0.0 < draw_rate < 1.0:
        raise NoiseError(f"draw_rate = {draw_rate!r}: must be in (0, 1)")
    correlation = sigma2 / (1.0 - draw_rate) - 1.0
    reach = _correlation(draw_rate, MAX_PAIR_SCALE)
    lowest, highest = 1.0 - draw_rate, (1.0 - draw_rate) * (1.0 + reach)
    if not lowest <= sigma2 <= highest:
        raise NoiseError(
            f"sigma2 = {sigma2!r} with draw_rate = {draw_rate!r}: must be in "
            f"[{lowest:.6g}, {highest:.6g}], i.e. (1 - d)(1 + rho) with a within-pair "
            f"correlation rho in [0, {reach:.3g}] (this family has no negative correlation)"
        )
    if correlation <= 0.0:
        return _margin_for_draw_rate(draw_rate, 0.0), 0.0
    from scipy import optimize

    tau = optimize.brentq(
        lambda t: _correlation(draw_rate, t) - correlation,
        0.0,
        MAX_PAIR_SCALE,
        xtol=1e-14,
        rtol=1e-15,
    )
    return _margin_for_draw_rate(draw_rate, tau), tau


def _shift_without_pair_component(target: np.ndarray, delta: float) -> np.ndarray:
    """``mu`` with ``F(mu - delta) - F(-mu - delta) = target`` (the ``tau = 0`` member).

    With ``E = e^mu`` and ``D = e^delta`` this is the quadratic
    ``D (1 - q) E^2 - q (1 + D^2) E - D (1 + q) = 0`` in ``E``, whose positive root is taken.
    """
    big = math.exp(delta)
    half_b = target * (1.0 + big * big)
    root = half_b + np.sqrt(half_b * half_b + 4.0 * big * big * (1.0 - target * target))
    return np.log(root / (2.0 * big * (1.0 - target)))


def _solve_shift(hero_elo: np.ndarray, delta: float, eta: np.ndarray) -> np.ndarray:
    """``mu`` with ``E[w - l] = tanh(K x)`` for each hero advantage ``x``, vectorized.

    ``E[w - l]`` increases in ``mu`` with slope ``E[f(mu + eta - delta) + f(mu + eta + delta)]``
    (``f = F (1 - F)``). Newton from the closed-form ``tau = 0`` root converges in a few
    steps for the scales allowed here; entries still off after 12 steps (none were seen)
    are finished by bisection on [-60, 60].
    """
    target = np.tanh(_K * hero_elo)
    mu = _shift_without_pair_component(target, delta)
    for _ in range(12):
        residual, slope = _score_residual(mu, target, delta, eta)
        mu = mu - residual / slope
        if np.all(np.abs(residual) < 1e-15):
            return mu
    residual, _ = _score_residual(mu, target, delta, eta)
    stuck = ~(np.abs(residual) < 1e-13)
    if stuck.any():
        mu[stuck] = _bisect_shift(target[stuck], delta, eta)
    return mu


def _score_residual(mu, target, delta, eta):
    """``E[w - l] - target`` and its slope in ``mu``."""
    z = mu[:, None] + eta[None, :]
    win = _logistic(z - delta)
    plus = _logistic(z + delta)  # l = 1 - plus
    residual = (win + plus - 1.0) @ _unit_rule()[1] - target
    slope = (win * (1.0 - win) + plus * (1.0 - plus)) @ _unit_rule()[1]
    return residual, slope


def _bisect_shift(target, delta, eta):
    lo = np.full(target.shape, -60.0)
    hi = np.full(target.shape, 60.0)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        above = _score_residual(mid, target, delta, eta)[0] > 0.0
        hi = np.where(above, mid, hi)
        lo = np.where(above, lo, mid)
    return 0.5 * (lo + hi)


def _pair_probabilities(mu: np.ndarray, delta: float, eta: np.ndarray) -> np.ndarray:
    win, draw, loss = _game_probabilities(mu, eta, delta)
    out = np.empty(mu.shape + (5,))
    out[:, 0] = (loss * loss) @ _unit_rule()[1]
    out[:, 1] = (2.0 * loss * draw) @ _unit_rule()[1]
    out[:, 2] = (draw * draw + 2.0 * win * loss) @ _unit_rule()[1]
    out[:, 3] = (2.0 * win * draw) @ _unit_rule()[1]
    out[:, 4] = (win * win) @ _unit_rule()[1]
    return out


def _pair_slopes(mu: np.ndarray, delta: float, eta: np.ndarray) -> np.ndarray:
    """``d probabilities / d mu``, shape ``(n, 5)``."""
    win, draw, loss = _game_probabilities(mu, eta, delta)
    dwin = win * (1.0 - win)
    plus = _logistic(mu[:, None] + eta[None, :] + delta)  # l = 1 - plus, dl/dmu = -plus(1 - plus)
    dloss = -plus * (1.0 - plus)
    ddraw = -dwin - dloss
    out = np.empty(mu.shape + (5,))
    out[:, 0] = (2.0 * loss * dloss) @ _unit_rule()[1]
    out[:, 1] = (2.0 * (dloss * draw + loss * ddraw)) @ _unit_rule()[1]
    out[:, 2] = (2.0 * (draw * ddraw + dwin * loss + win * dloss)) @ _unit_rule()[1]
    out[:, 3] = (2.0 * (dwin * draw + win * ddraw)) @ _unit_rule()[1]
    out[:, 4] = (2.0 * win * dwin) @ _unit_rule()[1]
    return out


@dataclasses.dataclass(frozen=True)
class NoiseModel:
    """A game-pair noise model: ``vendored`` or a calibrated member of the family.

    ``opponent_elo`` arguments are ``Elo(opponent) - Elo(hero)`` (the hero's advantage is
    its negative), clipped to ±599 like the vendored model.
    """

    name: str
    draw_rate: float | None = None
    sigma2: float | None = None

    @property
    def vendored(self) -> bool:
        return self.draw_rate is None

    @functools.cached_property
    def parameters(self) -> tuple[float, float]:
        """``(delta, tau)``: draw margin and pair-component scale (logistic units)."""
        if self.vendored:
            raise AttributeError("the vendored model has no calibrated parameters")
        return _calibrate(self.draw_rate, self.sigma2)

    def probabilities(self, opponent_elo) -> np.ndarray:
        """Pair-outcome probabilities ``(LL, DL, DD, WD, WW)``, shape ``(..., 5)``."""
        if self.vendored:
            return pentanomial.probabilities(opponent_elo)
        x, shape = pentanomial.clipped_elo(opponent_elo)
        delta, tau = self.parameters
        eta = tau * _unit_rule()[0]
        mu = _solve_shift(-x, delta, eta)
        return _pair_probabilities(mu, delta, eta).reshape(shape + (5,))

    @functools.cached_property
    def _columns(self) -> np.ndarray:
        return _threshold_columns(self.draw_rate, self.sigma2)

    def fast_thresholds(self, opponent_elo: np.ndarray) -> np.ndarray:
        """Float thresholds ``(n, 4)`` (cumulative LL, +DL, +DD, +WD) from the table."""
        if self.vendored:
            return pentanomial.fast_thresholds(opponent_elo)
        return pentanomial.threshold_table_columns(self._columns, _STEP, opponent_elo).T

    def fast_draw_thresholds(self, opponent_elo: np.ndarray) -> np.ndarray:
        """uint32 thresholds ``(n, 4)`` for 32-bit draws, from the table (the hot path).

        The vendored model's are exactly ``pentanomial.fast_draw_thresholds``.
        """
        if self.vendored:
            return pentanomial.fast_draw_thresholds(opponent_elo)
        return pentanomial.draw_thresholds(self.fast_thresholds(opponent_elo).T).T

    def draw_rate_per_game(self, opponent_elo) -> np.ndarray:
        """The per-game draw probability (both games of the pair averaged)."""
        if self.vendored:
            return pentanomial.draw_rate_per_game(opponent_elo)
        x, shape = pentanomial.clipped_elo(opponent_elo)
        delta, tau = self.parameters
        eta = tau * _unit_rule()[0]
        _, draw, _ = _game_probabilities(_solve_shift(-x, delta, eta), eta, delta)
        return (draw @ _unit_rule()[1]).reshape(shape)

    def summary(self, hero_elo) -> list[dict]:
        """Per hero advantage: probabilities, score, draw rate, sigma2 and correlation.

        ``score`` is the hero's expected per-game score, ``sigma2 = var(pair net) / 2``,
        and ``correlation`` the correlation of the two games' results of a pair with the
        games taken as exchangeable (colours averaged): ``sigma2 / var(game) - 1`` with
        ``var(game) = (1 - draw_rate) - (2 score - 1)^2``. It is negative for the vendored
        model, whose book exit gives the two colours opposite biases.
        """
        hero_elo = np.atleast_1d(np.asarray(hero_elo, dtype=np.float64))
        probs = self.probabilities(-hero_elo)
        draw_rates = self.draw_rate_per_game(-hero_elo)
        values = pentanomial.OUTCOME_VALUES.astype(np.float64)
        rows = []
        for x, p, draw_rate in zip(hero_elo, probs, draw_rates, strict=True):
            mean = float(p @ values)
            sigma2 = (float(p @ values**2) - mean**2) / 2.0
            score = float(p @ pentanomial.OUTCOME_SCORES)
            game_variance = (1.0 - float(draw_rate)) - (2.0 * score - 1.0) ** 2
            rows.append(
                {
                    "elo": float(x),
                    "probabilities": dict(zip(OUTCOMES, map(float, p), strict=True)),
                    "score": score,
                    "draw_rate": float(draw_rate),
                    "sigma2": sigma2,
                    "correlation": sigma2 / game_variance - 1.0 if game_variance > 0 else 0.0,
                }
            )
        return rows

    def attributes(self) -> dict[str, object]:
        """NetCDF attributes that describe the model (and where its targets come from)."""
        if self.vendored:
            return {
                "noise_model": "vendored",
                "noise_description": "spec 000 §1.2 pentanomial: ±100 cp book exit, "
                "per-game logistic a = 100, b = 22",
            }
        delta, tau = self.parameters
        return {
            "noise_model": self.name,
            "noise_draw_rate": self.draw_rate,
            "noise_sigma2": self.sigma2,
            "noise_draw_margin": delta,
            "noise_pair_scale": tau,
            "noise_description": "logistic games with a draw margin and a Gaussian pair "
            "component, score exact to 1 / (1 + 10^(-x/400))",
            "noise_source": PRESET_SOURCE if self.name in PRESETS else "user-given",
        }


@functools.lru_cache(maxsize=8)
def _threshold_columns(draw_rate: float, sigma2: float) -> np.ndarray:
    """Coefficient-major Hermite table of the thresholds, ``(16, cells)``.

    Rows: c3 of the four thresholds, then c2, c1, c0; on cell ``j`` with local coordinate
    ``f`` in [0, 1) a threshold is ``((c3 f + c2) f + c1) f + c0``, matching the exact
    values and slopes (:func:`_threshold_knots`) at both knots.
    """
    values, slopes = _threshold_knots(draw_rate, sigma2)
    f0, f1 = values[:-1], values[1:]
    m0, m1 = slopes[:-1] * _STEP, slopes[1:] * _STEP
    table = np.stack([2 * (f0 - f1) + m0 + m1, 3 * (f1 - f0) - 2 * m0 - m1, m0, f0], axis=1)
    columns = np.ascontiguousarray(table.reshape(table.shape[0], 16).T)
    columns.setflags(write=False)
    return columns


#: Where the presets' threshold knots are stored (:func:`write_preset_knots`).
KNOTS_DIR = Path(__file__).resolve().parent / "data"


def _knots_path(preset: str, directory: Path | None = None) -> Path:
    return (directory or KNOTS_DIR) / f"noise-knots-{preset}.npy"


def _threshold_knots(draw_rate: float, sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    """The four cumulative thresholds and their slopes in the opponent's Elo at every knot
    of the grid, ``(knots, 4)`` each: a preset's as stored (solved once by
    :func:`solve_threshold_knots` and written by :func:`write_preset_knots`, so that a
    process skips the solve, a sixth of a 1000-seed ``simulate``, and the values do not
    depend on the CPU's ``tanh``), any other model's solved now."""
    for name, target in PRESETS.items():
        if target == (draw_rate, sigma2) and _knots_path(name).is_file():
            stored = np.load(_knots_path(name))
            return stored[0], stored[1]
    return solve_threshold_knots(draw_rate, sigma2)


def solve_threshold_knots(draw_rate: float, sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_threshold_knots` solved: the exact values at the knots, and their slopes
    ``dP/dx = -dP/dmu dmu/dx`` with ``dmu/dx`` from the score equation."""
    delta, tau = _calibrate(draw_rate, sigma2)
    eta = tau * _unit_rule()[0]
    grid = np.linspace(
        -MAX_OPPONENT_ELO, MAX_OPPONENT_ELO, int(round(2 * MAX_OPPONENT_ELO / _STEP)) + 1
    )
    hero = -grid
    mu = _solve_shift(hero, delta, eta)
    values = np.cumsum(_pair_probabilities(mu, delta, eta)[:, :4], axis=1)
    _, dscore_dmu = _score_residual(mu, np.tanh(_K * hero), delta, eta)
    dtarget_dhero = _K * (1.0 - np.tanh(_K * hero) ** 2)
    dmu_dgrid = -dtarget_dhero / dscore_dmu  # grid = -hero
    slopes = np.cumsum(_pair_slopes(mu, delta, eta)[:, :4], axis=1) * dmu_dgrid[:, None]
    return values, slopes


def write_preset_knots(directory: Path | None = None) -> list[Path]:
    """Solve and store every preset's knots (``(2, knots, 4)`` float64: values, slopes).

    Run after changing the family's equations; the tests check the stored knots against
    a fresh solve."""
    paths = []
    for name, (draw_rate, sigma2) in PRESETS.items():
        path = _knots_path(name, directory)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, np.stack(solve_threshold_knots(draw_rate, sigma2)))
        paths.append(path)
    return paths


VENDORED = NoiseModel("vendored")


def noise_model(setting) -> NoiseModel:
    """The model for a config setting: a preset name, ``vendored`` or ``{draw_rate, sigma2}``."""
    if isinstance(setting, NoiseModel):
        return setting
    if setting is None or setting == "vendored":
        return VENDORED
    if isinstance(setting, str):
        if setting not in PRESETS:
            raise NoiseError(
                f"unknown noise preset {setting!r}; known: vendored, {', '.join(PRESETS)}"
            )
        draw_rate, sigma2 = PRESETS[setting]
        model = NoiseModel(setting, draw_rate, sigma2)
    elif isinstance(setting, dict) and set(setting) == {"draw_rate", "sigma2"}:
        model = NoiseModel("custom", float(setting["draw_rate"]), float(setting["sigma2"]))
    else:
        raise NoiseError(
            f"noise = {setting!r}: expected vendored, a preset ({', '.join(PRESETS)}) "
            "or {draw_rate: D, sigma2: S}"
        )
    _ = model.parameters  # calibrate now: an unreachable setting fails here, naming itself
    return model
