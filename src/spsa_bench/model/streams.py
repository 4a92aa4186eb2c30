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

from spsa_bench.model import seeding

#: Purposes, in a fixed order: the index is part of the spawn key, so never
#: reorder this tuple (append only).
PURPOSES: tuple[str, ...] = (
    "flips",
    "match",
    "workers",
    "durations",
    "rounding",
    "instance",
    "landscape",  # the truth prior's optional landscape options (model.instances)
    "hessian",  # spsa-2's Hessian match: its shift flips D~, and (sub-key 1) its rounding
)


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


def bit_generators(entropy: int, seeds, purpose: str, *extra: int) -> list[np.random.SFC64]:
    """:func:`bit_generator` of every seed in ``seeds``, the same streams, seeded together
    (:mod:`spsa_bench.model.seeding`: a fifth of the time of one SeedSequence a seed)."""
    if purpose not in PURPOSES:
        raise ValueError(f"unknown random-stream purpose {purpose!r}; known: {PURPOSES}")
    tail = (PURPOSES.index(purpose), *(int(e) for e in extra))
    keys = [(seed, *tail) for seed in np.asarray(seeds, dtype=np.int64).reshape(-1).tolist()]
    return seeding.sfc64_generators(int(entropy), keys)


def generators(entropy: int, seeds, purpose: str, *extra: int) -> list[np.random.Generator]:
    """:func:`generator` of every seed in ``seeds`` (seeded together, :func:`bit_generators`)."""
    return [np.random.Generator(bits) for bits in bit_generators(entropy, seeds, purpose, *extra)]


def generator(entropy: int, seed: int, purpose: str, *extra: int) -> np.random.Generator:
    """A fresh generator for ``purpose`` at ``seed``."""
    return np.random.Generator(bit_generator(entropy, seed, purpose, *extra))


