"""The calibrated truth prior: the tune-scenario prior fitted to real Stockfish tunes.

``data/calibrated_truth.json`` is written by ``spsa-bench calibrate`` (the calibration
study, docs/calibration.md) and copied here by ``ci/ship_calibration.py``. It holds

* ``truth``: a complete ``truth`` mapping (:class:`~spsa_bench.model.instances.TruthPrior`),
  the section's fixed part with every free number at the median of its accepted draws;
* ``posterior``: per free number, that median, its Monte-Carlo standard error
  (``1.2533 sd / sqrt(n)`` of the ``n`` accepted draws: the large-sample standard error
  of a median of a normal sample) and the accepted range;
* ``posterior_sample``: the accepted draws' free numbers, one mapping per draw (the
  planner draws its instances from them: the posterior predictive, :func:`calibrated_truths`);
* ``fitted_on``: what the fit saw (corpus version, the fit tunes before the split year,
  draws, accepted share, seeds, entropy, configuration) and ``statement``, the sentence
  a result that uses the prior prints: a fit to the named tunes, not a measurement.

A scenario selects it with ``truth: calibrated`` and the planner with ``--prior
calibrated`` (docs/plan.md); both record the statement beside their results.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

#: The value of a scenario's ``truth`` (or the planner's ``--prior``) that selects it.
CALIBRATED = "calibrated"
_FILE = "calibrated_truth.json"


@cache
def calibrated_record() -> dict:
    """The packaged record (module docstring), read once."""
    text = resources.files("spsa_bench.model").joinpath("data", _FILE).read_text("utf-8")
    return json.loads(text)


def calibrated_truth() -> dict:
    """A fresh copy of the calibrated ``truth`` mapping."""
    return json.loads(json.dumps(calibrated_record()["truth"]))


def calibrated_truths() -> list[dict]:
    """One complete ``truth`` mapping per accepted draw of the calibration: the calibrated
    truth with its free numbers set to that draw's (empty for a record without a
    ``posterior_sample``)."""
    out = []
    for sample in calibrated_record().get("posterior_sample", []):
        truth = calibrated_truth()
        for key, value in sample.items():
            head, _, tail = key.partition(".")
            if tail:
                truth[head] = {**(truth.get(head) or {}), tail: float(value)}
            else:
                truth[head] = float(value)
        out.append(truth)
    return out


def calibrated_statement() -> str:
    """What the calibrated prior is, with its source, for a result that uses it."""
    return str(calibrated_record()["statement"])


__all__ = [
    "CALIBRATED",
    "calibrated_record",
    "calibrated_statement",
    "calibrated_truth",
    "calibrated_truths",
]
