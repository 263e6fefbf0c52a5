"""StructureFirst's counts: a binary Hay et al. tree inside every group, or the group's noisy mean.

``counts="tree"`` (default, what the reference code publishes: DPBench ``thirdparty/xiaokui``,
``DP::boost`` / ``HTree``, read, not copied; the paper's extension of StructureFirst to range
queries, VLDBJ 2013 Section 6): a group of m bins gets a binary tree of H = ceil(log2 m) + 1 levels
over 2^(H-1) leaf slots (slots past the group are known zeros and are not measured); every
measured node gets Laplace(H / eps_2), so the group's tree costs eps_2 and the groups compose in
parallel.  Hay et al.'s inference (PVLDB 2010, Section 4: z bottom-up, then h top-down) makes each
tree consistent; the known-zero slots enter it as zeros, as in the reference.

Measurement: one ``laplace_linear`` call with ``IntervalQueries`` of weight 1/H_g on every node of
group g, so every bin's column has L1 norm H_g x 1/H_g = 1 (the kernel computes it) and the answers
divided by the weights carry Laplace(H_g / eps_2).

``counts="mean"`` (the paper's "mean" StructureFirst, Section 5): Laplace(1/eps_2) on each group's
sum, spread evenly (the core's group-mean finalizer does the same).
"""
from __future__ import annotations

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition
from dphist.kernel.queries import IntervalQueries
from dphist.params import Options

COUNTS = ("tree", "mean")


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


def hay_inference(noisy_nodes, group, level, index, sizes) -> np.ndarray:
    """Consistent leaves of every group's binary tree (Hay et al. 2010, Section 4), vectorised over
    the groups of equal height; unmeasured slots are zeros."""
    sizes = np.asarray(sizes, dtype=np.int64)
    heights = tree_heights(sizes)
    leaves = np.zeros(int(sizes.sum()))
    offsets = np.r_[0, np.cumsum(sizes)]
    for H in np.unique(heights):
        gs = np.flatnonzero(heights == H)
        row = {g: r for r, g in enumerate(gs)}
        width = 1 << (H - 1)
        tree = [np.zeros((gs.size, width >> lv)) for lv in range(H)]
        sel = np.isin(group, gs)
        rows = np.fromiter((row[g] for g in group[sel]), dtype=np.int64, count=int(sel.sum()))
        for lv in range(H):
            at = level[sel] == lv
            tree[lv][rows[at], index[sel][at]] = noisy_nodes[sel][at]
        z = [tree[0]]
        for lv in range(1, H):
            alpha = float(1 << lv)
            kids = z[lv - 1].reshape(gs.size, -1, 2).sum(axis=2)
            z.append((alpha * tree[lv] + (alpha - 1.0) * kids) / (2.0 * alpha - 1.0))
        h = z[H - 1]
        for lv in range(H - 1, 0, -1):
            kids = z[lv - 1].reshape(gs.size, -1, 2)
            h = (kids + ((h - kids.sum(axis=2)) / 2.0)[:, :, None]).reshape(gs.size, -1)
        for r, g in enumerate(gs):
            leaves[offsets[g]:offsets[g + 1]] = h[r, :sizes[g]]
    return leaves


class GroupTreesFinalizer(Finalizer):
    """``structurefirst.group-trees``: StructureFirst's counts with eps_2 (module docstring).

    Parameters
    ----------
    counts : ``"tree"`` (default; a Hay tree per group, as the reference code) or ``"mean"``
        (Laplace on each group's sum, spread evenly: the paper's mean StructureFirst).
    """

    name = "structurefirst.group-trees"
    citation = ("Xu et al., VLDBJ 2013, Sections 5-6 (StructureFirst's counts); Hay, Rastogi, Miklau, Suciu, "
                "PVLDB 2010, Section 4 (the tree and its inference)")
    requires_domain_order = True
    param_constraints = {"counts": Options(*COUNTS)}

    def __init__(self, counts: str = "tree"):
        self.counts = counts

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter(f"{self.name} spends budget: give the finalizer a share gamma_f > 0")
        if not bins.is_identity_order():
            raise InvalidParameter(f"{self.name} needs the groups in domain order (no sorter)")
        if self.counts == "mean":
            return bins.spread(ctx.data.laplace_partition(bins, ctx.budget))
        sizes = bins.sizes
        start, end, group, level, index = tree_nodes(bins.bounds)
        weights = 1.0 / tree_heights(sizes)[group]
        answers = ctx.data.laplace_linear(IntervalQueries(start, end, weights), ctx.budget)
        return hay_inference(np.asarray(answers) / weights, group, level, index, sizes)
