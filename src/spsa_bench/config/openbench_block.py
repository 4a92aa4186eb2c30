"""OpenBench SPSA parameter blocks: ``name, int|float, start, min, max, c_end, r_end``.

The format is the one OpenBench's tune form takes (AndyGrant/OpenBench
``OpenBench/spsa_utils.py``, ``create_spsa_run``: each line split on commas, every
field stripped; ``OpenBench/workloads/verify_workload.py``, ``verify_spsa_inputs``):
seven fields, the type ``int`` or ``float``, ``start`` within ``[min, max]``,
``r_end > 0``, and ``c_end > 0`` for a float parameter. The parse gives the same
:class:`~spsa_bench.config.param_block.ParamBlock` record as a Fishtest block, with
a per-parameter ``integer`` flag (:class:`OpenBenchBlock`).

The error rules and messages are the Fishtest parser's
(:mod:`~spsa_bench.config.param_block`): every refusal names the line, the field
and the value; names holding control or invisible characters and numbers whose
derived quantities overflow are refused (:mod:`~spsa_bench.config.block_guards`);
an empty line is skipped; an empty block and repeated names are refused; every
number must be finite; ``min < max`` and ``c_end > 0`` for every parameter (OpenBench
accepts ``min == max`` and leaves an int parameter's ``c_end`` unchecked). One rule
is the benchmark's own: an ``int`` parameter's ``min`` and ``max`` must be integers,
because OpenBench rounds before it clips and the replay clips before it rounds,
which agree exactly when the bounds are integers (docs/frameworks.md).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from spsa_bench.config.block_guards import BlockError, check_derived, check_name
from spsa_bench.config.param_block import BOM, ParamBlock, _number, _number_text

FIELDS = ("name", "type", "start", "min", "max", "c_end", "r_end")
TYPES = ("int", "float")
_NUMBERS = ("start", "min", "max", "c_end", "r_end")


@dataclasses.dataclass(frozen=True, eq=False)
class OpenBenchBlock(ParamBlock):
    """A parsed OpenBench block: a :class:`ParamBlock` plus ``integer`` (read-only
    bools, True where the type is ``int``)."""

    integer: np.ndarray = None

    def __post_init__(self):
        super().__post_init__()
        flags = np.zeros(len(self.names), bool) if self.integer is None else self.integer
        flags = np.array(flags, dtype=bool)
        flags.setflags(write=False)
        object.__setattr__(self, "integer", flags)

    def to_text(self) -> str:
        """The block in OpenBench's format; ``parse_openbench_block(b.to_text()) == b``."""
        lines = []
        for i, name in enumerate(self.names):
            numbers = (self.start[i], self.min[i], self.max[i], self.c_end[i], self.r_end[i])
            kind = "int" if self.integer[i] else "float"
            lines.append(", ".join([name, kind, *(_number_text(v) for v in numbers)]))
        return "\n".join(lines) + "\n"

    def __eq__(self, other) -> bool:
        if not isinstance(other, OpenBenchBlock):
            return NotImplemented
        return ParamBlock.__eq__(self, other) and np.array_equal(self.integer, other.integer)

    __hash__ = None


def _parse_line(line_number: int, line: str) -> tuple:
    shown = line.strip()
    chunks = shown.split(",")
    if len(chunks) != len(FIELDS):
        raise BlockError(
            f"line {line_number} ({shown!r}): has {len(chunks)} comma-separated fields, "
            f"expected {len(FIELDS)}: {','.join(FIELDS)}"
        )
    name, kind = chunks[0].strip(), chunks[1].strip()
    if not name:
        raise BlockError(f"line {line_number} ({shown!r}): field name is empty")
    check_name(line_number, name)
    where = f"line {line_number} ({name})"
    if kind not in TYPES:
        raise BlockError(f"{where}: field type = {kind!r} must be int or float")
    start, low, high, c_end, r_end = (
        _number(text, field, line_number, shown)
        for text, field in zip(chunks[2:], _NUMBERS, strict=True)
    )
    text = dict(zip(_NUMBERS, (chunk.strip() for chunk in chunks[2:]), strict=True))
    if c_end <= 0:
        raise BlockError(f"{where}: field c_end = {text['c_end']} must be > 0")
    if r_end <= 0:
        raise BlockError(f"{where}: field r_end = {text['r_end']} must be > 0 (OpenBench)")
    if not low < high:
        raise BlockError(f"{where}: field min = {text['min']} must be below max = {text['max']}")
    if not low <= start <= high:
        raise BlockError(
            f"{where}: field start = {text['start']} must be within [min, max] = "
            f"[{text['min']}, {text['max']}]"
        )
    if kind == "int":
        for field, value in (("min", low), ("max", high)):
            if not float(value).is_integer():
                raise BlockError(
                    f"{where}: field {field} = {text[field]} of an int parameter must be an "
                    "integer (the replay clips before it rounds; docs/frameworks.md)"
                )
    # check_derived reads the Fishtest layout: name,start,min,max,c_end,r_end
    check_derived(where, [chunks[0], *chunks[2:]], low, high, c_end, r_end)
    return name, start, low, high, c_end, r_end, kind == "int"


def parse_openbench_block(text: str) -> OpenBenchBlock:
    """Parse a block in OpenBench's format; :class:`BlockError` names the line and field."""
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
            "the parameter block is empty: expected lines name,int|float,start,min,max,c_end,r_end"
        )
    columns = list(zip(*rows, strict=True))
    return OpenBenchBlock(tuple(columns[0]), *columns[1:6], integer=columns[6])
