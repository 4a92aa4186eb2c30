"""spsa_bench.distributions against importlib.metadata (the reference it stands in for)."""

from __future__ import annotations

import importlib.metadata as metadata
import sys
import zipfile

import pytest

from spsa_bench import distributions

GROUP = "spsa_bench.optimizers"


@pytest.mark.parametrize("name", ["spsa-bench", "spsa_bench", "xarray", "numpy", "PyYAML"])
def test_versions_of_this_environment_are_importlib_metadata_own(name):
    assert distributions.version(name) == metadata.version(name)


def test_a_distribution_not_installed_has_no_version():
    assert distributions.version("no-such-distribution-here") is None


@pytest.mark.parametrize("group", [GROUP, "console_scripts", "pytest11", "no.such.group"])
def test_entry_points_of_this_environment_are_importlib_metadata_own(group):
    mine = distributions.entry_points(group)
    theirs = metadata.entry_points(group=group)
    assert sorted((e.name, e.value) for e in mine) == sorted((e.name, e.value) for e in theirs)


def _dist_info(root, name, version, entry_points=None, folder=None):
    info = root / (folder or f"{name.replace('-', '_')}-{version}.dist-info")
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    if entry_points is not None:
        (info / "entry_points.txt").write_text(entry_points)
    return info


@pytest.fixture
def only(monkeypatch):
    """Put just these folders on sys.path (importlib.metadata caches by folder mtime)."""

    def set_path(*entries):
        monkeypatch.setattr(sys, "path", [str(entry) for entry in entries])

    return set_path


def test_synthetic_folders_agree_with_importlib_metadata(tmp_path, only):
    first, second = tmp_path / "first", tmp_path / "second"
    _dist_info(first, "Demo.Pkg", "1.2.3", "[console_scripts]\ndemo = demo:main\n")
    _dist_info(second, "demo-pkg", "9.9", f"[{GROUP}]\nshadowed = demo:row\n")
    _dist_info(second, "other", "0.1", f"[{GROUP}]\nrow = other.plugin:row\n")
    (first / "demo_pkg-1.2.3.egg-info.txt").write_text("not metadata")
    only(first, second, tmp_path / "missing")
    for name in ("demo-pkg", "DEMO_PKG", "other", "absent"):
        expected = None if name == "absent" else metadata.version(name)
        assert distributions.version(name) == expected
    assert distributions.version("demo-pkg") == "1.2.3"  # the first entry's wins
    mine = sorted((e.name, e.value) for e in distributions.entry_points(GROUP))
    assert mine == sorted((e.name, e.value) for e in metadata.entry_points(group=GROUP))
    assert ("row", "other.plugin:row") in mine


def test_no_declaration_of_the_group_needs_no_importlib_metadata(tmp_path, only, monkeypatch):
    _dist_info(tmp_path, "quiet", "1.0", "[console_scripts]\nquiet = q:main\n")
    _dist_info(tmp_path, "plain", "2.0")
    only(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("importlib.metadata was asked")

    monkeypatch.setattr(metadata, "entry_points", refuse)
    monkeypatch.setattr(metadata, "version", refuse)
    assert distributions.entry_points(GROUP) == ()
    assert distributions.version("plain") == "2.0"


def test_where_listing_order_or_a_zip_could_decide_importlib_metadata_answers(tmp_path, only):
    twice = tmp_path / "twice"
    _dist_info(twice, "dup", "1.0")
    _dist_info(twice, "dup", "2.0", f"[{GROUP}]\nrow = dup:row\n")
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("zipped-3.0.dist-info/METADATA", "Name: zipped\nVersion: 3.0\n\n")
        bundle.writestr("zipped-3.0.dist-info/entry_points.txt", f"[{GROUP}]\nz = zipped:row\n")
    only(twice, archive)
    assert distributions.version("dup") == metadata.version("dup")
    assert distributions.version("zipped") == metadata.version("zipped") == "3.0"
    mine = sorted((e.name, e.value) for e in distributions.entry_points(GROUP))
    assert mine == sorted((e.name, e.value) for e in metadata.entry_points(group=GROUP))
    assert ("z", "zipped:row") in mine
