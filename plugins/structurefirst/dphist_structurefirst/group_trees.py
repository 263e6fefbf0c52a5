"""StructureFirst's counts: a binary Hay et al. tree inside every group, or the group's noisy mean.

``counts="tree"`` (default; the paper's extension of StructureFirst to range queries, VLDBJ 2013
Section 6, and what the reference code publishes: DPBench ``thirdparty/xiaokui``, ``DP::boost`` /
``HTree``, read and run, not copied): a group of m bins gets a binary tree of H = ceil(log2 m) + 1
levels over 2^(H-1) leaf slots (slots past the group are known zeros and are not measured); every
measured node gets Laplace(H / eps_2), so the group's tree costs eps_2 and the groups compose in
parallel.  Hay et al.'s inference (PVLDB 2010, Section 4: z bottom-up, then h top-down) makes each
tree consistent; the known-zero slots enter it as zeros, as in the reference.

The reference does NOT noise every node.  ``HTree`` labels a leaf by its ABSOLUTE bin index but a
padding slot by its index inside the group, and adds noise to an internal node only when the label
of its first leaf is below the group's length m.  So an internal node whose first bin sits at
offset o in a group starting at bin b is noised only when b + o < m: a group starting at or beyond
its own length (b >= m) has exact sums on every internal node (a group [100, 110) has none of the
11 internal nodes over its bins noised, [2000, 2100) none of 102), and the inference feeds those
exact sums into the leaves.  The intended comparison (offset o < m: the node covers a bin of the group) is what
``calibration="paper"`` (default) measures.  ``calibration="dpbench"`` reproduces the reference's
comparison, nodes left un-noised included: NOT differentially private (one record moves a group's
exact sums; the count step's loss for a group with b >= m is about 4.2 eps_2 at m = 10 and 24 eps_2
at m = 100, derived in notebooks/structurefirst.ipynb), research mode only.

Measurement (``"paper"``): one ``laplace_linear`` call with ``IntervalQueries`` of weight 1/H_g on
every node of group g, so every bin's column has L1 norm H_g x 1/H_g = 1 (the kernel computes it)
and the answers divided by the weights carry Laplace(H_g / eps_2).  (``"dpbench"``: a vetted
mechanism flagged not differentially private, :class:`DPBenchGroupTrees`.)

``counts="mean"`` (the paper's "mean" StructureFirst, Section 5): Laplace(1/eps_2) on each group's
sum, spread evenly (the core's group-mean finalizer does the same).
"""
from __future__ import annotations

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition, VettedMechanism
from dphist.components import ReferenceCalibration
from dphist.kernel.queries import IntervalQueries
from dphist.params import Options

COUNTS = ("tree", "mean")
CALIBRATIONS = ("paper", "dpbench")


def tree_heights(sizes) -> np.ndarray:
    """Levels H = ceil(log2 m) + 1 of each group's tree (1 for a single bin)."""
    m = np.asarray(sizes, dtype=np.int64)
    return np.ceil(np.log2(m)).astype(np.int64) + 1


