"""The weighted hierarchical strategy of DAWA's second stage, kept implicit.

DAWA (Li et al. 2014, Section 4) answers the workload from a hierarchy of
interval queries over the ``k`` groups, each node ``v`` asked with a weight
``w_v`` (a query ``w_v * sum_{b in v} y_b`` with Laplace(1/eps_2) noise).
The L1 sensitivity is the largest total weight on a root-to-leaf path.

**Greedy weights (GreedyH).**  Bottom-up, a node ``v`` with children
strategies ``A_c`` (Gram ``M_c = A_c^T A_c``, ``S_c = M_c^{-1}``) gets

    A_v = [ (1 - p) 1^T ; p * blockdiag(A_c) ],
    M_v = (1 - p)^2 11^T + p^2 S^{-1},      S = blockdiag(S_c),

so by Sherman-Morrison, with ``u = S 1`` and ``K = 1^T S 1``,

    S_v = M_v^{-1} = p^{-2} [ S - (1-p)^2 / (p^2 + (1-p)^2 K) u u^T ],
    u_v = S_v 1 = u / (p^2 + (1-p)^2 K),   K_v = K / (p^2 + (1-p)^2 K).

The workload's expected squared error restricted to ``v`` (in units of
``2/eps^2``) is ``trace(W_v S_v W_v^T)``:

    err_v(p) = p^{-2} [ sum_c err_c - (1-p)^2 / (p^2 + (1-p)^2 K) ||W_v u||^2 ],

and ``p`` is picked from ``{1, 1 - 1/g, ..., 1/g}`` (``g`` = granularity, 100
as in DPBench/ektelo).  Leaves are asked with weight 1
(``err_leaf = ||W e_b||^2``).  Top-down, the root's weight is ``1 - p_root``
and a subtree's weights are scaled by the ``p`` of every ancestor, so the
weights on every root-to-leaf path sum to exactly 1: sensitivity 1.

**Depth discount (why the search does not minimise err_v itself).**  Each node
sees only its own subtree, as if nothing else measured its total.  But every
ancestor's query also covers it, so the value of the node's own total is
overstated, more so the deeper the node.  Minimising ``err_v(p)`` node by node
therefore keeps ever more weight high in the tree: on the prefix workload the
exact expected error of that strategy is 0.9x / 2.0x / 4.1x / 22x the plain
binary tree H's at n = 256 / 1,024 / 4,096 / 65,536 (it was dphist's GreedyH
until issue 13).  The DPBench/ektelo code (``greedyH.py``, read, not copied)
damps the node's term by ``c = branching^(-depth/2)`` (root depth 0) in two places:
the cross-child part of the energy, ``m_v - m1_v`` with
``m1_v = sum_c ||W_c u_c||^2``, and the weight ``(1 - p)^2`` in the
Sherman-Morrison denominator; the search minimises

    err~_v(p) = p^{-2} [ sum_c err_c - c (1-p)^2 / (p^2 + c (1-p)^2 K) (c (m_v - m1_v) + m1_v) ].

We do the same (with the workload ``W`` itself where ektelo passes the Gram
matrix ``W^T W`` in its place).  The discount only chooses ``p``; the error
carried upward and reported (:attr:`WeightedTree.expected_error`) is the exact
``err_v(p)`` of the chosen ``p``.  Exact expected prefix error at eps = 0.1
(mean over the queries, ``2/eps^2`` units times the trace): 8,637 / 16,671 /
31,457 / 77,896 at n = 256 / 1,024 / 4,096 / 65,536, vs ektelo's GreedyH
8,339 / 20,507 / 50,180 (measured by running its code) and H's 17,323 / 29,893 /
47,379 / 100,284 (notebooks/dawa.ipynb, Section 4; tests in
``plugins/dawa/tests/test_dawa.py``).  ektelo's third heuristic (a node whose
Gram columns are all equal is asked as one query) is not used.

**Workload in group coordinates.**  A group's total is spread evenly over
its bins, so the workload over groups is ``W E`` with ``E`` the uniform
expansion; ``||W E y||^2`` is computed on the bin-level expansion ``z = E y``
from its prefix sums ``Z``: a range ``[lo, hi)`` answers
``Z(clip(hi)) - Z(clip(lo))`` on a node covering bins ``[s, e)``.  For an
explicit range list each query touches at most two nodes of a level
partially and a run of nodes fully (a difference array), O(n + m) per level;
for all ranges the weighted Lagrange identity gives O(1) per node.  No
``n x n`` (or ``k x k``) matrix is ever formed.

**Least squares.**  The weighted tree is solved exactly by the two-pass
(upward, downward) generalised least squares of a tree-structured model:
upward, each node combines its own observation (variance ``1/w_v^2``) with its
children's estimate by inverse-variance weighting; downward, the discrepancy
between a node's final value and its children's sum is shared in proportion
to the children's variances (Hay et al., PVLDB 2010, Section 4, with
per-node variances).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from dphist.workloads import AllRanges, PrefixWorkload, RangeWorkload, prefix_sums


@dataclass
class Level:
    """One depth of the tree: nodes as group ranges ``[start, end)`` and their children."""

    start: np.ndarray
    end: np.ndarray
    first_child: np.ndarray   #: index into the next level (internal nodes only)
    n_children: np.ndarray    #: 0 for a leaf (a single group)

    @property
    def size(self) -> np.ndarray:
        return self.end - self.start


def build_tree(k: int, branching: int = 2) -> list[Level]:
    """The ``branching``-ary tree over ``k`` groups, top-down; a node of ``<= branching``
    groups has them as leaves, a larger one is cut into ``branching`` near-equal parts
    (the smaller parts first, as DPBench/ektelo)."""
    levels = []
    start, end = np.array([0]), np.array([k])
    while start.size:
        size = end - start
        nc = np.where(size > 1, np.minimum(size, branching), 0)
        internal = nc > 0
        base = np.where(internal, size // np.maximum(nc, 1), 0)
        rem = np.where(internal, size % np.maximum(nc, 1), 0)
        first_child = np.concatenate(([0], np.cumsum(nc)[:-1]))
        levels.append(Level(start, end, first_child, nc))
        total = int(nc.sum())
        if total == 0:
            break
        parent = np.repeat(np.arange(start.size), nc)
        slot = np.arange(total) - np.repeat(first_child, nc)
        small = nc[parent] - rem[parent]                 # how many children get `base` groups
        child_size = base[parent] + (slot >= small)
        offset = slot * base[parent] + np.maximum(slot - small, 0)
        start = start[parent] + offset
        end = start + child_size
    return levels


def node_energy(workload: RangeWorkload, s: np.ndarray, e: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """``||W z_v||^2`` for disjoint sorted bin ranges ``[s_v, e_v)``, with ``z_v`` = ``z`` on the range.

    ``Z`` are the prefix sums of ``z`` over the whole domain (length n + 1).
    """
    n = Z.size - 1
    T = Z[e] - Z[s]
    if isinstance(workload, AllRanges):
        # all pairs of points 0..n clipped to [s, e]: weights s+1 at s, 1 inside, n-e+1 at e
        Q1 = np.concatenate(([0.0], np.cumsum(Z)))
        Q2 = np.concatenate(([0.0], np.cumsum(Z * Z)))
        inner = e - s - 1
        sum_z = Q1[e] - Q1[s + 1]                        # sum of Z_t, s < t < e
        sum_z2 = Q2[e] - Q2[s + 1]
        inner_y = sum_z - inner * Z[s]
        inner_y2 = sum_z2 - 2 * Z[s] * sum_z + inner * Z[s] ** 2
        w_end = n - e + 1
        sum_wy = inner_y + w_end * T
        sum_wy2 = inner_y2 + w_end * T ** 2
        return np.maximum((n + 1) * sum_wy2 - sum_wy ** 2, 0.0)
    if isinstance(workload, PrefixWorkload):
        return _prefix_node_energy(n, s, e, Z, T)
    lo, hi = workload.lo, workload.hi
    nn = s.size
    out = np.zeros(nn)
    first = np.searchsorted(s, lo, side="left")          # first node starting at or after lo
    last = np.searchsorted(e, hi, side="right") - 1      # last node ending at or before hi
    ok = first <= last
    diff = (np.bincount(first[ok], minlength=nn + 1) - np.bincount(last[ok] + 1, minlength=nn + 1))
    out += np.cumsum(diff)[:nn] * T ** 2
    jl = np.searchsorted(s, lo, side="left") - 1         # node with s < lo
    in_l = jl >= 0
    in_l[in_l] = lo[in_l] < e[jl[in_l]]
    jh = np.searchsorted(s, hi, side="left") - 1         # node with s < hi
    in_h = jh >= 0
    in_h[in_h] = hi[in_h] < e[jh[in_h]]
    same = in_l & in_h & (jl == jh)
    out += np.bincount(jl[same], weights=(Z[hi[same]] - Z[lo[same]]) ** 2, minlength=nn)
    a = in_l & ~same
    out += np.bincount(jl[a], weights=(Z[e[jl[a]]] - Z[lo[a]]) ** 2, minlength=nn)
    b = in_h & ~same
    out += np.bincount(jh[b], weights=(Z[hi[b]] - Z[s[jh[b]]]) ** 2, minlength=nn)
    return out


def _prefix_node_energy(n: int, s: np.ndarray, e: np.ndarray, Z: np.ndarray, T: np.ndarray) -> np.ndarray:
    """:func:`node_energy` for the prefix workload ``[0, h)``, h = 1..n, without its searches.

    A node ``[s, e)`` is covered whole by the ``n - e + 1`` prefixes with ``h >= e`` and cut by those
    with ``s < h < e``, which add ``(Z[h] - Z[s])**2``; no prefix starts inside a node.  The same
    floating-point operations in the same order as the general route (the whole-node term first,
    then the cut prefixes summed by ``bincount`` in increasing ``h``), so the same values, in O(n)
    per level instead of O(n log n)."""
    nn = s.size
    out = (n - e + 1) * T ** 2
    inside = np.maximum(e - s - 1, 0)                    # the h with s < h < e, per node
    total = int(inside.sum())
    if total:
        node = np.repeat(np.arange(nn), inside)
        h = np.arange(total) + np.repeat(s + 1 - (np.cumsum(inside) - inside), inside)
        out = out + np.bincount(node, weights=(Z[h] - Z[s[node]]) ** 2, minlength=nn)
    return out


@njit(cache=True, nogil=True)
def _best_split(sum_err, energy, self_energy, K, granularity, discount):
    """Per node, the p in {1, 1-1/g, ..., 1/g} minimising the discounted err~(p)
    (module docstring; first minimum = largest p) and the exact err(p) of that p."""
    m = sum_err.size
    best_p = np.empty(m)
    exact = np.empty(m)
    for v in range(m):
        damped = discount * (energy[v] - self_energy[v]) + self_energy[v]
        be = np.inf
        bp = 1.0
        for t in range(granularity):
            p = (granularity - t) / granularity
            q = discount * (1.0 - p) ** 2
            err = (sum_err[v] - damped * q / (p * p + q * K[v])) / (p * p)
            if err < be:
                be = err
                bp = p
        q = (1.0 - bp) ** 2
        best_p[v] = bp
        exact[v] = (sum_err[v] - energy[v] * q / (bp * bp + q * K[v])) / (bp * bp)
    return best_p, exact


@dataclass
class WeightedTree:
    """GreedyH's chosen strategy: every node (group range, bin range) and its weight."""

    levels: list[Level]
    weights: list[np.ndarray]     #: per level, the node weights (0 = not asked)
    expected_error: float         #: trace(W S W^T) of the root, units of 2/eps^2 (Laplace variance)

    def nodes(self, group_bounds: np.ndarray):
        """Bin ranges and weights of the asked nodes (weight > 0), level by level."""
        s = np.concatenate([group_bounds[lv.start] for lv in self.levels])
        e = np.concatenate([group_bounds[lv.end] for lv in self.levels])
        w = np.concatenate(self.weights)
        keep = w > 0
        return s[keep], e[keep], w[keep]


