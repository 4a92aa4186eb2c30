"""Hostile input, round 3 (issue 33, classes 4 and 5): the readers of run files,
schedules and ``benchmark.nc``, the studies' up-front estimates and inputs that can
block. Each case feeds the exact hostile input of the issue and asserts the refusal:
one line naming the file (and the variable or field), exit 2 where a command or a
workflow script refuses, and nothing written or changed (names, sizes, modification
times and bytes of the directory before and after).

The run files, a schedule and ``benchmark.nc`` are made once per session as the tiny
workflow makes them (``.test/config/config.yaml``, seeds 0-3: every arm on the sync
cells of :data:`CELLS`, the async-fixed schedule, their combine) and copied into a
temporary directory to be corrupted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from hostile_helpers import named, run_script, snapshot

from spsa_bench.dispatch.storage import read_schedule
from spsa_bench.results.combine import open_benchmark
from spsa_bench.results.stream import stream_benchmark

REPO = Path(__file__).resolve().parents[2]
#: The run files combined in these cases: one batch mode, two scenarios, every arm.
CELLS = ("sync/calibrated", "sync/mixed")
#: Where :func:`tiny_results` writes the session's files (filled once, read only).
BASE = Path(tempfile.mkdtemp(prefix="spsa-bench-hostile3-"))


@pytest.fixture(scope="module", autouse=True)
def tiny_results():
    """``BASE``: the tiny configuration's run files of :data:`CELLS` (every arm, seeds
    0-3), the async-fixed schedule of seeds 0-3 and the benchmark.nc of those runs,
    written as the workflow writes them; removed after the module."""
    import yaml

    from spsa_bench.config.loader import resolve
    from spsa_bench.engine.simulate import make_schedule, simulate_run
    from spsa_bench.results.combine import combine_benchmark, write_benchmark
    from spsa_bench.results.datasets import write_schedule
    from spsa_bench.workflow import schedule_settings, to_json

    config = resolve(yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text()))
    seeds = range(4)
    paths = []
    for cell in CELLS:
        mode, scenario = cell.split("/")
        for arm in config.optimizers:
            path = BASE / "runs" / cell / arm / "seeds-0-3.nc"
            path.parent.mkdir(parents=True, exist_ok=True)
            run = simulate_run(
                config, optimizer=arm, batch_mode=mode, scenario=scenario, seeds=seeds
            )
            run.write(path, compress=False)  # as the workflow's simulate job writes it
            paths.append(path)
    write_benchmark(combine_benchmark(paths), BASE / "benchmark.nc")
    mode = config.batch_mode("async-fixed")
    settings = to_json(schedule_settings(config, "async-fixed"))
    target = BASE / "schedules" / "async-fixed" / "seeds-0-3.nc"
    target.parent.mkdir(parents=True, exist_ok=True)
    write_schedule(
        make_schedule(config, mode, seeds), target, batch_mode="async-fixed",
        settings_json=settings,
    )  # fmt: skip
    yield BASE
    shutil.rmtree(BASE, ignore_errors=True)


@pytest.fixture
def runs(tmp_path) -> list[Path]:
    """Copies of the run files of :data:`CELLS` under ``tmp_path/runs``."""
    paths = []
    for cell in CELLS:
        for source in sorted((BASE / "runs" / cell).glob("*/seeds-*.nc")):
            target = tmp_path / "runs" / source.relative_to(BASE / "runs")
            target.parent.mkdir(parents=True, exist_ok=True)
            paths.append(Path(shutil.copy2(source, target)))
    return paths


def order() -> dict[str, list[str]]:
    """The configuration's names, as the workflow passes them (``grid_order``)."""
    with xr.open_dataset(BASE / "benchmark.nc") as ds:
        return {
            d: [str(v) for v in ds[f"{d}_label"].values]
            for d in ("optimizer", "batch_mode", "scenario")
        }


def rewrite(path: Path, change) -> None:
    """``path`` rewritten by xarray with ``change(ds)`` applied (its encoding kept)."""
    with xr.open_dataset(path) as ds:
        ds = change(ds.load())
    path.unlink()
    ds.to_netcdf(path)


