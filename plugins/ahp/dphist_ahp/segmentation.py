"""Optimal clusterings of the sorted noisy histogram (Zhang et al., SDM 2014, Section 4.2).

The objective is err(H~) = sum over clusters of err(C) (Theorem 5.2), a sum of
per-cluster costs over consecutive segments.  Hence

* **optimal, any k** (``optimal_cuts``): the segmentation DP
  E(0) = 0,  E(j) = min_{i<j} E(i) + err(x_{i+1..j})
  finds the minimum over *all* segmentations, whatever their number of clusters,
  in O(n^2).  The paper runs a k-constrained DP for every k = 1..n (O(n^4));
  min_k min_{k-segmentations} = min_{all segmentations}, so both give the same optimum
  (derived and checked against brute force in notebooks/ahp.ipynb).
* **k clusters** (``k_cluster_cuts``): the paper's recurrence
  err*(H_{1,j}, m) = min_{l<j} err*(H_{1,l}, m-1) + err(H_{l+1,j}), O(k n^2), or
  O(k n log n) on sorted values by the divide-and-conquer speed-up for Monge costs.  The paper
  calls err*(., m) "at most m clusters" but its recurrence (started from err*(H_{1,j}, 1) =
  err(H_{1,j})) yields exactly m clusters; we follow the recurrence.  With "at most",
  Algorithm 2's argmin would always pick the largest k (more freedom never hurts).
* **empirical** (Algorithm 2): k from four rules of thumb, the best of the four.

Every cluster cost is O(1) from prefix sums (:mod:`.cluster_error`).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from dphist import InvalidParameter

from .cluster_error import check_eps2, is_monotone, prefix_sums

RULES = ("sqrt", "sturges", "doane", "rice")


@numba.njit(cache=True, inline="always")
def _cost(s1, s2, i, j, two_over_eps2):
    m = j - i
    t = s1[j] - s1[i]
    ae = s2[j] - s2[i] - t * t / m
    if ae < 0.0:
        ae = 0.0
    return ae + two_over_eps2 / m


@numba.njit(cache=True)
def _optimal_prev(s1, s2, two_over_eps2):
    n = s1.shape[0] - 1
    best = np.empty(n + 1)
    prev = np.empty(n + 1, dtype=np.int64)
    best[0] = 0.0
    prev[0] = 0
    for j in range(1, n + 1):
        b = np.inf
        arg = 0
        for i in range(j):
            v = best[i] + _cost(s1, s2, i, j, two_over_eps2)
            if v < b:
                b = v
                arg = i
        best[j] = b
        prev[j] = arg
    return best, prev


@numba.njit(cache=True)
def _k_dp(s1, s2, two_over_eps2, k_max, monotone):
    """Exactly-m-cluster DP for m = 1..k_max.

    ``best[m]`` is the least error of all n values in exactly m clusters and
    ``prev[m, j]`` the start of the last cluster of the best m-clustering of x_1..x_j.
    On monotone values the cost is a Monge array (the sum of squared deviations of
    sorted values, and 1/length, a convex function of the length, both satisfy the
    quadrangle inequality), so the optimal split point is non-decreasing in j and
    each layer is filled by divide and conquer in O(n log n) instead of O(n^2).
    """
    n = s1.shape[0] - 1
    below = np.full(n + 1, np.inf)          # layer m-1
    layer = np.full(n + 1, np.inf)          # layer m
    prev = np.zeros((k_max + 1, n + 1), dtype=np.int32)
    best = np.full(k_max + 1, np.inf)
    for j in range(1, n + 1):
        below[j] = _cost(s1, s2, 0, j, two_over_eps2)
    best[1] = below[n]
    stack = np.empty((4 * (n + 2), 4), dtype=np.int64)
    for m in range(2, k_max + 1):
        layer[:] = np.inf
        if monotone:
            top = 0
            stack[0, 0] = m
            stack[0, 1] = n
            stack[0, 2] = m - 1
            stack[0, 3] = n - 1
            top = 1
            while top > 0:
                top -= 1
                lo = stack[top, 0]
                hi = stack[top, 1]
                opt_lo = stack[top, 2]
                opt_hi = stack[top, 3]
                if lo > hi:
                    continue
                mid = (lo + hi) // 2
                b = np.inf
                arg = opt_lo
                stop = min(mid - 1, opt_hi)
                for i in range(opt_lo, stop + 1):
                    v = below[i] + _cost(s1, s2, i, mid, two_over_eps2)
                    if v < b:
                        b = v
                        arg = i
                layer[mid] = b
                prev[m, mid] = arg
                stack[top, 0] = lo
                stack[top, 1] = mid - 1
                stack[top, 2] = opt_lo
                stack[top, 3] = arg
                top += 1
                stack[top, 0] = mid + 1
                stack[top, 1] = hi
                stack[top, 2] = arg
                stack[top, 3] = opt_hi
                top += 1
        else:
            for j in range(m, n + 1):
                b = np.inf
                arg = m - 1
                for i in range(m - 1, j):
                    v = below[i] + _cost(s1, s2, i, j, two_over_eps2)
                    if v < b:
                        b = v
                        arg = i
                layer[j] = b
                prev[m, j] = arg
        best[m] = layer[n]
        below, layer = layer, below
    return best, prev


def _backtrack(prev_of, n: int) -> np.ndarray:
    cuts = [n]
    j = n
    while j > 0:
        j = prev_of(j)
        cuts.append(j)
    return np.array(cuts[::-1], dtype=np.int64)


def optimal_cuts(values, eps_2) -> tuple[np.ndarray, float]:
    """The segmentation of least total error (Theorem 5.2) and that error; O(n^2)."""
    two = 2.0 / check_eps2(eps_2) ** 2
    s1, s2 = prefix_sums(values)
    best, prev = _optimal_prev(s1, s2, two)
    n = s1.size - 1
    return _backtrack(lambda j: int(prev[j]), n), float(best[n])


def k_cluster_cuts(values, eps_2, ks, monotone: bool | None = None) -> dict[int, tuple[np.ndarray, float]]:
    """For each k in ``ks``: the best segmentation into exactly k clusters and its error.

    One DP up to max(ks) serves every k: O(max(ks) n log n) on monotone (sorted)
    values, O(max(ks) n^2) otherwise (``monotone=False`` forces the plain DP).
    """
    two = 2.0 / check_eps2(eps_2) ** 2
    s1, s2 = prefix_sums(values)
    n = s1.size - 1
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1 or ks[-1] > n:
        raise InvalidParameter(f"numbers of clusters must lie in [1, {n}], got {ks}")
    if monotone is None:
        monotone = is_monotone(values)
    best, prev = _k_dp(s1, s2, two, ks[-1], bool(monotone))
    out = {}
    for k in ks:
        cuts = [n]
        j, m = n, k
        while m > 0:
            j = int(prev[m, j]) if m > 1 else 0
            m -= 1
            cuts.append(j)
        out[k] = (np.array(cuts[::-1], dtype=np.int64), float(best[k]))
    return out


def rule_of_thumb(rule: str, values) -> int:
    """The number of clusters k of one of Algorithm 2's rules (clipped to [1, n]).

    * ``sqrt``: ceil(sqrt(n));  * ``sturges``: ceil(1 + log2 n)  (Sturges 1926);
    * ``rice``: ceil(2 n^(1/3));
    * ``doane``: ceil(1 + log2 n + log2(1 + |g1| / sigma_g1)), g1 the sample skewness
      m3 / m2^(3/2) of the noisy values, sigma_g1 = sqrt(6(n-2) / ((n+1)(n+3))) (Doane 1976).
      The paper prints s = |sum (x-mean)^3 / (sum (x-mean)^2)^(3/2)|^(1/3), which is not the
      skewness (no sqrt(n) factor, an extra cube root); we follow Doane's formula (see
      the notebook).  For n < 3 the skewness is undefined and we use Sturges.

    The paper leaves the rounding of sqrt(n) and of Doane's value open; we round up,
    as it does for the other two rules.  All statistics are of noisy values: free.
    """
    x = np.asarray(values, dtype=float)
    n = x.size
    if n < 1:
        raise InvalidParameter("cannot choose a number of clusters for 0 values")
    if rule == "sqrt":
        k = math.ceil(math.sqrt(n))
    elif rule == "sturges":
        k = math.ceil(1 + math.log2(n))
    elif rule == "rice":
        k = math.ceil(2 * n ** (1 / 3))
    elif rule == "doane":
        if n < 3:
            return rule_of_thumb("sturges", x)
        dev = x - x.mean()
        m2 = float(np.mean(dev ** 2))
        g1 = float(np.mean(dev ** 3)) / m2 ** 1.5 if m2 > 0 else 0.0
        sigma = math.sqrt(6 * (n - 2) / ((n + 1) * (n + 3)))
        k = math.ceil(1 + math.log2(n) + math.log2(1 + abs(g1) / sigma))
    else:
        raise InvalidParameter(f"unknown rule of thumb {rule!r}; choose one of {', '.join(RULES)} or 'all'")
    return int(min(max(k, 1), n))


def empirical_cuts(values, eps_2, rules=RULES, monotone: bool | None = None
                   ) -> tuple[np.ndarray, float, dict[str, int]]:
    """Algorithm 2: the k-constrained optimum for each rule's k; the best of them."""
    ks = {r: rule_of_thumb(r, values) for r in rules}
    found = k_cluster_cuts(values, eps_2, ks.values(), monotone=monotone)
    best_k = min(found, key=lambda k: (found[k][1], k))
    cuts, err = found[best_k]
    return cuts, err, ks
