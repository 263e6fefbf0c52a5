"""The k-ary tree of Hay et al. (PVLDB 2010, Section 4) and its linear-time post-processing.

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

Inference
---------
:func:`weighted_inference` is the generalised least-squares estimate of every
node when level ``j`` is measured with variance ``var[j]`` (``inf`` for an
unmeasured level): the two passes of Hay et al.'s Theorem 3 with the weights
made explicit.

* bottom-up: ``z[v]`` is the inverse-variance weighted average of the node's
  own measurement and the sum of its children's ``z``; ``V[v]`` its variance:
  ``1/V[v] = 1/var(v) + 1/sum_c V[c]``;
* top-down: ``hbar[root] = z[root]`` and each child gets
  ``hbar[c] = z[c] + V[c] / sum_c' V[c'] * (hbar[parent] - sum_c' z[c'])``.

With equal variances on a complete tree ``V[c]`` is the same for all siblings,
the split is ``1/k`` and the bottom-up weight on ``h~[v]`` at height ``l`` is
``(k**l - k**(l-1)) / (k**l - 1)``: exactly Theorem 3.  Each pass is a loop
over the ``ell`` levels with one numpy reshape-and-sum per level: O(G) work.
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


def _pad_to(values: np.ndarray, length: int) -> np.ndarray:
    if values.size == length:
        return values
    out = np.zeros(length, dtype=values.dtype)
    out[:values.size] = values
    return out


def _child_sums(values: np.ndarray, n_parents: int, k: int) -> np.ndarray:
    """Sum of the (padded) children of each parent: k strided adds (faster than reshape-sum for small k)."""
    padded = _pad_to(values, n_parents * k)
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


def bottom_up(values, variances, branching: int) -> tuple[list[np.ndarray], list[np.ndarray], list[int]]:
    """First pass of Theorem 3 (weighted form): ``z`` and its variance ``V`` per level, and level sizes.

    ``z[v]`` is the best linear unbiased estimate of node ``v``'s count from
    the measurements inside ``v``'s subtree; ``V[v]`` is its variance.
    """
    k = int(branching)
    height = len(values)
    if values[0] is None:
        raise InvalidParameter("the leaf level must be measured")
    sizes = [values[0].size]
    while len(sizes) < height:
        sizes.append(-(-sizes[-1] // k))
    if sizes[-1] != 1:
        raise InvalidParameter(f"{height} levels do not make a {k}-ary tree over {sizes[0]} leaves")
    z = [np.asarray(values[0], dtype=float)]
    V = [np.broadcast_to(np.asarray(variances[0], dtype=float), (sizes[0],)).copy()]
    for j in range(1, height):
        s = _child_sums(z[-1], sizes[j], k)
        S = _child_sums(V[-1], sizes[j], k)
        var = np.broadcast_to(np.asarray(variances[j], dtype=float), (sizes[j],))
        if values[j] is None or np.all(np.isinf(var)):
            z.append(s)
            V.append(S)
            continue
        y = np.asarray(values[j], dtype=float)
        # inverse-variance weighting; the weight on the node's own measurement is S / (var + S)
        w_own = S / (var + S)
        z.append(w_own * y + (1.0 - w_own) * s)
        V.append(var * S / (var + S))
    return z, V, sizes


def weighted_inference(values, variances, branching: int) -> list[np.ndarray]:
    """Generalised least squares over the tree (Hay et al. Theorem 3, weighted form).

    ``values[j]``: noisy counts of level ``j`` (leaves first; ``None`` when the
    level is not measured); ``variances[j]``: their noise variance (a scalar
    per level or one value per node; ``inf`` when unmeasured).  Returns the
    consistent estimate ``hbar`` per level: every parent equals the sum of
    its children.  Post-processing of public noisy values (free).
    """
    k = int(branching)
    z, V, sizes = bottom_up(values, variances, k)
    # top-down: split each parent's discrepancy among its children in proportion to V
    hbar = [None] * len(sizes)
    hbar[-1] = z[-1]
    for j in range(len(sizes) - 2, -1, -1):
        n_par = sizes[j + 1]
        gap_per_variance = (hbar[j + 1] - _child_sums(z[j], n_par, k)) / _child_sums(V[j], n_par, k)
        hbar[j] = z[j] + V[j] * np.repeat(gap_per_variance, k)[:sizes[j]]
    return hbar


def zero_nonpositive_subtrees(levels: list[np.ndarray], branching: int) -> list[np.ndarray]:
    """Hay et al. Section 4.2 heuristic: zero every subtree whose root estimate is <= 0.

    Post-processing (free).  Top-down, a node is zeroed when it or any
    ancestor is <= 0.  The result is no longer consistent where a zeroed
    node had a positive sibling; that is the paper's heuristic.
    """
    k = int(branching)
    out = [None] * len(levels)
    dead = levels[-1] <= 0
    out[-1] = np.where(dead, 0.0, levels[-1])
    for j in range(len(levels) - 2, -1, -1):
        dead = np.repeat(dead, k)[:levels[j].size] | (levels[j] <= 0)
        out[j] = np.where(dead, 0.0, levels[j])
    return out


def tree_sums(leaves, branching: int) -> list[np.ndarray]:
    """Exact node sums of ``leaves`` per level (leaves first), O(G)."""
    k = int(branching)
    out = [np.asarray(leaves, dtype=float)]
    for n in level_sizes(out[0].size, k)[1:]:
        out.append(_child_sums(out[-1], n, k))
    return out


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
