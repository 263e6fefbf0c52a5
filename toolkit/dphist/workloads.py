"""Range-query workloads, answered in O(1) per query from prefix sums.

A workload is a list of half-open ranges ``[lo, hi)`` over the ``n`` bins of
the original domain.  :class:`AllRanges` is implicit (all ``n(n+1)/2``
ranges): metrics use closed forms for it instead of enumerating.

Workloads used by the papers:

* identity, prefix (DPBench default for 1-D), all ranges (Hay et al. 2010);
* SORTaki Section VI: small ranges (lengths 1-10) and big ranges (lengths
  100-1000, step 100), each at every position;
* ranges of length r% of n (Kellaris et al., Figures 15-18), seeded random ranges;
* DPBench's 1-D random ranges (Hay et al., SIGMOD 2016; ``dpbench-random-<m>``): a length uniform
  in 1..n, then a start uniform among the places it fits, query after query, from the public seed
  9001 of DPBench's ``RandomRange`` (numpy's ``RandomState``), so the same queries as DPBench's.
"""
from __future__ import annotations

import functools

import numpy as np

from .errors import InvalidParameter


def prefix_sums(x) -> np.ndarray:
    """``P`` with ``P[0] = 0`` and ``P[i] = x[0] + ... + x[i-1]`` (float64)."""
    x = np.asarray(x, dtype=float)
    out = np.empty(x.size + 1)
    out[0] = 0.0
    np.cumsum(x, out=out[1:])
    return out


class RangeWorkload:
    """An explicit list of ranges ``[lo[i], hi[i])`` over ``n`` bins."""

    def __init__(self, n: int, lo, hi, name: str = "ranges"):
        n = int(n)
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        if n < 1:
            raise InvalidParameter(f"a workload needs a domain of at least 1 bin, got {n}")
        if lo.shape != hi.shape or lo.ndim != 1:
            raise InvalidParameter("range bounds lo and hi must be 1-D arrays of equal length")
        if lo.size == 0:
            raise InvalidParameter(f"workload {name!r} is empty: it has no queries")
        if lo.min() < 0 or hi.max() > n or np.any(hi <= lo):
            raise InvalidParameter(f"every range must satisfy 0 <= lo < hi <= {n}")
        self.n, self.lo, self.hi, self.name = n, lo, hi, name

    def __len__(self) -> int:
        return int(self.lo.size)

    @property
    def lengths(self) -> np.ndarray:
        return self.hi - self.lo

    def check_domain(self, x) -> np.ndarray:
        x = np.asarray(x)
        if x.shape != (self.n,):
            raise InvalidParameter(f"workload {self.name!r} is over {self.n} bins, the vector has shape {x.shape}")
        return x

    def answer(self, x) -> np.ndarray:
        """All query answers on ``x`` (length ``n``), O(n + m)."""
        p = prefix_sums(self.check_domain(x))
        return p[self.hi] - p[self.lo]

    def errors_from_prefix(self, x, prefix) -> np.ndarray:
        """:meth:`answer` of ``x`` when its prefix sums are already known (shared across workloads)."""
        return prefix[self.hi] - prefix[self.lo]

    def matrix(self) -> np.ndarray:
        """The dense 0/1 query matrix (one row per range, one column per bin; O(m n) memory)."""
        steps = np.zeros((len(self), self.n + 1))
        rows = np.arange(len(self))
        steps[rows, self.lo] = 1.0
        steps[rows, self.hi] = -1.0
        return np.cumsum(steps, axis=1)[:, :-1]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, n={self.n}, queries={len(self)})"


class AllRanges(RangeWorkload):
    """All ``n(n+1)/2`` ranges, kept implicit (Hay et al. 2010's range workload)."""

    def __init__(self, n: int):
        n = int(n)
        if n < 1:
            raise InvalidParameter(f"a workload needs a domain of at least 1 bin, got {n}")
        self.n, self.name = n, "all-ranges"

    def __len__(self) -> int:
        return self.n * (self.n + 1) // 2

    @property
    def lo(self):  # materialised only on request (O(n^2) memory)
        return np.triu_indices(self.n + 1, 1)[0]

    @property
    def hi(self):
        return np.triu_indices(self.n + 1, 1)[1]

    def answer(self, x) -> np.ndarray:
        if self.n > 4096:
            raise InvalidParameter(f"refusing to enumerate all {len(self)} ranges; "
                                   "use dphist.metrics, which has closed forms for AllRanges")
        p = prefix_sums(self.check_domain(x))
        i, j = np.triu_indices(self.n + 1, 1)
        return p[j] - p[i]


