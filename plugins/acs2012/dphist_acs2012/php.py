"""P-HPartition (P-HP), Acs, Castelluccia, Chen, ICDM 2012, Section V: hierarchical bisection by the
exponential mechanism, then Laplace on the group sums (spread as group averages).

The error of a group ``g`` with noisy average ``mean_g + Lap(b)/|g|`` (``b = 1/eps_2``, the
finalizer's budget) is bounded by

    err(g) = dev(g) + b,        dev(g) = sum_{i in g} |x_i - mean_g|,

the L1 deviation (approximation error) plus the expected absolute noise ``E|Lap(b)| = b`` of the
group's total, spread over its bins (the L1 error of a uniform spread of a noisy total is the
absolute noise).  The error of a partition is the sum over its groups.  This is the score of the
authors' code (``dpcomp_core/algorithm/thirdparty/Acs12/lib/Clustering.py`` and
``cutils/clustering.c``, read, not copied: L1 distance to the group's *mean*); AHP's paper (Zhang et
al. 2014, Section 5) describes P-HP's error with the squared error instead -- we follow the authors'
code.

The bisection (eps_1 = the partitioner's share):

1. Start from one group, the whole domain, at level 1.  Process the groups not yet final in the order
   they were made (first in, first out, as the reference's list).
2. For a group ``c``, the candidates are "keep ``c``" and "cut ``c`` at position ``p``" for every
   inner unit boundary ``p``; their scores are ``-(dev(c) + b)`` and
   ``-(dev(c[:p]) + dev(c[p:]) + 2b)`` -- minus the error of the partition after the decision,
   without the terms of the other groups, which are common to all candidates.  Adding or removing
   one record at bin ``i`` in ``c`` moves every score by at most 2 (``dev`` of the one group holding
   ``i`` moves by at most ``2 (1 - 1/|g|)``); a record outside ``c`` moves none.  The exponential
   mechanism with sensitivity 2 and budget ``eps_1 / (2 (depth - 1))`` decides.
3. A cut's two halves are at level ``l + 1``; a group is final when it has one unit or reaches level
   ``depth`` (default ``floor(log2 n)``, the DPBench call's), or when "keep" was drawn.  The process
   stops when no group is left to decide, or the partition has ``max_groups`` groups (default 2,000,
   the DPBench call's; the paper's example uses 400).
4. Every partition met (the initial one, then one after each decision, except a final "keep" that
   leaves nothing to decide -- the reference's list; a partition repeats once per "keep" decided in
   it) is a candidate of a last exponential mechanism with score ``-(sum_g dev(g) + b |G|)``
   (sensitivity 2: one group holds the record) and budget ``eps_1 / 2``.

Privacy: each decision reads only its group's counts; the groups decided at one level are disjoint
(parallel composition), and a record is in at most ``depth - 1`` decided groups (levels 1 .. depth - 1;
level-``depth`` groups are final without a decision): at most ``(depth - 1) eps_1 / (2 (depth - 1)) =
eps_1 / 2`` for the bisection, ``eps_1 / 2`` for the last choice (adaptive sequential composition: each
step's candidates depend only on earlier outputs).  Total eps_1; then ``laplace_partition`` with eps_2
(disjoint groups, sensitivity 1); averages and clipping at 0 are post-processing.

Budget per decision: the reference spends ``eps_1 / (2 depth)`` per decision, which leaves
``eps_1 / (2 depth)`` of the bisection's half unused (a record meets at most ``depth - 1`` decisions);
we spend ``eps_1 / (2 (depth - 1))``, the whole share.  The reference also decides once more on an already
final group when a cut leaves no group to decide (its "first non-final group" search falls through to
the last group), spending on it beyond the budget above; we do not.  Its draws come from Python's global
``random``; ours from the kernel (``noise.exponential_mechanism``, exact in release mode).

Speed: a decision on a group of ``L`` bins needs the deviation of every prefix and every suffix:
the core's :class:`dphist.segmentation.L1Deviation` (a Fenwick tree over the ranks, O(L log L)) gives
all prefixes in one pass, and all suffixes on the reversed group.  A level costs O(n log n); the
reference recomputes each candidate in O(L), O(L^2) per group.
"""
from __future__ import annotations

import math
from collections import deque

import numpy as np
from numba import njit

from dphist import Finalizer, InvalidParameter, Partitioner, VettedMechanism
from dphist.params import Interval
from dphist.segmentation import L1Deviation, kernels

CITATION = ("Acs, Castelluccia, Chen, Differentially private histogram publishing through lossy "
            "compression, ICDM 2012, Section V (P-HPartition)")
DEFAULT_MAX_GROUPS = 2000   #: DPBench's call (php_engine); the authors' Main.py uses 400


def prefix_deviations(values) -> np.ndarray:
    """``out[j] = dev(values[:j + 1])`` for every prefix (one Fenwick pass of the core's L1Deviation)."""
    values = np.asarray(values, dtype=np.float64)
    return L1Deviation(values).rows_from(0, np.arange(values.size + 1))