def flip_last_chunk(path: Path, name: str) -> None:
    """Flip one bit in the last stored chunk of variable ``name`` (found by its bytes):
    netCDF4 reads the other chunks, and this one fails its fletcher32 checksum."""
    import netCDF4

    with netCDF4.Dataset(path) as ds:
        variable = ds[name]
        variable.set_auto_mask(False)
        values = np.asarray(variable[:])
        chunks = variable.chunking()
    block = values[tuple(slice(n - c, n) for c, n in zip(chunks, values.shape, strict=True))]
    raw = np.ascontiguousarray(block).astype(values.dtype.newbyteorder("<")).tobytes()
    data = bytearray(path.read_bytes())
    where = data.find(raw)
    assert where >= 0 and data.find(raw, where + 1) < 0
    data[where + len(raw) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def flip_label(path: Path, old: bytes, new: bytes) -> None:
    """Replace the stored text of the ``scenario`` label (not the configuration attribute
    that also holds it) by ``new``, byte for byte."""
    data = path.read_bytes()
    start = 0
    while (where := data.find(old, start)) >= 0:
        trial = data[:where] + new + data[where + len(old) :]
        path.write_bytes(trial)
        with xr.open_dataset(path) as ds:
            if str(ds["scenario"].item()) == new.decode():
                return
        start = where + 1
    raise AssertionError("label not found")


def one_refusal(error: pytest.ExceptionInfo, *words: str) -> str:
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


def combine_refuses(tmp_path, paths, victim: Path, *words: str) -> str:
    """``stream_benchmark`` refuses, naming ``victim`` and ``words``; nothing is written."""
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as error:
        stream_benchmark(paths, tmp_path / "benchmark.nc", order=order())
    assert snapshot(tmp_path) == before
    return one_refusal(error, str(victim), *words)


def test_a_valid_set_still_combines(tmp_path, runs):
    """The checks refuse nothing real: the copies combine as before."""
    stream_benchmark(runs, tmp_path / "benchmark.nc", order=order())
    assert (tmp_path / "benchmark.nc").stat().st_size > 0


# ---------------------------------------------------------------- class 4: run files


def test_a_checksum_failure_while_streaming_names_the_file_and_variable(tmp_path, runs):
    """A bit flip in a later chunk of elo_loss is caught by fletcher32 in pass 2
    (before: ``RuntimeError: NetCDF: HDF error``, no file named)."""
    victim = runs[3]
    flip_last_chunk(victim, "elo_loss")
    message = combine_refuses(tmp_path, runs, victim, "checksum mismatch in variable elo_loss")
    assert "rerun the job that wrote it" in message


def test_a_checksum_failure_in_the_first_chunk_names_the_variable(tmp_path, runs):
    """The same flip in a variable pass 1 reads whole (avg_step_size_last_100, one chunk)."""
    victim = runs[0]
    flip_last_chunk(victim, "avg_step_size_last_100")
    combine_refuses(tmp_path, runs, victim, "checksum mismatch in variable avg_step_size_last_100")


def test_a_run_file_with_no_seeds_is_refused(tmp_path, runs):
    victim = runs[1]
    rewrite(victim, lambda ds: ds.isel(seed=slice(0, 0)))
    combine_refuses(tmp_path, runs, victim, "holds no seeds")


@pytest.mark.parametrize(
    ("new", "words"),
    [
        (b"cXlibrated", ("scenario label 'cXlibrated'",)),
        (b"cxlibrated", ("scenario 'cxlibrated'",)),
    ],
)
def test_a_flipped_byte_in_a_label_adds_no_phantom_scenario(tmp_path, runs, new, words):
    """``calibrated`` -> ``cXlibrated`` is not a name at all; ``cxlibrated`` is one, but
    not the configuration's: both refused instead of a fourth scenario."""
    victim = next(p for p in runs if "calibrated" in str(p))
    flip_label(victim, b"calibrated", new)
    combine_refuses(tmp_path, runs, victim, *words)


def test_a_run_file_with_fewer_parameters_is_not_padded(tmp_path, runs):
    """One file of scenario mixed loses its last parameter: refused naming it, the
    count and a file of the scenario with the full count (before: NaN-padded)."""
    mixed = [p for p in runs if "/mixed/" in str(p)]
    victim = mixed[-1]
    rewrite(victim, lambda ds: ds.isel(param=slice(0, -1)))
    with xr.open_dataset(mixed[0]) as other:
        count = other.sizes["param"]
    combine_refuses(tmp_path, runs, victim, f"{count - 1} parameters", f"has {count}")


def test_a_path_label_is_refused_on_read(tmp_path, runs):
    victim = runs[2]
    rewrite(victim, lambda ds: ds.assign_coords(scenario="../../etc"))
    combine_refuses(tmp_path, runs, victim, "scenario label '../../etc'")


def test_an_oversized_attribute_is_refused_before_it_is_copied(tmp_path, runs):
    victim = runs[4]
    rewrite(victim, lambda ds: ds.assign_attrs(planted="x" * (2 << 20)))
    combine_refuses(tmp_path, runs, victim, "attribute planted", "2,097,152 bytes")


def test_the_combine_script_refuses_a_corrupt_run_file_in_one_line(tmp_path, runs):
    """Through the workflow's combine script: exit 2, one log line naming file and variable."""
    victim = runs[5]
    flip_last_chunk(victim, "theta")
    import yaml

    config = yaml.safe_load((REPO / ".test" / "config" / "config.yaml").read_text())
    output = tmp_path / "out" / "benchmark.nc"
    output.parent.mkdir()
    before = snapshot(tmp_path / "runs")
    status, lines = run_script(
        "combine",
        tmp_path,
        input=named(runs=[str(p) for p in runs]),
        output=[str(output)],
        params=named(order=order()),
        config=config,
        rule="combine",
    )
    assert status == 2
    assert lines == [
        f"combine: {victim}: checksum mismatch in variable theta (the file is "
        "corrupt; rerun the job that wrote it)"
    ]
    assert list(output.parent.iterdir()) == []
    assert snapshot(tmp_path / "runs") == before


# ---------------------------------------------------------------- class 4: benchmark.nc


def truncated(tmp_path) -> Path:
    path = tmp_path / "benchmark.nc"
    data = (BASE / "benchmark.nc").read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def a_run_file(tmp_path) -> Path:
    return Path(shutil.copy2(BASE / "runs/sync/calibrated/spsa/seeds-0-3.nc", tmp_path / "run.nc"))


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (truncated, ("not a readable NetCDF file",)),
        (a_run_file, ("not a combined benchmark file", "no optimizer dimension")),
    ],
)
def test_the_tables_step_refuses_a_bad_benchmark_in_one_line(tmp_path, make, words):
    """A truncated ``benchmark.nc`` or a run file given to the tables step: exit 2, one
    line naming the file (before: a traceback)."""
    path = make(tmp_path)
    out = tmp_path / "tables"
    out.mkdir()
    before = snapshot(tmp_path)
    outputs = {
        k: str(out / f"{k}.txt") for k in ("convergence", "convergence_md", "kpis", "kpis_md")
    }
    status, lines = run_script(
        "tables",
        tmp_path,
        input=[str(path)],
        output=named(outputs.values(), **outputs),
        params=named(baseline="spsa", targets=[0.5]),
        rule="tables",
    )
    after = snapshot(tmp_path)
    after.pop("tables.log")
    assert status == 2
    assert after == before
    assert len(lines) == 1 and lines[0].startswith(f"tables: {path}: "), lines
    for word in words:
        assert word in lines[0]


