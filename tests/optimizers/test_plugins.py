"""Optimizer plugins: rows from the entry-point group ``spsa_bench.optimizers``.

The entry points here are stand-ins with the interface of
``importlib.metadata.EntryPoint`` (name, value, dist, load); the real example
package is installed and run end to end in tests/e2e/test_plugin_package.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from spsa_bench.config.loader import load_config
from spsa_bench.config.schema import build_schema
from spsa_bench.optimizers import REGISTRY, OptimizerSpec, build
from spsa_bench.optimizers import registry as registry_module
from spsa_bench.optimizers.base import hyperparameter
from spsa_bench.optimizers.spsa import SpsaHyper, build_spsa


@dataclass(frozen=True)
class ToyHyper(SpsaHyper):
    boost: float = hyperparameter(1.0, "a knob only the toy has", minimum=0.0)


def toy_build(view, hyper):
    return build_spsa(view, hyper)


def toy_row():
    return OptimizerSpec("toy", "spsa", "a toy plugin optimizer", ToyHyper, toy_build)


class FakeEntry:
    def __init__(self, name, factory, dist="toy-dist"):
        self.name = name
        self.value = f"toy_module:{name}"
        self.dist = SimpleNamespace(name=dist)
        self._factory = factory

    def load(self):
        if isinstance(self._factory, Exception):
            raise self._factory
        return self._factory


def _registry(monkeypatch, *entries):
    monkeypatch.setattr(registry_module, "entry_points", lambda group: list(entries))
    return registry_module.Registry(REGISTRY.built_ins())


def test_a_micro_reference_named_by_a_string_is_imported_when_used(monkeypatch):
    """A plugin row may name its micro reference ``"module:function"``, as the built-in
    rows do: the table keeps the string, :meth:`micro_reference` imports the callable."""
    from spsa_bench.reference.micro import spsa_micro

    named = "spsa_bench.reference.micro:spsa_micro"
    table = _registry(monkeypatch, FakeEntry("toy", lambda: toy_row_with(micro=named)))
    assert table["toy"].micro == named
    assert table["toy"].micro_reference() is spsa_micro
    assert REGISTRY["spsa"].micro == named and REGISTRY["spsa"].micro_reference() is spsa_micro


@pytest.mark.parametrize(
    ("micro", "needle"),
    [
        (None, "optimizer kind 'toy' has no micro reference"),
        ("no_such_module_here:f", "'no_such_module_here:f' cannot be loaded: No module named"),
        ("spsa_bench.reference.micro:no_such", "cannot be loaded: module"),
        ("spsa_bench.optimizers.registry:ENTRY_POINT_GROUP", "is not callable"),
    ],
)
def test_a_micro_reference_that_cannot_be_used_is_one_error_naming_it(micro, needle):
    with pytest.raises(ValueError, match=needle):
        toy_row_with(micro=micro).micro_reference()


def test_the_optimizer_table_imports_no_reference_code():
    """The references drive the optimizers (reference/runner.py): the table names them."""
    import subprocess
    import sys

    code = (
        "import sys, spsa_bench.optimizers as o; o.REGISTRY['spsa']; list(o.REGISTRY); "
        "print(sorted(m for m in sys.modules if m.startswith('spsa_bench.reference')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def toy_row_with(**fields):
    return dataclasses.replace(toy_row(), **fields)


def test_a_plugin_row_joins_the_table_with_its_distribution(monkeypatch, capsys):
    table = _registry(monkeypatch, FakeEntry("toy", toy_row))
    assert list(table)[-1] == "toy" and len(table) == len(REGISTRY.built_ins()) + 1
    assert table["toy"].distribution == "toy-dist" and table["toy"].micro is None
    assert set(table.plugins()) == {"toy"}
    assert table["spsa"] is REGISTRY.built_ins()["spsa"]
    assert capsys.readouterr().err == ""


def test_plugins_are_loaded_once_and_only_when_the_table_is_read(monkeypatch):
    calls = []

    def factory():
        calls.append(1)
        return toy_row()

    table = _registry(monkeypatch, FakeEntry("toy", factory))
    assert calls == []
    assert "toy" in table and table["toy"].kind == "toy"
    assert len(table) == len(REGISTRY.built_ins()) + 1
    assert calls == [1]


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        (FakeEntry("broken", ImportError("no module named toy_module")), "ImportError"),
        (FakeEntry("raises", lambda: 1 / 0), "ZeroDivisionError"),
        (FakeEntry("not-a-row", lambda: {"kind": "toy"}), "not an OptimizerSpec"),
        (
            FakeEntry("no-doc", lambda: dataclasses.replace(toy_row(), hyper=SimpleNamespace)),
            "hyper is not a dataclass",
        ),
        (
            FakeEntry("clash", lambda: dataclasses.replace(toy_row(), kind="spsa")),
            "kind 'spsa' is already registered",
        ),
        (
            FakeEntry("no-colon", lambda: dataclasses.replace(toy_row(), micro="toy_module")),
            "micro 'toy_module' is not 'package.module:function'",
        ),
        (
            FakeEntry("micro-number", lambda: dataclasses.replace(toy_row(), micro=3)),
            "micro must be a callable, a 'module:function' string or None",
        ),
    ],
)
def test_a_bad_plugin_is_skipped_with_one_line_naming_it(monkeypatch, capsys, entry, needle):
    table = _registry(monkeypatch, entry, FakeEntry("toy", toy_row))
    assert list(table.plugins()) == ["toy"]  # the good plugin still loads
    assert table["spsa"] is REGISTRY.built_ins()["spsa"]
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert f"optimizer plugin {entry.name!r}" in lines[0] and needle in lines[0]
    assert "toy-dist" in lines[0] and "Traceback" not in lines[0]


def test_a_config_naming_a_plugin_kind_loads_and_builds(monkeypatch, tmp_path, default_config_path):
    """The loader validates with the schema built from the table, plugins included;
    the packaged schema (built-ins only) does not know the kind."""
    rows = {**REGISTRY.built_ins(), "toy": dataclasses.replace(toy_row(), distribution="toy")}
    monkeypatch.setattr(REGISTRY, "_rows", rows)
    text = default_config_path.read_text().replace(
        "optimizers:\n", "optimizers:\n  toy: {boost: 2.5}\n  toy-b: {kind: toy, r_end: 0.01}\n"
    )
    path = tmp_path / "config.yaml"
    path.write_text(text)
    config = load_config(path)
    assert config.optimizers["toy"].hyper == ToyHyper(boost=2.5)
    assert config.optimizers["toy-b"].kind == "toy"
    assert "toy" in build_schema()["properties"]["optimizers"]["properties"]
    packaged = build_schema(REGISTRY.built_ins())["properties"]["optimizers"]
    assert "toy" not in packaged["properties"]
    assert "toy" not in packaged["additionalProperties"]["properties"]["kind"]["enum"]
    bad = text.replace("toy: {boost: 2.5}", "toy: {boost: -1.0}")
    path.write_text(bad)
    with pytest.raises(ValueError, match="boost"):
        load_config(path)
    assert build("toy", _view(), ToyHyper()).name == "toy"


def _view():
    import numpy as np

    from spsa_bench.model.developer import DeveloperView

    return DeveloperView(
        theta_start=np.array([900.0, 1100.0]),
        theta_min=np.zeros(2),
        theta_max=np.full(2, 2000.0),
        c_dev=np.full(2, 10.0),
        num_pairs=1000,
    )


def test_the_workflows_cached_schema_follows_the_registered_kinds(monkeypatch):
    """workflow._schema_properties builds the schema once per set of kinds: the built-in
    one equals build_schema()'s, and a plugin kind registered afterwards is in the next
    one (a stale cache would leave the plugin arm's hyperparameters unchecked)."""
    from spsa_bench import workflow

    before = workflow._schema_properties()
    assert before == build_schema()["properties"]
    assert workflow._schema_properties() is before  # built once, not per call
    rows = {**REGISTRY.built_ins(), "toy": dataclasses.replace(toy_row(), distribution="toy")}
    monkeypatch.setattr(REGISTRY, "_rows", rows)
    after = workflow._schema_properties()
    assert "toy" in after["optimizers"]["properties"]
    assert "toy" not in before["optimizers"]["properties"]
