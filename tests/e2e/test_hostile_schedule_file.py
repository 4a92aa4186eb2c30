"""Hostile input (issue 33, a leftover): the schedule file an asynchronous simulate job
replays is checked before netCDF4 reads it, as every other reader's file is.

A FIFO (which would block the open forever), a directory, a missing path, a file that is
not NetCDF and a file with a planted oversized attribute are each refused with one line
naming the file: by :func:`spsa_bench.dispatch.storage.read_schedule` (the checks the
layering lets ``dispatch`` make: a regular file) and by the simulate job's script, which
applies :func:`spsa_bench.results.reading.check_metadata` first (exit 2, no traceback,
no run file written, within a time bound: no hang)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import netCDF4
import pytest
import yaml

from spsa_bench.dispatch.storage import read_schedule
from spsa_bench.results.reading import MAX_ATTRIBUTE_STORAGE

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / ".test" / "config" / "config.yaml"
MODE, SCENARIO, ARM = "async-fixed", "mixed", "spsa"
BASE = Path(tempfile.mkdtemp(prefix="spsa-bench-hostile-schedule-"))
#: Seconds a refusal may take (the interpreter and the package; a FIFO used to block).
REFUSAL_SECONDS = 60


def tiny():
    from spsa_bench.config.loader import resolve

    return resolve(yaml.safe_load(TINY.read_text()))


@pytest.fixture(scope="module", autouse=True)
def schedule_file():
    """``BASE/schedule.nc``: the tiny configuration's schedule of :data:`MODE`, seeds 0-3."""
    from spsa_bench.engine.simulate import make_schedule
    from spsa_bench.results.datasets import write_schedule

    config = tiny()
    mode = config.batch_mode(MODE)
    write_schedule(
        make_schedule(config, mode, range(4)), BASE / "schedule.nc", batch_mode=MODE,
        settings_json="{}",
    )  # fmt: skip
    yield BASE / "schedule.nc"
    shutil.rmtree(BASE, ignore_errors=True)


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "schedule.nc"
    os.mkfifo(path)
    return path


def directory(tmp_path: Path) -> Path:
    path = tmp_path / "schedule.nc"
    path.mkdir()
    return path


def missing(tmp_path: Path) -> Path:
    return tmp_path / "schedule.nc"


def text(tmp_path: Path) -> Path:
    path = tmp_path / "schedule.nc"
    path.write_text("job_pairs,job_worker\n36,0\n")
    return path


def oversized(tmp_path: Path) -> Path:
    """The real schedule with a string attribute one MiB over the metadata cap."""
    path = Path(shutil.copy2(BASE / "schedule.nc", tmp_path / "schedule.nc"))
    with netCDF4.Dataset(path, "a") as nc:
        nc.setncattr("planted", "x" * (MAX_ATTRIBUTE_STORAGE + (1 << 20)))
    return path


NOT_REGULAR = "not a readable schedule file (not a regular file: a FIFO, device or directory)"


def read_in_subprocess(path: Path) -> subprocess.CompletedProcess:
    """``read_schedule(path)`` in a child with a time bound, so a blocking open fails
    the test instead of hanging it."""
    code = (
        "import sys\nfrom spsa_bench.dispatch.storage import read_schedule\n"
        f"try:\n    read_schedule({str(path)!r})\n"
        "except ValueError as error:\n    print(error, file=sys.stderr)\n    sys.exit(2)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=REFUSAL_SECONDS
    )


#: What is not a schedule file, each with the reason its one-line refusal gives.
NOT_SCHEDULES = [
    (fifo, NOT_REGULAR),
    (directory, NOT_REGULAR),
    (missing, "not a readable schedule file (No such file or directory)"),
    (text, "not a readable schedule file ("),
]


@pytest.mark.parametrize(
    ("make", "reason"),
    NOT_SCHEDULES,
)
def test_read_schedule_refuses_what_is_not_a_schedule_file_in_one_line(tmp_path, make, reason):
    path = make(tmp_path)
    done = read_in_subprocess(path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}: {reason}"), done.stderr


def test_a_valid_schedule_still_reads(schedule_file):
    config = tiny()
    back = read_schedule(schedule_file, num_pairs=config.num_pairs, num_workers=20, seeds=range(4))
    assert back.job_pairs.sum(axis=1).tolist() == [config.num_pairs] * 4


def run_simulate(tmp_path: Path, schedule: Path) -> tuple[int, list[str], str, float]:
    """``workflow/scripts/simulate.py`` for one cell of :data:`MODE` (seeds 0-3) replaying
    ``schedule``, with a stand-in ``snakemake`` object: status, log lines, stderr and
    wall time."""
    from spsa_bench import workflow as grid

    cells = grid.to_json(
        {"cells": [[MODE, [[ARM, grid.cell_settings(tiny(), ARM, MODE, SCENARIO)]]]]}
    )
    fields = {
        "input": [str(schedule)],
        "output": [str(tmp_path / "out" / "seeds-0-3.nc")],
        "log": [str(tmp_path / "simulate.log")],
        "scriptdir": str(REPO / "workflow" / "scripts"),
        "rule": "simulate",
        "cells": cells,
        "schedules": json.dumps({MODE: str(schedule)}),
        "wildcards": {"a": "0", "b": "3", "scenario": SCENARIO},
    }
    code = f"""
import json, runpy
fields = json.loads({json.dumps(json.dumps(fields))})
class Wildcards(dict):
    __getattr__ = dict.__getitem__
class Params:
    cells = fields.pop("cells")
    schedules = fields.pop("schedules")
class Snakemake:
    pass
snakemake = Snakemake()
snakemake.params = Params()
snakemake.wildcards = Wildcards(fields.pop("wildcards"))
snakemake.__dict__.update(fields)
runpy.run_path({str(REPO / "workflow" / "scripts" / "simulate.py")!r}, init_globals={{"snakemake": snakemake}})
"""
    (tmp_path / "out").mkdir(exist_ok=True)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=REFUSAL_SECONDS
    )
    seconds = time.perf_counter() - start
    lines = (tmp_path / "simulate.log").read_text().strip("\n").split("\n")
    return done.returncode, lines, done.stderr, seconds


@pytest.mark.slow
@pytest.mark.parametrize(
    ("make", "reason"),
    [*NOT_SCHEDULES, (oversized, "its attributes take")],
)
def test_the_simulate_job_refuses_a_bad_schedule_file_in_one_line(tmp_path, make, reason):
    path = make(tmp_path)
    status, lines, stderr, seconds = run_simulate(tmp_path, path)
    assert "Traceback" not in stderr + "\n".join(lines), stderr
    assert status == 2, (stderr, lines)
    assert len(lines) == 1 and lines[0].startswith(f"simulate: {path}: {reason}"), lines
    if make is oversized:
        assert f"more than the limit of {MAX_ATTRIBUTE_STORAGE:,}" in lines[0]
    assert list((tmp_path / "out").iterdir()) == []  # no run file
    assert seconds < REFUSAL_SECONDS


@pytest.mark.slow
def test_the_simulate_job_replays_a_good_schedule_file(tmp_path, schedule_file):
    """The control: the same job on the unspoiled schedule writes its run file."""
    path = Path(shutil.copy2(schedule_file, tmp_path / "schedule.nc"))
    status, lines, stderr, _ = run_simulate(tmp_path, path)
    assert status == 0, (stderr, lines)
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["seeds-0-3.nc"]