class IdentityWorkload(RangeWorkload):
    """Every single bin; answers are the vector itself (no prefix sums needed)."""

    def __init__(self, n: int):
        super().__init__(n, np.arange(n), np.arange(1, n + 1), "identity")

    def answer(self, x) -> np.ndarray:
        return np.asarray(self.check_domain(x), dtype=float).copy()

    def errors_from_prefix(self, x, prefix) -> np.ndarray:
        return np.asarray(x, dtype=float)


class PrefixWorkload(RangeWorkload):
    """``[0, i)`` for i = 1..n; answers are the running sums.  The bounds ``lo``, ``hi`` are built on first
    request (2n integers): the closed forms that know the workload by its type never read them."""

    def __init__(self, n: int):
        n = int(n)
        if n < 1:
            raise InvalidParameter(f"a workload needs a domain of at least 1 bin, got {n}")
        self.n, self.name = n, "prefix"
        self._bounds = None

    def __len__(self) -> int:
        return self.n

    def _ranges(self) -> tuple[np.ndarray, np.ndarray]:
        if self._bounds is None:
            self._bounds = (np.zeros(self.n, dtype=np.int64), np.arange(1, self.n + 1, dtype=np.int64))
        return self._bounds

    @property
    def lo(self) -> np.ndarray:
        return self._ranges()[0]

    @property
    def hi(self) -> np.ndarray:
        return self._ranges()[1]

    def answer(self, x) -> np.ndarray:
        return np.cumsum(self.check_domain(x), dtype=float)

    def errors_from_prefix(self, x, prefix) -> np.ndarray:
        return prefix[1:]


def identity(n: int) -> RangeWorkload:
    """Every single bin."""
    return IdentityWorkload(n)


def prefix(n: int) -> RangeWorkload:
    """``[0, i)`` for i = 1..n (DPBench's 1-D workload)."""
    return PrefixWorkload(n)


def all_ranges(n: int) -> AllRanges:
    return AllRanges(n)


def fixed_lengths(n: int, lengths, name: str = "ranges") -> RangeWorkload:
    """Every range whose length is in ``lengths``, at every position (lengths > n are dropped)."""
    lengths = np.asarray([int(L) for L in lengths if 1 <= int(L) <= n], dtype=np.int64)
    if lengths.size == 0:
        raise InvalidParameter(f"no requested range length fits a domain of {n} bins")
    counts = n - lengths + 1
    lo = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    return RangeWorkload(n, lo, lo + np.repeat(lengths, counts), name)


def small_ranges(n: int) -> RangeWorkload:
    """SORTaki Section VI: lengths 1-10 at every position."""
    return fixed_lengths(n, range(1, 11), "small-ranges")


def big_ranges(n: int) -> RangeWorkload:
    """SORTaki Section VI: lengths 100, 200, ..., 1000 at every position."""
    return fixed_lengths(n, range(100, 1001, 100), "big-ranges")


def percent_ranges(n: int, percent: float) -> RangeWorkload:
    """Every range of length ``round(percent/100 * n)`` (at least 1)."""
    if not 0 < percent <= 100:
        raise InvalidParameter(f"percent must be in (0, 100], got {percent}")
    return fixed_lengths(n, [max(1, round(percent / 100 * n))], f"ranges-{percent:g}%")


def random_ranges(n: int, m: int, rng: np.random.Generator) -> RangeWorkload:
    """``m`` ranges with uniformly random distinct endpoints, from a seeded generator."""
    if not isinstance(rng, np.random.Generator):
        raise InvalidParameter("random_ranges needs a numpy.random.Generator (seeded) for reproducibility")
    a = rng.integers(0, n + 1, size=m)
    b = rng.integers(0, n, size=m)
    b = b + (b >= a)  # b uniform over the n values != a
    return RangeWorkload(n, np.minimum(a, b), np.maximum(a, b), f"random-{m}")


#: the public seed of DPBench's RandomRange workload
DPBENCH_RANDOM_SEED = 9001


