"""The calibration: fit the prior family on the early tunes, predict the later ones.

:func:`calibrate` takes corpus records and a :class:`~spsa_bench.calibration.prior.PriorFamily`:

1. every record becomes a :class:`~spsa_bench.calibration.simulate.TuneSetting`; the
   tunes dated before ``split_year`` are the fit set, the others the held-out set;
2. ``draws`` hyper-prior draws are simulated on every fit tune at every seed, one replay
   per tune (:func:`~spsa_bench.calibration.simulate.simulate_tune`);
3. rejection ABC (:mod:`spsa_bench.calibration.fit`) keeps the closest share
   ``accept`` of the draws: the posterior sample;
4. the accepted draws are simulated on every held-out tune at every seed (the
   posterior predictive); the fit tunes' predictive samples are their accepted rows of
   step 2 (an in-sample check, not a validation).

With ``verification_tests`` ``K > 1`` each simulated tune's verification is played
``K`` times (:func:`~spsa_bench.calibration.simulate.verification_elos`): the fit's
statistics use test 0 alone, so the posterior is the one ``K = 1`` gives, and the
predictive sample of the verification Elo holds all ``K`` (``samples``' layout is
accepted draw x seed x test; the move statistics, one per simulated tune, sit at test
0 and are NaN at the others).

With ``noise`` ``record`` each tune plays the match noise of its own era, measured in
its verification tests (:mod:`~spsa_bench.calibration.era_noise`); ``preset`` (the
default) plays its time control's calibrated preset.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from spsa_bench.calibration import fit
from spsa_bench.calibration.era_noise import record_noises
from spsa_bench.calibration.prior import PriorFamily
from spsa_bench.calibration.simulate import (
    TuneSetting,
    budget_levels,
    simulate_tune_tests,
    tune_setting,
)
from spsa_bench.calibration.stats import STATS
from spsa_bench.corpus.load import DATA, load_corpus


@dataclasses.dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` found; arrays over ``tune`` follow :attr:`settings`."""

    settings: tuple[TuneSetting, ...]
    fit_set: np.ndarray  # (tune,) bool
    values: np.ndarray  # (draw, free)
    distance: np.ndarray  # (draw,)
    accepted: np.ndarray  # (draw,) bool
    observed_summaries: np.ndarray  # (summary,)
    simulated_summaries: np.ndarray  # (draw, summary)
    samples: np.ndarray  # (tune, sample, stat): accepted draws x seeds x verification tests
    verification_tests: int = 1

    @property
    def observed(self) -> np.ndarray:
        return np.stack([s.observed for s in self.settings])


def calibrate(
    records: Sequence,
    family: PriorFamily,
    *,
    draws: int,
    accept: float,
    seeds: Sequence[int],
    entropy: int,
    batch_mode: dict,
    split_year: int,
    default_games: int | str,
    default_time_control: str,
    step_spread: float = 0.0,
    param_step_spread: float = 0.0,
    start_tuned_at: str | None = None,
    step_sampling: str = "random",
    quoted_step_spread: float | None = None,
    verification_tests: int = 1,
    noise: str = "preset",
    progress: Callable[[str], None] | None = None,
) -> Calibration:
    """The calibration of ``records`` (module docstring), in its steps: the settings,
    the fit tunes simulated at every draw, rejection ABC, the predictive samples."""
    settings = _settings(records, len(seeds), default_games, default_time_control, noise)
    fit_set = np.array([s.year < split_year for s in settings])
    if not fit_set.any():
        raise ValueError(f"no tune dated before {split_year}: nothing to fit on")
    values = family.draws(entropy, draws)
    seeds = [int(s) for s in seeds]
    play = functools.partial(
        simulate_tune_tests, family=family, seeds=seeds, entropy=entropy,
        batch_mode=batch_mode, step_spread=step_spread,
        param_step_spread=param_step_spread, start_tuned_at=start_tuned_at,
        step_sampling=step_sampling, quoted_step_spread=quoted_step_spread,
        verification_tests=verification_tests,
    )  # fmt: skip
    simulated = np.full((len(settings), draws, len(seeds), len(STATS)), np.nan)
    tests = np.full((len(settings), draws, len(seeds), verification_tests), np.nan)
    for i in np.flatnonzero(fit_set):
        if progress is not None:
            progress(f"fit: {settings[i].name} ({settings[i].games:,} games, {draws} draws)")
        simulated[i], tests[i] = play(settings[i], values=values)
    obs_summary, sim_summary = _summaries(settings, fit_set, simulated)
    distance = fit.distances(sim_summary, obs_summary)
    accepted = fit.accept(distance, accept)
    samples = _predictive_samples(
        settings, fit_set, simulated, tests, accepted, values[accepted], play, progress
    )
    return Calibration(
        settings=settings,
        fit_set=fit_set,
        values=values,
        distance=distance,
        accepted=accepted,
        observed_summaries=obs_summary,
        simulated_summaries=sim_summary,
        samples=samples,
        verification_tests=verification_tests,
    )


