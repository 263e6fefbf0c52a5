"""Broken twins: components that each cheat in one known way.

They exist to be rejected.  The core's suite (``tests/test_broken_twins.py``)
runs every twin through the conformance kit and checks that the kit, the
kernel or the pipeline refuses it; the privacy auditor's tests use the
under-noised ones as mechanisms it must catch.  None is registered: they are
never reachable by name from a preset, the CLI or the demo.

====================================  ==========================================  ================================
twin                                  the cheat                                   what rejects it
====================================  ==========================================  ================================
:class:`HalfScaleLaplaceFinalizer`    Laplace with half the scale its             kit: vetted-mechanism replay
                                      sensitivity needs
:class:`ShamVettedFinalizer`          a "vetted" mechanism adding Lap(1e-6)       kit: vetted-mechanism replay
:class:`IgnoresSensitivityFinalizer`  overlapping intervals (sensitivity 2)       kit: vetted-mechanism replay
                                      measured at scale 1/epsilon
:class:`RawCountsPartitioner`         reads the counts through private            kernel gate: PrivacyViolation
                                      attributes
:class:`QuietRawCountsPartitioner`    the same, swallowing the kernel's error     pipeline: the kernel's record
:class:`LedgerForgingFinalizer`       writes ledger rows beside the kernel        pipeline: books over budget
:class:`UnderspendingFinalizer`       uses half of its share                      kit: charged != used
:class:`GlobalRandomPartitioner`      draws from numpy's global generator         kit: reproducibility
:class:`GlobalRandomFinalizer`        rounds with numpy's global generator        kit: reproducibility
:class:`DirectionIgnoringSorter`      ignores its ``descending`` parameter        kit: sorter direction
:class:`FloatNoiseFinalizer`          raw float noise, bypassing the mechanism    kit: release-mode run
                                      API
:class:`UndeclaredParamPartitioner`   a constructor parameter missing from        kit: declared parameters
                                      ``param_constraints`` (never validated)
:class:`DuplicatingSorter`            hands on an order with one bin twice and    pipeline: stage partition check,
                                      another lost                                before the partitioner's charge
:class:`RoundedShamFinalizer`         integer output (rounded counts) with a      kit: distributional replay
                                      tenth of the noise; the float-only replay   (integer outputs)
                                      skipped integer outputs
:class:`LargeDomainLeakFinalizer`     correct noise up to 16 bins, a tenth of     kit: replay on 64 bins (passes a
                                      it above                                    kit limited to 16 bins)
:class:`NoisyArgmaxCutPartitioner`    cut points after the noisy largest count,   kit: distributional replay
                                      with a hundredth of the noise               (cut points; the flat histogram)
:class:`LyingScorePartitioner`        exponential mechanism on the SSE of a       kit: declared-sensitivity check
                                      split, declared sensitivity 1
:class:`UnderstatedCostPartitioner`   noisy-min segmentation of an SSE cost       kit: declared-sensitivity check
                                      with sensitivity 2 declared
:class:`UndeclaredVettedFinalizer`    runs a vetted mechanism it did not          kernel: refused (opt-in); under
                                      declare                                     the global switch, the kit
:class:`InfiniteEpsilonFinalizer`     measures its groups with epsilon = inf      kernel: epsilon refused before
                                      (no noise at all)                           the charge and the answer
:class:`TextVettedFinalizer`          declares its vetted mechanisms as one       pipeline: refused before the
                                      string (every substring a "name")           first handle
====================================  ==========================================  ================================
"""
from __future__ import annotations

import numpy as np

from ..components.base import Finalizer, Partitioner, Sorter
from ..kernel.ledger import LedgerEntry
from ..kernel.private import VettedMechanism
from ..partition import Partition

_TWIN = "dphist.testing.twins: a broken twin (rejected by the conformance kit)"


class _ScaledLaplace(VettedMechanism):
    """Group sums plus Laplace noise of scale ``scale_factor * sensitivity / epsilon``."""

    name = "twin.scaled-laplace"
    proof = "none: a broken twin for tests"
    sensitivity = 1.0

    def __init__(self, scale_factor: float):
        self.scale_factor = scale_factor

    def check(self, n, **arguments):
        return {"order": np.array(arguments["order"]), "bounds": np.array(arguments["bounds"])}

    def run(self, counts, epsilon, noise, *, order, bounds):
        sums = np.add.reduceat(counts[order], bounds[:-1]).astype(float)
        return noise.laplace_mechanism(sums, self.scale_factor * self.sensitivity, epsilon)