def dpbench_random_ranges(n: int, m: int, seed: int = DPBENCH_RANDOM_SEED) -> RangeWorkload:
    """DPBench's 1-D random-range workload: ``m`` queries, each a length uniform in 1..n then a start
    uniform in 0..n - length, drawn in that order from ``numpy.random.RandomState(seed)`` (Hay et
    al., SIGMOD 2016; dpcomp_core ``workload.RandomRange``, read, not copied).  Public: no data."""
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise InvalidParameter(f"the number of random ranges must be a positive integer, got {m!r}")
    lo, length = _dpbench_draws((int(n),), int(m), int(seed))
    return RangeWorkload(n, lo[:, 0].copy(), lo[:, 0] + length[:, 0], f"dpbench-random-{m}")


@functools.lru_cache(maxsize=16)
def _dpbench_draws(shape: tuple, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, side)``, read-only ``(m, d)`` arrays, of DPBench's random ranges / rectangles on ``shape``:
    per query the side lengths on every axis, uniform in 1..n_k, then the corners, uniform among the
    places the sides fit, from ``numpy.random.RandomState(seed)`` in the reference's order.  The draws
    are sequential (one generator call per value), so they are cached: a preset that rebuilds its
    workload on every run (MWEM on a grid) pays for them once per shape."""
    rs = np.random.RandomState(seed)
    d = len(shape)
    side = np.empty((m, d), dtype=np.int64)
    lo = np.empty((m, d), dtype=np.int64)
    for q in range(m):          # interleaved draws per query (all sides, then all corners), as the reference
        for k in range(d):
            side[q, k] = rs.randint(1, shape[k] + 1)
        for k in range(d):
            lo[q, k] = rs.randint(0, shape[k] - side[q, k] + 1)
    lo.setflags(write=False)
    side.setflags(write=False)
    return lo, side


def explicit(n: int, ranges) -> RangeWorkload:
    """From a list of ``(lo, hi)`` pairs (half-open)."""
    arr = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    return RangeWorkload(n, arr[:, 0], arr[:, 1], "explicit")


BUILTIN = {"identity": identity, "prefix": prefix, "all-ranges": all_ranges,
           "small-ranges": small_ranges, "big-ranges": big_ranges}


def _percent(name: str) -> float | None:
    """r of a name ``ranges-<r>%`` (None when the name has another form)."""
    if not (name.startswith("ranges-") and name.endswith("%")):
        return None
    try:
        return float(name[7:-1])
    except ValueError:
        return None


def _dpbench_random(name: str) -> int | None:
    """m of a name ``dpbench-random-<m>`` (None when the name has another form)."""
    if not name.startswith("dpbench-random-") or not name[15:].isdigit():
        return None
    m = int(name[15:])
    return m if m >= 1 else None


def is_name(name) -> bool:
    """True when :func:`make` knows ``name`` (whatever the domain size: a parameter check)."""
    if not isinstance(name, str):
        return False
    percent = _percent(name)
    return name in BUILTIN or (percent is not None and 0 < percent <= 100) or _dpbench_random(name) is not None


def make(name: str, n: int) -> RangeWorkload:
    """A workload by name: identity, prefix, all-ranges, small-ranges, big-ranges, ranges-<r>% or
    dpbench-random-<m>."""
    if name in BUILTIN:
        return BUILTIN[name](n)
    percent = _percent(name)
    if percent is not None:
        return percent_ranges(n, percent)
    m = _dpbench_random(name)
    if m is not None:
        return dpbench_random_ranges(n, m)
    raise InvalidParameter(f"unknown workload {name!r}; known: {', '.join(BUILTIN)}, ranges-<r>%, dpbench-random-<m>")


# ----------------------------------------------------------------------------------------------
# Workloads given as data: ``(starts, ends)``, a list of ``(lo, hi)`` pairs, or a query matrix.
#
# The range-answering components (MWEM's ``mwem.mw``, DAWA's ``dawa.greedy-h``) take a workload
# name, a :class:`RangeWorkload`, or one of these forms.  :func:`check_spec` validates what does not
# depend on the domain when the component is built; :func:`resolve` adds the domain check when the
# pipeline knows ``n`` (``Component.check_input``, before any budget is spent).

def _is_sparse(value) -> bool:
    return hasattr(value, "tocsr") and hasattr(value, "shape")   # scipy.sparse, without importing it


def is_spec(value) -> bool:
    """True for the forms a workload parameter may take (a name :func:`make` knows, a
    :class:`RangeWorkload`, a tuple ``(starts, ends)``, a list of ``(lo, hi)`` pairs, a 2-D numpy
    array or a scipy.sparse matrix: one query per row, one column per bin).  A form check only:
    :func:`check_spec` checks the contents."""
    if isinstance(value, str):
        return is_name(value)
    if isinstance(value, (RangeWorkload, list)):
        return True
    if isinstance(value, tuple):
        return len(value) == 2
    return (isinstance(value, np.ndarray) and value.ndim == 2) or _is_sparse(value)


def _integers(values, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == object or arr.dtype.kind == "b" or arr.dtype.kind not in "iuf":
        raise InvalidParameter(f"{what} must be integers, got {arr.dtype}")
    if arr.dtype.kind == "f" and not np.array_equal(arr, np.round(arr)):
        raise InvalidParameter(f"{what} must be integers (bin positions), got fractional values")
    return arr.astype(np.int64)


def _checked_ranges(lo, hi, who: str) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = _integers(lo, f"{who}: range starts"), _integers(hi, f"{who}: range ends")
    if lo.ndim != 1 or lo.shape != hi.shape:
        raise InvalidParameter(f"{who}: starts and ends must be 1-D sequences of equal length, "
                               f"got shapes {lo.shape} and {hi.shape}")
    if lo.size == 0:
        raise InvalidParameter(f"{who}: the workload is empty (no ranges)")
    bad = np.flatnonzero(lo < 0)
    if bad.size:
        raise InvalidParameter(f"{who}: range {bad[0]} starts at {lo[bad[0]]}, outside the domain (starts are >= 0)")
    bad = np.flatnonzero(hi <= lo)
    if bad.size:
        i = int(bad[0])
        raise InvalidParameter(f"{who}: range {i} is [{lo[i]}, {hi[i]}), which holds no bin: a query of zero "
                               "sensitivity measures nothing (ranges are half-open [start, end) with end > start)")
    return lo, hi


def _matrix_ranges(matrix, who: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Rows of a 0/1 query matrix as ranges ``[lo, hi)`` over its columns; ``(lo, hi, columns)``."""
    if _is_sparse(matrix):
        csr = matrix.tocsr(copy=True)
        csr.sum_duplicates()
        csr.eliminate_zeros()
        rows, width = csr.shape
        data, indices, indptr = np.asarray(csr.data, dtype=float), csr.indices, csr.indptr
        count = np.diff(indptr)
    else:
        dense = np.asarray(matrix)
        if dense.dtype == object or dense.dtype.kind not in "biuf":
            raise InvalidParameter(f"{who}: the query matrix must hold numbers, got {dense.dtype}")
        rows, width = dense.shape
        nz = dense != 0
        data, count = dense[nz].astype(float), nz.sum(axis=1)
    if rows == 0 or width == 0:
        raise InvalidParameter(f"{who}: the workload is empty (a {rows} x {width} query matrix)")
    if not np.all(np.isfinite(data)):
        raise InvalidParameter(f"{who}: the query matrix has non-finite entries")
    if data.size == 0:
        raise InvalidParameter(f"{who}: the query matrix is all zeros: its sensitivity is 0, it measures nothing")
    zero = np.flatnonzero(count == 0)
    if zero.size:
        raise InvalidParameter(f"{who}: row {zero[0]} of the query matrix is all zeros (a query of zero "
                               "sensitivity measures nothing)")
    if np.any(data != 1.0):
        raise InvalidParameter(f"{who}: the query matrix has entries other than 0 and 1; this component answers "
                               "range queries (rows of 1 over consecutive bins)")
    if _is_sparse(matrix):
        lo = np.minimum.reduceat(indices, indptr[:-1]).astype(np.int64)
        hi = np.maximum.reduceat(indices, indptr[:-1]).astype(np.int64) + 1
    else:
        lo = np.argmax(nz, axis=1).astype(np.int64)
        hi = width - np.argmax(nz[:, ::-1], axis=1).astype(np.int64)
    gaps = np.flatnonzero(hi - lo != count)
    if gaps.size:
        raise InvalidParameter(f"{who}: row {gaps[0]} of the query matrix is not one range of consecutive bins; "
                               "this component answers range queries")
    return lo, hi, int(width)


