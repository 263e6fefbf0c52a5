"""Group costs for :mod:`dphist.segmentation`: the built-ins and the wrappers for user costs.

A cost is defined over a sequence of ``n`` *positions*; a group is a run of positions
``[start, end)``.  Every cost answers, vectorised over many groups,

    cost.intervals(starts, ends) -> one float per group,

and may answer faster for the batches the search modes ask for (``rows_from``: every group
starting at one unit; ``windows``: every group of one length in units; ``nodes``: disjoint
groups).  The batch order is part of the contract (see :class:`Perturbed`).

Built-ins (compiled fast paths in :mod:`.kernels`):

* :class:`SSEPenalty` - sum of squared deviations from the group mean plus a penalty that
  depends on the group size only: AHP's group error SSE + 2/(|C| eps_2^2) (Zhang et al. 2014,
  Theorem 4.2), SORTaki's EE and UEE (Doudalis & Mehrotra, Eq. 4-5), DPCube's variance test.
* :class:`L1Deviation` - sum of |x_i - mean| (DAWA's ``dev``, Li et al. PVLDB 2014, Sec. 3.1),
  optionally weighted: sum w_i |x_i - mean|.
* :class:`RelativeError` - sum |x_i - mean| / max(|x_i|, delta): the relative error of replacing
  each value by its group's mean (the weighted absolute / relative error a grouping such as
  SReB_GCA minimises; weights 1 / max(|x_i|, delta)).

User costs: :class:`IntervalCost` wraps a vectorised ``fn(starts, ends)``; :class:`GroupCost`
wraps ``fn(group_values) -> float`` (one Python call per group: slow but simple); any plain
callable given to a search mode is taken as an :class:`IntervalCost`.
"""
from __future__ import annotations

from typing import Callable

from functools import partial

import numpy as np

from ..errors import InvalidParameter
from ..intervals import centred_prefix_sums, interval_sse
from ..validation import finite_vector
from ._lazy import compiled_for, kernels