def flips(
    entropy: int,
    seeds: np.ndarray,
    num_jobs: int,
    num_params: int,
    *,
    job_major: bool = False,
    purpose: str = "flips",
) -> np.ndarray:
    """Rademacher flips, shape ``(seed, job, param)``, values in {-1, +1} as int8
    (``job_major``: the same flips laid out ``(job, seed, param)``, as the replay reads them;
    ``purpose``: the stream they come from, ``"flips"`` or ``"hessian"`` for the Hessian
    match's shift flips ``D~`` of spsa-2).

    Job ``j`` of seed ``s`` always gets the same flip, whatever the number of
    jobs drawn (rows are filled in job order from the seed's own stream).
    """
    n_bits = num_jobs * num_params
    n_words = -(-n_bits // 64)
    words = np.empty((len(seeds), n_words), dtype="<u8")  # each seed's raw stream, little-endian
    for row, stream in enumerate(bit_generators(entropy, seeds, purpose)):  # one call a seed
        words[row] = stream.random_raw(n_words)
    shape = (num_jobs, len(seeds), num_params) if job_major else (len(seeds), num_jobs, num_params)
    out = np.empty(shape, dtype=np.int8)
    by_seed = out.transpose(1, 0, 2) if job_major else out  # a view: (seed, job, param)
    as_bytes = words.view(np.uint8)
    for first in range(0, len(seeds), _UNPACK_SEEDS):  # a few seeds' bits at a time
        # bit b of a seed's raw stream is the flip of job b // num_params, param b % num_params
        bits = np.unpackbits(
            as_bytes[first : first + _UNPACK_SEEDS], axis=1, count=n_bits, bitorder="little"
        ).view(np.int8)
        bits *= 2
        bits -= 1
        by_seed[first : first + bits.shape[0]] = bits.reshape(bits.shape[0], num_jobs, num_params)
    return out


#: Seeds whose flips are unpacked at once (a few hundred kB: the block stays in cache).
_UNPACK_SEEDS = 64


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
    for row, stream in enumerate(bit_generators(entropy, seeds, "match")):  # one call a seed
        out[row] = _draws(stream, num_pairs + (num_pairs & 1))[:num_pairs]
    return out


def _draws(stream: np.random.BitGenerator, count: int) -> np.ndarray:
    """The stream's next ``count`` (even) match draws, as :func:`match_draws` splits them."""
    return stream.random_raw(count // 2).astype("<u8", copy=False).view("<u4")


class MatchWindow:
    """The draws of :func:`match_draws` for many seeds, held a window of pairs at a time.

    All of them cost 4 bytes x seeds x pairs (120 MB for 1000 seeds x 30,000 pairs), and
    in a fresh process such memory is paid for when first touched. The window holds draws
    ``start[s] .. start[s] + width - 1`` of seed ``s``. A replay reads a seed's draws
    in dispatch order (a job starts where the seed's previous job ended), so when a job
    reaches past a seed's window, the window moves up to the job's first draw: the
    draws before it are never read again, the rest is kept, and the seed's stream goes
    on where it stopped. What is read is :func:`match_draws` bit for bit; a budget no
    longer than the window is drawn whole at once, as there.

    ``pair_major``: the buffer is laid out ``(pair, seed)``, for replays whose jobs are
    common to every seed (the synchronous mode): a job's draws are then one contiguous
    block ``(size, seed)`` whose comparisons with per-seed thresholds run along rows of
    every seed (:func:`spsa_bench.model.pentanomial.at_least_and_net_wins`). Such a
    window moves every seed at once and serves :meth:`block` only.
    """

    def __init__(
        self,
        entropy: int,
        seeds,
        num_pairs: int,
        width: int,
        longest_job: int,
        *,
        pair_major: bool = False,
    ):
        whole = num_pairs + (num_pairs & 1)  # draws come two at a time
        width = min(whole, width + (width & 1))
        if width < whole and width < longest_job + 2:
            raise ValueError(f"a window of {width} draws cannot hold a job of {longest_job}")
        self.width = width
        self.pair_major = pair_major
        self.streams = bit_generators(entropy, seeds, "match")
        n_seeds = len(self.streams)
        if pair_major:
            self.buffer = np.empty((width, n_seeds), dtype=np.uint32)
            _fill_pair_major(self.streams, self.buffer)
        else:
            self.buffer = np.empty((n_seeds, width), dtype=np.uint32)
            for row, stream in enumerate(self.streams):  # stream setup: one draw call per seed
                self.buffer[row] = _draws(stream, width)
        self.start = np.zeros(n_seeds, dtype=np.int64)
        self.aligned = True  # every seed's window starts at the same draw

    def block(self, offset: int, size: int) -> np.ndarray:
        """Draws ``offset .. offset + size - 1`` of every seed, ``(seed, size)``; of a
        pair-major window ``(size, seed)``, a contiguous slice."""
        rows = self.start.shape[0]
        if rows == 0:
            return self.buffer[:size, :] if self.pair_major else self.buffer[:, :size]
        if not self.aligned:
            return self.segments(np.full(rows, offset), np.full(rows, size)).reshape(rows, size)
        first = int(self.start[0])
        if offset + size > first + self.width:
            if self.pair_major:
                self._move_every_seed(offset)
            else:
                self._move(np.arange(rows), offset)
            first = int(self.start[0])
        if self.pair_major:
            return self.buffer[offset - first : offset - first + size]
        return self.buffer[:, offset - first : offset - first + size]

    def segments(self, offsets: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Seed ``s``'s draws ``offsets[s] .. offsets[s] + sizes[s] - 1``, concatenated
        seed after seed (a seed of size 0 gives nothing). Not for a pair-major window,
        which serves jobs common to every seed (:meth:`block`)."""
        if self.pair_major:
            raise ValueError("a pair-major match window serves blocks common to every seed")
        late = (sizes > 0) & (offsets + sizes > self.start + self.width)
        if late.any():
            self._move(np.flatnonzero(late), offsets)
        rows = sizes.shape[0]
        starts = offsets - self.start + np.arange(rows) * self.width  # in the flat buffer
        first = np.cumsum(sizes) - sizes  # first position of each seed in the result
        index = np.repeat(starts - first, sizes) + np.arange(int(sizes.sum()))
        return self.buffer.reshape(-1)[index]

    def _move(self, rows: np.ndarray, offsets) -> None:
        """Move the windows of ``rows`` up to start at their job's first draw (made even)."""
        new_start = np.broadcast_to(np.asarray(offsets, dtype=np.int64), self.start.shape)
        new_start = new_start - (new_start & 1)
        for row in rows.tolist():  # stream I/O: one draw call per seed whose window moves
            shift = int(new_start[row] - self.start[row])
            kept = self.width - shift
            if kept > 0:
                self.buffer[row, :kept] = self.buffer[row, shift:]
            else:  # skip the draws no job reads
                _draws(self.streams[row], -kept)
            fresh = min(shift, self.width)
            self.buffer[row, self.width - fresh :] = _draws(self.streams[row], fresh)
            self.start[row] = new_start[row]
        self.aligned = bool(np.all(self.start == self.start[:1]))

    def _move_every_seed(self, offset: int) -> None:
        """Move every seed's window of a pair-major buffer up to start at ``offset`` (made
        even): the draws still ahead move up, the stream of each seed fills the rest."""
        new_start = offset - (offset & 1)
        shift = new_start - int(self.start[0])
        kept = self.width - shift
        if kept > 0:
            self.buffer[:kept] = self.buffer[shift:]
        fresh = min(shift, self.width)
        _fill_pair_major(self.streams, self.buffer[self.width - fresh :], skip=max(-kept, 0))
        self.start[:] = new_start

    def keep(self, rows: np.ndarray) -> None:
        """Keep only ``rows`` (indices into the current seeds)."""
        self.buffer = self.buffer.take(rows, axis=1) if self.pair_major else self.buffer[rows]
        self.start = self.start[rows]
        self.streams = [self.streams[row] for row in rows.tolist()]
        self.aligned = bool(np.all(self.start == self.start[:1]))


#: Seeds filled at a time into a pair-major window: a pair's draws of 16 seeds are one
#: 64-byte line, so each line of the window is written once, whole.
_FILL_SEEDS = 16


def _fill_pair_major(streams: list, out: np.ndarray, skip: int = 0) -> None:
    """Fill ``out`` ``(count, seed)`` with every seed's next ``count`` draws, after
    skipping ``skip`` (both even): seeds a few at a time, drawn into a small seed-major
    block and copied across (a seed's draws alone would touch a line per draw)."""
    count, n_seeds = out.shape
    # the 64-bit outputs stored little-endian, read as pairs of draws (as _draws splits them)
    outputs = np.empty((min(_FILL_SEEDS, n_seeds), count // 2), dtype="<u8")
    block = outputs.view("<u4")
    for first in range(0, n_seeds, _FILL_SEEDS):  # stream I/O: one draw call per seed
        group = streams[first : first + _FILL_SEEDS]
        for row, stream in enumerate(group):
            if skip:
                stream.random_raw(skip // 2)
            outputs[row] = stream.random_raw(count // 2)
        out[:, first : first + len(group)] = block[: len(group)].T
