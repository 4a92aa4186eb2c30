"""Compare calibration families on the fit tunes (maintainers; docs/calibration.md).

    python ci/calibration_choice.py A/calibration.nc B/calibration.nc [...]

Each file is one ``spsa-bench calibrate`` run of one prior family (a section that
differs in a fixed assumption, say ``step_spread``). Their hyper-prior draws are pooled
and accepted together (``spsa_bench.calibration.fit.model_shares``): a family's share
of the pooled accepted draws is its in-sample support (equal prior odds). The runs
must share the corpus, the split and the entropy (the same hyper-prior draws, so the
comparison is paired). Prints one Markdown row per file with its shares at three
acceptance rates and its fit and held-out coverages.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import xarray as xr

from spsa_bench.calibration.fit import model_shares

SHARES = (0.05, 0.1, 0.2)
SAME = ("corpus_digest", "split_year", "draws")


def _entropy(ds: xr.Dataset):
    return json.loads(ds.attrs.get("config", "{}")).get("entropy")


def _coverages(ds: xr.Dataset, split: str) -> str:
    chosen = ds.split.values == split
    out = []
    for k in range(ds.sizes["stat"]):
        inside = ds.inside.values[chosen, k]
        inside = inside[np.isfinite(inside)]
        out.append(f"{100 * inside.mean():.0f}" if inside.size else "-")
    return " / ".join(out)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python ci/calibration_choice.py A.nc B.nc [...]", file=sys.stderr)
        return 2
    datasets = []
    for name in argv:
        if not Path(name).is_file():
            print(f"error: {name}: no such file", file=sys.stderr)
            return 2
        ds = xr.open_dataset(name)
        if "simulated_summary" not in ds:
            print(f"error: {name}: not a calibration dataset", file=sys.stderr)
            return 2
        datasets.append(ds)
    first = datasets[0]
    for name, ds in zip(argv[1:], datasets[1:], strict=True):
        for key in SAME:
            if str(ds.attrs.get(key)) != str(first.attrs.get(key)):
                print(f"error: {name}: {key} {ds.attrs.get(key)} differs from {argv[0]}'s "
                      f"{first.attrs.get(key)}", file=sys.stderr)  # fmt: skip
                return 2
        if _entropy(ds) != _entropy(first):
            print(
                f"error: {name}: entropy {_entropy(ds)} differs from {argv[0]}'s "
                f"{_entropy(first)} (the draws would not be paired)",
                file=sys.stderr,
            )
            return 2
        if not np.array_equal(ds.observed_summary.values, first.observed_summary.values,
                              equal_nan=True):  # fmt: skip
            print(f"error: {name}: other observed summaries than {argv[0]}", file=sys.stderr)
            return 2
    observed = first.observed_summary.values
    shares = [model_shares([d.simulated_summary.values for d in datasets], observed, s)
              for s in SHARES]  # fmt: skip
    print("| run | " + " | ".join(f"share of the closest {s:.0%}" for s in SHARES)
          + " | fit coverage | held-out coverage |")  # fmt: skip
    print("|---" * (len(SHARES) + 3) + "|")
    for i, (name, ds) in enumerate(zip(argv, datasets, strict=True)):
        cells = [f"{100 * s[i]:.0f}%" for s in shares]
        print(f"| {name} | " + " | ".join(cells)
              + f" | {_coverages(ds, 'fit')} | {_coverages(ds, 'held-out')} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
