"""Compare the data of every NetCDF file under two results directories.

    python ci/compare_results.py OLD_RESULTS NEW_RESULTS

For each ``*.nc`` under OLD_RESULTS (run files, schedule files, benchmark.nc,
validation files) the file of the same relative path under NEW_RESULTS must hold
every data variable of the old one, bit for bit (NaN equal to NaN), on the same
coordinate labels (text labels stored as CF auxiliary ``<dim>_label``
coordinates are made the index again, so either layout compares). Attributes, new variables and new coordinates are ignored,
and labels missing from the new file (an arm taken out of the grid on purpose)
are reported, not failed. Exit 1 on any difference. Used to show that a
behaviour-preserving change (the package restructure) changed no result.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from spsa_bench.results.cf import open_labelled


def compare(old_path: Path, new_path: Path) -> list[str]:
    problems = []
    with open_labelled(old_path) as old, open_labelled(new_path) as new:
        common = {}
        for dim in old.dims:
            if dim in old.coords and dim in new.coords:
                keep = [label for label in old[dim].values if label in set(new[dim].values)]
                dropped = len(old[dim]) - len(keep)
                if dropped:
                    print(f"  {old_path.name}: {dropped} label(s) of {dim} not in the new file")
                common[dim] = keep
        old_sel, new_sel = old.sel(common), new.sel(common)
        for name, variable in old_sel.data_vars.items():
            if name not in new_sel:
                problems.append(f"{new_path}: data variable {name} missing")
                continue
            a = variable.load()
            b = new_sel[name].transpose(*a.dims).load()
            if a.shape != b.shape or not np.array_equal(
                a.values, b.values, equal_nan=a.dtype.kind == "f"
            ):
                problems.append(f"{new_path}: {name} differs")
    return problems


def main(argv: list[str]) -> int:
    old_root, new_root = Path(argv[1]), Path(argv[2])
    problems, count = [], 0
    for old_path in sorted(old_root.rglob("*.nc")):
        new_path = new_root / old_path.relative_to(old_root)
        if not new_path.exists():
            print(f"only in {old_root}: {old_path.relative_to(old_root)}")
            continue
        count += 1
        problems += compare(old_path, new_path)
    for problem in problems:
        print(problem)
    print(f"{count} files compared, {len(problems)} differences")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
