"""Qardaji, Yang, Li's choice of the branching factor (Hb), PVLDB 6(14), 2013.

Qardaji et al. (Section 3, their Eq. 3 as cited by the DPBench and ektelo
reference implementations) bound the average error of a range query on a
``b``-ary tree of height ``h = ceil(log_b N)`` with constrained inference, up
to a factor that does not depend on ``b``, by

    V(b) = (b - 1) h**3 - 2 (b + 1) h**2 / 3,

and Hb uses the ``b`` in ``2..N`` minimising ``V(b)`` (ties: the smallest
``b``).  We evaluate ``V`` for all ``b`` at once with numpy and compute ``h``
with integer arithmetic (the smallest ``h`` with ``b**h >= N``) rather than a
floating-point logarithm, which can round ``log_b(b**h)`` up to ``h + 1``.
The choice depends only on the public domain size.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from dphist.errors import InvalidParameter


def tree_heights(n: int, b: np.ndarray) -> np.ndarray:
    """Smallest ``h`` with ``b**h >= n`` for every ``b`` (vectorised, exact)."""
    b = np.asarray(b, dtype=np.int64)
    h = np.ceil(np.log(n) / np.log(b)).astype(np.int64)
    h = np.maximum(h, 0)
    # fix floating-point misses in either direction (at most one step)
    too_low = b.astype(float) ** h < n
    h = h + too_low
    too_high = (h > 0) & (b.astype(float) ** (h - 1) >= n)
    return h - too_high


def qardaji_variance(n: int, b) -> np.ndarray:
    """``(b-1) h**3 - 2 (b+1) h**2 / 3`` with ``h = ceil(log_b n)`` (Qardaji et al. 2013, Eq. 3)."""
    b = np.asarray(b, dtype=np.int64)
    h = tree_heights(n, b).astype(float)
    return (b - 1) * h ** 3 - 2.0 * (b + 1) * h ** 2 / 3.0


def best_branching(n: int) -> int:
    """The branching factor Hb uses for a domain of ``n`` leaves."""
    n = int(n)
    if n < 1:
        raise InvalidParameter(f"the domain must have at least one bin, got {n}")
    return _best_branching(n)


@lru_cache(maxsize=256)
def _best_branching(n: int) -> int:
    # a function of the public domain size alone, evaluated over all b in O(n): remembered, since every
    # run of Hb (thousands in an audit) asks for the same few sizes
    if n <= 2:
        return 2
    b = np.arange(2, n + 1, dtype=np.int64)
    return int(b[np.argmin(qardaji_variance(n, b))])
