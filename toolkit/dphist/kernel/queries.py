"""Linear query descriptions whose L1 sensitivity the kernel computes itself.

Adding or removing one record changes one bin's count by 1, so a linear query
matrix ``A`` has L1 sensitivity ``max_j sum_i |A_ij|`` (the largest column L1
norm; Dwork, McSherry, Nissim & Smith 2006).  Components hand the kernel a
query *description*; the kernel derives the sensitivity, never the component:

* a dense ``numpy`` array or a ``scipy.sparse`` matrix: column norms are read
  from the entries;
* :class:`IntervalQueries` (weighted sums over position intervals, e.g. the
  nodes of a weighted tree): the kernel computes the weighted coverage of every
  bin in O(n + m);
* :class:`KroneckerQueries` (``A_1 (x) ... (x) A_d`` over a grid's row-major cells, each factor a
  dense or sparse matrix): the kernel checks every factor as above and multiplies their column
  norms (column ``(j_1, ..., j_d)`` of the product has L1 norm ``prod_k ||A_k e_{j_k}||_1``, so the
  largest is the product of the largest), and answers by applying the factors along the grid's
  axes (reshape, multiply, reshape: the product is never formed);
* any other object with ``shape`` and ``matvec`` (:class:`ImplicitQueries`):
  the kernel *probes* it, applying it to every unit vector, so its sensitivity
  is measured rather than declared.  That costs n products and is refused above
  :data:`MAX_PROBED_BINS` bins.

The kernel also needs the *support*: how many answers one record can move
(the largest number of non-zeros in a column).  Release mode rounds real
answers to a grid and widens the sensitivity by a grid step per moved answer.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import InvalidParameter
from ..validation import is_permutation

#: largest domain on which an implicit query object is probed column by column
MAX_PROBED_BINS = 4096


@runtime_checkable
class ImplicitQueries(Protocol):
    """A query matrix given by its action: ``shape = (m, n)`` and ``matvec(x) = A @ x``."""

    shape: tuple[int, int]

    def matvec(self, x: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class IntervalQueries:
    """Row ``r`` is ``weights[r]`` times the indicator of positions ``[starts[r], ends[r])``.

    Positions refer to the bins in ``order`` when the kernel is given one
    (a permutation of the domain), else to the domain itself.
    """

    starts: np.ndarray
    ends: np.ndarray
    weights: np.ndarray | None = None


@dataclass(frozen=True)
class KroneckerQueries:
    """The Kronecker product ``factors[0] (x) factors[1] (x) ...`` over the row-major cells of a grid.

    Factor ``k`` (dense or ``scipy.sparse``, ``m_k x n_k``) acts on axis ``k`` of a grid of shape
    ``(n_1, ..., n_d)``; answer ``(i_1, ..., i_d)`` (row-major) is
    ``sum_j prod_k A_k[i_k, j_k] x[j_1, ..., j_d]``.
    """

    factors: tuple


@dataclass(frozen=True)
class CheckedQueries:
    """A query description after the kernel's checks: what it measures and at what cost."""

    answer: object          #: callable x -> A @ x (float), on a private copy of the description
    sensitivity: float      #: max column L1 norm
    support: int            #: max non-zeros in a column
    integral: bool          #: integer entries (then integer answers on integer counts)
    rows: int


def interval_coverage(n: int, starts: np.ndarray, ends: np.ndarray, weights=None) -> np.ndarray:
    """Sum of ``weights`` (1 by default) of the intervals ``[starts, ends)`` covering each position (O(n + m))."""
    # np.add.at adds in index order from zero, as bincount does (the same sums), without bincount's copy of
    # narrower indices as intp; the ends' sums subtracted in place (the same differences): memory
    dtype, step = (np.int64, 1) if weights is None else (np.float64, weights)
    diff = np.zeros(n + 1, dtype=dtype)
    np.add.at(diff, starts, step)
    closing = np.zeros(n + 1, dtype=dtype)
    np.add.at(closing, ends, step)
    diff -= closing
    del closing
    head = diff[:-1]
    return np.cumsum(head, out=head)                               # in place: the same running sums


def max_interval_coverage(n: int, starts: np.ndarray, ends: np.ndarray) -> int:
    """The largest number of intervals covering one position: the L1 sensitivity of their sums.

    Sorted, disjoint intervals (one level of a tree) are recognised in O(m).
    """
    nonempty = ends > starts
    if not nonempty.any():
        return 0
    s, e = (starts, ends) if nonempty.all() else (starts[nonempty], ends[nonempty])
    if np.all(s[1:] >= e[:-1]):
        return 1
    return int(interval_coverage(n, starts, ends).max())


