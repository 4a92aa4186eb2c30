"""The shipped calibrated truth prior: readable, sourced, and selectable by name."""

from __future__ import annotations

from spsa_bench.model.calibrated import calibrated_record, calibrated_statement, calibrated_truth
from spsa_bench.model.instances import TruthPrior


def test_the_shipped_record_is_a_prior_with_its_source():
    record = calibrated_record()
    prior = TruthPrior.from_mapping(calibrated_truth())
    fitted = record["fitted_on"]
    assert fitted["corpus_digest"] in calibrated_statement()
    assert "not a measurement" in calibrated_statement()
    assert len(fitted["fit_tunes"]) > 0 and all(
        int(name[:4]) < fitted["split_year"] for name in fitted["fit_tunes"]
    )
    for key, summary in record["posterior"].items():  # the truth holds the medians
        head, _, tail = key.partition(".")
        value = calibrated_truth()[head][tail] if tail else calibrated_truth()[head]
        assert value == summary["median"]
        assert summary["min"] <= summary["median"] <= summary["max"]
    assert prior.option_on("elo_at_stake")


def test_the_shipped_prior_was_fitted_on_the_packaged_corpus():
    """A corpus edit (a corrected record, a new tune) leaves the shipped prior a fit to
    another corpus version until it is recalibrated and shipped again (ci/ship_calibration.py)."""
    from spsa_bench.calibration.run import corpus_digest

    assert calibrated_record()["fitted_on"]["corpus_digest"] == corpus_digest()


def test_a_scenario_selects_it_by_name(tmp_path):
    from conftest import small_config_dict

    from spsa_bench.config.loader import resolve
    from spsa_bench.config.scenarios import scenario_prior

    raw = small_config_dict()
    raw["scenarios"]["t"] = {"synthetic_tune": {"params": 6}, "truth": "calibrated"}
    config = resolve(raw)
    prior = scenario_prior(config.resolved["scenarios"]["t"])
    assert prior == TruthPrior.from_mapping(calibrated_truth())


def test_the_shipped_dataset_is_the_calibration_the_prior_came_from():
    import json

    from spsa_bench.analysis.calibration import calibration_table, shipped_dataset

    ds = shipped_dataset()
    assert json.loads(ds.attrs["calibrated_truth"]) == calibrated_record()
    assert ds.attrs["corpus_digest"] == calibrated_record()["fitted_on"]["corpus_digest"]
    table = calibration_table(ds)  # what the report's table and figure show
    held_out = table[table["split"] == "held-out"]
    assert len(held_out) > 0 and held_out["inside"].isin([True, False]).all()
    assert set(table["stat"]) == set(ds["stat"].values)  # labels decoded: every panel drawn


def test_the_shipped_report_draws_every_statistic(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from spsa_bench.analysis.calibration import calibration_figure, shipped_dataset

    ds = shipped_dataset()
    figure = calibration_figure(ds)
    with_data = [ax for ax in figure.axes if ax.collections]
    assert len(with_data) == ds.sizes["stat"]  # one panel per statistic, each with points


def test_calibrated_truths_set_each_accepted_draw_on_the_fixed_truth(monkeypatch):
    from spsa_bench.model import calibrated

    fake = {
        "truth": {"offset": {"scale": 1.0, "distribution": "normal"}, "inactive_fraction": 0.25},
        "posterior_sample": [
            {"offset.scale": 0.6, "inactive_fraction": 0.1},
            {"offset.scale": 2.0, "inactive_fraction": 0.3},
        ],  # fmt: skip
    }
    monkeypatch.setattr(calibrated, "calibrated_record", lambda: fake)
    assert calibrated.calibrated_truths() == [
        {"offset": {"scale": 0.6, "distribution": "normal"}, "inactive_fraction": 0.1},
        {"offset": {"scale": 2.0, "distribution": "normal"}, "inactive_fraction": 0.3},
    ]
    assert fake["truth"]["offset"]["scale"] == 1.0  # the record is not modified
    monkeypatch.setattr(calibrated, "calibrated_record", lambda: {"truth": fake["truth"]})
    assert calibrated.calibrated_truths() == []
