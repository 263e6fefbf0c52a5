"""The compiled loops of :mod:`dphist.kernel.exact` (CKS 2020, Algorithms 1 and 2).

Imported lazily, on the first release-mode draw, so that ``import dphist``
does not pay for numba.  Every function reads bits from ``words`` at position
``st[0]`` and returns -1 when the buffer runs out (the caller refills and
redoes the draw from its first bit; see :mod:`dphist.kernel.exact`).
"""
import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import overload

from . import _exact_loop


@njit(cache=True)
def bit(words, st):
    p = st[0]
    if p >= words.size * 64:
        return -1
    st[0] = p + 1
    return np.int64((words[p >> 6] >> np.uint64(p & 63)) & np.uint64(1))

@njit(cache=True)
def bernoulli_rational(a, b, words, st):
    # U < a/b for U = 0.u1u2... uniform: compare bit by bit with a/b's expansion
    r = a
    while True:
        r = 2 * r
        pb = 1 if r >= b else 0
        if pb == 1:
            r -= b
        u = bit(words, st)
        if u < 0:
            return -1
        if u != pb:
            return pb

@njit(cache=True)
def bernoulli_exp_unit(a, b, words, st):
    # CKS Algorithm 1, gamma = a/b in [0, 1]: K odd where K is the first failure
    k = 1
    while True:
        x = bernoulli_rational(a, b * k, words, st)
        if x < 0:
            return -1
        if x == 0:
            return k % 2
        k += 1

@njit(cache=True)
def bernoulli_exp(a, b, words, st):
    # gamma = a/b >= 0: floor(gamma) factors exp(-1), then exp(-frac); stop at a failure
    whole = a // b
    x = bernoulli_exp_unit(a - whole * b, b, words, st)
    if x <= 0:
        return x
    for _ in range(whole):
        x = bernoulli_exp_unit(1, 1, words, st)
        if x <= 0:
            return x
    return 1

@njit(cache=True)
def chunk(words, st, n):
    # the next n <= 62 bits as an integer (least significant first)
    p = st[0]
    if p + n > words.size * 64:
        return -1
    st[0] = p + n
    w, o = p >> 6, p & 63
    v = words[w] >> np.uint64(o)
    if o + n > 64:
        v |= words[w + 1] << np.uint64(64 - o)
    return np.int64(v & ((np.uint64(1) << np.uint64(n)) - np.uint64(1)))

@njit(cache=True)
def uniform_below(t, words, st):
    # rejection from the smallest power of two >= t (fewer than 2 tries expected)
    nbits = 0
    while (np.int64(1) << nbits) < t:
        nbits += 1
    if nbits == 0:
        return 0
    while True:
        v = chunk(words, st, nbits)
        if v < t:
            return v

# CKS Algorithm 2 in one loop: the source is :mod:`._exact_loop` (also run interpreted); its bit readers,
# typed here for uint64 words (numba would mix uint64 and int64 into floats).
@overload(_exact_loop.read_bit, inline="always")
def _read_bit(words, pos):
    return lambda words, pos: np.int64((words[pos >> 6] >> np.uint64(pos & 63)) & np.uint64(1))


@overload(_exact_loop.read_bits, inline="always")
def _read_bits(words, pos, n):
    # without a branch (a branch here trips numba's SSA check when inlined): the next word, or the last one
    # at the buffer's end, shifted in two steps (no shift by 64 when o = 0); its bits land at n and above
    # whenever o + n <= 64, where the mask drops them
    def impl(words, pos, n):
        w = pos >> 6
        o = np.uint64(pos & 63)
        low = words[w] >> o
        high = (words[min(w + 1, words.size - 1)] << (np.uint64(63) - o)) << np.uint64(1)
        return np.int64((low | high) & ((np.uint64(1) << np.uint64(n)) - np.uint64(1)))
    return impl


@overload(_exact_loop.expansion_bit, inline="always")
def _expansion_bit(e1, j):
    return lambda e1, j: np.int64((e1[j >> 6] >> np.uint64(63 - (j & 63))) & np.uint64(1))


@overload(_exact_loop.reverse8, inline="always")
def _reverse8(q):
    return lambda q: ((q * 0x0202020202) & 0x010884422010) % 1023


