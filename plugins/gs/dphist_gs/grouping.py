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
"""
from __future__ import annotations

import numpy as np
from numba import njit

from dphist import InvalidParameter, Partition, Partitioner
from dphist.params import Interval

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
    return _best_width(_centred_prefix_pairs(np.array(sorted_noisy, dtype=float)), eps_2, noise_var_1)


def _best_width(pp, eps_2: float, noise_var_1: float) -> int:
    noise_each = 2.0 / eps_2**2
    if noise_var_1 == 0.0 and _bounded(pp):
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


def _centred_prefix_pairs(x: np.ndarray) -> np.ndarray:
    """:func:`dphist.intervals.centred_prefix_sums` of the float vector ``x`` written side by side into one
    ``(n + 1, 2)`` array (the same sums: running sums, in order); ``x`` is the caller's to give up: it is
    centred and squared in place (memory)."""
    if x.ndim != 1 or x.size == 0:
        raise InvalidParameter("prefix sums need a non-empty 1-D vector of values")
    x -= x.mean()
    pp = np.zeros((x.size + 1, 2))
    np.cumsum(x, out=pp[1:, 0])
    np.multiply(x, x, out=x)
    np.cumsum(x, out=pp[1:, 1])
    return pp


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
            # H~ in the sorted order: a fresh array (a gather), given up to the prefix sums
            pairs = _centred_prefix_pairs(np.asarray(bins.in_order(ctx.noisy), dtype=float))
            w = _best_width(pairs, ctx.eps_f, 2.0 / ctx.eps_in**2 if self.corrected else 0.0)
            del pairs
        n = bins.n_bins
        cuts = np.r_[np.arange(0, n, min(w, n)), n]
        return bins.merge(cuts)
