"""DPCube's second phase in one dimension: a kd-tree on the cell estimate (Xiao, Xiong et al.).

The kd-tree is built on H~, the noisy cell histogram of phase 1 (:mod:`dphist_dpcube.cells`), so it spends
nothing: it is post-processing of an eps_1-DP output (TDP 2014, Section 4, the 2-phase strategy;
SORTaki Section IV-A, gamma_p = 0).  In one dimension a node is an interval of cells; it is cut
at its **V-optimal** point, the cut minimising SSE(left) + SSE(right) of the per-bin estimate
(the paper's "v-optimal histogram"; DPBench ``DPcube1D_engine.dpcube``), leftmost on ties.

Stopping rules (``stop=``):

* ``"dpbench"`` (default, DPBench's 1-D code): cut a node when the best cut lowers the noisy
  SSE by more than one region's cost, ``SSE(L) + SSE(R) + 2/eps_2 < SSE(node) + 1/eps_2``, with
  eps_2 the budget of the region counts (the finalizer's, ``ctx.eps_f``).  The reference charges
  a region ``1/eps_2``, which is not the variance ``2/eps_2^2`` of its noisy count; we keep the
  reference's rule as it is (``notebooks/dpcube.ipynb`` measures what it does).
* ``"variance"`` (the paper's rule, as SORTaki Section IV-A describes DPCube): cut a node
  while its noisy variance, SSE / (bins in the node), exceeds a threshold ``xi``.  ``xi="noise"``
  (our default; the paper gives no value we could check) is the variance that the cells' noise
  alone gives the per-bin estimate, ``2 / (eps_1 * cell_width)^2``: a node is cut while it varies
  more than pure noise would.  A number gives xi directly.

Cuts only at cell boundaries.  DPBench tries every bin, but this never changes the result: inside
a cell the estimate is constant, and there SSE(L) + SSE(R) = const - S_L^2/k - S_R^2/(N-k) with
S_L, S_R linear in the cut k, a concave function of k, whose minimum over a cell lies at one of
its ends (exactly: up to floating-point ties; the tests check it against a bin-level brute force
of the reference's rule, and a scratch run described in the notebook against the reference code).  So the tree works on ``ceil(n / cell_width)`` cells, 11x fewer candidates.

Speed: every node's candidate cuts are scored from prefix sums, O(cells x depth) in all, the depth
being data dependent, as in the reference's recursion (at 2^22 bins, 381,300 cells, the tree of the
benchmark's power law is about 80 levels deep: the work grows faster than the cells).  Below
``COMPILED_CELLS`` cells the tree is grown level by level, every node's candidates at once
(vectorised) and the per-node best cut from ``np.maximum.reduceat``; from it, node by node by a
compiled loop (:mod:`._kd_kernel`) that reads each node's cells once and builds no vectors of
candidates (memory).  Within a node, SSE(L) + SSE(R) = Q(node) - S_L^2/W_L - S_R^2/W_R (sums S
and widths W in bins), so a cut is scored by the two squared sums alone.  The prefix sums are of
the values centred on their mean (as :mod:`dphist.intervals` does), which loses less precision to
cancellation than DPBench's uncentred prefix sums.
"""
from __future__ import annotations

import numpy as np

from dphist import Partitioner
from dphist.partition_blocks import BlockPartition
from dphist.errors import InvalidParameter
from dphist.params import Interval, Options

from .cells import CITATION, cell_sums, context_cells

STOPS = ("dpbench", "variance")
#: from this many cells the tree is grown node by node by a compiled loop (:mod:`._kd_kernel`, numba imported
#: on first use), below it level by level in numpy: the same leaves (a test compares the two)
COMPILED_CELLS = 1 << 12