def _parse(spec, who: str):
    """``(lo, hi, width, name)`` of an explicit form (``width``: the matrix's columns, else None);
    None for a name or a RangeWorkload."""
    if isinstance(spec, (str, RangeWorkload)):
        return None
    if isinstance(spec, tuple):
        if len(spec) != 2:
            raise InvalidParameter(f"{who}: a workload tuple is (starts, ends), got {len(spec)} items")
        return (*_checked_ranges(spec[0], spec[1], who), None, "ranges")
    if isinstance(spec, list):
        if len(spec) == 0:
            raise InvalidParameter(f"{who}: the workload is empty (no ranges)")
        try:
            arr = np.asarray(spec)
        except ValueError:
            raise InvalidParameter(f"{who}: a workload list holds (lo, hi) pairs") from None
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise InvalidParameter(f"{who}: a workload list holds (lo, hi) pairs, got shape {arr.shape}")
        return (*_checked_ranges(arr[:, 0], arr[:, 1], who), None, "ranges")
    if (isinstance(spec, np.ndarray) and spec.ndim == 2) or _is_sparse(spec):
        lo, hi, width = _matrix_ranges(spec, who)
        return lo, hi, width, "query-matrix"
    raise InvalidParameter(f"{who}: a workload is a name, a RangeWorkload, (starts, ends), a list of (lo, hi) "
                           f"pairs or a query matrix; got {type(spec).__name__}")


