"""UG and AG: uniform and adaptive grids over a 2-D histogram (Qardaji, Yang, Li, ICDE 2013).

Uniform grid (paper Section IV).  A query covering a fraction ``r`` of the domain on an ``m x m``
grid of blocks sums about ``r m^2`` noisy blocks (noise error, standard deviation
``sqrt(2 r) m / eps``) and cuts about ``sqrt(r) m`` blocks on its border, each holding about
``N / m^2`` records of which an unknown part lies inside (non-uniformity error, modelled as
``sqrt(r) N / (c0 m)``).  Their sum is smallest at ``m = sqrt(N eps / (sqrt(2) c0))``: the paper's
Guideline 1, ``m = sqrt(N eps / c)`` with ``c = 10`` found best on its data
(``notebooks/grids.ipynb`` derives it and checks it by simulation).

Adaptive grid (paper Section V).  A coarse first level of ``m1 x m1`` blocks,
``m1 = max(10, sqrt(N eps / c) / 4)``, measured with ``alpha eps``; each block whose noisy count
is ``N'`` is split into ``m2 x m2`` sub-blocks, ``m2 = sqrt(N' (1 - alpha) eps / c2)`` (``c2 = c / 2``:
the same trade-off as UG inside the block, with the budget ``(1 - alpha) eps`` of the second level),
measured with ``(1 - alpha) eps``.  Constrained inference: a block's two estimates of its total
(its level-1 count ``v``, variance ``2 / (alpha eps)^2``, and the sum of its ``s`` level-2 counts,
variance ``2 s / ((1 - alpha) eps)^2``) are averaged with inverse-variance weights, and the
difference between that average and the level-2 sum is spread evenly over the ``s`` sub-blocks.

Cell sides as the DPBench code computes them (dpcomp_core ``UG.py``, ``AG.py``, read, not copied):
the number of blocks ``M`` gives square blocks of ``max(1, floor(sqrt(n1 n2 / M)))`` cells a side
(edge blocks cut by the border), ``m1`` and ``m2`` are rounded down (at least 1).  One deliberate
difference: the inference weighs the level-2 sum by its actual number of sub-blocks ``s``; the
DPBench code uses ``m2^2``, which is larger than ``s`` when a block has fewer cells than
``m2^2`` and then under-weighs the level-2 sum.

The total ``N``.  The paper's formulas need the number of records; the DPBench code reads it from
the data (``x.sum()``, "assume the data scale is non private information").  Here it is either a
noisy total bought with ``total_ratio`` of epsilon (the default; Laplace on the whole domain,
sensitivity 1), or ``public_total``, a number the user declares public (no budget; the guarantee
then assumes it was not computed from this data).  Everything the grids decide depends only on
that total, the shape, epsilon and (AG) the level-1 noisy counts: post-processing.
"""
from __future__ import annotations

import math

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition, Partitioner
from dphist.partition_blocks import BlockPartition
from dphist.params import Interval

CITATION = "Qardaji, Yang, Li, Differentially Private Grids for Geospatial Data, ICDE 2013"
#: the paper's constant of Guideline 1
DEFAULT_C = 10.0
#: share of epsilon spent on the noisy total (when no public total is declared)
DEFAULT_TOTAL_RATIO = 0.05
#: the ctx.notes key where grids.adaptive leaves its first level for grids.adaptive-inference
NOTES_KEY = "grids.adaptive"

_COMMON = {"c": Interval(float, 0, None, closed="neither"),
           "total_ratio": Interval(float, 0, 1, closed="neither"),
           "public_total": [None, Interval(float, 0, None)]}


def cell_side(shape, blocks: float) -> int:
    """Side, in cells, of square blocks making about ``blocks`` blocks over ``shape``:
    ``max(1, floor(sqrt(n1 n2 / blocks)))`` (the DPBench code's rounding); the longest axis when
    ``blocks`` <= 0 (one block)."""
    n1, n2 = shape
    if not blocks > 0:
        return max(n1, n2)
    return max(1, min(int(math.sqrt(n1 * n2 / blocks)), max(n1, n2)))


