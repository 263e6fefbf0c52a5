"""The compiled kd-tree of :func:`dphist_dpcube.kdtree.kd_regions` (numba; imported on first use).

One node at a time on an explicit stack: each node's candidate cuts scored in one pass over its cells,
the leftmost best kept, its children pushed.  The same IEEE operations as the vectorised levels of
``kd_regions`` on every candidate (the squares as products, as numpy's ``** 2``), so the same cuts and
leaves; nothing of the size of the cells is allocated but the leaves (the levels' candidate, node and
score vectors are not built: memory), and a node's cells are read once per level it lives through, without
the per-level gathers whose count grows with the tree's depth.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def kd_leaf_starts(p, q, pw, m, dpbench, gain, xi):
    """The cell indices where the leaves start (unsorted), for the prefix sums ``p`` (centred values),
    ``q`` (their squares over the widths) and ``pw`` (widths) of ``m`` cells; ``dpbench``: the stopping
    rule ``(q_b - q_a) - best + 2 gain < SSE + gain``, else ``SSE / W > xi``."""
    leaves = np.empty(m, dtype=np.int64)
    n_leaves = 0
    stack = np.empty((128, 2), dtype=np.int64)
    stack[0, 0] = 0
    stack[0, 1] = m
    top = 1
    while top > 0:
        top -= 1
        a = stack[top, 0]
        b = stack[top, 1]
        if b - a < 2:
            leaves[n_leaves] = a
            n_leaves += 1
            continue
        pa, pb, wa, wb = p[a], p[b], pw[a], pw[b]
        d = pb - pa
        node_sse = (q[b] - q[a]) - d * d / (wb - wa)
        best = -1.0
        cut = a + 1
        for c in range(a + 1, b):
            pc, wc = p[c], pw[c]
            left = pc - pa
            right = pb - pc
            score = left * left / (wc - wa) + right * right / (wb - wc)
            if score > best or c == a + 1:
                best = score
                cut = c
        if dpbench:
            split = (q[b] - q[a]) - best + 2.0 * gain < node_sse + gain
        else:
            split = node_sse / (wb - wa) > xi
        if not split:
            leaves[n_leaves] = a
            n_leaves += 1
            continue
        if top + 2 > stack.shape[0]:
            bigger = np.empty((2 * stack.shape[0], 2), dtype=np.int64)
            bigger[:top] = stack[:top]
            stack = bigger
        stack[top, 0] = cut
        stack[top, 1] = b
        stack[top + 1, 0] = a
        stack[top + 1, 1] = cut
        top += 2
    return leaves[:n_leaves]