def kd_regions(sums, widths, stop: str = "dpbench", eps_2: float = 1.0, xi: float = 0.0) -> np.ndarray:
    """Cell indices where the kd-tree's leaves start (with the number of cells appended).

    ``sums``: the cells' (noisy) counts; ``widths``: their widths in bins.  The per-bin estimate
    is ``sums / widths`` spread over each cell.  ``stop="dpbench"`` uses ``eps_2``,
    ``stop="variance"`` uses ``xi`` (see the module docstring).
    """
    sums = np.asarray(sums, dtype=float)
    widths = np.asarray(widths, dtype=float)
    m = sums.size
    gain = 1.0 / eps_2  # dpbench: split when SSE(L) + SSE(R) + 2/eps_2 < SSE(node) + 1/eps_2
    # prefix sums over cells of the centred per-bin estimate: sum, sum of squares (over bins), bins
    # (written in place into one temporary and the three prefix vectors: the values of
    # ``concatenate(([0], cumsum(x)))`` for x = sums - widths * mean, x * x / widths and widths; memory)
    s = widths * (sums.sum() / widths.sum())
    np.subtract(sums, s, out=s)
    p, q, pw = (np.empty(m + 1) for _ in range(3))
    p[0] = q[0] = pw[0] = 0.0
    np.cumsum(s, out=p[1:])
    np.multiply(s, s, out=s)
    np.divide(s, widths, out=s)
    np.cumsum(s, out=q[1:])
    np.cumsum(widths, out=pw[1:])
    del s
    if m >= COMPILED_CELLS:     # node by node, compiled: the same leaves, no per-level vectors of candidates
        from ._kd_kernel import kd_leaf_starts
        leaves = kd_leaf_starts(p, q, pw, m, stop == "dpbench", gain, float(xi))
        return np.sort(np.concatenate((leaves, np.array([m], dtype=np.int64))))

    leaves = [np.array([m], dtype=np.int64)]
    a = np.array([0], dtype=np.int64)
    b = np.array([m], dtype=np.int64)
    while a.size:
        single = b - a < 2                                   # one cell: a leaf, nothing to cut
        leaves.append(a[single])
        a, b = a[~single], b[~single]
        if not a.size:
            break
        pa, pb, wa, wb = p[a], p[b], pw[a], pw[b]
        node_sse = (q[b] - q[a]) - (pb - pa) ** 2 / (wb - wa)
        counts = b - a - 1                                   # interior cuts per node
        first = np.cumsum(counts) - counts
        node = np.repeat(np.arange(a.size), counts)
        cand = np.arange(counts.sum()) + np.repeat(a + 1 - first, counts)
        pc, wc = p[cand], pw[cand]
        # S_L^2/W_L + S_R^2/W_R: the larger, the smaller SSE(L) + SSE(R)
        score = (pc - pa[node]) ** 2 / (wc - wa[node]) + (pb[node] - pc) ** 2 / (wb[node] - wc)
        best = np.maximum.reduceat(score, first)
        hit = np.flatnonzero(score == best[node])
        cut = cand[hit[np.r_[True, node[hit][1:] != node[hit][:-1]]]]   # leftmost best cut per node
        if stop == "dpbench":
            split = (q[b] - q[a]) - best + 2.0 * gain < node_sse + gain
        else:
            split = node_sse / (wb - wa) > xi
        leaves.append(a[~split])
        a, c, b = a[split], cut[split], b[split]
        a, b = np.stack([a, c], axis=1).ravel(), np.stack([c, b], axis=1).ravel()   # children, in order
    return np.sort(np.concatenate(leaves))


class KDTreePartitioner(Partitioner):
    """DPCube's kd-tree on the noisy cell histogram H~ (1-D, V-optimal cuts at cell boundaries)."""

    name = "dpcube.kd"
    dims = (1, 2)   # a grid: DPBench's kd-tree of boxes (dphist_dpcube.grid)
    citation = CITATION + " (phase 2: kd-tree partitioning of the cell histogram)"
    spends = False
    requires_domain_order = True  # cells are runs of consecutive bins of the domain
    param_constraints = {"stop": Options(*STOPS), "xi": [Options("noise"), Interval(float, 0, None)]}

    def __init__(self, stop: str = "dpbench", xi="noise"):
        self.stop = stop
        self.xi = xi

    def threshold(self, eps_in: float, cell_width: int) -> float:
        """xi of the variance rule for cells of ``cell_width`` bins and budget ``eps_in``.

        ``"noise"``: 2 / (eps_1 w)^2, the variance of one noisy cell count spread over its w bins.
        """
        if isinstance(self.xi, str):
            return 2.0 / (eps_in * cell_width) ** 2
        return float(self.xi)

    def partition(self, bins, ctx):
        if ctx.noisy is None:
            raise InvalidParameter(f"{self.name} needs H~: give the pipeline an initializer with gamma_in > 0 "
                                   "(dpcube.cells)")
        if not bins.is_identity_order() or bins.n_groups != bins.n_bins:
            raise InvalidParameter(f"{self.name} partitions singleton bins in domain order")
        shape = tuple(getattr(ctx, "shape", None) or (ctx.n,))
        if len(shape) == 2:
            return self._partition_grid(ctx, shape)
        if len(shape) > 2:
            raise InvalidParameter(f"{self.name} runs on 1-D and 2-D histograms, got {len(shape)} axes")
        bounds = context_cells(ctx)
        if self.stop == "dpbench" and not ctx.eps_f > 0:
            raise InvalidParameter(f"{self.name}: stop='dpbench' weighs a region by 1/eps_2, and the finalizer "
                                   "has no budget")
        starts = kd_regions(cell_sums(ctx.noisy, bounds), np.diff(bounds), self.stop,
                            eps_2=ctx.eps_f if self.stop == "dpbench" else 1.0,
                            xi=self.threshold(ctx.eps_in, int(bounds[1] - bounds[0])) if self.stop == "variance" else 0.0)
        ctx.notes[f"{self.name}.regions"] = int(starts.size - 1)
        # the regions as the blocks of a 1-D block grid: the kernel checks and sums them from their edges, and
        # the singleton partition's N-bin order is not held through the finalizer (memory)
        return BlockPartition((ctx.n,), (bounds[starts],))

    def _partition_grid(self, ctx, shape):
        """DPBench's 2-D kd-tree of boxes on H~ (:func:`dphist_dpcube.grid.kd_boxes`); ``stop="dpbench"`` only."""
        from .grid import boxes_partition, kd_boxes
        if self.stop != "dpbench":
            raise InvalidParameter(f"{self.name} on a grid has DPBench's stopping rule only (stop='dpbench')")
        if not ctx.eps_f > 0:
            raise InvalidParameter(f"{self.name}: stop='dpbench' weighs a region by 1/eps_2, and the finalizer "
                                   "has no budget")
        boxes = kd_boxes(np.asarray(ctx.noisy, dtype=float).reshape(shape), ctx.eps_f)
        ctx.notes[f"{self.name}.regions"] = int(boxes.shape[0])
        return boxes_partition(boxes, shape[1])
