"""The core's built-in components (registered through the core's own entry points).

Each is the textbook form of its SORTaki stage:

* :class:`LaplaceInitializer` - SORTaki Algorithm 1 (basic initializer).
* :class:`IdentitySorter`, :class:`NoisyCountSorter` - SORTaki Section IV-B.
* :class:`SingletonPartitioner`, :class:`WholeDomainPartitioner` - trivial partitions.
* :class:`GroupMeanFinalizer` - AHP Algorithm 1 lines 6-9: Laplace on each
  group's sum, spread evenly over the group's bins.

``batch_capable = True`` marks a component whose code works unchanged when every
array the kernel returns carries a leading trials axis (and which makes no
data-dependent choice that would differ between trials): :mod:`dphist.audit`
then samples it many times in one vectorised run instead of a loop.
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidParameter
from ..partition import Partition, SingletonPartition
from .base import Context, Finalizer, Initializer, Partitioner, Sorter

_SORTAKI = "Doudalis & Mehrotra, SORTaki, Section IV"


class LaplaceInitializer(Initializer):
    """Laplace(1/eps_in) on every bin; ``None`` when gamma_in = 0 (SORTaki Algorithm 1)."""

    dims = "any"       # cell by cell or over all cells: correct on every grid
    name = "laplace"
    citation = _SORTAKI + ", Algorithm 1"
    batch_capable = True

    def initialize(self, ctx: Context):
        if ctx.budget <= 0:
            return None
        return ctx.data.laplace_identity(ctx.budget)


class IdentitySorter(Sorter):
    """Keeps the current order (a sorter slot that does nothing)."""

    dims = "any"       # cell by cell or over all cells: correct on every grid
    name = "identity"
    citation = _SORTAKI

    def sort(self, bins: Partition, ctx: Context) -> Partition:
        return bins


class NoisyCountSorter(Sorter):
    """Orders groups by their mean noisy count in H~ (descending by default, as AHP).

    Sorting H~ is post-processing of an already private output: it is free.
    Ties are broken by original position (stable sort), a public rule.
    """

    name = "noisy-count"
    citation = _SORTAKI + "-B; Zhang et al., AHP, SDM 2014, Algorithm 1 line 4"
    param_constraints = {"descending": bool}

    def __init__(self, descending: bool = True):
        self.descending = descending

    def sort(self, bins: Partition, ctx: Context) -> Partition:
        if ctx.noisy is None:
            raise InvalidParameter("the noisy-count sorter needs H~: give the pipeline an initializer with gamma_in > 0")
        # singletons in domain order: each group's mean is its own value (a sum of one value over 1.0 is that
        # value), so H~ itself is the keys: no gather, reduceat or division (the same floats, the same order)
        keys = np.asarray(ctx.noisy, dtype=float) if bins.is_plain() else bins.means(ctx.noisy)
        return bins.reorder_groups(keys, descending=bool(self.descending))


class SingletonPartitioner(Partitioner):
    """Keeps one group per bin."""

    dims = "any"       # cell by cell or over all cells: correct on every grid
    name = "singleton"
    citation = _SORTAKI + " (Identity(|H|))"
    batch_capable = True

    def partition(self, bins: Partition, ctx: Context) -> Partition:
        return bins


class WholeDomainPartitioner(Partitioner):
    """Merges every group into one (the `uniform` baseline of DPBench)."""

    dims = "any"       # cell by cell or over all cells: correct on every grid
    name = "whole"
    citation = "Hay et al., DPBench, SIGMOD 2016 (Uniform)"
    batch_capable = True

    def partition(self, bins: Partition, ctx: Context) -> Partition:
        return Partition.whole(bins.n_bins, bins.order)


class GroupMeanFinalizer(Finalizer):
    """Laplace(1/eps_f) on each group's sum, spread evenly over its bins.

    The groups are disjoint, so the vector of group sums has L1 sensitivity 1
    (parallel composition).  With singleton groups this is the Laplace
    mechanism; with one group it is the uniform baseline.
    """

    dims = "any"       # cell by cell or over all cells: correct on every grid
    name = "group-mean"
    citation = "Zhang et al., AHP, SDM 2014, Algorithm 1 lines 6-9"
    batch_capable = True

    def finalize(self, bins: Partition, ctx: Context) -> np.ndarray:
        if type(bins) is SingletonPartition and hasattr(ctx.data, "laplace_partition_spread"):
            # singletons in a sorted order: the kernel spreads as it measures (the same floats, no answers in
            # the sorted order beside the estimate: memory)
            return ctx.data.laplace_partition_spread(bins, ctx.budget)
        noisy = ctx.data.laplace_partition(bins, ctx.budget)
        if bins.is_plain() and isinstance(noisy, np.ndarray) and noisy.dtype == np.float64:
            return noisy   # singletons in domain order: the measurement is the estimate (a fresh array, no copy)
        return bins.spread(noisy)

    def stated_error(self, bins: Partition, ctx: Context):
        """One noisy total per group (identity over the groups, sensitivity 1, the whole share)."""
        from ..stated_error import group_mean_strategy
        return group_mean_strategy(bins.n_groups, ctx.eps_f)
