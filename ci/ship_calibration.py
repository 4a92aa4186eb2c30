"""Ship a calibration as the package's calibrated prior (maintainers; docs/calibration.md).

    spsa-bench calibrate --config config/calibration.yaml --output-dir results/calibration
    python ci/ship_calibration.py results/calibration/calibration.nc

writes ``src/spsa_bench/model/data/calibrated_truth.json`` (the record
``spsa_bench.model.calibrated`` reads: truth, posterior, what it was fitted on) and copies
the dataset to ``src/spsa_bench/model/data/calibration_shipped.nc`` (the coverage table and
figure the report shows). Review both diffs before committing them.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import xarray as xr

ROOT = Path(__file__).resolve().parents[1]
TRUTH = ROOT / "src" / "spsa_bench" / "model" / "data" / "calibrated_truth.json"
DATASET = ROOT / "src" / "spsa_bench" / "model" / "data" / "calibration_shipped.nc"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python ci/ship_calibration.py CALIBRATION.nc", file=sys.stderr)
        return 2
    source = Path(argv[0])
    with xr.open_dataset(source) as ds:
        text = ds.attrs.get("calibrated_truth")
    if text is None:
        print(f"error: {source}: no calibrated_truth attribute (not a calibration dataset)",
              file=sys.stderr)  # fmt: skip
        return 2
    record = json.loads(text)
    TRUTH.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    DATASET.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, DATASET)
    print(f"wrote {TRUTH.relative_to(ROOT)} and {DATASET.relative_to(ROOT)}")
    print(record["statement"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
