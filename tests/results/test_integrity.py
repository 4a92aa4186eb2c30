"""Run files carry checksums and CF-conformant text labels, and read back as written."""

import numpy as np
import pytest
import xarray as xr
from conftest import small_config_dict

from spsa_bench.config.loader import resolve
from spsa_bench.engine.simulate import simulate
from spsa_bench.results.atomic import write_atomic
from spsa_bench.results.datasets import open_run


@pytest.fixture(scope="module", params=[True, False], ids=["compressed", "uncompressed"])
def run_file(tmp_path_factory, request):
    """A run written compressed (as benchmark.nc is) and uncompressed (as run files are)."""
    config = resolve(small_config_dict(num_pairs=400))
    ds = simulate(config, optimizer="spsa", batch_mode="sync", scenario="mixed", seeds=[0, 1])
    path = tmp_path_factory.mktemp("run") / "run.nc"
    write_atomic(ds, path, compress=request.param)
    return ds, path


def test_text_labels_are_auxiliary_in_the_file_and_an_index_when_read(run_file):
    ds, path = run_file
    with xr.open_dataset(path) as raw:
        assert "outcome_label" in raw.coords and "outcome" not in raw.variables
        assert list(raw.outcome_label.values) == ["LL", "DL", "DD", "WD", "WW"]
    back = open_run(path)
    assert list(back.outcome.values) == ["LL", "DL", "DD", "WD", "WW"]
    np.testing.assert_array_equal(
        back.outcome_counts.sel(outcome="DD").values, ds.outcome_counts.sel(outcome="DD").values
    )
    np.testing.assert_array_equal(back.theta.values, ds.theta.values)


def test_every_array_has_a_checksum_and_a_flipped_byte_is_caught(run_file, tmp_path):
    _, path = run_file
    with xr.open_dataset(path) as raw:
        for name, variable in raw.variables.items():
            if variable.ndim and variable.dtype.kind in "fiub":
                assert variable.encoding.get("fletcher32") is True, name
    data = path.read_bytes()
    original = open_run(path)
    caught = 0
    # flip one byte at a time at 16 places in the middle of the file (mostly chunk data)
    for place in np.linspace(0.3, 0.9, 16):
        flipped = bytearray(data)
        flipped[int(place * len(data))] ^= 0xFF
        broken = tmp_path / f"broken-{place:.3f}.nc"
        broken.write_bytes(bytes(flipped))
        try:
            read = open_run(broken)
        except ValueError as error:  # the checksum (or the HDF5 structure) caught it
            assert str(broken) in str(error)
            caught += 1
        else:  # never a silent change: whatever was read is what was written
            for name in ("theta", "elo_loss", "outcome_counts"):
                np.testing.assert_array_equal(read[name].values, original[name].values)
    assert caught >= 1  # some of the places are chunk data, and those are detected
