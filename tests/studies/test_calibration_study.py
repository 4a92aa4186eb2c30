"""The calibration study row: its section's refusals and its dataset and report files."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from spsa_bench.config.loader import resolve
from spsa_bench.config.records import ConfigError
from spsa_bench.config.sections.calibration import parse

CONFIG = Path(__file__).resolve().parents[2] / "config" / "calibration.yaml"


def _raw() -> dict:
    return yaml.safe_load(CONFIG.read_text())


def test_the_shipped_calibration_config_parses():
    raw = _raw()
    section = parse(resolve(raw))
    assert section.draws == raw["calibration"]["draws"]
    assert [f[0] for f in section.free] == list(raw["calibration"]["free"])
    assert section.batch_settings == raw["batch_modes"][raw["calibration"]["batch_mode"]]
    assert section.default_games == "corpus"
    assert section.start_tuned_at is None  # each tune's start drawn at its own time control
    assert section.step_sampling == raw["calibration"].get("step_sampling", "random")
    raw["calibration"]["start_tuned_at"] = "STC"
    raw["calibration"]["fixed"]["time_control_shift"] = {"spread": 0.5}
    assert parse(resolve(raw)).start_tuned_at == "STC"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c.update({"free": {"interaction": {"low": 0, "high": 1}}}), "not a free key"),
        (
            lambda c: c["free"].update(
                {
                    "offset.df": {"low": 1, "high": 2},
                    "elo_at_stake.concentration": {"low": 1, "high": 2},
                }
            ),
            "too many properties",
        ),
        (lambda c: c["free"].update({"offset.scale": {"low": 2, "high": 1}}), "must be below"),
        (
            lambda c: c["free"].update({"plateau.fraction": {"low": 0, "high": 1, "log": True}}),
            "log range needs low > 0",
        ),  # fmt: skip
        (lambda c: c.update({"batch_mode": "nope"}), "calibration.batch_mode"),
        (lambda c: c["fixed"].update({"plateau": {}}), "no truth prior"),
        (lambda c: c.update({"start_tuned_at": "XTC"}), "calibration.start_tuned_at"),
        (lambda c: c.update({"step_sampling": "sorted"}), "calibration.step_sampling"),
        (lambda c: c.update({"start_tuned_at": "STC"}), "needs a time_control_shift"),
    ],
)
def test_section_refusals_name_the_key(edit, message):
    raw = _raw()
    section = copy.deepcopy(raw["calibration"])
    edit(section)
    raw["calibration"] = section
    with pytest.raises(ConfigError, match=message):
        parse(resolve(raw))


def record(name: str, elo: float, date: str):
    """A hand-made record: 3 parameters, 4,000 games, one fixed test of Elo ``elo`` +- 1.96."""
    from spsa_bench.corpus.records import Parameter, Source, Tune, TuneRecord, Verification

    test = Verification("LTC", None, None, "fixed", None, None, 1000, None, None, None, None,
                        "fixed", elo, 1.959963984540054)  # fmt: skip
    return TuneRecord(
        name=name, title=name, date=date, kind="search", sources=(Source("c", "hand", "t"),),
        tune=Tune("60+0.6", 1, 4000, None, None, None, None),
        parameters=tuple(Parameter(f"p{i}", 100.0, 100.0) for i in range(3)),
        verification=(test,), provenance={}, block=None,
    )  # fmt: skip


def test_dataset_and_report_files(tmp_path):
    """A tiny calibration of hand-made records (one fit, one held-out tune) written as
    the row's five files; the table's coverage matches the dataset's."""
    from spsa_bench.analysis.calibration import calibration_table, coverage_table
    from spsa_bench.calibration.prior import PriorFamily
    from spsa_bench.calibration.run import calibrate
    from spsa_bench.studies import STUDIES
    from spsa_bench.studies.calibration import calibration_dataset

    raw = _raw()
    raw["calibration"]["draws"] = 4
    raw["calibration"]["free"] = {"elo_at_stake.median": {"low": 1, "high": 5}}
    raw["calibration"]["fixed"] = {"inactive_fraction": 0.0}
    config = resolve(raw)
    section = parse(config)
    family = PriorFamily.of_section(section)
    records = [record("2020-fit", 2.0, "2020-01-01"), record("2023-new", 1.0, "2023-01-01")]
    result = calibrate(
        records, family, draws=4, accept=0.5, seeds=[0, 1], entropy=config.entropy,
        batch_mode=section.batch_settings, split_year=2022, default_games=4000,
        default_time_control="LTC",
    )  # fmt: skip
    ds = calibration_dataset(config, section, family, result, [0, 1], "digest")
    assert list(ds["split"].values) == ["fit", "held-out"]
    assert int(ds["accepted"].sum()) == 2 and ds.sizes["sample"] == 4
    row = STUDIES["calibration"]
    paths = row.write(ds, [tmp_path / o.file for o in row.outputs])
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)
    table = calibration_table(ds)
    cover = coverage_table(table)
    expected = np.nanmean(ds["inside"].values[:, 0])
    assert cover["covered"].sum() / cover["tunes"].sum() == pytest.approx(expected)
    assert "Calibration of the truth prior" in paths[2].read_text()
    # P(this low) is the binomial CDF at the covered count under a right 80% band
    for _, row in cover.iterrows():
        n, k = int(row["tunes"]), int(row["covered"])
        total = sum(math.comb(n, j) * 0.8**j * 0.2 ** (n - j) for j in range(k + 1))
        assert row["p_this_low"] == pytest.approx(total, rel=1e-12)
    assert "P(this low)" in paths[2].read_text()
    # two verification tests per simulated tune: twice the samples, the same fit, and the
    # Monte-Carlo s.e. resamples whole draws (its instances with their tests)
    from spsa_bench.analysis.calibration import coverage_mc_se

    twice = calibrate(
        records, family, draws=4, accept=0.5, seeds=[0, 1], entropy=config.entropy,
        batch_mode=section.batch_settings, split_year=2022, default_games=4000,
        default_time_control="LTC", verification_tests=2,
    )  # fmt: skip
    ds2 = calibration_dataset(config, section, family, twice, [0, 1], "digest")
    assert ds2.attrs["verification_tests"] == 2 and ds2.sizes["sample"] == 8
    np.testing.assert_array_equal(ds2["accepted"].values, ds["accepted"].values)
    assert len(coverage_mc_se(ds2, replicates=5)) == len(coverage_mc_se(ds, replicates=5))