class _ShamLaplace(_ScaledLaplace):
    name = "twin.sham"

    def run(self, counts, epsilon, noise, *, order, bounds):
        sums = np.add.reduceat(counts[order], bounds[:-1]).astype(float)
        return sums + noise.laplace_mechanism(np.zeros(sums.size), 1e-6 * epsilon, epsilon)


class _OverlappingIntervals(_ScaledLaplace):
    """Every bin's count and the sum of it with its right neighbour: a bin is in two answers."""

    name = "twin.overlapping-intervals"
    sensitivity = 2.0

    def check(self, n, **arguments):
        return {}

    def answers(self, n, **arguments):
        return 2 * n - 1

    def run(self, counts, epsilon, noise):
        values = np.concatenate((counts, counts[:-1] + counts[1:])).astype(float)
        return noise.laplace_mechanism(values, 1.0, epsilon)  # the cheat: sensitivity 2 needs scale 2/eps


class HalfScaleLaplaceFinalizer(Finalizer):
    """Group sums with Laplace of half the scale their sensitivity 1 needs (twice the privacy loss)."""

    name = "twin.half-scale-laplace"
    citation = _TWIN
    vetted_mechanisms = ("twin.scaled-laplace",)

    def finalize(self, bins, ctx):
        sums = ctx.data.custom(_ScaledLaplace(0.5), ctx.budget, order=bins.order, bounds=bins.bounds)
        return bins.spread(sums)


class ShamVettedFinalizer(Finalizer):
    """Group sums plus Laplace(1e-6) through a mechanism that claims to be vetted."""

    name = "twin.sham-vetted"
    citation = _TWIN
    vetted_mechanisms = ("twin.sham",)

    def finalize(self, bins, ctx):
        return bins.spread(ctx.data.custom(_ShamLaplace(1.0), ctx.budget, order=bins.order, bounds=bins.bounds))


class IgnoresSensitivityFinalizer(Finalizer):
    """Overlapping interval sums (sensitivity 2) noised at scale 1/epsilon; keeps the single counts."""

    name = "twin.ignores-sensitivity"
    citation = _TWIN
    vetted_mechanisms = ("twin.overlapping-intervals",)

    def finalize(self, bins, ctx):
        values = ctx.data.custom(_OverlappingIntervals(1.0), ctx.budget)
        return values[:ctx.n]


class RawCountsPartitioner(Partitioner):
    """A non-spending partitioner that reads the true counts through the kernel's private reader."""

    name = "twin.raw-counts"
    citation = _TWIN

    def partition(self, bins, ctx):
        x = ctx.data._kernel._true_counts()
        return bins.merge([0, int(np.argmax(x)) + 1] if 0 < int(np.argmax(x)) + 1 < bins.n_groups else [0])


class QuietRawCountsPartitioner(Partitioner):
    """The same read, hiding the kernel's refusal and carrying on as if nothing happened."""

    name = "twin.quiet-raw-counts"
    citation = _TWIN

    def partition(self, bins, ctx):
        try:
            ctx.data._kernel._true_counts()
        except Exception:  # noqa: BLE001 - the cheat
            pass
        return bins


class LedgerForgingFinalizer(Finalizer):
    """Measures its share, then writes a second row into the ledger beside the kernel's books."""

    name = "twin.ledger-forging"
    citation = _TWIN

    def finalize(self, bins, ctx):
        out = bins.spread(ctx.data.laplace_partition(bins, ctx.budget))
        ctx.data._kernel.ledger.record(LedgerEntry(self.name, "finalizer", "laplace.partition",
                                                   ctx.budget, 1.0, bins.n_groups))
        return out


class UnderspendingFinalizer(Finalizer):
    """Uses half of its share: the ledger no longer matches the budget it was given."""

    name = "twin.underspending"
    citation = _TWIN

    def finalize(self, bins, ctx):
        return bins.spread(ctx.data.laplace_partition(bins, ctx.budget / 2))


class GlobalRandomPartitioner(Partitioner):
    """Breaks bins into two groups at a point drawn from numpy's global generator (not the run's)."""

    name = "twin.global-random"
    citation = _TWIN

    def partition(self, bins, ctx):
        if bins.n_groups < 2:
            return bins
        return bins.merge([0, int(np.random.randint(1, bins.n_groups))])


