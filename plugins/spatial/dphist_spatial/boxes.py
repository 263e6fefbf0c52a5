"""A tree of boxes over a 2-D grid whose splits are chosen level by level (kd-tree and hybrid tree).

A node is a box of cells ``[r0, r1) x [c0, c1)``.  A level is grown from the one above by cutting
every box at a row ``rc`` and a column ``cc`` (``rc = r1`` or ``cc = c1``: no cut on that axis)
into at most four children, in the order top-left, top-right, bottom-left, bottom-right, empty
children dropped; a box cut on no axis has one child, itself.  The boxes of one level are disjoint
and cover the grid, so a level is one :class:`dphist.Partition` of the flattened cells, measured by
the kernel's ``laplace_partition`` with sensitivity 1.

Two split rules make the trees of Cormode, Procopiuc, Srivastava, Shen, Yu (ICDE 2012):

* a kd split cuts one axis (rows at even depths, columns at odd ones; the other axis when the box
  is one cell thick along it) at a cut chosen privately (:mod:`.medians`): the kd-tree's levels;
* a quadtree split cuts both axes in the middle, the first part taking the odd cell
  (:func:`midpoint_cuts`, the rule of :class:`.tree.GridTree`): the levels below the kd levels of
  the hybrid tree.

Every array is per node or per cell (no loop over nodes or cells): growing a level touches the boxes
only; a level's cells, grouped by box, are enumerated from the boxes when it is measured
(:meth:`BoxTree.cells_by_node`, O(cells), no sort).  The interface
(``height``, ``n_nodes``, ``parent_of_node``, ``node_of_cell``, ``node_sizes``, ``partition``) is
the one :func:`.tree.constrained_inference` reads.
"""
from __future__ import annotations

import numpy as np

from dphist import InvalidParameter, Partition


def midpoint_cuts(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The quadtree's cut of every segment ``[lo, hi)``: ``lo + ceil(len / 2)``, or ``hi`` (no cut) for one cell."""
    length = hi - lo
    return np.where(length > 1, lo + (length + 1) // 2, hi)


def kd_axes(r0, r1, c0, c1, depth: int) -> np.ndarray:
    """The axis a kd split cuts in each box at ``depth``: 0 (rows) at even depths, 1 (columns) at odd ones,
    the other axis when the box is one cell thick along the preferred one, -1 when the box is one cell."""
    tall, wide = (r1 - r0) > 1, (c1 - c0) > 1
    prefer_rows = depth % 2 == 0
    first, second = (tall, wide) if prefer_rows else (wide, tall)
    a, b = (0, 1) if prefer_rows else (1, 0)
    return np.where(first, a, np.where(second, b, -1)).astype(np.int64)


class BoxTree:
    """A tree of boxes over a grid of ``shape = (rows, cols)``, grown one level at a time by :meth:`grow`."""

    def __init__(self, shape):
        shape = tuple(int(s) for s in shape)
        if len(shape) != 2 or min(shape) < 1:
            raise InvalidParameter(f"a box tree needs a 2-D grid of positive sides, got {shape}")
        self.shape = shape
        one = np.zeros(1, dtype=np.int64)
        self.boxes = [(one, one + shape[0], one.copy(), one + shape[1])]   # [depth] (r0, r1, c0, c1)
        self.parents = [None]                                              # [depth] parent of each node

    @property
    def height(self) -> int:
        return len(self.boxes) - 1

    @property
    def n_cells(self) -> int:
        return self.shape[0] * self.shape[1]

    def n_nodes(self, depth: int) -> int:
        return int(self.boxes[depth][0].size)

    def parent_of_node(self, depth: int) -> np.ndarray:
        return self.parents[depth]

    def cells_by_node(self, depth: int) -> np.ndarray:
        """The flat (row-major) indices of the cells, node by node, each box's cells in row-major order:
        enumerated from the boxes (O(cells), no sort)."""
        r0, r1, c0, c1 = self.boxes[depth]
        sizes = (r1 - r0) * (c1 - c0)
        if sizes.size == self.n_cells:                     # every box one cell
            return r0 * self.shape[1] + c0
        height, width = r1 - r0, c1 - c0
        box = np.repeat(np.arange(sizes.size), height)              # one row segment per row of every box
        row = r0[box] + np.arange(box.size) - np.repeat(np.cumsum(height) - height, height)
        w = width[box]
        start = row * self.shape[1] + c0[box]                       # flat index of each segment's first cell
        return np.repeat(start - (np.cumsum(w) - w), w) + np.arange(self.n_cells)

    def node_of_cell(self, depth: int) -> np.ndarray:
        """The node (index at ``depth``) of every cell, cells in row-major order."""
        out = np.empty(self.n_cells, dtype=np.int64)
        out[self.cells_by_node(depth)] = np.repeat(np.arange(self.n_nodes(depth)), self.node_sizes(depth))
        return out

    def node_sizes(self, depth: int) -> np.ndarray:
        r0, r1, c0, c1 = self.boxes[depth]
        return (r1 - r0) * (c1 - c0)

    def all_single(self) -> bool:
        """Every node of the deepest level is one cell."""
        return self.n_nodes(self.height) == self.n_cells

    def grow(self, row_cut: np.ndarray, col_cut: np.ndarray) -> None:
        """Append the level made by cutting every box of the deepest level at ``row_cut`` and ``col_cut``."""
        r0, r1, c0, c1 = self.boxes[-1]
        rc, cc = np.asarray(row_cut, dtype=np.int64), np.asarray(col_cut, dtype=np.int64)
        if rc.shape != r0.shape or cc.shape != c0.shape or np.any((rc <= r0) | (rc > r1)) \
                or np.any((cc <= c0) | (cc > c1)):
            raise InvalidParameter("a box tree's cuts must lie inside their boxes (r0 < rc <= r1, c0 < cc <= c1)")
        # children in order (top-left, top-right, bottom-left, bottom-right), empty ones never made:
        # a box has nr x nc children, nr = 2 when it is cut across its rows (rc < r1), nc likewise
        nr, nc = 1 + (rc < r1), 1 + (cc < c1)
        count = nr * nc
        first = np.cumsum(count) - count
        parent = np.repeat(np.arange(r0.size), count)
        j = np.arange(int(count.sum())) - first[parent]
        step = nc[parent]                                   # 1 or 2 children across the columns
        below, right = j >= step, (j & (step - 1)) == 1
        self.boxes.append((np.where(below, rc[parent], r0[parent]), np.where(below, r1[parent], rc[parent]),
                           np.where(right, cc[parent], c0[parent]), np.where(right, c1[parent], cc[parent])))
        self.parents.append(parent)

    def partition(self, depth: int) -> Partition:
        """The nodes of ``depth`` as groups of flattened cells (node order), for ``laplace_partition``."""
        order = self.cells_by_node(depth)
        if order.size == self.n_nodes(depth) and np.array_equal(order, np.arange(order.size)):
            return Partition.singletons(order.size)
        bounds = np.concatenate(([0], np.cumsum(self.node_sizes(depth))))
        return Partition(order, bounds, validate=False)
