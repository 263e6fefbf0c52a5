"""Hierarchical smoothing's publishing stage (Kellaris, Papadopoulos, Papadias, TKDE, Section 6).

The tree.  Over the N bins in domain order, level ``l`` (0 = leaves) has nodes
``[j B^l, min((j + 1) B^l, N))`` for fan-out ``B`` (16, footnote 1), up to the root level ``T``
(the least ``T`` with ``B^T >= N``): ``T + 1`` levels, each measured with ``eps_2 / (T + 1)``
(uniform budgets; the root is measured, as in the paper's Figure 1 accounting where a tree of
height 3 gives every node noise 3/eps_2).

The groups.  The grouping stage (S_1 or S_2 in ``"tree"`` mode) returns groups that are exactly
the leaves of full subtrees.  A group's *group root* is the highest node whose bins are the group
(``root_levels``); every node strictly under a group root is pruned.

Measurements (``eps_2``).  At each level the kernel measures a set of disjoint intervals with
``laplace_intervals`` (sensitivity 1 per level):

* every node not under a group root (the pruned tree's nodes, group roots included);
* with ``average_pruned=True`` (the paper's optimisation, Section 6, last part): for every group
  whose root is above this level, the sum of its pruned nodes at this level, i.e. the group's
  total once more.  A group root at level ``r`` then has ``t' = r + 1`` independent estimates of its
  total; their average has 1/t' of the variance.

Every level's intervals are disjoint, so one record changes one answer per level by 1: each
level's call is (eps_2 / (T + 1))-DP and the stage is eps_2-DP by sequential composition.

Estimation (post-processing, free).  ``inference=True``: the least-squares estimate of the group
totals from all measurements, computed on the nested partitions level by level (Hay et al.'s two
passes with per-node variances: bottom-up inverse-variance combination of a node's own
measurement with its children's sum, top-down distribution of the parent's residual in proportion
to the children's variances).  ``inference=False``: each group total is the average of its
own ``t'`` (or 1) estimates, the paper's description of the pruned nodes.  Either way every pruned
node, and every bin, receives its share of the group root evenly (``Partition.spread``).

Privacy (Theorem 6.1): the grouping is eps_1-DP; the pruning depends only on that output; the
measurements above are eps_2-DP; pruned-node values are post-processing of the group root's
noisy estimates.  By sequential composition on the same data the scheme is (eps_1 + eps_2)-DP.
"""
from __future__ import annotations

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition
from dphist.params import Interval
from dphist.segmentation._lazy import compiled_for

NOTE = "kellaris.pruned-tree"   #: ctx.notes key of the public noisy tree and its estimates
_CITATION = ("Kellaris, Papadopoulos, Papadias, TKDE, Section 6 (hierarchical smoothing, Theorem 6.1); "
             "Hay et al. PVLDB 2010 (inference); Qardaji et al. PVLDB 2013 (fan-out 16)")


def tree_height(n: int, branching: int) -> int:
    """``T``, the root's level: the least ``T`` with ``branching^T >= n``."""
    t, span = 0, 1
    while span < n:
        span *= branching
        t += 1
    return t


def root_levels(bounds, n: int, branching: int) -> np.ndarray:
    """For each group ``[bounds[i], bounds[i+1])``, the level of its group root: the highest level
    with a node of exactly those bins.  Raises InvalidParameter if a group is no tree node.  One
    compiled pass over the groups (:mod:`._pruned_jit`) from ``COMPILED_MIN`` groups or once numba is
    imported, else numpy level by level (the same levels)."""
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    height = tree_height(n, branching)
    if compiled_for(bounds.size):
        from ._pruned_jit import group_root_levels
        level = np.empty(bounds.size - 1, dtype=np.int64)
        bad = group_root_levels(bounds, int(n), int(branching), height, level)
    else:
        starts, ends = bounds[:-1], bounds[1:]
        level = np.full(starts.size, -1, dtype=np.int64)
        span = 1
        for h in range(height + 1):
            level[(starts % span == 0) & (ends == np.minimum(starts + span, n))] = h
            span *= branching
        missing = np.flatnonzero(level < 0)
        bad = int(missing[0]) if missing.size else -1
    if bad >= 0:
        i = int(bad)
        raise InvalidParameter(
            f"kellaris.pruned-tree: group [{int(bounds[i])}, {int(bounds[i + 1])}) is not the set of leaves of a "
            f"full subtree of the {branching}-ary tree (hierarchical smoothing, Section 6): group the bins "
            f"with a tree-mode partitioner of the same fan-out (kellaris.s2 mode='tree' or dawa.l1 "
            f"variant='tree', branching={branching})")
    return level


