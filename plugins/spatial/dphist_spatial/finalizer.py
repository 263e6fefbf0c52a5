"""``spatial.tree``: a data-independent tree of boxes over the grid, measured level by level.

Every measured level is one ``laplace_partition`` call of the kernel (its nodes are disjoint boxes
of cells: sensitivity 1), with the level's epsilon from :mod:`.budgets`; the release is the
constrained-inference estimate of the leaves (the cells), or the noisy leaves without inference.
One tree serves two papers' algorithms: Cormode et al.'s quadtree (``branching=2``, geometric
budget, root measured: the preset ``QuadTree``) and Qardaji et al.'s multi-dimensional HB
(``branching="qardaji"``, uniform budget, root not measured: boost's preset ``HB-2D``).

The grid's shape is the histogram's public shape; a histogram without one (a vector of ``n``
bins) is the line ``(n,)``, where the tree is a 1-D ``b``-ary hierarchy.
"""
from __future__ import annotations

import functools

import numpy as np

from dphist import Finalizer, InvalidParameter
from dphist.params import Interval, Options

from .budgets import geometric_ratio, level_epsilons
from .tree import GridTree, constrained_inference, tree_height

CORMODE = ("Cormode, Procopiuc, Srivastava, Shen, Yu, Differentially Private Spatial Decompositions, ICDE 2012 "
           "(quadtree Section 3, geometric budget Section 4.1, constrained inference Section 4.2)")
QARDAJI = ("Qardaji, Yang, Li, Understanding Hierarchical Methods for Differentially Private Histograms, "
           "PVLDB 6(14) 2013, Section 5.1 (branching of the multi-dimensional hierarchy)")


def grid_shape(ctx, n: int) -> tuple[int, ...]:
    """The public shape of the run's histogram (the line ``(n,)`` when it has none)."""
    shape = getattr(ctx, "shape", None)
    if shape is None:
        return (int(n),)
    shape = tuple(int(s) for s in shape)
    if int(np.prod(shape)) != int(n):
        raise InvalidParameter(f"spatial.tree: the grid {shape} does not have {n} cells")
    return shape


def qardaji_branching(shape) -> int:
    """The ``b`` minimising ``b (n - 1) h^2`` with ``h = ceil(log_b n)``, ``n`` the longest side, over
    ``2 <= b <= n`` (ties: the smallest): Qardaji et al.'s Section 5.1 expression as DPBench's ``HB2D``
    evaluates it, with ``h`` in integers (the reference's floating ``log`` can round ``log_b b^k`` up)."""
    n = max(int(s) for s in shape)
    if n < 2:
        return 2
    best, best_b = None, 2
    for b in range(2, n + 1):       # public: a loop over candidate branchings, not over cells
        v = b * (n - 1) * tree_height((n,), b) ** 2
        if best is None or v < best:
            best, best_b = v, b
    return best_b


