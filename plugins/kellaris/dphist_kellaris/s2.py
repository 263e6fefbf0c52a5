"""S_2: smoothing with the squared error metric (Kellaris, Papadopoulos, Papadias, TKDE, Section 5.1).

Grouping minimises Eq. (2) on a Laplace(1/eps_1) histogram ``b^``::

    err^_2 = sum_{g in G} c^_g,   c^_g = sum_{j in g} (b^_j - mean_g b^)^2 + 2/eps_2^2 - corr(|g|)

* the SSE of a group is ``sum b^^2 - (sum b^)^2 / |g|``, O(1) per group from the prefix sums of
  ``b^`` and of ``b^^2`` (the paper's ``v'_1``, ``v'_2``); the least-cost grouping is the engine's
  O(N^2) DP (:func:`dphist.segmentation.optimal`, mode (a)), optimal by Theorem 5.1's Omega(N^2);
* ``2/eps_2^2`` is the per-group publishing term of Eq. (2).  The paper writes ``1/eps_2^2`` (and
  ``1/eps_2`` in Eq. (2)); we use the variance of the group's Laplace(1/eps_2) total, 2/eps_2^2,
  so that it is in the same units as the bias below (which carries Laplace's factor 2);
* **bias correction** (Section 5.1, last paragraph): noise raises a group's expected noisy SSE by
  ``(|g| - 1) Var(Lap(1/eps_1)) = 2 (|g| - 1) / eps_1^2`` (Var of n iid values around their own
  mean has n - 1 degrees of freedom), which pushes the DP towards small groups; with
  ``correction=True`` each group's cost is reduced by exactly that before the DP.

Modes: ``"optimal"`` (every run of bins: S_2, O(N^2)) and ``"tree"`` (only the bins of full
subtrees of a ``branching``-ary tree: the grouping of hierarchical smoothing S_2 + H, Section 6,
O(N); :func:`dphist.segmentation.tree`).

Privacy: the only private step is ``laplace_identity`` (eps_1-DP); the SSE, the correction and the
DP are post-processing of public noisy counts with public constants.  ``kellaris.s2-initial``
reads the initializer's H~ instead (O + S_2 is AHP with S_2: one noisy vector for sorting and
grouping, Section 7.1) and spends nothing itself.
"""
from __future__ import annotations

import numpy as np

from dphist import InvalidParameter, Partition, Partitioner
from dphist.params import Interval, Options
from dphist.segmentation import SSEPenalty, optimal, tree
from .pruned_tree import tree_height

MODES = ("optimal", "tree")
PUBLISH_COSTS = ("flat", "tree")
_CITATION = "Kellaris, Papadopoulos, Papadias, TKDE, Section 5.1 (S_2, Eq. (2)) and Section 6 (S_2 + H)"


def s2_penalty(eps_1: float, eps_2: float, correction: bool = True, levels: int | None = None,
               branching: int = 16):
    """The size term of a group's cost: its publishing noise minus ``2 (|g| - 1)/eps_1^2`` (the bias,
    only with ``correction``).  A function of public sizes and budgets only.

    Publishing noise: ``levels=None`` (Eq. (2)): ``2/eps_2^2``, the variance of one Laplace(1/eps_2)
    total.  ``levels = T + 1`` (the per-node cost of hierarchical smoothing): the variance of the
    group root's averaged estimate in the pruned tree, ``2 (T + 1)^2 / ((r + 1) eps_2^2)``, every
    level measured with eps_2/(T + 1) and a root at level r = ceil(log_B |g|) averaging r + 1
    estimates (Section 6; exact for full subtrees; a shortened node at the domain's end may have
    its root higher, i.e. more estimates than charged)."""
    eps_2 = float(eps_2)
    if levels is None:
        def measure(sizes):
            return np.full(np.shape(sizes), 2.0 / eps_2 ** 2)
    else:
        per_level = 2.0 * float(levels) ** 2 / eps_2 ** 2
        b = int(branching)

        def measure(sizes):
            m = np.asarray(sizes, dtype=np.int64)
            r = np.zeros(m.shape, dtype=float)
            span = np.ones(m.shape, dtype=np.int64)
            while np.any(span < m):          # r = ceil(log_B m) in integers (log-free)
                grow = span < m
                span = np.where(grow, span * b, span)
                r += grow
            return per_level / (r + 1.0)
    measure.elementwise = True      # each size's value by its own operations: SSEPenalty reads only the sizes asked
    if not correction:
        return measure
    bias = 2.0 / float(eps_1) ** 2

    def corrected(sizes):
        return measure(sizes) - bias * (np.asarray(sizes, dtype=float) - 1.0)
    corrected.elementwise = True
    return corrected


def s2_cost(noisy, eps_1: float, eps_2: float, correction: bool = True, levels: int | None = None,
            branching: int = 16) -> SSEPenalty:
    """The engine cost of Eq. (2) on the noisy values (in the bins' current order); ``levels``: the
    per-node publishing cost of :func:`s2_penalty`."""
    return SSEPenalty(np.asarray(noisy, dtype=float), s2_penalty(eps_1, eps_2, correction, levels, branching))