@njit(cache=True, nogil=True)
def _prefix_and_suffix(values):
    L = values.size
    order = np.argsort(values, kind="mergesort")
    rank = np.empty(L, dtype=np.int64)
    for j in range(L):
        rank[order[j]] = j + 1
    sorted_values = values[order]
    weights = np.ones(L)
    units = np.arange(L + 1)
    prefix = np.empty(L)
    suffix = np.empty(L)
    kernels.deviations_from(values, weights, rank, sorted_values, units, 0, prefix)
    kernels.deviations_from(values[::-1].copy(), weights, rank[::-1].copy(), sorted_values, units, 0, suffix)
    return prefix, suffix


def prefix_and_suffix_deviations(values) -> tuple[np.ndarray, np.ndarray]:
    """``(prefix, suffix)``: ``prefix[j] = dev(values[:j + 1])``, ``suffix[j] = dev(values[-(j + 1):])``.

    :func:`prefix_deviations` twice, sharing one sort and compiled as one call (P-HP makes thousands of
    decisions on small groups, where the Python overhead of two ``L1Deviation`` objects dominated): the
    core's Fenwick pass ``dphist.segmentation.kernels.deviations_from`` (what ``L1Deviation.rows_from``
    runs) over the values and over their reversal, with the same ranks reversed (equal values may
    take any order consistent with the sort)."""
    return _prefix_and_suffix(np.ascontiguousarray(values, dtype=np.float64))


@njit(cache=True, nogil=True)
def _split_scores(values, cuts, b):
    prefix, suffix = _prefix_and_suffix(values)
    L = values.size
    m = cuts.size
    scores = np.empty(m + 1)
    left = np.empty(m)
    right = np.empty(m)
    whole = prefix[L - 1]
    scores[0] = -(whole + b)
    for j in range(m):
        left[j] = prefix[cuts[j] - 1]
        right[j] = suffix[L - cuts[j] - 1]
        scores[j + 1] = -(left[j] + right[j] + 2.0 * b)
    return scores, whole, left, right


def split_scores(values, cuts, b: float):
    """Scores of "keep" (index 0) and of cutting ``values`` at each position of ``cuts`` (1 .. L-1),
    with the deviations behind them: ``(scores, dev(values), dev of each left part, of each right part)``."""
    return _split_scores(np.ascontiguousarray(values, dtype=np.float64), np.asarray(cuts, dtype=np.int64),
                         float(b))


def default_depth(k: int) -> int:
    """``floor(log2 k)`` for ``k`` units (DPBench: ``int(math.log(len(x), 2))``), at least 1."""
    return max(int(math.floor(math.log2(k))), 1) if k > 1 else 1


def bisect(values, bounds, epsilon: float, noise, b: float, depth: int, max_groups: int) -> np.ndarray:
    """P-HP's bisection and last choice (module docstring); returns cut points in units."""
    k = bounds.size - 1
    if k == 1:
        return np.array([0, 1], dtype=np.int64)
    eps_decision = epsilon / (2.0 * (depth - 1)) if depth > 1 else 0.0
    root_dev = float(prefix_deviations(values)[-1])
    n_groups, total = 1, root_dev + b
    queue = deque([(0, k, 1, root_dev)]) if depth > 1 else deque()
    made_cuts: list[int] = []
    states_cuts = [0]          # state t = the first states_cuts[t] cuts
    states_err = [total]
    while queue and n_groups < k and n_groups <= max_groups:
        a, e, level, dev = queue.popleft()
        lo, hi = bounds[a], bounds[e]
        inner = bounds[a + 1:e] - lo
        scores, _, lefts, rights = split_scores(values[lo:hi], inner, b)
        choice = int(noise.exponential_mechanism(scores, 2.0, eps_decision))
        if choice == 0:
            if not queue:
                break
        else:
            cut = a + choice              # unit index of the cut
            left, right = float(lefts[choice - 1]), float(rights[choice - 1])
            total += left + right + b - dev
            n_groups += 1
            made_cuts.append(cut)
            for s, t, d in ((a, cut, left), (cut, e, right)):
                if t - s > 1 and level + 1 < depth:
                    queue.append((s, t, level + 1, d))
        states_cuts.append(len(made_cuts))
        states_err.append(total)
    final = int(noise.exponential_mechanism(-np.asarray(states_err), 2.0, epsilon / 2.0))
    chosen = sorted(made_cuts[:states_cuts[final]])
    return np.array([0, *chosen, k], dtype=np.int64)


