"""Linearisations of a grid: public orders of its cells (Hilbert, Z-order, row-major).

A linearisation lists the cells of a d-dimensional histogram in a fixed order that depends on the
shape only, never on the counts, so using it costs no budget: it is a *data-independent sorter*
in SORTaki's model (Doudalis & Mehrotra).  Two ways to use one:

* as the sorter of a pipeline (``Pipeline(None, "hilbert", partitioner, finalizer, dims=(2,))``):
  the partitioner then merges runs of consecutive cells along the curve.  The registered sorters
  ``hilbert``, ``z-order`` and ``row-major`` need no initializer (they read no H~);
* around a whole 1-D preset, :class:`Linearised` (``make_algorithm("DAWA", linearise="hilbert")``):
  the cells in curve order *are* a 1-D histogram of ``N`` bins, the preset runs on it unchanged
  (workloads, domain-order finalizers and all), and the release is mapped back to the grid.  This
  is how DPBench runs DAWA and AHP on 2-D data (Hay et al., SIGMOD 2016, Section 6; Li et al.,
  PVLDB 2014, Section 5: DAWA on the Hilbert order).

One record changes one cell of the grid and so one bin of the linearised vector: neighbouring
grids map to neighbouring vectors, and the 1-D run's guarantee carries over unchanged.

Grids that are not square powers of two: the curve is drawn on the enclosing ``2^k x ... x 2^k``
cube (``2^k`` >= the longest axis), and the grid's cells are listed in the order of their positions
on it; positions outside the grid are skipped.  This equals padding the grid with zero cells that
are *public* (their count is known to be 0, they hold no record) and dropping them before anything
is measured, so no budget or noise is spent on them.  The Hilbert curve is defined here for
2-D grids (and 1-D, where every order is the identity); a grid of three or more axes is refused
with the reason (use ``z-order`` or ``row-major``, defined for any number of axes).

Index computations are vectorised over all cells: one numpy pass per bit of the side, no Python
loop per cell (Hilbert: the rotate-and-reflect recurrence of Hilbert's curve, as in Warren,
*Hacker's Delight*, 2nd ed., Section 16-2; Z-order: bit interleaving, Morton 1966).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .components.base import Context, Sorter
from .errors import InvalidParameter
from .partition import Partition
from .pipeline import Pipeline, Release, check_dims

#: the linearisations by name
CURVES = ("hilbert", "z-order", "row-major")


def _side_bits(shape) -> int:
    """``k`` with ``2^k`` >= every axis of ``shape``."""
    return max(0, int(math.ceil(math.log2(max(shape)))) if max(shape) > 1 else 0)


def hilbert_index(i, j, bits: int) -> np.ndarray:
    """Position of cells ``(i, j)`` on the Hilbert curve of the ``2^bits x 2^bits`` square
    (int64 arrays; the curve starts at (0, 0) and ends at (0, 2^bits - 1))."""
    x = np.array(i, dtype=np.int64, copy=True)
    y = np.array(j, dtype=np.int64, copy=True)
    n = np.int64(1) << bits
    d = np.zeros(np.broadcast(x, y).shape, dtype=np.int64)
    s = n >> 1
    while s > 0:
        rx = (x & s) > 0
        ry = (y & s) > 0
        d += s * s * ((3 * rx.astype(np.int64)) ^ ry.astype(np.int64))
        # rotate the quadrant so that the sub-curve has the standard orientation
        flip = ~ry & rx
        x = np.where(flip, n - 1 - x, x)
        y = np.where(flip, n - 1 - y, y)
        swap = ~ry
        x, y = np.where(swap, y, x), np.where(swap, x, y)
        s >>= 1
    return d


def morton_index(coords, bits: int) -> np.ndarray:
    """Z-order (Morton) position of cells with coordinates ``coords`` (one int array per axis):
    the bits of the coordinates interleaved, the first axis most significant within each level."""
    d = len(coords)
    if d * bits > 62:
        raise InvalidParameter(f"a Z-order index of {d} axes of 2^{bits} cells needs {d * bits} bits (at most 62)")
    out = np.zeros(np.shape(coords[0]), dtype=np.int64)
    for b in range(bits - 1, -1, -1):
        for axis, c in enumerate(coords):
            out = (out << 1) | ((np.asarray(c, dtype=np.int64) >> b) & 1)
    return out


def curve_positions(shape, curve: str) -> np.ndarray:
    """For every cell of ``shape`` (flattened in row-major order), its position on the curve: an
    int64 vector whose ranks give the linear order (positions outside the grid are never used)."""
    curve = check_curve(curve, shape)
    shape = tuple(int(s) for s in shape)
    n = math.prod(shape)
    if curve == "row-major" or len(shape) == 1:
        return np.arange(n, dtype=np.int64)
    coords = np.unravel_index(np.arange(n, dtype=np.int64), shape)
    bits = _side_bits(shape)
    if curve == "hilbert":
        return hilbert_index(coords[0], coords[1], bits)
    return morton_index(coords, bits)


def curve_order(shape, curve: str) -> np.ndarray:
    """The grid's flattened cell indices listed along the curve (a permutation of ``0..N-1``; read-only,
    cached per shape and curve: it depends on nothing else)."""
    return _cached_order(tuple(int(s) for s in shape), check_curve(curve, shape))


@lru_cache(maxsize=16)
def _cached_order(shape: tuple, curve: str) -> np.ndarray:
    order = np.argsort(curve_positions(shape, curve), kind="stable")
    order.flags.writeable = False
    return order


def check_curve(curve, shape=None) -> str:
    """``curve`` if it names a linearisation usable on ``shape``, else InvalidParameter with the reason."""
    if curve not in CURVES:
        raise InvalidParameter(f"unknown linearisation {curve!r}; choose one of {', '.join(CURVES)}")
    if shape is not None and curve == "hilbert" and len(shape) > 2:
        raise InvalidParameter(f"the Hilbert curve is defined here for 1-D and 2-D grids, got {len(shape)} axes "
                               f"(shape {tuple(shape)}); use 'z-order' or 'row-major', defined for any number of axes")
    return curve


class CurveSorter(Sorter):
    """Orders the groups along a linearisation of the grid (``ctx.shape``): data-independent, free.

    Reads neither the data nor H~, so it needs no initializer (``data_independent = True``).
    Groups are ordered by the mean curve position of their cells (for the singletons a pipeline's
    sorter receives: by each cell's position).  Grids that are not square powers of two: module
    docstring (positions outside the grid skipped, i.e. public zero padding dropped).
    """

    curve = "row-major"
    citation = ("Doudalis & Mehrotra, SORTaki, Section IV-B (a sorter); Hay et al., DPBench, SIGMOD 2016, "
                "Section 6 (2-D algorithms on a linearisation)")
    #: reads no data and no H~: the pipeline accepts it without an initializer
    data_independent = True
    dims = "any"

    def check_input(self, n: int) -> None:
        pass   # the shape is checked in sort(); every 1-D or 2-D grid has an order

    def sort(self, bins: Partition, ctx: Context) -> Partition:
        positions = curve_positions(ctx.shape, self.curve).astype(float)
        return bins.reorder_groups(bins.means(positions))


class HilbertSorter(CurveSorter):
    """Cells along the Hilbert curve (1-D and 2-D grids)."""

    name = "hilbert"
    curve = "hilbert"


class ZOrderSorter(CurveSorter):
    """Cells along the Z-order (Morton) curve (any number of axes)."""

    name = "z-order"
    curve = "z-order"


class RowMajorSorter(CurveSorter):
    """Cells in row-major order (the flattened order; any number of axes)."""

    name = "row-major"
    curve = "row-major"


class Linearised(Pipeline):
    """A 1-D pipeline run on the cells of a d-dimensional histogram in a public linear order.

    ``Linearised(make_algorithm("DAWA"), "hilbert")`` (or ``make_algorithm("DAWA",
    linearise="hilbert")``): ``run(grid, eps, seed)`` lists the cells along the curve, runs the
    inner pipeline on that vector of ``N`` bins, and maps the estimate, H~ and the partition back to
    the grid's row-major cells; the release has the grid's ``shape`` and the inner run's ledger.
    1-D histograms run unchanged.  Grids the curve cannot order are refused before anything is
    spent (module docstring).  The spec records ``linearise``, so :meth:`Release.rerun` and
    :meth:`Pipeline.from_spec` rebuild it.
    """

    def __init__(self, pipeline: Pipeline, curve: str = "hilbert"):
        if not isinstance(pipeline, Pipeline) or isinstance(pipeline, Linearised):
            raise InvalidParameter(f"Linearised wraps a 1-D Pipeline, got {pipeline!r}")
        if pipeline.dims != "any" and 1 not in pipeline.dims:
            raise InvalidParameter(f"{pipeline.name!r} does not run on 1-D histograms (dims {pipeline.dims}); "
                                   "a linearisation hands it a 1-D histogram")
        if pipeline.finalizer.unattributed:
            raise InvalidParameter(f"{pipeline.name!r} releases an unattributed (sorted) vector: it has no cells to "
                                   "map back to the grid, so it cannot run through a linearisation")
        self.curve = check_curve(curve)
        self.inner = pipeline
        self.initializer, self.sorter = pipeline.initializer, pipeline.sorter
        self.partitioner, self.finalizer = pipeline.partitioner, pipeline.finalizer
        self.shares = pipeline.shares
        self.name = pipeline.name
        self.contributions = pipeline.contributions
        self.postprocess = getattr(pipeline, "postprocess", [])   # applied by the inner run
        self.dims = "any"    # every grid the curve orders (check_curve refuses the others with the reason)

    @property
    def spec(self):
        return {**self.inner.spec, "linearise": self.curve}

    def with_shares(self, shares) -> "Linearised":
        return Linearised(self.inner.with_shares(shares), self.curve)

    def at_contributions(self, k: int) -> "Linearised":
        return Linearised(self.inner.at_contributions(k), self.curve)

    def __repr__(self) -> str:
        return f"Linearised({self.inner!r}, {self.curve!r})"

    def run(self, histogram, epsilon, seed=None, noise=None, mode=None, contributions=None) -> Release:
        from .kernel import validate_grid
        binning, bounded = None, None
        if hasattr(histogram, "release_input"):
            histogram, bounded, binning = histogram.release_input()
        counts, shape = validate_grid(histogram)
        check_curve(self.curve, shape)
        order = curve_order(shape, self.curve)
        if contributions is None and bounded is not None:
            contributions = max(self.inner.contributions, bounded)
        rel = self.inner.run(counts[order], epsilon, seed=seed, noise=noise, mode=mode, contributions=contributions)
        return self._mapped_back(rel, order, shape, binning)

    def execute(self, prepared, epsilon: float | None = None) -> Release:
        """The inner pipeline's stages on a run prepared on the grid (:meth:`Pipeline.prepare`), through
        :meth:`~dphist.kernel.PrivateKernel.reordered`: the cells in curve order as a vector, the same
        noise source and the one ledger (what the ``auto`` preset hands a linearised choice, after its
        features were measured on the grid).  Seeded, the same release as :meth:`run`."""
        from dataclasses import replace
        shape = tuple(prepared.shape)
        check_curve(self.curve, shape)
        order = curve_order(shape, self.curve)
        inner = replace(prepared, kernel=prepared.kernel.reordered(order), shape=(int(order.size),), binning=None)
        rel = self.inner.execute(inner, epsilon)
        return self._mapped_back(rel, order, shape, prepared.binning)

    def _mapped_back(self, rel: Release, order, shape, binning) -> Release:
        """The inner release of the cells in curve order mapped back to the grid's row-major cells."""
        estimate = np.empty_like(rel.estimate)
        estimate[order] = rel.estimate
        noisy = None
        if rel.noisy is not None:
            noisy = np.empty_like(rel.noisy)
            noisy[order] = rel.noisy
        partition = Partition(order[rel.partition.order], rel.partition.bounds, validate=False)
        rel.estimate, rel.noisy, rel.partition, rel.shape = estimate, noisy, partition, shape
        rel.spec = self.spec
        rel.binning = binning if binning is not None else rel.binning
        if rel.pipeline is not None:
            rel.pipeline = self
        rel.notes = {**rel.notes, "linearise": self.curve}
        return rel
