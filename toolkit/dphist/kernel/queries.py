"""Linear query representations whose L1 sensitivity the kernel computes itself.

Adding or removing one record changes one bin's count by 1, so a linear query
matrix ``A`` has L1 sensitivity ``max_j sum_i |A_ij|`` (the largest column L1
norm; Dwork et al. 2006, Laplace mechanism).  Components hand the kernel a
query *description*; the kernel derives the sensitivity, never the component.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from ..errors import InvalidParameter


@runtime_checkable
class ImplicitQueries(Protocol):
    """A query matrix given by its action, for strategies too large to store.

    ``shape`` is ``(m, n)``; ``matvec(x)`` returns ``A @ x``; ``abs_rmatvec(y)``
    returns ``|A|.T @ y`` (entrywise absolute value), from which the kernel takes
    the sensitivity as ``max(abs_rmatvec(ones(m)))``.
    """

    shape: tuple[int, int]

    def matvec(self, x: np.ndarray) -> np.ndarray: ...

    def abs_rmatvec(self, y: np.ndarray) -> np.ndarray: ...


def interval_coverage(n: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """How many of the half-open intervals ``[starts, ends)`` cover each position (O(n + m))."""
    diff = np.bincount(starts, minlength=n + 1) - np.bincount(ends, minlength=n + 1)
    return np.cumsum(diff[:-1])


def max_interval_coverage(n: int, starts: np.ndarray, ends: np.ndarray) -> int:
    """The largest number of intervals covering one position: the L1 sensitivity of their sums.

    Sorted, disjoint intervals (one level of a tree) are recognised in O(m).
    """
    if starts.size == 0:
        return 0
    nonempty = ends > starts
    if not nonempty.any():
        return 0
    s, e = starts[nonempty], ends[nonempty]
    if np.all(s[1:] >= e[:-1]):
        return 1
    return int(interval_coverage(n, starts, ends).max())


def check_intervals(n: int, starts, ends) -> tuple[np.ndarray, np.ndarray]:
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    if starts.shape != ends.shape or starts.ndim != 1:
        raise InvalidParameter("interval starts and ends must be 1-D arrays of equal length")
    if starts.size and (starts.min() < 0 or ends.max() > n or np.any(ends < starts)):
        raise InvalidParameter(f"intervals must satisfy 0 <= start <= end <= {n}")
    return starts, ends


def linear_sensitivity(queries, n: int) -> float:
    """Largest column L1 norm of a dense, sparse or implicit query matrix over n bins."""
    if isinstance(queries, ImplicitQueries) and not sp.issparse(queries) and not isinstance(queries, np.ndarray):
        m, cols = queries.shape
        if cols != n:
            raise InvalidParameter(f"query matrix has {cols} columns but the domain has {n} bins")
        col = np.asarray(queries.abs_rmatvec(np.ones(m)), dtype=float)
    elif sp.issparse(queries):
        if queries.shape[1] != n:
            raise InvalidParameter(f"query matrix has {queries.shape[1]} columns but the domain has {n} bins")
        col = np.asarray(abs(queries).sum(axis=0)).ravel()
    else:
        a = np.asarray(queries, dtype=float)
        if a.ndim != 2 or a.shape[1] != n:
            raise InvalidParameter(f"query matrix must be 2-D with {n} columns, got shape {a.shape}")
        col = np.abs(a).sum(axis=0)
    if col.shape != (n,) or not np.all(np.isfinite(col)):
        raise InvalidParameter("query matrix column norms are not finite")
    return float(col.max()) if col.size else 0.0


def apply_linear(queries, x: np.ndarray) -> np.ndarray:
    if sp.issparse(queries):
        return np.asarray(queries @ x, dtype=float).ravel()
    if isinstance(queries, np.ndarray):
        return queries.astype(float) @ x
    return np.asarray(queries.matvec(x), dtype=float).ravel()