def check_spec(spec, who: str = "workload") -> None:
    """Raise InvalidParameter naming the problem (empty, a negative start, an empty range of zero
    sensitivity, a zero or non-range matrix row) for anything :func:`resolve` would refuse whatever
    the domain; names are checked by :func:`is_name`."""
    if isinstance(spec, str) and not is_name(spec):
        raise InvalidParameter(f"{who}: unknown workload {spec!r}; known: {', '.join(BUILTIN)}, ranges-<r>%, "
                               "dpbench-random-<m>")
    _parse(spec, who)


def resolve(spec, n: int, who: str = "workload") -> RangeWorkload:
    """The workload ``spec`` (any form of :func:`is_spec`) as a :class:`RangeWorkload` over ``n`` bins;
    InvalidParameter naming the problem otherwise (a range beyond the domain, a matrix whose columns
    are not the ``n`` bins, ...)."""
    if isinstance(spec, str):
        check_spec(spec, who)
        return make(spec, n)
    if isinstance(spec, RangeWorkload):
        if spec.n != n:
            raise InvalidParameter(f"{who}: workload {spec.name!r} is over {spec.n} bins but the histogram has {n}")
        return spec
    lo, hi, width, name = _parse(spec, who)
    if width is not None and width != n:
        raise InvalidParameter(f"{who}: the query matrix has {width} columns but the histogram has {n} bins")
    beyond = np.flatnonzero(hi > n)
    if beyond.size:
        i = int(beyond[0])
        raise InvalidParameter(f"{who}: range {i} is [{lo[i]}, {hi[i]}), beyond the domain of {n} bins")
    return RangeWorkload(n, lo, hi, name)


# ----------------------------------------------------------------------------------------------
# d-dimensional workloads: axis-aligned rectangles over a grid, answered from a summed-area table.
#
# A rectangle is ``[lo[k], hi[k])`` on every axis k; its answer is the inclusion-exclusion of the
# summed-area table ``S`` (``S[i1, ..., id]`` = the sum of the cells below ``(i1, ..., id)``) at its
# 2^d corners: O(1) per query after one O(N d) pass (Crow, SIGGRAPH 1984).  The cells are the grid's
# flattened in row-major order, as a release's ``estimate``.

def summed_area_table(x, shape) -> np.ndarray:
    """``S`` of shape ``(n1 + 1, ..., nd + 1)``: ``S[i] = sum of x[:i1, ..., :id]`` (float64)."""
    grid = np.asarray(x, dtype=float).reshape(shape)
    out = np.zeros(tuple(s + 1 for s in shape))
    out[tuple(slice(1, None) for _ in shape)] = grid
    for axis in range(len(shape)):
        np.cumsum(out, axis=axis, out=out)
    return out


def _check_shape(shape, who: str) -> tuple[int, ...]:
    try:
        out = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{who}: a grid shape is a tuple of positive integers, got {shape!r}") from None
    if not out or any(s < 1 for s in out):
        raise InvalidParameter(f"{who}: a grid shape is a tuple of positive integers, got {shape!r}")
    return out


