"""DPCube on a 2-D grid, as DPBench's ``DPcube_engine`` (Hay et al., SIGMOD 2016) runs it.

Phase 1 (``dpcube.cells`` on a grid): blocks of ``gz x gz`` cells (the last row and column of
blocks keep the remainder; DPBench's ``UG_engine(gz=11)``), one Laplace count per block with
``eps_1 = alpha * eps`` (disjoint blocks: one ``laplace_partition`` call, sensitivity 1), spread
evenly over the block's cells.

Phase 2 (``dpcube.kd`` on a grid, post-processing of the phase-1 estimate): a kd-tree of boxes.  A
box is cut across its longer side (across the columns on a square box), at the position that
minimises SSE(left) + SSE(right) of the estimate (the leftmost on ties), when
``SSE(L) + SSE(R) + 2/eps_2 < SSE(box) + 1/eps_2`` (DPBench's rule, with its ``1/eps_2`` per region:
not the variance of a noisy count, kept as the reference has it; ``eps_2`` the finalizer's
budget).  DPBench tries every cut position; so do we.  Read, not copied: the reference's
recursion is re-expressed level by level: all boxes of one level and all their candidate cuts
are scored at once from summed-area tables of the (centred) estimate and its squares.

Phase 3: the core's ``group-mean`` measures the leaf boxes (one ``laplace_partition``, eps_2) and
spreads each noisy count over its cells, as DPBench does.
"""
from __future__ import annotations

import numpy as np

from dphist import Partition


def block_partition(shape, gz: int) -> Partition:
    """The ``gz x gz`` blocks of a grid as groups of flattened cells (blocks in row-major order)."""
    rows, cols = (int(s) for s in shape)
    nbc = -(-cols // gz)
    ids = ((np.arange(rows) // gz)[:, None] * nbc + (np.arange(cols) // gz)[None, :]).ravel()
    order = np.argsort(ids, kind="stable")
    return Partition(order, np.concatenate(([0], np.cumsum(np.bincount(ids)))), validate=False)


def _sat(v: np.ndarray) -> np.ndarray:
    out = np.zeros((v.shape[0] + 1, v.shape[1] + 1))
    out[1:, 1:] = np.cumsum(np.cumsum(v, axis=0), axis=1)
    return out


def _box(sat, r0, r1, c0, c1):
    return sat[r1, c1] - sat[r0, c1] - sat[r1, c0] + sat[r0, c0]


def kd_boxes(estimate: np.ndarray, eps_2: float) -> np.ndarray:
    """The leaf boxes ``(r0, r1, c0, c1)`` (half-open, one row each) of DPBench's 2-D DPCube tree."""
    est = np.asarray(estimate, dtype=float)
    v = est - est.mean()                      # SSE is shift-invariant; centring loses less to cancellation
    S, Q = _sat(v), _sat(v * v)
    penalty = 1.0 / float(eps_2)
    boxes = np.array([[0, est.shape[0], 0, est.shape[1]]], dtype=np.int64)
    leaves = []
    while boxes.size:
        r0, r1, c0, c1 = boxes.T
        across_rows = (r1 - r0) > (c1 - c0)    # DPBench: cut the rows when the box is taller than wide
        length = np.where(across_rows, r1 - r0, c1 - c0)
        single = length < 2
        leaves.append(boxes[single])
        boxes = boxes[~single]
        if not boxes.size:
            break
        r0, r1, c0, c1 = boxes.T
        across_rows, length = across_rows[~single], length[~single]
        counts = length - 1
        first = np.cumsum(counts) - counts
        node = np.repeat(np.arange(boxes.shape[0]), counts)
        k = np.arange(counts.sum()) - np.repeat(first, counts) + 1          # cut after k rows / columns
        rows = across_rows[node]
        a0, a1, b0, b1 = r0[node], r1[node], c0[node], c1[node]
        mid_r = np.where(rows, a0 + k, a1)       # left part: [a0, mid_r) x [b0, mid_c)
        mid_c = np.where(rows, b1, b0 + k)
        start_r = np.where(rows, a0 + k, a0)     # right part: [start_r, a1) x [start_c, b1)
        start_c = np.where(rows, b0, b0 + k)
        area_l = (mid_r - a0) * (mid_c - b0)
        area_r = (a1 - start_r) * (b1 - start_c)
        sse = (_box(Q, a0, mid_r, b0, mid_c) - _box(S, a0, mid_r, b0, mid_c) ** 2 / area_l
               + _box(Q, start_r, a1, start_c, b1) - _box(S, start_r, a1, start_c, b1) ** 2 / area_r)
        best = np.minimum.reduceat(sse, first)
        hit = np.flatnonzero(sse == best[node])
        cut = k[hit[np.r_[True, node[hit][1:] != node[hit][:-1]]]]          # leftmost best cut per box
        whole = _box(Q, r0, r1, c0, c1) - _box(S, r0, r1, c0, c1) ** 2 / ((r1 - r0) * (c1 - c0))
        split = best + 2.0 * penalty < whole + penalty
        leaves.append(boxes[~split])
        boxes, cut, across_rows = boxes[split], cut[split], across_rows[split]
        r0, r1, c0, c1 = boxes.T
        left = np.stack([r0, np.where(across_rows, r0 + cut, r1), c0, np.where(across_rows, c1, c0 + cut)], axis=1)
        right = np.stack([np.where(across_rows, r0 + cut, r0), r1, np.where(across_rows, c0, c0 + cut), c1], axis=1)
        boxes = np.stack([left, right], axis=1).reshape(-1, 4)
    return np.concatenate(leaves) if leaves else np.zeros((0, 4), dtype=np.int64)


def boxes_partition(boxes: np.ndarray, cols: int) -> Partition:
    """Boxes tiling a grid of ``cols`` columns as groups of flattened cells (row-major inside a box)."""
    r0, r1, c0, c1 = np.asarray(boxes, dtype=np.int64).T
    h, w = r1 - r0, c1 - c0
    box_of_row = np.repeat(np.arange(r0.size), h)                     # one entry per (box, row)
    row = r0[box_of_row] + (np.arange(h.sum()) - np.repeat(np.cumsum(h) - h, h))
    width = w[box_of_row]
    start = np.repeat(row * cols + c0[box_of_row], width)
    order = start + (np.arange(width.sum()) - np.repeat(np.cumsum(width) - width, width))
    return Partition(order, np.concatenate(([0], np.cumsum(h * w))), validate=False)
