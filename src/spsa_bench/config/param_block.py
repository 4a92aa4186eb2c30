"""Fishtest SPSA parameter blocks: parse, check, print, and synthesize.

A block is what a developer pastes into Fishtest's new-test page: one line per
parameter, ``name,start,min,max,c_end,r_end``. The rules follow the server's
parser (official-stockfish/fishtest ``server/fishtest/spsa_workflow.py``,
``parse_spsa_params``): each line is stripped and split on commas, an empty line
is skipped, a line must have exactly six fields, every number must be finite,
``c_end > 0`` and ``r_end >= 0``; the benchmark adds ``min < max`` and
``start`` within ``[min, max]`` (the server clips but never checks them), refuses
an empty block and repeated names. Every error names the line, the field and the
value.

Two more rules keep a block's text and numbers safe downstream: names and derived
quantities (:mod:`~spsa_bench.config.block_guards`).

``synthetic_tune`` prints the block Stockfish's ``TUNE()`` macro would print for
``count`` integer parameters of value ``value`` (official-stockfish/Stockfish
``src/tune.cpp``, ``Tune::make_option``): the default range ``[0, 2v]`` for
``v > 0`` (``[2v, 0]`` for ``v < 0``), ``c_end = (max - min) / 20`` and
``r_end = 0.0020``.

Games budgets follow the server's limits: at least 1000, a multiple of 1000, at
most 3,200,000; Fishtest runs ``N = games // 2`` SPSA iterations, one per game pair.
"""

from __future__ import annotations

import dataclasses
import math
import os
import stat

import numpy as np

from spsa_bench.config.block_guards import (  # noqa: F401 - BlockError, MAX_GAMES: re-exported
    MAX_GAMES,
    BlockError,
    check_derived,
    check_name,
    printable_text,
)

FIELDS = ("name", "start", "min", "max", "c_end", "r_end")
MIN_GAMES = 1000
GAMES_STEP = 1000
#: Stockfish's TUNE() default r_end (src/tune.cpp prints the literal "0.0020").
TUNE_R_END = 0.002
#: Bytes of a block file read at most: a larger file is not a parameter block.
MAX_BLOCK_BYTES = 1_000_000
#: The UTF-8 byte-order mark some editors put at the start of a text file.
BOM = "\ufeff"


@dataclasses.dataclass(frozen=True)
class ParamBlock:
    """A parsed block: names and per-parameter float arrays (read-only)."""

    names: tuple[str, ...]
    start: np.ndarray
    min: np.ndarray
    max: np.ndarray
    c_end: np.ndarray
    r_end: np.ndarray

    def __post_init__(self):
        for field in FIELDS[1:]:
            values = np.array(getattr(self, field), dtype=np.float64)
            values.setflags(write=False)
            object.__setattr__(self, field, values)

    def __len__(self) -> int:
        return len(self.names)

    def to_text(self) -> str:
        """The block in Fishtest's format; ``parse_block(b.to_text()) == b`` for every block."""
        lines = []
        for i, name in enumerate(self.names):
            numbers = (self.start[i], self.min[i], self.max[i], self.c_end[i], self.r_end[i])
            lines.append(",".join([name, *(_number_text(v) for v in numbers)]))
        return "\n".join(lines) + "\n"

    def __eq__(self, other) -> bool:
        if not isinstance(other, ParamBlock):
            return NotImplemented
        return self.names == other.names and all(
            np.array_equal(getattr(self, f), getattr(other, f)) for f in FIELDS[1:]
        )

    __hash__ = None


