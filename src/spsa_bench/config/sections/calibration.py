"""The ``calibration`` section: fit a few numbers of the tune-scenario truth prior to
the corpus of real tunes by simulation (the study: :mod:`spsa_bench.studies.calibration`,
docs/calibration.md)::

    calibration:
      batch_mode: sync             # a batch mode of this config, every tune plays it
      split_year: 2022             # fit on tunes before it, predict the others
      draws: 32                    # hyper-prior draws (ABC by rejection)
      accept: 0.25                 # share of the draws kept (the closest)
      default_games: corpus        # a tune whose budget is unknown: corpus or a number
      default_time_control: LTC    # a tune whose time control is unknown
      step_spread: 0               # log-sd of a per-instance factor on every r_end
      step_sampling: random        # random: a factor per instance; stratified: one per stratum
      quoted_step_spread: null     # the same for records quoting their step (null: step_spread)
      verification_tests: 1        # verification tests per simulated tune (bands; fit: the first)
      noise: preset                # preset: the time control's; record: the tune's era's
      param_step_spread: 0         # log-sd of a per-instance, per-parameter factor on c_end
      start_tuned_at: null         # STC/LTC/VLTC: where every tune's start was last tuned
      fixed: {inactive_fraction: 0.25, plateau: {width: 1}}   # a truth mapping
      free:                        # 1 to 4 dotted truth keys: range, log-uniform or not
        elo_at_stake.median: {low: 0.5, high: 20, log: true}
        elo_at_stake.sigma: {low: 0.1, high: 1.5}
        offset.scale: {low: 0.5, high: 4, log: true}
        plateau.fraction: {low: 0, high: 0.8}

The seeds of the run (the config's, or ``--seeds``) are the instances each draw plays
on every tune.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools

from spsa_bench.config.records import Config, ConfigError
from spsa_bench.config.sections.fields import known
from spsa_bench.model.instances import PriorError, TruthPrior
from spsa_bench.model.time_control import TIME_CONTROLS

KEY = "calibration"
#: The truth keys a calibration may leave free (dotted: ``option.key``).
FREE_KEYS = (
    "elo_at_stake.median",
    "elo_at_stake.sigma",
    "elo_at_stake.concentration",
    "elo_at_stake.params_exponent",
    "offset.scale",
    "offset.df",
    "plateau.fraction",
    "plateau.width",
    "inactive_fraction",
    "time_control_shift.spread",
)
MAX_FREE = 4
#: ``default_games`` values that spread an unknown budget over the corpus's known ones
#: (``spsa_bench.calibration.simulate.budget_levels``); any other value is a number of games.
BUDGET_RULES = ("corpus", "log-uniform")
DEFAULTS = {
    "split_year": 2022,
    "draws": 32,
    "accept": 0.25,
    "default_games": "corpus",
    "default_time_control": "LTC",
    "step_spread": 0.0,
    "step_sampling": "random",
    "quoted_step_spread": None,
    "verification_tests": 1,
    "noise": "preset",
    "param_step_spread": 0.0,
    "start_tuned_at": None,
    "fixed": {},
}


@dataclasses.dataclass(frozen=True)
class CalibrationSection:
    batch_mode: str
    batch_settings: dict
    split_year: int
    draws: int
    accept: float
    default_games: int | str  # a number of games, "corpus" or "log-uniform"
    default_time_control: str
    step_spread: float
    #: ``random`` (a factor per instance) or ``stratified`` (the instances take the
    #: strata of the log-normal once each: ``calibration.simulate.step_multipliers``)
    step_sampling: str
    #: ``step_spread`` for the records whose step (c_end, r_end) a source quotes
    #: (``TuneRecord.step_quoted``); ``None``: ``step_spread`` for every record
    quoted_step_spread: float | None
    #: the verification tests played on each simulated tune (``calibration.run``: the
    #: fit uses the first, the predictive bands all)
    verification_tests: int
    #: ``preset`` (each tune plays its time control's calibrated noise) or ``record``
    #: (the noise its own verification tests measured: ``calibration.era_noise``)
    noise: str
    param_step_spread: float
    #: the time control every tune's start values were last tuned at (its offsets are
    #: drawn there; a tune at another time control plays the optimum the family's
    #: ``time_control_shift`` moves there); ``None``: each tune's own time control
    start_tuned_at: str | None
    fixed: dict
    free: tuple[tuple[str, float, float, bool], ...]  # (key, low, high, log)


def with_value(fixed: dict, key: str, value: float) -> dict:
    """``fixed`` with the dotted ``key`` set to ``value``; a ``time_control_shift``
    without ``tuned_at`` gets STC there, a placeholder: each simulated tune is tuned at
    its own time control (:func:`spsa_bench.calibration.simulate.tuned_prior`), or at the
    section's ``start_tuned_at``."""
    out = copy.deepcopy(fixed)
    head, _, tail = key.partition(".")
    if tail:
        out[head] = {**(out.get(head) or {}), tail: float(value)}
    else:
        out[head] = float(value)
    if isinstance(out.get("time_control_shift"), dict):
        out["time_control_shift"].setdefault("tuned_at", "STC")
    return out