def test_open_benchmark_refuses_labels_and_attributes(tmp_path):
    """``open_benchmark`` (tables, figures, ranking, tune) refuses a path label and an
    oversized attribute by name; a valid file opens to the same data as before."""
    path = Path(shutil.copy2(BASE / "benchmark.nc", tmp_path / "benchmark.nc"))
    plain = open_benchmark(path, ["elo_loss"], lazy=False)
    with xr.open_dataset(BASE / "benchmark.nc") as ds:
        np.testing.assert_array_equal(plain["elo_loss"].values, ds["elo_loss"].values)
    labels = [str(v) for v in plain["scenario"].values]
    bad = tmp_path / "bad.nc"
    with xr.open_dataset(path) as ds:
        ds.load().assign_coords(scenario_label=("scenario", ["../../etc", *labels[1:]])).to_netcdf(
            bad
        )
    with pytest.raises(ValueError) as error:
        open_benchmark(bad)
    one_refusal(error, str(bad), "scenario label '../../etc'")
    big = tmp_path / "big.nc"
    with xr.open_dataset(path) as ds:
        ds.load().assign_attrs(planted="y" * (1 << 21)).to_netcdf(big)
    with pytest.raises(ValueError) as error:
        open_benchmark(big)
    one_refusal(error, str(big), "attribute planted")


