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
    index = np.int32 if k < 2 ** 31 else np.int64      # the narrowest group index: the tree's memory
    start, end = np.array([0], dtype=index), np.array([k], dtype=index)
    while start.size:
        nc, first_child, start_next, end_next = _children(start, end, int(branching))
        if not start_next.size and start.size == k and k > 1:   # the deepest level holds every group, as leaves:
            return levels + [_all_groups(k)]                       # shared read-only vectors (memory)
        if branching < 256:                                # at most `branching` children: one byte (memory)
            nc = nc.astype(np.uint8)
        levels.append(Level(start, end, first_child, nc))
        start, end = start_next, end_next
    return levels


def _all_groups(k: int) -> Level:
    """A level of ``k`` leaves, group ``g`` alone in node ``g``: its ranges are views of the shared read-only
    ``0, 1, ..., k`` (:func:`dphist.validation.identity_vectors`, held by a pipeline's singleton partitions
    of ``k`` bins), its children counts a broadcast zero: no memory of its own while those are held."""
    from dphist.validation import identity_vectors
    order, bounds = identity_vectors(k)
    zero = np.broadcast_to(np.uint8(0), (k,))
    return Level(order, bounds[1:], np.broadcast_to(order.dtype.type(0), (k,)), zero)


@njit(cache=True, nogil=True)
def _children(start, end, branching):
    """One level of :func:`build_tree`: each node's number of children (0 for a single group) and first
    child, and the children's ranges: ``nc`` near-equal parts, the ``nc - size % nc`` smaller ones first."""
    m = start.size
    nc = np.empty(m, dtype=start.dtype)
    first_child = np.empty(m, dtype=start.dtype)
    total = 0
    for i in range(m):
        size = end[i] - start[i]
        nc[i] = min(size, branching) if size > 1 else 0
        first_child[i] = total
        total += nc[i]
    child_start = np.empty(total, dtype=start.dtype)
    child_end = np.empty(total, dtype=start.dtype)
    for i in range(m):
        c = nc[i]
        if c == 0:
            continue
        size = end[i] - start[i]
        base = size // c
        small = c - size % c                              # how many children get `base` groups
        at = start[i]
        for j in range(c):
            child_start[first_child[i] + j] = at
            at += base + (1 if j >= small else 0)
            child_end[first_child[i] + j] = at
    return nc, first_child, child_start, child_end


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


#: nodes per block of :func:`_best_split`: the candidate weights loop outside, the nodes inside (vectorised)
_SPLIT_BLOCK = 256


@njit(cache=True, nogil=True)
def _best_split(sum_err, energy, self_energy, K, granularity, discount):
    """Per node, the p in {1, 1-1/g, ..., 1/g} minimising the discounted err~(p)
    (module docstring; first minimum = largest p) and the exact err(p) of that p: :func:`_best_split_into`
    into new arrays."""
    best_p = np.empty(sum_err.size)
    exact = np.empty(sum_err.size)
    _best_split_into(sum_err, energy, self_energy, K, granularity, discount, best_p, exact)
    return best_p, exact


