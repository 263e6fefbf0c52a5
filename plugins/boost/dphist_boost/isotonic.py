"""Isotonic regression for unattributed histograms (Hay et al. 2010, Section 3.1).

Given the noisy sorted counts ``s~``, ``S-bar`` is the closest non-decreasing
sequence in L2 (Theorem 1).  :func:`pava` computes it with the
pool-adjacent-violators algorithm (Barlow et al. 1972, the linear-time method
the paper cites): scan left to right keeping a stack of blocks, each with its
mean and size; when the newest block's mean is below the previous one's, the
two are pooled.  Each element is pushed once and pooled at most once, so the
scan is O(n).  The scan is sequential, so it is compiled with numba.

:func:`minmax_isotonic` evaluates Theorem 1's min-max formulas directly
(O(n**2) memory; for checking small inputs only).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from dphist.errors import InvalidParameter


@njit(cache=True)
def _pava_kernel(y):  # pragma: no cover - compiled
    n = y.size
    sums = np.empty(n)
    sizes = np.empty(n, dtype=np.int64)
    top = -1
    for i in range(n):
        top += 1
        sums[top] = y[i]
        sizes[top] = 1
        # pool while the last block's mean is below the previous block's mean
        while top > 0 and sums[top] * sizes[top - 1] < sums[top - 1] * sizes[top]:
            sums[top - 1] += sums[top]
            sizes[top - 1] += sizes[top]
            top -= 1
    out = np.empty(n)
    pos = 0
    for b in range(top + 1):
        mean = sums[b] / sizes[b]
        for _ in range(sizes[b]):
            out[pos] = mean
            pos += 1
    return out


def pava(values) -> np.ndarray:
    """The L2-closest non-decreasing sequence to ``values`` (Hay et al. Theorem 1), O(n).

    Post-processing of a noisy answer (free).
    """
    y = np.ascontiguousarray(values, dtype=np.float64)
    if y.ndim != 1:
        raise InvalidParameter(f"isotonic regression needs a 1-D sequence, got shape {y.shape}")
    if y.size and not np.all(np.isfinite(y)):
        raise InvalidParameter("isotonic regression needs finite values")
    if y.size == 0:
        return y.copy()
    return _pava_kernel(y)


def minmax_isotonic(values) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 1 as printed: ``L_k = min_{j>=k} max_{i<=j} M[i,j]`` and ``U_k = max_{i<=k} min_{j>=i} M[i,j]``.

    ``M[i, j]`` is the mean of ``values[i..j]``.  Dense O(n**2); for small n.
    """
    y = np.asarray(values, dtype=float)
    n = y.size
    p = np.concatenate(([0.0], np.cumsum(y)))
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        M = (p[j + 1] - p[i]) / (j - i + 1)
    valid = j >= i
    col_max = np.where(valid, M, -np.inf).max(axis=0)       # max_{i<=j} M[i, j], per j
    L = np.minimum.accumulate(col_max[::-1])[::-1]           # min over j >= k
    row_min = np.where(valid, M, np.inf).min(axis=1)        # min_{j>=i} M[i, j], per i
    U = np.maximum.accumulate(row_min)                       # max over i <= k
    return L, U


def sort_and_round(values) -> np.ndarray:
    """Hay et al.'s baseline S~_r: sort, then round to the nearest non-negative integer (free)."""
    return np.clip(np.rint(np.sort(np.asarray(values, dtype=float))), 0.0, None)
