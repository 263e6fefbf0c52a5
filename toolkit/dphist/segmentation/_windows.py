"""Compiled loops of the power-of-two search streamed by blocks of ends, and the L1 deviations of its
windows counted over distinct integer values (imported on first use: numba is loaded by the search).

**Windows by counting.**  The unit-weight L1 deviation of a group with exact integer sums is
``(m c - s) + ((S - s) - m (N - c))`` with ``N`` bins, total ``S``, mean ``m = S / N`` and ``c``, ``s``
the count and sum of its values ``<= m`` (:func:`.kernels._deviation`, where a Fenwick tree over the
ranks gives ``c`` and ``s``).  Here a window of one length slides over the units keeping, per distinct
value, how many of its bins hold it (``mult``), and a pointer ``p`` at the first distinct value above
the mean with ``c``, ``s`` of the values before it.  A unit entering or leaving moves ``c``, ``s`` when
its values lie below the pointer; the pointer then walks to the new mean, one distinct value a step
(the mean moves by ``(x_in - x_out) / N``: for integers a step passes at most ``|shift| + 1`` distinct
values).  Every sum is an exact integer below ``2**53`` (the caller checks), so ``c``, ``s``, ``S``,
``N`` and ``m`` are the Fenwick route's, and the deviation is bit-identical.  A window of at most
``DIRECT_BINS`` bins is counted directly (its values scanned twice) and keeps no state.

**Streamed search.**  :func:`power_of_two_block` is :func:`.kernels.power_of_two_lengths` on the ends
``[e0, e1)`` with the windows given by their end (``W[j, e - e0]``: units ``[e - 2^j, e)``): the same
candidates, in the same order, with the same comparison, so the same ``best`` and ``back``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: windows of at most this many bins are counted directly, without a sliding state
DIRECT_BINS = 16


@njit(cache=True, nogil=True, inline="always")
def _direct(values, a, b):
    """The deviation of bins ``[a, b)`` counted directly (the same c, s, N, S, mean and formula)."""
    n_in = 0.0
    tot = 0.0
    for q in range(a, b):
        n_in += 1.0
        tot += values[q]
    mean = tot / n_in
    c = 0.0
    s = 0.0
    for q in range(a, b):
        if values[q] <= mean:
            c += 1.0
            s += values[q]
    dev = (mean * c - s) + ((tot - s) - mean * (n_in - c))
    return dev if dev > 0.0 else 0.0


@njit(cache=True, nogil=True)
def count_windows_block(node, dv, values, bounds, lengths, direct, slot, mult, ptrs, accs, ends, e0, e1, out):
    """``out[j, e - e0]`` = L1 deviation of units ``[e - lengths[j], e)`` for the ends ``e0 <= e < e1``
    (``inf`` where ``e < lengths[j]``).  Window ``j`` slides from its last end ``ends[j]`` (its state:
    ``mult[slot[j]]``, ``ptrs[j]``, ``accs[j]``), unless ``direct[j]`` (counted directly, no state)."""
    for j in range(lengths.size):
        L = lengths[j]
        if direct[j]:
            for e in range(e0, e1):
                out[j, e - e0] = _direct(values, bounds[e - L], bounds[e]) if e >= L else np.inf
            continue
        m = mult[slot[j]]
        ptr = ptrs[j]
        c = accs[j, 0]                                    # count and sum of the values below the pointer
        s = accs[j, 1]
        n_in = accs[j, 2]                                 # count and sum of the window's values
        tot = accs[j, 3]
        e = ends[j]
        top = dv.size
        while e < e1 - 1:                                 # the window ending at e + 1 next
            for q in range(bounds[e], bounds[e + 1]):     # unit e enters
                d = node[q]
                m[d] += 1
                n_in += 1.0
                tot += values[q]
                below = 1.0 if d < ptr else 0.0          # branch-free (adding 0 leaves a sum exact)
                c += below
                s += below * dv[d]
            if e - L >= 0:                                # unit e - L leaves
                for q in range(bounds[e - L], bounds[e - L + 1]):
                    d = node[q]
                    m[d] -= 1
                    n_in -= 1.0
                    tot -= values[q]
                    below = 1.0 if d < ptr else 0.0
                    c -= below
                    s -= below * dv[d]
            e += 1
            if e < e0:
                continue
            if e < L:
                out[j, e - e0] = np.inf
                continue
            mean = tot / n_in
            while ptr < top and dv[ptr] <= mean:          # the pointer to the first value above the mean
                c += m[ptr]
                s += m[ptr] * dv[ptr]
                ptr += 1
            while ptr > 0 and dv[ptr - 1] > mean:
                ptr -= 1
                c -= m[ptr]
                s -= m[ptr] * dv[ptr]
            dev = (mean * c - s) + ((tot - s) - mean * (n_in - c))
            out[j, e - e0] = dev if dev > 0.0 else 0.0
        accs[j, 0] = c
        accs[j, 1] = s
        accs[j, 2] = n_in
        accs[j, 3] = tot
        ptrs[j] = ptr
        ends[j] = e


@njit(cache=True, nogil=True)
def offset_windows(W, bounds, minus, plus, e0, e1, out):
    """``out[j, e - e0] = (W[j, e - e0] - minus[size]) + plus`` (``size``: the positions of units
    ``[e - 2^j, e)``; a cost transform's own arithmetic, :func:`search.power_of_two_shared`), ``inf``
    where ``e < 2^j``.  Never ``-0.0`` (a deviation is ``+0.0`` or more), so adding zeros later is exact."""
    for j in range(W.shape[0]):
        L = 1 << j
        for e in range(e0, e1):
            if e < L:
                out[j, e - e0] = np.inf
            else:
                out[j, e - e0] = (W[j, e - e0] - minus[bounds[e] - bounds[e - L]]) + plus


@njit(cache=True, nogil=True)
def power_of_two_block(best, back_j, W, minus_j, plus, e0, e1, longest):
    """:func:`.kernels.power_of_two_lengths` on the ends ``[e0, e1)`` (``e0 >= 1``; ``best`` final below
    ``e0``), the windows by end: units ``[e - 2^j, e)`` cost ``(W[j, e - e0] - minus_j[j]) + plus``
    (every unit one position: ``minus_j[j] = minus[2^j]``, the transform's two operations on the same
    numbers; other units: ``W`` already offset by :func:`offset_windows`, zeros here).  The same
    candidates in the same order with the same comparison; ``back_j[e]`` = the ``j`` of the last group."""
    for e in range(e0, e1):
        top = np.inf
        arg = 0
        top_j = 0
        while (2 << top_j) <= e:
            top_j += 1
        row = e - e0
        if longest:
            for j in range(top_j, -1, -1):
                c = best[e - (1 << j)] + ((W[j, row] - minus_j[j]) + plus)
                if c < top:
                    top = c
                    arg = j
        else:
            for j in range(top_j + 1):
                c = best[e - (1 << j)] + ((W[j, row] - minus_j[j]) + plus)
                if c < top:
                    top = c
                    arg = j
        best[e] = top
        back_j[e] = arg


@njit(cache=True, nogil=True)
def trace_power_of_two(back_j, k):
    """The unit bounds of the best segmentation from ``back_j`` (the last group of units ``[0, e)`` has
    ``2^back_j[e]`` units), in increasing order."""
    n = 1
    e = k
    while e > 0:
        e -= 1 << back_j[e]
        n += 1
    out = np.empty(n, dtype=np.int64)
    e = k
    for i in range(n - 1, -1, -1):
        out[i] = e
        if e > 0:
            e -= 1 << back_j[e]
    return out


def distinct_values(values):
    """The sorted distinct values and each position's index among them (the narrowest integer type)."""
    dv = np.unique(values)
    width = np.int16 if dv.size < 2 ** 15 else (np.int32 if dv.size < 2 ** 31 else np.int64)
    return dv, np.searchsorted(dv, values).astype(width)


class CountingWindows:
    """The L1 deviations of windows of ``lengths`` units (integers, unit weights, exact sums), block by
    block of ends in increasing order (``block(e0, e1)``, each block starting where the last ended)."""

    def __init__(self, values, bounds, lengths, distinct=None):
        self.values = values
        self.bounds = np.ascontiguousarray(bounds, dtype=np.int64)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        k = self.bounds.size - 1
        if self.bounds[-1] == k:                          # every unit one position: a window of L holds L
            widest = self.lengths
        else:
            widest = np.array([int(np.max(self.bounds[L:] - self.bounds[:-L])) if L <= k else 0
                               for L in self.lengths])
        self.direct = widest <= DIRECT_BINS
        sliding = int(np.count_nonzero(~self.direct))
        if sliding:
            self.dv, self.node = distinct_values(values) if distinct is None else distinct()
        else:
            self.dv, self.node = np.zeros(1), np.zeros(1, dtype=np.int32)
        # multiplicities per distinct value, one row per sliding length (int32: a window holds < 2^31 bins)
        self.slot = np.maximum(np.cumsum(~self.direct) - 1, 0)
        self.mult = np.zeros((max(sliding, 1), self.dv.size), dtype=np.int32)
        self.ptrs = np.zeros(self.lengths.size, dtype=np.int64)
        self.accs = np.zeros((self.lengths.size, 4))
        self.ends = np.zeros(self.lengths.size, dtype=np.int64)

    def block(self, e0: int, e1: int, out=None) -> np.ndarray:
        if np.any(self.ends[~self.direct] >= e0):
            raise ValueError("CountingWindows: blocks of ends must come in increasing order")
        out = np.empty((self.lengths.size, e1 - e0)) if out is None else out
        count_windows_block(self.node, self.dv, self.values, self.bounds, self.lengths, self.direct, self.slot,
                            self.mult, self.ptrs, self.accs, self.ends, e0, e1, out)
        return out
