"""One distinct colour per optimizer arm, however many arms a grid has."""

from __future__ import annotations

import numpy as np

from spsa_bench.analysis.figures import optimizer_palette
from spsa_bench.optimizers import REGISTRY


def _distinct(colours) -> bool:
    rgb = np.array([tuple(c) for c in colours])
    gaps = np.abs(rgb[:, None, :] - rgb[None, :, :]).max(axis=2)
    np.fill_diagonal(gaps, 1.0)
    return bool(gaps.min() > 0.02)  # no two colours within 2% on every channel


def test_twenty_five_custom_arms_get_distinct_colours():
    names = [f"arm-{i}" for i in range(25)]
    palette = optimizer_palette(names)
    assert len(palette) == 25 and _distinct(palette.values())


def test_built_in_kinds_plus_many_more_arms_stay_distinct():
    names = [*REGISTRY.built_ins(), "spsa-momentum", *(f"tuned-{i}" for i in range(40))]
    palette = optimizer_palette(names)
    assert _distinct(palette.values())
    # a kind's colour does not depend on which other arms are in the grid
    assert optimizer_palette(["adam"])["adam"] == palette["adam"]
