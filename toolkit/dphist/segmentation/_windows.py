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

**Single positions.**  When every unit is one position (DAWA's bins), :func:`count_windows_singles` counts
the same ``c``, ``s``, ``N``, ``S``: windows of at most ``DIRECT_BINS`` positions directly with the ends
as the inner loop (vectorised by the compiler), the sliding ones with their sums as integers (one addition
per sum and step).  The distinct values are ranked by counting over their range (:func:`distinct_values`).

**Streamed search.**  :func:`power_of_two_block` is :func:`.kernels.power_of_two_lengths` on the ends
``[e0, e1)`` with the windows given by their end (``W[j, e - e0]``: units ``[e - 2^j, e)``): the same
candidates, in the same order, with the same comparison, so the same ``best`` and ``back``;
:func:`power_of_two_levels_many` gives the same with the long groups' candidates compared for many ends at
once, for several searches on the same windows in one call.  Measured at 2^20 power-law bins (DAWA-approx's four ``select`` searches on its noisy counts, CPU
time on one thread, load 6-8, best of 5, against the code before these kernels in alternating processes):
windows and searches 0.57-0.70 s -> 0.32-0.33 s, the distinct values 0.047-0.049 s -> 0.006 s.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: windows of at most this many bins are counted directly, without a sliding state
DIRECT_BINS = 16
#: ends per chunk of the direct count of windows of single positions (its four sums: 16 KiB)
DIRECT_CHUNK = 512


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


@njit(cache=True, nogil=True, inline="always")
def _settle(dv, vals, m, ptr, mean, c, s):
    """The pointer moved to the first distinct value above ``mean``, the count ``c`` and sum ``s`` of the
    values below it kept (``vals``: the distinct values as the sums hold them, floats or integers)."""
    top = dv.size
    while ptr < top and dv[ptr] <= mean:
        c += m[ptr]
        s += m[ptr] * vals[ptr]
        ptr += 1
    while ptr > 0 and dv[ptr - 1] > mean:
        ptr -= 1
        c -= m[ptr]
        s -= m[ptr] * vals[ptr]
    return ptr, c, s


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
            ptr, c, s = _settle(dv, dv, m, ptr, mean, c, s)
            dev = (mean * c - s) + ((tot - s) - mean * (n_in - c))
            out[j, e - e0] = dev if dev > 0.0 else 0.0
        accs[j, 0] = c
        accs[j, 1] = s
        accs[j, 2] = n_in
        accs[j, 3] = tot
        ptrs[j] = ptr
        ends[j] = e


@njit(cache=True, nogil=True)
def count_windows_singles(node, dv, idv, values, lengths, direct, slot, mult, ptrs, accs, ends, e0, e1, out, scratch,
                          part=0):
    """:func:`count_windows_block` when every unit is one position (``bounds`` = ``0..k``): the same
    ``c``, ``s``, ``N`` and ``S`` of every window (exact integer sums, whatever their order) and the same
    formula, so the same numbers.  Direct lengths are counted with the ends as the inner loop (no branch:
    the compiler vectorises it; by chunks of ``DIRECT_CHUNK`` ends, ``scratch``: four rows of as many
    floats), a window of one position is ``+0.0``; sliding lengths step without the units' bounds, their
    sums kept as integers (``idv``: the distinct values as int64; one addition per sum and step)."""
    tot = scratch[0]
    avg = scratch[1]
    cnt = scratch[2]
    sm = scratch[3]
    for j in range(lengths.size):
        if (part == 1 and not direct[j]) or (part == 2 and direct[j]):
            continue
        L = lengths[j]
        row = out[j]
        if direct[j]:
            first = max(e0, L)                           # ends below L have no window
            for e in range(e0, min(first, e1)):
                row[e - e0] = np.inf
            if L == 1:
                for e in range(first, e1):
                    row[e - e0] = 0.0
                continue
            n_in = float(L)
            for f in range(first, e1, DIRECT_CHUNK):      # chunks of ends whose sums stay in the L1 cache
                m = min(DIRECT_CHUNK, e1 - f)
                t_ = tot[:m]                             # views: the compiler then vectorises the loops
                a_ = avg[:m]
                c_ = cnt[:m]
                s_ = sm[:m]
                for i in range(m):
                    t_[i] = 0.0
                    c_[i] = 0.0
                    s_[i] = 0.0
                for q in range(L):
                    v_ = values[f - L + q:f - L + q + m]
                    for i in range(m):
                        t_[i] += v_[i]
                for i in range(m):
                    a_[i] = t_[i] / n_in
                for q in range(L):
                    v_ = values[f - L + q:f - L + q + m]
                    for i in range(m):
                        v = v_[i]
                        b = v <= a_[i]
                        c_[i] += 1.0 if b else 0.0
                        s_[i] += v if b else 0.0
                r_ = row[f - e0:f - e0 + m]
                for i in range(m):
                    mean = a_[i]
                    c = c_[i]
                    s = s_[i]
                    dev = (mean * c - s) + ((t_[i] - s) - mean * (n_in - c))
                    r_[i] = dev if dev > 0.0 else 0.0
            continue
        m_ = mult[slot[j]]
        ptr = ptrs[j]
        c = np.int64(accs[j, 0])                         # the sums as integers (exact: the same numbers)
        s = np.int64(accs[j, 1])
        n_in = np.int64(accs[j, 2])
        tot_ = np.int64(accs[j, 3])
        e = ends[j]
        while e < e1 - 1:
            d = node[e]                                  # unit e enters
            m_[d] += 1
            v_in = idv[d]
            b_in = d < ptr
            if e - L >= 0:                               # unit e - L leaves
                d = node[e - L]
                m_[d] -= 1
                b_out = d < ptr
                tot_ += v_in - idv[d]
                c += (1 if b_in else 0) - (1 if b_out else 0)
                s += (v_in if b_in else 0) - (idv[d] if b_out else 0)
            else:
                n_in += 1
                tot_ += v_in
                c += 1 if b_in else 0
                s += v_in if b_in else 0
            e += 1
            if e < e0:
                continue
            if e < L:
                row[e - e0] = np.inf
                continue
            mean = float(tot_) / float(n_in)
            ptr, c, s = _settle(dv, idv, m_, ptr, mean, c, s)
            fc = float(c)
            fs = float(s)
            dev = (mean * fc - fs) + ((float(tot_) - fs) - mean * (float(n_in) - fc))
            row[e - e0] = dev if dev > 0.0 else 0.0
        accs[j, 0] = float(c)
        accs[j, 1] = float(s)
        accs[j, 2] = float(n_in)
        accs[j, 3] = float(tot_)
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


#: the shortest groups (``2^j < 2^SHORT_BITS`` units) compared end by end in :func:`power_of_two_levels_many`
SHORT_BITS = 4


@njit(cache=True, nogil=True, inline="always")
def _longer_groups(best, W, minus_j, plus, e0, j, a, b, top, arg):
    """The candidates whose last group has ``2^j`` units, for the ends ``[a, b)`` at once (each end's
    group starts before ``a``: ``best`` is final there), each kept when strictly cheaper than the end's
    running minimum (``top``, ``arg``, indexed by ``e - e0``)."""
    L = 1 << j
    mj = minus_j[j]
    fj = float(j)
    if L <= a:                                       # every end has this group: no branch, vectorised
        prev = best[a - L:b - L]
        cost = W[j, a - e0:b - e0]
        t_ = top[a - e0:b - e0]
        r_ = arg[a - e0:b - e0]
        for i in range(b - a):
            c = prev[i] + ((cost[i] - mj) + plus)
            t = t_[i]
            lt = c < t
            t_[i] = c if lt else t
            r_[i] = fj if lt else r_[i]
    else:
        for e in range(max(a, L), b):
            c = best[e - L] + ((W[j, e - e0] - mj) + plus)
            if c < top[e - e0]:
                top[e - e0] = c
                arg[e - e0] = fj


@njit(cache=True, nogil=True)
def power_of_two_levels_many(best, back_j, W, minus_j, plus, e0, e1, top, arg):
    """:func:`power_of_two_block` with ``longest`` (the same ``best`` and ``back_j``, bit for bit) for
    several searches on the same windows (row ``i`` of ``best``, ``back_j``, ``minus_j``, ``top``, ``arg``
    and ``plus[i]``: search ``i``), its candidates compared in the same order (from the longest group down)
    but not end by end: a group of ``2^j`` units ending in ``[a, a + 2^j)`` (``a - e0`` a multiple of
    ``2^j``) starts before ``a``, so once the ends before ``a`` are final, those candidates of all ``2^j``
    ends are compared at once (:func:`_longer_groups`; the groups at least as long as the block before any
    end).  Only groups of fewer than ``2^SHORT_BITS`` units are compared end by end, the searches' chains
    side by side in one loop.  Each search sees its candidates in the same order as alone; the windows are
    read once per step for all of them.  ``top``, ``arg``: scratch, one float each per search and end."""
    n_s = best.shape[0]
    n_j = W.shape[0]
    width = e1 - e0
    for i in range(n_s):
        for q in range(width):
            top[i, q] = np.inf
            arg[i, q] = 0.0
    span = 1
    level = 0
    while span < width:
        span <<= 1
        level += 1
    for j in range(n_j - 1, max(level, SHORT_BITS) - 1, -1):
        if (1 << j) < e1:
            for i in range(n_s):
                _longer_groups(best[i], W, minus_j[i], plus[i], e0, j, e0, e1, top[i], arg[i])
    step = 1 << SHORT_BITS
    n_short = min(SHORT_BITS, n_j)
    for o in range(0, width, step):
        a = e0 + o
        for j in range(level - 1, SHORT_BITS - 1, -1):
            if o % (1 << j) == 0 and j < n_j:
                for i in range(n_s):
                    _longer_groups(best[i], W, minus_j[i], plus[i], e0, j, a, min(a + (1 << j), e1), top[i], arg[i])
        for e in range(a, min(a + step, e1)):
            for i in range(n_s):
                b_ = best[i]
                m_ = minus_j[i]
                p_ = plus[i]
                t = top[i, e - e0]
                r = int(arg[i, e - e0])
                for j in range(n_short - 1, -1, -1):
                    if (1 << j) <= e:
                        c = b_[e - (1 << j)] + ((W[j, e - e0] - m_[j]) + p_)
                        lt = c < t
                        t = c if lt else t
                        r = j if lt else r
                b_[e] = t
                back_j[i, e] = r


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


@njit(cache=True, nogil=True)
def _present_ranks(values, lo, seen):
    """``seen[v - lo]`` = the rank of ``v`` among the distinct values below ``lo + seen.size``, -1 for the
    absent ones (integers from ``lo`` on); returns how many there are, or -1 when a value is not an integer."""
    cut = lo + seen.size
    for q in range(values.size):
        v = values[q]
        if v != np.floor(v):
            return -1
        if v < cut:
            seen[int(v - lo)] = 1
    rank = 0
    for r in range(seen.size):
        if seen[r] > 0:
            seen[r] = rank
            rank += 1
        else:
            seen[r] = -1
    return rank


@njit(cache=True, nogil=True)
def _rank_each(values, lo, seen, above, node, dv):
    """``node[q]`` = the rank of ``values[q]`` among the distinct values (``seen`` from
    :func:`_present_ranks`; ``above``: the sorted distinct values from ``lo + seen.size`` on, ranked after
    them), ``dv`` the values."""
    cut = lo + seen.size
    small = dv.size - above.size
    for q in range(values.size):
        v = values[q]
        if v < cut:
            r = seen[int(v - lo)]
        else:
            r = small + np.searchsorted(above, v)
        node[q] = r
        dv[r] = v


def distinct_values(values):
    """The sorted distinct values and each position's index among them (the narrowest integer type).

    Integer values (the counting route's) are ranked by counting: the integers of ``[lo, lo + n)`` (``lo``
    the least value, ``n`` the number of values) in a table of one int32 each, the values beyond (a
    histogram's few large counts) by ``numpy.unique`` of those alone; then one pass gives every rank.  The
    same ranks as ``numpy.unique`` and ``searchsorted`` of all (a sort of all values), and the same
    distinct values up to the sign of a zero (``-0.0`` and ``0.0`` are one value; the windows compare
    them and add them to sums that are never ``-0.0``: the same costs)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    lo = float(values.min()) if values.size else 0.0
    span = min(float(values.max()) - lo + 1.0, float(values.size)) if values.size else 0.0
    seen = np.zeros(int(span) if np.isfinite(span) else 0, dtype=np.int32)
    small = _present_ranks(values, lo, seen) if seen.size else -1
    if small >= 0:
        above = np.unique(values[values >= lo + span]) if span == values.size else np.zeros(0)
        count = small + above.size
        width = np.int16 if count < 2 ** 15 else (np.int32 if count < 2 ** 31 else np.int64)
        node = np.empty(values.size, dtype=width)
        dv = np.empty(count)
        _rank_each(values, lo, seen, above, node, dv)
        return dv, node
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
        self.singles = bool(self.bounds[-1] == k)
        self.idv = None
        self.scratch = np.empty((4, 0))
        if self.singles:                                  # every unit one position: a window of L holds L
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

    def block(self, e0: int, e1: int, out=None, part: int = 0) -> np.ndarray:
        """The windows of the ends ``[e0, e1)``; with single positions, ``part`` 1 or 2 counts only the direct
        or only the sliding lengths' rows (:func:`count_windows_singles`), else every row."""
        if part != 1 and np.any(self.ends[~self.direct] >= e0):
            raise ValueError("CountingWindows: blocks of ends must come in increasing order")
        out = np.empty((self.lengths.size, e1 - e0)) if out is None else out
        if self.singles:
            if self.scratch.shape[1] == 0:
                self.scratch = np.empty((4, DIRECT_CHUNK))
            if self.idv is None:
                self.idv = self.dv.astype(np.int64)
            count_windows_singles(self.node, self.dv, self.idv, self.values, self.lengths, self.direct, self.slot,
                                  self.mult, self.ptrs, self.accs, self.ends, e0, e1, out, self.scratch, part)
            return out
        count_windows_block(self.node, self.dv, self.values, self.bounds, self.lengths, self.direct, self.slot,
                            self.mult, self.ptrs, self.accs, self.ends, e0, e1, out)
        return out
