"""Structured partitions of a grid: axis-aligned boxes that tile it, described by their edges.

A :class:`BlockPartition` of a grid of ``shape`` (d axes, cells flattened in row-major order) is

* ``edges`` - one strictly increasing vector per axis from 0 to the axis' length: the *blocks* are
  the products of consecutive intervals, numbered row-major (a block grid: UG's blocks, AG's level 1);
* ``steps`` - optional, one row of d positive integers per block: block ``b`` is cut again into
  sub-blocks of ``steps[b]`` cells along each axis (the last one along an axis cut by the block's
  border), numbered row-major inside the block (nested block grids: AG's level 2, each level-1 block
  with its own side).

The groups are the blocks (no ``steps``) or the sub-blocks, block by block; a group's cells are in
row-major order.  It is a :class:`~dphist.partition.Partition` like any other: its ``order`` (the
permutation) is built only when something reads it (stable sort of the cells' group labels), its
``bounds`` from the description in O(groups).  What needs no permutation:

* validity, from the description alone (:meth:`BlockPartition.validate`): edges strictly increasing from
  0 to each length, steps positive integers, one row per block: disjoint and covering by construction,
  O(blocks + axes' lengths);
* the group sums of a grid (:func:`block_sums`, run by the kernel's ``laplace_partition`` on its own
  counts): the grid reduced along every axis at the *refined cuts*, the union of every group's first
  coordinate along that axis (``np.add.reduceat``, or whole rows added as vectors where ``reduceat``
  along a leading axis is slow: :func:`_reduce_axis`); the groups are then the cells of that refined
  grid (a block grid) or unions of them, summed exactly in int64 by their labels (:func:`_grouped_sums`);
* :meth:`BlockPartition.expand` / ``spread``: the groups' values gathered onto the refined grid and
  ``np.repeat`` along every axis: the same floats as the permutation's scatter.

The kernel takes such a partition by its description (:func:`checked_block_partition`: read once,
copied into immutable arrays, validated against the kernel's shape), never through the caller's
methods.  N-dimensional by design; tested on 2-D and 3-D grids, used by the grids plugin in 2-D.
"""
from __future__ import annotations

import math

import numpy as np

from .errors import InvalidParameter
from .partition import Partition
from .validation import are_strict_bounds, frozen_int64, keep_recent

_ORDER = Partition.__dict__["order"]      # the base class' slots, filled on first read
_BOUNDS = Partition.__dict__["bounds"]
#: refined grids up to this many cells are summed by labels with two float bincounts (exact: every
#: partial sum of 26-bit halves stays below 2**53); larger ones by a sort of the labels
_BINCOUNT_CELLS = 1 << 27


#: nested block grids over at most this many cells have an immutable layout and are kept by the kernel
#: (:data:`_CHECKED`); a block grid's layout is always immutable (O(blocks))
_FROZEN_LAYOUT_CELLS = 1 << 16


