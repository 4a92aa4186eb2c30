"""Examples cannot clobber results: ``simulate`` and ``schedule`` refuse to replace an
existing file unless ``--force``, ``validate`` and the studies any file of theirs in
their output directory, and the README's examples write outside ``results/``."""

import re
from pathlib import Path

import pytest
import yaml
from conftest import small_config_dict

from spsa_bench.cli.main import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def config_path(tmp_path_factory):
    raw = small_config_dict(num_pairs=200)
    for study in ("cend_study", "workers_study", "budget_study"):
        raw.pop(study, None)
    path = tmp_path_factory.mktemp("config") / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


COMMANDS = {
    "simulate": ["--optimizer", "spsa", "--batch-mode", "sync", "--scenario", "calibrated"],
    "schedule": ["--batch-mode", "async-fixed"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_existing_file_is_refused_in_one_line_and_left_alone(
    command, config_path, tmp_path, capsys
):
    output = tmp_path / "out.nc"
    output.write_bytes(b"a workflow output")
    argv = [command, "--config", str(config_path), *COMMANDS[command], "--seeds", "0-1"]
    code = main([*argv, "--output", str(output), "--quiet"])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1
    assert "--force" in err[0] and str(output) in err[0] and "--output" in err[0]
    assert output.read_bytes() == b"a workflow output"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.nc"]  # nothing else written


@pytest.mark.parametrize("command", list(COMMANDS))
def test_force_replaces_the_file(command, config_path, tmp_path, capsys):
    output = tmp_path / "out.nc"
    output.write_bytes(b"old")
    argv = [command, "--config", str(config_path), *COMMANDS[command], "--seeds", "0-1"]
    assert main([*argv, "--output", str(output), "--quiet", "--force"]) == 0
    assert output.read_bytes().startswith(b"\x89HDF")  # a NetCDF-4 file now
    fresh = tmp_path / "fresh.nc"
    assert main([*argv, "--output", str(fresh), "--quiet"]) == 0  # a new file needs no flag


#: The commands that write a set of files into a directory: (argv, flag, one file).
DIRECTORY_COMMANDS = {
    "validate": (["validate", "--optimizer", "spsa-block", "--reports", "5"], "--output",
                 "spsa-block_gaps.csv"),
    "cend-study": (["cend-study", "--seeds", "0-1"], "--output-dir", "cend.csv"),
}  # fmt: skip


@pytest.mark.parametrize("command", list(DIRECTORY_COMMANDS))
def test_a_file_of_a_directory_command_is_refused_unless_force(
    command, config_path, tmp_path, capsys
):
    argv, flag, name = DIRECTORY_COMMANDS[command]
    raw = yaml.safe_load(config_path.read_text())
    raw["cend_study"] = {"scenario": "tune-16-stc", "batch_mode": "sync", "c_end": [1, 2],
                         "base": "spsa", "variants": {"classic": {"A_ratio": 0.1}}}  # fmt: skip
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("an earlier result")
    argv = [*argv, "--config", str(config), flag, str(out), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "--force" in err[0] and flag in err[0] and name in err[0]
    assert [p.name for p in out.iterdir()] == [name]  # nothing written
    assert (out / name).read_text() == "an earlier result"
    assert main([*argv, "--force"]) == 0
    assert (out / name).read_text() != "an earlier result" and len(list(out.iterdir())) > 1


def _readme_commands() -> list[str]:
    """Every ``spsa-bench`` command of the README's code blocks, continuation lines joined."""
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"```(?:bash|sh)?\n(.*?)```", text, flags=re.S)
    commands = []
    for block in blocks:
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [line.strip() for line in joined.splitlines() if "spsa-bench " in line]
    return [c for c in commands if c.split()[0] == "spsa-bench"]


def test_no_readme_example_writes_under_results():
    commands = _readme_commands()
    assert any(c.startswith("spsa-bench simulate") for c in commands)
    for command in commands:
        words = command.split("#")[0].split()
        for flag in ("--output", "--output-dir"):
            if flag in words:
                target = words[words.index(flag) + 1]
                assert not target.startswith("results"), command


def test_the_examples_directory_is_ignored_by_git():
    ignored = (REPO / ".gitignore").read_text().splitlines()
    assert "/out/" in ignored
