"""L1 deviations of buckets, computed fast.

DAWA (Li et al. 2014, Section 3.1) measures how badly a bucket ``b`` is
summarised by its mean with the *deviation*

    dev(x, b) = sum_{i in b} |x_i - mean_b(x)|.

Splitting the bins of ``b`` at the mean ``m`` turns it into order statistics:
with ``c`` and ``s`` the count and sum of the values ``<= m`` and ``C``, ``S``
those of the whole bucket,

    dev = (m c - s) + ((S - s) - m (C - c)).

``c`` and ``s`` over a sliding or growing window come from a Fenwick tree
indexed by each bin's rank in the sorted values (O(log n) per insert, delete
and query), so

* all buckets starting at one unit (the exact DP's rows): O(n log n) per row;
* all windows of one length (the power-of-two variant): O(n log n) per length;
* disjoint buckets (one level of a tree): O(n) with segment sums.

A *unit* is a group of the input partition (a bin when the groups are
singletons): buckets are runs of consecutive units, ``bounds`` gives the
units' first positions.  Everything here is plain arithmetic on the values it
is given; the kernel (:class:`~dphist_dawa.l1_partition.NoisyL1Partition`)
decides what those values are.
"""
from __future__ import annotations

import numpy as np
from numba import njit


def deviation_direct(values: np.ndarray, start: int, end: int) -> float:
    """``dev`` of positions ``[start, end)`` by definition (reference for tests)."""
    seg = np.asarray(values[start:end], dtype=float)
    return float(np.abs(seg - seg.mean()).sum()) if seg.size else 0.0


def rank_structure(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based rank of every position (ties broken by position) and the sorted values."""
    order = np.argsort(values, kind="stable")
    rank = np.empty(values.size, dtype=np.int64)
    rank[order] = np.arange(1, values.size + 1)
    return rank, values[order].astype(np.float64)


@njit(cache=True, nogil=True)
def _fenwick_update(count, total, pos, value, sign):
    n = count.size - 1
    while pos <= n:
        count[pos] += sign
        total[pos] += sign * value
        pos += pos & -pos


@njit(cache=True, nogil=True)
def _deviation_from_tree(count, total, sorted_values, mean, n_in, sum_in):
    # c, s: count and sum of window values <= mean (ranks 1..r are the values <= mean)
    pos = np.searchsorted(sorted_values, mean, side="right")
    c = 0
    s = 0.0
    while pos > 0:
        c += count[pos]
        s += total[pos]
        pos -= pos & -pos
    dev = (mean * c - s) + ((sum_in - s) - mean * (n_in - c))
    return dev if dev > 0.0 else 0.0  # rounding can leave -1e-12 for a constant bucket


@njit(cache=True, nogil=True)
def deviations_from(values, rank, sorted_values, bounds, first_unit, count, total, out):
    """``out[j] = dev`` of units ``first_unit .. first_unit + j`` for every ``j``.

    ``count`` and ``total`` are scratch Fenwick arrays of length ``n + 1``
    (reset here).  O(n log n).
    """
    count[:] = 0
    total[:] = 0.0
    k = bounds.size - 1
    n_in = 0
    sum_in = 0.0
    for j in range(k - first_unit):
        u = first_unit + j
        for p in range(bounds[u], bounds[u + 1]):
            _fenwick_update(count, total, rank[p], values[p], 1)
            n_in += 1
            sum_in += values[p]
        out[j] = _deviation_from_tree(count, total, sorted_values, sum_in / n_in, n_in, sum_in)


@njit(cache=True, nogil=True)
def deviations_of_length(values, rank, sorted_values, bounds, length, out):
    """``out[a] = dev`` of units ``a .. a + length - 1`` for every window start ``a``.

    A sliding window over units: each bin enters and leaves the Fenwick tree
    once, O(n log n) per length.
    """
    n = values.size
    k = bounds.size - 1
    count = np.zeros(n + 1, dtype=np.int64)
    total = np.zeros(n + 1, dtype=np.float64)
    n_in = 0
    sum_in = 0.0
    for u in range(length - 1):
        for p in range(bounds[u], bounds[u + 1]):
            _fenwick_update(count, total, rank[p], values[p], 1)
            n_in += 1
            sum_in += values[p]
    for a in range(k - length + 1):
        u = a + length - 1
        for p in range(bounds[u], bounds[u + 1]):
            _fenwick_update(count, total, rank[p], values[p], 1)
            n_in += 1
            sum_in += values[p]
        out[a] = _deviation_from_tree(count, total, sorted_values, sum_in / n_in, n_in, sum_in)
        for p in range(bounds[a], bounds[a + 1]):
            _fenwick_update(count, total, rank[p], values[p], -1)
            n_in -= 1
            sum_in -= values[p]


def deviations_disjoint(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``dev`` of disjoint, sorted, non-empty position ranges ``[starts, ends)`` (O(n), numpy)."""
    values = np.asarray(values, dtype=float)
    sizes = ends - starts
    # lay the ranges side by side (they may leave gaps); segment sums by reduceat
    idx = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes) + np.arange(sizes.sum())
    seg = values[idx]
    heads = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    means = np.add.reduceat(seg, heads) / sizes
    return np.add.reduceat(np.abs(seg - np.repeat(means, sizes)), heads)


def all_deviations(values: np.ndarray, bounds: np.ndarray | None = None) -> np.ndarray:
    """Dense ``dev[a, b]`` of units ``a..b-1`` (upper triangle; for tests and small n only)."""
    values = np.asarray(values, dtype=np.float64)
    bounds = np.arange(values.size + 1) if bounds is None else np.asarray(bounds, dtype=np.int64)
    k = bounds.size - 1
    rank, sorted_values = rank_structure(values)
    count = np.zeros(values.size + 1, dtype=np.int64)
    total = np.zeros(values.size + 1)
    out = np.zeros((k + 1, k + 1))
    row = np.empty(k)
    for a in range(k):
        deviations_from(values, rank, sorted_values, bounds, a, count, total, row)
        out[a, a + 1:] = row[:k - a]
    return out