class _Layout:
    """What the description implies, computed once per partition: the refined cuts per axis, the
    refined grid's shape and widths, every refined cell's group (None for a block grid: the cells are
    the groups), the groups' sizes, and per block its number of groups."""

    __slots__ = ("cuts", "widths", "labels", "sizes", "per_block")

    def __init__(self, shape, edges, steps):
        d = len(shape)
        extents = [e[1:] - e[:-1] for e in edges]
        if steps is None:       # immutable arrays (frozen_int64): the kernel shares a checked grid's layout
            self.cuts = [e[:-1] for e in edges]
            self.widths = [frozen_int64(w) for w in extents]
            self.labels = None
            sizes = extents[0]
            for ext in extents[1:]:
                sizes = np.multiply.outer(sizes, ext)
            self.sizes = frozen_int64(sizes.reshape(-1))
            self.per_block = None
            return
        blocks_per_axis = [e.size - 1 for e in edges]
        coords = np.unravel_index(np.arange(steps.shape[0]), blocks_per_axis)     # each block's coordinates
        lo = [edges[a][coords[a]] for a in range(d)]
        step = [steps[:, a] for a in range(d)]
        across = [-(-extents[a][coords[a]] // step[a]) for a in range(d)]     # sub-blocks per axis, per block
        per_block = across[0]
        for a in range(1, d):
            per_block = per_block * across[a]
        first = np.cumsum(per_block) - per_block
        self.per_block = per_block
        # refined cuts: the union of every sub-block's first coordinate along each axis (a mask per axis)
        cuts = []
        for a in range(d):
            owner = np.repeat(np.arange(per_block.size, dtype=np.int64), across[a])
            k = np.arange(owner.size, dtype=np.int64) - (np.cumsum(across[a]) - across[a])[owner]
            mask = np.zeros(shape[a], dtype=bool)
            mask[lo[a][owner] + k * step[a][owner]] = True
            cuts.append(np.flatnonzero(mask))
        self.cuts = cuts
        self.widths = [np.append(c[1:], n) - c for c, n in zip(cuts, shape)]
        # every refined cell's group: its block, its sub-block's coordinates inside the block (row-major)
        where = [np.searchsorted(edges[a], cuts[a], side="right") - 1 for a in range(d)]
        block_of = np.zeros((1,) * d, dtype=np.int64)
        for a in range(d):
            block_of = block_of * blocks_per_axis[a] + where[a].reshape([-1 if b == a else 1 for b in range(d)])
        for a in range(d):
            offset = (cuts[a] - edges[a][where[a]]).reshape([-1 if b == a else 1 for b in range(d)])
            local = offset // step[a][block_of]
            label = local if a == 0 else label * across[a][block_of] + local
        self.labels = (first[block_of] + label).reshape(-1)
        # every group's size: the cells of its refined cells (float sums of integers far below 2**53: exact)
        area = self.widths[0].astype(float)
        for w in self.widths[1:]:
            area = np.multiply.outer(area, w)
        self.sizes = np.bincount(self.labels, weights=area.reshape(-1), minlength=int(first[-1] + per_block[-1]))
        self.sizes = self.sizes.astype(np.int64)
        if self.labels.size <= _FROZEN_LAYOUT_CELLS:   # small: immutable, so the kernel may share it (_CHECKED)
            self.cuts = [frozen_int64(c) for c in self.cuts]
            self.widths = [frozen_int64(w) for w in self.widths]
            self.labels, self.sizes, self.per_block = (frozen_int64(v) for v in (self.labels, self.sizes, per_block))


#: the immutable edges of the last :data:`_REGULAR_KEEP` regular block grids made, by ``(shape, side)`` as
#: given: a loop of runs on one grid builds no edges per run
_REGULAR: dict = {}
_REGULAR_KEEP = 16


class BlockPartition(Partition):
    """Groups that are axis-aligned boxes tiling a grid, described by per-axis ``edges`` and optional
    per-block ``steps`` (module docstring).  Immutable; ``order`` and ``bounds`` are built on first read.

    >>> p = BlockPartition((4, 6), ([0, 2, 4], [0, 3, 6]))      # 2 x 2 blocks of 2 x 3 cells
    >>> p.n_groups, p.order[:6].tolist()
    (4, [0, 1, 2, 6, 7, 8])
    """

    __slots__ = ("shape", "edges", "steps", "_layout", "_valid")

    def __init__(self, shape, edges, steps=None, *, validate: bool = True):
        try:
            shape = tuple(int(s) for s in shape)
            edges = tuple(np.asarray(e, dtype=np.int64) for e in edges)
            steps = None if steps is None else np.asarray(steps, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            raise InvalidParameter("a block partition is a shape, integer edges per axis and optional integer "
                                   "steps per block") from None
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "_layout", None)
        object.__setattr__(self, "_valid", False)
        if validate:
            self.validate()

    def __setattr__(self, name, value):
        raise AttributeError("a BlockPartition is immutable")

    def __reduce__(self):
        return (BlockPartition, (self.shape, self.edges, self.steps))

    # ----------------------------------------------------------- constructors
    @classmethod
    def regular(cls, shape, side) -> "BlockPartition":
        """Blocks of ``side`` cells along every axis (an int, or one per axis), the last ones cut by the
        border."""
        try:
            known = _REGULAR.get((shape, side))       # a shape and a side seen before (plain ints: hashable)
        except TypeError:                             # an array of sides
            known = None
        if known is not None:
            return cls._made(*known, None)
        key = (shape, side)
        shape = tuple(int(s) for s in shape)
        sides = [int(side)] * len(shape) if np.ndim(side) == 0 else [int(s) for s in side]
        if min(shape + tuple(sides), default=0) < 1:
            raise InvalidParameter(f"regular blocks need a shape and sides of positive lengths, got {shape}, {side}")
        edges = []
        for n, s in zip(shape, sides):
            e = np.arange(0, n + s, s, dtype=np.int64)     # 0, s, 2s, ... past n; the last edge is n
            e[-1] = n
            edges.append(frozen_int64(e))                  # immutable: shared by the partitions of that key
        edges = tuple(edges)
        try:
            keep_recent(_REGULAR, key, (shape, edges), _REGULAR_KEEP)
        except TypeError:        # an unhashable shape or side: not kept
            pass
        return cls._made(shape, edges, None)    # valid by construction

    @classmethod
    def _made(cls, shape: tuple, edges: tuple, steps) -> "BlockPartition":
        """A partition of arrays already int64 and checked (the constructors above, the kernel's copy)."""
        out = object.__new__(cls)
        setattr_ = object.__setattr__
        setattr_(out, "shape", shape)
        setattr_(out, "edges", edges)
        setattr_(out, "steps", steps)
        setattr_(out, "_layout", None)
        setattr_(out, "_valid", True)
        return out

    def nested(self, steps) -> "BlockPartition":
        """This block grid with every block ``b`` cut into sub-blocks of ``steps[b]`` cells (one per axis,
        or one side for every axis).  Checked on first use, as the kernel checks its own copy."""
        steps = np.asarray(steps, dtype=np.int64)
        if steps.ndim == 1:
            steps = np.repeat(steps[:, None], len(self.shape), axis=1)
        out = BlockPartition._made(self.shape, self.edges, steps)
        object.__setattr__(out, "_valid", False)        # checked on first use (the kernel checks its own copy)
        return out

    # ------------------------------------------------------------- checking
    def validate(self) -> "BlockPartition":
        """Raise :class:`InvalidParameter` unless the description tiles the grid: positive lengths, one edge
        vector per axis running strictly upwards from 0 to the axis' length, and (if given) one row of
        positive steps per block.  Boxes built from such a description are disjoint and cover every
        cell; nothing of size N is read."""
        shape, edges, steps = self.shape, self.edges, self.steps
        if not shape or any(s < 1 for s in shape):
            raise InvalidParameter(f"a block partition needs a grid shape of positive lengths, got {shape}")
        if len(edges) != len(shape):
            raise InvalidParameter(f"a block partition needs edges for each of the {len(shape)} axes, "
                                   f"got {len(edges)}")
        for a, (e, n) in enumerate(zip(edges, shape)):
            if not are_strict_bounds(e, n):
                raise InvalidParameter(f"block edges of axis {a} must increase strictly from 0 to {n} (blocks "
                                       "that overlap or leave a gap)")
        if steps is not None:
            blocks = math.prod(len(e) - 1 for e in edges)
            if steps.shape != (blocks, len(shape)):
                raise InvalidParameter(f"block steps need one row of {len(shape)} per block ({blocks}), got shape "
                                       f"{steps.shape}")
            if steps.size and int(steps.min()) < 1:
                raise InvalidParameter("block steps must be positive integers (sub-blocks of at least one cell)")
        object.__setattr__(self, "_valid", True)
        return self

    # ------------------------------------------------------------ structure
    def layout(self) -> _Layout:
        if self._layout is None:
            if not self._valid:
                self.validate()
            object.__setattr__(self, "_layout", _Layout(self.shape, self.edges, self.steps))
        return self._layout

    @property
    def order(self) -> np.ndarray:
        """The permutation: cells by group, row-major inside a group (a stable sort of the cells' group
        labels, built on first read and kept, read-only)."""
        try:
            return _ORDER.__get__(self)
        except AttributeError:
            order = np.argsort(self.labels(), kind="stable").astype(np.int64, copy=False)
            order.setflags(write=False)
            _ORDER.__set__(self, order)
            return order

    @property
    def bounds(self) -> np.ndarray:
        try:
            return _BOUNDS.__get__(self)
        except AttributeError:
            sizes = self.layout().sizes
            bounds = np.zeros(sizes.size + 1, dtype=np.int64)
            np.cumsum(sizes, out=bounds[1:])
            bounds.setflags(write=False)
            _BOUNDS.__set__(self, bounds)
            return bounds

    @property
    def n_bins(self) -> int:
        return math.prod(self.shape)

    @property
    def n_groups(self) -> int:
        return int(self.layout().sizes.size)

    @property
    def n_blocks(self) -> int:
        return math.prod(len(e) - 1 for e in self.edges)

    @property
    def sizes(self) -> np.ndarray:
        return self.layout().sizes

    def block_of_groups(self) -> np.ndarray:
        """The block of every group (the identity for a block grid)."""
        per_block = self.layout().per_block
        if per_block is None:
            return np.arange(self.n_blocks, dtype=np.int64)
        return np.repeat(np.arange(per_block.size, dtype=np.int64), per_block)

    def is_plain(self) -> bool:
        """Single cells in domain order: every axis cut at every cell, no sub-blocks."""
        return self.steps is None and all(e.size == n + 1 for e, n in zip(self.edges, self.shape))

    def labels(self) -> np.ndarray:
        return self.expand(np.arange(self.n_groups, dtype=np.int64), dtype=np.int64)

    def expand(self, group_values, dtype=None) -> np.ndarray:
        """Every cell's group value (original order; leading axes kept): gathered onto the refined grid and
        repeated along every axis, no permutation (the values of :meth:`Partition.expand`)."""
        group_values = np.asarray(group_values)
        lay = self._layout if self._layout is not None else self.layout()
        k = lay.sizes.size
        if group_values.ndim == 0 or group_values.shape[-1] != k:
            raise InvalidParameter(f"expand needs one value per group ({k}), got shape {group_values.shape}")
        if dtype is None:       # np.result_type(values, float64), without its call for float64 values
            dtype = np.float64 if group_values.dtype == np.float64 else np.result_type(group_values, np.float64)
        lead = group_values.shape[:-1]
        values = group_values.astype(dtype, copy=False)
        if lay.labels is not None:
            values = values[..., lay.labels]
        out = values.reshape(lead + tuple([c.size for c in lay.cuts]))
        for a in range(len(self.shape) - 1, -1, -1):
            if lay.cuts[a].size != self.shape[a]:        # an axis cut at every cell needs no repeat
                out = out.repeat(lay.widths[a], axis=len(lead) + a)
        if not out.flags.owndata and np.may_share_memory(out, group_values):   # nothing gathered or repeated
            out = out.copy()
        return out.reshape(lead + (self.n_bins,))

    def spread(self, group_totals) -> np.ndarray:
        """Each group's total spread evenly over its cells (original order)."""
        return self.expand(np.asarray(group_totals, dtype=float) / self.sizes)

    def __repr__(self) -> str:
        kind = "block grid" if self.steps is None else "nested block grids"
        return f"BlockPartition({kind} over {self.shape}, {self.n_groups} groups)"


#: the kernel's checked copies of the last :data:`_CHECKED_KEEP` block grids it took (of at most
#: :data:`_CHECKED_MAX_BLOCKS` blocks; nested ones over at most :data:`_FROZEN_LAYOUT_CELLS` cells), keyed by
#: their description's exact contents (shape, int64 edge and step bytes): validity and layout depend on
#: nothing else, so a later run handing on the same blocks (UG's grid and AG's level 1 depend only on the
#: noisy total's rounding, AG's level 2 on the level-1 counts' rounding) takes a copy sharing the checked
#: immutable arrays and their computed layout
_CHECKED: dict = {}
_CHECKED_KEEP = 8
#: block grids of at most this many blocks are kept (their layout holds one size per block)
_CHECKED_MAX_BLOCKS = 1 << 14


def checked_block_partition(partition, shape) -> BlockPartition:
    """The kernel's own copy of a block partition's description, validated against the grid ``shape`` (an
    int: the number of cells, for a caller that knows only that):
    its shape, edges and steps read once each and copied into immutable arrays
    (:func:`dphist.validation.frozen_int64`), so nothing the caller does later changes what is measured;
    nothing of size N is read or made.  A block grid whose description's contents equal one checked
    before (:data:`_CHECKED`: the same shape and the same int64 edges, compared as bytes) is not validated
    again: the copy returned is a new object over that check's immutable edges and layout."""
    if not isinstance(partition, BlockPartition):
        raise InvalidParameter(f"expected a BlockPartition, got {type(partition).__name__}")
    own, edges, steps = partition.shape, partition.edges, partition.steps
    try:
        own = tuple(map(int, own))
        if steps is not None:
            steps = np.asarray(steps, dtype=np.int64)
            steps = frozen_int64(steps).reshape(steps.shape)
        vectors, blocks = True, 1          # every edge vector a 1-D array, and the number of blocks
        for e in edges:
            if type(e) is not np.ndarray or e.ndim != 1:
                vectors = False
                break
            blocks *= e.size - 1
        if vectors and blocks <= _CHECKED_MAX_BLOCKS and (steps is None or math.prod(own) <= _FROZEN_LAYOUT_CELLS):
            raw = tuple([np.ascontiguousarray(e, dtype=np.int64).tobytes() for e in edges])
            key = (own, raw) if steps is None else (own, raw, steps.shape, steps.tobytes())
            edges = None
        else:
            key = None
            edges = tuple(frozen_int64(e) if np.ndim(e) == 1 else np.array(e, dtype=np.int64) for e in edges)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter("a block partition's shape, edges and steps must be integers") from None
    if (math.prod(own) != shape) if isinstance(shape, int) else (own != tuple(shape)):
        raise InvalidParameter(f"the block partition is over a grid of shape {own}, the histogram's is {tuple(shape)}")
    if key is not None:
        known = _CHECKED.get(key)
        if known is not None:        # these very contents were validated: a copy over the same immutable arrays
            checked = BlockPartition._made(own, known.edges, known.steps)
            object.__setattr__(checked, "_layout", known.layout())
            return checked
        edges = tuple(np.frombuffer(r, dtype=np.int64) for r in raw)   # frozen_int64's arrays, from the bytes read
    checked = BlockPartition._made(own, edges, steps)
    object.__setattr__(checked, "_valid", False)
    checked.validate()
    if key is not None:
        keep_recent(_CHECKED, key, checked, _CHECKED_KEEP)
    return checked


def _grouped_sums(labels: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    """Exact int64 sums of non-negative int64 ``values`` by ``labels`` (0..k-1), whose total is below 2**62:
    two float bincounts of the 26-bit halves (every partial sum an integer below 2**53, so exact), or a
    sort of the labels for refined grids above :data:`_BINCOUNT_CELLS` cells."""
    if labels.size >= _BINCOUNT_CELLS:
        perm = np.argsort(labels, kind="stable")
        starts = np.searchsorted(labels[perm], np.arange(k))
        return np.add.reduceat(values[perm], starts)
    low = np.bincount(labels, weights=values & ((1 << 26) - 1), minlength=k).astype(np.int64)
    high = np.bincount(labels, weights=values >> 26, minlength=k).astype(np.int64)
    return (high << 26) + low


def _sum_runs(a: np.ndarray, starts: np.ndarray, heights: np.ndarray) -> np.ndarray:
    """Exact sums of runs of consecutive rows of ``a`` (axis 0): run ``i`` is rows ``starts[i]`` to
    ``starts[i] + heights[i] - 1``.  Whole rows are added as contiguous vectors (numpy's ``reduceat`` along
    axis 0 walks the other axes one element at a time: many times slower): the runs of one height are
    one reshape (consecutive runs) or one gather, summed over their rows."""
    if starts.size == a.shape[0]:                 # every run one row: nothing to add
        return a
    out = np.empty((starts.size,) + a.shape[1:], dtype=a.dtype)
    distinct = np.unique(heights)
    for h in distinct.tolist():
        sel = slice(None) if distinct.size == 1 else np.flatnonzero(heights == h)
        first = starts[sel]
        if h == 1:
            out[sel] = a[first]
        elif first.size == 1 or int(first[-1] - first[0]) == h * (first.size - 1):   # consecutive: a reshape
            f = int(first[0])
            out[sel] = np.add.reduce(a[f:f + h * first.size].reshape((first.size, h) + a.shape[1:]), axis=1)
        else:
            out[sel] = np.add.reduce(a[first[:, None] + np.arange(h)], axis=1)
    return out


#: up to this many cells ``reduceat`` along every axis (the last first) is the fastest reduction measured
_SMALL_REDUCE = 1 << 14


def _reduce_axis(grid: np.ndarray, axis: int, cuts: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """``np.add.reduceat(grid, cuts, axis=axis)``, exact, by the faster route measured (1 core, 128^2 to
    1024^2): along the first axis :func:`_sum_runs`; along another ``reduceat`` for runs of 4 cells or more
    on average, else the axis moved to the front (one copy of the grid as reduced so far) and
    :func:`_sum_runs`.  An axis cut at every cell is left as it is."""
    if cuts.size == grid.shape[axis]:
        return grid
    if axis == 0:
        return _sum_runs(grid, cuts, widths)
    if grid.shape[axis] >= 4 * cuts.size:
        return np.add.reduceat(grid, cuts, axis=axis)
    front = np.ascontiguousarray(np.moveaxis(grid, axis, 0))
    return np.moveaxis(_sum_runs(front, cuts, widths), 0, axis)


def block_sums(counts: np.ndarray, partition: BlockPartition) -> np.ndarray:
    """Every group's sum of ``counts`` (a grid's cells, flattened row-major; non-negative int64 below the
    kernel's cap), exact, in group order: ``add.reduceat`` along every axis (the last first) at the refined
    cuts (small grids: ``reduceat``; larger: :func:`_reduce_axis`, the first axis first), then the refined cells summed by group when the groups are unions of them.  Called by the kernel
    on its own counts and its checked copy of the partition (:func:`checked_block_partition`)."""
    lay = partition.layout()
    grid = counts.reshape(partition.shape)
    if grid.ndim == 1:                            # runs of a vector: one reduceat (exact int64), no rows to add
        return grid if lay.cuts[0].size == grid.size else np.add.reduceat(grid, lay.cuts[0])
    if grid.size <= _SMALL_REDUCE:                 # small grids: reduceat along every axis, the last first
        for a in reversed(range(grid.ndim)):
            if lay.cuts[a].size != grid.shape[a]:
                grid = np.add.reduceat(grid, lay.cuts[a], axis=a)
    else:                                         # the first axis by whole rows, then the others
        for a in range(grid.ndim):
            grid = _reduce_axis(grid, a, lay.cuts[a], lay.widths[a])
    if lay.labels is None:
        return np.ascontiguousarray(grid).reshape(-1)
    return _grouped_sums(lay.labels, grid.reshape(-1), lay.sizes.size)
