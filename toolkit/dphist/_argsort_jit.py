"""The compiled loops of :func:`dphist.partition.packed_stable_argsort`: a stable argsort of float64 keys
by one ``numpy.sort`` of unsigned 64-bit words.

Each key is mapped to an unsigned word whose integer order is the float order (the usual bijection:
the sign bit set on a non-negative float, every bit flipped on a negative one; -0.0 first made 0.0,
which compares equal to it; every bit flipped again for a descending sort).  The word's low
``index_bits`` bits are replaced by the key's index, so one sort of the words orders the keys by their
high bits (the *prefix*) and, within a prefix, by index.  Keys whose prefixes differ are then in their
stable order; a run of equal prefixes holds keys that may differ in the dropped low bits, and is put
in the order of its full words by a stable sort of the run alone (its indices are already increasing,
so equal keys keep their index order): the permutation of ``np.argsort(keys, kind="stable")``.  A run
of keys that are all equal (integer-valued noise: many) is only read, not sorted.  NaN keys are
reported (``pack`` returns False) and left to numpy.

Imported on first use (numba stays out of ``import dphist``).
"""
import numpy as np
from numba import njit

_SIGN = np.uint64(1) << np.uint64(63)
_PACK_BLOCK = 1 << 14   #: keys packed between two checks for NaN


@njit(cache=True)
def _ordered(bits, descending):
    """The unsigned word of a float64's bits whose integer order is the floats' order (reversed for
    ``descending``); -0.0 and 0.0 give the same word."""
    if bits == _SIGN:
        bits = np.uint64(0)
    bits = ~bits if bits & _SIGN else bits | _SIGN
    return ~bits if descending else bits


@njit(cache=True, nogil=True)
def pack(keys, descending, index_bits, out):
    """``out[i]`` = the high bits of key ``i``'s ordered word with ``i`` in its low ``index_bits`` bits;
    False if a key is NaN (checked by blocks, without a branch in the loop that writes the words)."""
    bits = keys.view(np.uint64)
    low = (np.uint64(1) << np.uint64(index_bits)) - np.uint64(1)
    n = keys.size
    for start in range(0, n, _PACK_BLOCK):
        stop = min(start + _PACK_BLOCK, n)
        nan = False
        for i in range(start, stop):
            nan |= keys[i] != keys[i]
            out[i] = (_ordered(bits[i], descending) & ~low) | np.uint64(i)
        if nan:
            return False
    return True


@njit(cache=True, nogil=True)
def unpack(packed, keys, descending, index_bits):
    """The sorted words ``packed`` turned, in place, into the indices they carry (the same memory viewed as
    int64, returned); each run of equal prefixes re-ordered by its keys' full words, stably."""
    n = packed.size
    low = (np.uint64(1) << np.uint64(index_bits)) - np.uint64(1)
    bits = keys.view(np.uint64)
    out = packed.view(np.int64)
    if n == 0:
        return out
    start = 0
    prev = packed[0] & ~low
    out[0] = np.int64(packed[0] & low)
    for i in range(1, n + 1):
        if i < n:
            word = packed[i]
            prefix = word & ~low
            out[i] = np.int64(word & low)
            if prefix == prev:
                continue
            prev = prefix
        if i - start > 1:
            _order_run(out, bits, start, i - start, descending)
        start = i
    return out


@njit(cache=True, nogil=True)
def _order_run(out, bits, start, m, descending):
    """``out[start:start + m]``: indices in increasing order whose keys share a prefix, put in the order of
    their full words by a stable merge sort (equal words keep the index order); untouched when all are
    equal.  A bottom-up merge sort written out (numba's ``argsort`` costs seconds to compile)."""
    first = _ordered(bits[out[start]], descending)
    mixed = False
    for j in range(start + 1, start + m):
        if _ordered(bits[out[j]], descending) != first:
            mixed = True
            break
    if not mixed:
        return
    words = np.empty(m, np.uint64)
    index = np.empty(m, np.int64)
    for j in range(m):
        index[j] = out[start + j]
        words[j] = _ordered(bits[index[j]], descending)
    words2 = np.empty(m, np.uint64)
    index2 = np.empty(m, np.int64)
    width = 1
    while width < m:
        for lo in range(0, m, 2 * width):
            mid = min(lo + width, m)
            hi = min(lo + 2 * width, m)
            a, b = lo, mid
            for k in range(lo, hi):
                if a < mid and (b >= hi or words[a] <= words[b]):   # the left one first on ties: stable
                    words2[k], index2[k] = words[a], index[a]
                    a += 1
                else:
                    words2[k], index2[k] = words[b], index[b]
                    b += 1
        words, words2 = words2, words
        index, index2 = index2, index
        width *= 2
    for j in range(m):
        out[start + j] = index[j]