def _number_text(value: float) -> str:
    """Shortest text that reads back as the same float, integers without a decimal point."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def _number(text: str, field: str, line_number: int, line: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise BlockError(
            f"line {line_number} ({line!r}): field {field} = {text.strip()!r} is not a finite number"
        )
    return value


def _parse_line(line_number: int, line: str) -> tuple:
    chunks = line.strip().split(",")
    if len(chunks) != len(FIELDS):
        raise BlockError(
            f"line {line_number} ({line.strip()!r}): has {len(chunks)} comma-separated fields, "
            f"expected {len(FIELDS)}: {','.join(FIELDS)}"
        )
    name = chunks[0].strip()
    if not name:
        raise BlockError(f"line {line_number} ({line.strip()!r}): field name is empty")
    check_name(line_number, name)
    start, low, high, c_end, r_end = (
        _number(text, field, line_number, line.strip())
        for text, field in zip(chunks[1:], FIELDS[1:], strict=True)
    )
    where = f"line {line_number} ({name})"
    if c_end <= 0:
        raise BlockError(f"{where}: field c_end = {chunks[4].strip()} must be > 0")
    if r_end < 0:
        raise BlockError(f"{where}: field r_end = {chunks[5].strip()} must be >= 0")
    if not low < high:
        raise BlockError(
            f"{where}: field min = {chunks[2].strip()} must be below max = {chunks[3].strip()}"
        )
    if not low <= start <= high:
        raise BlockError(
            f"{where}: field start = {chunks[1].strip()} must be within [min, max] = "
            f"[{chunks[2].strip()}, {chunks[3].strip()}]"
        )
    check_derived(where, chunks, low, high, c_end, r_end)
    return name, start, low, high, c_end, r_end


def parse_block(text: str) -> ParamBlock:
    """Parse a block in Fishtest's format; :class:`BlockError` names the line and field."""
    if not isinstance(text, str):
        raise BlockError(f"a parameter block must be text, got {type(text).__name__}")
    text = text.removeprefix(BOM)
    rows, seen = [], {}
    for line_number, line in enumerate(text.split("\n"), start=1):
        if line.strip() == "":
            continue
        row = _parse_line(line_number, line)
        if row[0] in seen:
            raise BlockError(
                f"line {line_number}: parameter name {row[0]!r} repeats line {seen[row[0]]}"
            )
        seen[row[0]] = line_number
        rows.append(row)
    if not rows:
        raise BlockError(
            "the parameter block is empty: expected lines name,start,min,max,c_end,r_end"
        )
    columns = list(zip(*rows, strict=True))
    return ParamBlock(tuple(columns[0]), *columns[1:])


def read_block_text(source) -> str:
    """The text of a block file: ``source`` is a path or a binary stream (standard
    input); at most :data:`MAX_BLOCK_BYTES`, UTF-8, a leading byte-order mark dropped.
    A path must be a regular file: a FIFO (which would block without a writer), a
    device or a directory is refused before anything is read.
    :class:`BlockError` says what is wrong (the caller names the key or argument)."""
    try:
        if hasattr(source, "read"):
            data = source.read(MAX_BLOCK_BYTES + 1)
        else:
            data = _read_regular(source, MAX_BLOCK_BYTES + 1)
    except OSError as error:
        raise BlockError(f"cannot read {source}: {error.strerror or error}") from None
    if len(data) > MAX_BLOCK_BYTES:
        raise BlockError(f"larger than {MAX_BLOCK_BYTES:,} bytes: not a parameter block")
    try:
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as error:
        raise BlockError(f"not UTF-8 text (byte {error.start})") from None


def _read_regular(path, limit: int) -> bytes:
    """At most ``limit`` bytes of ``path``, opened without blocking (a FIFO with no
    writer opens at once) and refused unless :func:`os.fstat` says it is a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BlockError("not a regular file (a FIFO, device or directory is not read)")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb") as handle:
            fd = -1  # the handle closes it
            return handle.read(limit)
    finally:
        if fd >= 0:
            os.close(fd)


def synthetic_tune(count: int, value: int = 100, prefix: str = "p") -> str:
    """The block Stockfish's ``TUNE()`` prints for ``count`` int parameters of value ``value``."""
    if not isinstance(count, int) or count < 1:
        raise BlockError(f"synthetic_tune.params = {count!r}: must be an integer >= 1")
    if not isinstance(value, int) or value == 0:
        raise BlockError(
            f"synthetic_tune.value = {value!r}: must be a non-zero integer "
            "(TUNE() makes no option when min == max, as for 0)"
        )
    low, high = (0, 2 * value) if value > 0 else (2 * value, 0)
    width = len(str(count - 1))
    lines = [
        f"{prefix}{i:0{width}d},{value},{low},{high},{_number_text((high - low) / 20.0)},0.0020"
        for i in range(count)
    ]
    return "\n".join(lines) + "\n"


def check_games(games) -> int:
    """A games budget Fishtest accepts, as an int; :class:`BlockError` otherwise."""
    if (
        isinstance(games, bool)
        or not isinstance(games, (int, float))
        or not math.isfinite(games)
        or games != int(games)
    ):
        raise BlockError(f"games = {games!r}: must be a whole number")
    games = int(games)
    if games < MIN_GAMES or games > MAX_GAMES or games % GAMES_STEP:
        raise BlockError(
            f"games = {games}: Fishtest accepts {MIN_GAMES:,} to {MAX_GAMES:,} games in "
            f"multiples of {GAMES_STEP:,}"
        )
    return games
