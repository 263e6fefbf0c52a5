"""Mode (e) of :mod:`dphist.segmentation` with AHP's look-ahead lower bound (Zhang et al., SDM 2014,
Section 4.2 and Algorithm 3): the greedy scan and err*, as plain Python over indexable sequences.

One source, two ways to run it.  :mod:`.kernels` compiles these functions with numba (the helpers
through ``register_jitable``; ``penalty`` and ``share`` through typed overloads), for arrays.  The
same functions run interpreted on Python lists (:func:`greedy_interpreted`): AHP on a few thousand
bins then finishes before numba would have been imported (``dphist run -a AHP`` on 4,096 bins; see
:func:`dphist.segmentation.search.greedy`).  Both execute the same IEEE double operations in the
same order, so they return the same cuts and the same total, bit for bit (a test compares them).

The values may also come with their longest run of zeros left out (:func:`scan_taken`,
:func:`gather_outside`): ``x`` is then ``(kept, a, b)``, the values outside the run ``[a, b)`` of ``+0.0``,
and ``prefix`` is ``(sums, a, b)``, their prefix sums (:func:`value`, :func:`prefix_at`).  AHP's
thresholded H~ sorted is mostly such a run (95% of 2^24 bins), so the scans hold a few floats, not two
arrays of n, and never read the run.

This module imports no numba.
"""
from __future__ import annotations

import math

import numpy as np


def penalty(pen, m):
    """The penalty of a group of m positions: ``pen[m]`` from a table, or ``pen / m`` when ``pen`` is
    the coefficient c of a penalty c / size.  Chosen by the argument's type when numba compiles,
    so neither form pays for the other (a runtime test here made AHP's greedy 15-60% slower);
    the closed form avoids a table read, a cache miss where sizes jump (galloping, divide and
    conquer)."""
    return pen / m if isinstance(pen, float) else pen[m]


def share(shares, m):
    """A position's share of the penalty of a group of m: ``shares[m]``, or c / m^2 (see penalty)."""
    return shares / (m * m) if isinstance(shares, float) else shares[m]

def value(x, j):
    """x_j: ``x[j]``, or from ``x = (kept, a, b)``, values whose positions ``[a, b)`` hold ``+0.0`` and the
    others ``kept`` in order (:func:`gather_outside`): ``kept[j]`` before the run, ``kept[j - (b - a)]``
    after it."""
    if isinstance(x, tuple):
        kept, a, b = x
        if j < a:
            return kept[j]
        return 0.0 if j < b else kept[j - (b - a)]
    return x[j]


def length(x):
    """The number of positions of ``x`` (see :func:`value`)."""
    if isinstance(x, tuple):
        return len(x[0]) + (x[2] - x[1])
    return len(x)


def prefix_at(prefix, l):
    """x_0 + ... + x_{l-1}, as ``numpy.cumsum`` adds them: ``prefix[l]``, or from ``prefix = (sums, a, b)``
    (:func:`gather_outside`), the prefix sums with the run of zeros ``[a, b)`` left out: adding the run's
    zeros leaves a sum unchanged, so every ``prefix[l]`` with ``a <= l <= b`` is ``sums[a]``."""
    if isinstance(prefix, tuple):
        sums, a, b = prefix
        if l <= a:
            return sums[l]
        return sums[a] if l <= b else sums[l - (b - a)]
    return prefix[l]


def known_run_end(x, j):
    """The last position of the run of zeros ``[a, b)`` of ``x = (kept, a, b)`` when it holds j, else -1."""
    if isinstance(x, tuple) and x[1] <= j < x[2]:
        return x[2] - 1
    return -1


def run_stop(x, j):
    """The last position of x_j's run of equal neighbours (x_j itself when x_{j+1} differs): read where the
    scans need it, one run at a time, instead of a vector of n run ends (memory); the known run of zeros
    of ``x = (kept, a, b)`` is not read at all (:func:`known_run_end`)."""
    k = known_run_end(x, j)
    if k >= 0:
        return k
    n = length(x)
    k = j
    v = value(x, j)
    while k + 1 < n and value(x, k + 1) == v:     # == is transitive on floats: the neighbours' test
        k += 1
    return k


