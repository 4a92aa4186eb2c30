"""Hostile input (issue 33, a leftover): a ``benchmark.nc`` whose ``config`` attribute
is missing (written by hand or by an older version), is not JSON, does not resolve, or
describes other cells than the file holds.

Every reader of the attribute (:func:`spsa_bench.analysis.relaxation.benchmark_config`
through ``relaxation_table``, the tables and ranking scripts; ``tables.duplicate_arms``
for the figures) refuses such a file with one line naming the file and the attribute,
exit 2 from a script, nothing written (the directory's names, sizes, modification times
and bytes before and after); where the attribute is only a preference (the arm a group
of identical arms keeps) the reader works without it."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import netCDF4
import pytest
import yaml
from hostile_helpers import named, run_script, snapshot, tiny_run_files

from spsa_bench.analysis import relaxation, tables
from spsa_bench.results.combine import open_benchmark
from spsa_bench.results.reading import ReadError

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / ".test" / "config" / "config.yaml"
CELLS = ("sync/calibrated", "sync/mixed")
ARMS = ("spsa", "adam")
BASE = Path(tempfile.mkdtemp(prefix="spsa-bench-hostile-config-"))


@pytest.fixture(scope="module", autouse=True)
def benchmark():
    """``BASE/benchmark.nc``: the tiny configuration's cells :data:`CELLS` for the arms
    :data:`ARMS` (seeds 0-3), streamed with the configuration recorded."""
    from spsa_bench.config.loader import resolve
    from spsa_bench.results.stream import stream_benchmark

    config = resolve(yaml.safe_load(TINY.read_text()))
    paths = tiny_run_files(config, BASE, CELLS, ARMS)
    order = {
        "optimizer": list(ARMS),
        "batch_mode": list(config.batch_modes),
        "scenario": list(config.scenarios),
    }
    stream_benchmark(paths, BASE / "benchmark.nc", order=order, config_json=config.to_json())
    yield BASE / "benchmark.nc"
    shutil.rmtree(BASE, ignore_errors=True)


def spoiled(tmp_path: Path, config: str | None) -> Path:
    """A copy of the benchmark with its ``config`` attribute removed (``None``) or
    replaced by ``config``."""
    path = Path(shutil.copy2(BASE / "benchmark.nc", tmp_path / "benchmark.nc"))
    with netCDF4.Dataset(path, "a") as nc:
        if config is None:
            nc.delncattr("config")
        else:
            nc.setncattr("config", config)
    return path


def recorded() -> dict:
    with netCDF4.Dataset(BASE / "benchmark.nc") as nc:
        return json.loads(nc.getncattr("config"))


def without_scenario(name: str) -> str:
    raw = recorded()
    del raw["scenarios"][name]
    return json.dumps(raw)


def script_fields(script: str, path: Path, out: Path) -> dict:
    if script == "tables":
        names = ("convergence", "convergence_md", "kpis", "kpis_md")
        inputs = [str(path)]
    else:
        names = ("profile_csv", "performance_profile", "performance_profile_svg")
        names += ("aggregated_ecdf", "aggregated_ecdf_svg", "ranks", "ranks_md")
        inputs = named(benchmark=str(path))
    outputs = {k: str(out / f"{k}.txt") for k in names}
    return {
        "input": inputs,
        "output": named(outputs.values(), **outputs),
        "params": named(baseline="spsa", targets=[0.5]),
        "rule": script,
    }


#: Stands for the recorded configuration without the scenario ``mixed`` (built once the
#: benchmark exists).
OTHER_CELLS = "the recorded configuration, one scenario less"
MISSING = "no attribute 'config' (the resolved configuration the combine step records"


@pytest.mark.slow
@pytest.mark.parametrize("script", ["tables", "ranking"])
def test_a_benchmark_without_its_config_attribute_ends_the_script_in_one_line(tmp_path, script):
    path = spoiled(tmp_path, None)
    out = tmp_path / "out"
    out.mkdir()
    before = snapshot(tmp_path)
    status, lines = run_script(script, tmp_path, **script_fields(script, path, out))
    after = snapshot(tmp_path)
    after.pop(f"{script}.log")
    assert "Traceback" not in "\n".join(lines)
    assert status == 2
    assert len(lines) == 1
    assert lines[0].startswith(f"{script}: {path}: {MISSING}"), lines
    assert list(out.iterdir()) == []  # ranking used to write its profile first
    assert after == before


@pytest.mark.slow
@pytest.mark.parametrize("script", ["tables", "ranking"])
def test_the_scripts_still_read_a_benchmark_with_its_config_attribute(tmp_path, script):
    """The control: the same call on the unspoiled file writes every output, exit 0."""
    path = Path(shutil.copy2(BASE / "benchmark.nc", tmp_path / "benchmark.nc"))
    out = tmp_path / "out"
    out.mkdir()
    status, lines = run_script(script, tmp_path, **script_fields(script, path, out))
    assert status == 0, "\n".join(lines)
    fields = script_fields(script, path, out)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        Path(p).name for p in fields["output"]["items"]
    )


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (None, (MISSING,)),
        ("{not json", ("attribute 'config' is not a JSON object",)),
        ("[1, 2]", ("attribute 'config' is not a JSON object",)),
        ('{"num_pairs": "many"}', ("attribute 'config' is not a valid configuration (",)),
        (
            OTHER_CELLS,
            ("scenario label 'mixed' is not a name of the configuration",),
        ),
    ],
)
def test_relaxation_table_refuses_a_bad_config_attribute_naming_the_file(tmp_path, config, words):
    if config == OTHER_CELLS:
        config = without_scenario("mixed")
    path = spoiled(tmp_path, config)
    before = snapshot(tmp_path)
    ds = open_benchmark(path, ["elo_loss"])
    with pytest.raises(ReadError) as error:
        relaxation.relaxation_table(ds, curves=False)
    ds.close()
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    for word in words:
        assert word in message, message
    assert snapshot(tmp_path) == before


def test_relaxation_table_reads_the_recorded_config(tmp_path):
    """The control of the refusals above: the unspoiled file gives one row per cell."""
    ds = open_benchmark(BASE / "benchmark.nc", ["elo_loss"])
    table = relaxation.relaxation_table(ds, curves=False)
    assert sorted(
        zip(table["optimizer"], table["batch_mode"], table["scenario"], strict=True)
    ) == sorted((arm, *cell.split("/")) for arm in ARMS for cell in CELLS)


def test_duplicate_arms_works_without_the_attribute_and_refuses_one_that_is_not_json(tmp_path):
    """The figures' use of the attribute is a preference (the arm a group keeps): without
    it the answer is the one for no baseline; an attribute that is not JSON is refused."""
    good = open_benchmark(BASE / "benchmark.nc", ["elo_loss"]).isel(pairs=[-1]).load()
    missing_dir = tmp_path / "missing"
    missing_dir.mkdir()
    missing = open_benchmark(spoiled(missing_dir, None), ["elo_loss"]).isel(pairs=[-1]).load()
    assert tables.duplicate_arms(missing) == tables.duplicate_arms(good, baseline="spsa")
    bad = spoiled(tmp_path, "{not json")
    with pytest.raises(ReadError) as error:
        tables.duplicate_arms(open_benchmark(bad, ["elo_loss"]))
    assert str(error.value).startswith(f"{bad}: attribute 'config' is not a JSON object")