class RectangleWorkload:
    """Axis-aligned rectangles ``[lo[q, k], hi[q, k])`` over a grid of ``shape`` (one row per query).

    Answers on a histogram given as its grid or its row-major flattened cells, O(1) per query from
    a summed-area table.  In 1-D (``shape = (n,)``) the rectangles are ranges.
    """

    def __init__(self, shape, lo, hi, name: str = "rectangles"):
        self.shape = _check_shape(shape, f"workload {name!r}")
        self.n = int(np.prod(self.shape))
        lo = np.asarray(lo, dtype=np.int64)
        hi = np.asarray(hi, dtype=np.int64)
        d = len(self.shape)
        if lo.ndim == 1 and d == 1:
            lo, hi = lo[:, None], hi[:, None]
        if lo.shape != hi.shape or lo.ndim != 2 or lo.shape[1] != d:
            raise InvalidParameter(f"workload {name!r}: lo and hi must be arrays of shape (queries, {d}), "
                                   f"got {lo.shape} and {hi.shape}")
        if lo.shape[0] == 0:
            raise InvalidParameter(f"workload {name!r} is empty: it has no queries")
        bad = np.flatnonzero(np.any((lo < 0) | (hi > np.asarray(self.shape)) | (hi <= lo), axis=1))
        if bad.size:
            q = int(bad[0])
            raise InvalidParameter(f"workload {name!r}: rectangle {q} is [{lo[q].tolist()}, {hi[q].tolist()}), "
                                   f"not inside the grid {self.shape} or empty (0 <= lo < hi <= shape on every axis)")
        self.lo, self.hi, self.name = lo, hi, name

    def __len__(self) -> int:
        return int(self.lo.shape[0])

    @property
    def sizes(self) -> np.ndarray:
        """Cells per rectangle."""
        return np.prod(self.hi - self.lo, axis=1)

    def check_domain(self, x) -> np.ndarray:
        x = np.asarray(x)
        if x.shape != self.shape and x.shape != (self.n,):
            raise InvalidParameter(f"workload {self.name!r} is over a grid of shape {self.shape} ({self.n} cells), "
                                   f"the histogram has shape {x.shape}")
        return x.reshape(-1)

    def answer_from_table(self, table: np.ndarray) -> np.ndarray:
        """The answers from a summed-area table (:func:`summed_area_table`): 2^d gathers."""
        d = len(self.shape)
        out = np.zeros(len(self))
        for corner in range(1 << d):
            upper = [(corner >> k) & 1 for k in range(d)]
            index = tuple(np.where(u, self.hi[:, k], self.lo[:, k]) for k, u in enumerate(upper))
            sign = -1.0 if (d - sum(upper)) % 2 else 1.0
            out += sign * table[index]
        return out

    def answer(self, x) -> np.ndarray:
        """All answers on ``x`` (the grid or its flattened cells), O(N + m 2^d)."""
        return self.answer_from_table(summed_area_table(self.check_domain(x), self.shape))

    def errors_from_prefix(self, x, prefix=None) -> np.ndarray:
        """:meth:`answer` (the interface the metrics share with 1-D workloads; a 1-D prefix is not used)."""
        return self.answer(x)

    def matrix(self) -> np.ndarray:
        """The dense 0/1 query matrix over the flattened cells (one row per rectangle; O(m N) memory)."""
        grids = np.indices(self.shape).reshape(len(self.shape), -1)
        inside = np.ones((len(self), self.n), dtype=bool)
        for k in range(len(self.shape)):
            inside &= (grids[k][None, :] >= self.lo[:, k:k + 1]) & (grids[k][None, :] < self.hi[:, k:k + 1])
        return inside.astype(float)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, shape={self.shape}, queries={len(self)})"


