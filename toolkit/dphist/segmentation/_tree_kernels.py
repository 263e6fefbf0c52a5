"""Compiled loops of the tree mode (:func:`dphist.segmentation.tree`), imported on first use.

The L1 deviation of disjoint position ranges (:meth:`dphist.segmentation.L1Deviation.nodes`) was a
gather, ``add.reduceat`` of the values, a repeat of the means and ``add.reduceat`` of the deviations:
five passes over the level and as many arrays of its size.  :func:`l1_nodes` computes each range's
sums in one pass over its values, with numpy's summation order, so the costs are numpy's bit for bit.

numpy's order (``add.reduceat`` on a contiguous float64 array, numpy 1.x and 2.x): a range's first
value plus the *pairwise* sum of the others, where the pairwise sum of ``m`` values is a running sum
from 0 when ``m < 8``; eight running sums over the first ``m - m % 8`` values, combined as
``((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))``, then the rest added one by one, when
``8 <= m <= 128``; and above 128 the sum of the first ``h`` values plus that of the others, ``h``
half of ``m`` rounded down to a multiple of 8 (recursively).  ``tests/test_segmentation_tree.py``
compares :func:`reduceat_sum` with ``numpy.add.reduceat`` on every length up to 600 and beyond.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_STACK = 64       #: depth of the pairwise recursion's explicit stack: ranges of up to 128 x 2^63 values


@njit(cache=True, nogil=True, inline="always")
def _term(a, i, centre, deviation):
    if deviation:
        return abs(a[i] - centre)
    return a[i]


@njit(cache=True, nogil=True, inline="always")
def _block(a, lo, m, centre, deviation):
    """The pairwise sum of ``m <= 128`` terms from ``lo`` (see the module docstring)."""
    if m < 8:
        res = 0.0
        for i in range(lo, lo + m):
            res += _term(a, i, centre, deviation)
        return res
    r0 = _term(a, lo, centre, deviation)
    r1 = _term(a, lo + 1, centre, deviation)
    r2 = _term(a, lo + 2, centre, deviation)
    r3 = _term(a, lo + 3, centre, deviation)
    r4 = _term(a, lo + 4, centre, deviation)
    r5 = _term(a, lo + 5, centre, deviation)
    r6 = _term(a, lo + 6, centre, deviation)
    r7 = _term(a, lo + 7, centre, deviation)
    stop = lo + m - m % 8
    i = lo + 8
    while i < stop:
        r0 += _term(a, i, centre, deviation)
        r1 += _term(a, i + 1, centre, deviation)
        r2 += _term(a, i + 2, centre, deviation)
        r3 += _term(a, i + 3, centre, deviation)
        r4 += _term(a, i + 4, centre, deviation)
        r5 += _term(a, i + 5, centre, deviation)
        r6 += _term(a, i + 6, centre, deviation)
        r7 += _term(a, i + 7, centre, deviation)
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < lo + m:
        res += _term(a, i, centre, deviation)
        i += 1
    return res


@njit(cache=True, nogil=True)
def _pairwise(a, lo, m, centre, deviation):
    """The pairwise sum of ``m`` terms from ``lo``; above 128 the recursion on an explicit stack of
    (first, count, state, sum of the first half) frames (numba caches no recursive functions)."""
    if m <= 128:
        return _block(a, lo, m, centre, deviation)
    first = np.empty(_STACK, dtype=np.int64)
    count = np.empty(_STACK, dtype=np.int64)
    state = np.zeros(_STACK, dtype=np.int64)     # 0: halves not started, 1: first half running, 2: second
    left = np.empty(_STACK)
    top = 0
    first[0] = lo
    count[0] = m
    while True:
        size = count[top]
        if size > 128:                           # split: the first half next
            half = size // 2
            half -= half % 8
            state[top] = 1
            top += 1
            first[top] = first[top - 1]
            count[top] = half
            state[top] = 0
            continue
        value = _block(a, first[top], size, centre, deviation)
        while True:                              # hand the value up until a second half is to run
            top -= 1
            if top < 0:
                return value
            if state[top] == 1:
                left[top] = value
                state[top] = 2
                half = count[top] // 2
                half -= half % 8
                first[top + 1] = first[top] + half
                count[top + 1] = count[top] - half
                state[top + 1] = 0
                top += 1
                break
            value = left[top] + value


@njit(cache=True, nogil=True, inline="always")
def reduceat_sum(a, lo, hi, centre, deviation):
    """``numpy.add.reduceat`` of one range ``[lo, hi)`` (``hi > lo``) of the terms ``a[i]`` or, with
    ``deviation``, ``|a[i] - centre|``: the first term plus the pairwise sum of the others (ranges of up
    to 129 values without a call: the stack's arrays are made only above)."""
    first = _term(a, lo, centre, deviation)
    if hi - lo == 1:
        return first
    if hi - lo <= 129:
        return first + _block(a, lo + 1, hi - lo - 1, centre, deviation)
    return first + _pairwise(a, lo + 1, hi - lo - 1, centre, deviation)


@njit(cache=True, nogil=True)
def l1_nodes(values, starts, ends, out):
    """``sum |x - mean|`` over each range ``[starts[i], ends[i])`` (non-empty), as
    :meth:`dphist.segmentation.L1Deviation.nodes` computed it with numpy (unit weights): the mean is
    the range's ``add.reduceat`` sum over its size, the deviation the ``add.reduceat`` of the
    absolute differences."""
    for i in range(starts.size):
        lo = starts[i]
        hi = ends[i]
        if hi - lo == 1:             # one value: |v - v / 1|, without the calls
            v = values[lo]
            out[i] = abs(v - v / 1)
            continue
        mean = reduceat_sum(values, lo, hi, 0.0, False) / (hi - lo)
        out[i] = reduceat_sum(values, lo, hi, mean, True)
    return out


@njit(cache=True, nogil=True)
def centred_prefix(values, mean, p, p2):
    """:func:`dphist.intervals.centred_prefix_sums` in one pass: ``p`` and ``p2`` (``n + 1`` each, leading
    0) the running sums of ``x = v - mean`` and of ``x * x``, added in position order as ``numpy.cumsum``
    adds (its first output is the first value itself, then each the previous plus the next value)."""
    p[0] = 0.0
    p2[0] = 0.0
    if values.size == 0:
        return
    x = values[0] - mean
    p[1] = x
    p2[1] = x * x
    for i in range(1, values.size):
        x = values[i] - mean
        p[i + 1] = p[i] + x
        p2[i + 1] = p2[i] + x * x


@njit(cache=True, nogil=True)
def size_range(starts, ends):
    """The least and the largest ``ends[i] - starts[i]`` (0, -1 for no range)."""
    if starts.size == 0:
        return 0, -1
    lo = ends[0] - starts[0]
    hi = lo
    for i in range(1, starts.size):
        m = ends[i] - starts[i]
        lo = min(lo, m)
        hi = max(hi, m)
    return lo, hi


@njit(cache=True, nogil=True)
def sse_nodes(p, p2, starts, ends, penalty, lo, out):
    """:func:`dphist.intervals.interval_sse` of each range in one pass, plus ``penalty[size - lo]`` when
    ``lo >= 0``: ``s2 - s1 * s1 / size`` from the prefix sums, 0 for an empty range, negatives from
    rounding raised to 0 (``numpy.maximum``'s rule: a value that compares ``>= 0``, or NaN, is kept),
    then the penalty added (one addition, as ``interval_sse(...) + penalty[sizes]``)."""
    for i in range(starts.size):
        a = starts[i]
        b = ends[i]
        if b <= a:
            v = 0.0
        else:
            s1 = p[b] - p[a]
            v = (p2[b] - p2[a]) - s1 * s1 / float(b - a)
            if not (v >= 0.0 or v != v):
                v = 0.0
        if lo >= 0:
            v = v + penalty[b - a - lo]
        out[i] = v
    return out


@njit(cache=True, nogil=True)
def centred_prefix_over(values, mean, p2):
    """:func:`centred_prefix` writing ``p[0..n-1]`` over ``values`` itself (position ``i`` is read, then
    holds ``p[i]``) and returning ``p[n]``: the same additions in the same order, so the same floats
    (``p[1]`` the first centred value itself, then each the previous plus the next)."""
    p2[0] = 0.0
    n = values.size
    if n == 0:
        return 0.0
    x = values[0] - mean
    values[0] = 0.0
    acc = x
    p2[1] = x * x
    for i in range(1, n):
        x = values[i] - mean
        values[i] = acc
        acc = acc + x
        p2[i + 1] = p2[i] + x * x
    return acc


@njit(cache=True, nogil=True)
def sse_leaves(values, mean, penalty_one, branching, q, q2, folded):
    """The tree's leaves in one pass over ``values``, without the prefix sums stored whole: the running
    sums of ``x = v - mean`` and ``x * x`` added as :func:`centred_prefix` adds them, each leaf's
    :func:`sse_nodes` cost (one position, ``penalty_one`` its size's penalty) from them, the costs of each
    run of ``branching`` leaves summed as ``numpy.add.reduceat`` sums them (:func:`reduceat_sum`) into
    ``folded``, and the sums at every ``branching``-th position (and at the end) kept: ``q[j]`` is
    ``p[j branching]``, the last entry ``p[n]``, the prefix sums the levels above read.  The same floats
    as those functions' on the whole prefix sums."""
    n = values.size
    buf = np.empty(branching)
    q[0] = 0.0
    q2[0] = 0.0
    pa = 0.0
    p2a = 0.0
    j = 0
    g = 0
    for i in range(n):
        x = values[i] - mean
        if i == 0:                 # the first running sum is the first value itself
            pb = x
            p2b = x * x
        else:
            pb = pa + x
            p2b = p2a + x * x
        s1 = pb - pa
        v = (p2b - p2a) - s1 * s1 / 1.0
        if not (v >= 0.0 or v != v):
            v = 0.0
        buf[j] = v + penalty_one
        j += 1
        pa = pb
        p2a = p2b
        if j == branching or i == n - 1:
            folded[g] = reduceat_sum(buf, 0, j, 0.0, False)
            g += 1
            q[g] = pb
            q2[g] = p2b
            j = 0


@njit(cache=True, nogil=True)
def sse_nodes_coarse(q, q2, step, starts, ends, penalty, lo, out):
    """:func:`sse_nodes` of ranges whose starts are multiples of ``step`` and whose ends are too or the
    last position, from the prefix sums kept at those positions (:func:`sse_leaves`' ``q``, ``q2``:
    position ``b`` is entry ``ceil(b / step)``): the same values, the same operations."""
    for i in range(starts.size):
        a = starts[i]
        b = ends[i]
        if b <= a:
            v = 0.0
        else:
            ia = a // step
            ib = -(-b // step)
            s1 = q[ib] - q[ia]
            v = (q2[ib] - q2[ia]) - s1 * s1 / float(b - a)
            if not (v >= 0.0 or v != v):
                v = 0.0
        if lo >= 0:
            v = v + penalty[b - a - lo]
        out[i] = v
    return out


@njit(cache=True, nogil=True)
def tree_starts(takes, offsets, sizes, spans, k, out):
    """The first units of the groups the tree search chose, in increasing order, and ``k`` after them:
    from the root down, a node that keeps itself (``takes[offsets[h] + j]``; every leaf) starts a group at
    ``j * spans[h]``, any other hands on to its children.  ``takes`` holds the flags of levels 1 to the
    root one after the other (level ``h`` from ``offsets[h]``, ``sizes[h]`` nodes).  With an empty ``out``
    only counts; returns the number of entries (groups + 1)."""
    top = sizes.size - 1
    room = top * (spans[1] // spans[0]) + 2       # at most a node's children per level pending
    stack_h = np.empty(room, dtype=np.int64)
    stack_j = np.empty(room, dtype=np.int64)
    fill = out.size > 0
    count = 0
    stack_h[0] = top
    stack_j[0] = 0
    depth = 1
    while depth > 0:
        depth -= 1
        h = stack_h[depth]
        j = stack_j[depth]
        if takes[offsets[h] + j]:
            if fill:
                out[count] = j * spans[h]
            count += 1
            continue
        first = j * (spans[h] // spans[h - 1])
        last = min(first + spans[h] // spans[h - 1], sizes[h - 1])
        if h == 1:                 # every leaf a group of its own
            for c in range(first, last):
                if fill:
                    out[count] = c
                count += 1
            continue
        for c in range(last - 1, first - 1, -1):   # children pushed last first: popped in order
            stack_h[depth] = h - 1
            stack_j[depth] = c
            depth += 1
    if fill:
        out[count] = k
    return count + 1
