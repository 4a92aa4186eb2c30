"""The study rows and their sections: one arm parser for every study (types, bounds,
sweeps refused where the study does not tune), the table every surface iterates."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import small_config_dict

from spsa_bench.config.loader import ConfigError, resolve
from spsa_bench.config.sections import SECTIONS
from spsa_bench.studies import STUDIES

ROOT = Path(__file__).resolve().parents[2]


def _workers_arm(settings):
    def change(raw):
        raw["workers_study"]["arms"]["x"] = settings

    return change


def _workers_pool(pool):
    def change(raw):
        raw["workers_study"]["pool"] = pool

    return change


def _cend_variant(settings):
    def change(raw):
        raw["cend_study"]["variants"]["x"] = settings

    return change


CASES = {
    "workers arm swept": (
        "workers-study", _workers_arm({"kind": "spsa", "r_scale": [0.5, 1.0]}),
        "workers_study.arms.x.r_scale = [0.5, 1.0]",
    ),
    "workers arm negative": (
        "workers-study", _workers_arm({"kind": "spsa", "r_scale": -1}),
        "workers_study.arms.x.r_scale = -1",
    ),
    "workers arm text": (
        "workers-study", _workers_arm({"kind": "spsa", "r_scale": "abc"}),
        'workers_study.arms.x.r_scale = "abc"',
    ),
    "workers arm delay": (
        "workers-study", _workers_arm({"kind": "spsa", "delay_adaptive": -1000}),
        "workers_study.arms.x.delay_adaptive = -1000",
    ),
    "workers arm unknown kind": (
        "workers-study", _workers_arm({"kind": "no-such-kind"}),
        'workers_study.arms.x.kind = "no-such-kind"',
    ),
    "workers pool time control": (
        "workers-study", _workers_pool({"batch": "fishtest", "tc": "XTC"}),
        'workers_study.pool.tc = "XTC"',
    ),
    "workers pool no batch": (
        "workers-study", _workers_pool({"tc": "LTC"}), "workers_study.pool: 'batch'"
    ),
    "workers pool workers": (
        "workers-study", _workers_pool({"batch": "fishtest", "workers": 3}),
        "workers_study.pool.workers",
    ),
    "cend variant swept": (
        "cend-study", _cend_variant({"r_scale": [0.5, 1.0]}),
        "cend_study.variants.x.r_scale = [0.5, 1.0]",
    ),
    "cend variant negative": (
        "cend-study", _cend_variant({"r_scale": -1}), "cend_study.variants.x.r_scale = -1"
    ),
    "cend variant min_c": (
        "cend-study", _cend_variant({"min_c": -5}), "cend_study.variants.x.min_c = -5"
    ),
    "cend variant kind": (
        "cend-study", _cend_variant({"kind": "adam"}), "cend_study.variants.x.kind"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_a_bad_study_arm_is_refused_when_the_config_loads(case):
    _, change, key = CASES[case]
    raw = small_config_dict()
    change(raw)
    with pytest.raises(ConfigError, match="^" + key.replace("[", r"\[").replace(".", r"\.")):
        resolve(raw)


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        "workers arm swept",
        "workers arm negative",
        "workers pool time control",
        "cend variant swept",
    ],
)
def test_the_study_command_refuses_a_bad_arm_with_one_line_and_exit_2(case, tmp_path):
    command, change, key = CASES[case]
    raw = small_config_dict()
    change(raw)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "spsa_bench", command, "--config", str(path), "--seeds", "0-1",
         "--output-dir", str(out)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and key in lines[0], done.stderr
    assert not out.exists()


def test_a_studys_own_arm_runs_what_it_says():
    """A workers arm given as settings is that kind at those values (the others at
    their defaults); a cend variant is its base arm with the overrides."""
    raw = small_config_dict()
    raw["workers_study"]["arms"]["x"] = {"kind": "spsa", "r_scale": 0.5}
    config = resolve(raw)
    arms = {arm.name: arm for arm in SECTIONS["workers_study"].parse(config).arms}
    assert arms["x"].kind == "spsa" and arms["x"].hyper.r_scale == 0.5
    assert arms["x"].sweep is None
    cend = SECTIONS["cend_study"].parse(config)
    base = config.optimizer(raw["cend_study"]["base"])
    for arm in cend.arms:
        overrides = raw["cend_study"]["variants"][arm.name] or {}
        expected = {**dataclasses.asdict(base.hyper), **overrides}
        assert dataclasses.asdict(arm.hyper) == expected
        assert arm.kind == base.kind


def test_every_study_row_has_its_section_and_distinct_names():
    assert set(STUDIES) <= set(SECTIONS)
    for attribute in ("command", "rule", "label"):
        values = [getattr(row, attribute) for row in STUDIES.values()]
        assert len(set(values)) == len(values), attribute
    paths = [output.path for row in STUDIES.values() for output in row.outputs]
    assert len(set(paths)) == len(paths)


def test_every_study_output_has_a_caption_file_and_a_report_function():
    import importlib

    for row in STUDIES.values():
        module, name = row.report.split(":")
        assert callable(getattr(importlib.import_module(module), name)), row.report
        for output in row.outputs:
            if output.caption is not None:
                assert (ROOT / "workflow" / "report" / output.caption).is_file(), output.caption


def test_the_command_line_has_one_subcommand_per_study_row():
    from spsa_bench.cli.main import COMMANDS

    for row in STUDIES.values():
        assert COMMANDS[row.command].row is row
