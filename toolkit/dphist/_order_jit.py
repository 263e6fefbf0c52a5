"""Compiled gathers and scatters through an order, one block of positions at a time: the loops behind
:func:`dphist.partition.gather_run` and :func:`dphist.partition.scatter_run`.

A block read or written through a permutation of millions of bins is one cache miss per entry.  A plain
compiled loop keeps many of those misses in flight (each iteration is a few instructions, so the
processor runs far ahead) and does less per entry than numpy's fancy indexing; a loop that also
computes on each value (a running sum, a Laplace draw) runs ahead by fewer entries, so the callers
gather a block into a reused buffer here, compute on it in order, and scatter it back here
(``benchmarks/bench_order.py`` times the gather against numpy's indexing of the same blocks).

Each index is checked against the array (a negative or too large index stops the loop and is
reported), since numba reads without bounds checks.  Imported on first use (numba stays out of
``import dphist``).
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def take_into(values, order, start, out):
    """``out[k] = values[order[start + k]]`` for every ``k``; the first ``k`` whose index is outside ``values``
    (nothing read there, ``out`` written up to it), or -1."""
    n = values.size
    for k in range(out.size):
        j = order[start + k]
        if j < 0 or j >= n:
            return k
        out[k] = values[j]
    return -1


@njit(cache=True, nogil=True)
def put_into(block, order, start, out):
    """``out[order[start + k]] = block[k]`` for every ``k``; the first ``k`` whose index is outside ``out``
    (nothing written there, the entries before it written), or -1."""
    n = out.size
    for k in range(block.size):
        j = order[start + k]
        if j < 0 or j >= n:
            return k
        out[j] = block[k]
    return -1


@njit(cache=True, nogil=True)
def is_permutation_bits(order, n):
    """Whether the int64 ``order`` lists every integer in ``range(n)`` exactly once: one pass that sets a bit
    per value in a bitmap of ``n`` bits and stops at a value out of range or seen before (``n`` values,
    all in range and none twice, are every value, by pigeonhole).  The bitmap is an eighth of a byte per
    bin, so its random writes stay in cache where a byte per bin no longer does (2 MiB at 2^24 bins)."""
    if order.size != n:
        return False
    words = np.zeros((n + 63) >> 6, np.uint64)
    one = np.uint64(1)
    for i in range(n):
        j = order[i]
        if j < 0 or j >= n:
            return False
        w = j >> 6
        bit = one << np.uint64(j & 63)
        if words[w] & bit:
            return False
        words[w] |= bit
    return True
