"""``spatial.kd``: Cormode et al.'s private kd-tree and hybrid tree over a 2-D grid.

Cormode, Procopiuc, Srivastava, Shen, Yu, "Differentially Private Spatial Decompositions", ICDE 2012:
a kd-tree whose cuts are private medians (Section 3.2, :mod:`.medians`), a geometric budget for the
counts across levels (Section 4.1, :func:`.budgets.boundary_epsilons`) and the constrained-inference
post-processing (Section 4.2, :func:`.tree.constrained_inference`).

The run, with ``eps`` the finalizer's budget:

1. **Medians**, ``eps_m = median_share * eps``, ``eps_m / L`` for each of the ``L`` kd levels (uniform
   across the levels that cut at medians, as in Cormode et al.'s kd-hybrid).  ``median_share = 0.3``: the
   split share of the private-spatial-decomposition experiment code that DPBench's repository ships as
   third-party code (``dpcomp_core/monolithic/thirdparty/Spatial_DP``, e.g. commit 97fa655: ``Params.Percent
   = 0.3``, "budget allocated for split"; ``Kd_standard.getSplitBudget`` spreads it evenly over the tree's
   levels, the counts get ``1 - Percent``; ``switchLevel = 5`` for its kd-hybrid).  The value is that code's
   default; the paper's own text was not at hand to confirm it is the paper's setting.  Level ``d`` cuts
   every box once, rows at even depths and columns at odd ones (:func:`.boxes.kd_axes`), at the cut
   drawn by :class:`.medians.KDMedians`: one ``custom`` kernel call per level, charged
   ``eps_m / L`` with score sensitivity 1 (the boxes of a level are disjoint: parallel composition).
   When no box can be cut any more (every box one cell) the kd levels stop early, and the median
   budget not spent goes to the counts (decided from the public cuts: adaptive composition).
2. **Hybrid** (``quadtree=True``): below the kd levels every box is cut in the middle of both axes
   (the quadtree's data-independent split, free) until every box is one cell: Cormode et al.'s
   hybrid tree, data-dependent cuts at the top where boxes hold many records and medians are
   accurate, data-independent ones below where a median would be mostly noise.
3. **Counts**, the rest ``eps_c = eps - spent``: every depth ``0..H`` is one ``laplace_partition``
   (sensitivity 1: a level's boxes are disjoint), ``eps_d`` proportional to ``nodes_d^{1/6}``
   with the nominal node count ``nodes_d = 2^{min(d, L)} 4^{max(d - L, 0)}`` (one axis cut per kd level,
   both per quadtree level): the geometric budget, ``eps_{d+1} / eps_d = 2^{1/6}`` on kd levels and
   ``2^{1/3}`` on quadtree levels.
4. **Inference** (``inference=True``): the generalised least-squares estimate consistent over the tree
   (two passes, level by level), post-processing of the noisy counts and the public boxes: free.
   The release spreads every leaf's estimate evenly over its cells (a kd leaf is a box of cells).

The variance of a node's noisy count at depth ``d`` is ``2 / eps_d^2``; after inference, on a tree
where every node has two children, ``V_H = 2 / eps_H^2``, ``V_d = (eps_d^2 / 2 + 1 / (2 V_{d+1}))^{-1}``
bottom-up and ``U_0 = V_0``, ``U_d = U_{d-1} / 4 + V_d / 2`` top-down (``U_d``: the variance of a
depth-``d`` node's consistent estimate); derived and checked by simulation in ``notebooks/spatial.ipynb``.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from dphist import Finalizer, InvalidParameter
from dphist.params import Interval, Options

from .boxes import BoxTree, kd_axes, midpoint_cuts
from .budgets import boundary_epsilons
from .finalizer import CORMODE, grid_shape
from .medians import KDMedians
from .tree import constrained_inference

#: the ctx.notes / Release.notes key of the published tree (its boxes) and each level's epsilon
KD_NOTE = "spatial.kd"

#: kd levels of the kd-tree when ``depth="auto"`` (1,024 leaves at most)
AUTO_KD_DEPTH = 10


def auto_levels(shape, quadtree: bool) -> int:
    """The kd levels of ``depth="auto"`` on a grid of ``shape`` (public: the shape only).

    kd-tree: ``min(10, 2 ceil(log2 s))`` with ``s`` the longer side (two kd levels halve both sides:
    ``2 ceil(log2 s)`` levels reach single cells on a square grid when the cuts are midpoints; ten
    keep the number of private medians, ``2^L - 1``, near a thousand).  Hybrid tree:
    ``ceil(log2 s)``, the top half of those levels data-dependent, the bottom half the quadtree's.
    """
    s = max(int(v) for v in shape)
    half = math.ceil(math.log2(s)) if s > 1 else 0
    return max(half, 1) if quadtree else max(min(AUTO_KD_DEPTH, 2 * half), 1)


def nominal_nodes(kd_levels: int, height: int) -> np.ndarray:
    """``2^{min(d, L)} 4^{max(d - L, 0)}`` for ``d = 0..height``: the nodes of depth ``d`` when every box splits."""
    d = np.arange(height + 1)
    return 2.0 ** np.minimum(d, kd_levels) * 4.0 ** np.maximum(d - kd_levels, 0)


def spread_leaves(tree: BoxTree, leaves: np.ndarray) -> np.ndarray:
    """Every cell's share of its leaf's estimate (uniform within the leaf's box)."""
    H = tree.height
    node = tree.node_of_cell(H)
    return (np.asarray(leaves, dtype=float) / tree.node_sizes(H))[node]


class KDTreeFinalizer(Finalizer):
    """A kd-tree (or hybrid tree) of boxes with private medians, Laplace counts per level, constrained inference.

    Parameters
    ----------
    depth : int >= 1 or ``"auto"``
        The number of kd levels, each cut by private medians (:func:`auto_levels` for ``"auto"``).
    quadtree : bool
        False: the kd-tree, its leaves the boxes after ``depth`` cuts.  True: the hybrid tree, quadtree
        cuts below the kd levels down to single cells.
    median_share : float in (0, 1)
        The share of the budget for the medians (0.3 by default, the split share ``Percent`` of the
        Spatial_DP experiment code shipped in DPBench's repository; the rest for the counts).
    inference : bool
        True: the least-squares consistent estimate; False: the noisy leaves as they are.
    """

    name = "spatial.kd"
    citation = CORMODE.replace("quadtree Section 3", "kd-tree and private medians Section 3")
    spends = True
    dims = (2,)
    vetted_mechanisms = (KDMedians.name,)
    medians = KDMedians      #: the mechanism of one kd level's cuts (a class attribute: the tests' twins swap it)
    param_constraints = {
        "depth": [Interval(int, 1, None), Options("auto")],
        "quadtree": bool,
        "median_share": Interval(float, 0.0, 1.0, closed="neither"),
        "inference": bool,
    }

    def __init__(self, depth="auto", quadtree: bool = False, median_share: float = 0.3, inference: bool = True):
        self.depth = depth
        self.quadtree = quadtree
        self.median_share = median_share
        self.inference = inference

    def kd_levels(self, shape) -> int:
        return auto_levels(shape, self.quadtree) if self.depth == "auto" else int(self.depth)

    def build(self, ctx, shape, eps_median: float) -> tuple[BoxTree, int]:
        """The tree: ``L`` kd levels of private cuts (``eps_median / L`` each), then the quadtree's if asked.
        Returns the tree and the kd levels grown."""
        tree = BoxTree(shape)
        levels = self.kd_levels(shape)
        grown = 0
        for d in range(levels):
            r0, r1, c0, c1 = tree.boxes[-1]
            axis = kd_axes(r0, r1, c0, c1, d)
            if not np.any(axis >= 0):
                break                   # every box is one cell: nothing left to cut
            cuts = ctx.data.custom(self.medians(), eps_median / levels, shape=shape, r0=r0, r1=r1, c0=c0, c1=c1,
                                   axis=axis)
            tree.grow(np.where(axis == 0, cuts, r1), np.where(axis == 1, cuts, c1))
            grown += 1
        if self.quadtree:
            while not tree.all_single():
                r0, r1, c0, c1 = tree.boxes[-1]
                tree.grow(midpoint_cuts(r0, r1), midpoint_cuts(c0, c1))
        return tree, grown

    def stated_error(self, bins, ctx):
        """The counts' noise given the published tree (:data:`KD_NOTE` in the release's notes: its boxes,
        cut at the private medians, and each level's epsilon): every level a block of node indicators over
        the tree's leaves (sensitivity 1), the release their weighted least squares (weights ``eps_d^2``,
        solved by the release's own constrained inference), each leaf spread over its cells.  Its partition
        is the leaves: with kd leaves of several cells the pipeline marks it noise-only and names the
        averaging's bias; the hybrid tree's leaves are single cells (exact given the tree).  Conditional on
        the cuts (``given``).  Without the note (groups from another partitioner): no statement."""
        from dphist.stated_error import LinearStatedError, LinearStrategy, Measurement, Unstated
        from .finalizer import _tree_inverse_gram
        note = ctx.notes.get(KD_NOTE)
        if note is None or bins.n_groups != bins.n_bins or not bins.is_identity_order():
            return Unstated("spatial.kd measures the cells of its own tree; the totals of groups of several cells "
                            "from another partitioner are sums of its leaves, which this statement does not cover")
        tree, eps = note["tree"], tuple(float(e) for e in note["eps"])
        H = tree.height
        depths = tuple(range(H + 1)) if self.inference else (H,)
        blocks = [Measurement(functools.partial(_leaf_node_matrix, tree, d), 1.0, eps[d], integral=True, support=1)
                  for d in depths]
        strategy = LinearStrategy(blocks, tree.n_nodes(H),
                                  reconstruction=("weighted least squares over the tree (constrained inference), "
                                                  "each leaf spread over its cells") if self.inference else
                                  "the noisy leaves, each spread over its cells",
                                  inverse_gram=(functools.partial(_tree_inverse_gram, tree, depths, eps)
                                                if self.inference else None))
        stated = LinearStatedError(strategy, ctx.noise_law, tree.partition(H))
        stated.conditional = True
        stated.given = f"the tree's cuts (private medians; the release's notes, {KD_NOTE!r})"
        return stated

    def finalize(self, bins, ctx) -> np.ndarray:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter(f"{self.name} spends budget: give the finalizer a share gamma_f > 0")
        shape = grid_shape(ctx, bins.n_bins)
        if len(shape) != 2:
            raise InvalidParameter(f"{self.name} (the kd-tree and hybrid tree) runs on 2-D histograms, got the "
                                   f"shape {shape}")
        budget = float(ctx.budget)
        tree, grown = self.build(ctx, shape, self.median_share * budget)
        eps = boundary_epsilons(budget - ctx.data.spent, nominal_nodes(grown, tree.height))
        values, variances = [], []
        for d, e in enumerate(eps):       # one kernel call per level
            values.append(ctx.data.laplace_partition(tree.partition(d), float(e)))
            variances.append(2.0 / float(e) ** 2)
        leaves = constrained_inference(tree, values, variances)[-1] if self.inference else \
            np.asarray(values[-1], dtype=float)
        ctx.notes[KD_NOTE] = {"tree": tree, "eps": [float(e) for e in eps]}    # public: the DP cuts, the budgets
        cells = spread_leaves(tree, leaves)
        if bins.n_groups == bins.n_bins:
            return cells
        return bins.spread(bins.sums(cells))


def _leaf_node_matrix(tree: BoxTree, depth: int):
    """The ``nodes(depth) x leaves`` 0/1 matrix: every leaf's ancestor at ``depth`` (its own node at the leaves)."""
    import scipy.sparse as sp
    node = np.arange(tree.n_nodes(tree.height))
    for d in range(tree.height, depth, -1):
        node = tree.parent_of_node(d)[node]
    return sp.csr_matrix((np.ones(node.size), (node, np.arange(node.size))), shape=(tree.n_nodes(depth), node.size))