def block_labels(shape, side: int) -> np.ndarray:
    """Block index of every cell (row-major cells; blocks of ``side x side`` cells, numbered
    row-major; edge blocks cut by the border)."""
    n1, n2 = shape
    i = np.arange(n1, dtype=np.int64)[:, None] // side
    j = np.arange(n2, dtype=np.int64)[None, :] // side
    return (i * (-(-n2 // side)) + j).reshape(-1)


def block_partition(shape, side: int) -> BlockPartition:
    """Blocks of ``side x side`` cells (edge blocks cut by the border), numbered row-major, each block's
    cells in row-major order: the same groups and order as ``Partition.from_labels(block_labels(shape,
    side))``, described by its edges (:class:`dphist.partition_blocks.BlockPartition`): the kernel
    validates, measures and spreads it without a permutation of the cells."""
    return BlockPartition.regular(shape, side)


def nested_block_partition(shape, side1: int, side2) -> BlockPartition:
    """Blocks of ``side2[b]`` cells a side inside every level-1 block ``b`` of ``side1`` cells a side
    (AG's level 2): the same partition as ``Partition.from_labels`` of the level-2 labels, which sort
    by level-1 block (row-major), then by sub-block inside it (row-major), then by cell (row-major);
    described by the level-1 edges and one side per block (nested block grids)."""
    return BlockPartition.regular(shape, side1).nested(np.asarray(side2, dtype=np.int64))


def _check_grid(ctx, who: str) -> tuple[int, int]:
    if len(ctx.shape) != 2:
        raise InvalidParameter(f"{who} partitions 2-D histograms; got shape {ctx.shape}")
    return ctx.shape


def _total(component, ctx, eps: float) -> float:
    """The public total, or a noisy one bought with ``eps`` (clamped at 0: post-processing)."""
    if component.public_total is not None:
        return float(component.public_total)
    noisy = ctx.data.laplace_partition(Partition.whole(ctx.n), eps)
    value = noisy.item(0) if type(noisy) is np.ndarray else np.asarray(noisy).reshape(-1)[0]   # the one answer
    return max(float(value), 0.0)


class UniformGrid(Partitioner):
    """UG's grid: square blocks, about ``N eps_f / c`` of them (paper Guideline 1, Section IV).

    ``eps_f`` is the finalizer's share (the budget that measures the blocks).  Spends its share
    on a noisy total unless ``public_total`` is given (then it spends nothing: shares
    ``(0, 0, 1)``).  Requires domain order (the blocks are grid blocks of ``ctx.shape``).
    """

    name = "grids.uniform"
    citation = CITATION + ", Section IV (Guideline 1)"
    requires_domain_order = True
    dims = (2,)
    param_constraints = dict(_COMMON)

    def __init__(self, c: float = DEFAULT_C, total_ratio: float = DEFAULT_TOTAL_RATIO,
                 public_total: float | None = None):
        self.c = c
        self.total_ratio = total_ratio
        self.public_total = public_total

    @property
    def spends(self) -> bool:
        """Only on the noisy total: with a public total the grid is chosen from public numbers."""
        return self.public_total is None

    def blocks(self, total: float, eps: float) -> float:
        """``M = N eps / c``, the number of blocks (m^2) of Guideline 1."""
        return total * eps / float(self.c)

    def partition(self, bins: Partition, ctx) -> Partition:
        shape = _check_grid(ctx, self.name)
        total = _total(self, ctx, ctx.budget)
        side = cell_side(shape, self.blocks(total, ctx.eps_f))
        ctx.notes["grids.uniform"] = {"total": total, "cell_side": side}
        return block_partition(shape, side)


class AdaptiveGrid(Partitioner):
    """AG's two levels (paper Section V): level-1 blocks measured here, level-2 blocks returned.

    Its share ``eps_p`` pays for the noisy total (``total_ratio * epsilon``, unless ``public_total``)
    and the level-1 counts (the rest, ``eps_1``); the finalizer's share ``eps_f`` measures level 2, so
    ``alpha = eps_1 / (eps_1 + eps_f)``.  ``m1 = max(m1_min, floor(sqrt(N eps / c) / 4))`` with
    ``eps = eps_1 + eps_f``; each block's ``m2 = max(1, floor(sqrt(N' eps_f / c2)))`` from its noisy
    count ``N'`` (1 when ``N'`` <= 0).  Leaves the level-1 counts in ``ctx.notes["grids.adaptive"]``
    for ``grids.adaptive-inference``.
    """

    name = "grids.adaptive"
    citation = CITATION + ", Section V (adaptive grids)"
    requires_domain_order = True
    spends = True
    dims = (2,)
    param_constraints = {**_COMMON, "c2": Interval(float, 0, None, closed="neither"),
                         "m1_min": Interval(int, 1, None)}

    def __init__(self, c: float = DEFAULT_C, c2: float = DEFAULT_C / 2, m1_min: int = 10,
                 total_ratio: float = DEFAULT_TOTAL_RATIO, public_total: float | None = None):
        self.c = c
        self.c2 = c2
        self.m1_min = m1_min
        self.total_ratio = total_ratio
        self.public_total = public_total

    def first_level(self, total: float, eps: float) -> int:
        """``m1``: blocks per axis of level 1."""
        return max(int(self.m1_min), max(1, int(math.sqrt(max(total, 0.0) * eps / float(self.c)) / 4)))

    def second_level(self, noisy, eps2: float) -> np.ndarray:
        """``m2`` of every level-1 block from its noisy count (1 for counts <= 0)."""
        noisy = np.asarray(noisy, dtype=float)
        m2 = np.floor(np.sqrt(np.maximum(noisy, 0.0) * eps2 / float(self.c2)))
        return np.where(noisy > 0, np.maximum(m2, 1), 1).astype(np.int64)

    def partition(self, bins: Partition, ctx) -> Partition:
        shape = _check_grid(ctx, self.name)
        if ctx.eps_f <= 0:
            raise InvalidParameter(f"{self.name}: level 2 is measured by the finalizer; give it a share gamma_f > 0")
        eps_total = 0.0 if self.public_total is not None else self.total_ratio * ctx.epsilon
        eps1 = ctx.budget - eps_total
        if eps1 <= 0:
            raise InvalidParameter(f"{self.name}: its share gamma_p * epsilon = {ctx.budget:.6g} leaves nothing for "
                                   f"level 1 after the total's {eps_total:.6g} (total_ratio * epsilon)")
        total = _total(self, ctx, eps_total) if eps_total > 0 else float(self.public_total)
        eps_grid = eps1 + ctx.eps_f
        m1 = self.first_level(total, eps_grid)
        side1 = cell_side(shape, float(m1 * m1))
        level1 = block_partition(shape, side1)
        noisy1 = np.asarray(ctx.data.laplace_partition(level1, eps1), dtype=float)
        side2, sizes = self.second_level_sides(shape, side1, self.second_level(noisy1, ctx.eps_f))
        ctx.notes[NOTES_KEY] = {"total": total, "m1": m1, "cell_side": side1, "level1": noisy1,
                                "eps1": eps1, "sub_blocks": sizes}
        return level1.nested(side2)     # nested_block_partition(shape, side1, side2), level 1 not rebuilt

    @staticmethod
    def second_level_sides(shape, side1: int, m2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Side, in cells, of the level-2 blocks of every level-1 block (``max(1, floor(sqrt(area / m2^2)))``,
        at most the block's longer side: the DPBench code's rounding) and the number of level-2 blocks
        in each level-1 block (edge blocks cut by the block's border)."""
        n1, n2 = shape
        cols1 = -(-n2 // side1)
        b = np.arange(m2.size)
        rows_b = np.minimum(side1, n1 - (b // cols1) * side1)
        cols_b = np.minimum(side1, n2 - (b % cols1) * side1)
        side2 = np.maximum(1, np.minimum(np.floor(np.sqrt(rows_b * cols_b / (m2 * m2.astype(float)))),
                                         np.maximum(rows_b, cols_b))).astype(np.int64)
        return side2, (-(-rows_b // side2)) * (-(-cols_b // side2))


def _level1_block(bins: Partition, shape, side1: int) -> np.ndarray:
    """The level-1 block of every group: from the description of nested block grids, else read off the
    group's first cell (O(groups), not O(cells))."""
    if isinstance(bins, BlockPartition) and bins.steps is not None:
        return bins.block_of_groups()
    i, j = np.divmod(bins.order[bins.bounds[:-1]], shape[1])
    return (i // side1) * (-(-shape[1] // side1)) + j // side1


#: the bias AG's statement names (the level-1 counts are held fixed, with their noise)
AG_BIAS = ("unknown: given level 1, its noise enters every group of a block as a fixed offset (its weighted share), "
           "and averaging within a level-2 block is biased by the spread of the true counts in it; both depend on "
           "private values and are not stated")


class AdaptiveInference(Finalizer):
    """AG's level 2 and constrained inference (paper Section V-B).

    Measures every group (a level-2 block) with Laplace(1/eps_f), then per level-1 block ``b``
    with noisy count ``v`` and level-2 counts ``u_1..u_s``:
    ``v' = (a^2 s v + (1 - a)^2 sum u) / (a^2 s + (1 - a)^2)`` with ``a = eps_1 / (eps_1 + eps_f)``
    (inverse-variance weights), and ``u_i + (v' - sum u) / s`` spread evenly over sub-block ``i``.
    After another partitioner (no level 1 of ``grids.adaptive`` in ``ctx.notes``) there is nothing to
    reconcile: it measures the groups as the core's ``group-mean`` does.
    """

    name = "grids.adaptive-inference"
    citation = CITATION + ", Section V-B (constrained inference)"
    requires_domain_order = True
    dims = (2,)

    def stated_error(self, bins: Partition, ctx):
        """The noise of level 2 given the published level 1 (its noisy counts ``v`` and the blocks
        chosen from them, in ``ctx.notes``): the reconciliation above is the weighted least squares of
        the level-2 answers (weight ``eps_f^2``) and the level-1 answers (weight ``eps_1^2``), the
        latter held fixed: noiseless rows of the least squares (:class:`dphist.stated_error.Measurement`),
        so each group total's error is its level-2 noise minus its share of its block's
        ``eps_1^2 s / (eps_1^2 s + eps_f^2)`` of the summed level-2 noise.  The pipeline marks it
        noise-only, the bias (averaging within a block, and the blocks chosen from the data) unknown.
        After another partitioner: one noisy total per group, as ``group-mean`` states."""
        import scipy.sparse as sp
        from dphist.stated_error import LinearStatedError, LinearStrategy, Measurement, group_mean_strategy
        level = ctx.notes.get(NOTES_KEY)
        if level is None:
            return group_mean_strategy(bins.n_groups, ctx.eps_f)
        block = _level1_block(bins, ctx.shape, int(level["cell_side"]))
        k, nb = bins.n_groups, int(np.asarray(level["level1"]).size)
        member = sp.csr_matrix((np.ones(k), (block, np.arange(k))), shape=(nb, k))
        eps1 = float(level["eps1"])
        strategy = LinearStrategy([Measurement(sp.identity(k, format="csr"), 1.0, ctx.eps_f, integral=True,
                                               support=1),
                                   Measurement(member, 1.0, eps1, integral=True, support=1, noiseless=True)], k,
                                  reconstruction="constrained inference of the two levels, level 1 given")
        return LinearStatedError(strategy, ctx.noise_law, bins).marked("noise-only", bias=AG_BIAS)

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        level = ctx.notes.get(NOTES_KEY)
        u = np.asarray(ctx.data.laplace_partition(bins, ctx.budget), dtype=float)
        if level is None:
            return bins.spread(u)
        block = _level1_block(bins, ctx.shape, int(level["cell_side"]))
        v = np.asarray(level["level1"], dtype=float)
        s = np.bincount(block, minlength=v.size).astype(float)
        sum_u = np.bincount(block, weights=u, minlength=v.size)
        a = level["eps1"] / (level["eps1"] + ctx.budget)
        w1, w2 = a * a * s, (1 - a) ** 2
        reconciled = (w1 * v + w2 * sum_u) / (w1 + w2)
        adjusted = u + ((reconciled - sum_u) / np.maximum(s, 1))[block]
        return bins.spread(adjusted)
