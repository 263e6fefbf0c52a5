"""The error of a cluster (Theorem 4.2) and the greedy lower bound err* (Section 4.2).

A cluster C of the sorted noisy histogram is published as its true mean plus
Lap(1/eps_2)/|C| on every bin (Algorithm 1 line 9), so (Theorem 4.2)

    err(C) = sum_{x in C} (x - mean(C))^2  +  2 / (|C| eps_2^2)        (AE + LE)

AHP evaluates it on the *noisy* values (the true ones are private).  With prefix
sums S1, S2 of the values and of their squares every cluster costs O(1):
AE(i..j) = S2 - S1^2 / m.  We centre the values first (AE is shift invariant) to
keep the subtraction well conditioned.

The greedy algorithm needs a lower bound on the error that bin j will carry if it
starts a new cluster C_{j,l} = {x_j, ..., x_l}:

    err*(x_j) = min_{l >= j} f_j(l),   f_j(l) = (x_j - mean(C_{j,l}))^2 + 2 / (|C_{j,l}|^2 eps_2^2)

(its own squared deviation plus its share of the cluster's Laplace variance).  On
sorted values x_j is an extreme point of every C_{j,l}, so the first term grows
with l and the second shrinks; the paper stops the scan at the first l with

    AE(l+1) - AE(l) >= LE(l) - LE_min,   LE_min = 2 / ((n-j+1)^2 eps_2^2).

Then every l' > l has f_j(l') >= AE(l+1) + LE_min >= f_j(l): the minimum is among
the l already seen.  The paper states the result as f_j(l) at the stopping point;
f_j need not be unimodal, so we return the running minimum (which is what the
argument proves, and what DPBench's ``err_star`` computes too).  A run of bins
equal to x_j (e.g. thresholded zeros) has AE = 0, so its minimum is at its end:
we jump there directly, an exact shortcut that keeps long zero runs O(1).
On values that are not monotone the stop rule is not valid; we then scan every l.

The greedy only needs to know whether err*(x_j) exceeds a target;
:func:`lower_bound_exceeds` answers that on sorted values with O(log n) candidate
evaluations in typical cases (galloping on the monotone AE term, then branch and
bound), which is what makes Algorithm 3 fast at n = 2^20.  Means come from prefix
sums of the values, shared by both routines so that they compare identical numbers.
"""
from __future__ import annotations

import numba
import numpy as np

from dphist import InvalidParameter
from dphist.intervals import centred_prefix_sums, interval_sse


def check_eps2(eps_2) -> float:
    eps_2 = float(eps_2)
    if not np.isfinite(eps_2) or eps_2 <= 0:
        raise InvalidParameter(f"AHP's cluster error needs eps_2 > 0 (the finalizer's share), got {eps_2}")
    return eps_2


# S1, S2 with a leading 0 of the centred values (AE is shift invariant): the core's interval statistics.
prefix_sums = centred_prefix_sums


def cluster_errors(values, bounds, eps_2) -> np.ndarray:
    """err(C) of Theorem 4.2 for the clusters ``values[bounds[g]:bounds[g+1]]`` (O(1) each)."""
    eps_2 = check_eps2(eps_2)
    s1, s2 = centred_prefix_sums(values)
    b = np.asarray(bounds, dtype=np.int64)
    m = np.diff(b).astype(float)
    return interval_sse(b[:-1], b[1:], s1, s2) + 2.0 / (m * eps_2 ** 2)


def total_error(values, bounds, eps_2) -> float:
    """Theorem 5.2: the expected squared error of the whole release = sum of err(C)."""
    return float(cluster_errors(values, bounds, eps_2).sum())


def run_ends(values) -> np.ndarray:
    """For each position, the last position of its run of equal values."""
    x = np.asarray(values, dtype=float)
    n = x.size
    is_end = np.r_[x[1:] != x[:-1], True]
    ends = np.flatnonzero(is_end)
    return ends[np.searchsorted(ends, np.arange(n))]


def is_monotone(values) -> bool:
    d = np.diff(np.asarray(values, dtype=float))
    return bool(np.all(d >= 0) or np.all(d <= 0))


@numba.njit(cache=True, inline="always")
def candidate_error(x, prefix, j, l, two_over_eps2):
    """f_j(l) = (x_j - mean(x_j..x_l))^2 + 2 / (m^2 eps_2^2), m = l - j + 1 (O(1) from prefix sums)."""
    m = l - j + 1
    d = x[j] - (prefix[l + 1] - prefix[j]) / m
    return d * d + two_over_eps2 / (m * m)


@numba.njit(cache=True, inline="always")
def _deviation(x, prefix, j, l):
    m = l - j + 1
    d = x[j] - (prefix[l + 1] - prefix[j]) / m
    return d * d