def _weighted_sweep(workload: RangeWorkload, group_bounds, branching: int, choose) -> WeightedTree:
    """The bottom-up recursion of the module docstring with ``p`` chosen by
    ``choose(depth, sum_err, energy, self_energy, K) -> (p, exact err(p))`` at every
    internal node of a level; then the top-down weights.  Uses no data."""
    group_bounds = np.asarray(group_bounds, dtype=np.int64)
    k = group_bounds.size - 1
    sizes = np.diff(group_bounds)
    levels = build_tree(k, branching)

    def energies(U, start, end):
        Z = prefix_sums(np.repeat(U / sizes, sizes))
        return node_energy(workload, group_bounds[start], group_bounds[end], Z)

    leaf_err = energies(np.ones(k), np.arange(k), np.arange(1, k + 1))
    U = np.ones(k)                                       # u = S 1 of the node holding each group
    p_by_level = [None] * len(levels)
    err_next = K_next = self_next = None
    for d in range(len(levels) - 1, -1, -1):
        lv = levels[d]
        err = np.empty(lv.start.size)
        K = np.ones(lv.start.size)
        self_energy = np.empty(lv.start.size)            # ||W_v u_v||^2 of the node's own u
        leaf = lv.n_children == 0
        err[leaf] = self_energy[leaf] = leaf_err[lv.start[leaf]]
        p = np.ones(lv.start.size)
        inner = ~leaf
        if inner.any():
            heads = lv.first_child[inner]
            sum_err = np.add.reduceat(err_next, heads)
            K_children = np.add.reduceat(K_next, heads)
            energy = energies(U, lv.start[inner], lv.end[inner])
            p_in, err_in = choose(d, sum_err, energy, np.add.reduceat(self_next, heads), K_children)
            denom = p_in ** 2 + (1 - p_in) ** 2 * K_children
            err[inner], K[inner], p[inner] = err_in, K_children / denom, p_in
            self_energy[inner] = energy / denom ** 2     # u_v = u / denom
            factor = np.ones(k)
            sizes_in = lv.size[inner]
            idx = np.repeat(lv.start[inner], sizes_in) + (np.arange(sizes_in.sum())
                                                          - np.repeat(np.cumsum(sizes_in) - sizes_in, sizes_in))
            factor[idx] = np.repeat(1.0 / denom, sizes_in)
            U = U * factor
        p_by_level[d] = p
        err_next, K_next, self_next = err, K, self_energy
    # top-down: root scale 1; a node keeps (1 - p) of its scale, its children get p of it
    weights = []
    scale = np.ones(1)
    for d, lv in enumerate(levels):
        p = p_by_level[d]
        leaf = lv.n_children == 0
        weights.append(np.where(leaf, scale, scale * (1 - p)))
        if d + 1 < len(levels):
            scale = np.repeat(scale * p, lv.n_children)
    return WeightedTree(levels, weights, float(err_next[0]))