class Cost:
    """The cost of groups of consecutive positions.  Subclasses implement :meth:`intervals`."""

    #: number of positions of the sequence
    n: int = 0

    def intervals(self, starts, ends) -> np.ndarray:
        raise NotImplementedError

    # -- batches asked for by the search modes; the defaults go through intervals()
    def rows_from(self, first_unit: int, bounds: np.ndarray) -> np.ndarray:
        """Costs of units [first_unit, e) for e = first_unit+1 .. k, in that order."""
        ends = bounds[first_unit + 1:]
        return self.intervals(np.full(ends.size, bounds[first_unit]), ends)

    def rows_between(self, first: int, stop: int, bounds: np.ndarray, threads: int = 1, finish=None) -> list:
        """The rows of :meth:`rows_from` for the first units ``first .. stop - 1``, in that order (a
        block of the exact search), each passed through ``finish(first_unit, row)`` when given.  The
        default asks for them one by one; a cost whose rows are independent may compute (and
        finish) them on up to ``threads`` threads (:class:`L1Deviation`)."""
        rows = [self.rows_from(a, bounds) for a in range(first, stop)]
        return rows if finish is None else [finish(a, row) for a, row in zip(range(first, stop), rows)]

    def windows(self, length: int, bounds: np.ndarray) -> np.ndarray:
        """Costs of units [a, a + length) for a = 0 .. k - length, in that order."""
        k = bounds.size - 1
        return self.intervals(bounds[:k - length + 1], bounds[length:])

    def nodes(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """Costs of disjoint, sorted position ranges (one level of a tree), in that order."""
        return self.intervals(starts, ends)

    def then(self, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> "Perturbed":
        """This cost with ``fn(costs, sizes)`` applied to every batch of costs (see :class:`Perturbed`)."""
        return Perturbed(self, fn)


class SSEPenalty(Cost):
    """SSE(group) + penalty[|group|], O(1) per group from centred prefix sums.

    ``penalty``: a callable of the group sizes (evaluated once on 1..n), or an array of length
    ``n + 1`` indexed by size (entry 0 unused).  A callable with a true attribute ``elementwise``
    declares that each output depends on its own size alone, by the same operations whatever the
    array: its tables are then built only when a search reads them, and :meth:`intervals` evaluates
    it on the sizes asked (the same numbers; the tree mode reads a few sizes of n, and two tables of
    n floats were 2x the input's memory and a tenth of S_2 + H's time).  :meth:`inverse_size` builds penalty c / size
    (AHP), whose per-position share c / size^2 the look-ahead greedy uses.

    ``penalty_last``: the compiled searches add a candidate group to a running total as
    (total + SSE) + penalty instead of total + (SSE + penalty).  Equal in exact arithmetic; it
    exists so that SORTaki's partitioners, which summed in that order before they were ported
    onto the engine, publish bit-identical releases (a near-tie can fall either way by one ulp).
    """

    #: c when the penalty is c / size (the kernels then compute c / m and c / m^2), else -1
    inverse_c: float = -1.0

    def __init__(self, values, penalty, *, penalty_last: bool = False):
        self.values = finite_vector(values, "values")
        self.n = self.values.size
        self.penalty_last = bool(penalty_last)
        self._sums = None
        self._set_penalty(penalty)

    @classmethod
    def from_prefix_sums(cls, prefix, prefix_sq, penalty, *, penalty_last: bool = False) -> "SSEPenalty":
        """From precomputed prefix sums (leading 0) of the values and of their squares."""
        self = cls.__new__(cls)
        sums = (np.ascontiguousarray(prefix, dtype=float), np.ascontiguousarray(prefix_sq, dtype=float))
        if sums[0].ndim != 1 or sums[0].size < 2 or sums[1].shape != sums[0].shape:
            raise InvalidParameter("prefix sums must be two 1-D vectors of equal length >= 2 (leading 0)")
        self._sums = sums
        self.values = None
        self.n = sums[0].size - 1
        self.penalty_last = bool(penalty_last)
        self._set_penalty(penalty)
        return self

    @classmethod
    def inverse_size(cls, values, coefficient: float) -> "SSEPenalty":
        """SSE + c / size (AHP's group error with c = 2 / eps_2^2).  Its tables are built only
        when a search reads them: the look-ahead greedy and the k-group DP use the closed forms."""
        c = float(coefficient)
        if not np.isfinite(c) or c < 0:
            raise InvalidParameter(f"the inverse-size penalty needs a finite coefficient >= 0, got {coefficient!r}")
        self = cls.__new__(cls)
        self.values = finite_vector(values, "values")
        self.n = self.values.size
        self.penalty_last = False
        self._sums = None
        self.inverse_c = c
        self._tables = None
        self._penalty_fn = None
        return self

    def _set_penalty(self, penalty) -> None:
        self._penalty_fn = None
        if callable(penalty) and getattr(penalty, "elementwise", False):
            self._penalty_fn, self._tables = penalty, None       # tables on first read (_penalty_tables)
            return
        self._tables = self._tables_of(penalty)

    def _tables_of(self, penalty):
        sizes = np.arange(1, self.n + 1, dtype=np.int64)
        if callable(penalty):
            table = np.r_[0.0, np.asarray(penalty(sizes), dtype=float)]
        else:
            table = np.asarray(penalty, dtype=float)
        if table.shape != (self.n + 1,):
            raise InvalidParameter(f"the size penalty must give one value per size 1..{self.n}, got shape {table.shape}")
        if not np.all(np.isfinite(table[1:])):
            raise InvalidParameter("the size penalty is not finite")
        table = np.ascontiguousarray(table)
        return table, np.r_[0.0, table[1:] / sizes]

    def _penalty_at(self, sizes: np.ndarray) -> np.ndarray:
        """penalty[m] for each size m in ``sizes`` (from the tables, or from an elementwise callable)."""
        if self._tables is not None or self._penalty_fn is None:
            return self.penalty[sizes]
        out = np.asarray(self._penalty_fn(sizes), dtype=float)
        if out.shape != sizes.shape:
            raise InvalidParameter(f"the size penalty must give one value per size, got shape {out.shape} "
                                   f"for {sizes.shape}")
        if not np.all(np.isfinite(out)):
            raise InvalidParameter("the size penalty is not finite")
        return out

    @property
    def penalty(self) -> np.ndarray:
        """penalty[m] for a group of m positions (entry 0 unused)."""
        return self._penalty_tables()[0]

    @property
    def share(self) -> np.ndarray:
        """share[m] = penalty[m] / m: one position's part of a group's penalty (for c / m, c / m^2
        with one rounding)."""
        return self._penalty_tables()[1]

    def _penalty_tables(self):
        if self._tables is None and self._penalty_fn is not None:
            self._tables = self._tables_of(self._penalty_fn)
        if self._tables is None:       # c / size: one rounding each, as the closed forms in the kernels
            m = np.arange(1, self.n + 1, dtype=np.int64)
            self._tables = (np.r_[0.0, self.inverse_c / m], np.r_[0.0, self.inverse_c / (m * m)])
        return self._tables

    @property
    def prefix(self) -> np.ndarray:
        """Prefix sums (leading 0) of the centred values."""
        return self._prefix_sums()[0]

    @property
    def prefix_sq(self) -> np.ndarray:
        """Prefix sums (leading 0) of the squared centred values."""
        return self._prefix_sums()[1]

    def _prefix_sums(self):
        if self._sums is None:
            if self.n and compiled_for(self.n):    # one compiled pass, no centred copy: the same sums (._tree_kernels)
                from ._tree_kernels import centred_prefix
                p, p2 = np.empty(self.n + 1), np.empty(self.n + 1)
                centred_prefix(self.values, self.values.mean(), p, p2)
                self._sums = (p, p2)
            else:
                self._sums = centred_prefix_sums(self.values)
        return self._sums

    def keep_prefix_sums_only(self) -> None:
        """Make the prefix sums and drop the values (memory): the modes that read only the sums (all but
        the look-ahead greedy, which then refuses the cost) give the same results.  When the cost holds the
        only reference to its values (a float64 array owning its memory, as the caller's last reference
        handed over), the centred prefix sums are written over the values and the array grown by one
        in place (``ndarray.resize``): the same floats, one array of n fewer alive while they are made."""
        if self._sums is None and self.n and compiled_for(self.n) and self._values_owned():
            from ._tree_kernels import centred_prefix_over
            values, self.values = self.values, None
            mean = values.mean()
            p2 = np.empty(self.n + 1)
            last = centred_prefix_over(values, mean, p2)
            try:
                values.resize(self.n + 1)    # refuses (ValueError) if anything else (a debugger, a profiler's
                values[self.n] = last        # frame) holds the array: then a copy, the same floats
            except ValueError:
                values = np.append(values, last)
            self._sums = (values, p2)
            return
        self._prefix_sums()
        self.values = None

    def _values_owned(self) -> bool:
        """Whether this cost's values are a float64 vector that nothing but the cost references
        (:func:`dphist.validation.sole_float_vector`, the one holder its ``values`` attribute)."""
        from ..validation import sole_float_vector
        return sole_float_vector(self.values, holders=1)

    def nodes(self, starts, ends):
        if not compiled_for(self.n):
            return self.intervals(starts, ends)
        from ._tree_kernels import size_range, sse_nodes     # interval_sse + penalty in one pass: the same numbers
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        lo, hi = size_range(starts, ends)
        if hi - lo <= max(64, starts.size // 4):     # a tree level's few sizes: the penalty of their range, read
            table = self._penalty_at(np.arange(lo, hi + 1, dtype=np.int64))
            return sse_nodes(self.prefix, self.prefix_sq, starts, ends, table, lo, np.empty(starts.size))
        out = sse_nodes(self.prefix, self.prefix_sq, starts, ends, np.zeros(1), -1, np.empty(starts.size))
        out += self._penalty_at(ends - starts)
        return out

    def intervals(self, starts, ends):
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        return interval_sse(starts, ends, self.prefix, self.prefix_sq) + self._penalty_at(ends - starts)

    def penalty_is_convex(self) -> bool:
        """Whether the penalty is convex in the size (second differences >= -1e-12 x its scale):
        with SSE on sorted values, the condition under which the cost is Monge."""
        if self.inverse_c >= 0:
            return True                 # c / m: second difference 2c / (m (m+1) (m+2)) >= 0
        d2 = np.diff(self.penalty[1:], 2)
        scale = float(np.max(np.abs(self.penalty[1:]), initial=0.0))
        return bool(np.all(d2 >= -1e-12 * max(scale, 1.0)))


class L1Deviation(Cost):
    """sum_{i in group} w_i |x_i - mean(group)| (DAWA's deviation with unit weights).

    Windows cost O(n log n) per length (a Fenwick tree over the ranks of the values, as in DAWA
    Section 3.1); disjoint groups O(n).  The ranks are sorted on first use: the tree mode reads
    only disjoint groups and never needs them (0.1 s of its 0.3 s at n = 2^20).

    Rows (the exact search): with unit weights and integer values (DAWA's counts, rounded noisy
    counts), rows asked for in turn (first unit 0, 1, 2, ...) cost O(n) each plus the walk of
    a pointer over the distinct values the group mean passes: each row shrinks the set of units
    [a, k) from the right in a linked list that restores itself
    (:func:`.kernels.l1_deletion_rows`, two rows per pass), about 5x faster than a Fenwick query per candidate at
    n = 8,192 (0.32 s against 1.64 s for all rows).  The sums are exact integers, so both routes give bit-identical costs; weighted or
    non-integer values take the Fenwick route.
    """

    def __init__(self, values, weights=None):
        self.values = finite_vector(values, "values")
        self.n = self.values.size
        self._unit_weights = weights is None
        if weights is None:
            self._ones = None                 # unit weights, built on first use (the counting route needs none)
        else:
            self.weights = finite_vector(weights, "weights")
            if self.weights.shape != self.values.shape or np.any(self.weights < 0):
                raise InvalidParameter("weights must be non-negative, one per value")
        self._ranks = None
        self._rows = None
        self._exact_sums = None
        self._distinct = None

    @property
    def weights(self) -> np.ndarray:
        if self._unit_weights:
            if self._ones is None:
                self._ones = np.ones(self.n)
            return self._ones
        return self.__dict__["weights"]

    @weights.setter
    def weights(self, value) -> None:
        self.__dict__["weights"] = value

    def _rank_structure(self):
        """1-based rank of every position (ties broken by position) and the sorted values."""
        if self._ranks is None:
            order = np.argsort(self.values, kind="stable")
            rank = np.empty(self.n, dtype=np.int64)
            rank[order] = np.arange(1, self.n + 1)
            self._ranks = (rank, self.values[order])
        return self._ranks

    @property
    def rank(self) -> np.ndarray:
        return self._rank_structure()[0]

    @property
    def sorted_values(self) -> np.ndarray:
        return self._rank_structure()[1]

    def intervals(self, starts, ends):
        return kernels.deviations_direct(self.values, self.weights, np.asarray(starts, dtype=np.int64),
                                         np.asarray(ends, dtype=np.int64))

    def _exact_route(self) -> bool:
        """Whether rows take the linked-list route: unit weights, integers, sums exact in floats."""
        if self._exact_sums is None:
            x = self.values
            self._exact_sums = (self._unit_weights and bool(np.all(x == np.rint(x)))
                                and float(np.abs(x).sum()) < 2.0 ** 53)
        return self._exact_sums

    def rows_from(self, first_unit, bounds):
        if self._exact_route():
            rows = self._rows
            if rows is None or not rows.continues(first_unit, bounds):
                rows = self._rows = _RowsByDeletion(self.values, bounds, first_unit)
            return rows.next_row()
        out = np.empty(bounds.size - 1 - first_unit)
        kernels.deviations_from(self.values, self.weights, self.rank, self.sorted_values, bounds, first_unit, out)
        return out

    def rows_between(self, first, stop, bounds, threads=1, finish=None):
        """Rows ``first .. stop - 1`` on up to ``threads`` threads: runs of an even number of
        consecutive rows (one deletion pass gives two), each on its own linked list
        (:class:`_RowsByDeletion`, skipped forward to the run's first unit), taken in turn by the
        threads, which also apply ``finish``.  The rows are the serial ones, bit for bit (the same
        sets, exact sums)."""
        if threads <= 1 or stop - first < 4 or not self._exact_route():
            return super().rows_between(first, stop, bounds, finish=finish)
        from . import parallel
        runs = parallel.split(first, stop, PARTS_PER_THREAD * threads, multiple=2)
        states = getattr(self, "_thread_rows", None)
        if states is None or len(states) < len(runs) or not all(st.same_bounds(bounds) for st in states):
            states = self._thread_rows = [_RowsByDeletion(self.values, bounds, a) for a, _ in runs]
        out = [None] * (stop - first)

        def work(state, a, b):
            for i, row in enumerate(state.rows(a, b)):
                out[a - first + i] = row if finish is None else finish(a + i, row)

        parallel.run_all([lambda st=st, a=a, b=b: work(st, a, b) for st, (a, b) in zip(states, runs)], threads)
        return out

    def row_tasks(self, first, stop, bounds, threads, out):
        """The rows ``first .. stop - 1`` as tasks for threads, each writing the rows of one run (runs of an
        even number of consecutive rows, each on its own linked list, as :meth:`rows_between`) into
        ``out[u - first, :k - u]`` (``out``: C-contiguous, at least ``k - first`` wide), or None off the
        exact route.  The same numbers as :meth:`rows_from`."""
        if not self._exact_route():
            return None
        from . import parallel
        runs = parallel.split(first, stop, PARTS_PER_THREAD * threads, multiple=2)
        states = getattr(self, "_thread_rows", None)
        if states is None or len(states) < len(runs) or not all(st.same_bounds(bounds) for st in states):
            states = self._thread_rows = [_RowsByDeletion(self.values, bounds, a) for a, _ in runs]
        return [partial(st.rows_into, a, b, out[a - first:b - first]) for st, (a, b) in zip(states, runs)]

    def windows(self, length, bounds):
        k = bounds.size - 1
        stream = self.window_stream(bounds, [length])
        if stream is not None and length <= k:   # counted over distinct integers: the same numbers
            return stream.block(length, k + 1)[0]
        out = np.empty(bounds.size - length)
        kernels.deviations_of_length(self.values, self.weights, self.rank, self.sorted_values, bounds, length, out)
        return out

    def window_stream(self, bounds, lengths):
        """The windows of every length in ``lengths`` block by block of ends
        (:class:`._windows.CountingWindows`), or None: on the exact route only (unit weights, integers,
        exact sums), where counting over the distinct values gives the Fenwick route's numbers bit for
        bit with O(n + walk) work per length and no rank sort."""
        if not self._exact_route():
            return None
        from ._windows import CountingWindows, distinct_values

        def distinct():     # sorted once per cost, on first need (one window length after another reuses it)
            if self._distinct is None:
                self._distinct = distinct_values(self.values)
            return self._distinct
        return CountingWindows(self.values, bounds, lengths, distinct)

    def nodes(self, starts, ends):
        if self._unit_weights and compiled_for(self.n):   # one compiled pass per range: numpy's sums bit for bit
            from ._tree_kernels import l1_nodes
            starts = np.ascontiguousarray(starts, dtype=np.int64)
            return l1_nodes(self.values, starts, np.ascontiguousarray(ends, dtype=np.int64), np.empty(starts.size))
        sizes = ends - starts
        heads = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        # lay the ranges side by side; segment sums by reduceat
        idx = np.repeat(starts - heads, sizes) + np.arange(sizes.sum())
        seg = self.values[idx]
        means = np.add.reduceat(seg, heads) / sizes
        dev = np.abs(seg - np.repeat(means, sizes))
        return np.add.reduceat(dev if self._unit_weights else self.weights[idx] * dev, heads)


#: runs of rows per thread in a block of the threaded exact search, each on its own linked list, taken
#: in turn by the threads (see parallel.run_all)
PARTS_PER_THREAD = 4


class _RowsByDeletion:
    """The state of :func:`.kernels.l1_deletion_rows` between rows: the linked list of the distinct
    values of units [first_unit, k), the pointer at their mean, and the second row of the last
    pair (rows come two per pass)."""

    def __init__(self, values, bounds, first_unit):
        self.values = values
        distinct, node = np.unique(values, return_inverse=True)
        self.dv = np.concatenate(([0.0], distinct, [0.0]))       # nodes 0 and -1 end the list
        self.node = node.astype(np.uint64) + np.uint64(1)
        self.bounds = bounds
        self.first_unit = int(first_unit)
        self.pending = None
        size = self.dv.size
        self.mult, self.linked = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
        self.prv, self.nxt = np.zeros(size, dtype=np.uint64), np.zeros(size, dtype=np.uint64)
        self.acc = np.zeros(4)
        self.pointer = kernels.l1_deletion_start(self.node, self.dv, bounds, self.first_unit, self.mult,
                                                 self.linked, self.prv, self.nxt, self.acc)

    def same_bounds(self, bounds) -> bool:
        return bounds is self.bounds or np.array_equal(bounds, self.bounds)

    def continues(self, first_unit, bounds) -> bool:
        return first_unit == self.first_unit and self.same_bounds(bounds)

    def rows(self, first: int, stop: int) -> list:
        """Rows ``first .. stop - 1``: the list skips forward to ``first`` (rebuilt when it is past it)."""
        at = self.first_unit + (self.pending is not None)       # the list holds units [at, k)
        if first < self.first_unit:
            self.__init__(self.values, self.bounds, first)
        elif first > self.first_unit:
            if first > at:
                self.pointer = kernels.l1_deletion_skip(self.node, self.dv, self.bounds, at, first, self.mult,
                                                        self.linked, self.prv, self.nxt, self.pointer, self.acc)
            self.pending = None
            self.first_unit = first
        k = self.bounds.size - 1
        if self.pending is not None or ((stop - first) % 2 and stop < k):
            return [self.next_row() for _ in range(first, stop)]
        block = np.empty((stop - first, k - first))
        self._block_into(first, stop, block)
        return [block[i, :k - first - i] for i in range(stop - first)]

    def rows_into(self, first: int, stop: int, out: np.ndarray) -> None:
        """Rows ``first .. stop - 1`` into ``out[i, :k - first - i]`` (as :meth:`rows`, no new arrays)."""
        k = self.bounds.size - 1
        rows = self.rows(first, stop) if self.pending is not None or ((stop - first) % 2 and stop < k) else None
        if rows is None:
            self.rows(first, first)             # skips forward to first
            self._block_into(first, stop, out)
        else:
            for i, row in enumerate(rows):
                out[i, :row.size] = row

    def _block_into(self, first, stop, out):
        self.pointer = kernels.l1_deletion_block(self.node, self.dv, self.bounds, first, stop, self.mult, self.linked,
                                                 self.prv, self.nxt, self.pointer, self.acc, out)
        self.first_unit = stop

    def next_row(self) -> np.ndarray:
        """The row of ``first_unit`` (computed with its partner, or the partner kept from the last pass)."""
        row, self.pending = self.pending, None
        if row is None:
            row = np.empty(self.bounds.size - 1 - self.first_unit)
            second = np.empty(max(row.size - 1, 0))
            self.pointer = kernels.l1_deletion_rows(self.node, self.dv, self.bounds, self.first_unit, self.mult,
                                                    self.linked, self.prv, self.nxt, self.pointer, self.acc,
                                                    row, second)
            self.pending = second if second.size else None
        self.first_unit += 1
        return row


class RelativeError(L1Deviation):
    """sum_{i in group} |x_i - mean(group)| / max(|x_i|, delta): L1 deviation with weights
    1 / max(|x_i|, delta) (``delta`` > 0 keeps zero counts finite)."""

    def __init__(self, values, delta: float = 1.0):
        delta = float(delta)
        if not np.isfinite(delta) or delta <= 0:
            raise InvalidParameter(f"the relative error needs delta > 0, got {delta!r}")
        x = finite_vector(values, "values")
        super().__init__(x, 1.0 / np.maximum(np.abs(x), delta))


class IntervalCost(Cost):
    """A user cost ``fn(starts, ends) -> costs``, vectorised over groups of positions [start, end)."""

    def __init__(self, fn: Callable, n: int):
        if not callable(fn):
            raise InvalidParameter(f"a cost must be callable as fn(starts, ends), got {fn!r}")
        self.fn = fn
        self.n = int(n)

    def intervals(self, starts, ends):
        starts = np.asarray(starts, dtype=np.int64)
        out = np.asarray(self.fn(starts, np.asarray(ends, dtype=np.int64)), dtype=float)
        if out.shape != starts.shape:
            raise InvalidParameter(f"the cost returned shape {out.shape} for {starts.size} groups; "
                                   "it must return one cost per group (one error per bin)")
        if np.isnan(out).any():
            raise InvalidParameter("the cost returned NaN")
        return out


class GroupCost(IntervalCost):
    """A user cost ``fn(group_values) -> float``, called once per group (slow but simple)."""

    def __init__(self, fn: Callable, values):
        x = finite_vector(values, "values")
        super().__init__(lambda s, e: np.array([float(fn(x[a:b])) for a, b in zip(s, e)]), x.size)


class Perturbed(Cost):
    """``fn(costs, sizes)`` applied to every batch of costs the search asks for (``sizes``: the
    candidates' sizes in positions), e.g. noise for a private search (DAWA adds Laplace noise and
    a public constant to every candidate's deviation, or removes the expected deviation of noise).

    ``fn.size_offsets(n, shared) -> (minus, plus)`` declares more: ``fn(costs, sizes)`` is
    ``(costs - minus[sizes]) + plus`` bit for bit (no state, no randomness), so the power-of-two search
    streams the windows by blocks of ends and applies it in its compiled loop
    (:func:`dphist.segmentation.power_of_two_shared`; the same numbers), and so does the exact search on
    threads over an :class:`L1Deviation` on its exact route (``search._compiled_rows_on_threads``).
    ``fn.noisy_rows`` (the kernel's report-noisy-min, :class:`dphist.kernel.private.NoisyRows`) declares
    ``(noise + clamp(costs)) + group cost`` with the noise a cuttable stream: that route too.

    Batch order (the order in which ``fn`` sees the candidates): exact search - rows by first
    unit ascending, each row by end ascending (on threads too, unless ``fn.thread_safe`` is true:
    ``fn`` then declares that its output for a batch depends on that batch's costs and sizes alone,
    with no state and no randomness, and the threads apply it to their rows as they come); power-of-two lengths - by length ascending, each by
    start ascending; tree - levels bottom-up, nodes left to right; exactly-k - one row per first
    unit as in the exact search.  Each candidate is seen once.

    ``fn.batches(costs_list, sizes_list, threads)`` (optional) declares a faster route for the exact
    search on threads: it returns ``[fn(c, s) for c, s in zip(costs_list, sizes_list)]`` bit for bit and
    leaves ``fn``'s randomness where that loop leaves it, possibly working on up to ``threads`` threads
    (the kernel's report-noisy-min draws its noise that way: :mod:`dphist.kernel.streams`).
    """

    def __init__(self, inner: Cost, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
        self.inner, self.fn, self.n = inner, fn, inner.n

    def _apply(self, costs, sizes):
        out = np.asarray(self.fn(costs, sizes), dtype=float)
        if out.shape != np.shape(costs):
            raise InvalidParameter("a cost transform must return one cost per candidate")
        return out

    def intervals(self, starts, ends):
        return self._apply(self.inner.intervals(starts, ends), np.asarray(ends) - np.asarray(starts))

    def rows_from(self, first_unit, bounds):
        return self._apply(self.inner.rows_from(first_unit, bounds), bounds[first_unit + 1:] - bounds[first_unit])

    def rows_between(self, first, stop, bounds, threads=1, finish=None):
        def apply(a, row):
            out = self._apply(row, bounds[a + 1:] - bounds[a])
            return out if finish is None else finish(a, out)
        if getattr(self.fn, "thread_safe", False):   # no state, no randomness: applied on the threads
            return self.inner.rows_between(first, stop, bounds, threads, apply)
        # the inner rows may come from threads; fn sees them one by one, in order, as from rows_from
        rows = self.inner.rows_between(first, stop, bounds, threads)
        batches = getattr(self.fn, "batches", None)
        if batches is None or threads <= 1:
            return [apply(a, row) for a, row in zip(range(first, stop), rows)]
        outs = [np.asarray(out, dtype=float) for out in batches(rows, _RowSizes(bounds, first, stop), threads)]
        if len(outs) != len(rows) or any(out.shape != row.shape for out, row in zip(outs, rows)):
            raise InvalidParameter("a cost transform must return one cost per candidate")
        if finish is None:
            return outs
        from . import parallel
        runs = parallel.split(first, stop, PARTS_PER_THREAD * threads)
        done = [None] * (stop - first)

        def finish_run(a, b):       # finish is called from threads by the costs that compute rows on threads
            for u in range(a, b):
                done[u - first] = finish(u, outs[u - first])

        parallel.run_all([lambda a=a, b=b: finish_run(a, b) for a, b in runs], threads)
        return done

    def windows(self, length, bounds):
        m = bounds.size - length
        return self._apply(self.inner.windows(length, bounds), bounds[length:length + m] - bounds[:m])

    def nodes(self, starts, ends):
        return self._apply(self.inner.nodes(starts, ends), ends - starts)


class _RowSizes:
    """The sizes of the candidates of rows ``first .. stop - 1`` (:meth:`Cost.rows_from`), row by row as
    asked for (``sizes[i]`` is row ``first + i``'s), so that a transform that never reads them does not pay."""

    def __init__(self, bounds, first: int, stop: int):
        self.bounds, self.first, self.stop = bounds, first, stop

    def __len__(self) -> int:
        return self.stop - self.first

    def __getitem__(self, i: int) -> np.ndarray:
        if not 0 <= i < len(self):
            raise IndexError(i)
        a = self.first + i
        return self.bounds[a + 1:] - self.bounds[a]

    def __iter__(self):
        return (self[i] for i in range(len(self)))


def as_cost(cost, n: int | None = None) -> Cost:
    """A :class:`Cost` from a cost, or from a vectorised callable over ``n`` positions."""
    if isinstance(cost, Cost):
        return cost
    if callable(cost):
        if n is None:
            raise InvalidParameter("a callable cost needs the number of positions n (pass n=...)")
        return IntervalCost(cost, n)
    raise InvalidParameter(f"expected a segmentation Cost or a callable fn(starts, ends), got {cost!r}")
