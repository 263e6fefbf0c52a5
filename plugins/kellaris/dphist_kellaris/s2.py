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

MODES = ("optimal", "tree")
_CITATION = "Kellaris, Papadopoulos, Papadias, TKDE, Section 5.1 (S_2, Eq. (2)) and Section 6 (S_2 + H)"


def s2_penalty(eps_1: float, eps_2: float, correction: bool = True):
    """The size term of a group's cost: ``2/eps_2^2 - 2 (|g| - 1)/eps_1^2`` (the second only with
    ``correction``).  A function of public sizes and budgets only."""
    measure = 2.0 / float(eps_2) ** 2
    if not correction:
        return lambda sizes: np.full(np.shape(sizes), measure)
    bias = 2.0 / float(eps_1) ** 2
    return lambda sizes: measure - bias * (np.asarray(sizes, dtype=float) - 1.0)


def s2_cost(noisy, eps_1: float, eps_2: float, correction: bool = True) -> SSEPenalty:
    """The engine cost of Eq. (2) on the noisy values (in the bins' current order)."""
    return SSEPenalty(np.asarray(noisy, dtype=float), s2_penalty(eps_1, eps_2, correction))


def s2_grouping(noisy, eps_1: float, eps_2: float, *, mode: str = "optimal", branching: int = 16,
                correction: bool = True, bounds=None) -> np.ndarray:
    """Cut points (unit indices 0..k) of the least-cost grouping of ``noisy`` under Eq. (2)."""
    cost = s2_cost(noisy, eps_1, eps_2, correction)
    if mode == "optimal":
        return optimal(cost, bounds).bounds
    if mode == "tree":
        return tree(cost, bounds, branching=int(branching)).bounds
    raise InvalidParameter(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


class S2Partitioner(Partitioner):
    """``kellaris.s2``: Laplace(1/eps_1) counts, then the least-cost grouping under Eq. (2).

    Parameters
    ----------
    mode : ``"optimal"`` (S_2: every run of consecutive units, O(N^2)) or ``"tree"`` (full
        subtrees of a ``branching``-ary tree, for S_2 + H, O(N)).
    branching : the tree's fan-out (16, Kellaris et al. footnote 1); used by ``"tree"`` only.
    correction : subtract the expected noise bias 2(|g| - 1)/eps_1^2 from each group's cost.
    measure_epsilon : eps_2 of the cost's publishing term; None = the finalizer's budget.

    Spends its whole share eps_1 in one ``laplace_identity`` call.
    """

    name = "kellaris.s2"
    spends = True
    citation = _CITATION
    param_constraints = {"mode": Options(*MODES), "branching": Interval(int, 2, None), "correction": bool,
                         "measure_epsilon": [None, Interval(float, 0, None, closed="neither")]}

    def __init__(self, mode: str = "optimal", branching: int = 16, correction: bool = True,
                 measure_epsilon: float | None = None):
        self.mode = mode
        self.branching = branching
        self.correction = correction
        self.measure_epsilon = measure_epsilon

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
        values = np.asarray(noisy, dtype=float)[bins.order]
        cuts = s2_grouping(values, eps_1, eps_2, mode=self.mode, branching=int(self.branching),
                           correction=bool(self.correction), bounds=bins.bounds)
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