def _bound_levels(bounds, n: int, branching: int, height: int) -> np.ndarray:
    """Each bound's highest level ``h <= height`` at which it is a node bound (a multiple of
    ``branching^h``, or 0 or ``n``)."""
    if compiled_for(bounds.size):
        from ._pruned_jit import bound_levels
        out = np.empty(bounds.size, dtype=np.int64)
        bound_levels(bounds, int(n), int(branching), height, out)
        return out
    out = np.zeros(bounds.size, dtype=np.int64)
    span = 1
    for h in range(1, height + 1):
        span *= branching
        out[bounds % span == 0] = h
    out[bounds == n] = height
    return out


def level_intervals(bounds, n: int, branching: int, level: int) -> np.ndarray:
    """Cut points of level ``level``'s intervals: node bounds at that level that are group bounds.
    Each interval is a node of the pruned tree or a whole group whose root is higher."""
    bounds = np.asarray(bounds, dtype=np.int64)
    span = branching ** level
    keep = (bounds % span == 0) | (bounds == n)
    return bounds[keep]


def pruned_tree_intervals(bounds, n: int, branching: int, average_pruned: bool = True):
    """Per level (leaves first): ``(cuts, measured)``, the level's interval cut points and which
    intervals are measured (all of them with ``average_pruned``; else not the pruned group sums).

    Level 0's cuts are ``bounds`` itself (as int64); level ``h``'s are the bounds that are multiples of
    ``branching^h`` (or ``n``), :func:`level_intervals`, read from one pass that finds each bound's
    highest such level."""
    levels, roots, _ = _pruned_levels(bounds, n, branching, average_pruned)
    return levels, roots


def _pruned_levels(bounds, n: int, branching: int, average_pruned: bool):
    """:func:`pruned_tree_intervals` and, per level, the indices in ``bounds`` of its cuts (None for level
    0, whose cuts are ``bounds``).  Level ``h``'s cuts are picked from level ``h - 1``'s (a bound at level
    ``h`` or above is at ``h - 1`` or above; the order kept): one pass over the groups for level 1, then
    passes over the fewer cuts of each level, and the cuts' positions among the groups without a search."""
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    roots = root_levels(bounds, n, branching)
    height = tree_height(n, branching)
    aligned = _bound_levels(bounds, n, branching, height)
    out, index = [], [None]
    cuts, at = bounds, None
    for h in range(height + 1):
        if h:
            keep = aligned >= h
            at = np.flatnonzero(keep) if at is None else at[keep]
            cuts, aligned = cuts[keep], aligned[keep]
            index.append(at)
        measured = np.ones(cuts.size - 1, dtype=bool)
        if not average_pruned:
            # an interval that is a single group whose root is above this level: a pruned sum
            g = np.searchsorted(bounds, cuts[:-1])
            single = bounds[np.minimum(g + 1, bounds.size - 1)] == cuts[1:]
            measured = ~(single & (roots[np.minimum(g, roots.size - 1)] > h))
        out.append((cuts, measured))
    return out, roots, index


def least_squares_tree(levels, values, variance: float, compiled: bool | None = None):
    """Least-squares estimates of every interval of nested partitions (leaves first).

    ``levels[h] = (cuts, measured)``; ``values[h]`` the measurements (ignored where not measured),
    each with ``variance``.  Returns the estimates per level; the leaf level's are the group totals.

    Hay et al.'s two passes with per-interval variances, one compiled loop per level and pass
    (:mod:`._pruned_jit`): bottom-up, an interval's estimate combines its own measurement (precision
    ``1 / variance``) with its children's sum (precision one over the sum of their variances) by
    inverse variances; top-down, each child receives its parent's residual in proportion to its
    variance (all of it when it is an only child).  ``compiled=None``: compiled from ``COMPILED_MIN``
    leaf intervals or once numba is imported; else (or with False) the same passes in numpy
    (:func:`_least_squares_numpy`, the same numbers).
    """
    if not (compiled_for(levels[0][0].size) if compiled is None else compiled):
        return _least_squares_numpy(levels, values, variance)
    from ._pruned_jit import downward, upward
    own = 1.0 / variance
    (cuts0, measured0), y0 = levels[0], values[0]
    if measured0.all():          # the same values as the masked copies, one copy
        z, prec = [np.array(y0, dtype=float)], [np.full(cuts0.size - 1, own)]
    else:
        z, prec = [np.where(measured0, y0, 0.0).astype(float)], [np.where(measured0, own, 0.0)]
    sums = [None]
    for h in range(1, len(levels)):
        (cuts, measured), y = levels[h], values[h]
        m = cuts.size - 1
        zh, ph, s, s_var = np.empty(m), np.empty(m), np.empty(m), np.empty(m)
        upward(levels[h - 1][0], cuts, z[-1], prec[-1], np.ascontiguousarray(y, dtype=float),
               np.ascontiguousarray(measured), own, zh, ph, s, s_var)
        z.append(zh)
        prec.append(ph)
        sums.append((s, s_var))
    for h in range(len(levels) - 1, 0, -1):         # top-down: z[h - 1] becomes the final estimates in place
        s, s_var = sums[h]
        downward(levels[h - 1][0], levels[h][0], z[h], s, s_var, prec[h - 1], z[h - 1])
        sums[h] = prec[h] = None
    return z


