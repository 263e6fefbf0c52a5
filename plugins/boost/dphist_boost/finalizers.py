"""The two finalizers of Hay, Rastogi, Miklau, Suciu (PVLDB 2010).

* :class:`HierarchicalFinalizer` (``boost.hierarchical``) - the query
  strategy H (Section 4): a k-ary tree over the groups it is given, Laplace
  noise on every node, then constrained inference (H-bar, Theorem 3) or none
  (H-tilde).  Options: per-level budgets, Qardaji et al.'s branching (Hb),
  the non-negativity heuristic (Section 4.2), rounding (Section 5.2).
* :class:`UnattributedFinalizer` (``boost.unattributed``) - the sorted query S
  (Section 3) followed by isotonic regression (S-bar, Theorem 1) or the
  baselines S-tilde and S-tilde_r (Section 5.1).
"""
from __future__ import annotations

import functools

import numpy as np

from dphist import Finalizer
from dphist.params import Interval, Options, Satisfies

from .branching import best_branching
from .budgets import level_epsilons, validate_spec
from .inference import weighted_inference, zero_nonpositive_subtrees
from .isotonic import pava, sort_and_round
from .tree import NoisyTree, level_sizes, node_leaf_ranges, tree_matrix

_HAY = "Hay, Rastogi, Miklau, Suciu, Boosting the Accuracy of Differentially Private Histograms Through Consistency, PVLDB 3(1), 2010"

#: key of the public noisy tree in ``ctx.notes`` / ``Release.notes``
TREE_NOTE = "boost.tree"


#: ``branching``: k >= 2, or Qardaji et al.'s rule
BRANCHING = [Interval(int, 2, None), Options("auto")]
#: ``level_budgets``: a rule name or positive finite epsilons, leaves first (lengths are checked at run time)
LEVEL_BUDGETS = Satisfies(validate_spec, "'uniform', 'geometric' or a list of positive finite epsilons")

class HierarchicalFinalizer(Finalizer):
    """Hay et al.'s hierarchical strategy H over the groups in their current order.

    Leaves are the groups of ``bins`` (for singleton bins, the domain).  Level
    ``j`` of the k-ary tree (see :mod:`dphist_boost.tree`) is a set of
    disjoint position intervals (runs of ``k**j`` groups), measured with
    ``ctx.data.laplace_blocks(bins, k**j, eps_j)`` (sensitivity
    1 per level, so ``Lap(1/eps_j)`` per node; uniform ``eps_j = eps/ell`` is
    Proposition 4's ``Lap(ell/eps)``).  The ``eps_j`` sum to the share exactly.

    Parameters
    ----------
    branching : int >= 2 or ``"auto"``
        ``k``; ``"auto"`` is Qardaji et al.'s rule (:mod:`dphist_boost.branching`)
        evaluated on the (public) number of groups.
    level_budgets : ``"uniform"``, ``"geometric"`` or list of epsilons (leaves first)
        See :mod:`dphist_boost.budgets`.
    inference : bool
        True: H-bar, the least-squares consistent tree (Theorem 3; the
        weighted two-pass form when level budgets differ).  False: H-tilde,
        whose leaves are released as they are (range queries on H-tilde in
        the paper's sense use :func:`dphist_boost.cover.answer_by_cover` on the
        noisy tree stored in ``ctx.notes["boost.tree"]``; see :mod:`dphist_boost.cover`).
    nonnegative : bool
        Section 4.2 heuristic: zero every subtree whose estimate is <= 0.
        The zeroed tree is no longer consistent: range queries are then best
        answered from the node cover of :meth:`estimate_levels` (see the
        notebook, Figure 6); summing the released leaves accumulates the
        positive bias of the zeroing (and of rounding) over the range.
    round : bool
        Round released leaf counts to the nearest non-negative integer
        (Section 5.2).  For groups of several bins the group total is rounded
        and then spread evenly.
    noisy_root : bool
        Measure the root (Hay et al., DPBench).  False leaves the root
        unmeasured and splits the budget over the other levels, as ektelo's
        Hb (``include_root=False``) and Qardaji et al. do; a one-leaf tree
        always measures its single node.

    Post-processing (inference, zeroing, rounding) uses only the noisy
    measurements and public sizes: it is free.
    """

    name = "boost.hierarchical"
    citation = _HAY + ", Section 4 (H, Theorem 3); Qardaji et al. PVLDB 2013 (Hb); Cormode et al. ICDE 2012 (geometric budgets)"

    param_constraints = {"branching": BRANCHING, "level_budgets": LEVEL_BUDGETS, "inference": bool,
                         "nonnegative": bool, "round": bool, "noisy_root": bool}

    def __init__(self, branching=2, level_budgets="uniform", inference: bool = True,
                 nonnegative: bool = False, round: bool = False, noisy_root: bool = True):
        self.branching = branching
        self.level_budgets = level_budgets
        self.inference = inference
        self.nonnegative = nonnegative
        self.round = round
        self.noisy_root = noisy_root

    def resolved_branching(self, n_leaves: int) -> int:
        return best_branching(n_leaves) if self.branching == "auto" else int(self.branching)

    def level_plan(self, n_leaves: int, budget: float):
        """``(branching, level sizes, measured levels, their epsilons)``: public, from the tree's shape and
        the budget; what :meth:`measure` spends and :meth:`stated_error` states."""
        k = self.resolved_branching(n_leaves)
        sizes = level_sizes(n_leaves, k)
        measured = list(range(len(sizes)))
        if not self.noisy_root and len(sizes) > 1:
            measured = measured[:-1]
        return k, sizes, measured, level_epsilons(self.level_budgets, len(measured), budget)

    def measure(self, bins, ctx) -> NoisyTree:
        """Measure every level of the tree through the kernel; returns the public noisy tree."""
        n_leaves = bins.n_groups
        k, sizes, measured, eps = self.level_plan(n_leaves, ctx.budget)
        values: list = [None] * len(sizes)
        variances = [np.inf] * len(sizes)
        epsilons = [0.0] * len(sizes)
        for j, eps_j in zip(measured, eps):
            # node i of level j: the runs of k**j consecutive leaf groups (node_leaf_ranges), in the
            # partition's order; the kernel sums them without interval arrays
            values[j] = ctx.data.laplace_blocks(bins, k ** j, eps_j)
            variances[j] = 2.0 / eps_j ** 2
            epsilons[j] = float(eps_j)
        return NoisyTree(k, values, variances, epsilons)

    def estimate_levels(self, tree: NoisyTree, leaves_only: bool = False) -> list[np.ndarray]:
        """Post-processing of the noisy tree into node estimates per level (free).  ``leaves_only``: the
        list may hold the leaves alone (the inference then keeps no upper level it is done with;
        zeroing needs every level and keeps them)."""
        leaves_only = leaves_only and not self.nonnegative
        if self.inference:
            levels = weighted_inference(tree.values, tree.variances, tree.branching, leaves_only=leaves_only)
        else:
            levels = [v for v in tree.values if v is not None]  # only the root can be unmeasured
        if self.nonnegative:
            levels = zero_nonpositive_subtrees(levels, tree.branching)
        return levels

    def stated_error(self, bins, ctx):
        """The measured levels as a linear strategy over the leaves (public: the tree's shape and the
        level epsilons).  H-bar's inference is the least squares weighted by ``eps_j^2 / 2`` (Theorem
        3, weighted form); H-tilde releases the leaf level alone.  Zeroing and rounding are marked as
        non-linear post-processing."""
        from dphist.stated_error import LinearStrategy, Measurement
        n_leaves = bins.n_groups
        k, sizes, measured, eps = self.level_plan(n_leaves, ctx.eps_f)
        if not self.inference:
            measured, eps = measured[:1], eps[:1]
        blocks = [Measurement(functools.partial(tree_matrix, n_leaves, k, [j]), 1.0, float(e), integral=True, support=1)
                  for j, e in zip(measured, eps)]
        steps = (("zeroing of non-positive subtrees",) if self.nonnegative else ()) + \
                (("rounding",) if self.round else ())
        inverse_gram = None
        if self.inference:
            variances = [np.inf] * len(sizes)
            for j, e in zip(measured, eps):
                variances[j] = 1.0 / float(e) ** 2     # the inverse of the statement's weights eps_j^2

            inverse_gram = functools.partial(_tree_inverse_gram, variances, measured, sizes, k)
        return LinearStrategy(blocks, n_leaves, "weighted least squares on the tree (Theorem 3)"
                              if self.inference else "the noisy leaves", postprocess=steps,
                              inverse_gram=inverse_gram)

    def finalize(self, bins, ctx) -> np.ndarray:
        tree = self.measure(bins, ctx)
        ctx.notes[TREE_NOTE] = tree  # the noisy measurements are public
        leaves = self.estimate_levels(tree, leaves_only=True)[0]
        if self.round:
            leaves = np.clip(np.rint(leaves), 0.0, None)
        if bins.n_groups == bins.n_bins and bins.is_identity_order():
            return np.asarray(leaves, dtype=float)  # singleton bins in domain order: nothing to spread
        return bins.spread(leaves)