class GlobalRandomFinalizer(Finalizer):
    """Rounds its estimate stochastically with numpy's global generator (post-processing, unseeded)."""

    name = "twin.global-random-rounding"
    citation = _TWIN

    def finalize(self, bins, ctx):
        est = bins.spread(ctx.data.laplace_partition(bins, ctx.budget))
        return np.floor(est + np.random.random(est.size))


class DirectionIgnoringSorter(Sorter):
    """Declares ``descending`` but always sorts by noisy mean, descending."""

    name = "twin.direction-ignoring"
    citation = _TWIN
    param_constraints = {"descending": bool}

    def __init__(self, descending: bool = True):
        self.descending = descending

    def sort(self, bins, ctx):
        return bins.reorder_groups(bins.means(ctx.noisy), descending=True)


class FloatNoiseFinalizer(Finalizer):
    """Adds raw float Laplace noise itself inside a mechanism (attackable; refused in release mode)."""

    name = "twin.float-noise"
    citation = _TWIN
    vetted_mechanisms = ("twin.raw-float",)

    class _Raw(VettedMechanism):
        name = "twin.raw-float"
        proof = "Laplace mechanism, but with raw float noise (the flaw)"

        def run(self, counts, epsilon, noise):
            return counts + noise.laplace(1.0 / epsilon, counts.size)

    def finalize(self, bins, ctx):
        return ctx.data.custom(self._Raw(), ctx.budget)


class UndeclaredParamPartitioner(Partitioner):
    """Takes ``width`` but does not declare it: any value passes construction unchecked."""

    name = "twin.undeclared-parameter"
    citation = _TWIN
    spends = False

    def __init__(self, width: int = 4):
        self.width = width

    def partition(self, bins, ctx):
        return bins.merge(np.arange(0, bins.n_groups, int(self.width)))


class DuplicatingSorter(Sorter):
    """Sorts by noisy count, then writes the first bin over the second: one bin twice, one lost.
    The partition is built without validation, as a buggy sorter's would be."""

    name = "twin.duplicating-sorter"
    citation = _TWIN

    def sort(self, bins, ctx):
        out = bins.reorder_groups(bins.means(ctx.noisy))
        order = out.order.copy()
        if order.size > 1:
            order[1] = order[0]
        return Partition(order, out.bounds, validate=False)


class _RoundedLaplace(VettedMechanism):
    """Counts plus Laplace noise of ``scale_factor / epsilon``, rounded: an integer vector."""

    name = "twin.rounded-laplace"
    proof = "none: a broken twin for tests"

    def __init__(self, scale_factor: float):
        self.scale_factor = scale_factor

    def run(self, counts, epsilon, noise):
        noisy = noise.laplace_mechanism(counts.astype(float), self.scale_factor, epsilon)
        return np.rint(noisy).astype(np.int64)


class RoundedShamFinalizer(Finalizer):
    """Integer-valued noisy counts with a tenth of the noise sensitivity 1 needs.  The replay that
    compared float outputs only returned without a verdict on integer ones."""

    name = "twin.rounded-sham"
    citation = _TWIN
    vetted_mechanisms = ("twin.rounded-laplace",)

    def finalize(self, bins, ctx):
        return ctx.data.custom(_RoundedLaplace(0.1), ctx.budget).astype(float)


class _SizeDependentLaplace(_RoundedLaplace):
    name = "twin.size-dependent-laplace"

    def run(self, counts, epsilon, noise):
        scale = 1.0 if counts.size <= 16 else 0.1        # the cheat shows above 16 bins only
        return noise.laplace_mechanism(counts.astype(float), scale, epsilon)


class LargeDomainLeakFinalizer(Finalizer):
    """Laplace counts with the right noise on domains of up to 16 bins and a tenth of it above."""

    name = "twin.large-domain-leak"
    citation = _TWIN
    vetted_mechanisms = ("twin.size-dependent-laplace",)

    def finalize(self, bins, ctx):
        return ctx.data.custom(_SizeDependentLaplace(1.0), ctx.budget)


class _NoisyArgmaxCut(VettedMechanism):
    """Report-noisy-max of the counts with Laplace(``scale_factor / epsilon``); releases the cut points
    ``[0, i + 1, n]`` around the winner ``i`` (an integer vector whose length varies)."""

    name = "twin.noisy-argmax-cut"
    proof = "none: a broken twin for tests (report noisy max needs scale 1/epsilon for counts)"

    def __init__(self, scale_factor: float):
        self.scale_factor = scale_factor

    def answers(self, n, **arguments):
        return 1

    def run(self, counts, epsilon, noise):
        i = int(np.argmax(noise.laplace_mechanism(counts.astype(float), self.scale_factor, epsilon)))
        return np.unique(np.array([0, i + 1, counts.size], dtype=np.int64))


