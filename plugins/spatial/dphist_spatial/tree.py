"""The data-independent tree over a grid of cells, level by level (no loop over nodes or cells).

A node is a box of cells.  Each level splits every box along every axis into at most ``b`` parts
of near-equal length (``floor(s / b) + 1`` cells for the first ``s mod b`` parts, ``floor(s / b)``
for the others, empty parts dropped), the rule of DPBench's ``QuadTree`` and ``HB2D`` engines
(read, not copied); an axis of extent 1 is no longer split.  The tree stops at depth
``H = ceil(log_b(max side))``, where every box is one cell, so the leaves are the cells in
row-major order.  ``b = 2`` on a 2-D grid is Cormode et al.'s quadtree (ICDE 2012, Section 3);
a general ``b`` is the ``b x b``-ary tree of Qardaji et al.'s multi-dimensional HB (PVLDB 2013).

The boxes of one level are disjoint and cover the grid: one level is one
:class:`dphist.Partition` of the flattened cells (a permutation grouping each node's cells, and
the group bounds), measured by the kernel's ``laplace_partition`` with sensitivity 1.

Per axis the structure is a list of segment sizes per depth and each segment's parent segment;
a node is a tuple of segments (one per axis) and its flat index is the row-major index of that
tuple, so every level's arrays (cell -> node, node -> parent, node sizes) are outer products of
per-axis arrays.
"""
from __future__ import annotations

import numpy as np

from dphist import InvalidParameter, Partition


def split_segments(sizes: np.ndarray, branching: int) -> tuple[np.ndarray, np.ndarray]:
    """Children of segments of lengths ``sizes``: their lengths and their parent's index (in order)."""
    b = int(branching)
    q, r = np.divmod(np.asarray(sizes, dtype=np.int64), b)
    parts = q[:, None] + (np.arange(b)[None, :] < r[:, None])
    keep = parts > 0
    return parts[keep], np.repeat(np.arange(q.size), keep.sum(axis=1))


def tree_height(shape, branching: int) -> int:
    """``ceil(log_b(max side))`` in integers: the depth at which every node is one cell."""
    side, b, h = max(int(s) for s in shape), int(branching), 0
    while b ** h < side:
        h += 1
    return h


def _outer_index(per_axis: list[np.ndarray], counts: list[int]) -> np.ndarray:
    """Row-major flat index of every combination of per-axis indices (outer product, flattened)."""
    ids = np.zeros((), dtype=np.int64)
    for idx, k in zip(per_axis, counts):
        ids = ids[..., None] * k + idx
    return ids.ravel()


class GridTree:
    """The tree of boxes over a grid of ``shape`` with ``branching`` parts per axis and level."""

    def __init__(self, shape, branching: int):
        shape = tuple(int(s) for s in shape)
        if not shape or min(shape) < 1:
            raise InvalidParameter(f"a grid tree needs a shape of positive sides, got {shape}")
        if isinstance(branching, bool) or int(branching) < 2:
            raise InvalidParameter(f"a grid tree needs a branching of at least 2, got {branching!r}")
        self.shape, self.branching = shape, int(branching)
        self.height = tree_height(shape, self.branching)
        self.sizes = [[np.array([n], dtype=np.int64)] for n in shape]     # [axis][depth] segment lengths
        self.parents = [[None] for _ in shape]                            # [axis][depth] parent segment
        for _ in range(self.height):
            for a in range(len(shape)):
                sizes, parent = split_segments(self.sizes[a][-1], self.branching)
                self.sizes[a].append(sizes)
                self.parents[a].append(parent)

    @property
    def n_cells(self) -> int:
        return int(np.prod(self.shape))

    def counts(self, depth: int) -> list[int]:
        """Segments per axis at ``depth``."""
        return [s[depth].size for s in self.sizes]

    def n_nodes(self, depth: int) -> int:
        return int(np.prod(self.counts(depth)))

    def node_of_cell(self, depth: int) -> np.ndarray:
        """The node (flat index at ``depth``) of every cell, cells in row-major order."""
        segs = [np.repeat(np.arange(s[depth].size), s[depth]) for s in self.sizes]
        return _outer_index(segs, self.counts(depth))

    def parent_of_node(self, depth: int) -> np.ndarray:
        """The parent (flat index at ``depth - 1``) of every node at ``depth >= 1``."""
        return _outer_index([p[depth] for p in self.parents], self.counts(depth - 1))

    def node_sizes(self, depth: int) -> np.ndarray:
        """Cells per node at ``depth``."""
        out = np.ones((), dtype=np.int64)
        for s in self.sizes:
            out = out[..., None] * s[depth]
        return out.ravel()

    def partition(self, depth: int) -> Partition:
        """The nodes of ``depth`` as groups of flattened cells (node order), for ``laplace_partition``."""
        k = self.n_nodes(depth)
        if k == self.n_cells:            # every node one cell: the leaves, in row-major order
            return Partition.singletons(k)
        ids = self.node_of_cell(depth)
        order = np.argsort(ids, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(ids, minlength=k))))
        return Partition(order, bounds, validate=False)