def s2_grouping(noisy, eps_1: float, eps_2: float, *, mode: str = "optimal", branching: int = 16,
                correction: bool = True, bounds=None, publish_cost: str = "flat") -> np.ndarray:
    """Cut points (unit indices 0..k) of the least-cost grouping of ``noisy`` under Eq. (2)
    (``publish_cost="tree"``: the pruned tree's noise on the group root instead of Eq. (2)'s flat term).

    ``noisy`` may also be a one-element list holding the values: the list is emptied once the cost is
    made, so the cost holds the last reference to the values (memory: 1x the input during the search; over
    units the tree mode's prefix sums are written over them)."""
    holder = noisy if isinstance(noisy, list) else [noisy]
    values = holder[0]
    levels = None
    if publish_cost == "tree":
        if mode != "tree":
            raise InvalidParameter("publish_cost='tree' charges the pruned tree's noise: it needs mode='tree'")
        k = np.asarray(values).size if bounds is None else np.asarray(bounds).size - 1
        levels = tree_height(k, int(branching)) + 1
    elif publish_cost != "flat":
        raise InvalidParameter(f"publish_cost must be one of {', '.join(PUBLISH_COSTS)}, got {publish_cost!r}")
    if mode not in MODES:
        raise InvalidParameter(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    cost = s2_cost(values, eps_1, eps_2, correction, levels, int(branching))
    del values
    if mode == "optimal":
        return optimal(cost, bounds).bounds
    holder.clear()                  # the cost's reference is then the last: its prefix sums may take the values' memory
    if bounds is not None:
        cost.keep_prefix_sums_only()
    # over positions the tree reads the values once for its leaves and keeps the prefix sums only at the nodes
    # above them (dphist.segmentation.tree's compiled route; its numpy route makes the sums on first read)
    return tree(cost, bounds, branching=int(branching)).bounds


class S2Partitioner(Partitioner):
    """``kellaris.s2``: Laplace(1/eps_1) counts, then the least-cost grouping under Eq. (2).

    Parameters
    ----------
    mode : ``"optimal"`` (S_2: every run of consecutive units, O(N^2)) or ``"tree"`` (full
        subtrees of a ``branching``-ary tree, for S_2 + H, O(N)).
    branching : the tree's fan-out (16, Kellaris et al. footnote 1); used by ``"tree"`` only.
    correction : subtract the expected noise bias 2(|g| - 1)/eps_1^2 from each group's cost.
    measure_epsilon : eps_2 of the cost's publishing term; None = the finalizer's budget.
    publish_cost : ``"flat"`` (default, Eq. (2): 2/eps_2^2 per group) or ``"tree"`` (mode "tree"
        only: the pruned tree's noise on the group root, 2 (T+1)^2 / ((r+1) eps_2^2), :func:`s2_penalty`).

    Spends its whole share eps_1 in one ``laplace_identity`` call.
    """

    name = "kellaris.s2"
    spends = True
    citation = _CITATION
    param_constraints = {"mode": Options(*MODES), "branching": Interval(int, 2, None), "correction": bool,
                         "measure_epsilon": [None, Interval(float, 0, None, closed="neither")],
                         "publish_cost": Options(*PUBLISH_COSTS)}

    def __init__(self, mode: str = "optimal", branching: int = 16, correction: bool = True,
                 measure_epsilon: float | None = None, publish_cost: str = "flat"):
        self.mode = mode
        self.branching = branching
        self.correction = correction
        self.measure_epsilon = measure_epsilon
        self.publish_cost = publish_cost
        if publish_cost == "tree" and mode != "tree":
            raise InvalidParameter(f"{self.name}: publish_cost='tree' charges the pruned tree's noise; it needs "
                                   "mode='tree'")

    def _eps_2(self, ctx) -> float:
        eps_2 = ctx.eps_f if self.measure_epsilon is None else float(self.measure_epsilon)
        if not eps_2 > 0:
            raise InvalidParameter(f"{self.name}: the cost's publishing term needs eps_2 > 0 "
                                   "(gamma_f > 0, or pass measure_epsilon)")
        return eps_2

    def _noisy(self, bins, ctx) -> tuple[np.ndarray, float]:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter(f"{self.name} spends budget: give the partitioner a share gamma_p > 0")
        return ctx.data.laplace_identity(ctx.budget), float(ctx.budget)   # the only private step

    def partition(self, bins: Partition, ctx) -> Partition:
        eps_2 = self._eps_2(ctx)
        noisy, eps_1 = self._noisy(bins, ctx)
        # post-processing from here on
        values = np.asarray(noisy, dtype=float)
        if not bins.is_identity_order():     # in domain order the noisy values are already in place (memory)
            values = values[bins.order]
        holder = [values]           # the last reference to the values: emptied once the prefix sums exist
        del noisy, values
        cuts = s2_grouping(holder, eps_1, eps_2, mode=self.mode, branching=int(self.branching),
                           correction=bool(self.correction), publish_cost=self.publish_cost,
                           bounds=None if bins.is_plain() else bins.bounds)   # singletons: units are positions
        return bins.merge(cuts)


class S2OnInitialPartitioner(S2Partitioner):
    """``kellaris.s2-initial``: S_2 on the initializer's H~ (eps_1 = its budget); spends nothing.

    O + S_2 (Section 7.1: "the method of [3] (AHP) with our S_2 algorithm"): one Laplace vector
    orders the bins and is grouped; the bias correction uses the initializer's eps_1 = gamma_in eps,
    which assumes H~ is Laplace(1/eps_in) per bin (the core's ``laplace`` initializer).
    """

    name = "kellaris.s2-initial"
    spends = False

    def _noisy(self, bins, ctx) -> tuple[np.ndarray, float]:
        if ctx.noisy is None or not ctx.eps_in > 0:
            raise InvalidParameter(f"{self.name} groups H~: the pipeline needs a spending initializer "
                                   "(e.g. 'laplace' with gamma_in > 0)")
        return ctx.noisy, float(ctx.eps_in)