def _least_squares_numpy(levels, values, variance: float):
    """:func:`least_squares_tree` in numpy, level by level (``bincount`` for the children's sums)."""
    z, prec, parent = [], [], []
    for h, ((cuts, measured), y) in enumerate(zip(levels, values)):
        own = np.where(measured, 1.0 / variance, 0.0)
        y = np.where(measured, y, 0.0)
        if h == 0:
            z.append(y.astype(float))
            prec.append(own)
            parent.append(None)
            continue
        prev_cuts = levels[h - 1][0]
        par = np.searchsorted(cuts, prev_cuts[:-1], side="right") - 1
        with np.errstate(divide="ignore"):
            child_var = np.where(prec[-1] > 0, 1.0 / np.maximum(prec[-1], 1e-300), np.inf)
        s = np.bincount(par, weights=z[-1], minlength=cuts.size - 1)
        s_var = np.bincount(par, weights=child_var, minlength=cuts.size - 1)
        s_prec = np.where(np.isfinite(s_var), 1.0 / np.where(s_var > 0, s_var, 1.0), 0.0)
        total = own + s_prec
        zh = np.where(total > 0, (own * y + s_prec * s) / np.where(total > 0, total, 1.0), 0.0)
        z.append(zh)
        prec.append(total)
        parent.append((par, s, s_var))
    final = [None] * len(levels)
    final[-1] = z[-1]
    for h in range(len(levels) - 1, 0, -1):
        par, s, s_var = parent[h]
        residual = final[h] - s
        n_children = np.bincount(par, minlength=final[h].size)
        with np.errstate(divide="ignore", invalid="ignore"):
            child_var = np.where(prec[h - 1] > 0, 1.0 / np.maximum(prec[h - 1], 1e-300), np.inf)
            share = np.where(n_children[par] == 1, 1.0, child_var / s_var[par])
        final[h - 1] = z[h - 1] + residual[par] * share
    return final