def test_binomial_cdf_against_a_simulation_and_the_edges():
    """P(X <= k) for X ~ Binomial(n, p): 1 at k = n, (1 - p)^n at k = 0, and within
    four standard errors of 200,000 simulated draws at n = 24, k = 13 and 17."""
    from spsa_bench.analysis.calibration import binomial_cdf

    assert binomial_cdf(24, 24, 0.8) == pytest.approx(1.0, rel=1e-12)
    assert binomial_cdf(0, 24, 0.8) == pytest.approx(0.2**24, rel=1e-12)
    draws = np.random.default_rng(7).binomial(24, 0.8, size=200_000)
    for k in (13, 17):
        share = float(np.mean(draws <= k))
        se = math.sqrt(share * (1 - share) / draws.size)
        assert abs(binomial_cdf(k, 24, 0.8) - share) < 4 * se + 1e-6


def test_coverage_mc_se_is_the_bootstrap_spread_of_the_coverage():
    """One tune observed at 0, 20 accepted draws of one instance, 3 of them at 0 and 17
    at 1: a resample's 10% point is 0 (the tune inside) iff it holds at least 3 zeros
    (numpy's linear quantile at position 1.9 of 20), so the coverage is Bernoulli(p),
    p = P(Binomial(20, 0.15) >= 3), and its spread sqrt(p (1 - p)); constant draws give
    0."""
    import math

    import numpy as np
    import xarray as xr

    from spsa_bench.analysis.calibration import MC_REPLICATES, coverage_mc_se

    def dataset(values):
        return xr.Dataset(
            {
                "samples": (("tune", "sample", "stat"), np.array(values, float)[None, :, None]),
                "observed": (("tune", "stat"), np.zeros((1, 1))),
                "split": ("tune", np.array(["held-out"], dtype=object)),
            },
            coords={"stat": ["verification_elo"]},
            attrs={"instances_per_draw": 1},
        )

    se = coverage_mc_se(dataset([0.0] * 3 + [1.0] * 17))["mc_se"].iloc[0]
    p = 1 - sum(math.comb(20, j) * 0.15**j * 0.85 ** (20 - j) for j in range(3))
    spread = math.sqrt(p * (1 - p))
    # the spread's standard error: |d sd / dp| * sqrt(p (1 - p) / replicates)
    tolerance = 4 * abs(1 - 2 * p) / (2 * spread) * math.sqrt(p * (1 - p) / MC_REPLICATES)
    assert abs(se - spread) < tolerance + 1e-3, (se, spread)
    assert coverage_mc_se(dataset([0.0] * 20))["mc_se"].iloc[0] == 0.0
