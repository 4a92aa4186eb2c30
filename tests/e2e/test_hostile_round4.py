"""Hostile input, round 4 (issue 33, the remaining reader cases): the tuning file's
reader (:func:`spsa_bench.results.combine.open_tuning`, used by the tuned script and
the figures' and ranking's choice of arms), a checksum failing while lazily opened data
is computed (the tables, ranking and sensitivity scripts, ``tune --benchmark``), the
parameter count checked against the configuration in the combine, and oversized
attributes refused from the file's metadata before anything reads them.

Each case asserts the exit status or the exception, one line naming the file (and the
field), and that nothing is written or changed (names, sizes, modification times and
bytes of the directory before and after); the 300 MB attribute cases bound the peak
memory and time of the refusal."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml
from hostile_helpers import named, run_script, snapshot, tiny_run_files

from spsa_bench.results.combine import open_benchmark, open_tuning
from spsa_bench.results.reading import MAX_ATTRIBUTE_STORAGE, ReadError
from spsa_bench.results.stream import stream_benchmark

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / ".test" / "config" / "config.yaml"
CELLS = ("sync/calibrated", "sync/mixed")
ARMS = ("spsa", "adam")
BASE = Path(tempfile.mkdtemp(prefix="spsa-bench-hostile4-"))
#: Peak memory (MB) and wall time (s) of refusing a 300 MB attribute: the interpreter
#: and the package; reading the attribute cost about 1.3 GB before this check.
REFUSAL_RSS_MB = 300
REFUSAL_SECONDS = 30


@pytest.fixture(scope="module", autouse=True)
def files():
    """``BASE``: the tiny configuration's run files of :data:`CELLS` for :data:`ARMS`
    (seeds 0-3), their streamed ``benchmark.nc`` and a tuning file of the tests'
    tuning configuration (``conftest.tuning_config_dict``)."""
    from conftest import tuning_config_dict

    from spsa_bench.config.loader import resolve
    from spsa_bench.config.sections.tuning import parse
    from spsa_bench.results.atomic import write_atomic
    from spsa_bench.studies.tuning import run_tuning

    config = resolve(yaml.safe_load(TINY.read_text()))
    paths = tiny_run_files(config, BASE, CELLS, ARMS)
    stream_benchmark(
        paths, BASE / "benchmark.nc", order=order_of(config), config_json=config.to_json()
    )
    tuning = resolve(tuning_config_dict())
    write_atomic(run_tuning(tuning, parse(tuning)), BASE / "tuning.nc")
    yield BASE
    shutil.rmtree(BASE, ignore_errors=True)


def order_of(config) -> dict[str, list[str]]:
    return {
        "optimizer": list(ARMS),
        "batch_mode": list(config.batch_modes),
        "scenario": list(config.scenarios),
    }


def tuning_settings():
    from conftest import tuning_config_dict

    from spsa_bench.config.loader import resolve
    from spsa_bench.config.sections.tuning import parse

    return parse(resolve(tuning_config_dict()))


def copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copy2(BASE / name, tmp_path / Path(name).name))


def runs(tmp_path: Path) -> list[Path]:
    paths = []
    for source in sorted((BASE / "runs").rglob("seeds-*.nc")):
        target = tmp_path / "runs" / source.relative_to(BASE / "runs")
        target.parent.mkdir(parents=True, exist_ok=True)
        paths.append(Path(shutil.copy2(source, target)))
    return paths


def rewrite(path: Path, change) -> None:
    """``path`` rewritten by xarray with ``change(ds)`` applied."""
    with xr.open_dataset(path) as ds:
        ds = change(ds.load())
    path.unlink()
    ds.to_netcdf(path)


def flip_chunk(path: Path, name: str, index: int = -1) -> None:
    """Flip one bit in the middle of stored chunk ``index`` of variable ``name``, found
    from HDF5's chunk index (``H5Dget_chunk_info``), so a compressed file works too:
    that chunk then fails its fletcher32 checksum, the others read."""
    from spsa_bench.results.hdf5meta import _library

    lib, hid, u64 = _library(), ctypes.c_int64, ctypes.c_uint64
    lib.H5Dopen2.restype, lib.H5Dopen2.argtypes = hid, [hid, ctypes.c_char_p, hid]
    lib.H5Dget_space.restype, lib.H5Dget_space.argtypes = hid, [hid]
    lib.H5Dget_num_chunks.argtypes = [hid, hid, ctypes.POINTER(u64)]
    lib.H5Dget_chunk_info.argtypes = [hid, hid, u64, ctypes.POINTER(u64)]
    lib.H5Dget_chunk_info.argtypes += [ctypes.POINTER(ctypes.c_uint)]
    lib.H5Dget_chunk_info.argtypes += [ctypes.POINTER(u64), ctypes.POINTER(u64)]
    lib.H5Sclose.argtypes = lib.H5Dclose.argtypes = [hid]
    file = lib.H5Fopen(str(path).encode(), 0, 0)
    data = lib.H5Dopen2(file, name.encode(), 0)
    space = lib.H5Dget_space(data)
    count, offset, mask, addr, size = u64(), (u64 * 8)(), ctypes.c_uint(), u64(), u64()
    lib.H5Dget_num_chunks(data, space, ctypes.byref(count))
    status = lib.H5Dget_chunk_info(
        data, space, index % count.value, offset, ctypes.byref(mask), ctypes.byref(addr),
        ctypes.byref(size),
    )  # fmt: skip
    lib.H5Sclose(space), lib.H5Dclose(data), lib.H5Fclose(file)
    assert status >= 0
    raw = bytearray(path.read_bytes())
    raw[addr.value + size.value // 2] ^= 0x10
    path.write_bytes(bytes(raw))


def plant(path: Path, size: int, variable: str | None = None) -> None:
    """Add an attribute ``planted`` of ``size`` bytes to the file (or a variable)."""
    import netCDF4

    with netCDF4.Dataset(path, "a") as nc:
        (nc[variable] if variable else nc).setncattr("planted", "x" * size)


def one_line(error: pytest.ExceptionInfo, *words: str) -> str:
    message = str(error.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


# ---------------------------------------------------------------- item 1: tuning.nc


def test_a_valid_tuning_file_reads_as_before(tmp_path):
    from spsa_bench.results.cf import open_labelled

    path = copy("tuning.nc", tmp_path)
    ds = open_tuning(path, tuning_settings())
    with open_labelled(path) as plain:
        xr.testing.assert_identical(ds, plain.load())


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:4000])


def _label(path: Path) -> None:
    rewrite(path, lambda ds: ds.assign_coords(arm=["../../etc", *ds["arm"].values[1:]]))


def _no_seeds(path: Path) -> None:
    rewrite(path, lambda ds: ds.isel(seed=slice(0, 0)))


def _family(path: Path) -> None:
    rewrite(path, lambda ds: ds.assign_attrs(family="calibrated, cxlibrated"))


def _other_seeds(path: Path) -> None:
    rewrite(path, lambda ds: ds.assign_coords(seed=ds["seed"].values + 1))


def _checksum(path: Path) -> None:
    flip_chunk(path, "final_elo_loss")


def _big_attribute(path: Path) -> None:
    plant(path, 2 << 20)


def _run_file(path: Path) -> None:
    shutil.copy2(BASE / "runs/sync/calibrated/spsa/seeds-0-3.nc", path)


@pytest.mark.parametrize(
    ("spoil", "words"),
    [
        (_truncated, ("not a readable NetCDF file",)),
        (_run_file, ("not a tuning file", "final_elo_loss")),
        (_label, ("arm label '../../etc' is not a configuration name",)),
        (_no_seeds, ("holds no seed",)),
        (_family, ("attribute family names scenario 'cxlibrated'",)),
        (_other_seeds, ("has seed '1004'", "tuning section", "rerun the tuning runs")),
        (_checksum, ("checksum mismatch in variable final_elo_loss",)),
        (_big_attribute, ("attribute planted", "2,097,152 bytes")),
    ],
)
def test_open_tuning_refuses_a_bad_tuning_file(tmp_path, spoil, words):
    """Before, ``open_labelled`` read any of these (or crashed later with a traceback)."""
    path = copy("tuning.nc", tmp_path)
    spoil(path)
    before = snapshot(tmp_path)
    with pytest.raises(ReadError) as error:
        open_tuning(path, tuning_settings())
    one_line(error, str(path), *words)
    assert snapshot(tmp_path) == before


def test_the_tuned_script_refuses_a_bad_tuning_file_in_one_line(tmp_path):
    """Through the workflow's tuned script: exit 2, one log line, no table written."""
    from conftest import tuning_config_dict

    path = copy("tuning.nc", tmp_path)
    _label(path)
    out = tmp_path / "out"
    out.mkdir()
    status, lines = run_script(
        "tuned",
        tmp_path,
        input=named(tuning=str(path), benchmark=str(BASE / "benchmark.nc")),
        output=named(csv=str(out / "tuned.csv"), md=str(out / "tuned.md")),
        config=tuning_config_dict(),
        rule="tuned",
    )
    assert status == 2
    assert len(lines) == 1 and lines[0].startswith(f"tuned: {path}: arm label"), lines
    assert list(out.iterdir()) == []


