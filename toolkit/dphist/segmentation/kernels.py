"""Compiled (numba) loops of the segmentation engine; sequential by nature (see the package docstring),
releasing the GIL where :mod:`.parallel` runs blocks of a quadratic search on threads.

Conventions shared by every kernel:

* a *unit* ``u`` covers positions ``[bounds[u], bounds[u+1])``; a group is a run of units
  ``[a, b)``, and ``back[b]`` is the first unit of the last group of the best segmentation of
  units ``[0, b)``;
* the SSE + size-penalty cost of positions ``[i, j)`` is ``max(SSE, 0) + pen[j - i]`` from the
  centred prefix sums ``p``, ``p2`` (AHP Theorem 4.2; SORTaki Eq. 4-5; DPCube's variance);
* ties follow the package docstring's table.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload, register_jitable

from . import _lookahead
from ._lookahead import known_run_end, length, penalty, prefix_at, share, value


@njit(cache=True, inline="always")
def sse(p, p2, i, j):
    """SSE of positions [i, j) from centred prefix sums (clamped at 0 against rounding)."""
    t = p[j] - p[i]
    v = (p2[j] - p2[i]) - t * t / (j - i)
    return v if v > 0.0 else 0.0


@overload(penalty, inline="always")
def _penalty_typed(pen, m):
    if isinstance(pen, types.Float):
        return lambda pen, m: pen / m
    return lambda pen, m: pen[m]


@overload(share, inline="always")
def _share_typed(shares, m):
    if isinstance(shares, types.Float):
        return lambda shares, m: shares / (m * m)
    return lambda shares, m: shares[m]


@overload(value)
def _value_typed(x, j):
    if isinstance(x, types.BaseTuple):
        return lambda x, j: x[0][j] if j < x[1] else (0.0 if j < x[2] else x[0][j - (x[2] - x[1])])
    return lambda x, j: x[j]


@overload(length)
def _length_typed(x):
    if isinstance(x, types.BaseTuple):
        return lambda x: len(x[0]) + (x[2] - x[1])
    return lambda x: len(x)


@overload(prefix_at)
def _prefix_at_typed(prefix, l):
    if isinstance(prefix, types.BaseTuple):
        return lambda prefix, l: prefix[0][l if l <= prefix[1] else max(prefix[1], l - (prefix[2] - prefix[1]))]
    return lambda prefix, l: prefix[l]


@overload(known_run_end)
def _known_run_end_typed(x, j):
    if isinstance(x, types.BaseTuple):
        return lambda x, j: x[2] - 1 if x[1] <= j < x[2] else -1
    return lambda x, j: -1


@njit(cache=True, inline="always")
def extend(base, p, p2, pen, i, j, penalty_last):
    """base + cost of positions [i, j), summed as (base + SSE) + pen when ``penalty_last``, else
    base + (SSE + pen): equal in exact arithmetic; both orders are kept so that the plugins ported
    onto the engine (SORTaki: the first, AHP: the second) publish bit-identical releases."""
    if penalty_last:
        return base + sse(p, p2, i, j) + penalty(pen, j - i)
    return base + (sse(p, p2, i, j) + penalty(pen, j - i))


@njit(cache=True, inline="always")
def _extend_units(base, bounds, p, p2, pen, matrix, a, b, penalty_last, trivial):
    """base + cost of units [a, b): from the SSE arrays, or ``matrix[a, b]`` when a matrix is given."""
    if matrix.shape[0] > 0:
        return base + matrix[a, b]
    if trivial:
        return extend(base, p, p2, pen, a, b, penalty_last)
    return extend(base, p, p2, pen, bounds[a], bounds[b], penalty_last)


@njit(cache=True)
def sse_all_intervals(bounds, p, p2, pen, penalty_last):
    """Mode (a): best[e] = min_{s<e} best[s] + cost(s, e) over every interval; O(k^2).

    The inner loop is the hot spot of AHP-optimal and DPP exact: single-position units skip the
    ``bounds`` indirection and the end's prefix sums are read once (the flags are loop-invariant,
    so the compiler unswitches the branches).
    """
    k = bounds.size - 1
    trivial = bounds[k] == k
    best = np.empty(k + 1)
    back = np.zeros(k + 1, dtype=np.int64)
    best[0] = 0.0
    for e in range(1, k + 1):
        j = e if trivial else bounds[e]
        pj = p[j]
        p2j = p2[j]
        top = np.inf
        arg = 0
        for s in range(e):
            i = s if trivial else bounds[s]
            m = j - i
            t = pj - p[i]
            v = (p2j - p2[i]) - t * t / m
            if not v > 0.0:
                v = 0.0
            if penalty_last:
                c = best[s] + v + pen[m]
            else:
                c = best[s] + (v + pen[m])
            if c < top:
                top = c
                arg = s
        best[e] = top
        back[e] = arg
    return best, back


@njit(cache=True, nogil=True)
def sse_scan_block(bounds, p, p2, pen, penalty_last, best, top, arg, e_lo, e_hi, s_lo, s_hi):
    """Mode (a) on threads, one cell of the search's graph: for each end e in [e_lo, e_hi), the running
    minimum ``top[e], arg[e]`` continued over the starts [s_lo, s_hi) (``best`` final there), ascending,
    replaced only when strictly smaller: cells of increasing starts make the serial loop's comparisons.  The loop runs over views starting at ``s_lo`` with an index from 0, which numba
    knows to be non-negative (no wrap-around test on its loads: 25-35% less time than indexing from
    ``s_lo``, measured side by side at n = 16,384).  It is a copy of :func:`sse_all_intervals`' loop:
    one inlined helper for both made the serial loop up to 1.7x slower on stepped data (tried and
    measured side by side, n = 16,384)."""
    k = bounds.size - 1
    trivial = bounds[k] == k
    ps = p[s_lo:]
    p2s = p2[s_lo:]
    bs = best[s_lo:]
    us = bounds[s_lo:]
    width = s_hi - s_lo
    for e in range(e_lo, e_hi):
        j = e if trivial else bounds[e]
        pj = p[j]
        p2j = p2[j]
        low = top[e]            # the running minimum continued (a fresh one per column mispredicts its
        at = arg[e]             # improvements in every column: 7-18% more time, measured side by side)
        for d in range(width):
            i = s_lo + d if trivial else us[d]
            m = j - i
            t = pj - (ps[d] if trivial else p[i])
            v = (p2j - (p2s[d] if trivial else p2[i])) - t * t / m
            if not v > 0.0:
                v = 0.0
            if penalty_last:
                c = bs[d] + v + pen[m]
            else:
                c = bs[d] + (v + pen[m])
            if c < low:
                low = c
                at = s_lo + d
        top[e] = low
        arg[e] = at


@njit(cache=True, nogil=True)
def sse_finish_block(bounds, p, p2, pen, penalty_last, best, back, top, arg, e_lo, e_hi, s_lo):
    """Mode (a) on threads, the last cell of a block of ends: each end e in [e_lo, e_hi) in turn continues
    its minimum over the starts [s_lo, e) (the block's own ends, final one after the other) and is final
    (by :func:`sse_scan_block`'s loop over views: a loop indexed from ``s_lo`` took 30% longer per
    candidate, measured side by side at n = 12,000)."""
    for e in range(e_lo, e_hi):
        sse_scan_block(bounds, p, p2, pen, penalty_last, best, top, arg, e, e + 1, s_lo, e)
        best[e] = top[e]
        back[e] = arg[e]


@njit(cache=True, nogil=True)
def relax_row(best, back, first_unit, costs):
    """Mode (a) for costs given row by row: relax every group starting at ``first_unit``.

    Rows must come in increasing ``first_unit`` (best[first_unit] is then final); a later row
    replaces an incumbent only when strictly cheaper, so the earliest start wins ties.
    """
    base = best[first_unit]
    for j in range(costs.size):
        end = first_unit + 1 + j
        c = base + costs[j]
        if c < best[end]:
            best[end] = c
            back[end] = first_unit


@njit(cache=True, nogil=True)
def relax_block(best, back, first_unit, block, e_lo, e_hi):
    """:func:`relax_row` for the rows of a block (``block[i, j]``: the cost of units
    [first_unit + i, first_unit + i + 1 + j)) into the ends [e_lo, e_hi) only, rows in increasing
    order for every end (the order :func:`relax_row` gives); rows whose first unit is not below
    an end do not reach it.  The ends inside the block go first (one thread, in order: they are
    the block's own bases), then threads take disjoint ranges of the ends beyond it."""
    for i in range(block.shape[0]):
        a = first_unit + i
        base = best[a]
        for end in range(max(e_lo, a + 1), e_hi):
            c = base + block[i, end - a - 1]
            if c < best[end]:
                best[end] = c
                back[end] = a


@njit(cache=True, nogil=True)
def relax_block_offsets(best, back, first_unit, block, e_lo, e_hi, bounds, minus, plus):
    """:func:`relax_block` for rows of a cost under a transform declaring ``size_offsets``: the cost of
    units [a, end) is ``(block[i, end - a - 1] - minus[size]) + plus`` (``size`` in positions), the
    floats of the transform applied to the row before :func:`relax_row` (the same two operations)."""
    for i in range(block.shape[0]):
        a = first_unit + i
        base = best[a]
        start = bounds[a]
        for end in range(max(e_lo, a + 1), e_hi):
            c = base + ((block[i, end - a - 1] - minus[bounds[end] - start]) + plus)
            if c < best[end]:
                best[end] = c
                back[end] = a


@njit(cache=True, nogil=True)
def relax_block_noisy(best, back, first_unit, block, e_lo, e_hi, bounds, noise, offsets, cap, table, extra,
                      use_table):
    """:func:`relax_block` for rows of a cost under report-noisy-min's transform: the cost of units
    [a, end) is ``(noise + clamp(block[i, end - a - 1])) + g`` with ``noise = noise[offsets[i] + end - a - 1]``
    (row a's draws laid end after end, rows one after another), the cost clamped to ``[-cap, cap]``
    (NaN to ``cap``) and ``g = table[size]`` (``use_table``) or ``extra``: the floats of the kernel's
    transform applied to the row before :func:`relax_row`."""
    for i in range(block.shape[0]):
        a = first_unit + i
        base = best[a]
        start = bounds[a]
        at = offsets[i] - a - 1
        for end in range(max(e_lo, a + 1), e_hi):
            v = block[i, end - a - 1]
            if not abs(v) <= cap:
                v = cap if (v != v or v > 0) else -cap
            v = noise[at + end] + v
            c = base + (v + (table[bounds[end] - start] if use_table else extra))
            if c < best[end]:
                best[end] = c
                back[end] = a


@njit(cache=True, inline="always")
def _window_total(best, windows, use_windows, bounds, p, p2, pen, e, j, penalty_last):
    """best[s] + the cost of the last group [s, e) of 2^j units."""
    s = e - (1 << j)
    if use_windows:
        return best[s] + windows[j, s]
    return extend(best[s], p, p2, pen, bounds[s], bounds[e], penalty_last)


@njit(cache=True)
def power_of_two_lengths(bounds, p, p2, pen, windows, penalty_last, longest):
    """Mode (b): the last group has 2^j units; O(k log k).

    ``windows[j, a]`` is the cost of units [a, a + 2^j) when ``windows`` is not empty; otherwise
    the SSE cost.  The first strictly cheapest candidate wins, examined from the longest down when
    ``longest``, else from the shortest up (the scan order, not the comparison, carries the tie
    rule: a tie-aware comparison in this loop cost up to 40% at n = 500,000).
    """
    k = bounds.size - 1
    best = np.empty(k + 1)
    back = np.zeros(k + 1, dtype=np.int64)
    best[0] = 0.0
    use_windows = windows.shape[0] > 0
    for e in range(1, k + 1):
        top = np.inf
        arg = 0
        top_j = 0
        while (2 << top_j) <= e:
            top_j += 1
        # two loops rather than one with a computed index: the select cost ~10% at n = 500,000
        if longest:
            for j in range(top_j, -1, -1):
                c = _window_total(best, windows, use_windows, bounds, p, p2, pen, e, j, penalty_last)
                if c < top:
                    top = c
                    arg = e - (1 << j)
        else:
            for j in range(top_j + 1):
                c = _window_total(best, windows, use_windows, bounds, p, p2, pen, e, j, penalty_last)
                if c < top:
                    top = c
                    arg = e - (1 << j)
        best[e] = top
        back[e] = arg
    return best, back


@njit(cache=True, inline="always")
def _best_split(below, bounds, p, p2, pen, matrix, first, last, j, penalty_last, trivial):
    """min over i in [first, last] of below[i] + cost(units [i, j)), and the earliest i reaching it."""
    b = np.inf
    arg = first
    for i in range(first, last + 1):
        v = _extend_units(below[i], bounds, p, p2, pen, matrix, i, j, penalty_last, trivial)
        if v < b:
            b = v
            arg = i
    return b, arg


@njit(cache=True)
def exactly_k_groups(bounds, p, p2, pen, matrix, k_max, monge, penalty_last):
    """Mode (d): least cost of units [0, k) in exactly m groups, m = 1..k_max.

    ``best[m]`` is that cost and ``back[m, j]`` the first unit of the last group of the best
    m-segmentation of units [0, j).  When the cost is Monge (``monge``), the optimal split is
    non-decreasing in j and each layer is filled by divide and conquer, O(k log k) instead of
    O(k^2) (the classic speed-up for 1-D k-segmentation of sorted data).
    """
    k = bounds.size - 1
    trivial = bounds[k] == k
    below = np.full(k + 1, np.inf)
    layer = np.full(k + 1, np.inf)
    back = np.zeros((k_max + 1, k + 1), dtype=np.int32)
    best = np.full(k_max + 1, np.inf)
    for j in range(1, k + 1):
        below[j] = _extend_units(0.0, bounds, p, p2, pen, matrix, 0, j, penalty_last, trivial)
    best[1] = below[k]
    stack = np.empty((4 * (k + 2), 4), dtype=np.int64)
    for m in range(2, k_max + 1):
        layer[:] = np.inf
        if monge:
            stack[0, 0] = m
            stack[0, 1] = k
            stack[0, 2] = m - 1
            stack[0, 3] = k - 1
            top = 1
            while top > 0:
                top -= 1
                lo = stack[top, 0]
                hi = stack[top, 1]
                opt_lo = stack[top, 2]
                opt_hi = stack[top, 3]
                if lo > hi:
                    continue
                mid = (lo + hi) // 2
                layer[mid], arg = _best_split(below, bounds, p, p2, pen, matrix, opt_lo, min(mid - 1, opt_hi),
                                              mid, penalty_last, trivial)
                back[m, mid] = arg
                stack[top, 0] = lo
                stack[top, 1] = mid - 1
                stack[top, 2] = opt_lo
                stack[top, 3] = arg
                top += 1
                stack[top, 0] = mid + 1
                stack[top, 1] = hi
                stack[top, 2] = arg
                stack[top, 3] = opt_hi
                top += 1
        else:
            for j in range(m, k + 1):
                layer[j], back[m, j] = _best_split(below, bounds, p, p2, pen, matrix, m - 1, j - 1, j,
                                                   penalty_last, trivial)
        best[m] = layer[k]
        below, layer = layer, below
    return best, back


# ------------------------------------------------- mode (e): AHP's look-ahead lower bound
# The loops live in :mod:`._lookahead` (plain Python, also run interpreted); compiled here.  numba's cache of
# these is keyed to the content of ``_lookahead.py`` alone: after changing ``_penalty_typed``, ``_share_typed``,
# the typed accessors of taken values (``_value_typed`` ... ``_known_run_end_typed``) or the registrations below,
# empty the cache (``dphist.cache.numba_cache_dir()``).
for _helper in (_lookahead._deviation_sq, _lookahead._candidate):
    register_jitable(inline="always")(_helper)
for _helper in (_lookahead.run_stop, _lookahead.scan_lower_bound, _lookahead.lower_bound_exceeds):
    register_jitable(_helper)
all_lower_bounds = njit(cache=True)(_lookahead.all_lower_bounds)
greedy_lookahead = njit(cache=True)(_lookahead.greedy_lookahead)
scan_taken = njit(cache=True)(_lookahead.scan_taken)
gather_outside = njit(cache=True)(_lookahead.gather_outside)


@njit(cache=True)
def greedy_singleton(bounds, p, p2, pen, penalty_last):
    """Mode (e) with the singleton bound (SORTaki Algorithm 5): unit i joins the current group
    [s, i) iff cost(s, i+1) < cost(s, i) + cost(i, i+1).  Returns the first units of the groups and
    the total cost."""
    k = bounds.size - 1
    cuts = np.empty(k, dtype=np.int64)
    cuts[0] = 0
    m = 1
    s = bounds[0]
    total = 0.0
    for i in range(1, k):
        a = bounds[i]
        b = bounds[i + 1]
        merged = extend(0.0, p, p2, pen, s, b, penalty_last)
        closed = extend(0.0, p, p2, pen, s, a, penalty_last)
        if not merged < extend(closed, p, p2, pen, a, b, penalty_last):
            total += closed
            cuts[m] = i
            m += 1
            s = a
    return cuts[:m], total + extend(0.0, p, p2, pen, s, bounds[k], penalty_last)


# ------------------------------------------------------------- weighted L1 deviation
@njit(cache=True, nogil=True, inline="always")
def _fenwick_add(weight_tree, wx_tree, pos, w, wx):
    n = weight_tree.size - 1
    while pos <= n:
        weight_tree[pos] += w
        wx_tree[pos] += wx
        pos += pos & -pos


@njit(cache=True, nogil=True, inline="always")
def _deviation(weight_tree, wx_tree, sorted_values, mean, w_in, wx_in):
    """sum w_i |x_i - mean| over the window: (mean W_le - SW_le) + ((SW - SW_le) - mean (W - W_le))."""
    pos = np.searchsorted(sorted_values, mean, side="right")
    c = 0.0
    s = 0.0
    while pos > 0:
        c += weight_tree[pos]
        s += wx_tree[pos]
        pos -= pos & -pos
    dev = (mean * c - s) + ((wx_in - s) - mean * (w_in - c))
    return dev if dev > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _move_unit(values, weights, rank, bounds, u, sign, weight_tree, wx_tree, sums):
    """Add (sign 1) or remove (sign -1) the positions of unit u; ``sums`` = [count, sum x, sum w, sum w x]."""
    for q in range(bounds[u], bounds[u + 1]):
        w = sign * weights[q]
        wx = w * values[q]
        _fenwick_add(weight_tree, wx_tree, rank[q], w, wx)
        sums[0] += sign
        sums[1] += sign * values[q]
        sums[2] += w
        sums[3] += wx


@njit(cache=True, nogil=True)
def deviations_from(values, weights, rank, sorted_values, bounds, first_unit, out):
    """out[j] = weighted L1 deviation from the mean of units [first_unit, first_unit + j + 1)."""
    weight_tree = np.zeros(values.size + 1)
    wx_tree = np.zeros(values.size + 1)
    sums = np.zeros(4)
    for j in range(bounds.size - 1 - first_unit):
        _move_unit(values, weights, rank, bounds, first_unit + j, 1.0, weight_tree, wx_tree, sums)
        out[j] = _deviation(weight_tree, wx_tree, sorted_values, sums[1] / sums[0], sums[2], sums[3])


@njit(cache=True, nogil=True)
def deviations_of_length(values, weights, rank, sorted_values, bounds, length, out):
    """out[a] = weighted L1 deviation of units [a, a + length) for every a (a sliding window:
    each unit enters and leaves the Fenwick tree once, O(n log n) per length)."""
    weight_tree = np.zeros(values.size + 1)
    wx_tree = np.zeros(values.size + 1)
    sums = np.zeros(4)
    for a in range(-(length - 1), bounds.size - length):
        _move_unit(values, weights, rank, bounds, a + length - 1, 1.0, weight_tree, wx_tree, sums)
        if a >= 0:
            out[a] = _deviation(weight_tree, wx_tree, sorted_values, sums[1] / sums[0], sums[2], sums[3])
            _move_unit(values, weights, rank, bounds, a, -1.0, weight_tree, wx_tree, sums)


@njit(cache=True, nogil=True)
def deviations_direct(values, weights, starts, ends):
    """Weighted L1 deviation of each position range [starts[i], ends[i]) by definition, O(length)."""
    out = np.empty(starts.size)
    for i in range(starts.size):
        a = starts[i]
        b = ends[i]
        mean = 0.0
        for q in range(a, b):
            mean += values[q]
        mean /= b - a
        dev = 0.0
        for q in range(a, b):
            dev += weights[q] * abs(values[q] - mean)
        out[i] = dev
    return out


# ---------------------------------------- unit-weight L1 deviation of integers, rows by deletion
# Row a of the exact search is the set of units [a, k) shrunk from the right one unit at a time.
# The values of the current set live in a doubly linked list over their *distinct* values in
# sorted order (with multiplicities): deleting is O(1), and deletions undone in reverse order
# restore the links by themselves (Knuth's dancing links).  Rows come in pairs: the deletion pass
# gives row a and leaves unit a alone; unit a then turns into a *ghost* (linked, not counted),
# and the undo pass, re-inserting units a + 1, a + 2, ..., gives row a + 1 on the way; finally
# units a and a + 1 leave the list.  A pointer p marks the largest counted value <= the mean;
# ``acc`` holds [count and sum of the counted values at or below p, count and sum of the set].
# The pointer walks one distinct value at a time as the mean moves; for integer values a step
# passes at most |mean shift| + 1 of them, and the sums are exact, so every deviation is
# bit-identical to the Fenwick-tree route (same c, s, mean, same formula).  (Inlined into the
# row loop, a walk with its while loops made the loop 7x slower under numba; the row loop tests
# cheaply whether the pointer must move at all.)
# ``linked[r]``: values at node r in the list (ghosts included); ``mult[r]``: those counted.
# Node numbers, links and the pointer are unsigned: numba then drops its negative-index wrap-around
# from every load (14% less time for the rows at n = 8,192, the same costs).

_HEAD = np.uint64(0)   #: node 0 starts the list (node dv.size - 1 ends it)


@njit(cache=True, nogil=True)
def _walk(dv, mult, prv, nxt, p, mean, acc):
    """The largest linked node with value <= mean, starting from node p (acc updated)."""
    tail = np.uint64(dv.size - 1)
    q = nxt[p]
    while q != tail and dv[q] <= mean:
        p = q
        acc[0] += mult[p]
        acc[1] += mult[p] * dv[p]
        q = nxt[p]
    while p != _HEAD and dv[p] > mean:
        acc[0] -= mult[p]
        acc[1] -= mult[p] * dv[p]
        p = prv[p]
    return p


@njit(cache=True, nogil=True, inline="always")
def _settled(dv, mult, prv, nxt, p, mean, acc):
    q = nxt[p]
    if (q != np.uint64(dv.size - 1) and dv[q] <= mean) or (p != _HEAD and dv[p] > mean):
        return _walk(dv, mult, prv, nxt, p, mean, acc)
    return p


@njit(cache=True, nogil=True, inline="always")
def _counted_deviation(acc, mean):
    """L1 deviation of the counted set, the pointer settled at ``mean``: the Fenwick route's formula."""
    c = acc[0]
    s = acc[1]
    dev = (mean * c - s) + ((acc[3] - s) - mean * (acc[2] - c))
    return dev if dev > 0.0 else 0.0


@njit(cache=True, nogil=True, inline="always")
def _delete_positions(node, dv, mult, linked, prv, nxt, start, stop, p, acc, counted):
    """Remove positions [start, stop) from the list (and from the counts when ``counted``);
    returns the pointer, moved off a node that leaves the list."""
    for q in range(start, stop):
        r = node[q]
        if counted:
            v = dv[r]
            if r <= p:                          # node numbers follow the sorted values
                acc[0] -= 1.0
                acc[1] -= v
            mult[r] -= 1
            acc[2] -= 1.0
            acc[3] -= v
        linked[r] -= 1
        if linked[r] == 0:
            if r == p:
                p = prv[r]
            nxt[prv[r]] = nxt[r]                # r keeps its own links: the undo needs them
            prv[nxt[r]] = prv[r]
    return p


@njit(cache=True, nogil=True)
def l1_deletion_start(node, dv, bounds, first_unit, mult, linked, prv, nxt, acc):
    """Build the linked list for the set of units [first_unit, k), O(n + distinct values);
    returns the pointer (``acc`` filled)."""
    tail = np.uint64(dv.size - 1)
    mult[:] = 0
    acc[:] = 0.0
    for q in range(bounds[first_unit], bounds[bounds.size - 1]):
        mult[node[q]] += 1
        acc[2] += 1.0
        acc[3] += dv[node[q]]
    linked[:] = mult
    last = _HEAD
    for r in range(np.uint64(1), tail):
        if mult[r] > 0:
            nxt[last] = r
            prv[r] = last
            last = r
    nxt[last] = tail
    prv[tail] = last
    if acc[2] > 0:
        return _walk(dv, mult, prv, nxt, _HEAD, acc[3] / acc[2], acc)
    return _HEAD


@njit(cache=True, nogil=True)
def l1_deletion_skip(node, dv, bounds, a, b, mult, linked, prv, nxt, p, acc):
    """Move the list from the set of units [a, k) to [b, k) (b > a, no ghost), the pointer settled at
    the new mean: the state :func:`l1_deletion_rows` leaves after its passes from a up to b."""
    q_ = _delete_positions(node, dv, mult, linked, prv, nxt, bounds[a], bounds[b], np.uint64(p), acc, True)
    if acc[2] > 0:
        q_ = _settled(dv, mult, prv, nxt, q_, acc[3] / acc[2], acc)
    return q_


@njit(cache=True, nogil=True)
def l1_deletion_rows(node, dv, bounds, a, mult, linked, prv, nxt, p, acc, row_a, row_b):
    """row_a[j] = L1 deviation of units [a, a + j + 1) and, when a + 1 < k, row_b[j] = that of
    units [a + 1, a + j + 2); then units a and a + 1 leave the set.  Returns the pointer."""
    k = bounds.size - 1
    q_ = np.uint64(p)
    for u in range(k - 1, a - 1, -1):                       # deletion pass: row a
        if u < k - 1:
            q_ = _delete_positions(node, dv, mult, linked, prv, nxt, bounds[u + 1], bounds[u + 2], q_, acc, True)
        mean = acc[3] / acc[2]
        q_ = _settled(dv, mult, prv, nxt, q_, mean, acc)
        row_a[u - a] = _counted_deviation(acc, mean)
    if a + 1 == k:                                          # the last row has no partner
        return _delete_positions(node, dv, mult, linked, prv, nxt, bounds[a], bounds[a + 1], q_, acc, True)
    for q in range(bounds[a], bounds[a + 1]):               # unit a: a ghost, linked but not counted
        mult[node[q]] -= 1
    acc[:] = 0.0
    q_ = _HEAD
    for u in range(a + 1, k):                               # undo pass, in reverse order: row a + 1
        for q in range(bounds[u + 1] - 1, bounds[u] - 1, -1):
            r = node[q]
            if linked[r] == 0:
                nxt[prv[r]] = r
                prv[nxt[r]] = r
            linked[r] += 1
            mult[r] += 1
            v = dv[r]
            if r <= q_:
                acc[0] += 1.0
                acc[1] += v
            acc[2] += 1.0
            acc[3] += v
        mean = acc[3] / acc[2]
        q_ = _settled(dv, mult, prv, nxt, q_, mean, acc)
        row_b[u - a - 1] = _counted_deviation(acc, mean)
    q_ = _delete_positions(node, dv, mult, linked, prv, nxt, bounds[a], bounds[a + 1], q_, acc, False)
    q_ = _delete_positions(node, dv, mult, linked, prv, nxt, bounds[a + 1], bounds[a + 2], q_, acc, True)
    if acc[2] > 0:
        q_ = _settled(dv, mult, prv, nxt, q_, acc[3] / acc[2], acc)
    return q_


@njit(cache=True, nogil=True)
def l1_deletion_block(node, dv, bounds, a, b, mult, linked, prv, nxt, p, acc, out):
    """Rows a .. b - 1 (b - a even, or b = k) into ``out[i, :k - a - i]``, two per pass of
    :func:`l1_deletion_rows`, in one call (no return to Python between rows); returns the pointer."""
    k = bounds.size - 1
    q_ = np.uint64(p)
    for u in range(a, b, 2):
        width = k - u
        q_ = l1_deletion_rows(node, dv, bounds, u, mult, linked, prv, nxt, q_, acc, out[u - a, :width],
                              out[min(u - a + 1, out.shape[0] - 1), :max(width - 1, 0)])
    return q_