def greedy_weights(workload: RangeWorkload, group_bounds: np.ndarray, branching: int = 2,
                   granularity: int = 100, discount: bool = True) -> WeightedTree:
    """GreedyH (DAWA Section 4): node weights chosen bottom-up; see the module docstring.

    ``group_bounds`` are the groups' bin boundaries in identity order (public).
    ``discount=True`` (default) damps a node's own term by ``branching^(-depth/2)`` in
    the search, as the DPBench/ektelo code; ``False`` minimises each node's exact
    subtree error (dphist before issue 13: up to 22x worse than H on prefixes).
    Uses only the workload and the group boundaries: no data.
    """
    g = int(granularity)

    def choose(depth, sum_err, energy, self_energy, K):
        factor = float(branching) ** (-depth / 2.0) if discount else 1.0
        return _best_split(sum_err, energy, self_energy, K, g, factor)

    return _weighted_sweep(workload, group_bounds, branching, choose)


def uniform_weights(workload: RangeWorkload, group_bounds: np.ndarray, branching: int = 2,
                    root: bool = True) -> WeightedTree:
    """Every node of the tree asked with weight ``1/L`` (``L`` = number of levels): Hay et al.'s H
    with equal budgets per level, as a :class:`WeightedTree` whose ``expected_error`` is exact.
    ``root=False`` leaves the root unasked and gives the other levels ``1/(L-1)`` each (the boost
    plugin's ``Hb`` with its default ``noisy_root=False``).

    Only for trees whose leaves all sit on the last level (``k`` a power of ``branching``);
    used to compare GreedyH with H on the same workload (tests, notebook).
    """
    group_bounds = np.asarray(group_bounds, dtype=np.int64)
    levels = build_tree(group_bounds.size - 1, branching)
    if any((lv.n_children == 0).any() for lv in levels[:-1]):
        raise ValueError("uniform_weights needs a complete tree (k a power of the branching)")
    n_levels = len(levels)

    def choose(depth, sum_err, energy, self_energy, K):
        if root:
            p = np.full(sum_err.size, (n_levels - depth - 1) / (n_levels - depth))
        else:   # root weight 0; level d >= 1 keeps 1/(L - d) of what reaches it
            p = np.full(sum_err.size, 1.0 if depth == 0 else (n_levels - depth - 1) / (n_levels - depth))
        q = (1 - p) ** 2
        return p, (sum_err - energy * q / (p * p + q * K)) / (p * p)

    return _weighted_sweep(workload, group_bounds, branching, choose)


