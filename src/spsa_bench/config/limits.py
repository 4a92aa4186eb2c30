"""Input limits: what a configuration or a command line may ask for.

The schema bounds each number on its own; this module holds the limits that
involve several of them, and the memory estimate of a run, so a request the
machine cannot serve is refused before anything starts (documented in
docs/benchmark.md, "Input limits").

Memory of one run (``simulate``) of ``S`` seeds, ``N`` pairs, ``C`` checkpoints and
``P`` parameters, in bytes::

    150e6 + 32 N + S * (30 N + 8 C (3 P + 8))

30 bytes per seed x pair is the measured peak of the asynchronous schedules
(docs/cluster.md); the recorded trajectories hold theta and the two extras of the
schedule-free arms per parameter plus a few scalars per checkpoint; 32 N covers
the per-pair tables some arms build (block SPSA: 2 N + 2 gains). A sweep job's
stacked replay (:mod:`spsa_bench.engine.stack`) counts ``S`` as its rows: the seeds
(and held-out seeds) times the arms it stacks, at most :func:`arms_per_replay`.
"""

from __future__ import annotations

import math
import os
import resource

#: Largest seed: exactly representable as a float64 and as an int64.
MAX_SEED = 2**53 - 1
#: Most seeds in one configuration or one command.
MAX_SEEDS = 1_000_000
#: Libraries and interpreter of a run (measured about 140 MB).
BASE_BYTES = 150_000_000
#: Peak bytes per seed x pair (asynchronous schedules, measured up to 30).
BYTES_PER_SEED_PAIR = 30


class LimitError(ValueError):
    """A request beyond a limit; the message names the key or flag."""


def check_seed_range(where: str, first: int, count: int) -> None:
    """``count`` seeds from ``first``: at most :data:`MAX_SEEDS`, none above :data:`MAX_SEED`."""
    if count > MAX_SEEDS:
        raise LimitError(f"{where}: {count:,} seeds, more than the limit of {MAX_SEEDS:,}")
    if first + count - 1 > MAX_SEED:
        raise LimitError(f"{where}: seeds up to {first + count - 1}, above the largest {MAX_SEED}")


def run_bytes(seeds: int, num_pairs: int, checkpoints: int, params: int) -> int:
    """Estimated peak memory of one run (formula in the module docstring)."""
    per_seed = BYTES_PER_SEED_PAIR * num_pairs + 8 * checkpoints * (3 * params + 8)
    return BASE_BYTES + 32 * num_pairs + seeds * per_seed


#: Most rows x pairs one stacked replay holds: its memory grows with them like a replay
#: of that many seeds (about 14 bytes per row x pair measured on async-variable, 442 MB
#: for 7 arms x 120 rows x 30,000 pairs; :func:`run_bytes` counts 30), so a
#: sweep's arms are stacked in groups of at most this many row x pairs (the default
#: grid's 100 + 20 seeds x 30,000 pairs: up to 8 arms at once).
MAX_STACKED_ROW_PAIRS = 30_000_000


def arms_per_replay(arms: int, rows: int, num_pairs: int) -> int:
    """How many of a sweep job's ``arms`` one stacked replay
    (:mod:`spsa_bench.engine.stack`) of ``rows`` rows per arm (seeds and held-out seeds)
    holds: as many as keep ``arms x rows x num_pairs`` within
    :data:`MAX_STACKED_ROW_PAIRS`, at least one (an arm alone is an ordinary replay)."""
    per_arm = max(rows * num_pairs, 1)
    return max(1, min(arms, MAX_STACKED_ROW_PAIRS // per_arm))


def available_bytes() -> int:
    """Physical memory, or the address-space limit of this process if it is smaller."""
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        physical = math.inf
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    limit = math.inf if soft == resource.RLIM_INFINITY else soft
    return int(min(physical, limit, 2**62))


def check_memory(where: str, needed: int, hint: str = "run fewer seeds at a time") -> None:
    """Refuse ``needed`` bytes when the machine (or the process limit) has fewer."""
    have = available_bytes()
    if needed > have:
        raise LimitError(
            f"{where}: needs about {needed / 2**30:.1f} GiB of memory, more than the "
            f"{have / 2**30:.1f} GiB available; {hint}"
        )


#: Longest study a ``spsa-bench <study>`` command starts, in minutes of its estimate
#: (the study row's ``runtime_min``, the time a cluster job is given): a day.
MAX_STUDY_MINUTES = 24 * 60


def check_minutes(where: str, minutes: float, hint: str) -> None:
    """Refuse an estimated ``minutes`` beyond :data:`MAX_STUDY_MINUTES`."""
    if minutes > MAX_STUDY_MINUTES:
        raise LimitError(
            f"{where}: estimated {minutes:,.0f} minutes, more than the limit of "
            f"{MAX_STUDY_MINUTES:,} minutes; {hint}"
        )


def check_finite(where: str, **values: float) -> None:
    """Every value finite, else name the first that is not."""
    for name, value in values.items():
        if not math.isfinite(value):
            raise LimitError(f"{where}: {name} = {value} is not a finite number")
