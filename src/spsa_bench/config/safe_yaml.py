"""YAML for untrusted configuration files: bounded before anything is built.

PyYAML's safe loader still expands aliases (a 1 KB "billion laughs" document
becomes gigabytes), recurses once per nesting level (``RecursionError`` on deep
input) and accepts keys of any type. This module reads a document in two passes:

1. **Events only** (``yaml.parse``, an iterative parser that builds nothing): the
   nesting depth, the number of nodes the document would have once every alias is
   expanded (an anchored node's expanded size is known when it ends, so an alias
   costs its size without being expanded), and the kind of every mapping key
   (a scalar; never a sequence, mapping or alias). Over a limit, or on a bad key,
   the file is refused naming the line.
2. **Construction** with the safe loader that refuses duplicate keys and reads
   YAML 1.2 floats (``1e-8`` is a number, not a string), then a check that every
   key is a string.

Text must be UTF-8; a bad byte is reported with its line and column.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

#: Limits for a configuration file; the packaged default has ~1,200 nodes and depth 6.
MAX_BYTES = 1_000_000
MAX_DEPTH = 32
MAX_EXPANDED_NODES = 200_000


class YamlError(ValueError):
    """A document refused before or while it is built (message names file and line)."""


#: libyaml's parser where PyYAML was built with it (the wheels are): a tenth of the time
#: of the pure-Python one, and the same events, nodes and marks.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SAFE_LOADER):
    """Safe loader that refuses duplicate mapping keys."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False):
    loader.flatten_mapping(node)
    seen: dict = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            first = seen.get(key)
        except TypeError:
            raise YamlError(
                f"line {key_node.start_mark.line + 1}: a mapping key must be a string"
            ) from None
        if first is not None:
            raise YamlError(
                f"line {key_node.start_mark.line + 1}: duplicate key {key!r} "
                f"(first on line {first})"
            )
        seen[key] = key_node.start_mark.line + 1
    return yaml.constructor.SafeConstructor.construct_mapping(loader, node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)

#: YAML 1.2 floats that PyYAML's 1.1 resolver leaves as strings: an exponent without a
#: dot (``1e-8``), an unsigned exponent (``1.5e8``), a leading dot with an exponent.
YAML12_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")
_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", YAML12_FLOAT, list("-+.0123456789")
)


class _Frame:
    """An open collection while scanning events: its expanded size and, for a mapping,
    whether the next child is a key."""

    __slots__ = ("anchor", "is_mapping", "next_is_key", "size")

    def __init__(self, anchor: str | None, is_mapping: bool):
        self.anchor = anchor
        self.is_mapping = is_mapping
        self.next_is_key = is_mapping
        self.size = 1


def _line(event) -> int:
    return event.start_mark.line + 1 if event.start_mark is not None else 0


def _scan(text: str) -> None:
    """Pass 1: depth, expanded size and key kinds from the event stream (builds nothing)."""
    anchored: dict[str, int] = {}
    stack: list[_Frame] = []
    total = 0
    for event in yaml.parse(text, Loader=_SAFE_LOADER):
        if isinstance(event, (yaml.StreamStartEvent, yaml.StreamEndEvent, yaml.DocumentEndEvent)):
            continue
        if isinstance(event, yaml.DocumentStartEvent):
            if total:
                raise YamlError(f"line {_line(event)}: more than one YAML document")
            continue
        parent = stack[-1] if stack else None
        at_key = parent is not None and parent.is_mapping and parent.next_is_key
        if isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            frame = stack.pop()
            if frame.anchor is not None:
                anchored[frame.anchor] = frame.size
            _add(stack, frame.size)
            continue
        if at_key and not isinstance(event, yaml.ScalarEvent):
            raise YamlError(f"line {_line(event)}: a mapping key must be a plain string")
        if parent is not None and parent.is_mapping:
            parent.next_is_key = not parent.next_is_key
        if isinstance(event, yaml.AliasEvent):
            size = anchored.get(event.anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            size = 1
            if event.anchor is not None:
                anchored[event.anchor] = 1
        else:  # a collection starts
            stack.append(_Frame(event.anchor, isinstance(event, yaml.MappingStartEvent)))
            if len(stack) > MAX_DEPTH:
                raise YamlError(f"line {_line(event)}: nested deeper than {MAX_DEPTH} levels")
            continue
        total += size
        if total > MAX_EXPANDED_NODES:
            raise YamlError(
                f"line {_line(event)}: the document expands to more than "
                f"{MAX_EXPANDED_NODES:,} values (aliases included)"
            )
        _add(stack, size)


def _add(stack: list[_Frame], size: int) -> None:
    if stack:
        stack[-1].size += size


def _check_keys(value: Any) -> None:
    """Pass 2b: every mapping key is a string (iteratively; depth is already bounded)."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise YamlError(f"mapping key {key!r} is a {type(key).__name__}, not a string")
                pending.append(child)
        elif isinstance(item, list):
            pending.extend(item)


def decode(data: bytes) -> str:
    """UTF-8 text of ``data``; a bad byte is reported with its line and column."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[: error.start]
        line = before.count(b"\n") + 1
        column = error.start - (before.rfind(b"\n") + 1) + 1
        raise YamlError(
            f"line {line}, column {column}: byte 0x{data[error.start]:02x} is not UTF-8 "
            "(save the file as UTF-8)"
        ) from None


def load_text(text: str) -> Any:
    """The value of one YAML document, refused (``YamlError``) past the limits above."""
    if len(text) > MAX_BYTES:
        raise YamlError(f"larger than {MAX_BYTES:,} characters: not a configuration file")
    try:
        _scan(text)
        value = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = error.problem or error.context
        if problem and "nesting depth" in problem:
            # libyaml 0.2.6 (in PyYAML 6.0.4's wheels) stops at 1,000 levels while its
            # scanner reads ahead, before pass 1 has seen the 33rd start event
            raise YamlError(f"{where}nested deeper than {MAX_DEPTH} levels") from None
        raise YamlError(f"{where}not valid YAML: {problem}") from None
    except yaml.YAMLError as error:
        raise YamlError(f"not valid YAML: {' '.join(str(error).split())}") from None
    _check_keys(value)
    return value


def load_file(path: str | Path) -> Any:
    """:func:`load_text` of a file; every error names the file."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BYTES:
            raise YamlError(f"larger than {MAX_BYTES:,} bytes: not a configuration file")
        text = decode(path.read_bytes())
        return load_text(text)
    except YamlError as error:
        raise YamlError(f"{path}: {error}") from None
    except OSError as error:
        raise YamlError(f"{path}: cannot read: {error.strerror or error}") from None