class WeightedRangeQueries:
    """Implicit query matrix: row ``r`` is ``w_r`` times the indicator of bins ``[s_r, e_r)``.

    Implements :class:`dphist.kernel.ImplicitQueries`; the kernel takes the sensitivity as
    ``max(abs_rmatvec(1))`` (the largest weight sum over the rows covering a bin).
    """

    def __init__(self, n: int, starts, ends, weights):
        self.n = int(n)
        self.starts = np.asarray(starts, dtype=np.int64)
        self.ends = np.asarray(ends, dtype=np.int64)
        self.weights = np.asarray(weights, dtype=float)
        self.shape = (int(self.starts.size), self.n)

    def matvec(self, x):
        P = prefix_sums(x)
        return self.weights * (P[self.ends] - P[self.starts])

    def abs_rmatvec(self, y):
        a = np.abs(self.weights) * np.asarray(y, dtype=float)
        diff = (np.bincount(self.starts, weights=a, minlength=self.n + 1)
                - np.bincount(self.ends, weights=a, minlength=self.n + 1))
        return np.cumsum(diff)[:self.n]

    def dense(self) -> np.ndarray:
        """The explicit matrix (tests on small n only)."""
        out = np.zeros(self.shape)
        for r, (s, e, w) in enumerate(zip(self.starts, self.ends, self.weights)):
            out[r, s:e] = w
        return out


