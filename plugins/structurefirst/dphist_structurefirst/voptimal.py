"""Prefix costs of V-optimal histograms, layer by layer: what StructureFirst's exponential
mechanism scores boundaries with (Xu et al., VLDBJ 2013, Section 5; ICDE 2012, Section IV).

``T(j, g)`` is the least SSE of the first ``j`` values cut into exactly ``g`` contiguous groups
(the V-optimal histogram of Jagadish et al. 1998 restricted to a prefix).  StructureFirst re-draws
the boundaries of the k-group V-optimal histogram from right to left; the boundary in front of
group ``g``, with the right end ``r`` already drawn, scores every candidate start ``t`` by

    E_r(t) = T(t, g - 1) + SSE(t, r),

so it needs the whole layer ``T(., g - 1)``, not only the optimum that
:func:`dphist.segmentation.k_groups` returns (that engine gives, per k, the total cost and the
back-pointers of the full-length optimum; the tests check that this module's ``T(n, k)`` equals
its ``best[k]``).  This is the only DP the plugin writes itself, for that reason.

Speed (exact, not approximate).  Filling layer ``g`` at end ``j`` scans the last group's start
``t`` downwards from ``j - 1`` and stops as soon as

    T(t, g) + SSE(t, j) >= best so far,

which is a lower bound on every remaining candidate ``t' < t``: SSE is superadditive over a
split, ``SSE(t', j) >= SSE(t', t) + SSE(t, j)``, and ``T(t', g - 1) + SSE(t', t) >= T(t, g)``
(append the group ``[t', t)`` to the best (g-1)-segmentation of the first ``t'`` values).  The
values computed are exactly the full DP's (same minimum; only candidates that cannot win are
skipped), so the exponential mechanism's scores, and its sensitivity argument, are unchanged.

Two more bounds come from the layers being non-decreasing in the prefix (``T(t + 1, h) >= T(t, h)``
for ``t >= h``: drop the last value of the best segmentation of ``t + 1`` values) and ``SSE >= 0``:
the scan starts below the *ceiling*, the first ``t`` with ``T(t, g - 1) >=`` a first candidate's score
(found by bisection; that candidate is where the previous end's best was), and a block of starts
``[t0, t1]`` is skipped when ``T(t0, g - 1) + SSE(t1, j)`` (below each of its scores) reaches the best.

The scan scores ``CHUNK`` candidates at a time in a branch-free, unrolled loop and tests the pruning
bound at the chunk's lowest start (the same minimum; a few extra candidates scored).  (A skip of the
inside of runs of equal values, where the score is concave, was tried and dropped: with these bounds
it saved no time on sparse, stepped or power-law data.)  In floating
point the results equal the plain DP's up to rounding (tests: relative 1e-9); seeded releases of
``SF`` were unchanged on the 32 cases we compared (2026-11-23).

Cost.  What is left is, per layer and end ``j``, about the length of the last group of the best
segmentation: on data with a long irregular tail (the power law) that is most of the prefix, and the
table costs 5.2e8 candidates at n = 4,096 (k = 410; the plain DP: 3.1e9), growing 5.1 times from
4,096 to 8,192 (BENCHMARKS.md); no exact algorithm below the O(k n^2) of Jagadish et al. is known
for unsorted data (the SSE is Monge only on sorted values, so the divide and conquer of
:func:`dphist.segmentation.k_groups` does not apply).

Threads: the layers are filled by a wavefront over (tile of consecutive layers, part of the ends) on the
threads of :mod:`dphist.segmentation.parallel` (``threads=``, else its default: every core), a graph of
cells run without a join between diagonals (``run_graph``): part b of a tile's layers, one layer after
the other, needs part b of the tile below and part b - 1 of the same tile, and a thread that finishes a
cell takes the next ready one; each part starts
from the hint the part before it left, so the table and the count of scored candidates are the serial
ones, bit for bit.

Memory: the layers needed are used in decreasing order; every ``B``-th layer is kept and each
block of ``B`` layers is recomputed from its checkpoint when it is needed, only up to the right
end still open (``B = k`` when all layers fit in ``max_floats`` floats, else about sqrt(k)).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from dphist.intervals import centred_prefix_sums

#: keep every layer in memory up to this many floats (128 MB); above, checkpoint and recompute
MAX_FLOATS = 16_000_000
#: layers are filled on threads from this many ends on (a wavefront; PrefixCosts._layers)
THREAD_MIN_ENDS = 1024
#: parts of the ends per thread in the wavefront (cells of its graph)
PARTS_PER_THREAD = 4
#: rows of cells of the wavefront at most: a cell fills one part of ``ceil(layers / TILE_ROWS)`` consecutive
#: layers (SF's power law at n = 4,096: about 400 layers on the wavefront in 58 tiles of 7, 464 cells on two
#: threads instead of 3,240 of one layer; a cell's Python and scheduling, about 13 us, under 1% of its work)
TILE_ROWS = 64
#: layers are filled on the calling thread up to the first that scores at least this many candidates per
#: end (then the wavefront): cheaper layers' cells would cost less than their hand-over (layers of two
#: candidates per end: 0.034 s on one thread against 0.050 s as wavefront cells on two at n = 4,096,
#: k = 410).  Flat values (the kernel's all-zero probe) fill no cells: ``_flat_layer``
CHEAP_PER_END = 16


@njit(cache=True, inline="always")
def _sse(p, p2, inv, i, j):
    # inv[m] = 1/m: a multiplication in the inner loop instead of a division
    s = p[j] - p[i]
    v = (p2[j] - p2[i]) - s * s * inv[j - i]
    return v if v > 0.0 else 0.0


@njit(cache=True)
def first_layer(p, p2, inv):
    """T(j, 1) = SSE of the first j values, j = 0..n (T(0, 1) = inf: a group is never empty)."""
    n = p.size - 1
    out = np.empty(n + 1)
    out[0] = np.inf
    for j in range(1, n + 1):
        out[j] = _sse(p, p2, inv, 0, j)
    return out


#: candidates scored together, without branches
CHUNK = 16


@njit(cache=True, fastmath={"nnan", "nsz"})
def _chunk_min(prev, p, p2, inv, top, j):
    """min over t in (top - CHUNK, top] of prev[t] + SSE(t, j): a branch-free loop, unrolled by the
    compiler ("nnan", "nsz": no NaN reaches it, the sign of zero does not matter; no reassociation
    or contraction, so every candidate's value is the scalar loop's, bit for bit; numba's LLVM does
    not turn it into SIMD, checked in the assembly)."""
    pj = p[j]
    p2j = p2[j]
    m = np.inf
    # unsigned indices: numba then drops its negative-index wrap-around from every load (20% less
    # time for the whole table at n = 4,096, the same values; the loop is still not SIMD)
    lo = np.uint64(top - CHUNK + 1)
    end = np.uint64(j)
    for i in range(CHUNK):
        t = lo + np.uint64(i)
        s = pj - p[t]
        v = (p2j - p2[t]) - s * s * inv[end - t]
        v = v if v > 0.0 else 0.0
        c = prev[t] + v
        m = c if c < m else m
    return m


@njit(cache=True)
def next_layer(prev, g, p, p2, inv, out, upto):
    """Fill ``out[:upto + 1]`` with layer g from layer g - 1 (``prev``): out[j] = min over t in
    [g-1, j-1] of prev[t] + SSE(t, j) for j >= g, inf below.  Exact, with three skips (module
    docstring): the ceiling, the pruning bound, and chunks whose bound already reaches the best.
    Candidates are scored CHUNK at a time and the pruning bound is tested at the chunk's lowest
    start (a minimum does not depend on the order of its candidates, and a few extra ones cannot
    change it).  Only ``prev[:upto]`` is read.  Returns the number of candidates scored."""
    return next_layer_part(prev, g, p, p2, inv, out, 0, upto + 1, g - 1)[0]


@njit(cache=True, nogil=True)
def next_layer_part(prev, g, p, p2, inv, out, j_lo, j_hi, hint):
    """:func:`next_layer` for the ends j in [j_lo, j_hi) only, given ``out[:j_lo]`` (this layer) and
    ``prev[:j_hi]`` (the layer below) and the hint the end j_lo - 1 left (g - 1 for j_lo = 0);
    returns (candidates scored, the hint for j_hi).  Parts in increasing j give next_layer's
    table, bit for bit, and its count (the parts of one layer run in order; those of other layers
    may run at the same time: :meth:`PrefixCosts._layers_on_threads`)."""
    scored = 0
    for j in range(j_lo, min(g, j_hi)):
        out[j] = np.inf
    for j in range(max(g, j_lo), j_hi):
        # a first candidate (where the last end's best was found), then a ceiling: prev is
        # non-decreasing, so no start t with prev[t] >= best can win (SSE >= 0)
        hint = min(max(hint, g - 1), j - 1)
        best = prev[hint] + _sse(p, p2, inv, hint, j)
        scored += 1
        lo = g - 1
        hi = j
        while lo < hi:
            mid = (lo + hi) // 2
            if prev[mid] >= best:
                hi = mid
            else:
                lo = mid + 1
        t = min(j - 1, lo - 1) if lo > g - 1 else g - 1
        while t >= g - 1:
            if t - CHUNK + 1 >= g:
                # every start t' in the chunk scores >= prev[lowest] + SSE(t, j) (both monotone)
                if prev[t - CHUNK + 1] + _sse(p, p2, inv, t, j) < best:
                    m = _chunk_min(prev, p, p2, inv, t, j)
                    scored += CHUNK
                    if m < best:
                        best = m
                        hint = t
                t -= CHUNK - 1                              # the chunk's lowest start
                if out[t] + _sse(p, p2, inv, t, j) >= best:
                    break
                t -= 1
                continue
            s = _sse(p, p2, inv, t, j)
            c = prev[t] + s
            scored += 1
            if c < best:
                best = c
                hint = t
            if t >= g and out[t] + s >= best:
                break
            t -= 1
        out[j] = best
    return scored, hint


def _flat_layer(g: int, out: np.ndarray, upto: int) -> int:
    """:func:`next_layer`'s ``out[:upto + 1]`` and count when every centred prefix sum is 0.0: each SSE is
    ``max(0.0 - 0.0 * inv, 0.0) = 0.0``, so the layer is inf below end g and ``0.0 + 0.0 = 0.0`` from it
    on; each end scores two candidates (the hint, then start g - 1, where the bisection's ceiling puts the
    scan: layer g - 1 is 0.0 from g - 1 on, no start is lower)."""
    out[:min(g, upto + 1)] = np.inf
    out[g:upto + 1] = 0.0
    return 2 * max(0, upto + 1 - g)


class PrefixCosts:
    """The layers ``T(., g)`` of a sequence, g = 1 .. k - 1, served in decreasing g.

    ``layer(g)`` returns the array ``T(j, g)``, j = 0..n; calls must come with non-increasing g
    (StructureFirst's right-to-left order); blocks are recomputed from checkpoints when the
    layers do not all fit in ``max_floats`` floats.
    """

    def __init__(self, values, k: int, max_floats: int = MAX_FLOATS, threads: int | None = None):
        self.threads = threads
        values = np.asarray(values, dtype=float)
        self.p, self.p2 = centred_prefix_sums(values)
        # every value equal to the mean (the kernel's all-zero probe): every SSE is exactly 0.0, so every
        # layer is 0.0 from its first end on (``_flat_layer``), the serial loop's values and count
        self.flat = bool(self.p2[-1] == 0.0 and not self.p.any())
        self.scored = 0                                # candidates scored so far (operation count)
        self.n = self.p.size - 1
        self.inv = np.r_[0.0, 1.0 / np.arange(1, self.n + 1)]
        self.k = int(k)
        top = max(self.k - 1, 1)                      # the highest layer ever asked for
        per_layer = self.n + 1
        self.block = top if top * per_layer <= max_floats else max(1, int(math.isqrt(top)) + 1)
        self._checkpoints = {}
        layer = first_layer(self.p, self.p2, self.inv)
        self._checkpoints[1] = layer
        if self.block < top:                           # forward pass keeping every block-th layer
            kept = self._layers(layer, 1, top, self.n, lambda g: (g - 1) % self.block == 0, np.empty)
            self._checkpoints.update(kept)
        self._cache = {}
        self._upto = -1
        self._top = top

    def _next(self, prev, g, out, upto):
        if self.flat:
            self.scored += _flat_layer(g, out, upto)
            return out
        self.scored += next_layer(prev, g, self.p, self.p2, self.inv, out, upto)
        return out

    def _fill_block(self, g: int, upto: int) -> None:
        # a block is recomputed only up to the position asked for: StructureFirst's right end
        # shrinks as it draws, so the lower blocks cost a fraction of a forward pass
        start = 1 + ((g - 1) // self.block) * self.block
        stop = min(start + self.block - 1, self._top)
        self._cache = {start: self._checkpoints[start]}
        self._upto = upto
        self._cache.update(self._layers(self._checkpoints[start], start, stop, upto, lambda g: True,
                                        lambda size: np.full(size, np.nan)))

    def _layers(self, base, g0: int, g1: int, upto: int, keep, new) -> dict:
        """Layers g0 + 1 .. g1 from layer g0 (``base``), each up to ``upto``; returns those with
        ``keep(g)``.  On threads (:mod:`dphist.segmentation.parallel`) from THREAD_MIN_ENDS ends on:
        a wavefront over (tile of layers, part of the ends) run as a graph (``parallel.run_graph``).  Part b
        of a tile's layers needs part b of the tile below and part b - 1 of the same tile; each part starts from the hint its predecessor left, so the table and the count of scored
        candidates are the serial ones, bit for bit.  Layers are filled on this thread up to the first that
        scores ``CHEAP_PER_END`` candidates per end or more."""
        from dphist.segmentation import parallel
        threads = parallel.default_threads() if self.threads is None else parallel.resolve(self.threads)
        out = {}
        serial = threads == 1 or upto + 1 < THREAD_MIN_ENDS or g1 - g0 < 2 or self.flat
        cur = base
        while g0 < g1:           # layers on this thread while they are cheap (all of them on one thread)
            before = self.scored
            cur = self._next(cur, g0 + 1, new(self.n + 1), upto)
            g0 += 1
            if keep(g0):
                out[g0] = cur
            if not serial and self.scored - before >= CHEAP_PER_END * (upto + 1):
                break
        if g0 == g1:
            return out
        base = cur                                     # the rest on threads, from the last layer filled here
        n_parts = PARTS_PER_THREAD * threads
        edges = [(upto + 1) * i // n_parts for i in range(n_parts + 1)]
        layers, hints, counts = {g0: base}, {}, {}
        # a graph of cells (t, b), no join between diagonals (dphist.segmentation.parallel.run_graph): part b
        # of the layers of tile t (``tile`` consecutive layers, one after the other) once part b of tile
        # t - 1 and part b - 1 of tile t are done; lower tiles first
        tile = max(1, -(-(g1 - g0) // TILE_ROWS))
        tiles = [(g, min(g1, g + tile - 1)) for g in range(g0 + 1, g1 + 1, tile)]
        needs = {(t, b): [c for c in ((t - 1, b), (t, b - 1)) if c[0] >= 0 and c[1] >= 0]
                 for t in range(len(tiles)) for b in range(n_parts)}

        def cell(node):
            t, b = node
            for g in range(tiles[t][0], tiles[t][1] + 1):
                if b == 0:
                    layers[g], hints[g] = new(self.n + 1), g - 1
                counts[g, b], hints[g] = next_layer_part(layers[g - 1], g, self.p, self.p2, self.inv, layers[g],
                                                         edges[b], edges[b + 1], hints[g])
                if b == n_parts - 1:                  # layer g is complete; no part of it still reads g - 1
                    if keep(g):
                        out[g] = layers[g]
                    layers.pop(g - 1, None)

        parallel.run_graph(cell, needs, threads)
        self.scored += sum(counts.values())
        return out

    def layer(self, g: int, upto: int | None = None) -> np.ndarray:
        """T(j, g) for j = 0..n (valid up to ``upto``, default n; beyond it NaN when a block was
        recomputed only partly).  Calls come with non-increasing g and non-increasing ``upto``."""
        upto = self.n if upto is None else int(upto)
        if g not in self._cache or (g not in self._checkpoints and upto > self._upto):
            self._fill_block(g, upto)
        return self._cache[g]

    def scores(self, g: int, right: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidate starts t = g-1 .. right-1 of group g ending at ``right`` and their costs
        E(t) = T(t, g-1) + SSE(t, right) (g >= 2)."""
        t = np.arange(g - 1, right, dtype=np.int64)
        if self.flat:                                  # 0.0 + 0.0 for every candidate, as computed below
            return t, np.zeros(t.size)
        below = self.layer(g - 1, right)[t] if g > 1 else np.zeros(t.size)
        m = (right - t).astype(float)
        s = self.p[right] - self.p[t]
        sse = np.maximum((self.p2[right] - self.p2[t]) - s * s / m, 0.0)
        return t, below + sse


def all_layers_reference(values, k: int) -> np.ndarray:
    """T(j, g) for g = 1..k by the plain O(k n^2) DP without pruning (tests only)."""
    p, p2 = centred_prefix_sums(np.asarray(values, dtype=float))
    n = p.size - 1
    out = np.full((k + 1, n + 1), np.inf)
    out[1] = first_layer(p, p2, np.r_[0.0, 1.0 / np.arange(1, n + 1)])
    for g in range(2, k + 1):
        for j in range(g, n + 1):
            t = np.arange(g - 1, j)
            m = (j - t).astype(float)
            s = p[j] - p[t]
            out[g, j] = np.min(out[g - 1, t] + np.maximum(p2[j] - p2[t] - s * s / m, 0.0))
    return out
