"""engine.replay._segment_counts: the ragged pentanomial count of a dispatch, through the
rectangular form when every row has the same number of pairs; the same integers as
model.pentanomial.counts_and_net_wins_from_segments either way."""

import numpy as np
import pytest

from spsa_bench.engine.replay import _segment_counts
from spsa_bench.model import pentanomial


@pytest.mark.parametrize(
    "sizes",
    [[36] * 50, [1] * 7, [1100] * 3, [4, 8, 0, 256, 36], [0, 0, 0], [36] * 9 + [12], []],
)
def test_segment_counts_equal_the_ragged_form(sizes):
    rng = np.random.default_rng(len(sizes) + sum(sizes))
    sizes = np.array(sizes, dtype=np.int64)
    uniforms = rng.integers(0, 2**32, int(sizes.sum()), dtype=np.uint32)
    thresholds = np.sort(rng.integers(0, 2**32, (sizes.shape[0], 4), dtype=np.uint32), axis=1)
    counts, net = _segment_counts(uniforms, thresholds, sizes)
    expected_counts, expected_net = pentanomial.counts_and_net_wins_from_segments(
        uniforms, thresholds, sizes
    )
    np.testing.assert_array_equal(counts, expected_counts)
    np.testing.assert_array_equal(net, expected_net)
    np.testing.assert_array_equal(counts.sum(axis=1), sizes)  # every pair counted once
    if sizes.sum():  # the draws are spread over the outcomes, not all in one
        assert (counts.sum(axis=0) > 0).sum() >= 2
