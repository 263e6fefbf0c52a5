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
"""
from __future__ import annotations

import numba
import numpy as np

from dphist import InvalidParameter


def check_eps2(eps_2) -> float:
    eps_2 = float(eps_2)
    if not np.isfinite(eps_2) or eps_2 <= 0:
        raise InvalidParameter(f"AHP's cluster error needs eps_2 > 0 (the finalizer's share), got {eps_2}")
    return eps_2


def prefix_sums(values) -> tuple[np.ndarray, np.ndarray]:
    """S1, S2 with a leading 0, of the centred values (AE is shift invariant)."""
    x = np.asarray(values, dtype=float)
    x = x - x.mean() if x.size else x
    return np.concatenate(([0.0], np.cumsum(x))), np.concatenate(([0.0], np.cumsum(x * x)))


def cluster_errors(values, bounds, eps_2) -> np.ndarray:
    """err(C) of Theorem 4.2 for the clusters ``values[bounds[g]:bounds[g+1]]`` (O(1) each)."""
    eps_2 = check_eps2(eps_2)
    s1, s2 = prefix_sums(values)
    b = np.asarray(bounds, dtype=np.int64)
    m = np.diff(b).astype(float)
    sums = s1[b[1:]] - s1[b[:-1]]
    ae = np.maximum(s2[b[1:]] - s2[b[:-1]] - sums * sums / m, 0.0)
    return ae + 2.0 / (m * eps_2 ** 2)


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


@numba.njit(cache=True)
def scan_lower_bound(x, j, run_end, two_over_eps2, monotone, target):
    """err*(x_j), or as much of the scan as decides ``err*(x_j) > target``.

    ``target = nan`` disables the decision shortcut (returns err* exactly).  With a
    finite target the scan also stops once the answer is known: some f_j(l) <= target
    (then err* <= target), or, on monotone values, AE(l) + LE_min > target (then every
    later f_j exceeds target too).  Either way ``result > target`` equals
    ``err*(x_j) > target``.
    """
    n = x.shape[0]
    xj = x[j]
    rem = n - j
    le_min = two_over_eps2 / (rem * rem)
    l = run_end[j]
    m = l - j + 1
    total = xj * m              # the run holds m copies of x_j: AE = 0
    ae = 0.0
    le = two_over_eps2 / (m * m)
    best = ae + le
    while True:
        if best <= target:                 # decided: err* <= target
            return best
        if monotone and ae + le_min > target:  # decided: every f_j(l') > target
            return best
        if l + 1 >= n:
            return best
        total_next = total + x[l + 1]
        d = xj - total_next / (m + 1)
        ae_next = d * d
        if monotone and ae_next - ae >= le - le_min:   # the paper's stop rule
            return best
        l += 1
        m += 1
        total = total_next
        ae = ae_next
        le = two_over_eps2 / (m * m)
        f = ae + le
        if f < best:
            best = f


@numba.njit(cache=True)
def _all_lower_bounds(x, run_end, two_over_eps2, monotone):
    n = x.shape[0]
    out = np.empty(n)
    for j in range(n):
        out[j] = scan_lower_bound(x, j, run_end, two_over_eps2, monotone, np.nan)
    return out


def lower_bounds(values, eps_2, early_stop: bool = True) -> np.ndarray:
    """err*(x_j) for every position j (the paper's scan; ``early_stop`` uses its stop rule)."""
    x = np.ascontiguousarray(values, dtype=float)
    two = 2.0 / check_eps2(eps_2) ** 2
    return _all_lower_bounds(x, run_ends(x), two, bool(early_stop and is_monotone(x)))


def lower_bound_exhaustive(values, j: int, eps_2) -> float:
    """err*(x_j) by evaluating f_j(l) at every l >= j (no early stop; for checks)."""
    x = np.asarray(values, dtype=float)[j:]
    m = np.arange(1, x.size + 1)
    means = np.cumsum(x) / m
    return float(np.min((x[0] - means) ** 2 + 2.0 / (m * m * check_eps2(eps_2) ** 2)))
