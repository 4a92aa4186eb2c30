"""The planner's prior: calibrated by default, the assumed one when asked for or adjusted."""

from __future__ import annotations

import pytest

from spsa_bench.cli.main import build_parser
from spsa_bench.cli.plan import prior_of
from spsa_bench.config.loader import ConfigError
from spsa_bench.model.calibrated import calibrated_truth
from spsa_bench.model.instances import TruthPrior


def _args(*flags):
    return build_parser().parse_args(["plan", "block.txt", "--games", "20000", *flags])


def test_the_default_is_the_calibrated_prior_with_its_statement():
    prior, source = prior_of(_args())
    assert prior == TruthPrior.from_mapping(calibrated_truth())
    assert source.startswith("calibrated: ") and "not a measurement" in source


def test_an_assumed_prior_option_selects_the_assumed_prior():
    prior, source = prior_of(_args("--offset-scale", "3"))
    assert prior == TruthPrior(offset_scale=3.0)
    assert source.startswith("assumed")
    assert prior_of(_args("--prior", "assumed"))[0] == TruthPrior()


def test_an_assumed_option_with_the_calibrated_prior_is_refused_naming_it():
    with pytest.raises(ConfigError, match=r"^--interaction: sets the assumed prior"):
        prior_of(_args("--prior", "calibrated", "--interaction", "0.5"))


@pytest.mark.parametrize("kind", ["calibrated", "assumed"])
def test_a_time_control_shift_is_added_to_either_prior_at_the_plans_time_control(kind):
    import dataclasses

    plain, _ = prior_of(_args("--prior", kind))
    shifted, _ = prior_of(_args("--prior", kind, "--time-control-shift", "0.5",
                                "--time-control", "LTC"))  # fmt: skip
    assert plain.tc_spread == 0.0
    assert shifted == dataclasses.replace(plain, tc_spread=0.5, tc_tuned_at="LTC")


@pytest.mark.parametrize("value", ["-0.1", "nan", "abc", "101"])
def test_a_bad_time_control_shift_is_refused_naming_the_flag(value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        _args("--time-control-shift", value)
    assert exit_info.value.code == 2
    assert "--time-control-shift" in capsys.readouterr().err


def test_the_calibrated_prior_brings_its_accepted_draws_with_the_shift(monkeypatch):
    """prior_draws_of: one prior per accepted draw of the record (each with the given
    time-control shift), none for the assumed prior."""
    import dataclasses

    from spsa_bench.cli.plan import prior_draws_of
    from spsa_bench.model import calibrated

    truths = [
        {**calibrated_truth(), "offset": {**calibrated_truth()["offset"], "scale": s}}
        for s in (0.6, 1.5)
    ]
    monkeypatch.setattr(calibrated, "calibrated_truths", lambda: truths)
    draws = prior_draws_of(_args("--time-control-shift", "0.5", "--time-control", "LTC"))
    assert draws == tuple(
        dataclasses.replace(TruthPrior.from_mapping(t), tc_spread=0.5, tc_tuned_at="LTC")
        for t in truths
    )
    assert prior_draws_of(_args("--prior", "assumed")) == ()
    assert prior_draws_of(_args("--offset-scale", "3")) == ()