def tree_nodes(bounds) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every measured node of every group's tree: (starts, ends, group, level, index in level)."""
    b = np.asarray(bounds, dtype=np.int64)
    sizes = np.diff(b)
    heights = tree_heights(sizes)
    out = ([], [], [], [], [])
    for level in range(int(heights.max())):
        span = 1 << level
        has = np.flatnonzero(heights > level)
        counts = -(-sizes[has] // span)                    # nodes starting inside the group
        group = np.repeat(has, counts)
        first = np.repeat(np.cumsum(counts) - counts, counts)
        index = np.arange(group.size) - first
        start = b[group] + index * span
        end = np.minimum(start + span, b[group + 1])
        for lst, val in zip(out, (start, end, group, np.full(group.size, level), index)):
            lst.append(val)
    return tuple(np.concatenate(v) for v in out)


def reference_noised(bounds) -> np.ndarray:
    """Which nodes of :func:`tree_nodes` (same order) the reference code noises: the leaves, and an
    internal node only when its ABSOLUTE first bin index is below its group's length."""
    b = np.asarray(bounds, dtype=np.int64)
    start, _, group, level, _ = tree_nodes(b)
    return (level == 0) | (start < np.diff(b)[group])


class DPBenchGroupTrees(VettedMechanism):
    """calibration "dpbench": the group trees with the reference code's comparison (module docstring):
    Laplace(H_g / eps_2) on the nodes it noises, the EXACT sum on the others.  NOT differentially private."""

    name = "structurefirst.group-trees-dpbench"
    sensitivity = 1.0   #: nominal: every bin's column of weighted nodes has L1 norm 1 where all are noised
    proof = ("NOT differentially private: the DPBench/xiaokui HTree compares a node's absolute first bin "
             "index with its group's length, so the internal nodes of a group starting at or beyond its "
             "length are published exactly (dphist_structurefirst.group_trees module docstring).  For "
             "reproducing published numbers only; release mode refuses it.")
    differentially_private = False

    def check(self, n: int, bounds=None, **_):
        b = np.asarray(bounds, dtype=np.int64)
        if b.ndim != 1 or b.size < 2 or b[0] != 0 or b[-1] != n or np.any(np.diff(b) <= 0):
            raise InvalidParameter(f"{self.name}: bounds must rise strictly from 0 to the {n} bins")
        return {"bounds": b.copy()}

    def answers(self, n: int, bounds=None, **_) -> int:
        return int(tree_nodes(bounds)[0].size)

    def run(self, counts, epsilon, noise, bounds=None):
        start, end, group, _, _ = tree_nodes(bounds)
        prefix = np.r_[0.0, np.cumsum(np.asarray(counts, dtype=float))]
        exact = prefix[end] - prefix[start]
        weights = 1.0 / tree_heights(np.diff(bounds))[group]
        noised = reference_noised(bounds)
        out = exact.copy()
        out[noised] = noise.laplace_mechanism(exact[noised] * weights[noised], 1.0, epsilon) / weights[noised]
        return out


def hay_inference(noisy_nodes, group, level, index, sizes) -> np.ndarray:
    """Consistent leaves of every group's binary tree (Hay et al. 2010, Section 4), vectorised over
    the groups of equal height; unmeasured slots are zeros."""
    sizes = np.asarray(sizes, dtype=np.int64)
    heights = tree_heights(sizes)
    leaves = np.zeros(int(sizes.sum()))
    offsets = np.r_[0, np.cumsum(sizes)]
    for H in np.unique(heights):
        gs = np.flatnonzero(heights == H)          # ascending: a node's row is its group's place in gs
        width = 1 << (H - 1)
        tree = [np.zeros((gs.size, width >> lv)) for lv in range(H)]
        sel = np.isin(group, gs)
        rows = np.searchsorted(gs, group[sel])
        levels, indices, values = level[sel], index[sel], noisy_nodes[sel]
        for lv in range(H):
            at = levels == lv
            tree[lv][rows[at], indices[at]] = values[at]
        z = [tree[0]]
        for lv in range(1, H):
            alpha = float(1 << lv)
            kids = z[lv - 1].reshape(gs.size, -1, 2).sum(axis=2)
            z.append((alpha * tree[lv] + (alpha - 1.0) * kids) / (2.0 * alpha - 1.0))
        h = z[H - 1]
        for lv in range(H - 1, 0, -1):
            kids = z[lv - 1].reshape(gs.size, -1, 2)
            h = (kids + ((h - kids.sum(axis=2)) / 2.0)[:, :, None]).reshape(gs.size, -1)
        # row r's first sizes[gs[r]] slots are group gs[r]'s leaves, at offsets[gs[r]] on
        slots = np.arange(width)
        real = slots < sizes[gs][:, None]
        leaves[(offsets[gs][:, None] + slots)[real]] = h[real]
    return leaves


class GroupTreesFinalizer(ReferenceCalibration, Finalizer):
    """``structurefirst.group-trees``: StructureFirst's counts with eps_2 (module docstring).

    Parameters
    ----------
    counts : ``"tree"`` (default; a Hay tree per group, as the reference code) or ``"mean"``
        (Laplace on each group's sum, spread evenly: the paper's mean StructureFirst).
    calibration : ``"paper"`` (default: every node noised) or ``"dpbench"`` (the reference's
        comparison, internal nodes of late groups left exact: NOT differentially private; trees only).
    """

    name = "structurefirst.group-trees"
    citation = ("Xu et al., VLDBJ 2013, Sections 5-6 (StructureFirst's counts); Hay, Rastogi, Miklau, Suciu, "
                "PVLDB 2010, Section 4 (the tree and its inference)")
    #: opt-in to the privacy proofs of vetted mechanisms (the kernel cannot check them)
    vetted_mechanisms = ("structurefirst.group-trees-dpbench",)
    requires_domain_order = True
    param_constraints = {"counts": Options(*COUNTS), "calibration": Options(*CALIBRATIONS)}

    def __init__(self, counts: str = "tree", calibration: str = "paper"):
        self.counts = counts
        self.calibration = calibration
        if calibration == "dpbench" and counts != "tree":
            raise InvalidParameter(f"{self.name}: calibration='dpbench' reproduces the reference's trees; "
                                   "it needs counts='tree'")

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter(f"{self.name} spends budget: give the finalizer a share gamma_f > 0")
        if not bins.is_identity_order():
            raise InvalidParameter(f"{self.name} needs the groups in domain order (no sorter)")
        if self.counts == "mean":
            return bins.spread(ctx.data.laplace_partition(bins, ctx.budget))
        sizes = bins.sizes
        start, end, group, level, index = tree_nodes(bins.bounds)
        if self.calibration == "dpbench":
            ctx.warn("not differentially private: StructureFirst's group trees with the DPBench comparison "
                     "(internal nodes of groups starting beyond their length are exact)")
            nodes = ctx.data.custom(DPBenchGroupTrees(), ctx.budget, bounds=bins.bounds)
            return hay_inference(np.asarray(nodes, dtype=float), group, level, index, sizes)
        weights = 1.0 / tree_heights(sizes)[group]
        answers = ctx.data.laplace_linear(IntervalQueries(start, end, weights), ctx.budget)
        return hay_inference(np.asarray(answers) / weights, group, level, index, sizes)

    def stated_error(self, bins: Partition, ctx):
        """Exact given the groups: every bin's estimate is the least squares of its group's tree.

        ``"tree"``: Hay et al.'s two passes are the least-squares solution of the tree's node values
        (equal variance ``H_g^2 sigma^2`` within a group, groups disjoint), with the slots past a
        group entered as answers 0 of true value 0 (noiseless rows of :func:`tree_strategy`).  Given
        the groups (chosen with the partitioner's own budget) the estimate of every bin is unbiased:
        the statement is over the bins (singletons), not marked noise-only.  ``"mean"``: the
        group-mean statement (noise-only: the averaging is biased).  ``"dpbench"``: none."""
        from dphist.stated_error import LinearStatedError, Unstated, group_mean_strategy
        if self.calibration == "dpbench":
            return Unstated("the 'dpbench' calibration leaves internal nodes of late groups exact (not "
                            "differentially private): no noise law describes them")
        if self.counts == "mean":
            return group_mean_strategy(bins.n_groups, ctx.eps_f)
        return LinearStatedError(tree_strategy(bins.bounds, ctx.eps_f), ctx.noise_law,
                                 Partition.singletons(bins.n_bins))


def tree_strategy(bounds, epsilon: float):
    """The group trees as a :class:`~dphist.stated_error.LinearStrategy` over the bins (columns
    ``0 .. n-1``) and the slots past each group (padding columns ``n ..``, true value 0).

    Rows are the kernel's answers, ``1/H_g`` times a node's indicator (the ``IntervalQueries`` of
    :meth:`GroupTreesFinalizer.finalize`: sensitivity 1, the grid route unless every group is one
    bin, support ``max H_g``); the nodes starting past a group are noiseless zeros.  Equal weights:
    within a group the least squares is Hay et al.'s, and groups share no column."""
    from dphist.stated_error import LinearStrategy, Measurement
    b = np.asarray(bounds, dtype=np.int64)
    n = int(b[-1])
    sizes = np.diff(b)
    heights = tree_heights(sizes)
    width = np.left_shift(1, heights - 1)
    slot_start = np.r_[0, np.cumsum(width)]
    local = np.arange(slot_start[-1]) - np.repeat(slot_start[:-1], width)
    owner = np.repeat(np.arange(sizes.size), width)
    real = local < sizes[owner]
    column = np.empty(local.size, dtype=np.int64)
    column[real] = b[owner[real]] + local[real]
    column[~real] = n + np.arange(int((~real).sum()))
    rows = {True: ([], [], []), False: ([], [], [])}      # measured / noiseless: (row, column, value)
    count = {True: 0, False: 0}
    for lv in range(int(heights.max())):
        span = 1 << lv
        has = np.flatnonzero(heights > lv)
        per = width[has] >> lv
        g = np.repeat(has, per)
        i = np.arange(g.size) - np.repeat(np.cumsum(per) - per, per)
        first = i * span
        for measured in (True, False):
            sel = (first < sizes[g]) if measured else (first >= sizes[g])
            gs, fs = g[sel], first[sel]
            r = count[measured] + np.repeat(np.arange(gs.size), span)
            slots = np.repeat(slot_start[gs] + fs, span) + np.tile(np.arange(span), gs.size)
            rows[measured][0].append(r)
            rows[measured][1].append(column[slots])
            rows[measured][2].append(np.repeat(1.0 / heights[gs], span))
            count[measured] += gs.size
    n_columns = n + int((~real).sum())

    def matrix(measured):
        def build():
            import scipy.sparse as sp
            r, c, v = (np.concatenate(part) for part in rows[measured])
            return sp.csr_matrix((v, (r, c)), shape=(count[measured], n_columns))
        return build

    integral = bool(np.all(heights == 1))
    blocks = [Measurement(matrix(True), 1.0, epsilon, integral=integral, support=int(heights.max()), weight=1.0)]
    if count[False]:
        blocks.append(Measurement(matrix(False), 1.0, epsilon, weight=1.0, noiseless=True))
    return LinearStrategy(blocks, n_columns, reconstruction="Hay et al.'s tree least squares in every group")