class AllRectangles(RectangleWorkload):
    """Every axis-aligned rectangle of the grid (``prod n_k (n_k + 1) / 2`` queries), kept implicit.

    The metrics use the closed form of the sum of squared errors: with ``S`` the error's summed-area
    table, a rectangle's error is the product over axes of pairwise differences of ``S``, so the sum
    over all rectangles is ``S . (L_1 x ... x L_d) S`` with ``L_k = (n_k + 1) I - 1 1^T`` on axis k
    (the 1-D pairwise-difference identity on every axis: O(N d)).
    """

    def __init__(self, shape):
        self.shape = _check_shape(shape, "workload 'all-rectangles'")
        self.n = int(np.prod(self.shape))
        self.name = "all-rectangles"

    def __len__(self) -> int:
        return int(np.prod([s * (s + 1) // 2 for s in self.shape]))

    def _bounds(self):
        pairs = [np.triu_indices(s + 1, 1) for s in self.shape]
        mesh = np.meshgrid(*[np.arange(p[0].size) for p in pairs], indexing="ij")
        lo = np.stack([pairs[k][0][m.ravel()] for k, m in enumerate(mesh)], axis=1)
        hi = np.stack([pairs[k][1][m.ravel()] for k, m in enumerate(mesh)], axis=1)
        return lo, hi

    @property
    def lo(self):
        return self._bounds()[0]

    @property
    def hi(self):
        return self._bounds()[1]

    def answer(self, x) -> np.ndarray:
        if len(self) > 10 ** 7:
            raise InvalidParameter(f"refusing to enumerate all {len(self)} rectangles; "
                                   "use dphist.metrics (mse, scaled-l2), which has a closed form for AllRectangles")
        return RectangleWorkload(self.shape, *self._bounds(), self.name).answer(x)

    def sum_squared(self, error) -> float:
        """Sum over all rectangles of the squared error of ``error`` (the flattened cells), O(N d)."""
        table = summed_area_table(self.check_domain(error), self.shape)
        y = table
        for axis, s in enumerate(self.shape):
            y = (s + 1) * y - y.sum(axis=axis, keepdims=True)
        return float(np.sum(table * y))


def identity_cells(shape) -> RectangleWorkload:
    """Every cell of the grid, one query each."""
    shape = _check_shape(shape, "workload 'identity'")
    lo = np.stack(np.unravel_index(np.arange(int(np.prod(shape))), shape), axis=1)
    return RectangleWorkload(shape, lo, lo + 1, "identity")


def prefix_rectangles(shape) -> RectangleWorkload:
    """The d-dimensional prefix workload: every rectangle ``[0, i)`` (``i`` >= 1 on every axis), N queries."""
    shape = _check_shape(shape, "workload 'prefix'")
    hi = np.stack(np.unravel_index(np.arange(int(np.prod(shape))), shape), axis=1) + 1
    return RectangleWorkload(shape, np.zeros_like(hi), hi, "prefix")


def marginals(shape) -> RectangleWorkload:
    """The one-way marginals: for every axis and every index on it, the slab of cells with that index
    (``sum(shape)`` queries; in 2-D the row sums, then the column sums)."""
    shape = _check_shape(shape, "workload 'marginals'")
    d = len(shape)
    lo, hi = [], []
    for axis, s in enumerate(shape):
        a = np.zeros((s, d), dtype=np.int64)
        b = np.tile(np.asarray(shape, dtype=np.int64), (s, 1))
        a[:, axis] = np.arange(s)
        b[:, axis] = np.arange(1, s + 1)
        lo.append(a)
        hi.append(b)
    return RectangleWorkload(shape, np.concatenate(lo), np.concatenate(hi), "marginals")


def dpbench_random_rectangles(shape, m: int, seed: int = DPBENCH_RANDOM_SEED) -> RectangleWorkload:
    """DPBench's random-range workload on a grid: ``m`` rectangles, each a side length uniform in
    1..n_k on every axis, then a corner uniform among the places it fits, drawn query after query in
    that order from ``numpy.random.RandomState(seed)`` (Hay et al., SIGMOD 2016; dpcomp_core
    ``workload.RandomRange`` with no shape list, read, not copied).  Public: no data.  On a 1-D
    shape these are :func:`dpbench_random_ranges`'s queries."""
    shape = _check_shape(shape, "workload 'dpbench-random'")
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise InvalidParameter(f"the number of random rectangles must be a positive integer, got {m!r}")
    lo, side = _dpbench_draws(tuple(shape), int(m), int(seed))
    return RectangleWorkload(shape, lo.copy(), lo + side, f"dpbench-random-{m}")


RECTANGLE_BUILTIN = {"identity": identity_cells, "prefix": prefix_rectangles, "marginals": marginals,
                     "all-rectangles": AllRectangles}


def make_rectangles(name: str, shape) -> RectangleWorkload:
    """A workload over a grid by name: identity, prefix, marginals, all-rectangles, dpbench-random-<m>."""
    if name in RECTANGLE_BUILTIN:
        return RECTANGLE_BUILTIN[name](shape)
    m = _dpbench_random(name) if isinstance(name, str) else None
    if m is not None:
        return dpbench_random_rectangles(shape, m)
    raise InvalidParameter(f"unknown workload {name!r} for a grid; known: {', '.join(RECTANGLE_BUILTIN)}, "
                           "dpbench-random-<m>")