class NoisyArgmaxCutPartitioner(Partitioner):
    """Splits the domain after the (noisy) largest count, with a hundredth of the noise."""

    name = "twin.noisy-argmax-cut"
    citation = _TWIN
    spends = True
    requires_domain_order = True
    vetted_mechanisms = ("twin.noisy-argmax-cut",)

    def partition(self, bins, ctx):
        cuts = ctx.data.custom(_NoisyArgmaxCut(0.01), ctx.budget)
        return Partition(np.arange(ctx.n), cuts)


def _split_sse(counts):
    """For each cut c in 1..n-1: minus the SSE of the two-group split [0, c), [c, n) of the counts."""
    x = np.asarray(counts, dtype=float)
    c = np.arange(1, x.size)
    s, q = np.cumsum(x), np.cumsum(x * x)
    left = q[c - 1] - s[c - 1] ** 2 / c
    right = (q[-1] - q[c - 1]) - (s[-1] - s[c - 1]) ** 2 / (x.size - c)
    return -(left + right)


class LyingScorePartitioner(Partitioner):
    """Two groups, the cut chosen by the exponential mechanism on the SSE of the split, declared to
    have sensitivity 1 (one record moves an SSE by up to about twice the largest count)."""

    name = "twin.lying-score"
    citation = _TWIN
    spends = True

    def partition(self, bins, ctx):
        if bins.n_groups < 3:
            return bins
        n = ctx.n
        cut = ctx.data.exponential(_split_sse, n - 1, 1.0, ctx.budget) + 1
        return Partition(np.arange(n), [0, cut, n]) if bins.is_identity_order() else bins


class UnderstatedCostPartitioner(Partitioner):
    """The kernel's noisy-min segmentation over an SSE cost, declaring sensitivity 2 (DAWA's L1 bound;
    the SSE moves by up to about twice the largest count)."""

    name = "twin.understated-cost"
    citation = _TWIN
    spends = True

    def partition(self, bins, ctx):
        from .. import segmentation
        cuts = ctx.data.noisy_min_segmentation(lambda v: segmentation.SSEPenalty(v, lambda m: np.full(m.size, 10.0)),
                                               ctx.budget, units=bins, sensitivity=2.0)
        return bins.merge(cuts)


class UndeclaredVettedFinalizer(Finalizer):
    """Runs a (correct) vetted Laplace mechanism without declaring it in ``vetted_mechanisms``."""

    name = "twin.undeclared-vetted"
    citation = _TWIN

    def finalize(self, bins, ctx):
        sums = ctx.data.custom(_ScaledLaplace(1.0), ctx.budget, order=bins.order, bounds=bins.bounds)
        return bins.spread(sums)


class InfiniteEpsilonFinalizer(Finalizer):
    """Measures its groups with ``epsilon = inf`` (noise of scale 0: the true sums)."""

    name = "twin.infinite-epsilon"
    citation = _TWIN

    def finalize(self, bins, ctx):
        return bins.spread(ctx.data.laplace_partition(bins, float("inf")))


class TextVettedFinalizer(Finalizer):
    """Declares ``vetted_mechanisms`` as one string (``"twin.scaled-laplace"``), not a tuple of names."""

    name = "twin.text-vetted"
    citation = _TWIN
    vetted_mechanisms = "twin.scaled-laplace"

    def finalize(self, bins, ctx):
        return bins.spread(ctx.data.laplace_partition(bins, ctx.budget))


ALL_TWINS = (HalfScaleLaplaceFinalizer, ShamVettedFinalizer, IgnoresSensitivityFinalizer, RawCountsPartitioner,
             QuietRawCountsPartitioner, LedgerForgingFinalizer, UnderspendingFinalizer, GlobalRandomPartitioner,
             GlobalRandomFinalizer, DirectionIgnoringSorter, FloatNoiseFinalizer,
             UndeclaredParamPartitioner, DuplicatingSorter, RoundedShamFinalizer, LargeDomainLeakFinalizer,
             LyingScorePartitioner, UnderstatedCostPartitioner, UndeclaredVettedFinalizer,
             NoisyArgmaxCutPartitioner, InfiniteEpsilonFinalizer, TextVettedFinalizer)
