"""Many seeds' SFC64 bit generators at once, as ``SFC64(SeedSequence(...))`` builds them.

A run draws each seed's flips and match outcomes from streams seeded through
``numpy.random.SeedSequence(entropy, spawn_key=(seed, purpose))``. Built seed by seed,
the SeedSequences cost about 4 us each (8 ms for the two purposes of 1000 seeds): the
per-object work in numpy, not the hashing. Here the hashing runs once for every seed,
as a few numpy operations on a column of words per pool entry, and each generator is
seeded from its ready state.

The algorithm is numpy's (O'Neill's ``seed_seq_fe`` with a pool of four 32-bit words):

- the entropy words are the run entropy in 32-bit words, least significant first,
  zero-padded to the pool size when a spawn key follows, then the spawn key's words;
- ``hashmix(v) = ((v ^ h) * (h * MULT_A)) ^ (... >> 16)`` with the hash constant ``h``
  advancing ``h <- h * MULT_A`` at each call from ``INIT_A``; the pool takes the first
  four words hashed, then every pool word is mixed into every other one, then each
  remaining entropy word into every pool word, ``mix(x, y) = (L x - R y) ^ (... >> 16)``;
- the state cycles through the pool, each word hashed with a constant advancing from
  ``INIT_B`` by ``MULT_B``; two 32-bit words make one 64-bit word, low word first.

Whether this gives numpy's states is checked once per process against
``SeedSequence.generate_state`` on a few keys; if it ever does not (another numpy), or
for a key that does not fit (a seed of 2**32 or more, a byte-swapped machine), the
generators are built the plain way.
"""

from __future__ import annotations

import functools
import sys

import numpy as np
from numpy.random.bit_generator import ISeedSequence

_MASK = 0xFFFFFFFF
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_SHIFT = 16
_POOL = 4
#: 64-bit words an SFC64 asks its seed sequence for.
_SFC64_WORDS = 3


def _words(value: int) -> list[int]:
    """A non-negative integer as 32-bit words, least significant first (0 is one word)."""
    if value < 0:
        raise ValueError("entropy and spawn keys must be non-negative")
    words = [value & _MASK]
    value >>= 32
    while value:
        words.append(value & _MASK)
        value >>= 32
    return words


def _hash_constants(start: int, multiplier: int, count: int) -> list[int]:
    """The hash constant in use at each of ``count`` successive calls (it advances after use)."""
    constants = []
    for _ in range(count):
        constants.append(start)
        start = (start * multiplier) & _MASK
    return constants


def _hashmix(value: np.ndarray, constant: int) -> np.ndarray:
    value = value ^ np.uint32(constant)
    value *= np.uint32((constant * _MULT_A) & _MASK)
    value ^= value >> _SHIFT
    return value


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    result = x * np.uint32(_MIX_L) - y * np.uint32(_MIX_R)
    result ^= result >> _SHIFT
    return result


def sfc64_states(entropy: int, keys: np.ndarray) -> np.ndarray:
    """``SeedSequence(entropy, spawn_key=k).generate_state(3, uint64)`` for every row
    ``k`` of ``keys`` (``(n, key length)``, each entry below 2**32), ``(n, 3)`` uint64."""
    keys = np.asarray(keys, dtype=np.uint32)
    run_words = _words(int(entropy))
    run_words += [0] * max(0, _POOL - len(run_words))  # padded: a spawn key follows
    columns = [np.full(keys.shape[0], word, dtype=np.uint32) for word in run_words]
    columns += [np.ascontiguousarray(keys[:, j]) for j in range(keys.shape[1])]
    n_mixes = _POOL + _POOL * (_POOL - 1) + (len(columns) - _POOL) * _POOL
    constants = iter(_hash_constants(_INIT_A, _MULT_A, n_mixes))
    pool = [_hashmix(columns[i], next(constants)) for i in range(_POOL)]
    for source in range(_POOL):
        for target in range(_POOL):
            if source != target:
                pool[target] = _mix(pool[target], _hashmix(pool[source], next(constants)))
    for column in columns[_POOL:]:
        for target in range(_POOL):
            pool[target] = _mix(pool[target], _hashmix(column, next(constants)))
    n_words = 2 * _SFC64_WORDS
    state = np.empty((keys.shape[0], n_words), dtype=np.uint32)
    for i, constant in enumerate(_hash_constants(_INIT_B, _MULT_B, n_words)):
        value = pool[i % _POOL] ^ np.uint32(constant)
        value *= np.uint32((constant * _MULT_B) & _MASK)
        value ^= value >> _SHIFT
        state[:, i] = value
    return state.view(np.uint64)  # low word first: little-endian only (see usable())


class _ReadyState(ISeedSequence):
    """A seed sequence whose SFC64 state was computed beforehand (``sfc64_states``);
    any other request is answered by the plain SeedSequence of the same key."""

    __slots__ = ("_state", "_entropy", "_key")

    def __init__(self, state: np.ndarray, entropy: int, key: tuple[int, ...]):
        self._state, self._entropy, self._key = state, entropy, key

    def generate_state(self, n_words, dtype=np.uint32):
        if n_words == _SFC64_WORDS and np.dtype(dtype) == np.uint64:
            return self._state
        plain = np.random.SeedSequence(entropy=self._entropy, spawn_key=self._key)
        return plain.generate_state(n_words, dtype)


@functools.cache
def usable() -> bool:
    """Whether :func:`sfc64_states` gives numpy's own states here (checked once)."""
    if sys.byteorder != "little":
        return False
    entropy = 20261122 + (7 << 40)  # two words, so the padding is exercised too
    keys = np.array([[0, 0], [1, 5], [2**32 - 1, 3], [123456789, 1]], dtype=np.uint32)
    for run_entropy in (entropy, 0, 2**130 + 17):
        fast = sfc64_states(run_entropy, keys)
        for row, key in enumerate(keys.tolist()):
            plain = np.random.SeedSequence(entropy=run_entropy, spawn_key=tuple(key))
            if not np.array_equal(plain.generate_state(_SFC64_WORDS, np.uint64), fast[row]):
                return False
    return True


def sfc64_generators(entropy: int, keys: list[tuple[int, ...]]) -> list[np.random.SFC64]:
    """``SFC64(SeedSequence(entropy, spawn_key=key))`` for every key (tuples of one
    length), the same streams bit for bit, hashed for all keys at once when possible."""
    if not keys:
        return []
    try:
        array = np.array(keys, dtype=np.int64) if usable() else None
    except (OverflowError, ValueError):  # a key beyond 64 bits, or keys of several lengths
        array = None
    if array is None or array.ndim != 2 or array.min() < 0 or array.max() > _MASK:
        return [
            np.random.SFC64(np.random.SeedSequence(entropy=entropy, spawn_key=key)) for key in keys
        ]
    states = sfc64_states(entropy, array)
    return [
        np.random.SFC64(_ReadyState(state, entropy, key))
        for state, key in zip(states, keys, strict=True)
    ]