# ---------------------------------------------------------------- item 2: lazy reads


def test_a_lazy_read_failing_its_checksum_names_the_file_and_variable(tmp_path):
    """The lazily opened benchmark reads the good chunks as before; computing over the
    bad one raises one ReadError naming file and variable (before: ``RuntimeError:
    NetCDF: HDF error``, no file named)."""
    good = open_benchmark(BASE / "benchmark.nc", ["elo_loss"], lazy=False)
    path = copy("benchmark.nc", tmp_path)
    flip_chunk(path, "elo_loss", index=-1)
    ds = open_benchmark(path, ["elo_loss"])
    first = ds["elo_loss"].isel(optimizer=0, batch_mode=0, scenario=0).values
    np.testing.assert_array_equal(
        first, good["elo_loss"].isel(optimizer=0, batch_mode=0, scenario=0).values
    )
    with pytest.raises(ReadError) as error:
        float(ds["elo_loss"].mean())
    one_line(error, f"{path}: checksum mismatch in variable elo_loss")


@pytest.mark.parametrize("script", ["tables", "sensitivity", "ranking"])
def test_a_script_computing_over_a_corrupt_chunk_exits_2_in_one_line(tmp_path, script):
    path = copy("benchmark.nc", tmp_path)
    flip_chunk(path, "elo_loss", index=-1)
    out = tmp_path / "out"
    out.mkdir()
    if script == "tables":
        outputs = {k: str(out / f"{k}.txt") for k in ("convergence", "convergence_md")}
        outputs |= {k: str(out / f"{k}.txt") for k in ("kpis", "kpis_md")}
        fields = {"input": [str(path)], "params": named(baseline="spsa", targets=[0.5])}
    elif script == "sensitivity":
        outputs = {k: str(out / f"{k}.txt") for k in ("table", "sensitivity", "sensitivity_svg")}
        sweeps = {"spsa": [["spsa", [["r_end", 0.002]]], ["adam", [["r_end", 0.004]]]]}
        fields = {"input": named(benchmark=str(path)), "params": named(sweeps=sweeps)}
    else:
        names = ("profile_csv", "performance_profile", "performance_profile_svg")
        names += ("aggregated_ecdf", "aggregated_ecdf_svg", "ranks", "ranks_md")
        outputs = {k: str(out / f"{k}.txt") for k in names}
        fields = {
            "input": named(benchmark=str(path)),
            "params": named(baseline="spsa", targets=[0.5]),
        }
    before = snapshot(tmp_path)
    status, lines = run_script(
        script, tmp_path, output=named(outputs.values(), **outputs), rule=script, **fields
    )
    after = snapshot(tmp_path)
    after.pop(f"{script}.log")
    assert status == 2
    assert lines == [
        f"{script}: {path}: checksum mismatch in variable elo_loss (the file is corrupt; "
        "rerun the job that wrote it)"
    ]
    assert list(out.iterdir()) == [] or script == "ranking"  # ranking writes as it goes
    if script != "ranking":
        assert after == before