@numba.njit(cache=True)
def scan_lower_bound(x, prefix, j, run_end, two_over_eps2, monotone):
    """err*(x_j) by the paper's scan: candidates in increasing size, early stop on sorted values."""
    n = x.shape[0]
    rem = n - j
    le_min = two_over_eps2 / (rem * rem)
    l = run_end[j]              # x_j..x_l are equal to x_j: AE = 0 and f falls, so start at the run's end
    m = l - j + 1
    ae = 0.0
    le = two_over_eps2 / (m * m)
    best = ae + le
    while l + 1 < n:
        ae_next = _deviation(x, prefix, j, l + 1)
        if monotone and ae_next - ae >= le - le_min:   # the paper's stop rule
            break
        l += 1
        m += 1
        ae = ae_next
        le = two_over_eps2 / (m * m)
        if ae + le < best:
            best = ae + le
    return best


@numba.njit(cache=True)
def lower_bound_exceeds(x, prefix, j, run_end, two_over_eps2, target):
    """Whether err*(x_j) > target, on sorted values, without computing err* itself.

    With A(l) = (x_j - mean_{j..l})^2 non-decreasing and B(l) = 2/(m^2 eps_2^2) decreasing:
    beyond the last l with A(l) <= target - B_min every candidate exceeds the target (found by
    galloping, O(log n)); below it, an interval [a, b] of candidates is bounded from below by
    A(a) + B(b) and is discarded when that exceeds the target, else split (branch and bound).
    The answer equals ``scan_lower_bound(...) > target`` (a test checks the clusters agree).
    """
    n = x.shape[0]
    rem = n - j
    le_min = two_over_eps2 / (rem * rem)
    lo = run_end[j]
    m0 = lo - j + 1
    if two_over_eps2 / (m0 * m0) <= target:     # the run itself is a witness: err* <= target
        return False
    limit = target - le_min
    if limit < 0.0:                             # every candidate has f >= B_min > target
        return True
    # gallop: hi = last l >= lo with A(l) <= limit (A(lo) = 0 <= limit)
    hi = lo
    step = 1
    while hi + step < n and _deviation(x, prefix, j, hi + step) <= limit:
        hi += step
        step *= 2
    while step > 1:
        step //= 2
        if hi + step < n and _deviation(x, prefix, j, hi + step) <= limit:
            hi += step
    # branch and bound over [lo + 1, hi] (lo itself was checked above)
    if hi <= lo:
        return True
    stack = np.empty((128, 2), dtype=np.int64)
    top = 0
    stack[0, 0] = lo + 1
    stack[0, 1] = hi
    top = 1
    while top > 0:
        top -= 1
        a = stack[top, 0]
        b = stack[top, 1]
        if candidate_error(x, prefix, j, b, two_over_eps2) <= target:
            return False
        mb = b - j + 1
        if _deviation(x, prefix, j, a) + two_over_eps2 / (mb * mb) > target:
            continue
        if b - a < 8:
            for l in range(a, b):
                if candidate_error(x, prefix, j, l, two_over_eps2) <= target:
                    return False
            continue
        mid = (a + b) // 2
        stack[top, 0] = a
        stack[top, 1] = mid
        top += 1
        stack[top, 0] = mid + 1
        stack[top, 1] = b - 1
        top += 1
    return True


def value_prefix(values) -> np.ndarray:
    """Prefix sums of the values with a leading 0 (the mean of x_j..x_l in O(1))."""
    return np.concatenate(([0.0], np.cumsum(np.asarray(values, dtype=float))))


@numba.njit(cache=True)
def _all_lower_bounds(x, prefix, run_end, two_over_eps2, monotone):
    n = x.shape[0]
    out = np.empty(n)
    for j in range(n):
        out[j] = scan_lower_bound(x, prefix, j, run_end, two_over_eps2, monotone)
    return out


def lower_bounds(values, eps_2, early_stop: bool = True) -> np.ndarray:
    """err*(x_j) for every position j (the paper's scan; ``early_stop`` uses its stop rule)."""
    x = np.ascontiguousarray(values, dtype=float)
    two = 2.0 / check_eps2(eps_2) ** 2
    return _all_lower_bounds(x, value_prefix(x), run_ends(x), two, bool(early_stop and is_monotone(x)))


def lower_bound_exhaustive(values, j: int, eps_2) -> float:
    """err*(x_j) by evaluating f_j(l) at every l >= j (no early stop; for checks)."""
    x = np.asarray(values, dtype=float)[j:]
    m = np.arange(1, x.size + 1)
    means = np.cumsum(x) / m
    return float(np.min((x[0] - means) ** 2 + 2.0 / (m * m * check_eps2(eps_2) ** 2)))
