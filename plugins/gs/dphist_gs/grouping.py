"""GS (Kellaris & Papadopoulos, "Practical differential privacy via grouping and smoothing",
PVLDB 6(5) 2013): group the counts into groups of one size w, smooth each group by its average,
publish each average with Laplace noise.  No public implementation is known; the paper's text was
not available to us beyond its abstract, so this is a reconstruction from the abstract and from the
descriptions in Zhang et al. (AHP, SDM 2014, Section 5: "GS with no sampling": sorted noisy
histogram, fixed group size w) and Kellaris, Papadopoulos, Papadias (TKDE, Section 4, "Ordering
[24]": Laplace(1/eps) on every bin, sorted in descending order).  Every choice is labelled
[choice] here and in notebooks/gs.ipynb.

Pipeline (one preset ``GS``):

1. H~ = x + Lap(1/eps_1) per bin (the core's ``laplace`` initializer).  [choice] The paper's
   "sampling mechanism" spends on a sample of the data; a histogram kernel has no record-level
   sampling primitive, so the budget is split instead (AHP's "GS with no sampling").
2. Sort the bins by H~, descending (the core's ``noisy-count`` sorter; free).
3. Groups of ``w`` consecutive bins in that order (the last one shorter), ``gs.fixed-width``; free.
   w minimises the estimated error of smoothing plus noise (below), or is given.
4. Each group's sum + Lap(1/eps_2), spread evenly (the core's ``group-mean``): the average of a
   group of w bins gets Laplace(1/(w eps_2)), "smoothing diminishes sensitivity".

The choice of w [choice]: over every w in 1..n,

    err(w) = sum over groups g of SSE(H~ sorted, g)  +  sum over groups of 2 / (|g| eps_2^2),

the smoothing error read off the sorted noisy values (no noise correction: after sorting, the
noise is no longer independent of the grouping, and NoiseFirst's (w - 1) 2/eps_1^2 per group
over-corrects; notebooks/gs.ipynb measures both) plus the Laplace error of the published averages.
Each w costs O(n / w) from prefix sums, so all w together cost O(n log n) (harmonic sum).
Ties go to the smallest w.  Privacy: post-processing of H~ with public eps_2.

The search stops a width once its partial total reaches the best total so far (``_first_min_width``),
and when w = 1 wins because every wider width's first group already reaches w = 1's total (distinct
noisy values at moderate eps: the usual case) that answer is found in one pass over the sorted H~
(``_width_one_wins``) without the prefix pairs: the same w, in about a tenth of a sort of N floats.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from dphist import InvalidParameter, Partition, Partitioner
from dphist.params import Interval
from dphist.partition import gather_run

CITATION = ("Kellaris, Papadopoulos, Practical differential privacy via grouping and smoothing, PVLDB 6(5) 2013 "
            "(reconstructed: see dphist_gs.grouping); Zhang et al., AHP, SDM 2014, Section 5 (GS without sampling)")


def width_errors(p, p2, noise_each: float, correction: float) -> np.ndarray:
    """err[w] for w = 1..n (index 0 unused): sum of the SSE of consecutive groups of w values
    (minus ``correction`` x (|g| - 1) per group) plus ``noise_each`` / |g| per group; the last
    group holds the n mod w values left over.

    Memory-bound for large w (one group boundary per cache line), so the two prefix sums are read
    side by side from one (n + 1, 2) array and each boundary is read once (a group's end is the
    next group's start): a quarter of the cache lines of reading p and p2 twice per group, the same
    arithmetic in the same order."""
    pp = np.empty((np.size(p), 2))
    pp[:, 0] = p
    pp[:, 1] = p2
    return _width_errors(pp, float(noise_each), float(correction))


@njit(cache=True)
def _width_errors(pp, noise_each, correction):
    """:func:`width_errors` on the two prefix sums side by side, ``pp[:, 0]`` and ``pp[:, 1]``."""
    n = pp.shape[0] - 1
    out = np.full(n + 1, np.inf)
    for w in range(1, n + 1):
        q = n // w
        # one division per w, not per group (with the loop split: 0.57 -> 0.21 s at 2^20, measured under load)
        inv = 1.0 / w
        total = 0.0
        lo, lo2 = pp[0, 0], pp[0, 1]
        for g in range(q):
            hi, hi2 = pp[(g + 1) * w, 0], pp[(g + 1) * w, 1]
            s = hi - lo
            sse = (hi2 - lo2) - s * s * inv
            total += max(sse, 0.0)
            lo, lo2 = hi, hi2
        total += q * (noise_each * inv - correction * (w - 1))
        r = n - q * w
        if r > 0:
            s = pp[n, 0] - pp[q * w, 0]
            sse = (pp[n, 1] - pp[q * w, 1]) - s * s / r
            total += max(sse, 0.0) - correction * (r - 1) + noise_each / r
        out[w] = total
    return out


def best_width(sorted_noisy, eps_2: float, noise_var_1: float = 0.0) -> int:
    """The w minimising :func:`width_errors` (smallest on ties)."""
    pp, bounded = _centred_prefix_pairs(np.array(sorted_noisy, dtype=float))
    return _best_width(pp, eps_2, noise_var_1, bounded)


def _best_width(pp, eps_2: float, noise_var_1: float, bounded: bool | None = None) -> int:
    """The w minimising the errors of the prefix pairs ``pp``; ``bounded``: :func:`_bounded` of ``pp`` when the
    caller knows it (:func:`_centred_prefix_pairs` finds it in its pass), else it is computed."""
    noise_each = 2.0 / eps_2**2
    if noise_var_1 == 0.0 and (_bounded(pp) if bounded is None else bounded):
        return int(_first_min_width(pp, noise_each))
    return int(np.argmin(_width_errors(pp, noise_each, float(noise_var_1))[1:]) + 1)


#: prefix sums up to this size in absolute value keep every term of :func:`_width_errors` finite
_FINITE_BOUND = 1e150


def _bounded(pp) -> bool:
    """Whether every term :func:`_width_errors` adds is finite (no inf - inf, so no NaN): the running sums
    at most :data:`_FINITE_BOUND` in absolute value, the running sums of squares finite."""
    return bool(np.abs(pp[:, 0]).max() <= _FINITE_BOUND and np.isfinite(pp[-1, 1]))


@njit(cache=True)
def _first_min_width(pp, noise_each):
    """The w :func:`_width_errors` ``(pp, noise_each, 0.0)`` minimises, the smallest on ties, without
    finishing every w's sum: with no correction every term added to a w's total is >= 0 (each group's SSE
    clipped at 0, the noise terms), and a rounded sum of non-negative terms never decreases, so once the
    partial total of w reaches the smallest total of a smaller w, w is neither smaller nor earlier: its
    remaining groups are skipped.  Each total that is finished is summed in :func:`_width_errors`' order (the
    same floats), so the w is ``argmin`` of that function's errors (``_bounded`` inputs: no NaN).  The wide
    groups of the sorted values, whose boundaries are each a cache miss, stop after a few groups."""
    n = pp.shape[0] - 1
    best, best_w = np.inf, 1
    for w in range(1, n + 1):
        q = n // w
        inv = 1.0 / w
        total = 0.0
        lo, lo2 = pp[0, 0], pp[0, 1]
        stopped = False
        for g in range(q):
            hi, hi2 = pp[(g + 1) * w, 0], pp[(g + 1) * w, 1]
            s = hi - lo
            sse = (hi2 - lo2) - s * s * inv
            total += max(sse, 0.0)
            if total >= best:
                stopped = True
                break
            lo, lo2 = hi, hi2
        if stopped:
            continue
        # _width_errors' terms with correction 0.0: x - 0.0 * k is x exactly, so it is left out
        total += q * (noise_each * inv)
        r = n - q * w
        if r > 0:
            s = pp[n, 0] - pp[q * w, 0]
            sse = (pp[n, 1] - pp[q * w, 1]) - s * s / r
            total += max(sse, 0.0) + noise_each / r
        if total < best:
            best, best_w = total, w
    return best_w


def _centred_prefix_pairs(x: np.ndarray) -> tuple[np.ndarray, bool]:
    """:func:`dphist.intervals.centred_prefix_sums` of the float vector ``x`` written side by side into one
    ``(n + 1, 2)`` array (the same sums: running sums, in order), and :func:`_bounded` of it, in one
    compiled pass (:func:`_prefix_pairs_into`) after numpy's mean."""
    if x.ndim != 1 or x.size == 0:
        raise InvalidParameter("prefix sums need a non-empty 1-D vector of values")
    pp = np.empty((x.size + 1, 2))
    bounded = _prefix_pairs_into(np.ascontiguousarray(x, dtype=float), float(x.mean()), _FINITE_BOUND, pp)
    return pp, bool(bounded)