def scan_taken(values, order):
    """One pass over ``values[order]`` (``values`` when ``order`` is None), read through the order:
    ``(finite, non_decreasing, non_increasing, a, b)``, ``[a, b)`` the longest run of zeros (the first of
    equal lengths) whose neighbours are not 0, every zero of it ``+0.0`` (``a = b = 0`` when there is
    none).  Neighbours are compared as :func:`dphist.segmentation.search._is_monotone` compares them."""
    n = len(values) if order is None else len(order)
    finite = True
    up = True
    down = True
    best_a = 0
    best_b = 0
    start = -1                  # the first position of the current run of zeros, -1 outside one
    plain = True                # whether every zero of the current run is +0.0
    prev = 0.0
    for i in range(n):
        v = values[i] if order is None else values[order[i]]
        if not math.isfinite(v):
            finite = False
        if i > 0:
            if not (v >= prev):
                up = False
            if not (v <= prev):
                down = False
        if v == 0.0:
            if start < 0:
                start = i
                plain = True
            if math.copysign(1.0, v) < 0.0:
                plain = False
        elif start >= 0:
            if plain and i - start > best_b - best_a:
                best_a = start
                best_b = i
            start = -1
        prev = v
    if start >= 0 and plain and n - start > best_b - best_a:
        best_a = start
        best_b = n
    return finite, up, down, best_a, best_b


def gather_outside(values, order, a, b, kept, sums):
    """The values ``values[order]`` (``values`` when ``order`` is None) outside their run of zeros ``[a, b)``
    (:func:`scan_taken`) written in order into ``kept`` (``n - (b - a)`` floats), and their prefix sums into
    ``sums`` (one more): ``sums[l]`` for ``l <= a`` and ``sums[l - (b - a)]`` for ``l >= b`` are
    ``numpy.cumsum``'s sums of all the values (its first sum the first value itself, then one addition a
    value, in order).  Adding the run's ``+0.0`` leaves a sum unchanged unless the sum is ``-0.0``, and a
    rounded sum is ``-0.0`` only when every term is: x_{a-1} would then be a zero next to the run, which
    :func:`scan_taken`'s runs of zeros (all ``+0.0``, neighbours not 0) exclude."""
    n = len(values) if order is None else len(order)
    sums[0] = 0.0
    s = 0.0
    k = 0
    for i in range(n):
        if a <= i < b:
            continue
        v = values[i] if order is None else values[order[i]]
        s = v if i == 0 else s + v
        kept[k] = v
        k += 1
        sums[k] = s


def _deviation_sq(xj, pj, prefix, j, l):
    """(x_j - mean(x_j..x_l))^2 from x_j and ``pj``, the sum before x_j (read once by the caller)."""
    m = l - j + 1
    d = xj - (prefix_at(prefix, l + 1) - pj) / m
    return d * d


def _candidate(xj, pj, prefix, shares, j, l):
    """f_j(l) = (x_j - mean(x_j..x_l))^2 + share(l - j + 1): x_j's part of the group [j, l]."""
    return _deviation_sq(xj, pj, prefix, j, l) + share(shares, l - j + 1)


def scan_lower_bound(x, prefix, j, stop, shares, early_stop):
    """err*(x_j) = min_{l >= j} f_j(l) by scanning l upwards (AHP Section 4.2), with the paper's
    early stop when ``early_stop`` (sorted values and a non-increasing share); the running minimum.
    ``stop``: the end of x_j's run of equal values (:func:`run_stop`)."""
    n = length(x)
    xj = value(x, j)
    pj = prefix_at(prefix, j)
    le_min = share(shares, n - j)
    l = stop
    m = l - j + 1
    ae = 0.0
    le = share(shares, m)
    best = ae + le
    while l + 1 < n:
        ae_next = _deviation_sq(xj, pj, prefix, j, l + 1)
        if early_stop and ae_next - ae >= le - le_min:
            break
        l += 1
        m += 1
        ae = ae_next
        le = share(shares, m)
        if ae + le < best:
            best = ae + le
    return best