@njit(cache=True, nogil=True, error_model="numpy")   # no zero-division branch (none can occur): vectorised
def _best_split_into(sum_err, energy, self_energy, K, granularity, discount, best_p, exact):
    """:func:`_best_split` written into ``best_p`` and ``exact``; ``exact`` may be ``sum_err`` itself (a
    block's ``sum_err`` is read before its ``exact`` is written; blocks are disjoint: memory).

    Blocks of nodes, the candidate p outside and the nodes inside: the inner loop has no dependence
    between nodes and is vectorised.  Each node sees the same p in the same order (descending) with the
    same expression and the same strict comparison as one node at a time: the same choice, bit for bit.

    Early stop, exact: the subtracted term ``damped q / (p^2 + q K)`` is at most ``max(damped, 0) / K``,
    so ``err~(p) >= A / p^2`` with ``A = sum_err - max(damped, 0) / K``, a bound that grows as ``p``
    falls when ``A > 0``.  Once every node of a block has ``A / p^2`` above its best so far for the next
    ``p`` (both with a margin of ``1e-9`` relative, far beyond the rounding of either side), no later ``p``
    can be strictly better: the block stops there, with the choice the full scan would make.  A block
    this bound does not settle is tried piece by piece after 4, 8, 16, ... candidates
    (:func:`_later_all_worse`)."""
    m = sum_err.size
    damped = np.empty(_SPLIT_BLOCK)
    be = np.empty(_SPLIT_BLOCK)
    bp = np.empty(_SPLIT_BLOCK)
    floor = np.empty(_SPLIT_BLOCK)
    for v0 in range(0, m, _SPLIT_BLOCK):
        nb = min(_SPLIT_BLOCK, m - v0)
        for i in range(nb):
            v = v0 + i
            damped[i] = discount * (energy[v] - self_energy[v]) + self_energy[v]
            be[i] = np.inf
            bp[i] = 1.0
            cap = max(damped[i], 0.0) / K[v]
            floor[i] = (sum_err[v] - cap) - 1e-9 * (abs(sum_err[v]) + cap)
        for t in range(granularity):
            p = (granularity - t) / granularity
            q = discount * (1.0 - p) ** 2
            pp = p * p
            for i in range(nb):   # branch-free, so that the loop is vectorised
                err = (sum_err[v0 + i] - damped[i] * q / (pp + q * K[v0 + i])) / pp
                was = be[i]
                lower = err < was
                be[i] = err if lower else was
                bp[i] = p if lower else bp[i]
            if t % 4 == 3 and t + 1 < granularity:   # every later p bounded away above the best: stop
                p_next = (granularity - t - 1) / granularity
                grow = 1.0 / (p_next * p_next)
                done = True
                for i in range(nb):
                    if not (floor[i] > 0.0 and floor[i] * grow > be[i] + 1e-9 * abs(be[i])):
                        done = False
                        break
                if not done and (t + 1) & t == 0:   # at 4, 8, 16, ... candidates: the bound piece by piece
                    done = _later_all_worse(sum_err, damped, K, be, v0, nb, discount, granularity,
                                            granularity - t - 1)
                if done:
                    break
        for i in range(nb):
            v = v0 + i
            b = bp[i]
            q = (1.0 - b) ** 2
            best_p[v] = b
            exact[v] = (sum_err[v] - energy[v] * q / (b * b + q * K[v])) / (b * b)