def _settings(records, slots: int, default_games, default_time_control: str, noise: str):
    """Every record's :class:`~spsa_bench.calibration.simulate.TuneSetting` (``slots``
    instances per draw), at its era's noise when ``noise`` is ``record``."""
    budgets = budget_levels(records, slots, default_games)
    settings = tuple(tune_setting(r, budgets, default_time_control) for r in records)
    if noise == "record":
        eras = record_noises(records, [s.time_control for s in settings])
        return tuple(dataclasses.replace(s, noise=n) for s, n in zip(settings, eras, strict=True))
    if noise != "preset":
        raise ValueError(f"noise {noise!r}: must be preset or record")
    return settings


def _summaries(settings, fit_set: np.ndarray, simulated: np.ndarray):
    """The fit set's observed summaries and each draw's simulated ones (summaries per
    draw and seed, then their mean over the seeds)."""
    log_params = np.log([s.params for s in settings])[fit_set]
    observed = np.stack([s.observed for s in settings])[fit_set]
    # (draw, seed, tune, stat) -> summaries per draw and seed
    per_seed = fit.summaries(np.moveaxis(simulated[fit_set], 0, 2), log_params)
    with warnings.catch_warnings():  # a summary the fit set lacks is NaN at every seed
        warnings.simplefilter("ignore", RuntimeWarning)
        return fit.summaries(observed, log_params), np.nanmean(per_seed, axis=1)


def _predictive_samples(settings, fit_set, simulated, tests, accepted, kept, play, progress):
    """``(tune, sample, stat)``: the accepted rows of the fit tunes, the held-out tunes
    played at the accepted draws ``kept``; sample = accepted draw x seed x test, the
    moves at test 0 (NaN at the others), the verification Elo at every test."""
    n_seeds, n_tests = tests.shape[2], tests.shape[3]
    samples = np.full((len(settings), kept.shape[0], n_seeds, n_tests, len(STATS)), np.nan)
    for i, setting in enumerate(settings):
        if fit_set[i]:
            rows, elos = simulated[i][accepted], tests[i][accepted]
        else:
            if progress is not None:
                progress(f"predict: {setting.name} ({setting.games:,} games)")
            rows, elos = play(setting, values=kept)
        samples[i, :, :, 0] = rows  # the moves at test 0, NaN at the others
        samples[i, :, :, :, 0] = elos
    return samples.reshape(len(settings), -1, len(STATS))


def corpus_digest(folder=None) -> str:
    """The first 12 hex digits of the SHA-256 of every file of the corpus folder (names
    and bytes, sorted): the corpus version a fit names."""
    folder = DATA if folder is None else folder
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def packaged_corpus() -> tuple[tuple, str]:
    """The packaged corpus's records and its digest (:func:`corpus_digest`)."""
    return load_corpus(), corpus_digest(DATA)


__all__ = ["Calibration", "calibrate", "corpus_digest", "packaged_corpus"]
