"""Prototypes a new user writes against the public API: eight broken, two honest.

Each broken prototype goes wrong the way real first drafts do (those that run a
:class:`~dphist.VettedMechanism` declare it in ``vetted_mechanisms``, as a shipped
component must); the suite
(``tests/test_audit_prototypes.py``) checks that every one is rejected by the
conformance kit (:func:`dphist.testing.check_component`) or by the DEFAULT audit
of the component (``dphist.audit.audit(component)``, no pair written for it),
and that the two honest ones pass both.  None is registered.

* :class:`SSESplitPartitioner`: exponential mechanism on the SSE of a split of the true counts, declared sensitivity 1 (the SSE moves by up to 2 max|x - mean| + 1). Caught by: spikes at both ends (``ends*``) and the search; confirmation.
* :class:`NoisyMinPartitioner`: report-noisy-min of split costs through a VettedMechanism, 100x too little noise, integer outputs (the cut). Caught by: the partition events.
* :class:`GroupScaledFinalizer`: Laplace(1 / (eps ``|g|``)) on each group's SUM (the scale of a MEAN): honest on single bins only. Caught by: the finalizer's multi-bin pipelines (groups of 2, 4, all).
* :class:`PeekingSorter`: orders groups by true counts it finds in its caller's frame. Caught by: the sorter followed by groups of 2 and 4 (partition events).
* :class:`UnderNoisedInitializer`: noise 1/1.4 of what it charges for (passes the kit's replay, whose tolerance is 1.5). Caught by: the initializer with the whole budget; a confirmation batch.
* :class:`ReleaseOnlyLeakFinalizer`: honest in research mode; in release mode a tenth of the noise. Caught by: release-mode cases.
* :class:`LargeDomainLeakPartitioner`: on more than 16 bins, cuts where the true counts change (no noise). Caught by: pairs on 32-256 bins.
* :class:`TenthNoiseFinalizer`: integer outputs with a tenth of the noise. Caught by: the bin and total events.
* :class:`BalancedSplitPartitioner`: honest: exponential mechanism on ``-|left - right|`` (sensitivity 1, right). Passes.
* :class:`LeastSquaresFinalizer`: honest: group sums and the total at eps/2 each, combined by least squares. Passes.
"""
from __future__ import annotations

import sys

import numpy as np

from ..components.base import Finalizer, Initializer, Partitioner, Sorter
from ..kernel import VettedMechanism
from ..partition import Partition

_BROKEN = "dphist.audit.prototypes: a broken prototype (not differentially private; for audit tests only)"
_HONEST = "dphist.audit.prototypes: an honest prototype"


def _split_sse(x: np.ndarray) -> np.ndarray:
    """SSE(left) + SSE(right) of every split point k = 1 .. n - 1 of ``x`` (prefix sums)."""
    x = x.astype(float)
    n = x.size
    s1, s2 = np.cumsum(x), np.cumsum(x * x)
    k = np.arange(1, n)
    left = s2[k - 1] - s1[k - 1] ** 2 / k
    right = (s2[-1] - s2[k - 1]) - (s1[-1] - s1[k - 1]) ** 2 / (n - k)
    return left + right


# ------------------------------------------------------------------ a. exponential mechanism, wrong sensitivity
class SSESplitPartitioner(Partitioner):
    """Two groups, split where the exponential mechanism picks (score: minus the split's SSE).

    The bug: the SSE of a split changes by up to ``2 max|x_i - mean| + 1`` when one record is
    added, not by the declared 1.
    """

    name = "prototype.sse-split"
    citation = _BROKEN
    spends = True
    requires_domain_order = True

    def partition(self, bins: Partition, ctx) -> Partition:
        n = bins.n_groups
        if n < 2:
            ctx.data.exponential(lambda counts: np.zeros(1), 1, 1.0, ctx.budget)   # charged = used
            return bins
        order = bins.order
        k = ctx.data.exponential(lambda counts: -_split_sse(counts[order]), n - 1, 1.0, ctx.budget)
        return bins.merge([0, k + 1])