class PrunedTreeFinalizer(Finalizer):
    """``kellaris.pruned-tree``: the aggregate tree with every node under a group root pruned.

    Parameters
    ----------
    branching : fan-out ``B >= 2`` (16 in the paper); must equal the grouping's.
    average_pruned : the paper's optimisation: measure each pruned subtree's level sums and average
        the group root's t' estimates (default True).
    inference : least-squares consistency over the pruned tree (Hay et al., default True); False
        releases each group's averaged root estimate spread evenly (the paper's worked example).

    Needs bins in domain order and groups that are tree nodes (a clear error otherwise: ordering
    cannot be combined with the hierarchical component, Section 6, last paragraph).  Spends its
    whole share eps_2.  With singleton groups it is H (fan-out B, uniform budgets, root measured).
    """

    name = "kellaris.pruned-tree"
    spends = True
    citation = _CITATION
    requires_domain_order = True
    param_constraints = {"branching": Interval(int, 2, None), "average_pruned": bool, "inference": bool}

    def __init__(self, branching: int = 16, average_pruned: bool = True, inference: bool = True):
        self.branching = branching
        self.average_pruned = average_pruned
        self.inference = inference

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        if not bins.is_identity_order():
            raise InvalidParameter("kellaris.pruned-tree: the bins are reordered; hierarchical smoothing needs "
                                   "domain order (ordering cannot be combined with H, Kellaris et al. Section 6)")
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter("kellaris.pruned-tree spends budget: give the finalizer a share gamma_f > 0")
        b, n = int(self.branching), bins.n_bins
        levels, roots, index = _pruned_levels(bins.bounds, n, b, bool(self.average_pruned))
        eps_level = float(ctx.budget) / len(levels)
        values = []
        for h, (cuts, measured) in enumerate(levels):
            # one call per level: disjoint intervals, sensitivity 1 (the kernel recomputes it)
            if measured.all():
                # every interval (average_pruned): the level is a partition of the bins in domain order,
                # a coarsening of the groups; ``laplace_blocks`` of it (width 1) answers exactly as
                # ``laplace_intervals`` on its intervals (the same sums, noise and ledger row) from sums of
                # the counts, without the kernel's prefix sums and copies of the bounds (memory)
                level = bins if h == 0 else bins.merge(index[h])     # the groups where the level's cuts are
                index[h] = None
                y = np.asarray(ctx.data.laplace_blocks(level, 1, eps_level), dtype=float)
            else:
                y = np.zeros(cuts.size - 1)
                y[measured] = ctx.data.laplace_intervals(cuts[:-1][measured], cuts[1:][measured], eps_level)
            values.append(y)
        variance = 2.0 / eps_level ** 2
        if self.inference:
            final = least_squares_tree(levels, values, variance)
            totals = final[0]
        else:
            final = None
            totals = self._root_averages(bins.bounds, levels, values, roots)
        ctx.notes[NOTE] = {"branching": b, "levels": levels, "values": values, "root_levels": roots,
                           "estimates": final, "group_totals": totals}
        if bins.n_groups in (1, n) or not compiled_for(bins.n_groups):
            return bins.spread(totals)
        from ._pruned_jit import spread_in_order      # the same numbers, written once (memory)
        return spread_in_order(np.ascontiguousarray(bins.bounds, dtype=np.int64),
                               np.ascontiguousarray(totals, dtype=float), np.empty(n))

    def stated_error(self, bins: Partition, ctx):
        """With ``inference`` (default): the least squares of the measured intervals over the groups, one
        :class:`~dphist.stated_error.Measurement` per level (disjoint intervals, sensitivity 1, the level's
        epsilon; equal weights, as :func:`least_squares_tree`'s equal variances): the pipeline states it
        given the groups, the averaging within them named unknown.  Without inference (each group's own
        estimates averaged, not a least squares) nothing is stated."""
        from dphist.stated_error import LinearStrategy, Measurement, Unstated
        if not self.inference:
            return Unstated("with inference=False each group total is the mean of its own estimates, not the "
                            "least squares of the tree: not stated")
        import scipy.sparse as sp
        bounds = np.asarray(bins.bounds, dtype=np.int64)
        levels, _ = pruned_tree_intervals(bounds, bins.n_bins, int(self.branching), bool(self.average_pruned))
        eps_level = float(ctx.eps_f) / len(levels)
        k = bins.n_groups
        blocks = []
        for cuts, measured in levels:
            lo = np.searchsorted(bounds, cuts[:-1][measured])          # first group of each interval
            hi = np.searchsorted(bounds, cuts[1:][measured])           # one past its last group
            width = hi - lo
            rows = np.repeat(np.arange(lo.size), width)
            cols = np.arange(int(width.sum())) - np.repeat(np.cumsum(width) - width, width) + np.repeat(lo, width)
            A = sp.csr_matrix((np.ones(cols.size), (rows, cols)), shape=(lo.size, k))
            blocks.append(Measurement(A, 1.0, eps_level, integral=True, support=1, weight=1.0))
        return LinearStrategy(blocks, k, reconstruction="least squares over the pruned tree (Hay et al.'s passes)")

    @staticmethod
    def _root_averages(bounds, levels, values, roots):
        """Each group's total: the mean of its measured estimates at levels 0..root (1 without the
        optimisation, t' = root + 1 with it)."""
        bounds = np.asarray(bounds, dtype=np.int64)
        acc = np.zeros(bounds.size - 1)
        count = np.zeros(bounds.size - 1)
        for h, ((cuts, measured), y) in enumerate(zip(levels, values)):
            g = np.searchsorted(bounds, cuts[:-1])
            is_group = (bounds[np.minimum(g + 1, bounds.size - 1)] == cuts[1:]) & measured
            gi = g[is_group]
            keep = roots[gi] >= h
            np.add.at(acc, gi[keep], y[is_group][keep])
            np.add.at(count, gi[keep], 1.0)
        return acc / count