# ---------------------------------------------------------------- class 4: schedules


def schedule(tmp_path) -> Path:
    return Path(shutil.copy2(BASE / "schedules/async-fixed/seeds-0-3.nc", tmp_path / "s.nc"))


def test_a_valid_schedule_reads_as_before(tmp_path):
    read_schedule(schedule(tmp_path), num_pairs=2000, num_workers=20, seeds=range(4))


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("arrival_job", 10**6, ("arrival_job of seed 0", "job index 1000000")),
        ("arrival_job", -7, ("arrival_job of seed 0", "job index -7")),
        ("job_worker", 99, ("job_worker of seed 0", "worker 99", "0..19")),
        ("job_arrival_time", np.nan, ("job_arrival_time of seed 0", "non-finite")),
    ],
)
def test_a_schedule_with_indices_out_of_range_is_refused(tmp_path, field, value, words):
    path = schedule(tmp_path)

    def change(ds):
        ds[field].values[0, 3] = value
        return ds

    rewrite(path, change)
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as error:
        read_schedule(path, num_pairs=2000, num_workers=20, seeds=range(4))
    one_refusal(error, str(path), *words)
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- class 5: study estimates

TINY = REPO / ".test" / "config" / "config.yaml"
#: Peak memory and time of a refusal: the interpreter and the package, no run.
REFUSAL_RSS_MB = 300
REFUSAL_SECONDS = 20


def study_config(tmp_path, **budget_study) -> Path:
    import yaml

    raw = yaml.safe_load(TINY.read_text())
    raw["budget_study"].update(budget_study)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def measured(argv: list[str], cwd: Path) -> tuple[int, list[str], float, float]:
    """Run ``spsa-bench argv`` in a child: status, stderr lines, its peak RSS (MB, from
    ``resource.getrusage(RUSAGE_CHILDREN)`` in a wrapper process) and wall seconds."""
    code = (
        "import resource, subprocess, sys, time\n"
        "start = time.perf_counter()\n"
        f"done = subprocess.run({[sys.executable, '-m', 'spsa_bench', *argv]!r}, "
        "capture_output=True, text=True)\n"
        "wall = time.perf_counter() - start\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "sys.stderr.write(done.stderr)\n"
        "print(done.returncode, rss, wall)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120
    )
    status, rss, wall = done.stdout.split()
    return int(status), done.stderr.strip("\n").split("\n"), float(rss), float(wall)


