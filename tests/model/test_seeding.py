"""Seeding many SFC64 streams at once gives numpy's own SeedSequence streams."""

import sys

import numpy as np
import pytest

from spsa_bench.model import seeding, streams

ENTROPIES = [0, 1, 20261122, 2**32 - 1, 2**32, 2**96 + 7, 2**200 + 3]  # 1 to 7 words
KEYS = [
    [(seed,) for seed in range(40)],
    [(seed, 1) for seed in (0, 1, 7, 2**31, 2**32 - 1)],
    [(seed, 2, worker) for seed in range(6) for worker in (0, 3)],
    [(seed, 5, 1, 2, 3, 4, 5, 6) for seed in range(4)],  # longer than the pool
]


def _plain(entropy, key):
    return np.random.SeedSequence(entropy=entropy, spawn_key=key)


def test_usable_on_a_little_endian_numpy():
    assert seeding.usable() is (sys.byteorder == "little")


@pytest.mark.parametrize("entropy", ENTROPIES)
@pytest.mark.parametrize("keys", KEYS, ids=["one", "two", "three", "eight"])
def test_states_are_numpys_seed_sequence_states(entropy, keys):
    states = seeding.sfc64_states(entropy, np.array(keys))
    assert states.shape == (len(keys), 3) and states.dtype == np.uint64
    for state, key in zip(states, keys, strict=True):
        np.testing.assert_array_equal(state, _plain(entropy, key).generate_state(3, np.uint64))


@pytest.mark.parametrize("entropy", [3, 2**70 + 1])
def test_generators_draw_numpys_streams(entropy):
    keys = [(seed, 1) for seed in range(0, 3000, 7)]
    for fast, key in zip(seeding.sfc64_generators(entropy, keys), keys, strict=True):
        plain = np.random.SFC64(_plain(entropy, key))
        np.testing.assert_array_equal(fast.random_raw(5), plain.random_raw(5))


def test_keys_that_do_not_fit_are_seeded_the_plain_way():
    keys = [(2**32, 1), (5, 1)]  # a seed of two words: every key the plain way
    keys += [(2**70, 1), (3, 1, 4)]  # beyond 64 bits; another length
    for fast, key in zip(seeding.sfc64_generators(9, keys), keys, strict=True):
        assert fast.random_raw() == np.random.SFC64(_plain(9, key)).random_raw()
    with pytest.raises(ValueError):
        seeding.sfc64_generators(9, [(-1, 1)])
    assert seeding.sfc64_generators(9, []) == []


def test_a_ready_state_answers_other_requests_as_the_seed_sequence():
    state = seeding.sfc64_states(11, np.array([[4, 2]]))[0]
    ready = seeding._ReadyState(state, 11, (4, 2))
    assert ready.generate_state(3, np.uint64) is state
    np.testing.assert_array_equal(ready.generate_state(4), _plain(11, (4, 2)).generate_state(4))


def test_streams_seeded_together_are_the_streams_seeded_one_by_one():
    seeds = np.array([12, 0, 999, 5])
    for purpose, extra in (("flips", ()), ("match", ()), ("durations", (3,))):
        together = streams.bit_generators(7, seeds, purpose, *extra)
        for stream, seed in zip(together, seeds, strict=True):
            alone = streams.bit_generator(7, int(seed), purpose, *extra)
            np.testing.assert_array_equal(stream.random_raw(4), alone.random_raw(4))
    for gen, seed in zip(streams.generators(7, seeds, "workers"), seeds, strict=True):
        alone = streams.generator(7, int(seed), "workers")
        np.testing.assert_array_equal(gen.random(3), alone.random(3))
    with pytest.raises(ValueError, match="unknown random-stream purpose"):
        streams.bit_generators(7, seeds, "nonsense")
