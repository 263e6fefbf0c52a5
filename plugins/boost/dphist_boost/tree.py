"""The k-ary tree of Hay et al. (PVLDB 2010, Section 4) : layout, node sums, query matrix.

Layout
------
Level 0 holds the ``G`` leaves (the groups handed to the finalizer, in their
current order); level ``j + 1`` has ``n_{j+1} = ceil(n_j / k)`` nodes and node
``i`` of level ``j + 1`` is the parent of nodes ``k*i, ..., k*i + k - 1`` of
level ``j``.  Node ``i`` of level ``j`` therefore covers the leaves
``[i * k**j, min((i + 1) * k**j, G))``.  The top level is the root, so the
height (number of levels, Hay et al.'s ``ell``) is ``ceil(log_k G) + 1``.

When ``G`` is not a power of ``k`` each level is padded on the right to a
multiple of ``k`` with *padding nodes*: empty intervals whose true count is 0
and publicly known, so they are not measured (they cost no budget and carry
zero variance in the inference below).  Every stored array holds real nodes
only; the padding exists only inside the ``(nodes, k)`` reshapes.  Paper and
DPBench pad the *domain* to ``k**h`` zero bins and measure them; both are
valid, ours wastes no budget on known zeros and keeps the work O(G).

The inference passes live in :mod:`.inference`, the node cover in :mod:`.cover`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from dphist.errors import InvalidParameter


def level_sizes(n_leaves: int, branching: int) -> list[int]:
    """Real nodes per level, leaves first: ``[G, ceil(G/k), ..., 1]``."""
    n_leaves, k = int(n_leaves), int(branching)
    if n_leaves < 1:
        raise InvalidParameter(f"a tree needs at least one leaf, got {n_leaves}")
    if k < 2:
        raise InvalidParameter(f"branching must be an integer >= 2, got {branching!r}")
    sizes = [n_leaves]
    while sizes[-1] > 1:
        sizes.append(-(-sizes[-1] // k))
    return sizes


def node_leaf_ranges(n_leaves: int, branching: int, level: int) -> tuple[np.ndarray, np.ndarray]:
    """First and one-past-last leaf of every real node of ``level``."""
    width = int(branching) ** int(level)
    n_nodes = -(-int(n_leaves) // width)
    first = np.arange(n_nodes, dtype=np.int64) * width
    return first, np.minimum(first + width, n_leaves)


def pad_to(values: np.ndarray, length: int) -> np.ndarray:
    if values.size == length:
        return values
    out = np.zeros(length, dtype=values.dtype)
    out[:values.size] = values
    return out


def child_sums(values: np.ndarray, n_parents: int, k: int) -> np.ndarray:
    """Sum of the (padded) children of each parent: k strided adds (faster than reshape-sum for small k)."""
    padded = pad_to(values, n_parents * k)
    if k > 8:
        return padded.reshape(n_parents, k).sum(axis=1)
    out = padded[0::k].copy()
    for i in range(1, k):  # a loop over the k child slots, not over nodes
        out += padded[i::k]
    return out


@dataclass
class NoisyTree:
    """Noisy node counts per level (leaves first) and their noise variances.

    ``values[j]`` has one entry per real node of level ``j``; an unmeasured
    level (the root with ``noisy_root=False``) is ``None`` and has variance
    ``inf``.  This is public: it is the output of the measurements.
    """

    branching: int
    values: list[np.ndarray | None]
    variances: list[float]
    epsilons: list[float] = field(default_factory=list)

    @property
    def height(self) -> int:
        return len(self.values)

    @property
    def n_leaves(self) -> int:
        return int(self.values[0].size)


def tree_sums(leaves, branching: int) -> list[np.ndarray]:
    """Exact node sums of ``leaves`` per level (leaves first), O(G)."""
    k = int(branching)
    out = [np.asarray(leaves, dtype=float)]
    for n in level_sizes(out[0].size, k)[1:]:
        out.append(child_sums(out[-1], n, k))
    return out


def tree_matrix(n_leaves: int, branching: int, levels: list[int] | None = None) -> sp.csr_matrix:
    """The query matrix of the tree (rows = nodes level by level, leaves first), sparse.

    For tests and the notebook: ``A x`` gives every node's count.
    """
    k = int(branching)
    sizes = level_sizes(n_leaves, k)
    levels = range(len(sizes)) if levels is None else levels
    rows, cols, row0 = [], [], 0
    leaf = np.arange(n_leaves, dtype=np.int64)
    for j in levels:
        rows.append(row0 + leaf // k ** j)
        cols.append(leaf)
        row0 += sizes[j]
    return sp.csr_matrix((np.ones(sum(r.size for r in rows)), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(row0, n_leaves))
