"""AHP's greedy clustering (Zhang et al., SDM 2014, Algorithm 3).

Scanning the sorted noisy histogram left to right, bin x_j joins the current
cluster C iff

    err(C u {x_j}) < err(C) + err*(x_j)                        (Algorithm 3 line 8)

with err from Theorem 4.2 and err* the lower bound of :mod:`.cluster_error`.
The current cluster's mean and sum of squared deviations are updated in O(1)
(Welford's recurrences), so err(C u {x_j}) - err(C) = m/(m+1) (x_j - mean)^2 +
2/eps_2^2 (1/(m+1) - 1/m).

Only the comparison matters.  By default (``decide_early=True``) and on sorted
values, the kernel decides ``err*(x_j) > err(C u {x_j}) - err(C)`` by galloping
and branch and bound (:func:`.cluster_error.lower_bound_exceeds`), O(log n)
candidate evaluations in typical cases instead of the paper's scan of hundreds;
``decide_early=False`` computes err*(x_j) by the paper's scan with its early-stop
rule.  The two give identical clusters (a test checks this on many inputs).
Sequential by nature: a numba kernel.
"""
from __future__ import annotations

import numba
import numpy as np

from .cluster_error import (check_eps2, is_monotone, lower_bound_exceeds, run_ends, scan_lower_bound,
                            value_prefix)


@numba.njit(cache=True)
def _greedy_cuts(x, prefix, run_end, two_over_eps2, monotone, decide_early):
    n = x.shape[0]
    cuts = np.empty(n + 1, dtype=np.int64)
    k = 0
    cuts[k] = 0
    k += 1
    m = 1
    mean = x[0]
    ssd = 0.0                       # sum of squared deviations of the current cluster (its AE)
    for j in range(1, n):
        xj = x[j]
        d = xj - mean
        grown = ssd + m / (m + 1.0) * d * d + two_over_eps2 / (m + 1)   # err(C u {x_j})
        kept = ssd + two_over_eps2 / m                                  # err(C)
        target = grown - kept
        if decide_early and monotone:
            merge = lower_bound_exceeds(x, prefix, j, run_end, two_over_eps2, target)
        else:
            merge = scan_lower_bound(x, prefix, j, run_end, two_over_eps2, monotone) > target
        if merge:                   # err(C u x_j) < err(C) + err*(x_j)
            m += 1
            mean += d / m
            ssd += d * (xj - mean)
        else:                       # x_j opens a new cluster
            cuts[k] = j
            k += 1
            m = 1
            mean = xj
            ssd = 0.0
    cuts[k] = n
    k += 1
    return cuts[:k]


def greedy_cuts(values, eps_2, decide_early: bool = True) -> np.ndarray:
    """Cluster boundaries ``0 = c_0 < c_1 < ... < c_m = n`` found by Algorithm 3.

    ``decide_early=False`` evaluates err*(x_j) by the paper's scan at every step
    (its literal procedure); the clusters are the same, only slower.
    """
    x = np.ascontiguousarray(values, dtype=float)
    if x.size == 0:
        return np.zeros(1, dtype=np.int64)
    two = 2.0 / check_eps2(eps_2) ** 2
    return _greedy_cuts(x, value_prefix(x), run_ends(x), two, is_monotone(x), bool(decide_early))