# ------------------------------------------------------------------ b. report-noisy-min, 100x too little noise
class _NoisyMinSplit(VettedMechanism):
    name = "prototype.noisy-min-split"
    proof = _BROKEN + ": report-noisy-min with Laplace(0.01 / eps) instead of Laplace(2 Delta / eps)"

    def answers(self, n, **_):
        return 1

    def run(self, counts, epsilon, noise):
        if counts.size < 2:
            return np.array([0, counts.size], dtype=np.int64)
        costs = _split_sse(counts)
        noisy = noise.laplace_mechanism(costs, 0.01, epsilon)
        return np.array([0, int(np.argmin(noisy)) + 1, counts.size], dtype=np.int64)


class NoisyMinPartitioner(Partitioner):
    """Two groups at the split of least noisy SSE (report-noisy-min), far too little noise."""

    name = "prototype.noisy-min"
    citation = _BROKEN
    vetted_mechanisms = ("prototype.noisy-min-split",)
    spends = True
    requires_domain_order = True

    def partition(self, bins: Partition, ctx) -> Partition:
        cuts = ctx.data.custom(_NoisyMinSplit(), ctx.budget)
        return Partition.from_sizes(np.diff(cuts)) if bins.n_groups > 1 else bins


# ------------------------------------------------------------------ c. leak only on multi-bin groups
class _GroupScaled(VettedMechanism):
    name = "prototype.group-scaled"
    proof = _BROKEN + ": Laplace(1 / (eps |g|)) on group sums (a mean's scale on a sum)"

    def check(self, n, **arguments):
        return {"order": np.asarray(arguments["order"]), "bounds": np.asarray(arguments["bounds"])}

    def answers(self, n, *, order, bounds):
        return int(bounds.size - 1)

    def run(self, counts, epsilon, noise, *, order, bounds):
        sums = np.add.reduceat(counts[order], bounds[:-1]).astype(float)
        sizes = np.diff(bounds).astype(float)
        unit = noise.laplace_mechanism(np.zeros(sums.size), 1.0, epsilon)
        return sums + unit / sizes


class GroupScaledFinalizer(Finalizer):
    """Group sums with the noise scale of a group MEAN; spread evenly."""

    name = "prototype.group-scaled"
    citation = _BROKEN
    vetted_mechanisms = ("prototype.group-scaled",)

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        return bins.spread(ctx.data.custom(_GroupScaled(), ctx.budget, order=bins.order, bounds=bins.bounds))


# ------------------------------------------------------------------ d. a sorter that sees the counts
class PeekingSorter(Sorter):
    """Orders groups by the true counts it finds in a caller's frame (descending)."""

    name = "prototype.peeking"
    citation = _BROKEN

    def sort(self, bins: Partition, ctx) -> Partition:
        frame = sys._getframe(1)
        for _ in range(8):
            if frame is None:
                break
            counts = frame.f_locals.get("counts")
            if isinstance(counts, np.ndarray) and counts.shape == (bins.n_bins,):
                return bins.reorder_groups(bins.means(counts.astype(float)), descending=True)
            frame = frame.f_back
        return bins.reorder_groups(bins.means(ctx.noisy), descending=True)


# ------------------------------------------------------------------ e. an initializer 1.4x under-noised
class _UnderNoised(VettedMechanism):
    name = "prototype.under-noised"
    proof = _BROKEN + ": Laplace(1 / (1.4 eps)) per bin, charged as eps"

    def run(self, counts, epsilon, noise):
        return noise.laplace_mechanism(counts.astype(float), 1.0 / 1.4, epsilon)


class UnderNoisedInitializer(Initializer):
    """H~ with 1/1.4 of the Laplace scale its charge pays for."""

    name = "prototype.under-noised"
    citation = _BROKEN
    vetted_mechanisms = ("prototype.under-noised",)

    def initialize(self, ctx):
        if ctx.budget <= 0:
            return None
        return np.asarray(ctx.data.custom(_UnderNoised(), ctx.budget), dtype=float)


# ------------------------------------------------------------------ f. honest in research, not in release
class _TenthNoise(VettedMechanism):
    name = "prototype.tenth-noise"
    proof = _BROKEN + ": group sums with Laplace(0.1 / eps)"

    def check(self, n, **arguments):
        return {"order": np.asarray(arguments["order"]), "bounds": np.asarray(arguments["bounds"])}

    def answers(self, n, *, order, bounds):
        return int(bounds.size - 1)

    def run(self, counts, epsilon, noise, *, order, bounds):
        sums = np.add.reduceat(counts[order], bounds[:-1])
        return np.rint(noise.laplace_mechanism(sums, 0.1, epsilon)).astype(np.int64)


