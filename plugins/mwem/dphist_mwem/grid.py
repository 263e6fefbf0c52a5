"""MWEM on a 2-D grid with a workload of rectangles (Hardt, Ligett, McSherry, NIPS 2012; DPBench's
``mwemND_engine`` runs the same loop on any number of axes).

The round is the 1-D one (:mod:`.weights`): select the worst-answered rectangle by the exponential
mechanism (score ``|q(x) - q(A)|``, sensitivity 1), measure it with Laplace noise, then ``updates``
passes of the multiplicative-weights update over every measurement so far.  What changes on a grid
is how the update and the scores are computed.

**Closed form of the update.**  ``A_0`` is uniform and every update multiplies the cells of one
measured rectangle by the same factor, then rescales all cells alike.  So two cells inside exactly
the same measured rectangles keep equal weights for ever.  The distinct row boundaries of the
measured rectangles (with 0 and the number of rows) cut the rows into at most ``2R + 1`` strips,
the column boundaries the columns likewise; every block (row strip x column strip) lies inside or
outside each measured rectangle as a whole.  The estimate is one weight per cell of each block
(:class:`BlockWeights`), and an update touches at most ``(2R + 1)^2`` blocks (441 after 10 rounds)
instead of the grid's ``N`` cells: the same numbers as DPBench's update over every cell (same
formula ``A * exp(q (m - q(A)) / (2 T))``, rescaled to ``T`` after each update), in time independent
of ``N``.  A new measurement refines the strips; the old weights carry over to the sub-blocks.

**Scores in O(1) per rectangle.**  ``q(x)`` for every open rectangle is the inclusion-exclusion
of the summed-area table of ``x`` at its four corners (Crow, SIGGRAPH 1984): one O(N) table per
round, inside the kernel's ``exponential`` where the counts are, and four gathers per rectangle.
``q(A)`` needs no table of the grid: the summed-area table of a grid constant on blocks is, at any
point, the table of the blocks plus the partial strips of the block the point falls in
(:meth:`BlockWeights.rectangle_sums`, O(1) per rectangle, public).

The loop takes ``select`` and ``measure`` callables, as :func:`.weights.mwem_loop` does, so the
private calibration runs it on the kernel's primitives and the reference calibration inside a
vetted mechanism.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
from numba import njit

from dphist import InvalidParameter
from dphist.workloads import summed_area_table

from .weights import MAX_EXPONENT


@njit(cache=True, nogil=True)
def _block_passes(w, sizes, r0, r1, c0, c1, answers, passes, total, max_exponent):
    # w[i, j]: the weight of each cell of block (i, j); sizes[i, j]: its cells.  Measurement m covers
    # blocks [r0[m], r1[m]) x [c0[m], c1[m]).  DPBench's update, one measurement at a time, rescaled to
    # the total after each (the block grid is tiny: the whole sum is cheap and exact).
    rows, cols = w.shape
    for _ in range(passes):
        for m in range(answers.size):
            inside = 0.0
            for i in range(r0[m], r1[m]):
                for j in range(c0[m], c1[m]):
                    inside += w[i, j] * sizes[i, j]
            z = (answers[m] - inside) / (2.0 * total)
            z = min(max(z, -max_exponent), max_exponent)
            f = math.exp(z)
            for i in range(r0[m], r1[m]):
                for j in range(c0[m], c1[m]):
                    w[i, j] *= f
            raw = 0.0
            for i in range(rows):
                for j in range(cols):
                    raw += w[i, j] * sizes[i, j]
            if raw <= 0.0 or not math.isfinite(raw):     # all mass underflowed: restart from uniform
                cells = 0.0
                for i in range(rows):
                    for j in range(cols):
                        cells += sizes[i, j]
                for i in range(rows):
                    for j in range(cols):
                        w[i, j] = total / cells
            else:
                scale = total / raw
                for i in range(rows):
                    for j in range(cols):
                        w[i, j] *= scale


@njit(cache=True, nogil=True)
def _corner(table, across, down, w, row_cuts, col_cuts, row_block, col_block, r, c):
    # the table of a grid constant on blocks at point (r, c): the full blocks before it, the partial
    # row and column strips of its block, the partial block (the order of the terms is fixed: the
    # numbers match the vectorised form term for term)
    i, j = row_block[r], col_block[c]
    dr, dc = r - row_cuts[i], c - col_cuts[j]
    return table[i, j] + dr * across[i, j] + dc * down[i, j] + dr * dc * w[i, j]


@njit(cache=True, nogil=True)
def _rectangle_sums(table, across, down, w, row_cuts, col_cuts, row_block, col_block, lo, hi, rows):
    out = np.empty(rows.size)
    for k in range(rows.size):
        m = rows[k]
        a, b, c, d = lo[m, 0], lo[m, 1], hi[m, 0], hi[m, 1]
        out[k] = (_corner(table, across, down, w, row_cuts, col_cuts, row_block, col_block, c, d)
                  - _corner(table, across, down, w, row_cuts, col_cuts, row_block, col_block, a, d)
                  - _corner(table, across, down, w, row_cuts, col_cuts, row_block, col_block, c, b)
                  + _corner(table, across, down, w, row_cuts, col_cuts, row_block, col_block, a, b))
    return out


def _check_rectangles(lo, hi, rows, shape) -> None:
    if lo.ndim != 2 or lo.shape[1] != 2 or hi.shape != lo.shape:
        raise InvalidParameter(f"rectangles are two (m, 2) arrays of corners; got shapes {lo.shape} and {hi.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= lo.shape[0]):
        raise IndexError(f"rectangle rows must lie in [0, {lo.shape[0]}); got {rows.min()}..{rows.max()}")
    if lo.size and (lo.min() < 0 or (hi - lo).min() < 0 or hi[:, 0].max() > shape[0] or hi[:, 1].max() > shape[1]):
        raise InvalidParameter(f"rectangles [lo, hi) must satisfy 0 <= lo <= hi <= {shape} on both axes")


class BlockWeights:
    """A grid estimate constant on the blocks cut by ``row_cuts`` x ``col_cuts`` (sorted, from 0 to
    the axis' length): ``weights[i, j]`` is the value of every cell of block ``(i, j)``."""

    def __init__(self, shape, total: float):
        self.shape = (int(shape[0]), int(shape[1]))
        self.row_cuts = np.array([0, self.shape[0]], dtype=np.int64)
        self.col_cuts = np.array([0, self.shape[1]], dtype=np.int64)
        self.weights = np.full((1, 1), float(total) / (self.shape[0] * self.shape[1]))

    def refine(self, lo, hi) -> None:
        """Add the boundaries of the rectangles ``[lo, hi)`` (rows ``(m, 2)`` arrays); the weights
        carry over to the sub-blocks."""
        rows = np.union1d(self.row_cuts, np.concatenate([lo[:, 0], hi[:, 0]]))
        cols = np.union1d(self.col_cuts, np.concatenate([lo[:, 1], hi[:, 1]]))
        ri = np.searchsorted(self.row_cuts, rows[:-1], side="right") - 1   # old strip of each new strip
        ci = np.searchsorted(self.col_cuts, cols[:-1], side="right") - 1
        self.weights = np.ascontiguousarray(self.weights[np.ix_(ri, ci)])
        self.row_cuts, self.col_cuts = rows, cols

    def block_ranges(self, lo, hi):
        """The block index ranges ``[r0, r1) x [c0, c1)`` of rectangles whose sides are cuts."""
        return (np.searchsorted(self.row_cuts, lo[:, 0]), np.searchsorted(self.row_cuts, hi[:, 0]),
                np.searchsorted(self.col_cuts, lo[:, 1]), np.searchsorted(self.col_cuts, hi[:, 1]))

    def rectangle_sums(self, lo, hi, rows=None) -> np.ndarray:
        """The estimate's sum over each rectangle ``[lo, hi)``, O(1) each after O(blocks): the
        summed-area table of a grid constant on blocks, read at any point in closed form.  ``rows``
        (indices into ``lo`` and ``hi``) picks the rectangles to answer without copying them out."""
        w, rs, cs = self.weights, np.diff(self.row_cuts), np.diff(self.col_cuts)
        mass = w * np.outer(rs, cs)
        table = np.zeros((w.shape[0] + 1, w.shape[1] + 1))
        table[1:, 1:] = mass.cumsum(0).cumsum(1)
        across = np.zeros((w.shape[0], w.shape[1] + 1))     # one row of block i, full blocks j' < j
        across[:, 1:] = np.cumsum(w * cs, axis=1)
        down = np.zeros((w.shape[0] + 1, w.shape[1]))       # one column of block j, full blocks i' < i
        down[1:, :] = np.cumsum(w * rs[:, None], axis=0)
        # the block of every boundary 0..n of each axis (the last boundary in the last block): one lookup
        # per corner in the compiled loop instead of a binary search
        row_block = np.minimum(np.searchsorted(self.row_cuts, np.arange(self.shape[0] + 1), side="right") - 1,
                               w.shape[0] - 1)
        col_block = np.minimum(np.searchsorted(self.col_cuts, np.arange(self.shape[1] + 1), side="right") - 1,
                               w.shape[1] - 1)
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        rows = np.arange(lo.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
        _check_rectangles(lo, hi, rows, self.shape)    # the compiled loop reads without bounds checks
        return _rectangle_sums(table, across, down, w, self.row_cuts, self.col_cuts, row_block, col_block,
                               lo, hi, rows)

    def sizes(self) -> np.ndarray:
        return np.outer(np.diff(self.row_cuts), np.diff(self.col_cuts)).astype(np.float64)

    def grid(self) -> np.ndarray:
        """The estimate on every cell (O(N), vectorised)."""
        return np.repeat(np.repeat(self.weights, np.diff(self.row_cuts), axis=0), np.diff(self.col_cuts), axis=1)


def grid_multiplicative_weights(blocks: BlockWeights, lo, hi, answers, passes: int, total: float) -> None:
    """``passes`` sweeps of the MW update over the measured rectangles ``[lo, hi)`` (``(m, 2)``) with
    noisy ``answers``, in place on ``blocks`` (refined to the rectangles' boundaries first)."""
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    blocks.refine(lo, hi)
    r0, r1, c0, c1 = blocks.block_ranges(lo, hi)
    _block_passes(blocks.weights, blocks.sizes(), r0, r1, c0, c1, np.asarray(answers, dtype=np.float64),
                  int(passes), float(total), MAX_EXPONENT)


@njit(cache=True, nogil=True)
def _rectangle_answers(table, lo, hi, rows):
    out = np.empty(rows.size)
    for k in range(rows.size):
        m = rows[k]
        a, b, c, d = lo[m, 0], lo[m, 1], hi[m, 0], hi[m, 1]
        out[k] = table[c, d] - table[a, d] - table[c, b] + table[a, b]
    return out


def rectangle_answers(table: np.ndarray, lo: np.ndarray, hi: np.ndarray, rows=None) -> np.ndarray:
    """Sums of the rectangles ``[lo, hi)`` from a 2-D summed-area table: four reads each (inclusion-
    exclusion).  ``rows`` (indices into ``lo`` and ``hi``) picks the rectangles to answer."""
    table = np.asarray(table, dtype=np.float64)
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    rows = np.arange(lo.shape[0]) if rows is None else np.asarray(rows, dtype=np.int64)
    _check_rectangles(lo, hi, rows, (table.shape[0] - 1, table.shape[1] - 1))
    return _rectangle_answers(table, lo, hi, rows)


def rectangle_errors(cells, shape, estimated: np.ndarray, lo: np.ndarray, hi: np.ndarray, rows=None) -> np.ndarray:
    """``|q(x) - q(A)|`` for every rectangle (or those ``rows`` picks), ``estimated`` being the ``q(A)``
    (:meth:`BlockWeights.rectangle_sums`): one summed-area table of ``x``, O(N + m)."""
    return np.abs(rectangle_answers(summed_area_table(cells, shape), lo, hi, rows) - estimated)


def mwem_grid_loop(shape, total: float, lo: np.ndarray, hi: np.ndarray, rounds: int, updates: int,
                   select: Callable[[np.ndarray, np.ndarray], int], measure: Callable[[int], float]) -> np.ndarray:
    """MWEM over the cells of a grid of ``shape`` with workload rectangles ``[lo, hi)`` (``(m, 2)``),
    starting uniform at ``total``; returns the estimate's cells flattened in row-major order.

    ``select(estimated, candidates)`` returns a position in ``candidates`` (indices into the
    workload), ``estimated`` being the current estimate's answers to the candidates (public);
    ``measure(j)`` returns the noisy answer of rectangle ``j``.  As in 1-D, a measured rectangle
    leaves the candidates and the total is raised to at least 1.
    """
    total = max(float(total), 1.0)
    blocks = BlockWeights(shape, total)
    open_ = np.ones(lo.shape[0], dtype=bool)
    chosen: list[int] = []
    answers: list[float] = []
    for _ in range(rounds):
        candidates = np.flatnonzero(open_)
        j = int(candidates[select(blocks.rectangle_sums(lo, hi, candidates), candidates)])
        open_[j] = False
        chosen.append(j)
        answers.append(float(measure(j)))
        grid_multiplicative_weights(blocks, lo[chosen], hi[chosen], answers, updates, total)
    return blocks.grid().ravel()
