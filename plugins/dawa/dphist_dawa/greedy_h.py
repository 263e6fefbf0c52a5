"""``dawa.greedy-h``: DAWA's workload-aware second stage (Li et al. 2014, Section 4).

Given the groups, build a ``branching``-ary hierarchy over them, choose the
node weights greedily to minimise the workload's expected error
(:func:`~dphist_dawa.hierarchy.greedy_weights`), ask every weighted node query
once with Laplace noise through the kernel (``ctx.data.laplace_linear``; the
kernel computes the sensitivity, 1 by construction), solve the least squares
on the tree, and spread each group's total evenly over its bins.

Choices where the paper is silent (taken from DPBench/ektelo, or stated):

* binary hierarchy, near-equal splits, weight grid of granularity 100 (ektelo defaults);
* ektelo also damps the cross-child term by ``branching**(-depth/2)`` and
  collapses nodes whose workload columns are identical; both are heuristics of
  that code and are **not** used: each node minimises the exact expected error;
* the least-squares output is not clamped at 0 (post-processing left to the user).
"""
from __future__ import annotations

import functools

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition
from dphist import workloads as wl

from dphist.kernel import IntervalQueries
from dphist.params import Interval, Satisfies

from .hierarchy import greedy_weights, tree_least_squares


def resolve_workload(workload, n: int) -> wl.RangeWorkload:
    """The workload over ``n`` bins: a core workload name, a :class:`dphist.workloads.RangeWorkload`,
    ranges ``(starts, ends)``, a list of ``(lo, hi)`` pairs or a 0/1 query matrix of range rows
    (:func:`dphist.workloads.resolve`, which names what it refuses)."""
    return wl.resolve(workload, n, "dawa.greedy-h")


#: key of the chosen weighted tree in ``ctx.notes`` / ``Release.notes`` (public)
TREE_NOTE = "dawa.greedy-h.tree"

#: what the ``workload`` parameter accepts (shared with the presets that pass it on)
WORKLOAD_FORMS = "a workload name, a RangeWorkload, (starts, ends), a list of (lo, hi) pairs or a 0/1 query matrix"


def _group_matrix(first, lengths, w, n_groups):
    """The weighted node queries over the groups (sparse): node ``i`` reads groups
    ``first[i] .. first[i] + lengths[i]`` with weight ``w[i]``."""
    import scipy.sparse as sp
    rows = np.repeat(np.arange(first.size), lengths)
    cols = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths) + np.repeat(first, lengths)
    return sp.csr_matrix((np.repeat(w, lengths), (rows, cols)), shape=(first.size, n_groups))


class GreedyHFinalizer(Finalizer):
    """Weighted hierarchy over the groups, weights chosen for ``workload`` (GreedyH).

    Parameters
    ----------
    workload : a core workload name (``"prefix"`` by default, as DPBench evaluates 1-D;
        ``"all-ranges"``, ``"identity"``, ``"small-ranges"``, ...), a
        :class:`dphist.workloads.RangeWorkload`, ranges ``(starts, ends)`` (half-open), a list of
        ``(lo, hi)`` pairs, or a query matrix (numpy or scipy.sparse, one 0/1 range row per query,
        one column per bin), over the original domain.
    branching : fan-out of the hierarchy (2 in DAWA).
    granularity : number of candidate weights per node in the greedy search (100, ektelo).

    The groups must be contiguous runs of bins in the original order (the range
    workload is over the original domain): a sorted order raises InvalidParameter.
    """

    name = "dawa.greedy-h"
    requires_domain_order = True  # a workload over consecutive bins: refused after a sorter
    spends = True
    citation = "Li, Hay, Miklau, Wang, DAWA, PVLDB 7(12) 2014, Section 4 (GreedyH)"
    param_constraints = {
        # a name wl.make knows (built for the histogram's size at run time), or a workload object
        "workload": Satisfies(wl.is_spec, WORKLOAD_FORMS),
        "branching": Interval(int, 2, None),
        "granularity": Interval(int, 1, None),
    }

    def __init__(self, workload="prefix", branching: int = 2, granularity: int = 100):
        wl.check_spec(workload, "dawa.greedy-h")   # empty, zero-sensitivity or non-range queries: refused here
        self.workload = workload
        self.branching = branching
        self.granularity = granularity

    def check_input(self, n: int) -> None:
        """The workload against the domain (ranges beyond it, a matrix of another width), before any spending."""
        resolve_workload(self.workload, n)

    def strategy(self, bins: Partition, n: int):
        """The chosen weighted tree (public: depends on the workload and the groups only)."""
        if not bins.is_identity_order():
            raise InvalidParameter("dawa.greedy-h answers range queries over groups of consecutive bins; "
                                   "these bins are in a sorted order (use a finalizer for sorted bins)")
        workload = resolve_workload(self.workload, n)
        return greedy_weights(workload, bins.bounds, int(self.branching), int(self.granularity))

    def stated_error(self, bins: Partition, ctx):
        """The weighted node queries over the groups (public: the workload and the groups), with the
        kernel's own sensitivity, support and route (``check_queries``), solved by the tree's exact
        least squares (every answer has the same noise, so unit weights)."""
        from dphist.kernel.queries import check_queries
        from dphist.stated_error import LinearStrategy, Measurement
        tree = ctx.notes.get(TREE_NOTE) or self.strategy(bins, ctx.n)
        s, e, w = tree.nodes(bins.bounds)
        checked = check_queries(IntervalQueries(s, e, w), ctx.n)
        first, last = np.searchsorted(bins.bounds, s), np.searchsorted(bins.bounds, e)
        lengths = last - first
        matrix = functools.partial(_group_matrix, first, lengths, w, bins.n_groups)
        return LinearStrategy([Measurement(matrix, checked.sensitivity, ctx.eps_f,
                                           integral=checked.integral and checked.sensitivity == round(checked.sensitivity),
                                           support=checked.support, weight=1.0)], bins.n_groups,
                              reconstruction="least squares on the weighted tree")

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        tree = self.strategy(bins, ctx.n)
        ctx.notes[TREE_NOTE] = tree   # public (the workload and the groups): reused by stated_error
        # the kernel computes the weighted coverage itself; the node lists live only during the call (memory)
        noisy = ctx.data.laplace_linear(IntervalQueries(*tree.nodes(bins.bounds)), ctx.budget)
        # post-processing from here on: least squares and uniform expansion; each level's answers are a view
        # of the kernel's (the asked nodes only, in order: no level-wide copies, memory)
        per_level, at = [], 0
        for weights in tree.weights:
            asked = int(np.count_nonzero(weights > 0))
            per_level.append(noisy[at:at + asked])
            at += asked
        del noisy
        totals = tree_least_squares(tree, per_level, consume=True, compact=True)
        return bins.spread(totals)
