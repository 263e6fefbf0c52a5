"""StructureFirst (Xu, Zhang, Xiao, Yang, Yu, Winslett, ICDE 2012 / VLDB Journal 22(6) 2013,
Section 5): the V-optimal k-group structure of the TRUE counts, its boundaries re-drawn one by one
by the exponential mechanism, then counts with the rest of the budget.

Boundaries (this module, budget eps_1).  Counts are capped at F (``x_F = min(x, F)``).  Going from
the last group to the second, the start of group g is drawn among t = g-1 .. r-1 (r: the start of
group g+1 already drawn, n for the last) with probability

    P(t) ~ exp( -(eps_1 / (k - 1)) * E_r(t) / (2 (2F + 1)) ),   E_r(t) = T(t, g-1) + SSE(t, r),

T the V-optimal prefix costs of x_F (:mod:`.voptimal`).  Sensitivity 2F + 1: adding or removing one
record moves one capped count by at most 1 within [0, F], which moves the SSE of the one group
holding it by at most 2F + 1 (SSE = sum x^2 - (sum x)^2 / m); E_r(t) is a minimum, over a fixed
family of segmentations, of sums of group SSEs, so it moves by at most 2F + 1 too.  k - 1 draws at
eps_1 / (k - 1) each compose to eps_1; the right end r of each draw is an earlier output.

The cap F must not depend on the data.  The reference code (DPBench ``thirdparty/xiaokui``, read,
not copied) takes F = 10,000 x the TRUE mean count, so F, the sensitivity and the capping leak the
total.  Here F is

* a public number (``cap=F``, e.g. a known bound on any count), or
* ``cap=None`` (default): ``cap_factor`` x the NOISY mean count, the total measured with Laplace
  noise at ``cap_share`` of this stage's budget (the rest goes to the boundaries); F = cap_factor x
  max(noisy total, 1) / n;
* ``calibration="dpbench"``: the reference's 10,000 x the TRUE mean and its temperature
  eps_1 / (2 k (2F + 1)) (k, not k - 1).  NOT differentially private as written (no proof: the cap,
  the capping and the sensitivity read the total); research mode only.  Its realised loss is small,
  and bounded: one record moves F by cap_factor/n; the bins at the cap hold at least F each, so at
  most n/cap_factor of them, and moving them all by cap_factor/n moves any score by at most 2F
  (on top of the record's own 2F + 1) and the temperature by a relative 2 cap_factor/(n (2F + 1));
  each draw then loses at most about 2.5 eps_1/k, the k - 1 draws about 2.5 (k - 1)/k eps_1.  Exact
  boundary distributions lose far less: all 3- and 4-bin histograms with counts in {0, 2, .., 12}
  at most 0.19 of the budget 2 (notebook Section 5); n = 3..5, k = 2..3, cap_factor in
  {0.25, 0.5, 1, 2, n}, counts in {0, M/2, M} for M up to 10^4 and every +-1 neighbour, at most 0.42
  of the budget 2 ((0, 0, M, M) against (0, 1, M, M), cap_factor 2; measured 2026-11-23).  An
  auditor rejects only a loss above the budget, so none can catch this variant on such inputs: the
  fast audit (``dphist.audit.audit(make_algorithm("SF", calibration="dpbench"), epsilon=1,
  level="fast", seed=1)``, also with ``cap_factor=1, k=2``) passes it (lower bound 0.21).

k: the reference fixes k = ceil(0.1 n) (``K_RATIO``); the paper takes k as an input.  Here
``k=None`` gives max(2, ceil(k_ratio n)) (at most n): with one group there would be no boundary to
draw and this stage's share would be wasted (the reference then moves eps_1 to the counts; a
pipeline's shares are fixed).

eps_1: the reference's optimiser ``DP::getOptEps1`` minimises, over eps_1 in {eps/20, 2 eps/20, ...},
8(k-1)^2 (2F+1)^2 / (eps_1 (8(k-1)(2F+1) - eps_1 n F^2)) + 2k / (eps - eps_1)^2.  Its first term has a
pole at eps_1 = 8(k-1)(2F+1)/(n F^2) (about 16 (k-1)/(n F)), and is NEGATIVE beyond it, so on any
grid above the pole the minimum is the smallest grid value eps/20: the preset's default
``structure_share=0.05`` is that value.  Below the pole the formula's own minimum is near
4(k-1)(2F+1)/(n F^2), practically 0 (notebooks/structurefirst.ipynb, Section 3).
"""
from __future__ import annotations

