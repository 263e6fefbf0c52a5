"""Compiled loops of the pruned tree (:mod:`.pruned_tree`), imported on first use.

Each loop does in one pass what the numpy code did in several passes and arrays over the groups, with
the same operations in the same order (the least squares' sums as ``numpy.bincount`` adds: children in
ascending order from 0.0), so the results are the same numbers (``tests/test_kellaris.py`` compares
them with the numpy formulas on padded, pruned and unmeasured trees).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def group_root_levels(bounds, n, branching, height, out):
    """``out[g]``: the highest level ``h <= height`` whose node ``[s, min(s + B^h, n))`` is group ``g``'s
    bins (``s`` a multiple of ``B^h``), or -1; returns the first group with -1, or -1 if none."""
    bad = -1
    for g in range(bounds.size - 1):
        s = bounds[g]
        e = bounds[g + 1]
        level = -1
        span = 1
        for h in range(height + 1):
            if s % span == 0 and e == min(s + span, n):
                level = h
            elif span >= e - s:
                break                # wider nodes only grow past e
            span *= branching
        out[g] = level
        if level < 0 and bad < 0:
            bad = g
    return bad


@njit(cache=True, nogil=True)
def bound_levels(bounds, n, branching, height, out):
    """``out[i]``: the highest level ``h <= height`` at which ``bounds[i]`` is a node bound (a multiple of
    ``B^h``, or ``n``): level ``h``'s cuts are the bounds with ``out >= h``."""
    for i in range(bounds.size):
        b = bounds[i]
        if b == n or b == 0:
            out[i] = height
            continue
        level = 0
        span = branching
        while level < height and b % span == 0:
            level += 1
            span *= branching
        out[i] = level


@njit(cache=True, nogil=True, error_model="numpy")
def upward(child_cuts, cuts, z_child, prec_child, y, measured, own_precision, z, prec, s, s_var):
    """One level of the bottom-up pass: each interval's children's sums ``s`` and ``s_var`` (their
    estimates and variances), then its estimate ``z`` and precision ``prec`` combining its own
    measurement ``y`` (when measured) with the children's sum."""
    s[:] = 0.0
    s_var[:] = 0.0
    j = 0
    for i in range(child_cuts.size - 1):
        while j + 2 < cuts.size and cuts[j + 1] <= child_cuts[i]:
            j += 1
        s[j] += z_child[i]
        p = prec_child[i]
        s_var[j] += 1.0 / max(p, 1e-300) if p > 0 else np.inf
    for j in range(cuts.size - 1):
        v = s_var[j]
        if np.isfinite(v):
            sp = 1.0 / (v if v > 0 else 1.0)
        else:
            sp = 0.0
        own = own_precision if measured[j] else 0.0
        yj = y[j] if measured[j] else 0.0
        total = own + sp
        z[j] = (own * yj + sp * s[j]) / (total if total > 0 else 1.0) if total > 0 else 0.0
        prec[j] = total


@njit(cache=True, nogil=True, error_model="numpy")
def downward(child_cuts, cuts, final, s, s_var, prec_child, z_child):
    """One level of the top-down pass, in place: each child's estimate ``z_child`` plus its parent's
    residual ``final - s`` times its share of the children's variance (all of it for an only child)."""
    children = np.zeros(cuts.size - 1, dtype=np.int64)
    j = 0
    for i in range(child_cuts.size - 1):
        while j + 2 < cuts.size and cuts[j + 1] <= child_cuts[i]:
            j += 1
        children[j] += 1
    j = 0
    for i in range(child_cuts.size - 1):
        while j + 2 < cuts.size and cuts[j + 1] <= child_cuts[i]:
            j += 1
        p = prec_child[i]
        var = 1.0 / max(p, 1e-300) if p > 0 else np.inf
        share = 1.0 if children[j] == 1 else var / s_var[j]
        z_child[i] = z_child[i] + (final[j] - s[j]) * share


@njit(cache=True, nogil=True)
def spread_in_order(bounds, totals, out):
    """Each bin of group ``g`` (``[bounds[g], bounds[g + 1])``, domain order) gets ``totals[g] / size``: the
    numbers of :meth:`dphist.Partition.spread` (a float total over the int64 size), written in place, without
    its arrays of sizes and of per-group values."""
    for g in range(bounds.size - 1):
        a = bounds[g]
        b = bounds[g + 1]
        v = totals[g] / (b - a)
        for j in range(a, b):
            out[j] = v
    return out
