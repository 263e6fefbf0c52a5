"""Broken twins: mechanisms that are NOT differentially private, which the auditor must catch.

Never registered; used by the tests and the notebook, and as examples of the
bugs the audit exists for.  (The half-scale Laplace finalizer is the conformance
kit's :class:`dphist.testing.twins.HalfScaleLaplaceFinalizer`; :class:`BatchedHalfScaleLaplace`
only adds the batch declaration.)  Each breaks privacy in a known way, routed through
a sham :class:`~dphist.VettedMechanism` (the kernel trusts a vetted mechanism's
proof, so only an audit can find the fault):

* :class:`TrueRunsPartitioner` - cuts the domain wherever two neighbouring TRUE
  counts differ (StructureFirst-style boundaries from the raw data): the
  partition is a deterministic function of the data, privacy loss infinite.
* :class:`CoarseEFPAFinalizer` - EFPA-style (Acs, Castelluccia, Chen, ICDM 2012):
  the number ``k`` of Fourier coefficients kept is chosen by the exponential
  mechanism with a declared score sensitivity ``SENSITIVITY_FACTOR`` times the
  true one (too little noise on the choice); the kept coefficients get correct noise.
* :class:`DPBenchL1Partitioner` - DAWA's L1 partition (Li et al., PVLDB 2014,
  Sec. 3) with the calibration of the DPBench/ektelo reference code as
  described in ``dphist_dawa.l1_partition``: Laplace(2 / eps_1) on the deviation
  of multi-bin groups only, single-bin groups noiseless, noisy costs floored
  at 0.  Written here from that description (no code copied) so that the
  audit tests do not depend on the dawa plugin's own ``calibration`` option.
* :class:`AxisSwapLaplaceFinalizer` - a 2-D Laplace mechanism with its grid's
  axes swapped in one comparison: a cell whose row index is at least the number
  of COLUMNS gets a quarter of the noise.  Exact on square and wide grids (every
  fixed grid pair of :mod:`.pairs`); it leaks only on a tall grid, below its
  first ``columns`` rows, which the search over grid pairs reaches (a transpose,
  an axis doubled or halved).  Batch-capable.
"""
from __future__ import annotations

import math

import numpy as np

from ..components.base import Context, Finalizer, Partitioner
from ..kernel import VettedMechanism
from ..partition import Partition
from ..testing.twins import HalfScaleLaplaceFinalizer

_NOT_DP = "BROKEN TWIN (dphist.audit.twins): not differentially private; for audit tests only"


def _exponential(noise, scores, coefficient: float) -> int:
    """Index drawn with probability proportional to exp(coefficient * score) (through the noise source)."""
    # exponential_mechanism(scores, sensitivity, epsilon) draws with weights exp(eps * s / (2 sens))
    return int(noise.exponential_mechanism(scores, 1.0, 2.0 * coefficient))


class BatchedHalfScaleLaplace(HalfScaleLaplaceFinalizer):
    """The kit's half-scale twin, declared batch-capable (no data-dependent control flow)."""

    batch_capable = True


# ------------------------------------------------------------ true-count partition
class _TrueRuns(VettedMechanism):
    name = "twin.true-runs"
    proof = _NOT_DP + ": cuts where neighbouring true counts differ, no noise at all"

    def answers(self, n, **_):
        return 1

    def run(self, counts, epsilon, noise):
        cuts = np.flatnonzero(np.diff(counts) != 0) + 1
        return np.concatenate(([0], cuts, [counts.size]))


class TrueRunsPartitioner(Partitioner):
    """Groups runs of equal TRUE counts (needs bins in domain order); its partition reveals the data."""

    name = "twin.true-runs"
    citation = _NOT_DP
    #: opt-in to the privacy proofs of vetted mechanisms (the kernel cannot check them)
    vetted_mechanisms = ("twin.true-runs",)
    differentially_private = False   # release mode refuses it; research runs carry a warning
    spends = True
    requires_domain_order = True

    def partition(self, bins: Partition, ctx: Context) -> Partition:
        cuts = ctx.data.custom(_TrueRuns(), ctx.budget)
        return Partition.from_sizes(np.diff(cuts))


# ------------------------------------------------------------ EFPA with a coarse choice of k
#: the declared score sensitivity is this fraction of the true bound (EFPA's reference code was ~3.9x off)
SENSITIVITY_FACTOR = 1 / 30


class _CoarseEFPA(VettedMechanism):
    name = "twin.coarse-efpa"
    proof = _NOT_DP + ": exponential mechanism on k with a score sensitivity 30x too small"

    def run(self, counts, epsilon, noise):
        n = counts.size
        coef = np.fft.rfft(counts.astype(float))
        m = coef.size
        eps_k, eps_c = epsilon / 2, epsilon / 2
        # score(k): -(L2 norm of the dropped coefficients) - (public noise penalty per kept coefficient)
        energy = np.abs(coef) ** 2
        dropped = np.sqrt(np.concatenate((np.cumsum(energy[::-1])[::-1][1:], [0.0])))
        penalty = math.sqrt(2) / eps_c / 10
        scores = -(dropped + penalty * np.arange(1, m + 1))
        # one record moves every |c_f| by at most 1, so the dropped norm by at most sqrt(m - 1)
        true_sensitivity = math.sqrt(max(m - 1, 1))
        declared = true_sensitivity * SENSITIVITY_FACTOR
        k = _exponential(noise, scores, eps_k / (2 * declared)) + 1
        # k coefficients, real and imaginary parts: one record moves each by at most 1, L1 <= 2k (correct)
        parts = noise.laplace_mechanism(np.concatenate((coef[:k].real, coef[:k].imag)), 2 * k, eps_c)
        noisy = parts[..., :k] + 1j * parts[..., k:]
        kept = np.zeros(m, dtype=complex)
        kept[:k] = noisy
        return np.fft.irfft(kept, n)


