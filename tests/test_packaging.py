"""environment.yml (conda users) lists the same packages as pyproject.toml."""

import re
import tomllib

import yaml


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ \[;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_lists_the_same_packages_as_pyproject(repo_root):
    project = tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted |= {_name(r) for r in extra}
    environment = yaml.safe_load((repo_root / "environment.yml").read_text())
    listed = set()
    for entry in environment["dependencies"]:
        if isinstance(entry, dict):
            listed |= {_name(r) for r in entry["pip"] if not r.startswith("-e")}
        elif not entry.startswith(("python", "pip")):
            listed.add(_name(entry))
    assert listed == wanted, {
        "only in pyproject": wanted - listed,
        "only in environment.yml": listed - wanted,
    }