import math

import numpy as np

from dphist import InvalidParameter, Partition, Partitioner, VettedMechanism
from dphist.components import ReferenceCalibration
from dphist.params import UNIT_SHARE, Interval, Options
from .voptimal import PrefixCosts

CITATION = ("Xu, Zhang, Xiao, Yang, Yu, Winslett, Differentially private histogram publication, "
            "ICDE 2012 / VLDB Journal 22(6) 2013, StructureFirst (Section 5)")
CALIBRATIONS = ("paper", "dpbench")
REFERENCE_CAP_FACTOR = 10_000.0   #: DPBench: max_freq = (total / n) * 10000
REFERENCE_K_RATIO = 0.1           #: DPBench: K_RATIO


def number_of_groups(n: int, k: int | None, k_ratio: float) -> int:
    """k as given (at most n), else max(2, ceil(k_ratio n)) capped at n."""
    if k is not None:
        return min(int(k), n)
    return min(n, max(2, math.ceil(k_ratio * n)))


def draw_boundaries(values, k: int, epsilon_each: float, sensitivity: float, noise) -> np.ndarray:
    """StructureFirst's right-to-left draws: bounds 0 = b_1 < b_2 < ... < b_k < b_{k+1} = n.

    ``values`` are the (capped) counts; each of the k - 1 draws is an exponential mechanism over the
    candidate starts with utility -E_r(t), ``sensitivity`` and ``epsilon_each``."""
    n = values.size
    bounds = np.empty(k + 1, dtype=np.int64)
    bounds[0], bounds[k] = 0, n
    if k == 1:
        return bounds
    costs = PrefixCosts(values, k)
    right = n
    for g in range(k, 1, -1):
        starts, score = costs.scores(g, right)
        # utilities shifted by their maximum: the same distribution, finite numbers for the sampler
        utility = -(score - score.min())
        right = int(starts[noise.exponential_mechanism(utility, sensitivity, epsilon_each)])
        bounds[g - 1] = right
    return bounds


