"""``dphist.seeds``: numpy's SeedSequence hash for many seeds at once, word for word, and the runs that use it
(the auditor's looped samples) unchanged."""
from __future__ import annotations

import numpy as np
import pytest

from dphist import make_algorithm
from dphist import pipeline as pipeline_module
from dphist.seeds import SeedWords, generators, pcg64_words

EDGES = [0, 1, 2, 0xFFFFFFFF, 1 << 32, (1 << 32) + 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]


def _seeds():
    rng = np.random.default_rng(20261127)
    return np.concatenate([np.array(EDGES, dtype=np.uint64),
                           rng.integers(0, 1 << 32, 300, dtype=np.uint64),            # one 32-bit word
                           rng.integers(0, np.iinfo(np.uint64).max, 300, dtype=np.uint64, endpoint=True)])


@pytest.mark.parametrize("spawn_key", [(), (0,), (1,), (7, 0xFFFFFFFF)], ids=repr)
def test_words_equal_numpys_seed_sequence(spawn_key):
    """Kills: a multiplier not advanced at every hash, the pool mixed in another order, the spawn key's
    words hashed into the pool as seed words (keys () and (0,) would agree), the 32-bit halves swapped,
    the high word of a seed dropped (the seeds above 2^32 differ)."""
    seeds = _seeds()
    expected = np.array([np.random.SeedSequence(int(s), spawn_key=spawn_key).generate_state(4, np.uint64)
                         for s in seeds])
    np.testing.assert_array_equal(pcg64_words(seeds, spawn_key), expected)


def test_generators_are_default_rng_of_each_seed():
    seeds = _seeds()[:40]
    for seed, rng in zip(seeds.tolist(), generators(seeds)):
        assert rng.bit_generator.state == np.random.default_rng(seed).bit_generator.state


def test_seed_words_start_pcg64_where_the_sequence_does_and_answer_other_requests():
    seq = np.random.SeedSequence(99, spawn_key=(0,))
    words = SeedWords(99, (0,))
    assert np.random.PCG64(words).state == np.random.PCG64(seq).state
    np.testing.assert_array_equal(words.generate_state(3), seq.generate_state(3))
    given = pcg64_words([99], (0,))[0]                  # writeable: kept as an immutable copy
    kept = SeedWords(99, (0,), given)
    given[:] = 0
    assert np.random.PCG64(kept).state == np.random.PCG64(seq).state


@pytest.mark.parametrize("seeds, message", [(np.array([1.5]), "integers"), (np.array([[1]]), "1-D"),
                                            (np.array([-1]), "non-negative")])
def test_bad_seeds_are_refused(seeds, message):
    with pytest.raises(ValueError, match=message):
        pcg64_words(seeds)


def test_priming_refuses_bad_seeds_and_keeps_the_previous_table():
    """Kills: negative seeds wrapped silently to 2^64 - 1 by a uint64 cast (their runs would draw from
    another stream than the one their seed names)."""
    pipeline_module.prime_seeds(np.array([5], dtype=np.uint64))
    try:
        with pytest.raises(ValueError, match="non-negative"):
            pipeline_module.prime_seeds(np.array([-1, 3]))
        assert list(pipeline_module._PRIMED[0]) == [5]
    finally:
        pipeline_module.prime_seeds(())


def test_bad_spawn_keys_are_refused():
    with pytest.raises(ValueError, match="spawn key"):
        pcg64_words([1], (1 << 32,))


@pytest.mark.parametrize("name", ["identity", "H", "AHP"])
def test_primed_seeds_give_the_same_releases(name):
    """The auditor primes a sample's seeds before its runs.  Kills: primed words taken from the wrong row
    (a shifted index), or computed for another spawn key than the noise stream's."""
    counts = np.random.default_rng(3).poisson(5, 64)
    seeds = np.random.SeedSequence(4).generate_state(6, np.uint64)
    pipe = make_algorithm(name)
    pipeline_module.prime_seeds(())
    plain = [pipe.run(counts, 1.0, seed=s).estimate for s in seeds.tolist()]
    exact = [pipe.run(counts, 1.0, seed=s, noise="exact").estimate for s in seeds.tolist()]
    pipeline_module.prime_seeds(seeds)
    try:
        assert set(seeds.tolist()) <= set(pipeline_module._PRIMED[0])
        for s, expected, expected_exact in zip(seeds.tolist(), plain, exact):
            np.testing.assert_array_equal(pipe.run(counts, 1.0, seed=s).estimate, expected)
            np.testing.assert_array_equal(pipe.run(counts, 1.0, seed=s, noise="exact").estimate, expected_exact)
    finally:
        pipeline_module.prime_seeds(())
