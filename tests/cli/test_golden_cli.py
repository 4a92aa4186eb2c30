"""Golden tests of the command line: the exact ``--help`` of ``spsa-bench`` and of every
subcommand, the output of the commands that need no input file (``--version``,
``schema``, ``list``, ``noise``) and the one-line errors of bad arguments, each run as
``python -m spsa_bench ARGS`` in the repository with a fixed environment
(``COLUMNS=100``; ci/update_goldens.py, ``fixed_env``).

The goldens in tests/golden/cli/ were captured from the starting commit of the
refactor: ``<case>.txt`` is a case's standard output, ``cases.json`` its arguments,
exit status and standard error, and the subcommands in ``COMMANDS`` order. A
difference is a change of the command line; if it is intended, regenerate with
``python ci/update_goldens.py --only cli`` and review the diff of tests/golden/.
The ``list`` goldens assume no optimizer plugin is installed (they list the kinds).
"""

import difflib
import importlib.util
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden" / "cli"
MANIFEST = json.loads((GOLDEN / "cases.json").read_text())
CASES = MANIFEST["cases"]


def _capture_module():
    spec = importlib.util.spec_from_file_location(
        "update_goldens", REPO / "ci" / "update_goldens.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


capture = _capture_module()


def text_diff(expected: str, actual: str, name: str, limit: int = 80) -> str:
    """The unified diff of two texts (at most ``limit`` lines)."""
    lines = list(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=f"golden/{name}",
            tofile=f"now/{name}",
        )
    )
    shown = "".join(lines[:limit])
    if len(lines) > limit:
        shown += f"... ({len(lines) - limit} more diff lines)\n"
    return shown


@pytest.fixture(scope="module")
def outputs() -> dict[str, dict]:
    """Every golden case run against this tree, by case name."""
    return capture.cli_outputs(REPO, {name: case["argv"] for name, case in CASES.items()})


@pytest.mark.slow  # about 30 processes of 0.5 s
@pytest.mark.parametrize("case", list(CASES))
def test_output_matches_golden(case, outputs):
    expected, result = CASES[case], outputs[case]
    command = " ".join(["spsa-bench", *expected["argv"]])
    golden_stdout = (GOLDEN / f"{case}.txt").read_text()
    assert result["stdout"] == golden_stdout, f"`{command}` prints something else:\n" + text_diff(
        golden_stdout, result["stdout"], f"{case}.txt"
    )
    assert result["stderr"] == expected["stderr"], (
        f"`{command}` writes something else on stderr:\n"
        + text_diff(expected["stderr"], result["stderr"], f"{case} stderr")
    )
    assert result["exit"] == expected["exit"], (
        f"`{command}` exits {result['exit']}, not {expected['exit']}"
    )


def test_every_subcommand_has_its_help_golden():
    """The subcommands, in ``COMMANDS`` order, are the golden ones, each with a help case."""
    assert capture.commands(REPO) == MANIFEST["commands"]
    assert [name for name in CASES if name.startswith("help-")] == [
        f"help-{name}" for name in MANIFEST["commands"]
    ]


@pytest.mark.slow
def test_top_level_help_lists_the_subcommands_in_order(outputs):
    """The subcommand lines of ``spsa-bench --help`` (4-space indent under "positional
    arguments", continuation lines indented further) name the golden commands in order."""
    text = outputs["help"]["stdout"]
    section = text.split("positional arguments:", 1)[1].split("\noptions:", 1)[0]
    listed = re.findall(r"^    (\S+)", section, flags=re.MULTILINE)
    assert listed == MANIFEST["commands"], text
