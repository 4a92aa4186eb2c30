"""Hostile input, round 5 (issue 33, replayed from a fresh clone): every study command
checks its ``--output-dir`` before any run, as ``tune`` and ``plan`` do. Before, a file
given as ``--output-dir`` was found only when the outputs were written, after the whole
study (``calibrate``: about 18 minutes)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hostile_helpers import snapshot

from spsa_bench.cli.main import main
from spsa_bench.studies import STUDIES

ROOT = Path(__file__).resolve().parents[2]


def _config_of(row) -> str:
    """A repository configuration that has the row's section (the calibration has its own)."""
    name = "calibration.yaml" if row.command == "calibrate" else "config.yaml"
    return str(ROOT / "config" / name)


def _refused(capsys, tmp_path, argv, *words) -> None:
    before = snapshot(tmp_path)
    start = time.perf_counter()
    assert main(argv) == 2
    assert time.perf_counter() - start < 20  # the refusal comes before any run
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and all(word in lines[0] for word in words), lines
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", [row.command for row in STUDIES.values()])
def test_a_study_refuses_an_output_dir_that_is_a_file_before_any_run(tmp_path, capsys, command):
    row = next(row for row in STUDIES.values() if row.command == command)
    (tmp_path / "out").write_text("a file\n")
    argv = [command, "--config", _config_of(row), "--output-dir", str(tmp_path / "out"), "--quiet"]
    _refused(capsys, tmp_path, argv, "--output-dir", "not a directory")


@pytest.mark.parametrize("command", [row.command for row in STUDIES.values()])
def test_a_study_refuses_an_empty_output_dir_and_an_output_that_is_a_directory(
    tmp_path, capsys, command
):
    row = next(row for row in STUDIES.values() if row.command == command)
    config = _config_of(row)
    _refused(capsys, tmp_path, [command, "--config", config, "--output-dir", ""], "empty path")
    (tmp_path / row.outputs[0].file).mkdir()
    argv = [command, "--config", config, "--output-dir", str(tmp_path), "--quiet"]
    _refused(capsys, tmp_path, argv, "--output-dir", row.outputs[0].file, "a directory")
