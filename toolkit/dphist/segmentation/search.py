"""The search modes of :mod:`dphist.segmentation`: exact DPs, the tree DP, the greedy scans."""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidParameter
from ..validation import are_strict_bounds
from functools import partial

from . import _lookahead, parallel
from ._lazy import compiled_for, kernels
from .costs import Cost, L1Deviation, Perturbed, SSEPenalty, as_cost

LENGTHS = ("all", "power-of-two")
BOUNDS = ("singleton", "lookahead")
_NO_MATRIX = np.zeros((0, 0))
_NO_ARRAY = np.zeros(1)
#: the look-ahead greedy (mode e) on sorted values runs interpreted up to this many positions while numba
#: is not imported yet (same cuts and total as compiled; see :mod:`._lookahead`)
INTERPRETED_MAX = 8192
#: the exact search runs on threads from this many units on (below, a few milliseconds on one core)
PARALLEL_MIN_UNITS = 2048
#: ends per block of the SSE search on threads (a cell of its graph: width^2 candidates): k / 16 up to
#: MID_BLOCK, then k / 32 up to END_BLOCK, at least SMALLEST_BLOCK (``_sse_block_width``)
END_BLOCK = 1024
MID_BLOCK = 512
SMALLEST_BLOCK = 128


def _sse_block_width(k: int) -> int:
    """Ends per block of :func:`_sse_on_threads` on ``k`` units: 16 blocks up to ``16 x MID_BLOCK`` units,
    then 32 up to ``32 x END_BLOCK``, then blocks of ``END_BLOCK``: the graph's cells number 136-528 up
    to 2^15 units (a cell's Python and scheduling, 6-8 us, under 2% of its work), while the chain of
    diagonal cells stays short enough that two threads rarely idle (both from replaying the graph with
    cells timed at 2 ns a candidate on two idle threads, ``_graph_span`` of
    ``benchmarks/parallel_cpu_split.py``: n = 32,768 1.961x of the serial loop with blocks of 1,024
    against 1.944x with 512, n = 8,192 1.876x with 512 against 1.803x with 256)."""
    return min(END_BLOCK, max(SMALLEST_BLOCK, min(k // 16, max(MID_BLOCK, k // 32))))
#: rows per thread and block of the row-by-row search on threads (memory: threads x ROW_BLOCK rows)
ROW_BLOCK = 32
#: parts per thread of a block of rows, taken in turn by the threads (a descheduled thread on a shared
#: machine then holds up one small part, not half the block)
PARTS_PER_THREAD = 4


@dataclass(frozen=True)
class Segmentation:
    """A segmentation of k units: ``bounds`` are unit indices ``0 = b_0 < ... < b_m = k`` (group g is
    units ``[b_g, b_{g+1})``, ready for :meth:`dphist.Partition.merge`) and ``cost`` its total cost."""

    bounds: np.ndarray
    cost: float

    @property
    def starts(self) -> np.ndarray:
        return self.bounds[:-1]

    @property
    def n_groups(self) -> int:
        return self.bounds.size - 1


def units_of(bounds, n: int) -> np.ndarray:
    """Validated unit bounds over ``n`` positions (``None``: every position is a unit)."""
    if bounds is None:
        return np.arange(n + 1, dtype=np.int64)
    b = np.ascontiguousarray(bounds, dtype=np.int64)
    if not are_strict_bounds(b, n):
        raise InvalidParameter(f"unit bounds must increase strictly from 0 to the number of positions {n}")
    return b


def _prepare(cost, bounds, n):
    cost = as_cost(cost, n)
    return cost, units_of(bounds, cost.n)


def _trace(back: np.ndarray, k: int) -> np.ndarray:
    out = [k]
    while out[-1] > 0:
        out.append(int(back[out[-1]]))
    return np.array(out[::-1], dtype=np.int64)


def total_cost(cost, groups, bounds=None, n: int | None = None) -> float:
    """Total cost of the groups ``units[groups[g]:groups[g+1]]`` (``groups`` from 0 to k)."""
    cost, units = _prepare(cost, bounds, n)
    g = np.asarray(groups, dtype=np.int64)
    return float(np.sum(cost.intervals(units[g[:-1]], units[g[1:]])))


def optimal(cost, bounds=None, *, lengths: str = "all", longest_on_ties: bool = True,
            n: int | None = None, threads: int | None = None) -> Segmentation:
    """The segmentation of least total cost, any number of groups (Jagadish et al. 1998's DP).

    ``lengths="all"``: every run of units is a candidate group, O(k^2) cost evaluations (mode a).
    ``lengths="power-of-two"``: only runs of 2^j units, O(k log k) (mode b; DAWA's and SORTaki's
    scalable variant).  ``bounds`` groups the positions into indivisible units (default: every
    position); ``n`` is needed only for a plain callable cost.  Ties keep the longest optimal last
    group; ``longest_on_ties=False`` keeps the shortest instead, in the power-of-two mode only
    (SORTaki's DPP, kept for its releases).

    ``threads``: the exact mode (``lengths="all"``) on at least ``PARALLEL_MIN_UNITS`` units runs
    on this many threads (default :func:`dphist.segmentation.parallel.default_threads`: every core,
    or ``DPHIST_THREADS`` / ``NUMBA_NUM_THREADS``); the result is bit-identical for every count.
    """
    threads = parallel.resolve(threads)
    if lengths not in LENGTHS:
        raise InvalidParameter(f"unknown candidate lengths {lengths!r}; use one of {', '.join(LENGTHS)}")
    if lengths == "all" and not longest_on_ties:
        raise InvalidParameter("longest_on_ties=False is offered for lengths='power-of-two' only")
    cost, units = _prepare(cost, bounds, n)
    k = units.size - 1
    if lengths == "all":
        on_threads = threads > 1 and k >= PARALLEL_MIN_UNITS
        if type(cost) is SSEPenalty:
            args = (units, cost.prefix, cost.prefix_sq, cost.penalty, cost.penalty_last)
            best, back = _sse_on_threads(args, k, threads) if on_threads else kernels.sse_all_intervals(*args)
        else:
            best = np.full(k + 1, np.inf)
            best[0] = 0.0
            back = np.zeros(k + 1, dtype=np.int64)
            if on_threads:
                _rows_on_threads(cost, units, best, back, threads)
            for a in range(k if on_threads else 0, k):  # rows by first unit: best[a] is final once rows < a are relaxed
                kernels.relax_row(best, back, a, np.ascontiguousarray(cost.rows_from(a, units), dtype=float))
    else:
        if type(cost) is SSEPenalty:
            best, back = kernels.power_of_two_lengths(units, cost.prefix, cost.prefix_sq, cost.penalty,
                                                      _NO_MATRIX, cost.penalty_last, bool(longest_on_ties))
        else:
            n_lengths = int(np.floor(np.log2(k))) + 1
            plan = _stream_plan(cost, units, n_lengths)
            if plan is not None:
                return _power_of_two_streamed(plan[0], [plan[1]], units, n_lengths, bool(longest_on_ties),
                                              threads)[0]
            windows = np.full((n_lengths, k), np.inf)
            for j in range(n_lengths):
                windows[j, :k - (1 << j) + 1] = cost.windows(1 << j, units)
            best, back = kernels.power_of_two_lengths(units, _NO_ARRAY, _NO_ARRAY, _NO_ARRAY, windows, False,
                                                      bool(longest_on_ties))
    return Segmentation(_trace(back, k), float(best[k]))


#: ends per block of the streamed power-of-two search (the windows of one block: log2(k) x STREAM_BLOCK costs)
STREAM_BLOCK = 8192


def _no_offsets(n: int):
    return np.zeros(n + 1), 0.0


def _stream_plan(cost, units, n_lengths: int):
    """``(window stream, (minus, plus))`` for the streamed power-of-two search of ``cost``, or None: a
    :class:`Perturbed` cost whose ``fn`` states its arithmetic (``fn.size_offsets``) over a cost that
    streams its windows (``window_stream``), or any cost that streams them itself."""
    lengths = 1 << np.arange(n_lengths)
    fn = getattr(cost, "fn", None)
    inner = getattr(getattr(cost, "inner", None), "window_stream", None)
    if isinstance(cost, Perturbed) and hasattr(fn, "size_offsets") and inner is not None:
        stream = inner(units, lengths)
        if stream is not None:
            return stream, fn.size_offsets(cost.n, {})
    own = getattr(cost, "window_stream", None)
    stream = None if own is None else own(units, lengths)
    return None if stream is None else (stream, _no_offsets(cost.n))


#: the streamed power-of-two search overlaps the next block's windows with this block's searches on two
#: threads from this many ends on (below, the hand-over per block would cost more than it saves)
STREAM_THREADS_MIN = 1 << 16


def _power_of_two_streamed(stream, offsets, units, n_lengths: int, longest: bool,
                           threads: int | None = None) -> list[Segmentation]:
    """Mode (b) with the windows streamed by blocks of ends, one search per ``(minus, plus)`` of
    ``offsets`` on the same windows: :func:`.kernels.power_of_two_lengths`, block after block, without
    the ``log2(k) x k`` matrix (each search keeps ``best`` and one byte per end).

    On two threads or more (``threads``, default :func:`.parallel.default_threads`) and at least
    ``STREAM_THREADS_MIN`` ends, the windows of the next block are counted on one thread while the
    searches run over this block on another (two window buffers): the stream still gets its blocks in
    order, each search its blocks in order, so the same numbers and segmentations as on one thread."""
    from . import _windows
    k = units.size - 1
    width = min(STREAM_BLOCK, k)
    singles = units[-1] == k                    # every unit one position: the offsets per length
    if singles and longest:                     # every search in one call per block, rows of one array each
        n_s = len(offsets)
        bests = np.empty((n_s, k + 1))
        bests[:, 0] = 0.0
        backs = np.zeros((n_s, k + 1), dtype=np.int8)
        minus_j = np.array([minus[1 << np.arange(n_lengths)] for minus, _ in offsets], dtype=np.float64)
        plus_all = np.array([float(plus) for _, plus in offsets])
        tops, args = np.empty((n_s, width)), np.zeros((n_s, width))

        def search_block(W, e0, e1):
            _windows.power_of_two_levels_many(bests, backs, W, minus_j, plus_all, e0, e1, tops, args)

        _stream_blocks(stream, search_block, k, n_lengths, width, threads)
        return [Segmentation(_windows.trace_power_of_two(backs[i], k), float(bests[i, k])) for i in range(n_s)]
    searches = []
    for _ in offsets:
        best = np.empty(k + 1)
        best[0] = 0.0
        searches.append((best, np.zeros(k + 1, dtype=np.int8)))
    costs = None if singles else np.empty((n_lengths, width))
    zeros = np.zeros(n_lengths)
    by_length = [np.ascontiguousarray(minus[1 << np.arange(n_lengths)]) for minus, _ in offsets] if singles else None
    top, arg = np.empty(width), np.zeros(width)

    def search_block(W, e0, e1):
        for i, ((best, back_j), (minus, plus)) in enumerate(zip(searches, offsets)):
            if singles:
                _power_of_two_block(best, back_j, W, by_length[i], float(plus), e0, e1, longest, top, arg)
            else:
                _windows.offset_windows(W, units, minus, float(plus), e0, e1, costs)
                _power_of_two_block(best, back_j, costs, zeros, 0.0, e0, e1, longest, top, arg)

    _stream_blocks(stream, search_block, k, n_lengths, width, threads)
    return [Segmentation(_windows.trace_power_of_two(back_j, k), float(best[k])) for best, back_j in searches]


def _stream_blocks(stream, search_block, k: int, n_lengths: int, width: int, threads) -> None:
    """The stream's blocks of ends in order, each handed to ``search_block(W, e0, e1)`` in order; on two
    threads from ``STREAM_THREADS_MIN`` ends, the next block counted while this one is searched (with single
    positions the next block's direct rows counted after this block's search on the same thread, its sliding
    rows on the other: their loads balanced, disjoint rows)."""
    blocks = [(e0, min(k + 1, e0 + STREAM_BLOCK)) for e0 in range(1, k + 1, STREAM_BLOCK)]
    buffers = [np.empty((n_lengths, width))]
    if parallel.resolve(threads) > 1 and k >= STREAM_THREADS_MIN and len(blocks) > 1:
        buffers.append(np.empty((n_lengths, width)))
        e0, e1 = blocks[0]
        W = stream.block(e0, e1, _block_buffer(buffers[0], e1 - e0))
        split = bool(getattr(stream, "singles", False))   # the next block's direct rows on the search's thread
        for i, (e0, e1) in enumerate(blocks):
            if i + 1 < len(blocks):
                f0, f1 = blocks[i + 1]
                W_next = _block_buffer(buffers[(i + 1) % 2], f1 - f0)
                if split:
                    tasks = [partial(_then, partial(search_block, W, e0, e1), partial(stream.block, f0, f1, W_next, 1)),
                             partial(stream.block, f0, f1, W_next, 2)]
                else:
                    tasks = [partial(search_block, W, e0, e1), partial(stream.block, f0, f1, W_next)]
                parallel.run_all(tasks, 2)
                W = W_next
            else:
                search_block(W, e0, e1)
    else:
        for e0, e1 in blocks:
            search_block(stream.block(e0, e1, _block_buffer(buffers[0], e1 - e0)), e0, e1)


def _then(first, second) -> None:
    first()
    second()


def _block_buffer(buffer, width: int):
    """The windows' buffer of a block of ``width`` ends, C-contiguous (the compiled loops then step through
    its rows with unit stride): the whole buffer, or a new array for the last, shorter block."""
    return buffer if buffer.shape[1] == width else np.empty((buffer.shape[0], width))


def _power_of_two_block(best, back_j, W, minus_j, plus, e0, e1, longest, top, arg):
    """One block of ends of the streamed search: :func:`._windows.power_of_two_levels_many` (longest on ties),
    else :func:`._windows.power_of_two_block`; the same ``best`` and ``back_j``."""
    from . import _windows
    if longest:                         # one search: rows of one
        _windows.power_of_two_levels_many(best[None], back_j[None], W, minus_j[None], np.array([plus]), e0, e1,
                                          top[None], arg[None])
    else:
        _windows.power_of_two_block(best, back_j, W, minus_j, plus, e0, e1, False)


def power_of_two_shared(cost, transforms, bounds=None, *, longest_on_ties: bool = True,
                        n: int | None = None, threads: int | None = None) -> list[Segmentation]:
    """``[optimal(cost.then(fn), bounds, lengths="power-of-two") for fn in transforms]``, the windows
    computed once for all of them when ``cost`` streams its windows and every ``fn`` states its
    arithmetic (``fn.size_offsets(n, shared) -> (minus, plus)``: ``fn(costs, sizes) == (costs - minus[sizes])
    + plus``, bit for bit; ``shared``: one dict per call, where transforms may keep tables for each
    other); otherwise one search after the other, in order.  The same segmentations, for every ``threads``
    (the streamed search's: :func:`_power_of_two_streamed`)."""
    cost, units = _prepare(cost, bounds, n)
    k = units.size - 1
    transforms = list(transforms)
    stream = getattr(cost, "window_stream", None)
    if k >= 1 and stream is not None and all(hasattr(fn, "size_offsets") for fn in transforms):
        n_lengths = int(np.floor(np.log2(k))) + 1
        stream = stream(units, 1 << np.arange(n_lengths))
        if stream is not None:
            shared: dict = {}                     # one dict for the call: equal tables built once
            return _power_of_two_streamed(stream, [fn.size_offsets(cost.n, shared) for fn in transforms], units,
                                          n_lengths, bool(longest_on_ties), threads)
    return [optimal(cost.then(fn), units, lengths="power-of-two", longest_on_ties=longest_on_ties)
            for fn in transforms]


def _sse_on_threads(args, k: int, threads: int):
    """Mode (a) with an SSE + penalty cost on threads, as a graph of cells (:func:`.parallel.run_graph`,
    no join between steps).  The ends are cut into blocks ``E_0 = 1 < E_1 < ... < E_m = k + 1`` and the
    starts into columns ``[0, E_1), [E_1, E_2), ...``; cell ``(b, c)``, ``c < b``, continues the minimum of
    every end of block b over the starts of column c (:func:`.kernels.sse_scan_block`) once block c is
    final and cell ``(b, c - 1)`` is done; cell ``(b, b)`` finishes block b over its own starts, end after
    end (:func:`.kernels.sse_finish_block`).  Each end sees the same candidates, in the same (ascending)
    order, with the same strict comparison as in the serial loop.  The chain ``(b, b - 1) -> (b, b)`` of each
    block is on the critical path, and each row of cells is a chain; a free thread takes the ready cell with
    the longest chain of cells still behind it (``(b - c) + 2 (m - 1 - b)`` over m blocks: the rest of its
    row, then a cell and a diagonal per block above), so the long rows of the last blocks start early
    enough to leave no thread idle at the end (on two idle threads with equal cells: 1.997x against 1.969x
    for the least cell first, m = 64, `benchmarks/parallel_cpu_split.py`'s replay)."""
    best = np.empty(k + 1)
    best[0] = 0.0
    back = np.zeros(k + 1, dtype=np.int64)
    top = np.full(k + 1, np.inf)
    arg = np.zeros(k + 1, dtype=np.int64)
    width = _sse_block_width(k)
    edges = list(range(1, k + 1, width)) + [k + 1]
    starts = [0] + edges[1:]                        # column c: starts [starts[c], starts[c + 1])
    m = len(edges) - 1
    needs, calls, keys = {}, {}, {}
    scan, finish = kernels.sse_scan_block, kernels.sse_finish_block
    for b in range(m):
        for c in range(b + 1):
            needs[b, c] = ([(c, c)] if c < b else []) + ([(b, c - 1)] if c else [])
            # each cell's call and priority made once, before the threads start (no per-cell lookups)
            calls[b, c] = (partial(scan, *args, best, top, arg, edges[b], edges[b + 1], starts[c], starts[c + 1])
                           if c < b else partial(finish, *args, best, back, top, arg, edges[b], edges[b + 1],
                                                 starts[b]))
            keys[b, c] = (c - b - 2 * (m - 1 - b), b, c)

    parallel.run_graph(lambda node: calls[node](), needs, threads, key=keys.__getitem__)
    return best, back


def _row_form(cost, units, rows_needed: int):
    """How :func:`_compiled_rows_on_threads` relaxes the rows of ``cost``: ``(inner, relax, extra args, noise)``
    for an :class:`L1Deviation` on its exact route under a transform declaring ``size_offsets`` (DAWA's
    postprocess costs) or ``noisy_rows`` (the kernel's report-noisy-min, when its stream can be cut:
    ``noise`` the parts' maker), else None."""
    if type(cost) is not Perturbed or not isinstance(cost.inner, L1Deviation) or not cost.inner._exact_route():
        return None
    fn = cost.fn
    form = getattr(fn, "noisy_rows", None)
    if form is not None:
        if form.parts([0, rows_needed]) is None:    # release mode: no stream to cut
            return None
        table = _NO_ARRAY if form.table is None else np.ascontiguousarray(form.table, dtype=float)
        extra = 0.0 if form.extra is None else float(form.extra)
        return cost.inner, kernels.relax_block_noisy, (form.cap, table, extra, form.table is not None), form.parts
    if getattr(fn, "thread_safe", False) and hasattr(fn, "size_offsets"):
        minus, plus = fn.size_offsets(int(units[-1]))
        return cost.inner, kernels.relax_block_offsets, (np.ascontiguousarray(minus, dtype=float), float(plus)), None
    return None


def _compiled_rows_on_threads(form, units, best, back, threads: int) -> None:
    """Mode (a) for the costs of :func:`_row_form` on threads, by blocks of ``ROW_BLOCK x threads`` rows,
    one join per block: the threads compute block b + 1's rows straight into one of two buffers (and draw
    their noise into one of two more, one part of the serial stream per thread: :meth:`.LaplaceParts.fill`) while they
    relax the ends beyond block b from the other buffer; after the join block b + 1's noise is settled
    (the serial values, the generator at the serial end) and its own ends relaxed by this thread, row after
    row.  The relax loops apply the transform to each candidate as they read it (the same operations as the
    transform on the row).  Every end sees every row in increasing order with the serial comparison."""
    inner, relax, extra, noise_parts = form
    k = units.size - 1
    step = ROW_BLOCK * threads
    blocks = [(a, min(k, a + step)) for a in range(0, k, step)]
    slots = [np.empty(min(step, k) * k) for _ in range(min(2, len(blocks)))]   # reused: no page faults per block
    noise_slots = [np.empty(min(step, k) * k) for _ in slots] if noise_parts is not None else None

    def start(b):
        """Block b's row tasks, what runs after them, and its relax(e_lo, e_hi)."""
        a, stop = blocks[b]
        block = slots[b % 2][:(stop - a) * (k - a)].reshape(stop - a, k - a)
        tasks = inner.row_tasks(a, stop, units, threads, block)
        after, args = (lambda: None), extra
        if noise_parts is not None:       # the block's draws in one part per thread, taken first (the largest)
            offsets = np.zeros(stop - a + 1, dtype=np.int64)
            np.cumsum(k - np.arange(a, stop), out=offsets[1:])
            total = int(offsets[-1])
            cuts = sorted({total * i // threads for i in range(threads + 1)})
            parts = noise_parts(cuts)
            parts.prepare()
            noise = noise_slots[b % 2][:total]
            tasks = [partial(parts.fill, i, noise[cuts[i]:cuts[i + 1]]) for i in range(len(cuts) - 1)] + tasks
            after = partial(parts.settle, noise)
            args = (noise, offsets) + extra
        return tasks, after, (lambda lo, hi: relax(best, back, a, block, lo, hi, units, *args))

    tasks, after, relax_b = start(0)
    parallel.run_all(tasks, threads)
    after()
    relax_b(1, blocks[0][1] + 1)
    for b, (a, stop) in enumerate(blocks):
        beyond = [partial(relax_b, lo, hi) for lo, hi in parallel.split(stop + 1, k + 1, PARTS_PER_THREAD * threads)]
        if b + 1 < len(blocks):
            tasks, after, relax_next = start(b + 1)
            parallel.run_all(tasks + beyond, threads)
            after()
            relax_next(stop + 1, blocks[b + 1][1] + 1)
            relax_b = relax_next
        else:
            parallel.run_all(beyond, threads)


def _rows_on_threads(cost: Cost, units, best, back, threads: int) -> None:
    """Mode (a) with costs given row by row, on threads, by blocks of ``ROW_BLOCK x threads`` rows:
    the cost computes the block's rows (:meth:`Cost.rows_between`, on the threads when it can) into
    one array; the ends inside the block are relaxed by one thread, row after row, then threads relax
    disjoint ranges of the ends beyond it.  Every end sees every row, in increasing order, with the
    serial comparison (:func:`.kernels.relax_row`'s)."""
    k = units.size - 1
    form = _row_form(cost, units, k)
    if form is not None:
        return _compiled_rows_on_threads(form, units, best, back, threads)
    step = ROW_BLOCK * threads
    buffer = np.empty(min(step, k) * k)     # one allocation for every block (a fresh one faults its pages in)
    for a in range(0, k, step):
        stop = min(k, a + step)
        block = buffer[:(stop - a) * (k - a)].reshape(stop - a, k - a)

        def keep(u, row, block=block, a=a):
            block[u - a, :k - u] = row

        cost.rows_between(a, stop, units, threads, keep)
        kernels.relax_block(best, back, a, block, a + 1, stop + 1)
        parts = parallel.split(stop + 1, k + 1, PARTS_PER_THREAD * threads)
        parallel.run_all([partial(kernels.relax_block, best, back, a, block, lo, hi) for lo, hi in parts], threads)


#: nodes per block of one tree level's costs (the level's temporaries held to this size: memory)
NODE_BLOCK = 1 << 16


def _by_blocks(cost) -> bool:
    """Whether each node's cost depends on that node alone, whatever the batch: an :class:`SSEPenalty` or
    an :class:`L1Deviation` (O(1) from prefix sums; segment sums by ``add.reduceat``, one per node), possibly
    under transforms declaring no state and no randomness (``fn.thread_safe``, :class:`Perturbed`)."""
    if isinstance(cost, Perturbed):
        return bool(getattr(cost.fn, "thread_safe", False)) and _by_blocks(cost.inner)
    return type(cost) in (SSEPenalty, L1Deviation, _AlignedSSE)


class _AlignedSSE:
    """An :class:`SSEPenalty` over positions read at the tree's aligned nodes only, from its prefix sums kept
    at every ``step``-th position and at the end (:func:`._tree_kernels.sse_leaves`): the levels above the
    leaves, whose nodes start at multiples of ``step`` and end at one or at the last position.  ``nodes``
    gives :meth:`SSEPenalty.nodes`' values (the same sums, operations and penalty)."""

    def __init__(self, cost: SSEPenalty, q: np.ndarray, q2: np.ndarray, step: int):
        self.n, self._cost, self._q, self._q2, self._step = cost.n, cost, q, q2, int(step)

    def nodes(self, starts, ends):
        from ._tree_kernels import size_range, sse_nodes_coarse
        starts = np.ascontiguousarray(starts, dtype=np.int64)
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        lo, hi = size_range(starts, ends)
        q, q2, step, out = self._q, self._q2, self._step, np.empty(starts.size)
        if hi - lo <= max(64, starts.size // 4):     # as SSEPenalty.nodes: the penalty of the sizes' range, read
            table = self._cost._penalty_at(np.arange(lo, hi + 1, dtype=np.int64))
            return sse_nodes_coarse(q, q2, step, starts, ends, table, lo, out)
        out = sse_nodes_coarse(q, q2, step, starts, ends, np.zeros(1), -1, out)
        out += self._cost._penalty_at(ends - starts)
        return out


def _fused_leaves(cost, units, branching: int):
    """The leaves of :func:`tree` in one pass when ``cost`` is an :class:`SSEPenalty` over positions still
    holding its values (no prefix sums made) and the compiled loops run: the leaves' children's totals of
    :func:`_node_costs` (``fold=branching``) and an :class:`_AlignedSSE` for the levels above, the same
    numbers, without the two prefix sums of n + 1 floats stored and read again (two input-sized arrays
    written, then read, at every size: what grew faster than n once they outgrow the caches).  None
    otherwise (the generic route)."""
    if (units is not None or type(cost) is not SSEPenalty or cost._sums is not None or cost.values is None
            or cost.n < 2 or not compiled_for(cost.n)):
        return None
    from ._tree_kernels import sse_leaves
    values, n = cost.values, cost.n
    runs = -(-n // branching)
    q, q2, folded = np.empty(runs + 1), np.empty(runs + 1), np.empty(runs)
    penalty_one = float(cost._penalty_at(np.arange(1, 2, dtype=np.int64))[0])
    sse_leaves(values, values.mean(), penalty_one, int(branching), q, q2, folded)
    return folded, _AlignedSSE(cost, q, q2, branching)


def _traced_starts(takes, k: int, branching: int) -> np.ndarray:
    """:func:`tree`'s group bounds from the levels' flags (``takes[h]``: which nodes of level ``h`` keep
    themselves; ``takes[0]`` None, every leaf), from the root down: one compiled walk that counts, one that
    writes the bounds in increasing order (no per-level flag vectors over the leaves, no marks of k + 1
    bytes and no search of them: the same bounds as the marks' ``flatnonzero``)."""
    from ._tree_kernels import tree_starts
    levels = takes[1:]
    sizes = np.array([k] + [t.size for t in levels], dtype=np.int64)
    offsets = np.zeros(sizes.size, dtype=np.int64)     # level h's flags from offsets[h] (h >= 1)
    np.cumsum(sizes[1:-1], out=offsets[2:])
    flat = np.concatenate(levels)
    spans = np.array([branching ** h for h in range(sizes.size)], dtype=np.int64)
    count = tree_starts(flat, offsets, sizes, spans, int(k), np.empty(0, dtype=np.int64))
    out = np.empty(count, dtype=np.int64)
    tree_starts(flat, offsets, sizes, spans, int(k), out)
    return out


def _node_costs(cost, units, span: int, k: int, fold: int = 0) -> np.ndarray:
    """``cost.nodes`` of one tree level, the nodes ``[units[j span], units[min((j + 1) span, k)])``: by
    blocks of :data:`NODE_BLOCK` nodes (their bounds made per block, never for the whole level) when each
    node's cost is its own (:func:`_by_blocks`: the same numbers); any other cost gets the level in one
    call, as its contract says (a cost may draw noise per batch).

    ``fold``: return instead the sums of runs of ``fold`` consecutive costs (``add.reduceat`` at
    ``0, fold, 2 fold, ...``, block by block: blocks of whole runs, so the same sums), the children's
    totals of the level above, without the level's costs ever stored whole (the leaves: 1x the input)."""
    m = -(-k // span)
    block = (max(fold, NODE_BLOCK - NODE_BLOCK % fold) if fold else NODE_BLOCK) if _by_blocks(cost) else m
    plain = k == cost.n               # k + 1 strictly increasing bounds from 0 to n: units are positions
    out = np.empty(-(-m // fold) if fold else m)
    for a in range(0, m, block):
        first = np.arange(a, min(a + block, m), dtype=np.int64)
        first *= span
        last = np.minimum(first + span, k)
        costs = cost.nodes(first, last) if plain else cost.nodes(units[first], units[last])
        if fold:
            out[a // fold:a // fold + -(-first.size // fold)] = np.add.reduceat(
                np.asarray(costs, dtype=float), np.arange(0, first.size, fold))
        else:
            out[a:a + first.size] = costs
    return out


def tree(cost, bounds=None, *, branching: int = 2, n: int | None = None) -> Segmentation:
    """The best segmentation into aligned subtrees of a ``branching``-ary tree over the units (mode c).

    Level h has nodes of ``branching^h`` units (the last one possibly shorter); bottom-up, each node
    keeps itself or the best of its children, whichever is cheaper (itself on a tie), O(k) nodes
    (Kellaris et al., TKDE, Section 6, hierarchical smoothing; DAWA's tree variant).  The leaves' costs
    are summed into their parents' children's totals as they are computed (never stored whole); a level
    keeps one flag per node (keeps itself or not) for the trace-back.
    """
    if isinstance(branching, bool) or not isinstance(branching, (int, np.integer)) or branching < 2:
        raise InvalidParameter(f"branching must be an integer >= 2, got {branching!r}")
    if bounds is None:               # every position a unit: the nodes' bounds are positions, no 0..n built
        cost = as_cost(cost, n)
        units, k = None, cost.n
    else:
        cost, units = _prepare(cost, bounds, n)
        k = units.size - 1
    takes = [None]                   # per level, which nodes keep themselves (the leaves: every one)
    if k == 1:
        best = _node_costs(cost, units, 1, k)
    else:
        best = None
        fused = _fused_leaves(cost, units, branching)
        if fused is None:
            children = _node_costs(cost, units, 1, k, fold=branching)
        else:                        # the leaves in one pass; the levels above from sums at their nodes
            children, cost = fused
        span = branching
        while True:
            own = _node_costs(cost, units, span, k)
            if best is not None:
                children = np.add.reduceat(best, np.arange(0, best.size, branching))
            take = own < children
            best = np.where(take, own, children)
            del own, children
            takes.append(take)
            if best.size == 1:
                break
            span *= branching
    if len(takes) > 1 and compiled_for(k):
        return Segmentation(_traced_starts(takes, k, branching), float(best[0]))
    is_start = np.zeros(k + 1, dtype=bool)     # the groups' first units, marked level by level (no sort)
    is_start[k] = True
    active = np.ones(1, dtype=bool)
    for h in range(len(takes) - 1, -1, -1):
        take = takes[h]
        chosen = active if take is None else active & take
        is_start[np.flatnonzero(chosen) * branching ** h] = True
        if h:
            size = -(-k // branching ** (h - 1))
            active = np.repeat(active & ~take, branching)[:size]
    return Segmentation(np.flatnonzero(is_start).astype(np.int64, copy=False), float(best[0]))


def monge_violation(matrix) -> float:
    """The largest violation of the Monge (quadrangle) inequality of an interval cost matrix
    ``C[a, b]`` (cost of units [a, b)): max over a + 1 < b of C[a, b] + C[a+1, b+1] - C[a, b+1] - C[a+1, b]
    (the adjacent quadruples imply every quadruple).  <= 0 means Monge."""
    c = np.asarray(matrix, dtype=float)
    k = c.shape[0] - 1
    worst = -np.inf
    for a in range(k - 1):
        b = np.arange(a + 2, k)
        if b.size:
            worst = max(worst, float(np.max(c[a, b] + c[a + 1, b + 1] - c[a, b + 1] - c[a + 1, b])))
    return worst


def _is_monotone(x) -> bool:
    """Whether the finite values ``x`` never decrease or never increase.  Neighbours compared directly, not
    through ``np.diff``: for finite doubles ``b - a >= 0`` exactly when ``b >= a`` (a rounded difference is 0
    only for equal values, and keeps its sign on overflow), and the comparison makes one byte per value
    instead of a float difference (memory)."""
    return bool(np.all(x[1:] >= x[:-1]) or np.all(x[1:] <= x[:-1]))


def k_groups(cost, ks, bounds=None, *, monge: bool | None = None, n: int | None = None
             ) -> dict[int, Segmentation]:
    """For each k in ``ks``: the least-cost segmentation into exactly k groups (mode d).

    One DP up to max(ks) serves every k.  With ``monge`` the optimal split point is non-decreasing
    and each layer takes O(k log k) by divide and conquer, else O(k^2).  ``monge=None`` decides:
    for :class:`SSEPenalty`, Monge when the values are monotone in position order and the penalty
    is convex in the size (SSE of sorted values and a convex function of the length both satisfy
    the quadrangle inequality; tested against the plain DP); for any other cost, the dense cost
    matrix (O(k^2) memory) is checked with :func:`monge_violation` (tolerance 1e-9 x its scale).
    ``monge=True`` asserts it without a check: a wrong assertion gives a non-optimal answer.
    """
    cost, units = _prepare(cost, bounds, n)
    k = units.size - 1
    wanted = sorted({int(m) for m in ks})
    if not wanted or wanted[0] < 1 or wanted[-1] > k:
        raise InvalidParameter(f"numbers of groups must lie in [1, {k}], got {list(ks)}")
    if type(cost) is SSEPenalty:
        matrix = _NO_MATRIX
        if monge is None:
            monge = _is_monotone(np.diff(cost.prefix)) and cost.penalty_is_convex()
        p, p2, last = cost.prefix, cost.prefix_sq, cost.penalty_last
        pen = _penalty_args(cost)[0]
    else:
        matrix = np.full((k + 1, k + 1), np.inf)
        for a in range(k):
            matrix[a, a + 1:] = cost.rows_from(a, units)
        if monge is None:
            finite = matrix[np.isfinite(matrix)]
            scale = float(np.max(np.abs(finite), initial=1.0))
            monge = k < 3 or monge_violation(matrix) <= 1e-9 * scale
        p = p2 = pen = _NO_ARRAY
        last = False
    best, back = kernels.exactly_k_groups(units, p, p2, pen, matrix, wanted[-1], bool(monge), last)
    out = {}
    for m in wanted:
        cuts = [k]
        j = k
        for layer in range(m, 0, -1):
            j = int(back[layer, j]) if layer > 1 else 0
            cuts.append(j)
        out[m] = Segmentation(np.array(cuts[::-1], dtype=np.int64), float(best[m]))
    return out


def _penalty_args(cost: SSEPenalty):
    """What the kernels read the penalty and the share from: the tables, or the coefficient c of
    a penalty c / size as a float (the kernels then compute c / m and c / m^2; see kernels.penalty)."""
    if cost.inverse_c >= 0:
        return float(cost.inverse_c), float(cost.inverse_c)
    return cost.penalty, cost.share


def _lookahead_inputs(cost):
    if type(cost) is not SSEPenalty or cost.values is None:
        raise InvalidParameter("the look-ahead bound is built for SSEPenalty costs made from values")
    x = cost.values
    prefix = np.zeros(x.size + 1)
    np.cumsum(x, out=prefix[1:])                       # raw (uncentred) sums: means x_j..x_l in O(1)
    # the stop rule needs a non-increasing share; c / m^2 is, by construction
    shrinking = cost.inverse_c >= 0 or bool(np.all(np.diff(cost.share[1:]) <= 0))
    # the ends of runs of equal values are found by the scans themselves, one run at a time (no vector of n)
    return x, prefix, _is_monotone(x) and shrinking


def lookahead_bounds(cost: SSEPenalty, *, early_stop: bool = True) -> np.ndarray:
    """err*(x_j) = min_{l >= j} (x_j - mean(x_j..x_l))^2 + share(l - j + 1) for every position j:
    a lower bound on what x_j adds to any group it starts (AHP Section 4.2, with share(m) =
    penalty(m) / m).  The scan stops early (the paper's rule) on monotone values with a
    non-increasing share when ``early_stop``."""
    x, prefix, can_stop = _lookahead_inputs(cost)
    return kernels.all_lower_bounds(x, prefix, _penalty_args(cost)[1], bool(early_stop and can_stop))


def greedy_lookahead_taken(values, order, coefficient: float, *, unsorted_max: int | None = None
                           ) -> Segmentation | None:
    """:func:`greedy` with ``bound="lookahead"`` on ``SSEPenalty.inverse_size(values[order], coefficient)``
    (``values`` itself when ``order`` is None), on the compiled route, without a gathered copy of n values:
    the same cuts and total.  One pass reads the values through the order, checks them (finite, monotone)
    and finds their longest run of zeros (:func:`._lookahead.scan_taken`); a second gathers the values
    outside that run and their prefix sums (:func:`._lookahead.gather_outside`), which the scan reads with the
    run left out (AHP's sorted H~ is mostly zeros: a few floats instead of two arrays of n), never reading
    the run itself.

    Returns None, having read nothing, when the generic route is the one to take: the values run
    interpreted (at most ``INTERPRETED_MAX`` while numba is not imported), or they are not a float64
    vector with an integer order of the same length; and None after the check when a value is not finite,
    or the values are not monotone and more than ``unsorted_max`` (the generic route then raises its errors,
    or the caller refuses them in its own words)."""
    values = np.asarray(values)
    if values.dtype != np.float64 or values.ndim != 1:
        return None
    if order is not None:
        order = np.asarray(order)
        if order.dtype.kind not in "iu" or order.shape != values.shape:
            return None
    n = values.size
    if n == 0 or _runs_interpreted(n):
        return None
    c = float(coefficient)
    if not np.isfinite(c) or c < 0:
        raise InvalidParameter(f"the inverse-size penalty needs a finite coefficient >= 0, got {coefficient!r}")
    values = np.ascontiguousarray(values)
    order = None if order is None else np.ascontiguousarray(order)
    finite, up, down, a, b = kernels.scan_taken(values, order)
    monotone = bool(up or down)
    if not finite or (unsorted_max is not None and n > unsorted_max and not monotone):
        return None
    kept, sums = np.empty(n - (b - a)), np.empty(n - (b - a) + 1)
    kernels.gather_outside(values, order, a, b, kept, sums)
    # the generic route's arguments (_lookahead_inputs, _penalty_args): the share c / m^2 never grows
    cuts, total = kernels.greedy_lookahead((kept, int(a), int(b)), (sums, int(a), int(b)), c, c, monotone, True,
                                           _skips_runs(c, c))
    return Segmentation(cuts, float(total))


def _skips_runs(pen, shares) -> bool:
    """Whether the look-ahead greedy may join runs of equal values without the test: a penalty c / size with
    c a normal positive float (:func:`._lookahead.greedy_lookahead`)."""
    return bool(isinstance(pen, float) and 1e-200 <= pen <= 1e200 and shares == pen)


def _runs_interpreted(n: int) -> bool:
    return n <= INTERPRETED_MAX and "numba" not in sys.modules


def greedy(cost, bounds=None, *, bound: str = "singleton", decide_early: bool = True,
           n: int | None = None) -> Segmentation:
    """One left-to-right scan (mode e): the next unit joins the current group C iff
    cost(C + unit) < cost(C) + bound(unit), else it starts a new group.

    ``bound="singleton"``: bound(unit) = the unit's own cost (SORTaki Algorithm 5, GP).
    ``bound="lookahead"``: bound(x_j) = err*(x_j) of :func:`lookahead_bounds`, a lower bound on the
    cost x_j brings to any group it starts (AHP Algorithm 3); SSEPenalty over single positions only.
    On monotone values it is decided without computing err* (galloping, then branch and bound);
    ``decide_early=False`` computes err* by the paper's scan (same groups, slower).
    """
    if bound not in BOUNDS:
        raise InvalidParameter(f"unknown greedy bound {bound!r}; use one of {', '.join(BOUNDS)}")
    if bound == "lookahead":
        # no unit vector 0..n is built for single positions (only its length is read here: memory)
        cost = as_cost(cost, n)
        k = cost.n if bounds is None else units_of(bounds, cost.n).size - 1
        if k != cost.n:
            raise InvalidParameter("the look-ahead greedy works on single positions (no unit bounds)")
        x, prefix, early_stop = _lookahead_inputs(cost)
        pen, shares = _penalty_args(cost)
        args = (x, prefix, pen, shares, early_stop, bool(decide_early), _skips_runs(pen, shares))
        if decide_early and early_stop and _runs_interpreted(k):
            cuts, total = _lookahead.greedy_lookahead(*(a.tolist() if isinstance(a, np.ndarray) else a for a in args))
        else:
            cuts, total = kernels.greedy_lookahead(*args)
        return Segmentation(cuts, float(total))       # the groups' SSE from Welford's recurrences
    cost, units = _prepare(cost, bounds, n)
    k = units.size - 1
    if type(cost) is SSEPenalty:
        starts, total = kernels.greedy_singleton(units, cost.prefix, cost.prefix_sq, _penalty_args(cost)[0],
                                                 cost.penalty_last)
        return Segmentation(np.r_[starts, k].astype(np.int64), float(total))
    cuts = np.r_[_greedy_singleton_batched(cost, units), k].astype(np.int64)
    return Segmentation(cuts, total_cost(cost, cuts, units))


def _greedy_singleton_batched(cost: Cost, units: np.ndarray) -> np.ndarray:
    """The singleton-bound scan for any cost.  With the current group starting at unit s, the
    decision at unit i depends only on (s, i): a block of decisions is evaluated at once, up to the
    first refusal, and the block doubles while every unit joins."""
    k = units.size - 1
    cuts = [0]
    s, i, block = 0, 1, 64
    while i < k:
        idx = np.arange(i, min(k, i + block))
        start = np.full(idx.size, units[s])
        merged = cost.intervals(start, units[idx + 1])
        apart = cost.intervals(start, units[idx]) + cost.intervals(units[idx], units[idx + 1])
        refuse = ~(merged < apart)
        if refuse.any():
            j = int(idx[int(np.argmax(refuse))])
            cuts.append(j)
            s, i, block = j, j + 1, 64
        else:
            i = int(idx[-1]) + 1
            block *= 2
    return np.asarray(cuts, dtype=np.int64)