@njit(cache=True, nogil=True)
def _prefix_pairs_into(x, mean, bound, pp):
    """``pp[1:, 0]`` = ``np.cumsum(x - mean)``, ``pp[1:, 1]`` = ``np.cumsum((x - mean) ** 2)`` (the same
    operations in the same order: each difference ``x[i] - mean``, its square ``d * d``, the running sums
    started from the first term itself, as ``cumsum`` starts them), ``pp[0]`` = 0; returns whether every
    running sum is at most ``bound`` in absolute value (NaN is not) and the last sum of squares is finite:
    :func:`_bounded` of ``pp``, without a second pass over it."""
    n = x.size
    pp[0, 0] = 0.0
    pp[0, 1] = 0.0
    d = x[0] - mean
    s, s2 = d, d * d
    pp[1, 0], pp[1, 1] = s, s2
    bounded = abs(s) <= bound
    for i in range(1, n):
        d = x[i] - mean
        s += d
        s2 += d * d
        pp[i + 1, 0], pp[i + 1, 1] = s, s2
        bounded &= abs(s) <= bound
    return bounded and abs(s2) < np.inf


#: the runs of :func:`sorted_mean`'s sum gathered and summed by numpy at once (half a megabyte of floats)
_MEAN_BLOCK = 1 << 16


