"""AHP's three grouping strategies as dphist partitioners (Zhang et al., SDM 2014, Section 4.2).

All three read only H~ (``ctx.noisy``, the initializer's thresholded noisy counts)
arranged in the current order of ``bins`` (one mean noisy value per current group,
in group order; after the ``noisy-count`` sorter that is the sorted noisy histogram),
so they are post-processing and spend nothing.  eps_2 in the error formula is the
finalizer's share ``ctx.eps_f`` (AHP Algorithm 1 line 9).  Each returns
``bins.merge(cuts)``.
"""
from __future__ import annotations

import numpy as np

from dphist import InvalidParameter, Partitioner
from dphist.params import Interval, Options
from dphist.partition import PlainPartition

from .group_error import is_monotone
from .greedy import greedy_cuts, greedy_cuts_taken
from .segmentation import RULES, empirical_cuts, optimal_cuts
from .threshold import CITATION


class _AHPGrouping(Partitioner):
    spends = False

    def _eps_2(self, ctx) -> float:
        if ctx.noisy is None:
            raise InvalidParameter(f"{self.name} groups the noisy histogram H~: give the pipeline an "
                                   "initializer with gamma_in > 0 (e.g. ahp.threshold)")
        if ctx.eps_f <= 0:
            raise InvalidParameter(f"{self.name} weighs groups by the final Laplace error 2/(|C| eps_2^2): "
                                   "the finalizer's share gamma_f must be > 0")
        return float(ctx.eps_f)

    def _noisy_values(self, bins, ctx) -> tuple[np.ndarray, float]:
        eps_2 = self._eps_2(ctx)
        # Post-processing of H~ (free): one noisy value per current group, in group order.
        return bins.means(ctx.noisy), eps_2

    @staticmethod
    def _check_limit(name: str, n: int, max_bins) -> None:
        limit = int(max_bins)
        if n > limit:
            raise InvalidParameter(
                f"{name} runs a dynamic programme of O(n^2) cost or memory and is limited to max_bins={limit} groups; got {n}. "
                f"Use ahp.greedy (Algorithm 3, fast at any n) or raise max_bins knowingly.")


class GreedyPartitioner(_AHPGrouping):
    """Algorithm 3: add the next bin to the current group iff err(C u x) < err(C) + err*(x).

    The lower bound err* uses the paper's early-stopping rule (valid on sorted values, the
    AHP pipeline: about 1 s at n = 2^20).  On unsorted values every candidate group is
    scanned, O(n^2), so more than 32,768 unsorted groups are refused.  No parameters.
    """

    name = "ahp.greedy"
    citation = CITATION + ", Algorithm 3 (greedy grouping)"
    #: On unsorted values err* has no early stop (O(n) per bin, O(n^2) in all), so it is refused beyond this.
    UNSORTED_LIMIT = 32768

    def partition(self, bins, ctx):
        eps_2 = self._eps_2(ctx)
        if bins.n_groups == bins.n_bins:   # singletons: each group's mean is its value, read through the order
            order = None if type(bins) is PlainPartition else bins.order
            cuts = greedy_cuts_taken(ctx.noisy, order, eps_2, unsorted_max=self.UNSORTED_LIMIT)
            if cuts is not None:
                return bins.merge(cuts)
        values = bins.means(ctx.noisy)
        if values.size > self.UNSORTED_LIMIT and not is_monotone(values):
            raise InvalidParameter(
                f"ahp.greedy on unsorted values scans every candidate group (O(n^2)) and is limited to "
                f"{self.UNSORTED_LIMIT} groups; got {values.size}. Sort first (sorter 'noisy-count'), as AHP does.")
        return bins.merge(greedy_cuts(values, eps_2))


class OptimalPartitioner(_AHPGrouping):
    """The optimal grouping of Section 4.2 by an O(n^2) segmentation DP (same optimum as the
    paper's O(n^4) all-k search).  Limited to ``max_bins`` groups (default 32,768): beyond it
    it raises InvalidParameter and suggests ahp.greedy.

    Same algorithm as ``sortaki.dp(ef="ahp", variant="exact")`` on single bins: both are one call
    to :func:`dphist.segmentation.optimal` with SSE + 2/(|C| eps_2^2) on the sorted H~ (a sortaki
    test checks identical releases).  Both stay registered: this is AHP's own component (the
    ``AHP-optimal`` preset, AHP's paper and notebook), usable without sortaki; sortaki's DPP is
    the generic one (any error formula, groups of several bins).  They differ only in the
    floating-point order in which each sums a group's terms, kept so that both plugins' releases
    stayed bit-identical through the port.
    """

    name = "ahp.optimal"
    citation = CITATION + ", Section 4.2 (optimal grouping)"
    param_constraints = {"max_bins": Interval(int, 1, None)}

    def __init__(self, max_bins: int = 32768):
        self.max_bins = max_bins

    def partition(self, bins, ctx):
        self._check_limit(self.name, bins.n_groups, self.max_bins)
        values, eps_2 = self._noisy_values(bins, ctx)
        cuts, _ = optimal_cuts(values, eps_2)
        return bins.merge(cuts)


class EmpiricalPartitioner(_AHPGrouping):
    """Algorithm 2: k-group optimal DP for k from rules of thumb.

    ``rule``: "all" (Algorithm 2: the best of the four), or one of "sqrt", "sturges",
    "doane", "rice".  One exactly-k DP for the largest k: O(k n log n) on sorted values
    (the AHP pipeline), O(k n^2) on unsorted ones.  Limited to ``max_bins`` groups
    (default 65,536; the DP keeps k*n back-pointers), and to 8,192 groups when the values
    are not sorted.
    """

    name = "ahp.empirical"
    citation = CITATION + ", Algorithm 2 (empirical grouping)"

    UNSORTED_LIMIT = 8192
    param_constraints = {"rule": Options("all", *RULES), "max_bins": Interval(int, 1, None)}

    def __init__(self, rule: str = "all", max_bins: int = 65536):
        self.rule = rule
        self.max_bins = max_bins

    def partition(self, bins, ctx):
        self._check_limit(self.name, bins.n_groups, self.max_bins)
        values, eps_2 = self._noisy_values(bins, ctx)
        monotone = is_monotone(values)
        if not monotone and values.size > self.UNSORTED_LIMIT:
            raise InvalidParameter(
                f"ahp.empirical on unsorted values runs an O(k n^2) DP, limited to {self.UNSORTED_LIMIT} groups; "
                f"got {values.size}. Sort first (sorter 'noisy-count') or use ahp.greedy.")
        rules = RULES if self.rule == "all" else (self.rule,)
        cuts, _, ks = empirical_cuts(values, eps_2, rules, monotone=monotone)
        ctx.notes["ahp.empirical.k"] = ks          # public: computed from noisy values
        return bins.merge(cuts)