def test_tune_refuses_a_benchmark_whose_final_losses_fail_their_checksum(tmp_path):
    """``tune --benchmark`` reads the final losses lazily in its up-front check: a
    corrupt chunk is named with the flag, exit 2, before any tuning run."""
    from conftest import tuning_benchmark, tuning_config_dict

    from spsa_bench.results.combine import write_benchmark

    raw = tuning_config_dict()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw))
    arms = ["spsa-r_end-0p001", "spsa-r_end-0p004", "adam-block"]
    path = tmp_path / "benchmark.nc"
    write_benchmark(tuning_benchmark(np.random.default_rng(5), arms), path)
    flip_chunk(path, "elo_loss", index=-1)
    before = snapshot(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "spsa_bench", "tune", "--config", str(config), "--benchmark",
         str(path), "--output-dir", str(tmp_path / "out"), "--quiet"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    lines = done.stderr.strip("\n").split("\n")
    assert done.returncode == 2
    assert lines == [
        f"spsa-bench: config error: --benchmark = {str(path)!r}: {path}: checksum mismatch "
        "in variable elo_loss (the file is corrupt; rerun the job that wrote it)"
    ]
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- item 3: parameter count


def _drop_last_param(paths: list[Path]) -> list[Path]:
    """Every run file of scenario mixed loses its last parameter: they agree with each
    other, so only the configuration's count can tell."""
    mixed = [p for p in paths if "/mixed/" in str(p)]
    for path in mixed:
        rewrite(path, lambda ds: ds.isel(param=slice(0, -1)))
    return mixed


def test_a_parameter_count_other_than_the_configurations_is_refused(tmp_path):
    from spsa_bench.config.loader import resolve
    from spsa_bench.engine.simulate import make_problem

    config = resolve(yaml.safe_load(TINY.read_text()))
    counts = {n: len(make_problem(config, n, [0]).params.theta_start) for n in config.scenarios}
    paths = runs(tmp_path)
    mixed = _drop_last_param(paths)
    before = snapshot(tmp_path)
    out = tmp_path / "benchmark.nc"
    stream_benchmark(paths, out, order=order_of(config))  # without counts: accepted
    out.unlink()
    with pytest.raises(ValueError) as error:
        stream_benchmark(paths, out, order=order_of(config), param_counts=counts)
    n = counts["mixed"]
    one_line(error, str(mixed[0]), f"{n - 1} parameters", "scenario 'mixed'", f"has {n} in the")
    assert snapshot(tmp_path) == before


def test_the_combine_script_checks_the_parameter_count_against_the_configuration(tmp_path):
    paths = runs(tmp_path)
    mixed = _drop_last_param(paths)
    config = yaml.safe_load(TINY.read_text())
    output = tmp_path / "out" / "benchmark.nc"
    output.parent.mkdir()
    before = snapshot(tmp_path / "runs")
    status, lines = run_script(
        "combine",
        tmp_path,
        input=named(runs=[str(p) for p in paths]),
        output=[str(output)],
        params=named(
            order={
                "optimizer": list(ARMS),
                "batch_mode": list(config["batch_modes"]),
                "scenario": list(config["scenarios"]),
            }
        ),
        config=config,
        rule="combine",
    )
    assert status == 2
    assert len(lines) == 1 and lines[0].startswith(f"combine: {mixed[0]}: "), lines
    assert "scenario 'mixed'" in lines[0] and "in the configuration" in lines[0]
    assert list(output.parent.iterdir()) == []
    assert snapshot(tmp_path / "runs") == before


# ---------------------------------------------------------------- item 4: attribute sizes


def measured(code: str) -> tuple[int, str, float, float]:
    """Run ``code`` in a child: status, stderr, peak RSS (MB, via getrusage in a wrapper
    process) and wall seconds."""
    wrapper = (
        "import resource, subprocess, sys, time\n"
        "start = time.perf_counter()\n"
        f"done = subprocess.run([sys.executable, '-c', {code!r}], capture_output=True, text=True)\n"
        "wall = time.perf_counter() - start\n"
        "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024\n"
        "sys.stderr.write(done.stderr)\n"
        "print(done.returncode, rss, wall)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", wrapper], capture_output=True, text=True, timeout=300
    )
    status, rss, wall = done.stdout.split()
    return int(status), done.stderr, float(rss), float(wall)


