"""The workflow scripts' way of opening benchmark.nc: a refused file ends the job with
one line naming the job and the file (exit 2), a good one opens as open_benchmark."""

import shutil

import pytest

from spsa_bench.results.combine import open_benchmark, open_benchmark_or_exit


def _benchmark(tmp_path):
    """A real benchmark.nc combined from two small runs."""
    from conftest import small_config_dict

    from spsa_bench.config.loader import resolve
    from spsa_bench.engine.simulate import simulate
    from spsa_bench.results.atomic import write_atomic
    from spsa_bench.results.combine import combine_benchmark, write_benchmark

    raw = small_config_dict(num_pairs=200)
    for study in ("cend_study", "workers_study", "budget_study"):
        raw.pop(study, None)
    config = resolve(raw)
    paths = [
        write_atomic(
            simulate(config, optimizer=arm, batch_mode="sync", scenario="mixed", seeds=[0, 1]),
            tmp_path / f"{arm}.nc",
        )
        for arm in ("spsa", "adam")
    ]
    return write_benchmark(combine_benchmark(paths), tmp_path / "benchmark.nc")


def test_a_truncated_benchmark_ends_the_job_with_one_line(tmp_path, capsys):
    good = _benchmark(tmp_path)
    bad = tmp_path / "truncated.nc"
    bad.write_bytes(good.read_bytes()[:2000])
    with pytest.raises(SystemExit) as stop:
        open_benchmark_or_exit("ranking", bad, ["elo_loss"])
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ranking: ") and str(bad) in lines[0]


def test_a_good_benchmark_opens_as_open_benchmark(tmp_path):
    good = _benchmark(tmp_path)
    copy = tmp_path / "copy.nc"
    shutil.copyfile(good, copy)
    with open_benchmark(good, ["elo_loss"], lazy=False) as ref:
        with open_benchmark_or_exit("figures", copy, ["elo_loss"], lazy=False) as got:
            assert got["elo_loss"].equals(ref["elo_loss"])