def lower_bound_exceeds(x, prefix, j, stop, shares, target, stack):
    """Whether err*(x_j) > target on sorted values (galloping on the monotone deviation term, then
    branch and bound on [a, b] with the bound dev(a) + share(b)); equals scan_lower_bound > target.
    ``stop``: the end of x_j's run of equal values (:func:`run_stop`); ``stack``: the branch and bound's
    intervals, a (128, 2) int64 array of the caller's, reused by every call (no allocation per decision)."""
    n = length(x)
    le_min = share(shares, n - j)
    lo = stop
    if share(shares, lo - j + 1) <= target:
        return False
    limit = target - le_min
    if limit < 0.0:
        return True
    xj = value(x, j)
    pj = prefix_at(prefix, j)
    hi = lo
    step = 1
    while hi + step < n and _deviation_sq(xj, pj, prefix, j, hi + step) <= limit:
        hi += step
        step *= 2
    while step > 1:
        step //= 2
        if hi + step < n and _deviation_sq(xj, pj, prefix, j, hi + step) <= limit:
            hi += step
    if hi <= lo:
        return True
    stack[0, 0] = lo + 1
    stack[0, 1] = hi
    top = 1
    while top > 0:
        top -= 1
        a = stack[top, 0]
        b = stack[top, 1]
        if _candidate(xj, pj, prefix, shares, j, b) <= target:
            return False
        if _deviation_sq(xj, pj, prefix, j, a) + share(shares, b - j + 1) > target:
            continue
        if b - a < 8:
            for l in range(a, b):
                if _candidate(xj, pj, prefix, shares, j, l) <= target:
                    return False
            continue
        mid = (a + b) // 2
        stack[top, 0] = a
        stack[top, 1] = mid
        top += 1
        stack[top, 0] = mid + 1
        stack[top, 1] = b - 1
        top += 1
    return True


def all_lower_bounds(x, prefix, shares, early_stop):
    out = np.empty(length(x))
    stop = -1
    for j in range(length(x)):
        if j > stop:                # the first position of a run: its end, shared by the rest of the run
            stop = run_stop(x, j)
        out[j] = scan_lower_bound(x, prefix, j, stop, shares, early_stop)
    return out


def greedy_lookahead(x, prefix, pen, shares, early_stop, decide_early, skip_runs):
    """Mode (e) with AHP's look-ahead bound (Algorithm 3): x_j joins the current group C iff
    cost(C u x_j) - cost(C) < err*(x_j).  The group's mean and SSE follow Welford's recurrences.

    ``skip_runs`` (the caller's promise: the penalty is c / size with c a normal positive float, at least
    1e-200 and at most 1e200): once x_j has joined a group of equal values (its deviation from the mean 0, the
    group's SSE 0), the rest of x_j's run of equal values joins it without the test.  Each of them would
    have deviation 0 and SSE 0 as well, so cost(C u x) - cost(C) = c / (m + 1) - c / m, which is below 0 in
    floating point (the two quotients are normal and differ by a factor 1 + 1/m, far above rounding), while
    err* is a minimum of squares plus shares c / m^2 > 0, never below 0: every one joins, as the test
    decides.  The mean and the SSE stay what they were (adding 0 to them; at most a zero's sign, which no
    comparison and no sum with the positive penalties sees): the same cuts and the same total.  AHP's
    thresholded H~ sorted is mostly one run of zeros (91% of 2^20 bins)."""
    n = length(x)
    cut = np.zeros(n + 1, dtype=np.bool_)   # one flag per position (an eighth of a vector of n + 1 cuts: memory)
    cut[0] = True
    stack = np.empty((128, 2), dtype=np.int64)   # lower_bound_exceeds' intervals
    m = 1
    mean = value(x, 0)
    ssd = 0.0
    total = 0.0                 # the cost of the closed groups (their running SSE + penalty)
    j = 0
    stop = -1                   # the end of the run of equal values holding x_j (run_stop, once per run)
    while j + 1 < n:
        j += 1
        if j > stop:
            stop = run_stop(x, j)
        xj = value(x, j)
        d = xj - mean
        grown = ssd + m / (m + 1.0) * d * d + penalty(pen, m + 1)
        kept = ssd + penalty(pen, m)
        target = grown - kept
        if decide_early and early_stop:
            merge = lower_bound_exceeds(x, prefix, j, stop, shares, target, stack)
        else:
            merge = scan_lower_bound(x, prefix, j, stop, shares, early_stop) > target
        if merge:
            m += 1
            mean += d / m
            ssd += d * (xj - mean)
            if skip_runs and d == 0.0 and ssd == 0.0 and stop > j:
                m += stop - j
                j = stop
        else:
            total += kept
            cut[j] = True
            m = 1
            mean = xj
            ssd = 0.0
    cut[n] = True
    return np.flatnonzero(cut), total + ssd + penalty(pen, m)