@njit(cache=True, nogil=True)
def _later_all_worse(sum_err, damped, K, be, v0, nb, discount, g, j):
    """Whether every node ``v0 + i`` (``i < nb``) has ``err~(p)`` above its best ``be[i]`` for every candidate
    ``p = c / g``, ``1 <= c <= j`` (margins of ``1e-9`` relative, as :func:`_best_split_into`'s bound), by
    pieces ``[lo / g, hi / g]`` halving ``p``: on a piece the subtracted term ``max(damped, 0) q / (p^2 + q K)``
    grows as ``p`` falls (``q`` grows, ``p^2`` falls), so it is at most its value at ``lo``, and ``1 / p^2`` is
    at least its value at ``hi``: ``err~(p) >= (S - term(lo)) / (hi / g)^2`` when that numerator is positive.
    Each piece one branch-free pass over the nodes (vectorised)."""
    hi = j
    while hi >= 1:
        lo = max(1, hi // 2)
        p_lo = lo / g
        q_lo = discount * (1.0 - p_lo) ** 2
        p2_lo = p_lo * p_lo
        grow = 1.0 / ((hi / g) * (hi / g))
        ok = True
        for i in range(nb):
            S = sum_err[v0 + i]
            term = max(damped[i], 0.0) * q_lo / (p2_lo + q_lo * K[v0 + i])
            num = (S - term) - 1e-9 * (abs(S) + term)
            ok &= (num > 0.0) & (num * grow > be[i] + 1e-9 * abs(be[i]))
        if not ok:
            return False
        hi = lo - 1
    return True


@njit(cache=True, nogil=True)
def _level_prefix_sums(U, group_bounds, Z):
    """``Z`` = prefix sums over the bins of ``U`` spread evenly over each group (``U[g] / size_g`` per bin),
    in place: the values of ``prefix_sums(np.repeat(U / sizes, sizes))`` (one running sum in bin order)."""
    Z[0] = 0.0
    acc = 0.0
    for g in range(U.size):
        a = group_bounds[g]
        b = group_bounds[g + 1]
        z = U[g] / (b - a)
        for h in range(a, b):
            acc += z
            Z[h + 1] = acc


@njit(cache=True, nogil=True)
def _prefix_energy_kernel(Z, s, e, out):
    """:func:`_prefix_node_energy` compiled: per node the whole-node term, then the cut prefixes summed
    in increasing ``h`` from 0.0 (as ``bincount`` accumulates), added last: the same values."""
    n = Z.size - 1
    for v in range(s.size):
        a = s[v]
        b = e[v]
        T = Z[b] - Z[a]
        whole = float(n - b + 1) * (T * T)
        if b - a > 1:
            acc = 0.0
            za = Z[a]
            for h in range(a + 1, b):
                d = Z[h] - za
                acc += d * d
            whole = whole + acc
        out[v] = whole


@njit(cache=True, nogil=True)
def _scale_groups(U, start, end, denom):
    """``U[g] *= 1 / denom[i]`` for the groups ``start[i] <= g < end[i]`` (the reciprocal, then a product, as
    ``U * factor`` with ``factor = 1 / denom`` repeated): in place."""
    for i in range(start.size):
        f = 1.0 / denom[i]
        for g in range(start[i], end[i]):
            U[g] = U[g] * f


@dataclass
class WeightedTree:
    """GreedyH's chosen strategy: every node (group range, bin range) and its weight."""

    levels: list[Level]
    #: per level, the node weights (0 = not asked; a level asking none: a read-only broadcast zero)
    weights: list[np.ndarray]
    expected_error: float         #: trace(W S W^T) of the root, units of 2/eps^2 (Laplace variance)

    def nodes(self, group_bounds: np.ndarray):
        """Bin ranges and weights of the asked nodes (weight > 0), level by level.

        The weights are one read-only array; a level whose every node is asked keeps its weights as a view
        of it from then on (the same numbers, held once while the kernel copies them: memory)."""
        keep = [w > 0 for w in self.weights]
        index = np.int32 if int(group_bounds[-1]) < 2 ** 31 else np.int64   # bins: the narrowest type (memory)
        every = [bool(k.all()) for k in keep]          # a level asked whole: its arrays themselves, not masked copies

        def asked(x, k, whole):
            return x if whole else x[k]
        s = np.concatenate([group_bounds[asked(lv.start, k, a)] for lv, k, a in zip(self.levels, keep, every)],
                           dtype=index)
        e = np.concatenate([group_bounds[asked(lv.end, k, a)] for lv, k, a in zip(self.levels, keep, every)],
                           dtype=index)
        w = np.concatenate([asked(w, k, a) for w, k, a in zip(self.weights, keep, every)])
        w.setflags(write=False)
        at = 0
        for d, k in enumerate(keep):
            count = int(np.count_nonzero(k))
            if every[d]:
                self.weights[d] = w[at:at + count]
            at += count
        return s, e, w


def _weighted_sweep(workload: RangeWorkload, group_bounds, branching: int, choose) -> WeightedTree:
    """The bottom-up recursion of the module docstring with ``p`` chosen by
    ``choose(depth, sum_err, energy, self_energy, K) -> (p, exact err(p))`` at every
    internal node of a level; then the top-down weights.  Uses no data."""
    group_bounds = np.asarray(group_bounds, dtype=np.int64)
    k = group_bounds.size - 1
    sizes = np.diff(group_bounds)
    levels = build_tree(k, branching)

    prefix = type(workload) is PrefixWorkload
    Z = np.empty(int(group_bounds[-1]) + 1) if prefix else None

    def energies(U, s, e):   # s, e: the nodes' bin ranges
        if prefix:   # compiled, in place: the values of node_energy's prefix route
            _level_prefix_sums(U, group_bounds, Z)
            out = np.empty(s.size)
            _prefix_energy_kernel(Z, s, e, out)
            return out
        return node_energy(workload, s, e, prefix_sums(np.repeat(U / sizes, sizes)))

    leaf_err = energies(np.ones(k), group_bounds[:-1], group_bounds[1:])   # every group alone
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
            sum_err, K_children, self_children = (np.empty(lv.start.size) for _ in range(3))
            for x, out in ((err_next, sum_err), (K_next, K_children), (self_next, self_children)):
                children_sums(x, lv, out)
            sum_err, K_children, self_children = sum_err[inner], K_children[inner], self_children[inner]
            energy = energies(U, group_bounds[lv.start[inner]], group_bounds[lv.end[inner]])
            p_in, err_in = choose(d, sum_err, energy, self_children, K_children)
            denom = p_in ** 2 + (1 - p_in) ** 2 * K_children
            err[inner], K[inner], p[inner] = err_in, K_children / denom, p_in
            self_energy[inner] = energy / denom ** 2     # u_v = u / denom
            _scale_groups(U, lv.start[inner], lv.end[inner], denom)
        p_by_level[d] = p
        err_next, K_next, self_next = err, K, self_energy
    return WeightedTree(levels, _top_down(levels, p_by_level), float(err_next[0]))


def _top_down(levels: list[Level], p_by_level: list[np.ndarray]) -> list[np.ndarray]:
    """The node weights: root scale 1; a node keeps (1 - p) of its scale, its children get p of it.
    Each entry of ``p_by_level`` (the caller's list) is set to None once read (memory)."""
    weights = []
    scale = np.ones(1)
    for d, lv in enumerate(levels):
        p, p_by_level[d] = np.asarray(p_by_level[d], dtype=float), None
        w, scale = _top_down_level(scale, p, lv.n_children, d + 1 < len(levels))
        del p
        if not w.any():   # a level nobody asks (most inner levels): one read-only zero, broadcast (memory)
            w = np.broadcast_to(0.0, w.shape)
        weights.append(w)
    return weights


@njit(cache=True, nogil=True)
def _top_down_level(scale, p, n_children, more):
    """One level of :func:`_top_down` compiled: a leaf's weight is its scale, a node's ``scale * (1 - p)``, and
    each child of a node gets ``scale * p`` (the same products as ``np.where`` and ``np.repeat``)."""
    m = scale.size
    w = np.empty(m)
    total = 0
    for i in range(m):                 # p read for the nodes with children only (a level of leaves may pass none)
        w[i] = scale[i] if n_children[i] == 0 else scale[i] * (1 - p[i])
        total += n_children[i]
    nxt = np.empty(total if more else 0)
    if more:
        at = 0
        for i in range(m):
            if n_children[i] == 0:
                continue
            f = scale[i] * p[i]
            for _ in range(n_children[i]):
                nxt[at] = f
                at += 1
    return w, nxt


@njit(cache=True, nogil=True)
def _fused_prefix_energies(U, group_bounds, s_grp, e_grp, n, energy):
    """:func:`_level_prefix_sums` and :func:`_prefix_energy_kernel` in one pass, without the array ``Z``
    (n + 1 floats): the running sum ``acc`` is ``Z[h]`` before bin ``h`` is added, and for the nodes
    ``[s_grp[v], e_grp[v])`` (groups; disjoint, increasing) ``T = Z[b] - Z[a]``, the whole-node term, then
    ``(Z[h] - Z[a])**2`` summed from 0.0 in increasing ``h`` and added last.  The same operations on the
    same numbers: the same energies, bit for bit.  A group of one bin adds ``U[g]`` itself
    (``x / 1.0 == x`` exactly); the running sum stops at the last node's end (Z beyond is not read)."""
    g = 0
    acc = 0.0
    for v in range(s_grp.size):
        ga = s_grp[v]
        ge = e_grp[v]
        while g < ga:                                     # groups before the node: the running sum only
            lo = group_bounds[g]
            hi = group_bounds[g + 1]
            if hi - lo == 1:
                acc += U[g]
            else:
                z = U[g] / (hi - lo)
                for h in range(lo, hi):
                    acc += z
            g += 1
        a = group_bounds[ga]
        b = group_bounds[ge]
        za = acc                                          # Z[a]
        inner = 0.0
        if b - a == ge - ga:                              # groups of one bin: Z[h] after each group
            acc += U[g]
            g += 1
            while g < ge:
                d = acc - za
                inner += d * d
                acc += U[g]
                g += 1
        else:
            while g < ge:
                lo = group_bounds[g]
                hi = group_bounds[g + 1]
                z = U[g] if hi - lo == 1 else U[g] / (hi - lo)
                for h in range(lo, hi):
                    if h > a:                             # acc is Z[h], a < h < b
                        d = acc - za
                        inner += d * d
                    acc += z
                g += 1
        T = acc - za                                      # Z[b] - Z[a]
        whole = float(n - b + 1) * (T * T)
        if b - a > 1:
            whole = whole + inner
        energy[v] = whole


@njit(cache=True, nogil=True)
def _greedy_prefix_level(U, group_bounds, n, start, end, n_children, first_child, leaf_err, err_next, K_next,
                         self_next, granularity, discount):
    """One level of the sweep for the prefix workload and the greedy choice, compiled: the numpy route's
    steps (children's sums, energies, the weight search, the node's K, error and energy, U scaled) with
    the same operations in the same order.  Children's sums as a running sum: at most 8 children; the
    prefix sums and energies in one pass (:func:`_fused_prefix_energies`)."""
    m = start.size
    inner = 0
    for i in range(m):
        if n_children[i] > 0:
            inner += 1
    if inner == 0:                # every node a leaf: its energy is its error (one array for both), its K is 1
        err = np.empty(m)         # and its p is not read: both returned empty, meaning all ones (memory)
        for i in range(m):
            err[i] = leaf_err[start[i]]
        return err, np.empty(0), err, np.empty(0)
    err = np.empty(m)
    K = np.ones(m)
    p = np.ones(m)
    ones = K_next.size == 0       # the next level all leaves: every K there is 1.0
    self_energy = np.empty(m)
    for i in range(m):
        if n_children[i] == 0:
            err[i] = leaf_err[start[i]]
            self_energy[i] = err[i]
    if inner == m:                # every node inner: the children's sums written where the node's values go
        sum_err = err             # (each read before its node's own value is written: memory)
        K_children = K
        self_children = self_energy
    else:
        sum_err = np.empty(inner)
        K_children = np.empty(inner)
        self_children = np.empty(inner)
    full = inner == m             # every node inner: its own ranges and index (no copies: memory)
    s_grp = start if full else np.empty(inner, dtype=start.dtype)
    e_grp = end if full else np.empty(inner, dtype=start.dtype)
    idx = np.empty(0 if full else inner, dtype=start.dtype)
    at = 0
    for i in range(m):
        c = n_children[i]
        if c == 0:
            continue
        f = first_child[i]
        r0 = 0.0
        r1 = 0.0
        r2 = 0.0
        for j in range(f + 1, f + c):
            r0 += err_next[j]
            r1 += 1.0 if ones else K_next[j]
            r2 += self_next[j]
        sum_err[at] = err_next[f] + r0
        K_children[at] = (1.0 if ones else K_next[f]) + r1
        self_children[at] = self_next[f] + r2
        if not full:
            s_grp[at] = start[i]
            e_grp[at] = end[i]
            idx[at] = i
        at += 1
    energy = np.empty(inner)
    _fused_prefix_energies(U, group_bounds, s_grp, e_grp, n, energy)
    if full:                      # the choice and its error written where the node's p and error go (memory)
        p_in, err_in = p, err
    else:
        p_in, err_in = np.empty(inner), np.empty(inner)
    _best_split_into(sum_err, energy, self_children, K_children, granularity, discount, p_in, err_in)
    for a in range(inner):
        b = p_in[a]
        denom = b ** 2 + (1 - b) ** 2 * K_children[a]
        i = a if full else idx[a]
        err[i] = err_in[a]
        K[i] = K_children[a] / denom
        p[i] = b
        self_energy[i] = energy[a] / denom ** 2
        f = 1.0 / denom
        for g in range(s_grp[a], e_grp[a]):
            U[g] = U[g] * f
    return err, K, self_energy, p


def _greedy_prefix_sweep(group_bounds, branching: int, granularity: int, discount: bool) -> WeightedTree:
    """:func:`_weighted_sweep` with the greedy choice on the prefix workload, each level compiled
    (:func:`_greedy_prefix_level`): the same tree, weights and error, bit for bit."""
    group_bounds = np.asarray(group_bounds, dtype=np.int64)
    k = group_bounds.size - 1
    n = int(group_bounds[-1])
    levels = build_tree(k, branching)
    leaf_err = np.empty(k)
    U = np.ones(k)                                        # u = S 1 of the node holding each group
    _fused_prefix_energies(U, group_bounds, np.arange(k, dtype=levels[0].start.dtype),
                           np.arange(1, k + 1, dtype=levels[0].start.dtype), n, leaf_err)   # every group alone
    p_by_level = [None] * len(levels)
    err = K = self_energy = np.zeros(1)
    for d in range(len(levels) - 1, -1, -1):
        lv = levels[d]
        if lv.start.size == k and not lv.n_children.any():   # every group a leaf, in order: the leaves' errors
            err = self_energy = leaf_err                       # themselves; K and p as in _greedy_prefix_level
            K = p_by_level[d] = np.empty(0)
            continue
        factor = float(branching) ** (-d / 2.0) if discount else 1.0
        err, K, self_energy, p_by_level[d] = _greedy_prefix_level(
            U, group_bounds, n, lv.start, lv.end, lv.n_children, lv.first_child, leaf_err, err, K, self_energy,
            int(granularity), factor)
    expected = float(err[0])
    del U, leaf_err, err, K, self_energy                  # not read by the top-down pass (memory)
    return WeightedTree(levels, _top_down(levels, p_by_level), expected)


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
    if type(workload) is PrefixWorkload and branching <= 8:
        return _greedy_prefix_sweep(group_bounds, int(branching), g, discount)

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


def tree_least_squares(tree: WeightedTree, answers_by_level: list[np.ndarray], consume: bool = False,
                       compact: bool = False) -> np.ndarray:
    """Group totals minimising ``sum_v (w_v T_v - y_v)^2`` over the weighted tree (exact GLS).

    ``answers_by_level[d]`` holds ``y_v`` for every node of level ``d`` (ignored where
    ``w_v = 0``); with ``compact=True``, only for the asked nodes (``w_v > 0``), in order (the
    kernel's answers of :meth:`WeightedTree.nodes`, level by level: no zeros for the others).
    Every leaf has ``w > 0`` (GreedyH never gives a subtree weight 0), so the solution is unique.
    Noise variances are relative (all answers share one Laplace scale).

    Each level's pass is compiled (:func:`_upward`, :func:`_downward`); the children's sums are
    numpy's ``add.reduceat`` (:func:`children_sums`).  The deepest level's estimates and variances
    are computed where read, never stored (:func:`_leaf_children_sums`, :func:`_downward_to_leaves`)
    when its parents have at most 8 children.  ``consume=True`` sets each entry of
    ``answers_by_level`` to None once read (the caller's list: memory).
    """
    levels, weights = tree.levels, tree.weights
    depth = len(levels)
    est, var = [None] * depth, [None] * depth
    last = depth - 1
    # the deepest level (all leaves, the largest): its estimates y / w and variances 1 / w^2 are never stored,
    # but computed where read (its parents' sums, the last downward step), from its answers: the same numbers
    fused = last >= 1 and int(levels[last - 1].n_children.max()) <= 8
    if fused:
        leaf_y = np.asarray(answers_by_level[last], dtype=float)
        if consume:
            answers_by_level[last] = None

    def children(d):   # the children's estimate and variance of level d's nodes (zeros and ones for leaves)
        m = levels[d].start.size
        cs, cv = np.zeros(m), np.ones(m)
        if d + 1 < depth:
            if fused and d + 1 == last:
                _leaf_children_sums(leaf_y, weights[last], bool(compact), levels[d].first_child, levels[d].n_children,
                                    cs, cv)
            else:
                children_sums(est[d + 1], levels[d], cs)
                children_sums(var[d + 1], levels[d], cv)
        return cs, cv

    # upward: each node's best estimate from its own subtree, and its variance
    for d in range(last - 1 if fused else last, -1, -1):
        cs, cv = children(d)
        est[d], var[d] = _upward(weights[d], np.asarray(answers_by_level[d], dtype=float), bool(compact),
                                 levels[d].n_children, cs, cv)
        if consume:
            answers_by_level[d] = None
    del cs, cv
    # downward: share each node's final discrepancy among its children in proportion to their variances (the
    # children's sums computed again, the same numbers, rather than kept for every level: memory)
    final = est[0]
    totals = np.empty(int(levels[0].end[0]))
    for d, lv in enumerate(levels):
        cs, cv = children(d)
        if fused and d + 1 == last:   # the deepest level's values go to the totals directly
            _downward_to_leaves(final, lv.start, lv.n_children, lv.first_child, cs, cv, leaf_y, weights[last],
                                bool(compact), levels[last].start, totals)
            break
        final = _downward(final, lv.start, lv.n_children, lv.first_child, cs, cv,
                          est[d + 1] if d + 1 < depth else final, var[d + 1] if d + 1 < depth else final, totals)
        est[d] = var[d] = None                             # read by no later level
    return totals


@njit(cache=True, nogil=True, inline="always")
def _leaf_value(y, w, j, at, compact):
    """A leaf's estimate and variance, as :func:`_upward` computes them (``at``: its index among the asked)."""
    if w[j] > 0:
        return y[at if compact else j] / w[j], 1.0 / (w[j] * w[j])
    return 0.0, np.inf


@njit(cache=True, nogil=True)
def _leaf_children_sums(y, w, compact, first_child, n_children, cs, cv):
    """:func:`_children_sums` of the leaves' estimates and variances (a level of leaves, at most 8 children
    per node: the same running sums), each leaf's value computed from its answer and weight."""
    at = 0
    for v in range(n_children.size):
        c = n_children[v]
        if c == 0:
            continue
        f = first_child[v]
        e0, v0 = _leaf_value(y, w, f, at, compact)
        if w[f] > 0:
            at += 1
        rest_e = 0.0
        rest_v = 0.0
        for j in range(f + 1, f + c):
            ej, vj = _leaf_value(y, w, j, at, compact)
            if w[j] > 0:
                at += 1
            rest_e += ej
            rest_v += vj
        cs[v] = e0 + rest_e
        cv[v] = v0 + rest_v


@njit(cache=True, nogil=True)
def _downward_to_leaves(final, start, n_children, first_child, child_sum, child_var, y, w, compact, leaf_start,
                        totals):
    """:func:`_downward` into a level of leaves, then that level's own step (a leaf's value is its group's
    total) at once: each leaf's estimate and variance computed from its answer and weight."""
    at = 0
    for i in range(final.size):
        c = n_children[i]
        if c == 0:
            totals[start[i]] = final[i]
            continue
        gap = final[i] - child_sum[i]
        for j in range(first_child[i], first_child[i] + c):
            ej, vj = _leaf_value(y, w, j, at, compact)
            if w[j] > 0:
                at += 1
            totals[leaf_start[j]] = ej + vj / child_var[i] * gap


def children_sums(x: np.ndarray, lv: Level, out: np.ndarray) -> None:
    """``out[v] = sum of x over the children of v`` for the internal nodes ``v`` of ``lv`` (others left
    alone): the values of ``np.add.reduceat(x, first_child[inner])``, which adds a node's first child to
    the sum of the others (numpy's pairwise sum: a plain running sum below 8 terms, compiled here)."""
    if lv.n_children.size and int(lv.n_children.max()) <= 8:
        _children_sums(x, lv.first_child, lv.n_children, out)
    else:
        inner = lv.n_children > 0
        if inner.any():
            out[inner] = np.add.reduceat(x, lv.first_child[inner])


@njit(cache=True, nogil=True)
def _children_sums(x, first_child, n_children, out):
    for v in range(n_children.size):
        c = n_children[v]
        if c == 0:
            continue
        f = first_child[v]
        rest = 0.0
        for j in range(f + 1, f + c):
            rest += x[j]
        out[v] = x[f] + rest


@njit(cache=True, nogil=True)
def _upward(w, y, compact, n_children, cs, cv):
    """One level upward: a node's own observation ``y / w`` with precision ``w^2`` (none when ``w = 0``)
    combined with its children's estimate ``cs`` of variance ``cv`` by inverse-variance weighting.
    ``compact``: ``y`` holds the asked nodes' answers only, in order."""
    m = w.size
    e = np.empty(m)
    v = np.empty(m)
    at = 0
    for i in range(m):
        asked = w[i] > 0
        obs = 0.0
        if asked:
            obs = y[at if compact else i] / w[i]
            at += 1
        obs_prec = w[i] * w[i] if asked else 0.0
        if n_children[i] > 0:
            prec = 1.0 / cv[i] + obs_prec
            e[i] = (cs[i] / cv[i] + obs * obs_prec) / prec
            v[i] = 1.0 / prec
        else:
            e[i] = obs
            v[i] = 1.0 / (w[i] * w[i]) if asked else np.inf
    return e, v


@njit(cache=True, nogil=True)
def _downward(final, start, n_children, first_child, child_sum, child_var, est_next, var_next, totals):
    """One level downward: a leaf's value is its group's total; a node's discrepancy with its children's
    sum is shared among them in proportion to their variances.  Returns the next level's values."""
    out = np.empty(est_next.size)
    for i in range(final.size):
        c = n_children[i]
        if c == 0:
            totals[start[i]] = final[i]
            continue
        gap = final[i] - child_sum[i]
        for j in range(first_child[i], first_child[i] + c):
            out[j] = est_next[j] + var_next[j] / child_var[i] * gap
    return out
