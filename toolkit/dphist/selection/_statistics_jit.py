"""The compiled passes of :mod:`dphist.selection.features` over integer counts (numba).

Imported on first use by :func:`dphist.selection.features._compiled`, never with the package, so that
``import dphist`` and ``dphist --help`` do not pay for numba.  Each function returns exact integers
(int64 sums of integers; the caller's precondition, a non-negative total below ``2**62``, keeps every
sum below ``2**63``); :mod:`dphist.selection.features` turns them into the statistics with Python
integers, and its numpy route computes the same integers (``tests/test_selection.py`` compares the two).
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def coarse_sums(g, rows, cols):
    """The sums of the blocks ``[rows[a], rows[a+1]) x [cols[b], cols[b+1])`` of the 2-D ``g``."""
    out = np.zeros((rows.size - 1, cols.size - 1), np.int64)
    for a in range(rows.size - 1):
        for i in range(rows[a], rows[a + 1]):
            line = g[i]
            for b in range(cols.size - 1):
                out[a, b] += line[cols[b]:cols[b + 1]].sum()
    return out


@njit(cache=True, nogil=True)
def deviations(x, q):
    """``(sum |x_i - q|, #{x_i > q})`` over the flat ``x``: one contiguous pass (vectorised by the
    compiler)."""
    ad = np.int64(0)
    gd = np.int64(0)
    for i in range(x.size):
        v = x[i] - q
        ad += abs(v)
        gd += v > 0
    return ad, gd


#: below this total a block pass sums its parts in one int64 (at most ``3 T`` < 2**63); above, split at 4
SPLIT_TOTAL = 1 << 61


@njit(cache=True, nogil=True)
def above_block(a, b, c, d):
    """``sum_i max(4 x_i - X, 0)`` of a block of four counts of sum ``X``: half of ``sum_i |4 x_i - X|``
    (the signed terms sum to 0), that is ``2 W`` of the block."""
    t = a + b + c + d
    return max(4 * a - t, 0) + max(4 * b - t, 0) + max(4 * c - t, 0) + max(4 * d - t, 0)


@njit(cache=True, nogil=True)
def line_sums(x, q, split):
    """The flat ``x`` in blocks of 4 bins (the last one shorter): ``(ad, gd, vh, vl, wt)`` with ``ad`` and
    ``gd`` as :func:`deviations`'; over the whole blocks ``2 W = sum_b above_block = 4 vh + vl`` (``split``:
    each block's part split at 4, so that ``vh`` stays below ``T`` for any total below ``2**62``; else ``vh
    = 0``, the sum in ``vl``); ``wt = sum_i |k x_i - X|`` over the shorter last block of ``k`` bins and sum
    ``X`` (``k W`` there).  The blocks are indexed ``4 i + j`` (the compiler vectorises that loop, not one
    stepping by 4)."""
    n = x.size
    nb = n // 4
    ad, gd = deviations(x, q)
    vh = np.int64(0)
    vl = np.int64(0)
    if split:
        for i in range(nb):
            v = above_block(x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3])
            vh += v >> 2
            vl += v & 3
    else:
        for i in range(nb):
            vl += above_block(x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3])
    k = n - 4 * nb
    wt = np.int64(0)
    if k > 0:
        total = np.int64(0)
        for i in range(4 * nb, n):
            total += x[i]
        for i in range(4 * nb, n):
            wt += abs(k * x[i] - total)
    return ad, gd, vh, vl, wt


@njit(cache=True, nogil=True)
def grid_sums(g, q, split):
    """The 2-D ``g`` in blocks of 2 x 2 cells (1 or 2 cells on an odd side's last row or column of
    blocks): ``(ad, gd, vh, vl, e)``, ``ad`` and ``gd`` as :func:`deviations`', ``W = (4 vh + vl) / 2 + e``:
    the blocks of 4 cells as in :func:`line_sums`, ``e`` the sum of ``|a - c|`` over the blocks of 2 cells
    (their distance to their mean), a block of one nothing."""
    rows, cols = g.shape
    ad, gd = deviations(g.ravel(), q)
    vh = np.int64(0)
    vl = np.int64(0)
    e = np.int64(0)
    half = cols // 2
    for r in range(rows // 2):
        top = g[2 * r]
        bottom = g[2 * r + 1]
        if split:
            for j in range(half):
                v = above_block(top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1])
                vh += v >> 2
                vl += v & 3
        else:
            for j in range(half):
                vl += above_block(top[2 * j], top[2 * j + 1], bottom[2 * j], bottom[2 * j + 1])
        if cols % 2:                                    # blocks of 2 x 1 in the last column
            e += abs(top[cols - 1] - bottom[cols - 1])
    if rows % 2:                                        # blocks of 1 x 2 (and 1 x 1) in the last row
        top = g[rows - 1]
        for j in range(half):
            e += abs(top[2 * j] - top[2 * j + 1])
    return ad, gd, vh, vl, e


@njit(cache=True, nogil=True)
def coarse_parts(sums, rows, cols, q, r, n):
    """``(cv, cb)`` with ``C = sum_j |X_j - s_j T / n| = (n cv + cb) / n`` over the coarse blocks (sums
    ``X_j``, ``s_j`` cells) for ``T = q n + r``: with ``s_j r = a_j n + b_j`` (``0 <= b_j < n``) and ``v_j =
    X_j - s_j q - a_j`` the term is ``v_j - b_j / n`` when ``v_j >= 1``, else ``b_j / n - v_j`` (every product
    below ``2**62`` for ``n < 2**31``)."""
    cv = np.int64(0)
    cb = np.int64(0)
    for a in range(rows.size - 1):
        for b in range(cols.size - 1):
            cells = (rows[a + 1] - rows[a]) * (cols[b + 1] - cols[b])
            share = cells * r
            whole = share // n
            v = sums[a, b] - cells * q - whole
            if v >= 1:
                cv += v
                cb -= share - whole * n
            else:
                cv -= v
                cb += share - whole * n
    return cv, cb


@njit(cache=True, nogil=True)
def line_statistics(g, rows, cols):
    """A vector's integers in one call (``g`` its one-row view, ``rows`` = ``[0, 1]``, ``cols`` the coarse
    cuts): ``(T, cv, cb, ad, gd, vh, vl, wt)``, :func:`coarse_parts` and :func:`line_sums` with ``q = T //
    n`` (all 0 past ``T`` when ``T = 0``)."""
    sums = coarse_sums(g, rows, cols)
    total = sums.sum()
    z = np.int64(0)
    if total == 0:
        return total, z, z, z, z, z, z, z
    n = g.size
    cv, cb = coarse_parts(sums, rows, cols, total // n, total % n, n)
    ad, gd, vh, vl, wt = line_sums(g[0], total // n, total >= SPLIT_TOTAL)
    return total, cv, cb, ad, gd, vh, vl, wt


@njit(cache=True, nogil=True)
def grid_statistics(g, rows, cols):
    """A grid's integers in one call: ``(T, cv, cb, ad, gd, vh, vl, e)``, :func:`coarse_parts` and
    :func:`grid_sums` with ``q = T // n`` (all 0 past ``T`` when ``T = 0``)."""
    sums = coarse_sums(g, rows, cols)
    total = sums.sum()
    z = np.int64(0)
    if total == 0:
        return total, z, z, z, z, z, z, z
    n = g.size
    cv, cb = coarse_parts(sums, rows, cols, total // n, total % n, n)
    ad, gd, vh, vl, e = grid_sums(g, total // n, total >= SPLIT_TOTAL)
    return total, cv, cb, ad, gd, vh, vl, e
