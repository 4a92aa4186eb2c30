"""engine/bench.py: the whole-process row runs a real `spsa-bench simulate` (no timing asserted)."""

import io

from conftest import small_config_dict

from spsa_bench.config.loader import resolve
from spsa_bench.engine import bench


def test_bench_ends_with_a_whole_process_row_of_the_largest_r():
    config = resolve(small_config_dict(num_pairs=400))
    out = io.StringIO()
    rows = bench.run_bench(
        config,
        seed_counts=[1, 3],
        optimizers=["spsa"],
        batch_modes=["sync"],
        scenario="mixed",
        repeats=1,
        out=out,
    )
    whole = rows[-1]
    assert whole["whole_process"] and whole["seeds"] == 3 and whole["optimizer"] == "spsa"
    assert whole["speedup"] == 3 * bench.LAB_SEED_S / whole["total_s"]
    assert out.getvalue().splitlines()[-1].startswith("whole process: spsa-bench simulate spsa")