def parse(config: Config) -> CalibrationSection | None:
    """The configuration's ``calibration``, checked (``None`` when it has none)."""
    raw = config.resolved.get(KEY)
    if raw is None:
        return None
    raw = {**DEFAULTS, **raw}
    known(config.batch_mode, raw["batch_mode"], f"{KEY}.batch_mode")
    if raw["default_time_control"] not in TIME_CONTROLS:
        raise ConfigError(
            f"{KEY}.default_time_control = {raw['default_time_control']!r}: must be one of "
            f"{', '.join(TIME_CONTROLS)}"
        )
    free = []
    for key, spec in raw["free"].items():
        where = f"{KEY}.free.{key}"
        if key not in FREE_KEYS:
            raise ConfigError(f"{where}: not a free key (expected one of {', '.join(FREE_KEYS)})")
        low, high, log = float(spec["low"]), float(spec["high"]), bool(spec.get("log", False))
        if not low < high:
            raise ConfigError(f"{where}.low = {low:g}: must be below high = {high:g}")
        if log and low <= 0:
            raise ConfigError(f"{where}.low = {low:g}: a log range needs low > 0")
        free.append((key, low, high, log))
    if not 1 <= len(free) <= MAX_FREE:
        raise ConfigError(f"{KEY}.free: {len(free)} keys given, 1 to {MAX_FREE} allowed")
    fixed = raw["fixed"] or {}
    for corner in itertools.product(*[(f[1], f[2]) for f in free]):
        truth = fixed
        for (key, *_), value in zip(free, corner, strict=True):
            truth = with_value(truth, key, value)
        try:
            TruthPrior.from_mapping(truth)
        except PriorError as error:
            raise ConfigError(
                f"{KEY}: fixed and free give no truth prior at {corner}: {error}"
            ) from None
    games = raw["default_games"]
    if games not in BUDGET_RULES and (
        isinstance(games, bool) or not isinstance(games, int) or not 1000 <= games <= 3_200_000
    ):
        raise ConfigError(
            f"{KEY}.default_games = {games!r}: must be corpus, log-uniform or an integer in "
            "[1000, 3200000]"
        )
    start = raw["start_tuned_at"]
    if start is not None and start not in TIME_CONTROLS:
        raise ConfigError(
            f"{KEY}.start_tuned_at = {start!r}: must be null or one of {', '.join(TIME_CONTROLS)}"
        )
    shifted = "time_control_shift" in fixed or any(
        f[0].startswith("time_control_shift.") for f in free
    )
    if start is not None and not shifted:
        raise ConfigError(
            f"{KEY}.start_tuned_at = {start}: needs a time_control_shift in {KEY}.fixed or "
            f"{KEY}.free (without one every time control has the same optimum)"
        )
    if not 0 < raw["accept"] <= 1:
        raise ConfigError(f"{KEY}.accept = {raw['accept']!r}: must be in (0, 1]")
    return CalibrationSection(
        batch_mode=raw["batch_mode"],
        batch_settings=dict(config.resolved["batch_modes"][raw["batch_mode"]]),
        split_year=int(raw["split_year"]),
        draws=int(raw["draws"]),
        accept=float(raw["accept"]),
        default_games=games,
        default_time_control=raw["default_time_control"],
        step_spread=float(raw["step_spread"]),
        step_sampling=raw["step_sampling"],
        quoted_step_spread=(
            None if raw["quoted_step_spread"] is None else float(raw["quoted_step_spread"])
        ),
        verification_tests=int(raw["verification_tests"]),
        noise=raw["noise"],
        param_step_spread=float(raw["param_step_spread"]),
        start_tuned_at=start,
        fixed=fixed,
        free=tuple(free),
    )
