"""DPCube's final inference: one least-squares estimate from the cell and the region counts.

After phase 2, every region r (a union of m_r cells) has two independent unbiased estimates of
its total: the sum of its noisy cell counts, Y_r = sum_c y_c with variance m_r s1^2, and its own
noisy count z_r with variance s2^2, where s1^2 = 2/eps_1^2 and s2^2 = 2/eps_2^2 are the variances
of Lap(1/eps_1) and Lap(1/eps_2).  DPCube combines them by least squares (Xiao, Xiong et al., TDP
2014, Section 4, the inference step of the 2-phase strategy; SORTaki Section IV-A: "a
post-processing step that combines the average stats with the information inside H~"):

    minimise  sum_c (x_c - y_c)^2 / s1^2  +  (sum_c x_c - z_r)^2 / s2^2      over the cells of r.

Setting the gradient to zero gives the closed form (derived in ``notebooks/dpcube.ipynb``):

    S_r = (s2^2 Y_r + m_r s1^2 z_r) / (s2^2 + m_r s1^2)      (inverse-variance weighting),
    x_c = y_c + (S_r - Y_r) / m_r                             (the correction shared equally),

and each cell's x_c is spread evenly over its bins.  The cells are ``dpcube.cells``' (its width is
read from ``ctx.notes``); after a per-bin initializer such as the core's ``laplace`` every bin is a
cell and the same formula holds with m_r = bins in the region.  S_r has variance
m_r s1^2 s2^2 / (s2^2 + m_r s1^2), below both inputs'.  It is post-processing of the two private
outputs, so it costs nothing beyond the region counts' eps_2.  DPBench's 1-D code does not do
this step (it publishes the region counts alone: ``inference="none"`` of the ``DPCube`` preset,
the core's ``group-mean`` finalizer).

The weights use the continuous Laplace variances in both modes; release mode's discrete Laplace
has a slightly smaller variance, which leaves the estimate unbiased (only its weighting is a
little off the optimum).
"""
from __future__ import annotations

import numpy as np

from dphist import Finalizer
from dphist.partition_blocks import BlockPartition
from dphist.errors import InvalidParameter

from .cells import CITATION, cell_sums, context_cells


def least_squares_cells(y, z, region_cells, s1_sq: float, s2_sq: float) -> np.ndarray:
    """The least-squares cell counts from cell counts ``y`` and region counts ``z``.

    ``region_cells``: cell indices where the regions start (leading 0, no end); ``s1_sq``,
    ``s2_sq``: the noise variances of one cell count and of one region count.
    """
    y = np.asarray(y, dtype=float)
    z = np.asarray(z, dtype=float)
    starts = np.asarray(region_cells, dtype=np.int64)
    m = np.diff(np.r_[starts, y.size]).astype(float)
    Y = np.add.reduceat(y, starts)
    S = (s2_sq * Y + m * s1_sq * z) / (s2_sq + m * s1_sq)
    return y + np.repeat((S - Y) / m, m.astype(np.int64))


#: cells compared at a time by :func:`_spreads_evenly` (its temporaries: about this many cells' bins, not N)
CHECK_CELLS = 1 << 16


def _spreads_evenly(noisy, means, cells) -> bool:
    """``np.allclose(noisy, np.repeat(means, widths), rtol=1e-9, atol=1e-9)``, compared ``CHECK_CELLS`` cells at
    a time (the same elementwise test: true for the whole only when true for every chunk), so that no N-bin
    spread and temporaries of the comparison are held beside H~ (memory)."""
    widths = np.diff(cells)
    for i in range(0, means.size, CHECK_CELLS):
        j = min(i + CHECK_CELLS, means.size)
        part = np.repeat(means[i:j], widths[i:j])
        if not np.allclose(noisy[cells[i]:cells[j]], part, rtol=1e-9, atol=1e-9):
            return False
    return True


class LeastSquaresFinalizer(Finalizer):
    """Lap(1/eps_2) on every region's count, then DPCube's least-squares inference with H~'s cells."""

    name = "dpcube.least-squares"
    citation = CITATION + " (inference of the 2-phase strategy)"
    requires_domain_order = True

    def finalize(self, bins, ctx):
        if ctx.noisy is None or not ctx.eps_in > 0:
            raise InvalidParameter(f"{self.name} combines the regions with H~'s cells: give the pipeline an "
                                   "initializer with gamma_in > 0 (dpcube.cells)")
        one_axis_blocks = isinstance(bins, BlockPartition) and len(bins.shape) == 1 and bins.steps is None
        if not (one_axis_blocks or bins.is_identity_order()):   # runs of a vector are in domain order
            raise InvalidParameter(f"{self.name} needs regions of consecutive bins in domain order")
        cells = context_cells(ctx)
        widths = np.diff(cells)
        y = cell_sums(ctx.noisy, cells)
        if not _spreads_evenly(ctx.noisy, y / widths, cells):
            raise InvalidParameter(f"{self.name}: H~ is not constant on the cells of {cells[1]} bins; the weights "
                                   "assume H~ is dpcube.cells' output (or a per-bin initializer's)")
        region_cells = np.searchsorted(cells, bins.bounds[:-1])
        if not np.array_equal(cells[region_cells], bins.bounds[:-1]):
            raise InvalidParameter(f"{self.name}: the regions must be unions of dpcube.cells' cells of {cells[1]} "
                                   "bins (partition with dpcube.kd)")
        z = ctx.data.laplace_partition(bins, ctx.budget)
        s1_sq, s2_sq = 2.0 / ctx.eps_in ** 2, 2.0 / ctx.budget ** 2
        x = least_squares_cells(y, z, region_cells, s1_sq, s2_sq)
        return np.repeat(x / widths, widths)