def tree_least_squares(tree: WeightedTree, answers_by_level: list[np.ndarray]) -> np.ndarray:
    """Group totals minimising ``sum_v (w_v T_v - y_v)^2`` over the weighted tree (exact GLS).

    ``answers_by_level[d]`` holds ``y_v`` for every node of level ``d`` (ignored where
    ``w_v = 0``).  Every leaf has ``w > 0`` (GreedyH never gives a subtree weight 0), so the
    solution is unique.  Noise variances are relative (all answers share one Laplace scale).
    """
    levels, weights = tree.levels, tree.weights
    depth = len(levels)
    est, var = [None] * depth, [None] * depth
    child_sum, child_var = [None] * depth, [None] * depth
    # upward: each node's best estimate from its own subtree, and its variance
    for d in range(depth - 1, -1, -1):
        lv, w, y = levels[d], weights[d], answers_by_level[d]
        asked = w > 0
        safe_w = np.where(asked, w, 1.0)
        obs = np.where(asked, y / safe_w, 0.0)             # y / w estimates the node total ...
        obs_prec = np.where(asked, w ** 2, 0.0)            # ... with precision w^2
        e, v = obs, np.where(asked, 1.0 / safe_w ** 2, np.inf)
        cs, cv = np.zeros(lv.start.size), np.ones(lv.start.size)
        inner = lv.n_children > 0
        if inner.any():
            heads = lv.first_child[inner]
            cs[inner] = np.add.reduceat(est[d + 1], heads)
            cv[inner] = np.add.reduceat(var[d + 1], heads)
            prec = 1.0 / cv[inner] + obs_prec[inner]
            e = e.copy()
            v = v.copy()
            e[inner] = (cs[inner] / cv[inner] + obs[inner] * obs_prec[inner]) / prec
            v[inner] = 1.0 / prec
        est[d], var[d], child_sum[d], child_var[d] = e, v, cs, cv
    # downward: share each node's final discrepancy among its children in proportion to their variances
    final = est[0]
    totals = np.empty(int(levels[0].end[0]))
    for d, lv in enumerate(levels):
        leaf = lv.n_children == 0
        totals[lv.start[leaf]] = final[leaf]
        if d + 1 < depth:
            nc = lv.n_children
            gap = np.repeat(final - child_sum[d], nc)
            final = est[d + 1] + var[d + 1] / np.repeat(child_var[d], nc) * gap
    return totals
