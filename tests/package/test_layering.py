"""The import layering of docs/architecture.md, checked on the source (issue 29).

Every module under ``src/spsa_bench`` is parsed; every ``import`` counts wherever it
stands: at module level, inside a function (a lazy import still runs, later) and
under ``if TYPE_CHECKING:`` (never run, but it names a type of another layer, so
the dependency is real). Importing ``a.b.c`` also runs ``a/__init__`` and
``a/b/__init__``, so those count as imported too, unless the importer lives inside
them (its package is then initialised already).

Two checks:

- **no import cycle** between modules: every strongly connected component of the
  module graph is one module;
- **each package imports only what its row allows**: the table under "## The
  packages" in docs/architecture.md is parsed, so the document and this test cannot
  drift. A row's first cell names its packages (``model/``) or top-level modules
  (``workflow.py``); its last cell lists, in backticks, the packages (``engine``) or
  single modules (``engine.replay``) it may import, and every backticked name there
  must exist. The top-level modules of :data:`BASE` may be imported by anyone.

:data:`PENDING` holds the edges other work in progress is removing; each entry says
why it is allowed for now, and is deleted when that work lands.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "src"
PACKAGE = SOURCE / "spsa_bench"
ARCHITECTURE = REPO / "docs" / "architecture.md"

#: Modules any package may import: the package root (``__version__``; its public API
#: is imported by name, on first use), and the standard-library-only helpers.
BASE = {"spsa_bench", "spsa_bench.distributions", "spsa_bench.threads"}

#: Edges allowed while the work removing them is under way: (importer prefix, imported
#: prefix) -> why. A prefix matches the module it names and everything below it.
PENDING: dict[tuple[str, str], str] = {}


def _modules(root: Path = PACKAGE) -> dict[str, Path]:
    """``{dotted name: path}`` of every module of the package (a package is its __init__)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _ancestors(name: str) -> list[str]:
    """``a.b.c`` -> ``["a", "a.b"]``."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _explicit_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports by name, anywhere in its source."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the importer's package, up level - 1
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in modules else source)
    return {
        target for target in found if target == "spsa_bench" or target.startswith("spsa_bench.")
    }


def import_edges(modules: dict[str, Path] | None = None) -> set[tuple[str, str, str]]:
    """Every ``(importer, imported, named)`` edge: ``named`` is the module the source
    names; ``imported`` is it or one of its packages that importing it initialises."""
    modules = _modules() if modules is None else modules
    edges = set()
    for name, path in modules.items():
        own = set(_ancestors(name))
        for target in _explicit_imports(name, path, modules):
            for imported in _ancestors(target):
                if imported not in own:
                    edges.add((name, imported, target))
            if target != name:  # named, even its own package: a name it defines
                edges.add((name, target, target))
    return edges


def _matches(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _pending(importer: str, named: str) -> bool:
    return any(_matches(importer, a) and _matches(named, b) for a, b in PENDING)


def unit(module: str) -> str:
    """The row a module belongs to: its package (``model/``) or, for a top-level module,
    itself (``workflow.py``; the package root is ``__init__.py``)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "__init__.py"
    if (PACKAGE / parts[1]).is_dir():
        return parts[1] + "/"
    return parts[1] + ".py"