@overload(_exact_loop.expansion_byte, inline="always")
def _expansion_byte(e1, j):
    def impl(e1, j):
        q = np.int64((e1[j >> 6] >> np.uint64(56 - (j & 63))) & np.uint64(255))
        return ((q * 0x0202020202) & 0x010884422010) % 1023
    return impl


@overload(_exact_loop.first_difference, inline="always")
def _first_difference(diff):
    return lambda diff: np.int64(trailing_zeros(diff)) + 1


@overload(_exact_loop.chunk_difference, inline="always")
def _chunk_difference(words, pos, digits):
    return _exact_loop.chunk_difference     # the same source, on the typed readers above


@overload(_exact_loop.table_entry, inline="always")
def _table_entry(table, pattern):
    return lambda table, pattern: np.int64(table[pattern])


#: numba's cache of it is keyed to the content of ``_exact_loop.py`` alone: after changing the overloads above
#: or the compile options (``nogil``: release mode's threads), change that file or empty the cache
#: (``dphist.cache.numba_cache_dir()``)
discrete_laplace_fill = njit(cache=True, nogil=True)(_exact_loop.discrete_laplace_fill)


@njit(cache=True)
def exponential_draw(gamma, den, words, st):
    begin = st[0]
    m = gamma.size
    while True:
        i = uniform_below(m, words, st)
        if i < 0:
            st[0] = begin
            return -1
        x = bernoulli_exp(gamma[i], den, words, st)
        if x < 0:
            st[0] = begin
            return -1
        if x == 1:
            return i



@njit(cache=True)
def draw_table(t, s, e1, kbits):
    """For every pattern ``p`` of ``kbits`` bits (first bit = least significant): ``draw * 256 + bits read``
    of :func:`discrete_laplace_fill` on a stream starting with ``p``, when it reads at most ``kbits`` bits
    (and ``|draw| < 2^23``), else 0 (not in the table).

    Computed by the sampler itself on a one-word stream whose first ``kbits`` bits are ``p``: a draw that
    stops within them never saw the rest, so the table entry is exactly what the loop returns.
    """
    n = 1 << kbits
    table = np.zeros(n, dtype=np.int32)
    buf = np.zeros(1, dtype=np.uint64)
    one = np.zeros(1, dtype=np.int64)
    st = np.zeros(1, dtype=np.int64)
    no_table = np.zeros(0, dtype=np.int32)
    for p in range(n):
        buf[0] = np.uint64(p)
        st[0] = 0
        if (discrete_laplace_fill(one, 0, t, s, buf, st, e1, no_table, 0) == 1 and st[0] <= kbits
                and abs(one[0]) < (1 << 23)):
            table[p] = one[0] * 256 + st[0]
    return table


# the split sampler (release mode): plain functions of :mod:`._exact_loop`, compiled here from the same source
@overload(_exact_loop.bernoulli_expansion)
def _bernoulli_expansion(e, j, nd, words, pos, total):
    return _exact_loop.bernoulli_expansion


@overload(_exact_loop.split_attempt)
def _split_attempt(j, widths, offsets, ex, nd, words, pos, total):
    return _exact_loop.split_attempt


@overload(_exact_loop.split_fill)
def _split_fill(out, start, k, widths, shifts, offsets, ex, nd, words, st, tables, kbits, draws, dbits):
    return _exact_loop.split_fill


@overload(_exact_loop.split_entry1, inline="always")
def _split_entry1(draws, pattern):
    return lambda draws, pattern: np.int64(draws[pattern])


@overload(_exact_loop.split_entry, inline="always")
def _split_entry(tables, j, pattern):
    return lambda tables, j, pattern: np.int64(tables[j, pattern])


#: numba's caches of these are keyed to the content of ``_exact_loop.py`` (their source), which holds every
#: function they call (a compiled function of this file calling ``_exact_loop`` would keep a stale cache when
#: only ``_exact_loop.py`` changes)
split_fill = njit(cache=True, nogil=True)(_exact_loop.split_fill)
split_tables = njit(cache=True)(_exact_loop.split_tables)
