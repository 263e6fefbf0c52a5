"""The workload Gram matrix ``G = W^T W`` of a 1-D range workload, applied without forming ``W``.

Everything the optimiser, the lower bound and the variances need from a workload ``W`` (one row
per range query, one column per bin) is its Gram matrix ``G = W^T W``: ``G[i, j]`` counts the
queries that hold both bin ``i`` and bin ``j``.  Three forms, each applying ``G`` to an ``n x k``
block in O((n + m) k) and never materialising the ``n(n+1)/2`` ranges of the all-range workload:

* prefix ``[0, t)``, t = 1..n: ``G[i, j] = n - max(i, j)`` (bins from 0).  ``G B`` is a suffix sum
  of a prefix sum of ``B``: ``sum_{t >= i} sum_{j <= t} B[j]``.
* all ranges ``[lo, hi)``: ``G[i, j] = (min(i, j) + 1)(n - max(i, j))``: ``lo`` takes the
  ``min + 1`` values ``0..min`` and ``hi`` the ``n - max`` values ``max + 1..n``.  With the prefix
  sums ``P`` of ``B``, ``(G B)[i] = (i + 1) sum_{h > i} P[h] - (n - i) sum_{l <= i} P[l]``.
* any explicit list of ``m`` ranges: ``W B`` from prefix sums (O(m k)), then ``W^T Y`` by a sparse
  difference matrix and a reverse cumulative sum (O((n + m) k)).

Eigenvalues (for the SVD bound) in closed form for the two standard workloads, checked against a
dense eigendecomposition in ``plugins/hdmm/tests`` and ``notebooks/hdmm.ipynb``:

* all ranges: ``G = (n + 1) T^{-1}`` with ``T = tridiag(-1, 2, -1)`` (``G`` is ``n + 1`` times the
  Green's function of the discrete Laplacian with zero ends), so its eigenvalues are
  ``(n + 1) / (4 sin^2(k pi / (2 (n + 1))))``, k = 1..n;
* prefix: ``G^{-1}`` is the same path Laplacian with one free end (``(G^{-1})[0, 0] = 1``,
  ``2`` elsewhere on the diagonal, ``-1`` beside it), eigenvalues
  ``4 sin^2((2k - 1) pi / (2 (2 n + 1)))``; ``G``'s are their inverses.
"""
from __future__ import annotations

import numpy as np

from dphist import workloads as wl

#: largest domain on which a workload without a closed form gets a dense eigendecomposition
MAX_DENSE_BINS = 4096


def _suffix_sum(a: np.ndarray) -> np.ndarray:
    """``out[:, i] = a[:, i] + ... + a[:, -1]`` (along the last axis)."""
    return np.cumsum(a[:, ::-1], axis=1)[:, ::-1]


class Gram:
    """``G = W^T W`` of a range workload over ``n`` bins: ``matmat``, ``diag``, ``trace``, ``eigenvalues``."""

    kind = "ranges"

    def __init__(self, workload: wl.RangeWorkload):
        self.workload = workload
        self.n = int(workload.n)
        if type(workload) is wl.AllRanges or isinstance(workload, wl.AllRanges):
            self.kind = "all-ranges"
        elif isinstance(workload, wl.PrefixWorkload):
            self.kind = "prefix"
        else:
            self.kind = "ranges"
            import scipy.sparse as sp
            lo, hi = np.asarray(workload.lo), np.asarray(workload.hi)
            m = lo.size
            rows = np.r_[np.arange(m), np.arange(m)]
            cols = np.r_[hi, lo]
            vals = np.r_[np.ones(m), -np.ones(m)]
            #: row r: +1 at hi_r, -1 at lo_r (over the n + 1 prefix positions)
            self._steps = sp.csr_matrix((vals, (rows, cols)), shape=(m, self.n + 1))
            self._steps_t = self._steps.T.tocsr()

    def matmat(self, B: np.ndarray) -> np.ndarray:
        """``G @ B`` for ``B`` of shape ``(n,)`` or ``(n, k)``."""
        B = np.asarray(B, dtype=float)
        if B.ndim == 1:
            return self.rmatmat(B[None, :])[0]
        return self.rmatmat(np.ascontiguousarray(B.T)).T

    def rmatmat(self, B: np.ndarray) -> np.ndarray:
        """``B @ G`` for ``B`` of shape ``(k, n)`` (``G`` is symmetric; rows stay contiguous)."""
        B = np.asarray(B, dtype=float)
        n = self.n
        P = np.zeros((B.shape[0], n + 1))
        np.cumsum(B, axis=1, out=P[:, 1:])
        if self.kind == "prefix":
            return _suffix_sum(P[:, 1:])
        if self.kind == "all-ranges":
            i = np.arange(n, dtype=float)
            after = _suffix_sum(P[:, 1:])          # sum_{h > i} P[h], h = i + 1 .. n
            upto = np.cumsum(P[:, :-1], axis=1)    # sum_{l <= i} P[l], l = 0 .. i
            return (i + 1.0) * after - (n - i) * upto
        Y = self._steps @ P.T                      # W B^T: one row per range, P[hi] - P[lo]
        Z = (self._steps_t @ Y).T                  # (k, n + 1): +Y at hi, -Y at lo
        return _suffix_sum(Z[:, 1:])               # (W^T Y)[i] = sum_{t > i} Z[t]

    def diag(self) -> np.ndarray:
        """``G[i, i]``: the number of queries holding bin ``i``."""
        i = np.arange(self.n, dtype=float)
        if self.kind == "prefix":
            return self.n - i
        if self.kind == "all-ranges":
            return (i + 1.0) * (self.n - i)
        from dphist.kernel.queries import interval_coverage
        return interval_coverage(self.n, np.asarray(self.workload.lo), np.asarray(self.workload.hi)).astype(float)

    def diag_cached(self) -> np.ndarray:
        cached = getattr(self, "_diag", None)
        if cached is None:
            cached = self._diag = self.diag()
        return cached

    def trace(self) -> float:
        return float(self.diag().sum())

    def dense(self) -> np.ndarray:
        """``G`` as an ``n x n`` array (small domains, tests)."""
        return self.matmat(np.eye(self.n))

    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of ``G`` (ascending): closed forms for prefix and all ranges, else dense (n <= 4096)."""
        n = self.n
        k = np.arange(1, n + 1, dtype=float)
        if self.kind == "all-ranges":
            lam = (n + 1.0) / (4.0 * np.sin(k * np.pi / (2.0 * (n + 1))) ** 2)
        elif self.kind == "prefix":
            lam = 1.0 / (4.0 * np.sin((2.0 * k - 1.0) * np.pi / (2.0 * (2 * n + 1))) ** 2)
        else:
            if n > MAX_DENSE_BINS:
                from dphist.errors import InvalidParameter
                raise InvalidParameter(f"the SVD bound of workload {self.workload.name!r} needs a dense "
                                       f"eigendecomposition of an {n} x {n} matrix (limit {MAX_DENSE_BINS} bins)")
            lam = np.linalg.eigvalsh(self.dense())
        return np.sort(np.clip(lam, 0.0, None))
