"""Compiled loops of the dawa plugin (imported on first use): DAWA's partition cost of many candidates.

numpy's float sums are pairwise (``add.reduce``: below 8 terms a running sum from 0; up to 128 eight
running sums combined as ``((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))`` and the remainder
added; beyond, the halves (rounded down to a multiple of 8) summed apart and added), and
``add.reduceat`` adds a segment's first value to the pairwise sum of the others.
:func:`pairwise_sum` follows that order, so the costs below are numpy's bit for bit
(``plugins/dawa/tests/test_dawa.py`` checks it against numpy on every size up to 300 and beyond).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _block_sum(a, lo, n):
    """numpy's pairwise sum of at most 128 values: a running sum below 8, else eight running sums."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    stop = n - n % 8
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, nogil=True)
def pairwise_sum(a, lo, n):
    """``numpy.add.reduce(a[lo:lo + n])`` of a contiguous float64 array, in numpy's order: above 128
    values the two halves (the first rounded down to a multiple of 8) summed apart, then added."""
    if n <= 128:
        return _block_sum(a, lo, n)
    return _pairwise_on(a, lo, n, np.empty((4, 128), dtype=np.int64), np.empty(128))


@njit(cache=True, nogil=True)
def _pairwise_on(a, lo, n, stack, vals):
    """:func:`pairwise_sum` of more than 128 values with its stack given (``stack``: 4 x 128 integers,
    ``vals``: 128 floats; reused by the caller).  The recursion runs on this explicit stack (numba's
    cached recursive functions are not reliable)."""
    los = stack[0]
    ns = stack[1]
    phase = stack[2]
    phase[0] = 0
    top = 0
    los[0] = lo
    ns[0] = n
    nv = 0
    while top >= 0:
        m = ns[top]
        if m <= 128:
            vals[nv] = _block_sum(a, los[top], m)
            nv += 1
            top -= 1
            continue
        half = m // 2
        half -= half % 8
        if phase[top] == 0:                  # the first half next
            phase[top] = 1
            los[top + 1] = los[top]
            ns[top + 1] = half
            phase[top + 1] = 0
            top += 1
        elif phase[top] == 1:                # then the second
            phase[top] = 2
            los[top + 1] = los[top] + half
            ns[top + 1] = m - half
            phase[top + 1] = 0
            top += 1
        else:                                # both done: first + second
            vals[nv - 2] = vals[nv - 2] + vals[nv - 1]
            nv -= 1
            top -= 1
    return vals[0]


@njit(cache=True, nogil=True)
def partition_deviation(x, bounds, scratch):
    """``numpy.abs(x - numpy.repeat(means, sizes)).sum()`` with ``means = numpy.add.reduceat(x,
    bounds[:-1]) / sizes``: the L1 deviation of ``x`` from its group means, in numpy's order
    (``scratch``: one float per value).  A group's total is its first value plus numpy's sum of the
    others: below 8 of them a running sum from 0, written out here (no call per small group); the
    pairwise sums' stack is made once per call."""
    stack = np.empty((4, 128), dtype=np.int64)
    vals = np.empty(128)
    for g in range(bounds.size - 1):
        a = bounds[g]
        b = bounds[g + 1]
        m = b - a
        if m == 1:
            total = x[a]
        elif m <= 8:
            rest = 0.0
            for i in range(a + 1, b):
                rest += x[i]
            total = x[a] + rest
        elif m <= 129:
            total = x[a] + _block_sum(x, a + 1, m - 1)
        else:
            total = x[a] + _pairwise_on(x, a + 1, m - 1, stack, vals)
        mean = total / m
        for i in range(a, b):
            scratch[i] = abs(x[i] - mean)
    if x.size <= 128:
        return _block_sum(scratch, 0, x.size)
    return _pairwise_on(scratch, 0, x.size, stack, vals)


@njit(cache=True, nogil=True)
def debiased_table(n, scale, correction):
    """``concatenate(([0.0], correction * noise_deviation(arange(1, n + 1), scale)))`` in one pass: per
    length the same three IEEE operations on the same operands as numpy's (``scale * (L - 1 / L)``, then
    times ``correction``), so the same table, bit for bit."""
    out = np.empty(n + 1)
    out[0] = 0.0
    for i in range(1, n + 1):
        f = float(i)
        out[i] = correction * (scale * (f - 1.0 / f))
    return out