def _index_type(bounds):
    """int32 for an int32 array (kept narrow), int64 for anything else (converted as before)."""
    return np.int32 if isinstance(bounds, np.ndarray) and bounds.dtype == np.int32 else np.int64


def check_intervals(n: int, starts, ends) -> tuple[np.ndarray, np.ndarray]:
    """Private copies of interval bounds (int32 when given as int32, else int64: the same integers in the
    narrowest type the caller chose, for memory), or :class:`InvalidParameter` naming the fault."""
    try:
        starts = np.array(starts, dtype=_index_type(starts), copy=True)
        ends = np.array(ends, dtype=_index_type(ends), copy=True)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter("interval starts and ends must be integer arrays") from None
    if starts.shape != ends.shape or starts.ndim != 1:
        raise InvalidParameter("interval starts and ends must be 1-D arrays of equal length")
    if starts.size and (starts.min() < 0 or ends.max() > n or np.any(ends < starts)):
        raise InvalidParameter(f"intervals must satisfy 0 <= start <= end <= {n}")
    return starts, ends


def check_order(n: int, order) -> np.ndarray | None:
    """A private copy of ``order`` if it is a permutation of ``range(n)``, else :class:`InvalidParameter`."""
    if order is None:
        return None
    try:
        order = np.array(order, dtype=np.int64, copy=True)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter("order must be an integer array (a permutation of the domain)") from None
    if not is_permutation(order, n):
        raise InvalidParameter(f"order must be a permutation of the {n} bins of the domain")
    return order


def _finite_columns(col: np.ndarray, n: int) -> np.ndarray:
    if col.shape != (n,) or not np.all(np.isfinite(col)):
        raise InvalidParameter("query matrix entries must be finite")
    return col


#: answers of interval queries per block of the in-place difference (its temporary held to this size: memory)
_ANSWER_BLOCK = 1 << 16


