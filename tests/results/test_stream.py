"""results/stream.py: the streaming combine writes the in-memory combine's file in bounded memory."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from conftest import small_config_dict

from spsa_bench.config.loader import resolve
from spsa_bench.engine.simulate import simulate
from spsa_bench.results.atomic import write_atomic
from spsa_bench.results.combine import combine_benchmark, open_benchmark, write_benchmark
from spsa_bench.results.datasets import open_run
from spsa_bench.results.stream import READING, WRITING, _box, quarter_lines, stream_benchmark

SRC = Path(__file__).resolve().parents[2] / "src"
#: Attributes stamped with the time of writing.
STAMPED = ("created", "history")


def _two_arm_config():
    raw = small_config_dict(num_pairs=400)
    raw["optimizers"] = {"spsa": {}, "sf-sgd": {}}
    del raw["workers_study"]  # its arms are not among these
    return resolve(raw)


@pytest.fixture(scope="module")
def run_files(tmp_path_factory):
    """Two arms (sgd-like spsa and schedule-free, which has extra state) x sync and
    async-fixed, seeds in two chunks; the sf-sgd arm has no async-fixed cell (NaN)."""
    config = _two_arm_config()
    out = tmp_path_factory.mktemp("stream")
    paths = []
    for arm, mode in (("spsa", "sync"), ("spsa", "async-fixed"), ("sf-sgd", "sync")):
        for seeds in ([0, 1], [2, 3, 4]):
            ds = simulate(config, optimizer=arm, batch_mode=mode, scenario="mixed", seeds=seeds)
            paths.append(write_atomic(ds, out / f"{arm}-{mode}-{seeds[0]}.nc"))
    return paths


def _same_file(a: Path, b: Path) -> None:
    """Same variables, dims, dtypes, attributes (but the time stamps) and data, bit for bit."""
    x, y = open_benchmark(a), open_benchmark(b)
    assert set(x.variables) == set(y.variables)
    for name in x.variables:
        assert x[name].dims == y[name].dims and x[name].dtype == y[name].dtype, name
        equal_nan = x[name].dtype.kind == "f"
        assert np.array_equal(x[name].values, y[name].values, equal_nan=equal_nan), name
        assert x[name].attrs == y[name].attrs, name  # the same attributes (order is cosmetic)
    strip = {k: str(v) for k, v in x.attrs.items() if k not in STAMPED}
    assert strip == {k: str(v) for k, v in y.attrs.items() if k not in STAMPED}


def test_streamed_file_equals_the_in_memory_one(run_files, tmp_path):
    order = {"optimizer": ["sf-sgd", "spsa"], "batch_mode": ["sync", "async-fixed"]}
    memory = write_benchmark(combine_benchmark(run_files, order=order), tmp_path / "memory.nc")
    streamed = tmp_path / "streamed.nc"
    skeleton = stream_benchmark(run_files, streamed, order=order)
    assert "theta" not in skeleton and skeleton.sizes["pairs"] == 21
    _same_file(memory, streamed)
    back = open_benchmark(streamed)
    # The schedule-free arm's state x, z: in its run files, not in benchmark.nc (disk)
    assert {"x", "z"} <= set(open_run(run_files[4]).data_vars)  # sf-sgd, sync
    assert not {"x", "z"} & set(back.variables)
    assert back["theta"].sel(optimizer="sf-sgd", batch_mode="sync").notnull().all()
    assert back["elo"].sel(optimizer="sf-sgd", batch_mode="async-fixed").isnull().all()
    one = open_run(run_files[3])  # spsa, async-fixed, seeds 2-4
    np.testing.assert_array_equal(
        back["theta"].sel(optimizer="spsa", batch_mode="async-fixed", seed=[2, 3, 4]).squeeze(),
        one["theta"],
    )


@pytest.mark.parametrize(
    ("kept", "integer", "floats"),
    [
        # spsa's two cells, every seed: nothing padded, the counts stay integers
        ([0, 1, 2, 3], ["outcome_counts", "n_jobs"], []),
        # spsa async-fixed lacks seeds 2-4: every per-seed integer is padded with NaN
        ([0, 1, 2], [], ["outcome_counts", "pairs_processed", "n_jobs"]),
        # sf-sgd has no async-fixed cell: padded as a whole cell, streamed (every cell
        # present has every seed)
        ([0, 1, 2, 3, 4, 5], [], ["outcome_counts", "pairs_processed", "n_jobs"]),
        # sf-sgd sync lacks seeds 2-4 while spsa has them in both modes: the per-parameter
        # coordinates (param_group, w_true, ...) become per seed; a file's shared ones
        # hold at every seed, its missing ones too, as the in-memory combine has them
        ([0, 1, 2, 3, 4], [], ["outcome_counts", "pairs_processed", "n_jobs"]),
    ],
    ids=["every-seed", "a-cell-lacks-seeds", "a-cell-missing", "arms-differ-in-seeds"],
)
def test_integer_per_seed_variables_stream_as_the_combine_types_them(
    run_files, tmp_path, kept, integer, floats
):
    """The per-worker and outcome counts are streamed when every cell has every seed
    (the template's dtype is then the combine's), combined whole otherwise; either way
    the file equals the in-memory one, integers where nothing was padded."""
    paths = [run_files[i] for i in kept]
    memory = write_benchmark(combine_benchmark(paths), tmp_path / "memory.nc")
    stream_benchmark(paths, tmp_path / "streamed.nc")
    _same_file(memory, tmp_path / "streamed.nc")
    back = open_benchmark(tmp_path / "streamed.nc")
    for name in integer:
        assert back[name].dtype.kind == "i", name
    for name in floats:
        assert back[name].dtype.kind == "f" and back[name].isnull().any(), name
    assert back["outcome_counts"].sum() == open_benchmark(memory)["outcome_counts"].sum()


def test_box_is_the_exact_union_of_the_slabs_or_none():
    """The per-seed values of one batch mode and scenario go in one write where their
    slabs fill a box exactly (the tests above: every file's values land as in memory),
    else slab by slab, as before."""
    shape = (3, 2, 5)
    a, b = ((0, 1, slice(0, 5)), None), ((1, 1, slice(0, 5)), None)
    assert _box([a, b], shape) == (slice(0, 2), slice(1, 2), slice(0, 5))
    assert _box([a, ((2, 1, slice(0, 5)), None)], shape) is None  # a gap at 1
    assert _box([a, ((0, 1, slice(4, 5)), None)], shape) is None  # an overlap
    assert _box([a, ((1, 1, [0, 2]), None)], shape) is None  # a list of positions
    assert _box([((0, 0, slice(0, 2)), None), ((0, 0, slice(2, 5)), None)], shape) == (
        slice(0, 1),
        slice(0, 1),
        slice(0, 5),
    )


def test_any_order_and_grouping_of_the_files_gives_the_same_file(run_files, tmp_path):
    first = stream_benchmark(run_files, tmp_path / "a.nc")
    shuffled = list(np.random.default_rng(7).permutation(run_files))
    second = stream_benchmark(shuffled, tmp_path / "b.nc")
    xr.testing.assert_identical(first.drop_attrs(), second.drop_attrs())
    _same_file(tmp_path / "a.nc", tmp_path / "b.nc")


def test_progress_hears_of_every_file_in_each_pass_and_changes_nothing(run_files, tmp_path):
    heard = []
    stream_benchmark(run_files, tmp_path / "told.nc", progress=lambda *a: heard.append(a))
    n = len(run_files)
    # every file once in pass 1, then every file once in pass 2, in that order
    assert heard == [(READING, i, n) for i in range(1, n + 1)] + [
        (WRITING, i, n) for i in range(0, n + 1)
    ]
    stream_benchmark(run_files, tmp_path / "quiet.nc")
    _same_file(tmp_path / "told.nc", tmp_path / "quiet.nc")


def test_quarter_lines_say_each_quarter_of_each_pass_once():
    lines = []
    progress = quarter_lines(lines.append)
    for step, first in ((READING, 1), (WRITING, 0)):
        for done in range(first, 871):
            progress(step, done, 870)
    assert len(lines) == 9
    assert lines[0].startswith("combine: reading, 218 of 870 run files (25%, ")
    assert lines[3].startswith("combine: reading, 870 of 870 run files (100%, ")
    assert lines[4].startswith("combine: writing, 0 of 870 run files (0%, ")
    assert lines[6].startswith("combine: writing, 435 of 870 run files (50%, ")
    # a pass of fewer files than quarters still ends with its last file
    few = []
    small = quarter_lines(few.append, label="x")
    for done in (1, 2):
        small(READING, done, 2)
    assert [line.split(" (")[0] for line in few] == [
        "x: reading, 1 of 2 run files",
        "x: reading, 2 of 2 run files",
    ]


@pytest.mark.parametrize("checkpoint", [0, -1], ids=["first", "last"])
def test_stream_refuses_a_bad_file_and_writes_nothing(run_files, tmp_path, checkpoint):
    """Pass 1 reads a file's first checkpoint only; a non-finite value anywhere later is
    caught as pass 2 copies it, and nothing is written either way."""
    bad = open_run(run_files[0])
    bad["elo_loss"][0, checkpoint] = np.nan
    bad_path = write_atomic(bad, tmp_path / "bad.nc")
    with pytest.raises(ValueError, match=r"bad\.nc: variable elo_loss holds non-finite"):
        stream_benchmark([*run_files[1:], bad_path], tmp_path / "out.nc")
    assert not (tmp_path / "out.nc").exists()


# ---------------------------------------------------------------------- bounded memory

N_ARMS, N_SEEDS, N_PAIRS = 48, 200, 160
PEAK = """
import resource, sys
from pathlib import Path
from spsa_bench.results.combine import combine_benchmark, write_benchmark
from spsa_bench.results.datasets import open_run
from spsa_bench.results.stream import READING, WRITING, _box, quarter_lines, stream_benchmark
paths = sorted(Path(sys.argv[2]).glob("arm-*.nc"))[: int(sys.argv[4])]
if sys.argv[1] == "stream":
    stream_benchmark(paths, sys.argv[3])
elif sys.argv[1] == "memory":
    write_benchmark(combine_benchmark(paths), sys.argv[3])
else:
    open_run(paths[0])
status = Path("/proc/self/status")
if status.exists():  # this process's own peak (ru_maxrss counts the parent's at the fork)
    print(int(status.read_text().split("VmHWM:")[1].split()[0]) // 1024)
else:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def _peak_mb(mode: str, folder: Path, files: int = N_ARMS) -> int:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    output = str(folder / f"{mode}-{files}.nc")
    done = subprocess.run(
        [sys.executable, "-c", PEAK, mode, str(folder), output, str(files)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return int(done.stdout.split()[-1])


@pytest.mark.slow
def test_streaming_combine_stays_under_a_bound_the_in_memory_one_exceeds(run_files, tmp_path):
    """48 arms of 200 seeds x 160 checkpoints x 22 parameters: theta alone is 258 MB in
    memory, all checkpoint variables about 290 MB. Bound: the process's size after
    opening one run file plus 150 MB (measured: the streaming combine about +43 MB,
    the in-memory one about +890 MB). And what the cells add is their skeletons, not
    their data: 12 arms to 48 adds less than 30 MB (measured 16 MB; 44 MB when
    HDF5 kept up to 64 MB of chunks a variable and skeletons were views)."""
    one = open_run(run_files[0])
    seeds = np.arange(N_SEEDS)
    grown = one.isel(seed=seeds % one.sizes["seed"], pairs=np.arange(N_PAIRS) % one.sizes["pairs"])
    grown = grown.assign_coords(seed=seeds, pairs=np.arange(N_PAIRS) * 10)
    for arm in range(N_ARMS):
        write_atomic(
            grown.assign_coords(optimizer=f"arm-{arm:02d}"), tmp_path / f"arm-{arm:02d}.nc"
        )
    theta_mb = N_ARMS * grown["theta"].nbytes / 2**20
    assert theta_mb > 250
    bound = _peak_mb("open", tmp_path) + 150
    streamed, in_memory = _peak_mb("stream", tmp_path), _peak_mb("memory", tmp_path)
    fewer = _peak_mb("stream", tmp_path, files=N_ARMS // 4)
    assert streamed < bound < in_memory, (streamed, bound, in_memory)
    assert streamed - fewer < 30, (fewer, streamed)
    _same_file(tmp_path / f"memory-{N_ARMS}.nc", tmp_path / f"stream-{N_ARMS}.nc")


def test_scenarios_of_different_sizes_combine_padded_along_param(tmp_path):
    """A groups scenario (22 parameters) and two tune scenarios (16, 64): every cell is
    padded to 64 parameters; the trajectories keep their own dims; each scenario's
    values sit in its first parameters, streamed or in memory alike."""
    raw = small_config_dict(num_pairs=300)
    raw["optimizers"] = {"spsa": {}}
    del raw["cend_study"], raw["workers_study"], raw["budget_study"]
    raw["scenarios"]["tune-64-ltc"] = {
        "synthetic_tune": {"params": 64, "value": 100},
        "noise": "LTC",
        "rounding": "stochastic",
    }
    config = resolve(raw)
    paths = []
    for scenario in ("mixed", "tune-16-stc", "tune-64-ltc"):
        ds = simulate(config, optimizer="spsa", batch_mode="sync", scenario=scenario, seeds=[0, 1])
        paths.append(write_atomic(ds, tmp_path / f"{scenario}.nc"))
    memory = write_benchmark(combine_benchmark(paths), tmp_path / "memory.nc")
    streamed = tmp_path / "streamed.nc"
    stream_benchmark(paths, streamed)
    _same_file(memory, streamed)
    back = open_benchmark(streamed)
    assert back.sizes["param"] == 64
    assert back["elo_loss"].dims == ("optimizer", "batch_mode", "scenario", "seed", "pairs")
    small = back["theta"].sel(scenario="tune-16-stc").squeeze()
    np.testing.assert_array_equal(small.isel(param=slice(0, 16)), open_run(paths[1])["theta"])
    assert small.isel(param=slice(16, None)).isnull().all()
    groups = back["param_group"].sel(scenario="tune-16-stc").values
    assert list(groups[16:]) == [""] * 48 and groups[0] == "p00"
    assert back["w_true"].sel(scenario="tune-64-ltc").notnull().all()


def test_tables_read_lazily_one_cell_at_a_time_equal_the_loaded_ones(run_files, tmp_path):
    """The workflow's tables open benchmark.nc lazily and read one cell's
    trajectories at a time; every number equals the one computed from the loaded file
    (the grid has a missing cell: sf-sgd never ran async-fixed)."""
    import pandas as pd

    from spsa_bench.analysis import relaxation, stats, tables

    path = tmp_path / "benchmark.nc"
    stream_benchmark(run_files, path)
    variables = ["elo_loss", *tables.SCHEDULE_VARIABLES]
    loaded = open_benchmark(path, variables, lazy=False)
    lazy = open_benchmark(path, variables)
    assert lazy["elo_loss"].variable._in_memory is False  # the data stays on disk
    targets = [0.5, 0.8]
    hits = tables.hits_to_targets(loaded, targets)
    assert hits.dims == ("target", *[d for d in loaded["elo_loss"].dims if d != "pairs"])
    xr.testing.assert_identical(tables.hits_to_targets(lazy, targets), hits)
    whole = loaded["elo_loss"].transpose(..., "pairs")  # the whole grid at once, as a check
    for row, fraction in enumerate(targets):
        start = whole.isel(pairs=0).values
        expected = stats.first_hit(whole.values, whole["pairs"].values, (1 - fraction) * start)
        got = hits.isel(target=row).transpose(*whole.dims[:-1]).values
        np.testing.assert_array_equal(got, expected)
    assert np.isnan(hits.sel(optimizer="sf-sgd", batch_mode="async-fixed")).all()
    frames = [
        tables.convergence_table(
            ds,
            baseline="spsa",
            targets=targets,
            relaxation=relaxation.relaxation_table(ds, config=_two_arm_config()),
        )
        for ds in (loaded, lazy)
    ]
    pd.testing.assert_frame_equal(*frames)
    assert frames[0]["n_seeds"].tolist() == [5, 5, 5]  # three cells ran, one did not