class GridTreeFinalizer(Finalizer):
    """A tree of boxes over the cells, Laplace counts per level, constrained inference.

    Parameters
    ----------
    branching : int >= 2 or ``"qardaji"``
        Parts per axis at each level (2: the quadtree); ``"qardaji"``: :func:`qardaji_branching`.
    budget : ``"geometric"`` or ``"uniform"``
        Geometric (Cormode et al. Section 4.1): epsilon grows by ``b^{(d-1)/3}`` per level towards
        the leaves; uniform: equal shares (Hay et al., Qardaji et al.).
    noisy_root : bool
        Measure the root (Cormode et al., DPBench's ``QuadTree``); False spends nothing on it
        (DPBench's ``HB2D``).  A one-cell grid always measures its single node.
    inference : bool
        True: the least-squares consistent estimate (:func:`.tree.constrained_inference`);
        False: the noisy leaves as they are.

    The input groups are not measured separately: the tree measures cells, and a partition of
    several bins per group gets each group's summed estimate spread evenly over its bins.
    """

    name = "spatial.tree"
    citation = CORMODE
    spends = True
    dims = (1, 2)       # any number of axes by construction; tested on lines and grids
    param_constraints = {
        "branching": [Interval(int, 2, None), Options("qardaji")],
        "budget": Options("geometric", "uniform"),
        "noisy_root": bool,
        "inference": bool,
    }

    def __init__(self, branching=2, budget: str = "geometric", noisy_root: bool = True, inference: bool = True):
        self.branching = branching
        self.budget = budget
        self.noisy_root = noisy_root
        self.inference = inference

    def tree(self, shape) -> GridTree:
        """The public tree over a grid of ``shape``."""
        b = qardaji_branching(shape) if self.branching == "qardaji" else int(self.branching)
        return GridTree(shape, b)

    def measured_depths(self, tree: GridTree) -> list[int]:
        first = 0 if (self.noisy_root or tree.height == 0) else 1
        return list(range(first, tree.height + 1))

    def level_epsilons(self, tree: GridTree, epsilon: float) -> np.ndarray:
        """The epsilon of each measured depth (root first); they sum to ``epsilon``."""
        return level_epsilons(epsilon, self.measured_depths(tree), self.budget,
                              geometric_ratio(tree.shape, tree.branching))

    def stated_error(self, bins, ctx):
        """Exact: every measured depth is a block of disjoint node indicators over the cells
        (sensitivity 1, the level's epsilon), and the release is their weighted least squares with
        weights ``eps_d^2`` (:func:`.tree.constrained_inference` is that solve, Hay et al.'s Theorem 3
        in Cormode et al.'s weighted form); without inference the noisy leaves alone.  The tree is
        public (the shape and the branching), so the statement reads no data.  Groups of several cells
        (another partitioner before it): no statement (their totals are sums of the tree's leaves,
        not measurements over the groups)."""
        from dphist.stated_error import LinearStrategy, Measurement, Unstated
        if bins.n_groups != bins.n_bins or not bins.is_identity_order():
            return Unstated("spatial.tree measures cells; the totals of groups of several cells are sums of "
                            "its leaves, which this statement does not cover")
        tree = self.tree(grid_shape(ctx, bins.n_bins))
        depths = self.measured_depths(tree)
        eps = self.level_epsilons(tree, ctx.eps_f)
        pairs = list(zip(depths, eps)) if self.inference else [(depths[-1], eps[-1])]
        blocks = [Measurement(_node_matrix(tree, d), 1.0, float(e), integral=True, support=1) for d, e in pairs]
        return LinearStrategy(blocks, tree.n_cells,
                              reconstruction=("weighted least squares over the tree (constrained inference)"
                                              if self.inference else "the noisy leaves"),
                              inverse_gram=(functools.partial(_tree_inverse_gram, tree, tuple(depths),
                                                              tuple(float(e) for e in eps))
                                            if self.inference else None))

    def finalize(self, bins, ctx) -> np.ndarray:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter("spatial.tree spends budget: give the finalizer a share gamma_f > 0")
        tree = self.tree(grid_shape(ctx, bins.n_bins))
        depths = self.measured_depths(tree)
        eps = self.level_epsilons(tree, ctx.budget)
        values, variances = [None] * (tree.height + 1), [np.inf] * (tree.height + 1)
        for d, e in zip(depths, eps):     # one kernel call per level
            values[d] = ctx.data.laplace_partition(tree.partition(d), float(e))
            variances[d] = 2.0 / float(e) ** 2
        leaves = constrained_inference(tree, values, variances)[-1] if self.inference else \
            np.asarray(values[-1], dtype=float)
        if bins.n_groups == bins.n_bins:
            return leaves
        return bins.spread(bins.sums(leaves))


def _node_matrix(tree: GridTree, depth: int):
    """A function building the ``nodes x cells`` 0/1 matrix of ``depth`` (built when a statement is asked;
    a partial of a module function, so a release holding it still pickles)."""
    return functools.partial(_build_node_matrix, tree, int(depth))


def _tree_inverse_gram(tree: GridTree, depths, eps, U) -> np.ndarray:
    """``(A^T W A)^{-1} U`` for the tree's levels ``A`` with weights ``W = eps_d^2``, by the release's own
    solver: the least-squares estimate from answers ``y`` is ``(A^T W A)^{-1} A^T W y``, and with ``y`` zero
    on every level but the leaves (the cells, ``A_H = I``) and ``U / eps_H^2`` there, ``A^T W y = U``.
    :func:`.tree.constrained_inference` then solves all columns of ``U`` in O(nodes) each."""
    U = np.asarray(U, dtype=float)
    H = tree.height
    values, variances = [None] * (H + 1), [np.inf] * (H + 1)
    for d, e in zip(depths, eps):
        values[d] = np.zeros((tree.n_nodes(d),) + U.shape[1:])
        variances[d] = 1.0 / e ** 2
    values[H] = U / eps[list(depths).index(H)] ** 2
    return constrained_inference(tree, values, variances)[-1]


def _build_node_matrix(tree: GridTree, depth: int):
    import scipy.sparse as sp
    node = tree.node_of_cell(depth)
    return sp.csr_matrix((np.ones(node.size), (node, np.arange(node.size))), shape=(tree.n_nodes(depth), node.size))