def table_rows(text: str | None = None) -> dict[str, set[str]]:
    """``{unit: allowed prefixes}`` from the package table of docs/architecture.md."""
    text = ARCHITECTURE.read_text() if text is None else text
    section = text.split("\n## The packages\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        allowed = {f"spsa_bench.{name}" for name in re.findall(r"`([^`]+)`", cells[-1])}
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = allowed
    return rows


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of ``graph``, iteratively (no recursion limit)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def cycles(edges) -> list[list[str]]:
    """The import cycles: components of more than one module (pending edges left out)."""
    graph: dict[str, set[str]] = {}
    for importer, imported, named in edges:
        graph.setdefault(imported, set())
        if not _pending(importer, named):
            graph.setdefault(importer, set()).add(imported)
    return [c for c in _strongly_connected(graph) if len(c) > 1]


def upward_edges(edges, rows: dict[str, set[str]]) -> list[str]:
    """The imports a row does not allow, one line each. The module the source names is
    what is checked: the packages importing it initialises come with it (their own
    imports are checked as theirs)."""
    wrong = set()
    for importer, _, named in edges:
        if unit(importer) == unit(named) or named in BASE or _pending(importer, named):
            continue
        if not any(_matches(named, prefix) for prefix in rows[unit(importer)]):
            wrong.add(f"{importer} imports {named} ({unit(importer)} may not)")
    return sorted(wrong)


@pytest.fixture(scope="module")
def modules():
    return _modules()


@pytest.fixture(scope="module")
def edges(modules):
    return import_edges(modules)


def test_the_package_has_no_import_cycle(edges):
    assert cycles(edges) == []


def test_every_package_imports_only_what_its_row_of_the_table_allows(edges):
    assert upward_edges(edges, table_rows()) == []


def test_every_package_and_top_level_module_has_a_row(modules):
    assert {unit(name) for name in modules} <= set(table_rows())


def test_every_name_the_table_allows_exists(modules):
    """A renamed or misspelt module in the table fails here, not silently."""
    for row, allowed in table_rows().items():
        for prefix in allowed:
            assert any(_matches(name, prefix) for name in modules), f"{row}: {prefix}"


def test_every_pending_edge_still_exists(edges):
    """An entry whose work has landed is deleted, not left to allow the edge again."""
    for importer, named in PENDING:
        assert any(_matches(a, importer) and _matches(n, named) for a, _, n in edges), (
            f"PENDING ({importer}, {named}) no longer occurs: delete it"
        )


# -- the checks themselves, on a package written for the test ------------------------


def _write(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for relative, text in files.items():
        path = root / "spsa_bench" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return _modules(root / "spsa_bench")


def test_a_lazy_or_type_checking_import_and_a_package_init_count(tmp_path):
    modules = _write(
        tmp_path,
        {
            "__init__.py": "",
            "model/__init__.py": "",
            "model/a.py": "def f():\n    from spsa_bench.cli import main\n",
            "model/b.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from spsa_bench.engine.replay import RunResult\n"
            ),
            "engine/__init__.py": "",
            "engine/replay.py": "from . import simulate\nfrom ..model import a\n",
            "engine/simulate.py": "",
            "cli/__init__.py": "from spsa_bench.cli.main import main\n",
            "cli/main.py": "",
        },
    )
    edges = {(a, b) for a, b, _ in import_edges(modules)}
    assert ("spsa_bench.model.a", "spsa_bench.cli.main") in edges  # lazy
    assert ("spsa_bench.model.a", "spsa_bench.cli") in edges  # its package's __init__ runs
    assert ("spsa_bench.model.b", "spsa_bench.engine.replay") in edges  # TYPE_CHECKING
    assert ("spsa_bench.engine.replay", "spsa_bench.engine.simulate") in edges  # relative
    assert ("spsa_bench.engine.replay", "spsa_bench.model.a") in edges
    assert ("spsa_bench.engine.replay", "spsa_bench.engine") not in edges  # its own package


def test_a_cycle_is_found_however_long(tmp_path):
    modules = _write(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "import spsa_bench.b\n",
            "b.py": "def f():\n    import spsa_bench.c\n",
            "c.py": "from spsa_bench import a\n",
            "d.py": "import spsa_bench.a\n",
        },
    )
    assert cycles(import_edges(modules)) == [["spsa_bench.a", "spsa_bench.b", "spsa_bench.c"]]


def test_the_command_line_imported_from_the_model_is_refused(tmp_path):
    """The package as it is, with ``import spsa_bench.cli`` added to one model module:
    both checks fail, naming the edge."""
    copy = tmp_path / "spsa_bench"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    bowl = copy / "model" / "bowl.py"
    bowl.write_text(bowl.read_text() + "\nimport spsa_bench.cli  # noqa\n")
    edges = import_edges(_modules(copy))
    assert upward_edges(edges, table_rows()) == [
        "spsa_bench.model.bowl imports spsa_bench.cli (model/ may not)"
    ]
    assert any("spsa_bench.model.bowl" in cycle for cycle in cycles(edges))


def test_the_table_is_read_from_its_cells():
    text = (
        "# Title\n\n## The packages\n\n| package | what | may import |\n|---|---|---|\n"
        "| `a/`, `b.py` | `x` things | `c`, `d.e` (why) |\n"
        "| `c/` | more | numpy only |\n\n## Next\n| `z/` | no | `a` |\n"
    )
    assert table_rows(text) == {
        "a/": {"spsa_bench.c", "spsa_bench.d.e"},
        "b.py": {"spsa_bench.c", "spsa_bench.d.e"},
        "c/": set(),
    }
