"""SReB_GCA's grouping as dphist partitioners: ``sreb_gca.ggs`` (the greedy GGS) and
``sreb_gca.optimal`` (the least total error under the same cost, through the core's segmentation DP).

Both read only H~ (``ctx.noisy``), one mean noisy value per current group in group order (after
the ``noisy-count`` sorter with ``descending=False``: the ascending noisy histogram), and eps_2 =
``ctx.eps_f`` (public).  They are post-processing of H~ and spend nothing.  They never read the
counts or the true total: delta is the public constant ``delta`` or, with ``delta_fraction``,
max(delta_fraction x (sum of H~), delta), a fraction of the *noisy* total floored at the public
constant.
"""
from __future__ import annotations

import numpy as np

from dphist import InvalidParameter, Partitioner, segmentation
from dphist.params import Interval, Options

from .ggs import TIES, ggs_on
from .relative_error import FORMS, GroupRelativeError

CITATION = ("Chen, Zhou, Qiu, Xu, Zeng, Fang, Chen, Huang, Xu, Chen. A Histogram Publishing Method under "
            "Differential Privacy That Involves Balancing Small-Bin Availability First. Algorithms 17(7):293, "
            "2024 (reconstructed from the outline)")


_POSITIVE_INT = Interval(int, 1, None)


class _RelativeErrorGrouping(Partitioner):
    spends = False
    param_constraints = {
        "delta": Interval(float, 0, None, closed="neither"),        # the weights' floor 1/max(x, delta)
        "delta_fraction": [None, Interval(float, 0, 1, closed="right")],  # delta as a fraction of the noisy total
        "form": Options(*FORMS),
    }

    def __init__(self, delta: float = 1.0, delta_fraction: float | None = None, form: str = "bound"):
        self.delta = delta
        self.delta_fraction = delta_fraction
        self.form = form

    def public_delta(self, noisy) -> float:
        """delta used inside the algorithm: the constant, or a fraction of the NOISY total (free)."""
        if self.delta_fraction is None:
            return float(self.delta)
        return max(float(self.delta_fraction) * float(np.sum(noisy)), float(self.delta))

    def _cost(self, bins, ctx) -> GroupRelativeError:
        if ctx.noisy is None:
            raise InvalidParameter(f"{self.name} groups the noisy histogram H~: give the pipeline an initializer "
                                   "with gamma_in > 0 (e.g. laplace)")
        if ctx.eps_f <= 0:
            raise InvalidParameter(f"{self.name} weighs groups by the final Laplace error 1/(m eps_2): the "
                                   "finalizer's share gamma_f must be > 0")
        # Post-processing of H~ (free): one noisy value per current group, in group order.
        values = bins.means(ctx.noisy)
        delta = self.public_delta(ctx.noisy)
        ctx.notes[f"{self.name}.delta"] = delta          # public: a constant or from H~
        return GroupRelativeError(values, float(ctx.eps_f), delta, self.form)


class GGSPartitioner(_RelativeErrorGrouping):
    """GGS (reconstructed Algorithm 2): greedy grouping of the sorted noisy histogram with the lower
    bound LB and its early stop (see :mod:`dphist_sreb_gca.ggs`).

    ``delta`` (default 1, public) / ``delta_fraction`` (None; else delta = max(fraction x noisy total,
    delta)); ``form``: "bound" (default, O(log m) per group) or "exact" (O(m) per group);
    ``ties``: "join" (<=, default) or "split" (<); ``decide_early``: branch and bound (default) or
    the LB scan.  On values that are not monotone (no sorter), LB has no early stop (O(n^2)) and
    more than ``unsorted_limit`` groups are refused; the exact form is refused beyond
    ``exact_limit`` groups (its group errors are O(m) loops).
    """

    name = "sreb_gca.ggs"
    citation = CITATION + ", Section 5.2 (GGS) and Algorithm 2"
    param_constraints = {"ties": Options(*TIES), "decide_early": bool, "unsorted_limit": _POSITIVE_INT,
                         "exact_limit": _POSITIVE_INT}

    def __init__(self, delta: float = 1.0, delta_fraction: float | None = None, form: str = "bound",
                 ties: str = "join", decide_early: bool = True, unsorted_limit: int = 8192,
                 exact_limit: int = 65536):
        super().__init__(delta, delta_fraction, form)
        self.ties = ties
        self.decide_early = bool(decide_early)
        self.unsorted_limit = unsorted_limit
        self.exact_limit = exact_limit

    def partition(self, bins, ctx):
        k = bins.n_groups
        if self.form == "exact" and k > self.exact_limit:
            raise InvalidParameter(f"{self.name}: the exact error form costs O(m) per group and is limited to "
                                   f"exact_limit={self.exact_limit} groups; got {k}. Use form='bound'.")
        cost = self._cost(bins, ctx)
        if not cost.ascending and k > self.unsorted_limit:
            raise InvalidParameter(
                f"{self.name} on unsorted values has no early stop (O(n^2)) and is limited to "
                f"unsorted_limit={self.unsorted_limit} groups; got {k}. Sort first (sorter 'noisy-count').")
        return bins.merge(ggs_on(cost, ties=self.ties, decide_early=self.decide_early))


class OptimalPartitioner(_RelativeErrorGrouping):
    """The grouping of least total error under GGS's cost (bound (3) or exact (2)), by the core's
    all-intervals segmentation DP (:func:`dphist.segmentation.optimal`): O(k^2) group errors, O(1)
    amortised each on sorted values with the bound form.  Not in the outline: it measures how far
    GGS is from the optimum of its own objective.  Limited to ``max_bins`` groups (default 16,384),
    and to 1,024 with the exact form or on unsorted values (O(k^3)).
    """

    name = "sreb_gca.optimal"
    citation = CITATION + ", the objective of Section 5.1 minimised exactly (not in the paper)"
    SLOW_LIMIT = 1024
    param_constraints = {"max_bins": _POSITIVE_INT}

    def __init__(self, delta: float = 1.0, delta_fraction: float | None = None, form: str = "bound",
                 max_bins: int = 16384):
        super().__init__(delta, delta_fraction, form)
        self.max_bins = max_bins

    def partition(self, bins, ctx):
        k = bins.n_groups
        if k > self.max_bins:
            raise InvalidParameter(f"{self.name} runs an O(k^2) DP and is limited to max_bins={self.max_bins} "
                                   f"groups; got {k}. Use sreb_gca.ggs or raise max_bins knowingly.")
        cost = self._cost(bins, ctx)
        if (cost.exact or not cost.ascending) and k > self.SLOW_LIMIT:
            raise InvalidParameter(f"{self.name} with the exact form or on unsorted values is O(k^3) and is "
                                   f"limited to {self.SLOW_LIMIT} groups; got {k}.")
        return bins.merge(segmentation.optimal(cost).bounds)
