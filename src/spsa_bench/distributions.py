"""Installed distributions' versions and entry points, read without importlib.metadata
where its answer is certain to be the same.

Importing :mod:`importlib.metadata` costs a process about 17 ms (it loads the email
package to parse metadata), and every ``spsa-bench simulate`` asks it three things:
whether any distribution declares optimizer plugins, and the installed versions of
spsa-bench and xarray (for the run file's provenance). importlib.metadata's path
finder looks for ``<name>[-<version>].dist-info`` and ``.egg-info`` folders in every
``sys.path`` entry; so does this module, and it answers from those folders when that is
all importlib.metadata could see:

- no other finder on ``sys.meta_path`` lists distributions;
- every ``sys.path`` entry is a folder (not a zip file) that is not an ``.egg``;
- a version comes from the one metadata folder of its name in the first entry that
  has one (a second in the same entry: listing order would decide, so ask);
- entry points: no ``entry_points.txt`` names the group at all. Where one does,
  importlib.metadata loads them (the plugin's entry-point objects are its own).

Everywhere else the question goes to importlib.metadata. The tests compare both on
this environment and on synthetic ``sys.path`` layouts.
"""

from __future__ import annotations

import os
import re
import sys


class _Unsure(Exception):
    """The folders alone may not give importlib.metadata's answer."""


def _normalized(name: str) -> str:
    """A distribution name as importlib.metadata compares them (PEP 503, ``-`` as ``_``)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _metadata_folders() -> list[list[tuple[str, str]]]:
    """Per ``sys.path`` entry, in order: ``(normalized name, folder)`` of each metadata folder."""
    from importlib.machinery import PathFinder

    if any(
        finder is not PathFinder and hasattr(finder, "find_distributions")
        for finder in sys.meta_path
    ):
        raise _Unsure
    entries = []
    for entry in sys.path:
        root = entry or "."
        if os.path.basename(root).lower().endswith(".egg"):
            raise _Unsure
        try:
            children = os.listdir(root)
        except FileNotFoundError:
            entries.append([])
            continue
        except OSError:  # a zip file, or a folder it cannot read
            raise _Unsure from None
        found = []
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                name = low.rpartition(".")[0].partition("-")[0]
                found.append((_normalized(name), os.path.join(root, child)))
        entries.append(found)
    return entries


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):  # as importlib.metadata: no such file
        return None
    except (OSError, UnicodeDecodeError):
        raise _Unsure from None


def _folder_version(folder: str) -> str:
    """The ``Version`` header of a metadata folder's METADATA (or PKG-INFO)."""
    if not os.path.isdir(folder):  # an old single-file egg-info
        raise _Unsure
    text = _read(os.path.join(folder, "METADATA"))
    if text is None:
        text = _read(os.path.join(folder, "PKG-INFO"))
    for line in (text or "").splitlines():
        if not line.strip():
            break  # end of the headers
        key, colon, value = line.partition(":")
        if colon and key.strip().lower() == "version":
            return value.strip()
    raise _Unsure


def version(name: str) -> str | None:
    """The installed version of distribution ``name`` (as
    ``importlib.metadata.version``), or None if it is not installed."""
    wanted = _normalized(name)
    try:
        for found in _metadata_folders():
            matches = [folder for folder_name, folder in found if folder_name == wanted]
            if len(matches) > 1:
                raise _Unsure
            if matches:
                return _folder_version(matches[0])
        return None
    except _Unsure:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as metadata_version

        try:
            return metadata_version(name)
        except PackageNotFoundError:
            return None


def _may_declare(group: str) -> bool:
    header = f"[{group}]"
    try:
        for found in _metadata_folders():
            for _, folder in found:
                text = _read(os.path.join(folder, "entry_points.txt"))
                if text is not None and any(line.strip() == header for line in text.splitlines()):
                    return True
        return False
    except _Unsure:
        return True


def entry_points(group: str) -> tuple:
    """The entry points of ``group`` (as ``importlib.metadata.entry_points(group=...)``):
    none, without importing importlib.metadata, when no distribution names the group."""
    if not _may_declare(group):
        return ()
    from importlib.metadata import entry_points as metadata_entry_points

    return tuple(metadata_entry_points(group=group))
