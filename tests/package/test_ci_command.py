"""The test command is one command: the README's "Run the tests" block, its Tests
section and .ci/run say the same, and it is the one tests/conftest.py makes work units
for (``--dist loadfile``)."""

import re
import shlex


def _readme_block_command(readme: str) -> str:
    """The pytest command of the README's "Run the tests" code block."""
    block = readme.split("**Run the tests**", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return block.strip().split(" && ")[-1]


def _ci_command(script: str) -> str:
    """The one ``python -m pytest`` line of .ci/run."""
    (line,) = [ln.strip() for ln in script.splitlines() if ln.startswith("python -m pytest")]
    return line


def test_readme_and_ci_run_the_same_test_command(repo_root):
    readme = (repo_root / "README.md").read_text()
    command = _readme_block_command(readme)
    assert command.startswith("python -m pytest -q"), command
    assert _ci_command((repo_root / ".ci" / "run").read_text()) == command
    tests_section = readme.split("\n## Tests\n", 1)[1].lstrip()
    assert re.match(rf"`{re.escape(command)}` runs everything", tests_section), tests_section[:200]


def test_the_command_distributes_by_the_conftest_groups(repo_root):
    """xdist's loadfile mode, which tests/conftest.py refines (its work units), in the
    order conftest gives (no reordering by unit size)."""
    argv = shlex.split(_ci_command((repo_root / ".ci" / "run").read_text()))
    assert argv[argv.index("--dist") + 1] == "loadfile", argv
    assert "--no-loadscope-reorder" in argv and "-n" in argv, argv


def test_every_slurm_test_is_in_the_slurm_work_unit(repo_root):
    """tests/conftest.py puts the modules of SLURM_MODULES in one xdist work unit: a
    module marking a test ``slurm`` outside that list would run beside them."""
    from conftest import SLURM_MODULES

    marked = sorted(
        path.relative_to(repo_root).as_posix()
        for path in (repo_root / "tests").rglob("test_*.py")
        if re.search(r"\bmark\.slurm\b", path.read_text())
    )
    assert marked == sorted(SLURM_MODULES)
