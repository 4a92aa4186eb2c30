"""Random streams, one per (seed, purpose).

Every random number in spsa-bench comes from a ``numpy.random.SeedSequence``
built from the run's base ``entropy`` and a spawn key ``(seed, purpose, *extra)``.
A seed's streams therefore never depend on which other seeds run beside it,
and each purpose has its own stream, so that consuming more or fewer draws for
one purpose (say, match outcomes at different win probabilities) never shifts
another (say, the flips): every optimizer at one seed sees the same flips,
schedule and match uniforms (common random numbers).
"""

from __future__ import annotations

import numpy as np

#: Purposes, in a fixed order: the index is part of the spawn key, so never
#: reorder this tuple (append only).
PURPOSES: tuple[str, ...] = ("flips", "match", "workers", "durations", "rounding", "instance")


def seed_sequence(entropy: int, seed: int, purpose: str, *extra: int) -> np.random.SeedSequence:
    """The SeedSequence for ``purpose`` at ``seed`` (optionally sub-keyed by ``extra``)."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown random-stream purpose {purpose!r}; known: {PURPOSES}")
    key = (int(seed), PURPOSES.index(purpose), *(int(e) for e in extra))
    return np.random.SeedSequence(entropy=int(entropy), spawn_key=key)


def bit_generator(entropy: int, seed: int, purpose: str, *extra: int) -> np.random.BitGenerator:
    """A fresh SFC64 bit generator for ``purpose`` at ``seed`` (SFC64: fast, and
    seeded only through the SeedSequence)."""
    return np.random.SFC64(seed_sequence(entropy, seed, purpose, *extra))


def generator(entropy: int, seed: int, purpose: str, *extra: int) -> np.random.Generator:
    """A fresh generator for ``purpose`` at ``seed``."""
    return np.random.Generator(bit_generator(entropy, seed, purpose, *extra))


def flips(
    entropy: int, seeds: np.ndarray, num_jobs: int, num_params: int, *, job_major: bool = False
) -> np.ndarray:
    """Rademacher flips, shape ``(seed, job, param)``, values in {-1, +1} as int8
    (``job_major``: the same flips laid out ``(job, seed, param)``, as the replay reads them).

    Job ``j`` of seed ``s`` always gets the same flip, whatever the number of
    jobs drawn (rows are filled in job order from the seed's own stream).
    """
    n_bits = num_jobs * num_params
    n_words = -(-n_bits // 64)
    shape = (num_jobs, len(seeds), num_params) if job_major else (len(seeds), num_jobs, num_params)
    out = np.empty(shape, dtype=np.int8)
    by_seed = out.transpose(1, 0, 2) if job_major else out  # a view: (seed, job, param)
    for row, seed in enumerate(seeds):  # stream setup only: one draw call per seed
        words = bit_generator(entropy, seed, "flips").random_raw(n_words).astype("<u8")
        bits = np.unpackbits(words.view(np.uint8), count=n_bits, bitorder="little")
        # bit b of the seed's raw stream is the flip of job b // num_params, param b % num_params
        by_seed[row] = bits.view(np.int8).reshape(num_jobs, num_params)
    out *= 2
    out -= 1
    return out


def match_draws(entropy: int, seeds: np.ndarray, num_pairs: int) -> np.ndarray:
    """Integer draws driving the outcome of every pair, uint32 ``(seed, pair)``.

    Draw ``k`` stands for the uniform ``u = k / 2**32`` (see
    :func:`spsa_bench.model.pentanomial.draw_thresholds`): half the memory of float64
    uniforms and a resolution of 2.3e-10. Pair ``p`` of seed ``s`` is the ``p``-th
    pair in dispatch order; its outcome is drawn by inverse CDF from its own draw
    whatever the probabilities, so two optimizers at one seed differ only where
    their probabilities differ. Each 64-bit output of the seed's stream gives two
    draws, low half first.
    """
    out = np.empty((len(seeds), num_pairs), dtype=np.uint32)
    n_words = -(-num_pairs // 2)
    for row, seed in enumerate(seeds):  # stream setup only: one draw call per seed
        words = bit_generator(entropy, seed, "match").random_raw(n_words).astype("<u8", copy=False)
        out[row] = words.view("<u4")[:num_pairs]
    return out
