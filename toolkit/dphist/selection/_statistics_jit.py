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
def block4(a, b, c, d, q):
    """One block of four counts of sum ``X = 4 q_b + r_b``: ``(sum |x - q|, #{x > q}, sum |x - q_b|,
    r_b (4 - 2 #{x > q_b}))``."""
    total = a + b + c + d
    qb = total >> 2
    above = np.int64(a > qb) + np.int64(b > qb) + np.int64(c > qb) + np.int64(d > qb)
    return (abs(a - q) + abs(b - q) + abs(c - q) + abs(d - q),
            np.int64(a > q) + np.int64(b > q) + np.int64(c > q) + np.int64(d > q),
            abs(a - qb) + abs(b - qb) + abs(c - qb) + abs(d - qb), (total & 3) * (4 - 2 * above))


@njit(cache=True, nogil=True)
def line_sums(x, q):
    """One pass over the flat ``x`` in blocks of 4 bins (the last one shorter): ``(ad, gd, aw, rw, at,
    rt)`` with ``ad = sum |x_i - q|``, ``gd`` the number of ``x_i > q``; per whole block of sum ``X = 4 q_b
    + r_b``: ``aw`` the sum of ``|x_i - q_b|`` and ``rw`` of ``r_b (4 - 2 g_b)`` (``g_b`` its bins above
    ``q_b``); ``at`` and ``rt`` the same for the shorter last block."""
    n = x.size
    full = n - n % 4
    ad = np.int64(0)
    gd = np.int64(0)
    aw = np.int64(0)
    rw = np.int64(0)
    for s in range(0, full, 4):
        d0, g0, a0, r0 = block4(x[s], x[s + 1], x[s + 2], x[s + 3], q)
        ad += d0
        gd += g0
        aw += a0
        rw += r0
    k = n - full
    at = np.int64(0)
    rt = np.int64(0)
    if k > 0:
        total = np.int64(0)
        for i in range(full, n):
            total += x[i]
        qb = total // k
        g = np.int64(0)
        for i in range(full, n):
            v = x[i]
            ad += abs(v - q)
            gd += np.int64(v > q)
            at += abs(v - qb)
            g += np.int64(v > qb)
        rt = (total - qb * k) * (k - 2 * g)
    return ad, gd, aw, rw, at, rt


@njit(cache=True, nogil=True)
def grid_sums(g, q):
    """One pass over the 2-D ``g`` in blocks of 2 x 2 cells (1 or 2 cells on an odd side's last row or
    column of blocks): ``(ad, gd, aw, rw4)``, ``ad`` and ``gd`` as :func:`line_sums`', ``aw`` the sum of
    ``|x - q_b|`` and ``rw4`` of ``r_b (k_b - 2 g_b) 4 / k_b`` over blocks of ``k_b`` cells and sum
    ``k_b q_b + r_b``: ``W = (4 aw + rw4) / 4``.  A block of 2 cells adds nothing to ``rw4`` (an odd sum
    means two different counts, one above ``q_b``: ``g_b = 1``), nor does a block of one."""
    rows, cols = g.shape
    ad = np.int64(0)
    gd = np.int64(0)
    aw = np.int64(0)
    rw = np.int64(0)
    for i in range(0, rows - 1, 2):
        top = g[i]
        bottom = g[i + 1]
        for j in range(0, cols - 1, 2):
            d0, g0, a0, r0 = block4(top[j], top[j + 1], bottom[j], bottom[j + 1], q)
            ad += d0
            gd += g0
            aw += a0
            rw += r0
        if cols % 2:                                    # blocks of 2 x 1 in the last column
            a = top[cols - 1]
            c = bottom[cols - 1]
            qb = (a + c) >> 1
            ad += abs(a - q) + abs(c - q)
            gd += np.int64(a > q) + np.int64(c > q)
            aw += abs(a - qb) + abs(c - qb)
    if rows % 2:                                        # blocks of 1 x 2 (and 1 x 1) in the last row
        top = g[rows - 1]
        for j in range(0, cols, 2):
            a = top[j]
            if j + 1 < cols:
                c = top[j + 1]
                qb = (a + c) >> 1
                ad += abs(a - q) + abs(c - q)
                gd += np.int64(a > q) + np.int64(c > q)
                aw += abs(a - qb) + abs(c - qb)
            else:                                       # one cell: its own mean, no deviation
                ad += abs(a - q)
                gd += np.int64(a > q)
    return ad, gd, aw, rw



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
    cuts): ``(T, cv, cb, ad, gd, aw, rw, at, rt)``, :func:`coarse_parts` and :func:`line_sums` with ``q = T
    // n`` (all 0 past ``T`` when ``T = 0``)."""
    sums = coarse_sums(g, rows, cols)
    total = sums.sum()
    z = np.int64(0)
    if total == 0:
        return total, z, z, z, z, z, z, z, z
    n = g.size
    cv, cb = coarse_parts(sums, rows, cols, total // n, total % n, n)
    ad, gd, aw, rw, at, rt = line_sums(g[0], total // n)
    return total, cv, cb, ad, gd, aw, rw, at, rt


@njit(cache=True, nogil=True)
def grid_statistics(g, rows, cols):
    """A grid's integers in one call: ``(T, cv, cb, ad, gd, aw, rw4)``, :func:`coarse_parts` and
    :func:`grid_sums` with ``q = T // n`` (all 0 past ``T`` when ``T = 0``)."""
    sums = coarse_sums(g, rows, cols)
    total = sums.sum()
    z = np.int64(0)
    if total == 0:
        return total, z, z, z, z, z, z
    n = g.size
    cv, cb = coarse_parts(sums, rows, cols, total // n, total % n, n)
    ad, gd, aw, rw = grid_sums(g, total // n)
    return total, cv, cb, ad, gd, aw, rw