@pytest.mark.parametrize("reader", ["combine", "open_benchmark", "open_tuning"])
def test_a_300_mb_attribute_is_refused_before_it_is_read(tmp_path, reader):
    """A 300 MB planted attribute (a run file in the combine, benchmark.nc, tuning.nc)
    is refused from the file's metadata: one line naming the file and where the bytes
    are, in seconds and well under the 1.3 GB reading it cost."""
    if reader == "combine":
        paths = runs(tmp_path)
        victim = paths[1]
        plant(victim, 300 << 20, variable="theta")
        call = (
            "from spsa_bench.results.stream import stream_benchmark\n"
            f"stream_benchmark({[str(p) for p in paths]!r}, {str(tmp_path / 'b.nc')!r})"
        )
        where = "variable theta"
    else:
        victim = copy("benchmark.nc" if reader == "open_benchmark" else "tuning.nc", tmp_path)
        plant(victim, 300 << 20)
        call = f"from spsa_bench.results.combine import {reader}\n{reader}({str(victim)!r})"
        where = "the file's own attributes"
    before = snapshot(tmp_path)
    code = f"import sys\ntry:\n    {call.replace(chr(10), chr(10) + '    ')}\n"
    code += "except ValueError as error:\n    print(error, file=sys.stderr)\n    sys.exit(2)\n"
    status, stderr, rss, wall = measured(code)
    assert status == 2, stderr
    lines = stderr.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith(f"{victim}: its attributes take "), lines
    assert f"most in {where}" in lines[0] and f"limit of {MAX_ATTRIBUTE_STORAGE:,}" in lines[0]
    assert snapshot(tmp_path) == before
    assert rss < REFUSAL_RSS_MB and wall < REFUSAL_SECONDS, (rss, wall)


def test_a_fifo_given_as_a_file_to_read_is_refused_not_read(tmp_path):
    """A FIFO with no writer would block the read: refused from its stat."""
    import os

    fifo = tmp_path / "tuning.nc"
    os.mkfifo(fifo)
    with pytest.raises(ReadError) as error:
        open_tuning(fifo)
    one_line(error, str(fifo), "not a regular file")
