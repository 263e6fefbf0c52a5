"""DPCube's first phase in one dimension: an equal-width cell histogram (Xiao, Xiong et al.).

DPCube (Xiao, Xiong & Yuan, SDM workshop 2010; Xiao, Xiong, Fan, Goryczka & Li, TDP 7(3) 2014,
Section 4 "cell partitioning", the first phase of the 2-phase kd-tree strategy) publishes the
noisy count of every cell of a grid with a first share of the budget, eps_1 = alpha * eps.

In one dimension DPBench's ``DPcube1D_engine`` (Hay et al., SIGMOD 2016; ``dpcomp_core``) takes
cells of ``gz = 11`` bins (the last cell keeps the remainder, ``n mod 11`` bins, when 11 does not
divide n) and spreads each noisy cell count evenly over its bins.  This module does the same
through the kernel: the cells are disjoint intervals, so their sums have L1 sensitivity 1 and one
``laplace_blocks`` call (runs of ``w`` bins) with Lap(1/eps_1) is eps_1-DP (parallel composition).  The spread is
post-processing.

H~ is per bin (length n, original order), as every dphist initializer returns; the cell counts
are recovered exactly from it by summing each cell (:func:`cell_sums`).  The initializer records
its (public) cell width in ``ctx.notes["dpcube.cells.width"]``, where the kd-tree and the
least-squares finalizer read it (:func:`context_cells`); after any other initializer (the core's
``laplace``) they take every bin as a cell.
"""
from __future__ import annotations

import numpy as np

from dphist import Initializer, InvalidParameter, Partition
from dphist.params import Interval

#: where :class:`CellInitializer` records its cell width for the later stages
WIDTH_NOTE = "dpcube.cells.width"
#: DPBench's grid size ``gz`` (``DPcube1D_engine(gz=11)``).
DEFAULT_CELL_WIDTH = 11

CITATION = ("Xiao, Xiong, Fan, Goryczka & Li, DPCube, TDP 7(3) 2014 (Xiao, Xiong & Yuan, SDM workshop 2010); "
            "1-D form of DPBench's DPcube1D (Hay et al., SIGMOD 2016)")


def cell_bounds(n: int, width: int) -> np.ndarray:
    """Bin positions where the cells start, with ``n`` appended: ``0, w, 2w, ..., n``.

    ``ceil(n / w)`` cells; the last one holds the remainder when ``w`` does not divide ``n``
    (DPBench's rule; a single cell of n bins when n < w).
    """
    return np.r_[np.arange(0, n, width, dtype=np.int64), np.int64(n)]


def context_cells(ctx) -> np.ndarray:
    """The cell bounds of this run: ``dpcube.cells``' width, or one cell per bin after another initializer."""
    return cell_bounds(ctx.n, int(ctx.notes.get(WIDTH_NOTE, 1)))


def cell_sums(noisy, bounds) -> np.ndarray:
    """The cell counts whose even spread is ``noisy`` (post-processing of H~)."""
    return np.add.reduceat(np.asarray(noisy, dtype=float), bounds[:-1])


class CellInitializer(Initializer):
    """Lap(1/eps_1) on the count of every cell of ``cell_width`` bins, spread evenly over the cell."""

    name = "dpcube.cells"
    dims = (1, 2)   # a grid: blocks of cell_width x cell_width cells (dphist_dpcube.grid)
    citation = CITATION + " (phase 1: cell partitioning)"
    param_constraints = {"cell_width": Interval(int, 1, None)}   # bins per cell

    def __init__(self, cell_width: int = DEFAULT_CELL_WIDTH):
        self.cell_width = int(cell_width)

    def initialize(self, ctx):
        if ctx.budget <= 0:
            return None
        shape = tuple(getattr(ctx, "shape", None) or (ctx.n,))
        if len(shape) == 2:       # blocks of cell_width x cell_width cells (dphist_dpcube.grid)
            from .grid import block_partition
            blocks = block_partition(shape, self.cell_width)
            ctx.notes[WIDTH_NOTE] = self.cell_width
            counts = ctx.data.laplace_partition(blocks, ctx.budget)
            return blocks.spread(counts)
        if len(shape) > 2:
            raise InvalidParameter(f"{self.name} runs on 1-D and 2-D histograms, got {len(shape)} axes")
        bounds = cell_bounds(ctx.n, self.cell_width)
        ctx.notes[WIDTH_NOTE] = self.cell_width
        # the cells are runs of cell_width bins in domain order: the kernel sums them without prefix sums
        counts = ctx.data.laplace_blocks(Partition.singletons(ctx.n), self.cell_width, ctx.budget)
        widths = np.diff(bounds)
        return np.repeat(np.asarray(counts, dtype=float) / widths, widths)
