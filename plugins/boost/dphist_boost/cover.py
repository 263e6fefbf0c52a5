"""The minimal node cover of a range and Hay et al.'s cover estimate H~_q (PVLDB 2010, Section 4.2).

A range of leaves is tiled by the fewest tree nodes; summing their noisy
counts is how the paper answers a range from H~ (error ``c(q) * 2 ell^2 / eps^2``
for ``c(q)`` cover nodes, at most ``2(k-1)`` per level).  Everything is
vectorised over the ranges, with one prefix sum per level.
"""
from __future__ import annotations

import numpy as np

from dphist.errors import InvalidParameter

from .tree import level_sizes


def cover(lo, hi, n_leaves: int, branching: int, top_level: int | None = None):
    """Minimal node cover of leaf ranges ``[lo, hi)``, vectorised over the ranges.

    Yields ``(level, start, end)`` triples of arrays: at ``level`` the cover
    takes nodes ``start[i] .. end[i]-1`` for range ``i`` (empty when
    ``start >= end``).  At each level the partial runs at both ends are taken
    and the rest moves up to the parents; a range that ends at the last node
    of a level counts as aligned (the ragged last parent covers it).  Nodes
    above ``top_level`` are not used (``noisy_root=False``).
    """
    k = int(branching)
    sizes = level_sizes(n_leaves, k)
    top = len(sizes) - 1 if top_level is None else int(top_level)
    lo = np.asarray(lo, dtype=np.int64).copy()
    hi = np.asarray(hi, dtype=np.int64).copy()
    if lo.shape != hi.shape or np.any(lo < 0) or np.any(hi > n_leaves) or np.any(hi < lo):
        raise InvalidParameter(f"ranges must satisfy 0 <= lo <= hi <= {n_leaves}")
    for j in range(top + 1):
        if j == top:
            yield j, lo, hi
            return
        up = -(-lo // k) * k
        down = np.where(hi == sizes[j], hi, hi // k * k)
        whole = up >= down  # no complete parent inside: take the run at this level
        left_end = np.where(whole, hi, np.minimum(up, hi))
        right_start = np.where(whole, hi, down)
        yield j, lo.copy(), left_end
        yield j, right_start, hi.copy()
        lo = np.where(whole, 0, up // k)
        hi = np.where(whole, 0, -(-down // k))


def answer_by_cover(tree_levels: list[np.ndarray | None], lo, hi, branching: int) -> tuple[np.ndarray, np.ndarray]:
    """Range answers summed from the minimal node cover (Hay et al.'s H~_q), and the cover sizes.

    ``tree_levels``: node values per level, leaves first (``None`` for an
    unmeasured level, which is then never used).  ``[lo, hi)`` are leaf
    ranges.  O(G + m * ell) with a prefix sum per level.
    """
    k = int(branching)
    n_leaves = tree_levels[0].size
    top = max(j for j, v in enumerate(tree_levels) if v is not None)
    lo = np.asarray(lo, dtype=np.int64)
    answers = np.zeros(lo.shape, dtype=float)
    counts = np.zeros(lo.shape, dtype=np.int64)
    prefix = [None if v is None else np.concatenate(([0.0], np.cumsum(v))) for v in tree_levels]
    for j, a, b in cover(lo, hi, n_leaves, k, top):
        b = np.maximum(a, b)
        answers += prefix[j][b] - prefix[j][a]
        counts += b - a
    return answers, counts
