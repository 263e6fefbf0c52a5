"""Lower confidence bounds on epsilon from event counts (Clopper-Pearson, Bonferroni).

The test.  A mechanism ``M`` is epsilon-DP when for every neighbouring pair
``(x, x')`` and every output event ``E``

    P[M(x) in E] <= exp(epsilon) * P[M(x') in E]                       (1)

so ``log(p1 / p2) <= epsilon`` with ``p1 = P[M(x) in E]``, ``p2 = P[M(x') in E]``.
From ``k1`` hits in ``n1`` independent runs on ``x`` and ``k2`` in ``n2`` on ``x'``,
the one-sided Clopper-Pearson (1934) bounds

    p1 >= L = Beta^{-1}(a; k1, n1 - k1 + 1)        (L = 0 when k1 = 0)
    p2 <= U = Beta^{-1}(1 - a; k2 + 1, n2 - k2)    (U = 1 when k2 = n2)

each fail with probability at most ``a``; both hold with probability
``>= 1 - 2a`` (union bound), and then ``log(L / U) <= log(p1 / p2)``.  So
``eps_lb = log(L / U)`` is a lower confidence bound on the privacy loss of
``M`` at level ``2a``.  The event must be fixed before the ``k``'s are counted
(the auditor chooses it on a separate, independent batch of runs).

Multiple testing.  The auditor makes ``m`` such tests (pairs x event families
x 2 directions, a number fixed before any run) and reports the largest bound.
With ``a = alpha / (2 m)`` (Bonferroni) the probability that ANY of the ``m``
bounds exceeds the true loss is at most ``alpha``: a correct epsilon-DP
mechanism fails the audit with probability at most ``alpha``, whatever
events were chosen.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import beta


def cp_lower(k, n, a):
    """One-sided Clopper-Pearson lower bound on a binomial proportion (level ``a``); vectorised."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        out = beta.ppf(a, k, n - k + 1)
    return np.where(k <= 0, 0.0, out)


def cp_upper(k, n, a):
    """One-sided Clopper-Pearson upper bound on a binomial proportion (level ``a``); vectorised."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        out = beta.ppf(1 - a, k + 1, n - k)
    return np.where(k >= n, 1.0, out)


def epsilon_lower_bound(k1, n1, k2, n2, a):
    """``log(L / U)`` (see the module docstring); ``-inf`` when ``L = 0``.  Vectorised."""
    lo = cp_lower(k1, n1, a)
    hi = cp_upper(k2, n2, a)
    with np.errstate(divide="ignore"):
        return np.log(lo) - np.log(hi)


def per_side_level(alpha: float, tests: int) -> float:
    """The level ``a`` of each one-sided bound: ``alpha / (2 * tests)`` (Bonferroni, union of two bounds)."""
    if tests < 1:
        raise ValueError("at least one test")
    return alpha / (2.0 * tests)


def detectable_epsilon(n: int, a: float) -> float:
    """The largest bound ``n`` runs per side can ever give: ``log(L(n of n) / U(0 of n))``.

    An audit with too few samples cannot certify a loss above this, however
    badly a mechanism leaks; the report states it.
    """
    lo = a ** (1.0 / n)               # CP lower bound of n hits in n runs
    hi = 1.0 - a ** (1.0 / n)         # CP upper bound of 0 hits in n runs
    return math.log(lo / hi)
