"""Generalized bins: a permutation of the domain cut into consecutive groups.

SORTaki (Doudalis & Mehrotra, Section IV-B) extends a *bin* from a contiguous
range to any subset of the domain.  A :class:`Partition` stores

* ``order``  - a permutation of ``range(n)``; position ``p`` holds bin ``order[p]``;
* ``bounds`` - group boundaries in positions, ``0 = b_0 < b_1 < ... < b_k = n``.

Group ``g`` is ``order[bounds[g]:bounds[g+1]]``.  With the identity order the
groups are ordinary contiguous bins; after a sorter they are arbitrary subsets.
Every helper is vectorised (``reduceat``/``repeat``); nothing loops over bins.

:class:`PlainPartition` is the singleton partition in domain order (where every pipeline starts): its
``order`` and ``bounds`` (``0..n-1`` and ``0..n``) are built only when some code reads them, and its
helpers, the pipeline's and the kernel's recognitions of it never do.
"""
from __future__ import annotations

import numpy as np

from .errors import InvalidParameter
from .validation import (are_strict_bounds, identity_vector, identity_vectors, is_identity, is_permutation,
                         whole_bounds,
                         is_shared_identity)


def stable_argsort(keys: np.ndarray, descending: bool = False) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` (equal keys keep their index order), faster; with
    ``descending``, that of ``-keys`` (negated only where needed: no negated copy of mostly zero keys).

    NumPy's stable sort of float64 is a merge sort (0.48 s for 2^20 keys, measured under load);
    its quicksort is vectorised (0.11 s) but orders equal keys arbitrarily.  So: quicksort, then
    re-sort the indices inside each run of equal keys by one integer sort of (run, index) over the
    tied positions only (none for continuous noise; with ties on more than an eighth of the keys,
    the stable sort itself, which is fast on them).  Same permutation as the stable sort
    (tests/test_partition.py checks it with ties and NaN).
    """
    keys = np.asarray(keys)
    if keys.ndim == 1 and keys.dtype.kind == "f" and keys.size > 1:
        nonzero = np.count_nonzero(keys)                  # NaN counts as non-zero, -0.0 as zero
        if keys.size - nonzero > keys.size // 8:
            return _zeros_in_place(keys, nonzero, descending)
        if keys.size >= PACKED_MIN_KEYS and keys.dtype == np.float64:
            perm = packed_stable_argsort(keys, descending)
            if perm is not None:
                return perm
    if descending:
        keys = -keys
    perm = np.argsort(keys, kind="quicksort")
    ranked = keys[perm]
    if ranked.size and ranked[-1] != ranked[-1]:      # NaN (sorted last): leave it to the stable sort
        return np.argsort(keys, kind="stable")
    tied = ranked[1:] == ranked[:-1]
    if not tied.any():
        return perm
    in_run = np.zeros(keys.size, dtype=bool)
    in_run[1:] |= tied
    in_run[:-1] |= tied
    where = np.flatnonzero(in_run)
    if where.size > keys.size // 8:                   # mostly ties: the merge sort is fast on them
        return np.argsort(keys, kind="stable")
    run = np.cumsum(np.r_[True, ~tied])[where]       # one label per run of equal keys
    perm[where] = perm[where][np.argsort(run * keys.size + perm[where], kind="quicksort")]
    return perm


#: from this many float64 keys :func:`stable_argsort` takes :func:`packed_stable_argsort` (the size from which
#: research mode's Laplace draws import numba, ``dphist.kernel.noise.COMPILED_IMPORT_DRAWS``)
PACKED_MIN_KEYS = 1 << 15


def packed_stable_argsort(keys: np.ndarray, descending: bool = False) -> np.ndarray | None:
    """``np.argsort(keys, kind="stable")`` of 1-D float64 ``keys`` (with ``descending``, of ``-keys``) by one
    ``numpy.sort`` of unsigned 64-bit words: each key's order-preserving word with its index in the low
    bits, sorted in place, then the indices read out of the same memory and each run of words that share
    their high bits re-ordered by the full keys (``dphist._argsort_jit``: the argument that this is the
    stable permutation, ties and -0.0 included).  One array of N words besides the keys; about 1.3-1.7
    ``numpy.sort``s of N floats at 2^20-2^24 where ``np.argsort`` alone is 6.  ``None`` when a key is NaN."""
    from . import _argsort_jit
    keys = np.ascontiguousarray(keys, dtype=np.float64)
    n = keys.size
    index_bits = max(1, (n - 1).bit_length())
    packed = np.empty(n, dtype=np.uint64)
    if not _argsort_jit.pack(keys, bool(descending), index_bits, packed):
        return None
    packed.sort()
    _argsort_jit.unpack(packed, keys, bool(descending), index_bits)
    # the indices in place, viewed here rather than as the compiled function's returned view: this view's one
    # base is ``packed``, so the kernel can prove nothing else holds the order and keep it without a copy
    # (dphist.kernel.private.taken_order)
    return packed.view(np.int64)


_ZERO_BLOCK = 1 << 16


def _zeros_in_place(keys: np.ndarray, nonzero: int, descending: bool) -> np.ndarray:
    """:func:`stable_argsort` of float keys of which many are zero (AHP's thresholded H~: 91% of 2^20 bins),
    without sorting the zeros.  The stable sort puts the keys below zero first, in their stable order, then
    every zero (0.0 and -0.0 compare equal) in index order, then the keys above zero and NaN (sorted last),
    in their stable order.  So: the stable order of the non-zero keys alone (a subsequence keeps the index
    order of equal keys), its first ``below`` entries, the zeros' indices, the rest: the same permutation,
    ties included.  The zeros' indices are written block by block into the output (no index vector of
    them: memory).  ``descending``: the same for ``-keys``, whose zeros are the same bins and whose non-zero
    keys are the non-zero keys negated."""
    n = keys.size
    at = np.flatnonzero(keys)                             # the non-zero keys' indices, increasing
    sub = keys[at]
    if descending:
        np.negative(sub, out=sub)
    ordered = at[stable_argsort(sub)]
    below = int(np.count_nonzero(sub < 0))
    out = np.empty(n, dtype=np.int64)
    out[:below] = ordered[:below]
    out[below + n - nonzero:] = ordered[below:]
    pos = below
    for start in range(0, n, _ZERO_BLOCK):
        zeros = np.flatnonzero(keys[start:start + _ZERO_BLOCK] == 0)
        out[pos:pos + zeros.size] = zeros + start
        pos += zeros.size
    return out


def _merge_cuts(cuts, k: int) -> np.ndarray:
    """:meth:`Partition.merge`'s cuts as int64 group indices from 0 to ``k`` (a missing 0 or ``k`` added), checked."""
    cuts = np.asarray(cuts, dtype=np.int64)
    if cuts.size == 0 or cuts[0] != 0:
        cuts = np.r_[0, cuts]
    if cuts[-1] != k:
        cuts = np.r_[cuts, k]
    if not are_strict_bounds(cuts, k):
        raise InvalidParameter(f"merge cuts must increase strictly from 0 to {k}")
    return cuts



#: positions handled at a time by the gathers and scatters through an order that go a block at a time
#: (:meth:`Partition.expand`, the kernel's group sums): 512 KiB of int64 or float64 values
ORDER_BLOCK = 1 << 16


def order_blocks(bounds: np.ndarray, n: int):
    """``(lo, hi, first, stop)`` for the consecutive blocks ``[lo, hi)`` of ``ORDER_BLOCK`` positions of an
    order of ``n`` bins grouped by ``bounds`` (non-decreasing, 0 to ``n``): the groups ``first .. stop - 1``
    are those with positions in the block (an empty group at a block's edge is left out)."""
    for lo in range(0, n, ORDER_BLOCK):
        hi = min(lo + ORDER_BLOCK, n)
        first = int(np.searchsorted(bounds, lo, side="right")) - 1
        yield lo, hi, first, int(np.searchsorted(bounds, hi, side="left"))


def _through_order(loop, data: np.ndarray, order: np.ndarray, start: int, size: int, target: np.ndarray,
                   indexed: np.ndarray) -> None:
    """``loop(data, order, start, target)`` (a loop of :mod:`dphist._order_jit` over ``size`` positions) after
    checking that the positions lie inside ``order`` (the loops read them unchecked); :class:`IndexError`
    naming the first index the loop found outside ``indexed``, the array it indexes."""
    if order.ndim != 1 or start < 0 or start + size > order.shape[0]:
        raise IndexError(f"positions {start} to {start + size - 1} are outside the order of {order.size} entries")
    bad = loop(data, order, start, target)
    if bad >= 0:
        raise IndexError(f"index {int(order[start + bad])} at position {start + bad} of the order is outside "
                         f"the {indexed.size} values")


def gather_run(values: np.ndarray, order: np.ndarray, start: int, out: np.ndarray) -> np.ndarray:
    """``out[:] = values[order[start:start + out.size]]`` by a compiled loop (:mod:`dphist._order_jit`: a
    random read through a large order keeps more cache misses in flight than numpy's fancy indexing), into
    a buffer the caller reuses block after block; returns ``out``.  ``values`` and ``out`` 1-D contiguous
    arrays of one dtype, ``order`` an int64 vector.  :class:`IndexError` if the positions run past the order
    or an index is outside ``values``."""
    from ._order_jit import take_into
    _through_order(take_into, values, order, start, out.size, out, values)
    return out


def scatter_run(block: np.ndarray, order: np.ndarray, start: int, out: np.ndarray) -> np.ndarray:
    """``out[order[start:start + block.size]] = block`` by a compiled loop (see :func:`gather_run`); returns
    ``out``.  :class:`IndexError` if the positions run past the order (nothing written) or an index is outside
    ``out`` (the entries before it are written)."""
    from ._order_jit import put_into
    _through_order(put_into, block, order, start, block.size, out, out)
    return out


class Partition:
    """Disjoint groups covering ``range(n)`` exactly once, in a given order."""

    __slots__ = ("order", "bounds")

    def __init__(self, order, bounds, *, validate: bool = True):
        self.order = np.asarray(order, dtype=np.int64)
        self.bounds = np.asarray(bounds, dtype=np.int64)
        if validate:
            self.validate()

    # ----------------------------------------------------------- constructors
    @classmethod
    def singletons(cls, n: int, order=None) -> "Partition":
        """One group per bin (SORTaki's ``Identity(|H|)``), optionally in ``order``.

        In domain order the partition is a :class:`PlainPartition`: valid by construction, not re-checked,
        its order and bounds (:func:`dphist.validation.identity_vectors`' shared immutable vectors) built
        only when read."""
        if order is None:
            if int(n) < 1:
                raise InvalidParameter("a partition needs a non-empty 1-D order")
            return PlainPartition(n)
        return cls(order, identity_vectors(n)[1])

    @classmethod
    def whole(cls, n: int, order=None) -> "Partition":
        """A single group holding the whole domain (in domain order valid by construction: not re-checked;
        the shared domain order given as ``order`` is that order)."""
        if order is None or is_shared_identity(order, n):
            if int(n) < 1:
                raise InvalidParameter("a partition needs a non-empty 1-D order")
            return cls(identity_vector(n), whole_bounds(n), validate=False)   # shared immutable [0, n]
        return cls(order, np.array([0, n], dtype=np.int64))

    @classmethod
    def from_sizes(cls, sizes, order=None) -> "Partition":
        """Consecutive groups of the given sizes (in ``order``, identity by default)."""
        sizes = np.asarray(sizes, dtype=np.int64)
        n = int(sizes.sum())
        order = np.arange(n, dtype=np.int64) if order is None else order
        return cls(order, np.concatenate(([0], np.cumsum(sizes))))

    @classmethod
    def from_labels(cls, labels) -> "Partition":
        """Groups = bins sharing a label; groups ordered by label, bins by index."""
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.size == 0:
            raise InvalidParameter("labels must be a non-empty 1-D array")
        order = np.argsort(labels, kind="stable")
        sorted_labels = labels[order]
        starts = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1]])
        return cls(order, np.r_[starts, labels.size])

    # ------------------------------------------------------------- properties
    @property
    def n_bins(self) -> int:
        return int(self.order.size)

    @property
    def n_groups(self) -> int:
        return int(self.bounds.size - 1)

    @property
    def sizes(self) -> np.ndarray:
        return self.bounds[1:] - self.bounds[:-1]     # np.diff's values, without its Python-level wrapper

    def labels(self) -> np.ndarray:
        """Group index of every bin, in original domain order."""
        out = np.empty(self.n_bins, dtype=np.int64)
        out[self.order] = np.repeat(np.arange(self.n_groups), self.sizes)
        return out

    def groups(self) -> list[np.ndarray]:
        """The bins of each group (a list; for inspection, not hot paths)."""
        return np.split(self.order, self.bounds[1:-1])

    def is_identity_order(self) -> bool:
        return is_identity(self.order, self.n_bins)

    def is_identity_order_known(self) -> bool:
        """Whether the order is known to be ``0..n-1`` without reading it: a :class:`PlainPartition`, or the
        shared immutable domain order (:func:`dphist.validation.is_shared_identity`).  O(1)."""
        return is_shared_identity(self.order, self.n_bins)

    def is_plain(self) -> bool:
        """Singleton groups in domain order (the partition every pipeline starts from): every
        group-wise helper is then the identity, and the fast paths of ``spread``, ``expand`` and
        the kernel's ``laplace_partition`` skip the permutation and group machinery."""
        n = self.order.size
        return (self.bounds.shape == (n + 1,) and self.is_identity_order()
                and is_identity(self.bounds, n + 1))

    def is_contiguous(self) -> bool:
        """True when every group is a run of consecutive original bins."""
        o = self.order
        steps = np.diff(o) == 1
        inner = np.ones(o.size - 1, dtype=bool)
        inner[self.bounds[1:-1] - 1] = False  # no step needed across a group boundary
        return bool(np.all(steps | ~inner))

    # ----------------------------------------------------------- aggregation
    def in_order(self, values) -> np.ndarray:
        """``values`` (original order) rearranged into this partition's order."""
        return np.asarray(values)[self.order]

    def to_original(self, values_in_order) -> np.ndarray:
        """Inverse of :meth:`in_order`."""
        values_in_order = np.asarray(values_in_order)
        out = np.empty_like(values_in_order)
        out[self.order] = values_in_order
        return out

    def sums(self, values) -> np.ndarray:
        """Per-group sums of ``values`` given in original domain order."""
        v = np.asarray(values)[self.order]
        return np.add.reduceat(v, self.bounds[:-1]) if v.size else v

    def means(self, values) -> np.ndarray:
        if self.n_groups == self.n_bins:   # singletons: each sum is the value, x / 1 is x (a float64 gather)
            v = np.asarray(values)[self.order]
            if v.dtype == np.float64 and v.ndim == 1:
                return v
        return self.sums(values) / self.sizes

    def expand(self, group_values) -> np.ndarray:
        """Give every bin its group's value; result in original domain order.

        ``group_values`` has one value per group on its last axis; leading axes
        (e.g. the trials of :mod:`dphist.audit`'s batched sampling) are kept.
        """
        group_values = np.asarray(group_values)
        if group_values.ndim == 0 or group_values.shape[-1] != self.n_groups:
            raise InvalidParameter(
                f"expand needs one value per group ({self.n_groups}), got shape {group_values.shape}")
        dtype = np.result_type(group_values, np.float64)
        if self.n_groups not in (1, self.n_bins) and self.is_identity_order() and group_values.dtype == dtype:
            return np.repeat(group_values, self.sizes, axis=-1)   # a fresh array already: no copy into another
        out = np.empty(group_values.shape[:-1] + (self.n_bins,), dtype=dtype)
        if self.n_groups == self.n_bins:       # singletons: no repeat; in domain order, no scatter either
            if self.is_identity_order():
                out[...] = group_values
            else:
                out[self._scatter_at(group_values)] = group_values
        elif self.n_groups == 1:               # one group: its value everywhere
            out[...] = group_values
        elif self.is_identity_order():         # groups of consecutive bins in domain order: no scatter
            out[...] = np.repeat(group_values, self.sizes, axis=-1)
        elif group_values.ndim == 1 and self.n_bins >= ORDER_BLOCK:
            # groups in another order, a block of positions at a time: no repeated copy of N values beside
            # ``out`` (memory at a sorted partition's spread); the same assignments
            for lo, hi, first, stop in order_blocks(self.bounds, self.n_bins):
                sizes = np.minimum(self.bounds[first + 1:stop + 1], hi) - np.maximum(self.bounds[first:stop], lo)
                block = np.repeat(group_values[first:stop], sizes)
                if block.dtype == dtype:     # the compiled scatter (gather_run's twin); another dtype is cast by numpy
                    scatter_run(block, self.order, lo, out)
                else:
                    out[self.order[lo:hi]] = block
        else:
            out[self._scatter_at(group_values)] = np.repeat(group_values, self.sizes, axis=-1)
        return out

    def _scatter_at(self, group_values: np.ndarray):
        """The index of :meth:`expand`'s scatter: a vector is scattered by ``out[order]``, the same assignment as
        ``out[..., order]`` without the ellipsis' general indexing (a third faster on 16,384 bins)."""
        return self.order if group_values.ndim == 1 else (Ellipsis, self.order)

    def spread(self, group_totals) -> np.ndarray:
        """Spread each group's total evenly over its bins (original order)."""
        if self.is_plain():   # x / 1.0 == x: the same floats as the general path, without the division
            totals = np.asarray(group_totals, dtype=float)
            if totals.ndim == 0 or totals.shape[-1] != self.n_groups:
                return self.expand(totals)   # its error names the shape
            return totals.copy()
        totals = np.asarray(group_totals, dtype=float)
        if self.n_groups == self.n_bins and totals.shape[-1:] == (self.n_groups,):
            return self.expand(totals)   # singletons in another order: x / 1.0 == x, no sizes or division
        return self.expand(totals / self.sizes)

    # ----------------------------------------------------------- transforms
    def merge(self, cuts) -> "Partition":
        """Coarsen by merging consecutive groups.

        ``cuts`` are group indices where new groups start, ``0 = c_0 < ... < c_m = k``
        (the end ``k`` may be omitted, a leading 0 too).
        """
        return Partition(self.order, self.bounds[_merge_cuts(cuts, self.n_groups)], validate=False)

    def reorder_groups(self, keys, descending: bool = False) -> "Partition":
        """Permute whole groups by ``keys`` (one per group; stable sort)."""
        keys = np.asarray(keys, dtype=float)
        if keys.shape != (self.n_groups,):
            raise InvalidParameter(f"need one key per group ({self.n_groups}), got {keys.shape}")
        perm = stable_argsort(keys, descending=descending)
        if self.n_groups == self.n_bins:   # singletons: bin p of the new order is old position perm[p]
            # bounds 0..n built only when read (SingletonPartition: no N + 1 bounds beside the order); from
            # the domain order 0..n-1, order[perm] is perm itself: no gather, no second vector
            order = perm if self.is_identity_order_known() else self.order[perm]
            return SingletonPartition(order)
        sizes = self.sizes[perm]
        new_bounds = np.concatenate(([0], np.cumsum(sizes)))
        # position p in the new order comes from old position start[g] + (p - new_start[g])
        shift = np.repeat(self.bounds[:-1][perm] - new_bounds[:-1], sizes)
        positions = np.arange(self.n_bins) + shift
        return Partition(self.order[positions], new_bounds, validate=False)

    # ------------------------------------------------------------- checking
    def validate(self) -> "Partition":
        """Raise :class:`InvalidParameter` unless every bin is covered exactly once."""
        o, b = self.order, self.bounds
        if o.ndim != 1 or o.size == 0:
            raise InvalidParameter("a partition needs a non-empty 1-D order")
        n = o.size
        if not is_permutation(o, n):
            raise InvalidParameter("partition order is not a permutation: some bin is missing or repeated")
        if not are_strict_bounds(b, n):
            raise InvalidParameter(f"partition bounds must increase strictly from 0 to {n}")
        return self

    def __eq__(self, other) -> bool:
        if not isinstance(other, Partition):
            return NotImplemented
        return np.array_equal(self.order, other.order) and np.array_equal(self.bounds, other.bounds)

    def __repr__(self) -> str:
        kind = "contiguous" if self.is_identity_order() else "sorted"
        return f"Partition({self.n_bins} bins, {self.n_groups} groups, {kind})"


_ORDER = Partition.__dict__["order"]      # the base class' slots, filled on first read by PlainPartition
_BOUNDS = Partition.__dict__["bounds"]


class PlainPartition(Partition):
    """Singleton groups of ``n`` bins in domain order (``Partition.singletons(n)``): the partition every
    pipeline starts from, immutable.  ``order`` and ``bounds`` are :func:`dphist.validation.identity_vectors`'
    shared immutable ``0..n-1`` and ``0..n``, built on first read and kept; nothing below reads them (one
    int64 vector of n + 1 entries, an input's worth of memory at 2^24 bins, never made on the hot paths):
    every helper gives :class:`Partition`'s values for these arrays, and the kernel and the pipeline
    recognise the class in O(1) (:func:`dphist.kernel.private.is_plain_partition`).

    >>> p = Partition.singletons(4)
    >>> p.n_groups, p.is_plain(), p.spread([1.0, 2.0, 3.0, 4.0]).tolist()
    (4, True, [1.0, 2.0, 3.0, 4.0])
    >>> p.order.tolist()                 # built when read
    [0, 1, 2, 3]
    """

    __slots__ = ("_n",)

    def __init__(self, n: int):
        n = int(n)
        if n < 1:
            raise InvalidParameter("a partition needs a non-empty 1-D order")
        object.__setattr__(self, "_n", n)

    def __setattr__(self, name, value):
        raise AttributeError("a PlainPartition is immutable (build a Partition to change the groups)")

    def __reduce__(self):
        return (PlainPartition, (self._n,))

    def _vectors(self):
        order, bounds = identity_vectors(self._n)
        _ORDER.__set__(self, order)
        _BOUNDS.__set__(self, bounds)
        return order, bounds

    def _kept(self, slot, which: int) -> np.ndarray:
        try:
            return slot.__get__(self)
        except AttributeError:
            return self._vectors()[which]

    order = property(lambda self: self._kept(_ORDER, 0), doc="``0..n-1``, built on first read")
    bounds = property(lambda self: self._kept(_BOUNDS, 1), doc="``0..n``, built on first read")

    @property
    def n_bins(self) -> int:
        return self._n

    @property
    def n_groups(self) -> int:
        return self._n

    @property
    def sizes(self) -> np.ndarray:
        return np.ones(self._n, dtype=np.int64)

    def labels(self) -> np.ndarray:
        return np.arange(self._n, dtype=np.int64)

    def is_identity_order(self) -> bool:
        return True

    def is_identity_order_known(self) -> bool:
        return True

    def is_plain(self) -> bool:
        return True

    def is_contiguous(self) -> bool:
        return True

    def _values(self, values):
        """``values`` as an array when it is a vector of the ``n`` bins of int64 or float64 (the dtypes whose
        gather and ``reduceat`` over singletons return a copy of the same dtype), else None."""
        v = np.asarray(values)
        return v if v.shape == (self._n,) and v.dtype in (np.int64, np.float64) else None

    def in_order(self, values) -> np.ndarray:
        v = self._values(values)
        return super().in_order(values) if v is None else v.copy()     # values[0..n-1] is a copy of them

    def to_original(self, values_in_order) -> np.ndarray:
        v = self._values(values_in_order)
        return super().to_original(values_in_order) if v is None else v.copy()

    def sums(self, values) -> np.ndarray:
        v = self._values(values)
        return super().sums(values) if v is None else v.copy()     # a sum of one value is that value

    def means(self, values) -> np.ndarray:
        v = self._values(values)
        return v.copy() if v is not None and v.dtype == np.float64 else super().means(values)

    def merge(self, cuts) -> "Partition":
        """Coarsen: the cut group indices are the new bounds (``bounds[cuts]`` of ``0..n``); the order stays
        the domain order, built only when read (:class:`Partition` of the shared ``0..n-1``)."""
        cuts = _merge_cuts(cuts, self._n)
        return Partition(identity_vector(self._n), cuts.copy(), validate=False)   # bounds[cuts]: a fresh array

    def validate(self) -> "PlainPartition":
        return self

    def __eq__(self, other) -> bool:
        if isinstance(other, PlainPartition):
            return self._n == other._n
        return super().__eq__(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Partition({self._n} bins, {self._n} groups, contiguous)"


class SingletonPartition(Partition):
    """Singleton groups in a given ``order`` (a sorter's output: ``reorder_groups`` of singletons): the bounds
    ``0..n`` are :func:`dphist.validation.identity_vectors`' shared immutable vector, built on first read and
    kept; the helpers below, the pipeline's check and the kernel's measurements (:func:`dphist.kernel.private.
    is_singleton_partition`, by the exact class) never read them (an int64 vector of n + 1 entries, an input's
    worth of memory at 2^24 bins).  Every helper gives :class:`Partition`'s values for ``Partition(order,
    0..n)``.  ``bounds`` cannot be assigned; ``order`` is an ordinary slot (the kernel's check replaces it by
    its immutable checked array, :func:`dphist.kernel.private.checked_partition_in_order`).

    >>> p = Partition.singletons(3).reorder_groups([2.0, 9.0, 5.0], descending=True)
    >>> type(p).__name__, p.order.tolist(), p.n_groups
    ('SingletonPartition', [1, 2, 0], 3)
    >>> p.bounds.tolist()                # built when read
    [0, 1, 2, 3]
    """

    __slots__ = ()

    def __init__(self, order, *, validate: bool = False):
        _ORDER.__set__(self, np.asarray(order, dtype=np.int64))
        if validate:
            self.validate()

    def __reduce__(self):
        return (SingletonPartition, (self.order,))

    bounds = property(lambda self: identity_vectors(self.n_bins)[1], doc="``0..n``, the shared vector, built when read")

    @property
    def n_groups(self) -> int:
        return self.n_bins

    @property
    def sizes(self) -> np.ndarray:
        return np.ones(self.n_bins, dtype=np.int64)

    def labels(self) -> np.ndarray:
        out = np.empty(self.n_bins, dtype=np.int64)
        out[self.order] = np.arange(self.n_bins, dtype=np.int64)
        return out

    def is_plain(self) -> bool:
        return self.is_identity_order()

    def sums(self, values) -> np.ndarray:
        v = np.asarray(values)
        if v.shape == (self.n_bins,) and v.dtype in (np.int64, np.float64):
            return v[self.order]                  # a sum of one value is that value (reduceat's dtype)
        return super().sums(values)

    def merge(self, cuts) -> "Partition":
        """Coarsen: the cut group indices are the new bounds (``bounds[cuts]`` of ``0..n``)."""
        cuts = _merge_cuts(cuts, self.n_bins)
        return Partition(self.order, cuts.copy(), validate=False)   # bounds[cuts]: a fresh array

    def validate(self) -> "SingletonPartition":
        o = self.order
        if o.ndim != 1 or o.size == 0:
            raise InvalidParameter("a partition needs a non-empty 1-D order")
        if not is_permutation(o, o.size):
            raise InvalidParameter("partition order is not a permutation: some bin is missing or repeated")
        return self