class HierarchicalBisection(VettedMechanism):
    """P-HP's private partition in the kernel: returns cut points in units for ``Partition.merge``."""

    name = "acs2012.bisection"
    sensitivity = 2.0   #: of every score (L1 deviation of the one group holding the record)
    proof = ("eps-DP (Acs, Castelluccia, Chen, ICDM 2012, Sec. V; dphist_acs2012.php docstring; "
             "notebooks/acs2012.ipynb): each bisection decision is an exponential mechanism (score "
             "sensitivity 2) on one group's counts with eps/(2(depth-1)); decided groups at a level are "
             "disjoint and a record meets at most depth-1 decisions (parallel + adaptive composition: "
             "eps/2); the last choice among the partitions met is an exponential mechanism (sensitivity "
             "2) with eps/2.")

    def check(self, n, order=None, bounds=None, depth=None, max_groups=DEFAULT_MAX_GROUPS, measure_epsilon=1.0):
        """Validate before the charge (``order`` and ``bounds`` come from a validated ``Partition``)."""
        if depth is not None:
            depth = _positive_int(depth, f"{self.name}: depth")
        if not isinstance(measure_epsilon, (int, float, np.number)) or not math.isfinite(measure_epsilon) \
                or measure_epsilon <= 0:
            raise InvalidParameter(f"{self.name}: measure_epsilon must be a positive number, got {measure_epsilon!r}")
        return dict(order=order, bounds=bounds, depth=depth,
                    max_groups=_positive_int(max_groups, f"{self.name}: max_groups"),
                    measure_epsilon=float(measure_epsilon))

    def answers(self, n, **_):
        return 1

    def run(self, counts, epsilon, noise, order=None, bounds=None, depth=None,
            max_groups=DEFAULT_MAX_GROUPS, measure_epsilon=1.0):
        x = np.asarray(counts)
        values = (x if order is None else x[np.asarray(order)]).astype(np.float64)
        bounds = np.arange(values.size + 1) if bounds is None else np.asarray(bounds, dtype=np.int64)
        k = bounds.size - 1
        depth = default_depth(k) if depth is None else int(depth)
        return bisect(values, bounds, float(epsilon), noise, 1.0 / float(measure_epsilon), depth, int(max_groups))


def _positive_int(value, what: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidParameter(f"{what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


class PHPPartitioner(Partitioner):
    """``acs2012.php``: P-HP's hierarchical bisection (module docstring) over the bins' current order.

    Spends its whole share ``ctx.budget`` (eps_1) in one vetted kernel call.  Incoming groups are
    indivisible units (bins, in P-HP).

    Parameters
    ----------
    depth : int or None
        The maximum level of a group (the root is level 1); ``None`` (default) = ``floor(log2 k)``
        for ``k`` incoming groups, as DPBench's call.
    max_groups : int
        Stop bisecting once the partition has more than this many groups (default 2,000, DPBench's
        call).
    measure_epsilon : float or None
        The ``eps_2`` in ``b = 1/eps_2`` of the group error; ``None`` (default) = the finalizer's
        budget ``gamma_f * epsilon`` from the context.
    """

    name = "acs2012.php"
    citation = CITATION
    #: opt-in to the privacy proofs of vetted mechanisms (the kernel cannot check them)
    vetted_mechanisms = ("acs2012.bisection",)
    spends = True
    param_constraints = {"depth": [None, Interval(int, 1, None)], "max_groups": Interval(int, 1, None),
                         "measure_epsilon": [None, Interval(float, 0, None, closed="neither")]}

    def __init__(self, depth: int | None = None, max_groups: int = DEFAULT_MAX_GROUPS,
                 measure_epsilon: float | None = None):
        self.depth = depth
        self.max_groups = max_groups
        self.measure_epsilon = measure_epsilon

    def partition(self, bins, ctx):
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter("acs2012.php spends budget: give the partitioner a share gamma_p > 0")
        eps_2 = ctx.eps_f if self.measure_epsilon is None else float(self.measure_epsilon)
        if not eps_2 > 0:
            raise InvalidParameter("acs2012.php: the group error needs the measuring budget eps_2 > 0 "
                                   "(gamma_f > 0, or pass measure_epsilon)")
        cuts = ctx.data.custom(HierarchicalBisection(), ctx.budget, order=bins.order, bounds=bins.bounds,
                               depth=self.depth, max_groups=int(self.max_groups), measure_epsilon=eps_2)
        return bins.merge(cuts)


class ClippedGroupMean(Finalizer):
    """``acs2012.clipped-mean``: Laplace(1/eps) on each group's sum, spread evenly, clipped at 0.

    As the core's ``group-mean`` (disjoint groups: sensitivity 1), then ``max(0, .)`` on each
    average, as P-HP's reference code does (post-processing: counts are non-negative)."""

    name = "acs2012.clipped-mean"
    citation = CITATION + "; Clustering.py's perturb (noisy average clipped at 0)"
    spends = True
    batch_capable = True

    def finalize(self, bins, ctx) -> np.ndarray:
        return np.maximum(bins.spread(ctx.data.laplace_partition(bins, ctx.budget)), 0.0)

    def stated_error(self, bins, ctx):
        """The group-mean statement before the clipping at 0 (marked ``before-postprocessing``: the
        clipped values are biased upwards where the noisy mean was negative)."""
        from dphist.stated_error import group_mean_strategy
        return group_mean_strategy(bins.n_groups, ctx.eps_f, postprocess=("clipping at 0",))
