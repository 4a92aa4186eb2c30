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


def _run_python(code: str) -> str:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.strip()


def test_the_core_imports_neither_snakemake_nor_matplotlib():
    """Every module but the figure modules imports without the workflow engine or plotting."""
    code = """
import importlib, pkgutil, sys
import spsa_bench
names = [m.name for m in pkgutil.walk_packages(spsa_bench.__path__, "spsa_bench.")]
# __main__ runs the CLI; the figure modules of analysis/ are where plotting lives
plotting = {"figures", "validation_figure", "noise_figure"}
skip = {"spsa_bench.__main__"} | {f"spsa_bench.analysis.{name}" for name in plotting}
core = [n for n in names if n not in skip]
for name in core:
    importlib.import_module(name)
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"snakemake", "matplotlib", "seaborn"})
print(len(core), "heavy:" + ",".join(heavy))
"""
    count, heavy = _run_python(code).split()
    assert int(count) > 20 and heavy == "heavy:"


def test_no_module_but_the_command_line_chooses_a_matplotlib_backend(repo_root):
    """Figure functions draw with the caller's backend; only cli/ (the command line,
    drawing to files) picks one."""
    import ast

    package = repo_root / "src" / "spsa_bench"
    switching = []
    for path in package.rglob("*.py"):
        if path.relative_to(package).parts[0] == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            call = node.func if isinstance(node, ast.Call) else None
            if (
                isinstance(call, ast.Attribute)
                and call.attr in {"use", "switch_backend"}
                and isinstance(call.value, ast.Name)
                and call.value.id in {"matplotlib", "mpl", "plt"}
            ):
                switching.append(f"{path.relative_to(package)}:{node.lineno}")
    assert not switching, switching


def test_drawing_a_study_figure_keeps_the_callers_backend():
    code = """
import matplotlib
matplotlib.use("svg")
import pandas as pd
from spsa_bench.analysis.sensitivity import sensitivity_figure
table = pd.DataFrame({"sweep": ["s", "s"], "batch_mode": ["sync", "sync"],
                      "scenario": ["a", "a"], "value": [1.0, 2.0], "loss_mean": [3.0, 2.0],
                      "hyperparameter": ["r_end", "r_end"]})
sensitivity_figure(table)
print(matplotlib.get_backend())
"""
    assert _run_python(code) == "svg"


def test_importing_the_figures_keeps_the_callers_backend():
    code = """
import matplotlib
matplotlib.use("svg")
import spsa_bench.analysis.figures
print(matplotlib.get_backend())
"""
    assert _run_python(code) == "svg"