class CoarseEFPAFinalizer(Finalizer):
    """EFPA-style Fourier truncation whose choice of k gets too little noise (needs domain order)."""

    name = "twin.coarse-efpa"
    citation = _NOT_DP + " (after Acs, Castelluccia, Chen, ICDM 2012)"
    #: opt-in to the privacy proofs of vetted mechanisms (the kernel cannot check them)
    vetted_mechanisms = ("twin.coarse-efpa",)
    differentially_private = False   # release mode refuses it; research runs carry a warning
    requires_domain_order = True

    def finalize(self, bins: Partition, ctx: Context) -> np.ndarray:
        return np.asarray(ctx.data.custom(_CoarseEFPA(), ctx.budget), dtype=float)


# ------------------------------------------------------------ DAWA, DPBench calibration
class _DPBenchL1(VettedMechanism):
    name = "twin.dpbench-l1-partition"
    proof = (_NOT_DP + ": DAWA's L1 partition with the DPBench/ektelo calibration (Laplace(2/eps_1) on "
             "multi-bin groups only, single bins noiseless, floored at 0)")

    def answers(self, n, **_):
        return 1

    def run(self, counts, epsilon, noise, measure_epsilon=1.0):
        x = counts.astype(float)
        n = x.size
        starts, ends = np.triu_indices(n + 1, k=1)          # every group [s, e), sorted by start
        inside = (np.arange(n) >= starts[:, None]) & (np.arange(n) < ends[:, None])
        mean = (inside @ x) / (ends - starts)
        dev = (inside * np.abs(x[None, :] - mean[:, None])).sum(axis=1)
        multi = (ends - starts) > 1
        noisy = dev.copy()
        noisy[multi] = np.maximum(noise.laplace_mechanism(dev[multi], 2.0, epsilon), 0.0)
        cost = noisy + 1.0 / measure_epsilon
        best = np.full(n + 1, np.inf)
        best[0] = 0.0
        back = np.zeros(n + 1, dtype=np.int64)
        for e in range(1, n + 1):                           # groups ending at e, all starts at once
            ending = np.flatnonzero(ends == e)
            total = best[starts[ending]] + cost[ending]
            i = int(np.argmin(total))
            best[e], back[e] = total[i], starts[ending][i]
        cuts = [n]
        while cuts[-1] > 0:
            cuts.append(int(back[cuts[-1]]))
        return np.array(cuts[::-1], dtype=np.int64)


class DPBenchL1Partitioner(Partitioner):
    """DAWA's exact L1 partition under the DPBench/ektelo calibration (O(n^3): small domains only)."""

    name = "twin.dpbench-l1"
    citation = _NOT_DP + " (after Li, Hay, Miklau, Wang, DAWA, PVLDB 2014, Sec. 3, DPBench calibration)"
    #: opt-in to the privacy proofs of vetted mechanisms (the kernel cannot check them)
    vetted_mechanisms = ("twin.dpbench-l1-partition",)
    differentially_private = False   # release mode refuses it; research runs carry a warning
    spends = True
    requires_domain_order = True

    def partition(self, bins: Partition, ctx: Context) -> Partition:
        cuts = ctx.data.custom(_DPBenchL1(), ctx.budget, measure_epsilon=max(ctx.eps_f, 1e-12))
        return bins.merge(cuts)


def dpbench_dawa(ratio: float = 0.25):
    """DAWA's pipeline shape with the DPBench-calibrated partition (``ratio`` of epsilon), then group means."""
    from ..pipeline import Pipeline
    return Pipeline(None, None, DPBenchL1Partitioner(), "group-mean", (0.0, ratio, 1.0 - ratio),
                    name="DAWA (DPBench calibration, twin)")


# ------------------------------------------------------------ 2-D: axes swapped in one comparison
class _AxisSwapLaplace(VettedMechanism):
    name = "twin.axis-swap-laplace"
    proof = _NOT_DP + ": cells in rows at or below the number of columns get a quarter of the noise"
    sensitivity = 1.0

    def check(self, n, **arguments):
        return {"rows": int(arguments["rows"]), "columns": int(arguments["columns"])}

    def run(self, counts, epsilon, noise, *, rows, columns):
        row = np.arange(counts.size) // columns
        factor = np.where(row >= columns, 0.25, 1.0)      # the bug: a row index compared with the columns
        return counts.astype(float) + factor * noise.laplace_mechanism(np.zeros(counts.size), 1.0, epsilon)


class AxisSwapLaplaceFinalizer(Finalizer):
    """Laplace on every cell of a grid (singleton bins in domain order), except that the cells of rows
    ``i >= columns`` get a quarter of the scale: exact on square and wide grids, a loss of 4 epsilon
    on a tall one below its first ``columns`` rows."""

    name = "twin.axis-swap-laplace"
    citation = _NOT_DP
    vetted_mechanisms = ("twin.axis-swap-laplace",)
    differentially_private = False
    requires_domain_order = True
    batch_capable = True
    dims = (2,)

    def finalize(self, bins: Partition, ctx: Context):
        rows, columns = ctx.shape
        return ctx.data.custom(_AxisSwapLaplace(), ctx.budget, rows=rows, columns=columns)