def sorted_mean(values, order) -> float:
    """``values[order].mean()`` (float64 ``values``, an int64 ``order``) bit for bit, without the gathered
    copy: numpy's sum of a contiguous vector is pairwise (above 128 terms the first half, rounded down to a
    multiple of 8, and the rest summed apart and added; below, fixed blocks), and the sum of a run depends only
    on its length, so the halves are split here down to runs of at most :data:`_MEAN_BLOCK` values, each
    gathered into one reused buffer (:func:`dphist.partition.gather_run`) and summed by ``numpy.add.reduce``
    itself, and added as numpy adds them."""
    n = int(order.size)
    buffer = np.empty(min(n, _MEAN_BLOCK), dtype=values.dtype)

    def total(lo, m):
        if m <= _MEAN_BLOCK:    # a run gathered into the reused buffer (gather_run: the compiled gather)
            return float(np.add.reduce(gather_run(values, order, lo, buffer[:m])))
        half = m // 2
        half -= half % 8
        return total(lo, half) + total(lo + half, m - half)
    return float(np.float64(total(0, n)) / n)


def _width_one_wins(noisy, order, mean, bound, noise_each) -> bool:
    """Whether :func:`_first_min_width` of the prefix pairs of ``x = noisy[order]`` (``_centred_prefix_pairs``,
    ``mean`` its ``x.mean()``: :func:`sorted_mean`) returns 1 because every wider width stops at its first
    group, found in one pass over ``x`` with neither the pairs nor a second pass over them (``x`` gathered
    through ``order`` :data:`_MEAN_BLOCK` values at a time into one reused buffer, :func:`_width_one_block`:
    no sorted copy): the pairs' running sums formed as :func:`_prefix_pairs_into` forms them, w = 1's total
    summed as the search sums it (each position's SSE clipped at 0, in order, then ``n`` noise terms), and for
    every w >= 2 its first group's clipped SSE, which is the search's partial total of w after one group (pairs
    ``[0, w)``, ``0.0 +`` that SSE).  The search is taken only on bounded pairs (``_bounded``), so the same condition is
    required here.  When w = 1's total is finite, the search's best is that total after w = 1, and the best
    only decreases, so it is at most that total at every w >= 2; a width whose first group reaches w = 1's
    total reaches the best, stops there and leaves the best unchanged.  When every w >= 2 does (their minimum
    reaches it), by induction on w every one stops and the search returns 1.  False otherwise (the caller runs
    the search)."""
    state = np.array([0.0, 0.0, 0.0, 0.0, 0.0, np.inf, 1.0])
    n = int(order.size)
    buffer = np.empty(min(n, _MEAN_BLOCK), dtype=noisy.dtype)
    for lo in range(0, n, _MEAN_BLOCK):
        _width_one_block(gather_run(noisy, order, lo, buffer[:min(_MEAN_BLOCK, n - lo)]), lo, mean, bound, state)
    s2, total, first_min = state[1], state[4], state[5]
    total += n * (noise_each * 1.0)
    return bool(state[6]) and abs(s2) < np.inf and total < np.inf and first_min >= total