@pytest.mark.parametrize(
    ("budgets", "seeds", "words"),
    [
        ([1000, 1000000000], [], ("GiB of memory", "GiB available", "budget_study.num_pairs")),
        (
            [1000, 50000000],
            ["--seeds", "1000-1999"],
            ("minutes, more than the limit of 1,440", "seeds (1,000)"),
        ),
    ],
)
def test_a_study_beyond_memory_or_time_is_refused_up_front(tmp_path, budgets, seeds, words):
    """``budget_study.num_pairs: [1000, 1000000000]`` (schema-valid) grew past 2.6 GB in
    7 s; now refused before any run, in one line with the estimate, the limit and the
    key, within seconds and little memory. A budget of 5e7 pairs on 1,000 test seeds
    fits in memory but is estimated at days: refused by the time cap."""
    config = study_config(tmp_path, num_pairs=budgets)
    before = snapshot(tmp_path)
    argv = ["budget-study", "--config", str(config), "--output-dir", "out", *seeds]
    status, lines, rss, wall = measured(argv, tmp_path)
    assert status == 2
    assert len(lines) == 1 and lines[0].startswith("spsa-bench: error: budget_study: "), lines
    for word in words:
        assert word in lines[0], lines[0]
    assert snapshot(tmp_path) == before
    assert rss < REFUSAL_RSS_MB and wall < REFUSAL_SECONDS, (rss, wall)


# ---------------------------------------------------------------- class 5: inputs that block


def tune_config(tmp_path: Path, block_file: str) -> Path:
    """The tiny configuration with its tune scenario read from ``block_file``."""
    import yaml

    raw = yaml.safe_load(TINY.read_text())
    scenario = raw["scenarios"]["tune-6"]
    for key in ("fishtest_params", "synthetic_tune"):
        scenario.pop(key, None)
    scenario["fishtest_params_file"] = block_file
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def cli(argv: list[str], cwd: Path) -> tuple[int, list[str]]:
    """``spsa-bench argv`` in a child, bounded in time (a read that blocks fails here)."""
    done = subprocess.run(
        [sys.executable, "-m", "spsa_bench", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )
    return done.returncode, done.stderr.strip("\n").split("\n")


def test_a_fifo_as_params_is_refused_not_read(tmp_path):
    """``spsa-bench plan FIFO`` blocked forever with no writer: refused at once."""
    os.mkfifo(tmp_path / "fifo")
    before = snapshot(tmp_path)
    status, lines = cli(["plan", "fifo", "--output", "out"], tmp_path)
    assert status == 2
    assert lines == [
        "spsa-bench: error: PARAMS fifo: not a regular file (a FIFO, device or "
        "directory is not read)"
    ]
    assert snapshot(tmp_path) == before


def test_a_fifo_as_fishtest_params_file_is_refused_not_read(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    config = tune_config(tmp_path, "fifo")
    before = snapshot(tmp_path)
    status, lines = cli(["list", "--config", str(config)], tmp_path)
    assert status == 2
    assert len(lines) == 1, lines
    assert "scenarios.tune-6.fishtest_params_file = 'fifo'" in lines[0]
    assert "not a regular file" in lines[0]
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    "content",
    [
        "root:x:0:0:root:/root:/bin/bash\nsecond secret line\n",  # one field
        "password,hunter2\n",  # two fields
        ",secret,0,2,1,0.002\n",  # six fields, no name
    ],
)
def test_fishtest_params_file_quotes_no_line_of_the_file(tmp_path, content):
    """A configuration can name any readable file: the error names the key, the line
    and the field, and quotes no line of it (before: the first line in full)."""
    (tmp_path / "private.txt").write_text(content)
    config = tune_config(tmp_path, "private.txt")
    status, lines = cli(["list", "--config", str(config)], tmp_path)
    assert status == 2 and len(lines) == 1, lines
    assert "fishtest_params_file = 'private.txt': line 1" in lines[0], lines[0]
    for secret in ("root:x", "bash", "hunter2", "password", "secret"):
        assert secret not in lines[0], lines[0]


def test_a_bad_field_of_a_block_line_in_a_file_is_named_with_its_value(tmp_path):
    """A line that parses as a block line keeps the offending field's value."""
    (tmp_path / "block.txt").write_text("a,10,0,20,x,0.002\n")
    config = tune_config(tmp_path, "block.txt")
    status, lines = cli(["list", "--config", str(config)], tmp_path)
    assert status == 2 and len(lines) == 1, lines
    assert lines[0].endswith(
        "fishtest_params_file = 'block.txt': line 1: field c_end = 'x' is not a finite number"
    ), lines[0]