def check_queries(queries, n: int) -> CheckedQueries:
    """Validate a query description over ``n`` bins and compute its sensitivity and support.

    The returned ``answer`` works on private copies, so changing the caller's
    object afterwards cannot change what is measured.
    """
    if isinstance(queries, IntervalQueries):
        s, e = check_intervals(n, queries.starts, queries.ends)
        w = np.ones(s.size) if queries.weights is None else np.array(queries.weights, dtype=float, copy=True)
        if w.shape != s.shape or not np.all(np.isfinite(w)):
            raise InvalidParameter("interval weights must be finite, one per interval")
        live = (e > s) & (w != 0)
        if live.all():     # every query live (a tree's nodes): the private copies themselves, no masked copies
            ls, le, lw = s, e, (w if bool(np.all(w > 0)) else np.abs(w))   # positive weights: abs(w) is w
        else:
            ls, le, lw = s[live], e[live], np.abs(w[live])
        sensitivity = float(interval_coverage(n, ls, le, lw).max()) if ls.size else 0.0
        support = int(interval_coverage(n, ls, le).max()) if ls.size else 0   # one coverage array at a time
        del ls, le, lw

        def answer(x):   # x: the counts (integers or floats), summed as floats
            prefix = np.empty(n + 1)
            prefix[0] = 0.0
            np.cumsum(x, dtype=float, out=prefix[1:])      # the floats of concatenate(([0.0], cumsum(x)))
            out = np.empty(s.size)
            for a in range(0, out.size, _ANSWER_BLOCK):    # prefix[e] - prefix[s] by blocks (memory)
                b = a + _ANSWER_BLOCK
                np.subtract(prefix[e[a:b]], prefix[s[a:b]], out=out[a:b])
            out *= w                                        # w * d: the same product (multiplication commutes)
            return out
        integral = bool(np.all(w == np.round(w)))
        return CheckedQueries(answer, sensitivity, support, integral, int(s.size))
    if isinstance(queries, KroneckerQueries):
        return _check_kronecker(queries, n)
    # a scipy.sparse matrix exists only once its module is loaded: looked up, never imported here
    # (``import dphist`` stays free of scipy.sparse)
    sp = sys.modules.get("scipy.sparse")
    if sp is not None and sp.issparse(queries):
        if queries.ndim != 2 or queries.shape[1] != n:
            raise InvalidParameter(f"query matrix must be 2-D with {n} columns, got shape {queries.shape}")
        a = sp.csc_matrix(queries, dtype=float, copy=True)
        col = _finite_columns(np.asarray(abs(a).sum(axis=0)).ravel(), n)
        if not np.all(np.isfinite(a.data)):
            raise InvalidParameter("query matrix entries must be finite")
        support = int(a.getnnz(axis=0).max()) if n else 0
        integral = bool(np.all(a.data == np.round(a.data)))
        return CheckedQueries(lambda x: np.asarray(a @ x, dtype=float).ravel(), float(col.max()), support,
                              integral, int(a.shape[0]))
    if isinstance(queries, np.ndarray) or isinstance(queries, (list, tuple)):
        try:
            a = np.array(queries, dtype=float, copy=True)
        except (TypeError, ValueError):
            raise InvalidParameter("query matrix must hold numbers") from None
        if a.ndim != 2 or a.shape[1] != n:
            raise InvalidParameter(f"query matrix must be 2-D with {n} columns, got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise InvalidParameter("query matrix entries must be finite")
        col = np.abs(a).sum(axis=0)
        support = int(np.count_nonzero(a, axis=0).max()) if n else 0
        integral = bool(np.all(a == np.round(a)))
        if a.shape[0] == 1:
            # one row (MWEM's measured rectangle): einsum's own loop, no BLAS call; OpenBLAS's threaded
            # matrix-vector product of a 1 x 16,384 row took 4-22 ms on a busy 2-core machine, einsum 8 us
            row = a[0]
            return CheckedQueries(lambda x: np.einsum("i,i->", row, x).reshape(1), float(col.max()), support,
                                  integral, 1)
        return CheckedQueries(lambda x: a @ x, float(col.max()), support, integral, int(a.shape[0]))
    if isinstance(queries, ImplicitQueries):
        return _probe(queries, n)
    raise InvalidParameter(f"cannot measure a {type(queries).__name__}: give a dense or sparse matrix, "
                           "IntervalQueries, KroneckerQueries, or an object with shape and matvec")


def _check_kronecker(queries: KroneckerQueries, n: int) -> CheckedQueries:
    """Each factor checked as a matrix over its axis; sensitivity, support and rows are products."""
    factors = tuple(queries.factors) if isinstance(queries.factors, (tuple, list)) else None
    if not factors:
        raise InvalidParameter("KroneckerQueries needs a non-empty tuple of factor matrices, one per axis")
    if any(isinstance(f, (KroneckerQueries, IntervalQueries)) for f in factors):
        raise InvalidParameter("a Kronecker factor must be a dense or scipy.sparse matrix")
    widths = []
    for k, f in enumerate(factors):
        shape = getattr(f, "shape", None) if not isinstance(f, (list, tuple)) else np.shape(f)
        if shape is None or len(shape) != 2:
            raise InvalidParameter(f"Kronecker factor {k} must be a 2-D matrix, got {type(f).__name__}")
        widths.append(int(shape[1]))
    if int(np.prod(widths)) != n:
        raise InvalidParameter(f"a Kronecker product of factors with {' x '.join(map(str, widths))} columns "
                               f"acts on {int(np.prod(widths))} cells; the domain has {n}")
    checked = [check_queries(f, w) for f, w in zip(factors, widths)]
    sp = sys.modules.get("scipy.sparse")
    mats = [sp.csr_matrix(f, dtype=float, copy=True) if sp is not None and sp.issparse(f)
            else np.array(f, dtype=float, copy=True) for f in factors]   # private copies
    grid = tuple(widths)

    def answer(x):
        y = np.asarray(x, dtype=float).reshape(grid)
        for axis, a in enumerate(mats):      # apply A_k along axis k: move it first, multiply, move it back
            moved = np.moveaxis(y, axis, 0)
            rest = moved.shape[1:]
            out = a @ moved.reshape(moved.shape[0], -1)
            y = np.moveaxis(np.asarray(out).reshape((a.shape[0],) + rest), 0, axis)
        return y.reshape(-1)
    return CheckedQueries(answer, float(np.prod([c.sensitivity for c in checked])),
                          int(np.prod([c.support for c in checked])), all(c.integral for c in checked),
                          int(np.prod([c.rows for c in checked])))


def _probe(queries, n: int) -> CheckedQueries:
    """Measure an implicit operator's columns by applying it to every unit vector."""
    try:
        m, cols = (int(v) for v in queries.shape)
    except (TypeError, ValueError):
        raise InvalidParameter("an implicit query object needs shape = (rows, columns)") from None
    if cols != n:
        raise InvalidParameter(f"query matrix has {cols} columns but the domain has {n} bins")
    if n > MAX_PROBED_BINS:
        raise InvalidParameter(
            f"an implicit query object over {n} bins would need {n} probes to measure its sensitivity "
            f"(limit {MAX_PROBED_BINS}); describe it as IntervalQueries or a scipy.sparse matrix")
    columns = np.empty((m, n))
    unit = np.zeros(n)
    for j in range(n):
        unit[j] = 1.0
        columns[:, j] = np.asarray(queries.matvec(unit.copy()), dtype=float).reshape(m)
        unit[j] = 0.0
    return check_queries(columns, n)