def _tree_inverse_gram(variances, measured, sizes, k, U):
    """``(A^T W A)^{-1} U`` for the tree's strategy with weights ``1 / variances``: the tree's own least
    squares of answers ``u * variances[0]`` on the leaves and 0 elsewhere (then ``A^T W y = u``),
    O(G) per column (Theorem 3's two passes)."""
    U = np.asarray(U, dtype=float)
    cols = U.reshape(U.shape[0], -1)
    out = np.empty_like(cols)
    for c in range(cols.shape[1]):
        values = [cols[:, c] * variances[0]] + [None if j not in measured else np.zeros(sizes[j])
                                                for j in range(1, len(sizes))]
        out[:, c] = weighted_inference(values, variances, k, leaves_only=True)[0]
    return out.reshape(U.shape)


_VARIANTS = ("S-bar", "S-tilde", "S-tilde-r")


class UnattributedFinalizer(Finalizer):
    """Hay et al.'s unattributed histogram: the sorted counts S plus Laplace noise, then inference.

    ``ctx.data.sorted_counts`` answers S (ascending counts, sensitivity 1,
    Proposition 3) with ``Lap(1/eps)``.  Variants (Section 5.1):

    * ``"S-bar"`` - isotonic regression of the answer (Theorem 1, PAVA);
    * ``"S-tilde"`` - the noisy answer itself;
    * ``"S-tilde-r"`` - sorted and rounded to the nearest non-negative integer.

    The estimate is a sorted vector (``unattributed = True``): metrics must
    compare it with ``np.sort(x)``.  The bins handed in are ignored: S is a
    query over the whole domain.
    """

    name = "boost.unattributed"
    citation = _HAY + ", Section 3 (S, Theorem 1) and Section 5.1 (baselines)"
    unattributed = True
    param_constraints = {"variant": Options(*_VARIANTS)}

    def __init__(self, variant: str = "S-bar"):
        self.variant = variant

    def finalize(self, bins, ctx) -> np.ndarray:
        noisy_sorted = ctx.data.sorted_counts(ctx.budget)
        # everything below is post-processing of the noisy answer (free)
        if self.variant == "S-bar":
            return pava(noisy_sorted)
        if self.variant == "S-tilde-r":
            return sort_and_round(noisy_sorted)
        return noisy_sorted
