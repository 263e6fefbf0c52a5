"""Optimal groupings of the sorted noisy histogram (Zhang et al., SDM 2014, Section 4.2).

The objective is err(H~) = sum over groups of err(C) (Theorem 5.2), a sum of
per-group costs over consecutive segments, solved by the core's segmentation engine
(:mod:`dphist.segmentation`) with the cost of :func:`.group_error.group_cost`:

* **optimal, any k** (``optimal_cuts``): the segmentation DP
  E(0) = 0,  E(j) = min_{i<j} E(i) + err(x_{i+1..j})
  finds the minimum over *all* segmentations, whatever their number of groups,
  in O(n^2) (``segmentation.optimal``).  The paper runs a k-constrained DP for every
  k = 1..n (O(n^4)); min_k min_{k-segmentations} = min_{all segmentations}, so both give
  the same optimum (derived and checked against brute force in notebooks/ahp.ipynb).
* **k groups** (``k_group_cuts``): the paper's recurrence
  err*(H_{1,j}, m) = min_{l<j} err*(H_{1,l}, m-1) + err(H_{l+1,j}), O(k n^2), or
  O(k n log n) on sorted values by the divide-and-conquer speed-up for Monge costs
  (``segmentation.k_groups``).  The paper calls err*(., m) "at most m groups" but its
  recurrence (started from err*(H_{1,j}, 1) = err(H_{1,j})) yields exactly m groups; we
  follow the recurrence.  With "at most", Algorithm 2's argmin would always pick the
  largest k (more freedom never hurts).
* **empirical** (Algorithm 2): k from four rules of thumb, the best of the four.
"""
from __future__ import annotations

import math

import numpy as np

from dphist import InvalidParameter, segmentation

from .group_error import group_cost

RULES = ("sqrt", "sturges", "doane", "rice")


def optimal_cuts(values, eps_2) -> tuple[np.ndarray, float]:
    """The segmentation of least total error (Theorem 5.2) and that error; O(n^2)."""
    found = segmentation.optimal(group_cost(values, eps_2))
    return found.bounds, found.cost


def k_group_cuts(values, eps_2, ks, monotone: bool | None = None) -> dict[int, tuple[np.ndarray, float]]:
    """For each k in ``ks``: the best segmentation into exactly k groups and its error.

    One DP up to max(ks) serves every k: O(max(ks) n log n) on monotone (sorted)
    values, O(max(ks) n^2) otherwise (``monotone=False`` forces the plain DP,
    ``monotone=True`` asserts the divide-and-conquer speed-up without checking).
    """
    n = np.size(values)
    ks = sorted({int(k) for k in ks})
    if not ks or ks[0] < 1 or ks[-1] > n:
        raise InvalidParameter(f"numbers of groups must lie in [1, {n}], got {ks}")
    found = segmentation.k_groups(group_cost(values, eps_2), ks, monge=monotone)
    return {k: (s.bounds, s.cost) for k, s in found.items()}


def rule_of_thumb(rule: str, values) -> int:
    """The number of groups k of one of Algorithm 2's rules (clipped to [1, n]).

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
        raise InvalidParameter("cannot choose a number of groups for 0 values")
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
    found = k_group_cuts(values, eps_2, ks.values(), monotone=monotone)
    best_k = min(found, key=lambda k: (found[k][1], k))
    cuts, err = found[best_k]
    return cuts, err, ks