@njit(cache=True, nogil=True)
def _width_one_block(x, start, mean, bound, state):
    """:func:`_width_one_wins`' pass over the values at positions ``start``, ``start + 1``, ... (``x``), its
    running values carried in ``state``: the pairs' running sums ``s`` and ``s2``, the last row ``lo`` and
    ``lo2``, w = 1's total, the first groups' minimum and whether the sums are bounded (1.0 or 0.0); the same
    operations in the same order as one pass over all the values."""
    s, s2, lo, lo2, total, first_min = state[0], state[1], state[2], state[3], state[4], state[5]
    bounded = state[6] != 0.0
    first_i = 0
    if start == 0:
        d = x[0] - mean
        s, s2 = d, d * d
        bounded = abs(s) <= bound
        lo, lo2 = 0.0, 0.0                # the pairs' first row
        diff = s - lo
        total = 0.0 + max((s2 - lo2) - diff * diff * 1.0, 0.0)
        lo, lo2 = s, s2
        first_min = np.inf
        first_i = 1
    for k in range(first_i, x.size):
        i = start + k
        d = x[k] - mean
        s += d
        s2 += d * d
        bounded &= abs(s) <= bound
        diff = s - lo                     # w = 1: the group [i, i + 1)
        total += max((s2 - lo2) - diff * diff * 1.0, 0.0)
        lo, lo2 = s, s2
        head = s - 0.0                    # w = i + 1: its first group [0, i + 1), inv = 1.0 / w
        first = 0.0 + max((s2 - 0.0) - head * head * (1.0 / (i + 1)), 0.0)
        if first < first_min:
            first_min = first
    state[0], state[1], state[2], state[3], state[4], state[5] = s, s2, lo, lo2, total, first_min
    state[6] = 1.0 if bounded else 0.0


class FixedWidthPartitioner(Partitioner):
    """``gs.fixed-width``: groups of ``w`` consecutive bins in the current (sorted) order; free.

    Parameters
    ----------
    w : the group size; ``None`` (default) = the w minimising the estimated error (module docstring).
    corrected : subtract NoiseFirst's noise correction (w - 1) 2/eps_1^2 per group from the
        smoothing estimate (False by default; the notebook measures it).
    """

    name = "gs.fixed-width"
    citation = CITATION
    param_constraints = {"w": [None, Interval(int, 1, None)], "corrected": bool}

    def __init__(self, w: int | None = None, corrected: bool = False):
        self.w = None if w is None else int(w)
        self.corrected = bool(corrected)

    def partition(self, bins: Partition, ctx) -> Partition:
        if bins.n_groups != bins.n_bins:
            raise InvalidParameter(f"{self.name} groups single bins: use it on the initial singleton groups")
        w = self.w
        if w is None:
            if ctx.noisy is None or ctx.eps_in <= 0:
                raise InvalidParameter(f"{self.name} chooses w from H~: give the pipeline an initializer with "
                                       "gamma_in > 0, or pass w")
            if ctx.eps_f <= 0:
                raise InvalidParameter(f"{self.name} weighs the noise of the published averages: gamma_f must be > 0")
            noise_var_1 = 2.0 / ctx.eps_in**2 if self.corrected else 0.0
            noisy = np.ascontiguousarray(ctx.noisy, dtype=float)
            order = np.ascontiguousarray(bins.order, dtype=np.int64)
            if noise_var_1 == 0.0 and _width_one_wins(noisy, order, sorted_mean(noisy, order), _FINITE_BOUND,
                                                      2.0 / ctx.eps_f**2):
                w = 1     # the search's answer, in one pass through the order: no sorted copy of H~, no pairs
            else:
                values = bins.in_order(noisy)      # H~ in the sorted order (a gather)
                pairs, bounded = _centred_prefix_pairs(values)
                del values
                w = _best_width(pairs, ctx.eps_f, noise_var_1, bounded)
                del pairs
        return _fixed_width(bins, w)


def _fixed_width(bins: Partition, w: int) -> Partition:
    """Groups of ``w`` consecutive singletons of ``bins`` (the last one shorter): the partition
    ``bins.merge(np.r_[np.arange(0, n, w), n])`` makes, its bounds built directly (positions 0, w, 2w, ...,
    n: strictly increasing by construction); for ``w = 1`` that partition is ``bins`` itself (the same
    order, bounds equal to ``bins``' bounds, 0..n), handed on as it is (the kernel recognises it)."""
    n = bins.n_bins
    w = min(int(w), n)
    if w == 1:
        return bins
    bounds = np.arange(0, n + w, w, dtype=np.int64)
    bounds[-1] = n
    return Partition(bins.order, bounds, validate=False)