def constrained_inference(tree, values: list, variances: list) -> list[np.ndarray]:
    """Generalised least squares over the tree: every node's estimate, every parent the sum of its children.

    ``tree``: a :class:`GridTree` or a :class:`.boxes.BoxTree` (any fan-out per node; read through
    ``height``, ``n_nodes`` and ``parent_of_node``).

    ``values[d]``: the noisy counts of the nodes at depth ``d`` (root ``d = 0``), or ``None`` when that
    level is not measured (the leaves must be); ``variances[d]``: their noise variance.  A value may be an
    ``nodes x q`` array: ``q`` right-hand sides solved at once (the stated error's ``(A^T W A)^{-1} U``).  Two passes
    (Hay et al. PVLDB 2010, Theorem 3, in the weighted form Cormode et al. ICDE 2012 Section 4.2 give
    for level-dependent budgets, here for any fan-out):

    * bottom-up, ``z[v]``: the inverse-variance weighted mean of ``v``'s own measurement and the sum
      of its children's ``z``, with variance ``1/V[v] = 1/var(v) + 1/sum_c V[c]``;
    * top-down, ``x[root] = z[root]`` and ``x[c] = z[c] + V[c] / sum_c' V[c'] (x[parent] - sum_c' z[c'])``.

    Post-processing of the noisy counts with public sizes: free.  Checked against a dense
    least-squares solve in the tests and in ``notebooks/spatial.ipynb``.
    """
    H = tree.height
    if values[H] is None:
        raise InvalidParameter("constrained inference needs the leaves measured")
    z = [None] * (H + 1)
    V = [None] * (H + 1)
    z[H] = np.asarray(values[H], dtype=float)
    V[H] = np.full(z[H].shape[0], float(variances[H]))
    for d in range(H - 1, -1, -1):
        parent, k = tree.parent_of_node(d + 1), tree.n_nodes(d)
        S = _children_sum(parent, z[d + 1], k)
        VS = np.bincount(parent, V[d + 1], minlength=k)
        if values[d] is None:
            z[d], V[d] = S, VS
            continue
        var = float(variances[d])
        own = _column(VS / (var + VS), S)          # the weight of the node's own measurement
        z[d] = own * np.asarray(values[d], dtype=float) + (1.0 - own) * S
        V[d] = var * VS / (var + VS)
    x = [None] * (H + 1)
    x[0] = z[0]
    for d in range(1, H + 1):
        parent, k = tree.parent_of_node(d), tree.n_nodes(d - 1)
        gap = (x[d - 1] - _children_sum(parent, z[d], k)) / _column(np.bincount(parent, V[d], minlength=k), x[d - 1])
        x[d] = z[d] + _column(V[d], z[d]) * gap[parent]
    return x


def _children_sum(parent: np.ndarray, v: np.ndarray, k: int) -> np.ndarray:
    """Every node's sum of its children's ``v`` (``v``: one value per child, or one row of several columns:
    the stated error solves many right-hand sides at once)."""
    if v.ndim == 1:
        return np.bincount(parent, v, minlength=k)
    import scipy.sparse as sp
    P = sp.csr_matrix((np.ones(parent.size), (parent, np.arange(parent.size))), shape=(k, parent.size))
    return np.asarray(P @ v)


def _column(a: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``a`` (one value per node) shaped to broadcast over the columns of ``like``."""
    return a.reshape((-1,) + (1,) * (like.ndim - 1))
