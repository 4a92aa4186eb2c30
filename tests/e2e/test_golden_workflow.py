"""Golden tests of the Snakemake workflow: the jobs a dry run plans from an empty
results folder, for the tiny test configuration (``--configfile
.test/config/config.yaml``) and for the default config/config.yaml.

Each planned job (keyed by rule and wildcards) is compared field by field with
tests/golden/workflow/<name>.json, captured from the starting commit of the refactor
by ci/update_goldens.py (``dump_jobs``: Snakemake's Python API, in a temporary working
directory linking the repository's entries but results/ and .snakemake/): rule,
wildcards, input, output (and their names), log, benchmark, priority, threads,
resources, params (strings over 256 characters as their sha256 and length), the
params rerun trigger Snakemake records (its sha256: a change reruns every job it
touches), the report() captions, categories and labels, and each rule's conda
file and group. If a difference is intended, regenerate with
``python ci/update_goldens.py --only workflow`` and review the diff of tests/golden/.
"""

import importlib.util
import json
import re
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "workflow"


def _capture_module():
    spec = importlib.util.spec_from_file_location(
        "update_goldens", REPO / "ci" / "update_goldens.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


capture = _capture_module()


def _short(value, limit: int = 300) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


def _change(where: str, old, new) -> str:
    """One difference: of a list, the items gone and added (or where the order first
    differs); otherwise both values."""
    if isinstance(old, list) and isinstance(new, list):
        gone = [item for item in old if item not in new]
        added = [item for item in new if item not in old]
        if gone or added:
            return f"{where}: gone {_short(gone)}, added {_short(added)}"
        if len(old) == len(new):
            first = next(i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b)
            return f"{where}: order differs from item {first}: golden {_short(old[first:])}, now {_short(new[first:])}"
    return f"{where}: golden {_short(old)}, now {_short(new)}"


def _compare(where: str, old, new, depth: int) -> list[str]:
    """The differences of two values, dictionaries ``depth`` levels deep key by key."""
    if old == new:
        return []
    if depth > 0 and isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in sorted(set(old) | set(new)):
            if key not in new:
                lines.append(f"{where}.{key}: missing now (golden {_short(old[key])})")
            elif key not in old:
                lines.append(f"{where}.{key}: not in the golden (now {_short(new[key])})")
            else:
                lines += _compare(f"{where}.{key}", old[key], new[key], depth - 1)
        return lines
    return [_change(where, old, new)]


def differences(expected: dict, actual: dict) -> list[str]:
    """One line per difference: a missing or extra job, a job's field (``params.NAME``
    for one params value, ``report.FILE`` for one report entry) or a rule's record that
    differs, with both values."""
    lines = []
    for key in sorted(set(expected) | set(actual)):
        if key != "jobs":
            lines += _compare(key, expected.get(key), actual.get(key), depth=2)
    golden_jobs, jobs = expected["jobs"], actual["jobs"]
    lines += [f"job missing now: {name}" for name in sorted(set(golden_jobs) - set(jobs))]
    lines += [f"job not in the golden: {name}" for name in sorted(set(jobs) - set(golden_jobs))]
    for name in sorted(set(golden_jobs) & set(jobs)):
        lines += _compare(f"[{name}]", golden_jobs[name], jobs[name], depth=2)
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("name", list(capture.WORKFLOW_CONFIGS))
def test_planned_jobs_match_golden(name):
    configfile = capture.WORKFLOW_CONFIGS[name]
    expected = json.loads((GOLDEN / f"{name}.json").read_text())
    assert expected["configfile"] == configfile
    actual = capture.workflow_jobs(REPO, configfile)
    found = differences(expected, actual)
    option = f" --configfile {configfile}" if configfile else ""
    # what differs, over all jobs: "[job].params.cells: ..." counts as ".params.cells"
    fields = Counter(re.sub(r"^\[.*?\]", "", line.split(": ", 1)[0]) for line in found)
    assert not found, (
        f"{len(found)} differences from tests/golden/workflow/{name}.json "
        f"(every job now: python ci/update_goldens.py --jobs FILE{option}); "
        f"by field: {dict(fields.most_common())}\n"
        + "\n".join(found[:60])
        + (f"\n... {len(found) - 60} more" if len(found) > 60 else "")
    )
