"""The match noise of a tune's own era, read from its verification tests (issue 30).

The calibrated presets (:data:`spsa_bench.model.noise.PRESETS`) were measured on recent
Fishtest SPSA tunes. Older tunes played other books and engines with other draw rates:
the trinomial tests of 2015-2019 drew 55-74% of their games, the pentanomial LTC tests
of 2020-2021 had a pair variance a third of today's. SPSA's noise-driven drift grows
with the square root of the pair variance, so a tune of another era moves its
parameters by noise more or less than the presets say.

:func:`measured_noise` reads a record's ``{draw_rate, sigma2}`` (the calibrated family's
custom setting, :func:`~spsa_bench.model.noise.noise_model`) from the first of its
verification tests played at the tune's time control (a test naming no time control
is taken to be at the tune's, as :func:`~.simulate.verification_time_control` does):

* with pentanomial counts, ``sigma2 = var(pair net wins) / 2`` measured, and the draw
  rate ``1 - sigma2 / 1.005`` (a within-pair correlation of 0.005: the family has no
  negative correlation, which the unbalanced books of today's tests show per game, and
  SPSA sees only the pair's net result, whose variance is what this keeps);
* with W/L/D only, the test's draw rate ``d`` and ``sigma2 = (1 - d)(1 + rho)`` with
  ``rho`` the preset's own within-pair correlation at that time control.

An inference, not a quoted number: a verification test is not the tune's own games
(another book, other engine versions, a slightly uneven match). :func:`record_noises`
gives every record its era's noise, a record without a usable test the noise of a
record dated the same day at the same time control (the 2016 commit that merged four
runs lists its tests once), else ``None`` (the preset).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from spsa_bench.calibration.simulate import time_control_of_test
from spsa_bench.corpus.records import TuneRecord
from spsa_bench.model.noise import PRESETS

#: The within-pair correlation a measured pair variance is played at: the draw rate is
#: ``1 - sigma2 / (1 + PAIR_CORRELATION)``, just inside the family's reach (it needs
#: ``sigma2 >= 1 - draw_rate``, a correlation of at least 0).
PAIR_CORRELATION = 0.005
_PAIR_NET = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])


def measured_noise(record: TuneRecord, time_control: str) -> dict | None:
    """``{draw_rate, sigma2}`` of ``record``'s first verification test at ``time_control``
    (module docstring), or None when it has none."""
    for test in record.verification:
        found = time_control_of_test(test, time_control)
        if found is not None and found[1] != time_control:
            continue
        if test.ptnml is not None and sum(test.ptnml) > 0:
            counts = np.asarray(test.ptnml, dtype=float)
            mean = float(counts @ _PAIR_NET / counts.sum())
            sigma2 = float(counts @ (_PAIR_NET - mean) ** 2 / counts.sum() / 2.0)
            if 0.0 < sigma2 < 1.0:
                return {"draw_rate": 1.0 - sigma2 / (1.0 + PAIR_CORRELATION), "sigma2": sigma2}
        if (
            None not in (test.wins, test.losses, test.draws)
            and test.wins + test.losses + test.draws
        ):
            draw_rate = test.draws / (test.wins + test.losses + test.draws)
            preset_draws, preset_sigma2 = PRESETS[time_control]
            rho = preset_sigma2 / (1.0 - preset_draws) - 1.0
            if 0.0 < draw_rate < 1.0:
                return {"draw_rate": draw_rate, "sigma2": (1.0 - draw_rate) * (1.0 + rho)}
    return None


def record_noises(records: Sequence[TuneRecord], time_controls: Sequence[str]) -> list:
    """Per record (``time_controls``: each tune's noise model), its era's noise
    (:func:`measured_noise`), else that of a record of the same date and time control,
    else None."""
    own = [measured_noise(r, tc) for r, tc in zip(records, time_controls, strict=True)]
    by_day = {}
    for record, tc, noise in zip(records, time_controls, own, strict=True):
        if noise is not None:
            by_day.setdefault((record.date, tc), noise)
    return [
        noise if noise is not None else by_day.get((record.date, tc))
        for record, tc, noise in zip(records, time_controls, own, strict=True)
    ]


__all__ = ["PAIR_CORRELATION", "measured_noise", "record_noises"]
