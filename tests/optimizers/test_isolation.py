"""Optimizers cannot read ground truth: a structural check, not a convention."""

import ast
import dataclasses
import inspect
from pathlib import Path

import spsa_bench.optimizers as optimizers_pkg
from spsa_bench.model.developer import DeveloperView
from spsa_bench.optimizers import REGISTRY

GROUND_TRUTH = {"w_true", "theta_peak", "k_elo", "peak_elo", "start_elo"}
# What optimizer modules may import from the package: the developer view, each other,
# the numpy-only tiling helper of the hot path, Fishtest's time controls (numbers only)
# and the registry's reader of installed entry points (standard library only). The
# per-pair references the registry rows name for validation are "module:function"
# strings, not imports; reference/micro.py is still held to the ground-truth rule below.
ALLOWED_INTERNAL = {
    "spsa_bench.distributions",
    "spsa_bench.model.developer",
    "spsa_bench.optimizers",
    "spsa_bench.model.tiles",
    "spsa_bench.model.time_control",
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_optimizer_modules_import_only_the_developer_view():
    folder = Path(optimizers_pkg.__file__).parent
    for path in folder.glob("*.py"):
        for name in _imports(path):
            if name.startswith("spsa_bench"):
                assert any(name == a or name.startswith(a + ".") for a in ALLOWED_INTERNAL), (
                    f"{path.name} imports {name}"
                )


def test_what_optimizers_may_import_reaches_no_ground_truth():
    """The allowed modules outside the optimizers package import only each other."""
    package = Path(optimizers_pkg.__file__).parent.parent
    for module in ALLOWED_INTERNAL - {"spsa_bench.optimizers"}:
        module_path = package / (module.removeprefix("spsa_bench.").replace(".", "/") + ".py")
        # Importing a module runs its package's __init__ too: it must import nothing.
        for path in (module_path, module_path.parent / "__init__.py"):
            for name in _imports(path):
                if name.startswith("spsa_bench"):
                    assert name in ALLOWED_INTERNAL - {"spsa_bench.optimizers"}, (
                        f"{path} imports {name}"
                    )


def test_optimizer_sources_never_name_ground_truth():
    """The optimizer modules and the per-pair reference modules the table names."""
    folder = Path(optimizers_pkg.__file__).parent
    named = {
        row.micro.partition(":")[0]
        for row in REGISTRY.built_ins().values()
        if isinstance(row.micro, str)
    }
    assert named == {"spsa_bench.reference.micro"}
    references = [
        folder.parent / (m.removeprefix("spsa_bench.").replace(".", "/") + ".py") for m in named
    ]
    for path in [*folder.glob("*.py"), *references]:
        tree = ast.parse(path.read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not names & GROUND_TRUTH, f"{path.name} references {names & GROUND_TRUTH}"


def test_developer_view_holds_no_ground_truth():
    fields = {f.name for f in dataclasses.fields(DeveloperView)}
    assert not fields & GROUND_TRUTH
    assert "oracle" not in _imports(Path(inspect.getfile(DeveloperView)))


def test_every_optimizer_is_built_from_view_and_hyperparameters_only():
    for kind, spec in REGISTRY.items():
        params = list(inspect.signature(spec.build).parameters)
        assert params == ["view", "hyper"], f"{kind}: build{params}"
        hyper_fields = {f.name for f in dataclasses.fields(spec.hyper)}
        assert not hyper_fields & GROUND_TRUTH, kind


def test_plugin_modules_import_only_what_optimizers_may():
    """A plugin's builder module is held to the built-ins' import rule (with the example
    plugin installed, tests/e2e/test_plugin_package.py runs this file)."""
    for kind, spec in REGISTRY.plugins().items():
        path = Path(inspect.getsourcefile(spec.build))
        for name in _imports(path):
            if name.startswith("spsa_bench"):
                assert any(name == a or name.startswith(a + ".") for a in ALLOWED_INTERNAL), (
                    f"plugin {kind}: {path.name} imports {name}"
                )
        tree = ast.parse(path.read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not names & GROUND_TRUTH, f"plugin {kind} references {names & GROUND_TRUTH}"