def _checked_k(owner: str, k, n: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= n:
        raise InvalidParameter(f"{owner}: k must be an integer from 1 to the {n} bins (k groups cannot exceed them), "
                               f"got {k!r}")
    return int(k)


class StructureFirstBoundaries(VettedMechanism):
    """The boundaries of StructureFirst under a cap F fixed before the call (public or noisy)."""

    name = "structurefirst.boundaries"
    proof = ("eps_1-DP by sequential composition of k - 1 exponential mechanisms at eps_1/(k-1) each "
             "(Xu et al. VLDBJ 2013, Section 5; dphist_structurefirst.structurefirst module docstring): "
             "counts are capped at a cap F fixed before the call (public, or from a separately "
             "charged noisy total); one record moves one capped count by <= 1 in [0, F], hence any "
             "group's SSE and every score E_r(t) (a minimum over a fixed family of segmentations "
             "of sums of group SSEs) by <= 2F + 1, the declared sensitivity.")

    def __init__(self, cap: float = 1.0):
        self.cap = float(cap)
        self.sensitivity = 2.0 * self.cap + 1.0

    def check(self, n: int, k=None, **_):
        k = _checked_k(self.name, k, n)
        if not (np.isfinite(self.cap) and self.cap > 0):
            raise InvalidParameter(f"{self.name}: the cap must be a finite number > 0, got {self.cap!r}")
        return {"k": k}

    def answers(self, n: int, k=1, **_) -> int:
        return max(int(k) - 1, 1)

    def run(self, counts, epsilon, noise, k=2):
        capped = np.minimum(np.asarray(counts, dtype=float), self.cap)
        return draw_boundaries(capped, k, float(epsilon) / max(k - 1, 1), self.sensitivity, noise)


class DPBenchBoundaries(VettedMechanism):
    """calibration "dpbench": the reference code's cap 10,000 x the TRUE mean and temperature
    eps_1 / (2 k (2F + 1)).  NOT differentially private (the cap and the sensitivity read the total)."""

    name = "structurefirst.boundaries-dpbench"
    sensitivity = 1.0   #: nominal; the reference's 2F + 1 is data-dependent
    proof = ("NOT differentially private: the DPBench/xiaokui StructureFirst caps counts at "
             "cap_factor x the TRUE mean count and calibrates the exponential mechanism with that "
             "data-dependent F (sensitivity 2F + 1, temperature eps_1/(2k(2F+1))).  For reproducing "
             "published numbers only; release mode refuses it.")
    differentially_private = False

    def __init__(self, cap_factor: float = REFERENCE_CAP_FACTOR):
        self.cap_factor = float(cap_factor)

    def check(self, n: int, k=None, **_):
        return {"k": _checked_k(self.name, k, n)}

    def answers(self, n: int, k=1, **_) -> int:
        return max(int(k) - 1, 1)

    def run(self, counts, epsilon, noise, k=2):
        x = np.asarray(counts, dtype=float)
        cap = self.cap_factor * x.sum() / x.size           # the flaw: the true mean count
        capped = np.minimum(x, cap)
        return draw_boundaries(capped, k, float(epsilon) / k, 2.0 * cap + 1.0, noise)


class StructureFirstPartitioner(ReferenceCalibration, Partitioner):
    """``structurefirst.sf``: StructureFirst's boundaries (module docstring), spending this stage's share.

    Parameters
    ----------
    k : number of groups; ``None`` = max(2, ceil(k_ratio n)).
    k_ratio : groups per bin when ``k`` is None (0.1, the reference's K_RATIO).
    cap : public bound F on any count; ``None`` (default) = cap_factor x a noisy mean count.
    cap_factor : multiple of the (noisy, or with "dpbench" true) mean count used as F (10,000 as the reference).
    cap_share : share of this stage's budget spent on the noisy total when ``cap`` is None (0.05).
    calibration : ``"paper"`` (default) or ``"dpbench"`` (the reference's true-mean cap, NOT DP).
    """

    name = "structurefirst.sf"
    spends = True
    citation = CITATION
    #: opt-in to the privacy proofs of vetted mechanisms (the kernel cannot check them)
    vetted_mechanisms = ("structurefirst.boundaries", "structurefirst.boundaries-dpbench")
    requires_domain_order = True
    param_constraints = {
        "k": [None, Interval(int, 1, None)],
        "k_ratio": Interval(float, 0, 1, closed="right"),
        "cap": [None, Interval(float, 0, None, closed="neither")],
        "cap_factor": Interval(float, 0, None, closed="neither"),
        "cap_share": UNIT_SHARE,
        "calibration": Options(*CALIBRATIONS),
    }

    def __init__(self, k: int | None = None, k_ratio: float = REFERENCE_K_RATIO, cap: float | None = None,
                 cap_factor: float = REFERENCE_CAP_FACTOR, cap_share: float = 0.05, calibration: str = "paper"):
        self.k = k
        self.k_ratio = k_ratio
        self.cap = cap
        self.cap_factor = cap_factor
        self.cap_share = cap_share
        self.calibration = calibration
        if self.calibration == "dpbench" and self.cap is not None:
            raise InvalidParameter(f"{self.name}: calibration='dpbench' takes the reference's true-mean cap; "
                                   "do not pass cap")

    def partition(self, bins: Partition, ctx) -> Partition:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter(f"{self.name} spends budget: give the partitioner a share gamma_p > 0")
        if not bins.is_identity_order() or bins.n_groups != bins.n_bins:
            raise InvalidParameter(f"{self.name} draws boundaries in domain order: use it on singleton bins, no sorter")
        n = bins.n_bins
        k = number_of_groups(n, self.k, self.k_ratio)
        budget = float(ctx.budget)
        if self.calibration == "dpbench":
            ctx.warn("not differentially private: StructureFirst with the DPBench true-mean cap")
            bounds = ctx.data.custom(DPBenchBoundaries(self.cap_factor), budget, k=k)
        else:
            cap = self.cap
            if cap is None:
                eps_total = self.cap_share * budget
                total = float(ctx.data.laplace_partition(Partition.whole(n), eps_total)[0])
                cap = self.cap_factor * max(total, 1.0) / n     # post-processing of the noisy total
                budget -= eps_total
            bounds = ctx.data.custom(StructureFirstBoundaries(cap), budget, k=k)
        return Partition(np.arange(n), np.asarray(bounds, dtype=np.int64))
