"""``open_benchmark`` is lazy unless ``lazy=False`` is asked for, and both give the same data."""

import xarray as xr
from conftest import small_config_dict

from spsa_bench.config.loader import resolve
from spsa_bench.engine.simulate import simulate
from spsa_bench.results.atomic import write_atomic
from spsa_bench.results.combine import combine_benchmark, open_benchmark, write_benchmark


def test_lazy_by_default_eager_on_request_same_data(tmp_path):
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
    path = write_benchmark(combine_benchmark(paths), tmp_path / "benchmark.nc")
    lazy = open_benchmark(path)
    eager = open_benchmark(path, lazy=False)
    assert not lazy["elo_loss"].variable._in_memory  # on disk until read
    assert all(eager[name].variable._in_memory for name in eager.data_vars)
    xr.testing.assert_identical(lazy.load(), eager)
    lazy.close()