class ReleaseOnlyLeakFinalizer(Finalizer):
    """Group means; in release mode the group sums get a tenth of the noise."""

    name = "prototype.release-only-leak"
    citation = _BROKEN
    vetted_mechanisms = ("prototype.tenth-noise",)

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        if ctx.data.mode == "release":
            sums = ctx.data.custom(_TenthNoise(), ctx.budget, order=bins.order, bounds=bins.bounds)
            return bins.spread(sums)
        return bins.spread(ctx.data.laplace_partition(bins, ctx.budget))


# ------------------------------------------------------------------ g. leak only above 16 bins
class _TrueCuts(VettedMechanism):
    name = "prototype.true-cuts"
    proof = _BROKEN + ": cuts where neighbouring true counts differ, no noise"

    def answers(self, n, **_):
        return 1

    def run(self, counts, epsilon, noise):
        return np.concatenate(([0], np.flatnonzero(np.diff(counts) != 0) + 1, [counts.size]))


class LargeDomainLeakPartitioner(Partitioner):
    """Singletons on small domains; above 16 bins, runs of equal TRUE counts (no noise)."""

    name = "prototype.large-domain-leak"
    citation = _BROKEN
    vetted_mechanisms = ("prototype.true-cuts",)
    spends = True
    requires_domain_order = True

    def partition(self, bins: Partition, ctx) -> Partition:
        cuts = ctx.data.custom(_TrueCuts(), ctx.budget)
        if bins.n_groups <= 16:
            return bins
        return Partition.from_sizes(np.diff(cuts))


# ------------------------------------------------------------------ h. integer outputs, a tenth of the noise
class TenthNoiseFinalizer(Finalizer):
    """Integer group sums with a tenth of the Laplace scale they need, spread evenly."""

    name = "prototype.tenth-noise"
    citation = _BROKEN
    vetted_mechanisms = ("prototype.tenth-noise",)

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        return bins.spread(ctx.data.custom(_TenthNoise(), ctx.budget, order=bins.order, bounds=bins.bounds))


# ------------------------------------------------------------------ honest: a new cost through the exponential primitive
class BalancedSplitPartitioner(Partitioner):
    """Two groups split where the exponential mechanism picks, score ``-|sum(left) - sum(right)|``.

    One record changes one side's sum by 1, so every score moves by at most 1: sensitivity 1,
    as declared (McSherry & Talwar 2007).
    """

    name = "prototype.balanced-split"
    citation = _HONEST + " (exponential mechanism, McSherry & Talwar 2007)"
    spends = True
    requires_domain_order = True

    def partition(self, bins: Partition, ctx) -> Partition:
        n = bins.n_groups
        if n < 2:
            ctx.data.exponential(lambda counts: np.zeros(1), 1, 1.0, ctx.budget)   # charged = used
            return bins
        order = bins.order

        def score(counts):
            left = np.cumsum(counts[order].astype(float))[:-1]
            return -np.abs(2 * left - left[-1] - counts[order][-1])

        k = ctx.data.exponential(score, n - 1, 1.0, ctx.budget)
        return bins.merge([0, k + 1])


# ------------------------------------------------------------------ honest: least squares over two measurements
class LeastSquaresFinalizer(Finalizer):
    """Group sums and the total, each Laplace at eps/2, combined by least squares (equal variances:
    ``s = y + (T - sum y) / (k + 1)``), spread evenly over each group."""

    name = "prototype.least-squares"
    citation = _HONEST + " (least-squares inference, Hay et al., PVLDB 2010)"

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        half = ctx.budget / 2
        y = np.asarray(ctx.data.laplace_partition(bins, half), dtype=float)
        total = float(np.asarray(ctx.data.laplace_partition(Partition.whole(bins.n_bins), half))[0])
        s = y + (total - y.sum()) / (y.size + 1)
        return bins.spread(s)


BROKEN = (SSESplitPartitioner, NoisyMinPartitioner, GroupScaledFinalizer, PeekingSorter, UnderNoisedInitializer,
          ReleaseOnlyLeakFinalizer, LargeDomainLeakPartitioner, TenthNoiseFinalizer)
HONEST = (BalancedSplitPartitioner, LeastSquaresFinalizer)
