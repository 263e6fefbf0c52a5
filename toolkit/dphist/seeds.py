"""The state words numpy's ``SeedSequence`` gives ``PCG64``, for many integer seeds at once.

A seeded run's noise generator is ``PCG64(SeedSequence(seed, spawn_key=(0,)))`` (:meth:`dphist.Pipeline.run`);
the auditor's release-mode runs use ``PCG64(SeedSequence(seed))``.  Building one sequence and hashing
its entropy pool costs about 28 us in numpy, a quarter of a small run, and an audit makes hundreds of
thousands of runs whose seeds it knows in advance.  :func:`pcg64_words` computes the same words for a
whole array of seeds in a few numpy passes; ``tests/test_seeds.py`` checks them against numpy's
``SeedSequence`` word for word, so the streams, and every release, are unchanged.

The hash is the one numpy documents for ``SeedSequence`` (after Melissa O'Neill's ``seed_seq`` design,
"Developing a seed_seq Alternative", pcg-random.org, 2015): the entropy (the seed's 32-bit words, low
word first, padded with zeros to the pool size of 4 when a spawn key follows, then the spawn key's words)
is hashed into a pool of four 32-bit words by ``hashmix`` and ``mix``, with a multiplier that advances
at every ``hashmix``; the state words are the pool's words in turn, hashed again with a second
multiplier.  The multipliers do not depend on the data, so every seed of the array is one lane.
"""
from __future__ import annotations

import numpy as np
from numpy.random.bit_generator import ISeedSequence

POOL_SIZE = 4
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_MASK = 0xFFFFFFFF
_SHIFT = np.uint32(16)


class _Multiplier:
    """The hash's running multiplier (a public sequence, the same for every seed)."""

    def __init__(self, start: int, step: int):
        self.value, self.step = start, step

    def hash(self, words: np.ndarray) -> np.ndarray:
        """``hashmix`` of every lane: xor with the multiplier, advance it, multiply, fold the high half."""
        out = words ^ np.uint32(self.value)
        self.value = (self.value * self.step) & _MASK
        out *= np.uint32(self.value)
        out ^= out >> _SHIFT
        return out


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y
    out ^= out >> _SHIFT
    return out


def _seed_array(seeds) -> np.ndarray:
    arr = np.asarray(seeds)
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise ValueError(f"seeds must be a 1-D array of integers, got {arr.dtype} of shape {arr.shape}")
    if arr.size and (arr.dtype.kind == "i" and arr.min() < 0):
        raise ValueError("seeds must be non-negative")
    return arr.astype(np.uint64, copy=False)


def pcg64_words(seeds, spawn_key: tuple[int, ...] = ()) -> np.ndarray:
    """``(len(seeds), 4)`` uint64: row ``i`` is ``SeedSequence(int(seeds[i]), spawn_key=spawn_key)
    .generate_state(4, numpy.uint64)``, what ``PCG64`` asks its seed sequence for.

    ``seeds``: non-negative integers below 2^64; ``spawn_key``: integers below 2^32 (the children of
    ``spawn`` have keys ``(0,)``, ``(1,)``, ...)."""
    s = _seed_array(seeds)
    if any(not 0 <= int(k) <= _MASK for k in spawn_key):
        raise ValueError(f"spawn key words must lie in [0, 2^32), got {spawn_key}")
    lanes = s.size
    entropy = [(s & np.uint64(_MASK)).astype(np.uint32), (s >> np.uint64(32)).astype(np.uint32)]
    # a seed's words are padded with zeros to the pool size (numpy pads only before a spawn key, but a
    # missing pool word is hashed as a zero either way); the spawn key's words follow
    entropy += [np.zeros(lanes, np.uint32)] * (POOL_SIZE - 2)
    extra = [np.full(lanes, k, np.uint32) for k in spawn_key]

    mult = _Multiplier(_INIT_A, _MULT_A)
    pool = [mult.hash(entropy[i]) for i in range(POOL_SIZE)]
    for src in range(POOL_SIZE):
        for dst in range(POOL_SIZE):
            if src != dst:
                pool[dst] = _mix(pool[dst], mult.hash(pool[src]))
    for word in extra:
        for dst in range(POOL_SIZE):
            pool[dst] = _mix(pool[dst], mult.hash(word))

    out = _Multiplier(_INIT_B, _MULT_B)
    halves = np.empty((lanes, 2 * POOL_SIZE), dtype=np.uint32)
    for i in range(2 * POOL_SIZE):      # 8 32-bit words, the pool's in turn; two make a 64-bit word
        halves[:, i] = out.hash(pool[i % POOL_SIZE])
    return halves[:, 0::2].astype(np.uint64) | (halves[:, 1::2].astype(np.uint64) << np.uint64(32))


class SeedWords(ISeedSequence):
    """``SeedSequence(seed, spawn_key=spawn_key)`` as a bit generator reads it: the four 64-bit words ``PCG64``
    asks for, hashed once (or given: a row of :func:`pcg64_words`), any other request answered by the
    sequence itself.  ``PCG64(SeedWords(...))`` starts in the very state ``PCG64(SeedSequence(...))`` does
    (``tests/test_seeds.py``).  Immutable, so runs of one seed may share it."""

    __slots__ = ("seed", "spawn_key", "_words")

    def __init__(self, seed: int, spawn_key: tuple[int, ...] = (), words: np.ndarray | None = None):
        self.seed, self.spawn_key = seed, spawn_key
        if words is None:
            words = self._sequence().generate_state(4, np.uint64)
            words.setflags(write=False)
        elif words.flags.writeable:
            words = words.copy()
            words.setflags(write=False)
        self._words = words

    def _sequence(self) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.seed, spawn_key=self.spawn_key)

    def generate_state(self, n_words, dtype=np.uint32):
        if n_words == 4 and (dtype is np.uint64 or np.dtype(dtype) == np.uint64):   # PCG64's request
            return self._words
        return self._sequence().generate_state(n_words, dtype)


def generators(seeds, spawn_key: tuple[int, ...] = ()):
    """``numpy.random.Generator(PCG64(SeedSequence(s, spawn_key=spawn_key)))`` for each seed ``s`` in turn
    (``numpy.random.default_rng(s)`` when the key is empty), the sequences hashed all at once."""
    words = pcg64_words(seeds, spawn_key)
    words.setflags(write=False)
    for seed, row in zip(np.asarray(seeds).tolist(), words):
        yield np.random.Generator(np.random.PCG64(SeedWords(seed, spawn_key, row)))
