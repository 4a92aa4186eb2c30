"""What keeps a parameter block's text and numbers safe downstream
(:mod:`~spsa_bench.config.param_block` parses the block; these are its extra rules):

- a name is text the server keeps as given and the worker passes to the engine as
  ``option.NAME=VALUE`` on a command line, so a name holding a control character
  (NUL, an escape sequence, a tab), an invisible format character (a bidirectional
  override, a zero-width joiner, a byte-order mark) or a line separator is refused;
  a UTF-8 byte-order mark at the start of the block is dropped;
- the numbers must keep the block's derived quantities finite at Fishtest's largest
  budget ``N = 1,600,000`` pairs for every gain schedule of the Fishtest form
  (``A = 0.1 N``, ``alpha <= 2``, ``gamma <= 1``, the optimizers' bounds): the range
  ``max - min``, ``c_end^2 (1.1 N)^2`` (which bounds ``c = c_end N^gamma <= c_end N``
  too) and the gain ``a = r_end c_end^2 (A + N)^alpha <= r_end c_end^2 (1.1 N)^2``. A
  line that breaks one is refused naming the field (a value near 1e308 would otherwise
  overflow inside the model).
"""

from __future__ import annotations

import math
import unicodedata

#: Fishtest's largest games budget (server/fishtest's new-test form).
MAX_GAMES = 3_200_000
#: Fishtest's largest number of SPSA iterations (one per game pair).
MAX_PAIRS = MAX_GAMES // 2
#: The bound of ``(A + N)^alpha`` at :data:`MAX_PAIRS` for the Fishtest form of the
#: gains (``A = 0.1 N``, ``alpha <= 2``); it also bounds ``N^gamma`` (``gamma <= 1``).
MAX_A_GROWTH = (1.1 * MAX_PAIRS) ** 2
#: Unicode categories a parameter name may not hold: control (Cc), format (Cf, e.g.
#: bidirectional overrides, zero-width joiners, the byte-order mark), line and
#: paragraph separators (Zl, Zp) and surrogates (Cs).
REFUSED_NAME_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


class BlockError(ValueError):
    """A parameter block Fishtest (or the benchmark) would refuse."""


def check_name(line_number: int, name: str) -> None:
    """Refuse a name holding a character of :data:`REFUSED_NAME_CATEGORIES`; the
    message shows the name escaped (``repr``) and the character's code point."""
    for char in name:
        if unicodedata.category(char) in REFUSED_NAME_CATEGORIES:
            raise BlockError(
                f"line {line_number}: field name = {name!r} holds the control or invisible "
                f"character U+{ord(char):04X}; a name is passed to the engine as "
                "option.NAME=VALUE: use letters, digits and punctuation"
            )


def printable_text(text: str) -> str:
    """``text`` with every character a name may not hold
    (:data:`REFUSED_NAME_CATEGORIES`) replaced by U+FFFD: safe to print on a terminal."""
    return "".join(
        "\ufffd" if unicodedata.category(char) in REFUSED_NAME_CATEGORIES else char for char in text
    )


def check_derived(where: str, chunks: list[str], low, high, c_end, r_end) -> None:
    """Refuse numbers that make a derived quantity of the block non-finite (module
    docstring); float products overflow to inf without an error, so they can be tested."""
    if not math.isfinite(high - low):
        raise BlockError(
            f"{where}: field max = {chunks[3].strip()}: the range max - min = "
            f"{chunks[3].strip()} - ({chunks[2].strip()}) is not a finite number"
        )
    if not math.isfinite(c_end * c_end * MAX_A_GROWTH):  # and so c_end N^gamma too
        raise BlockError(
            f"{where}: field c_end = {chunks[4].strip()} is too large: c_end^2 (A + N)^alpha "
            f"at Fishtest's largest budget ({MAX_PAIRS:,} pairs) is not a finite number"
        )
    if not math.isfinite(r_end * c_end * c_end * MAX_A_GROWTH):
        raise BlockError(
            f"{where}: field r_end = {chunks[5].strip()} is too large for c_end = "
            f"{chunks[4].strip()}: the gain a = r_end c_end^2 (A + N)^alpha at Fishtest's "
            f"largest budget ({MAX_PAIRS:,} pairs) is not a finite number"
        )
