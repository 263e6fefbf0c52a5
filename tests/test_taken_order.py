"""Sorted singletons without their bounds, and the kernel keeping a sorter's fresh order without a copy.

``SingletonPartition`` (``reorder_groups`` of singletons) builds ``0..n`` only when read; the kernel's check
takes an order nothing else references (``dphist.kernel.private.taken_order``) and makes its memory
immutable where it is (``dphist.validation.frozen_taken``).  Each test names the mutation it kills.
"""
import gc
import pickle
import tracemalloc

import numpy as np
import pytest

from dphist import InvalidParameter, Partition, Pipeline, make_algorithm
from dphist.kernel import PrivateKernel
from dphist.kernel.private import TAKE_MIN_BINS, is_plain_partition, is_whole_partition, taken_order
from dphist.partition import SingletonPartition, packed_stable_argsort
from dphist.pipeline import checked_stage_partition
from dphist.testing.stated import UnitNoise
from dphist.validation import frozen_taken

N = TAKE_MIN_BINS        # the smallest size whose orders are taken


def _address(arr) -> int:
    return arr.__array_interface__["data"][0]


def _kernel(n=N, seed=0):
    counts = np.random.default_rng(seed).integers(0, 1000, n)
    return counts, PrivateKernel(counts, UnitNoise(None))      # no noise: the answers are the sums


def test_singleton_partition_helpers_give_the_explicit_partitions_values():
    """Every helper of ``SingletonPartition`` equals ``Partition``'s on the same order with explicit ``0..n``
    (values and dtype), ``bounds`` cannot be assigned.  Kills: ``sums`` gathering other dtypes as they are
    (``reduceat`` of int32 gives int32, of bool int64), ``labels`` as the order itself, ``merge`` aliasing
    the cuts, ``n_groups`` read from anything but the order."""
    n = 13
    rng = np.random.default_rng(1)
    order = rng.permutation(n)
    p, q = SingletonPartition(order.copy()), Partition(order.copy(), np.arange(n + 1))
    assert p == q and q == p and p.n_groups == n and np.array_equal(p.sizes, q.sizes)
    for x in (rng.integers(0, 9, n), rng.normal(size=n), rng.integers(0, 9, n).astype(np.int32),
              rng.integers(0, 2, n).astype(bool)):
        for name in ("in_order", "to_original", "sums", "means", "spread", "expand"):
            got, want = getattr(p, name)(x), getattr(q, name)(x)
            assert got.dtype == want.dtype and np.array_equal(got, want), name
    assert np.array_equal(p.labels(), q.labels())
    cuts = np.array([0, 3, 4, 13])
    merged = p.merge(cuts)
    assert merged == q.merge(cuts) and not np.shares_memory(merged.bounds, cuts)
    keys = rng.normal(size=n)
    assert p.reorder_groups(keys) == q.reorder_groups(keys)
    assert (p.is_plain(), p.is_contiguous(), p.is_identity_order()) == (q.is_plain(), q.is_contiguous(), False)
    assert SingletonPartition(np.arange(n)).is_plain()
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(AttributeError):
        p.bounds = np.array([0, n])
    with pytest.raises(InvalidParameter, match="permutation"):
        SingletonPartition(np.zeros(n, dtype=np.int64), validate=True)


def test_the_kernel_reads_a_singleton_partitions_order_only():
    """The kernel and the pipeline check a ``SingletonPartition`` without its bounds and hand on one; the
    measurement is the counts in its order; one in domain order is recognised as plain (and as whole for
    one bin), an invalid order refused before anything is spent.  Kills: ``_bounds_of`` reading
    ``bounds`` of the class, the pipeline handing on ``Partition(order, None)``, ``is_plain_partition``
    accepting any order of the class, the check of the order skipped for the class."""
    counts, kernel = _kernel(64)
    order = np.random.default_rng(2).permutation(64)
    p = SingletonPartition(order.copy())
    handed = checked_stage_partition(p, 64, "sorter", "test", kernel)
    assert type(handed) is SingletonPartition and np.array_equal(handed.order, order)
    data = kernel.handle("t", "finalizer", 5.0)
    assert data.laplace_partition(handed, 1.0).tolist() == counts[order].tolist()
    assert data.laplace_partition(p, 1.0).tolist() == counts[order].tolist()
    assert is_plain_partition(SingletonPartition(np.arange(64)), 64) and not is_plain_partition(p, 64)
    assert is_whole_partition(SingletonPartition(np.arange(1)), 1) and not is_whole_partition(p, 64)
    spent = data.spent
    bad = SingletonPartition(np.r_[order[:-1], order[0]])
    with pytest.raises(InvalidParameter, match="permutation"):
        data.laplace_partition(bad, 1.0)
    assert data.spent == spent


def test_a_sorted_singleton_run_never_builds_the_bounds(monkeypatch):
    """GS (width 1 on distinct noisy counts) and AHP-style sorted singletons measured by the group mean never
    read ``SingletonPartition.bounds``, and the release equals the run whose bounds are built (the generic
    route).  Kills: ``reorder_groups`` building ``0..n`` for singletons, the kernel or the pipeline reading
    the bounds of the class, GS's width-1 partition rebuilt with explicit bounds."""
    counts = (np.arange(1 << 12) * 7919) % 1013
    for pipeline in (make_algorithm("GS", partitioner__w=1),
                     Pipeline("laplace", "noisy-count", "singleton", "group-mean", (0.5, 0.0, 0.5))):
        generic = pipeline.run(counts, 1.0, seed=3)
        assert type(generic.partition) is SingletonPartition

        def built(self):
            raise AssertionError("the singleton bounds were built")
        monkeypatch.setattr(SingletonPartition, "bounds", property(built))
        release = pipeline.run(counts, 1.0, seed=3)
        monkeypatch.undo()
        assert release.estimate.tobytes() == generic.estimate.tobytes()
        assert release.partition == generic.partition and release.noisy.tobytes() == generic.noisy.tobytes()


def test_a_fresh_order_is_taken_without_a_copy():
    """A fresh int64 order held by nothing but the partition becomes the kernel's checked order in place:
    the same memory, read-only, ``setflags(write=True)`` refused for it and its views, the base naming no
    object, and the partition's slot holding it.  The generic route (a copy) gives equal arrays.  Kills:
    the take disabled (another address), the memory left writable, the slot left pointing at the writable
    array."""
    counts, kernel = _kernel()
    order = np.random.default_rng(3).permutation(N)
    p = Partition(order.copy(), np.arange(N + 1))
    at = _address(p.order)
    checked, bounds, in_order = kernel._checked_partition(p)
    assert _address(checked) == at and p.order is checked and bounds is None and not in_order
    assert np.array_equal(checked, order) and not checked.flags.writeable and checked.base.obj is None
    for arr in (checked, checked[5:], p.order):
        with pytest.raises(ValueError):
            arr.setflags(write=True)
        with pytest.raises(ValueError):
            arr[0] = 0
    copied, _, _ = PrivateKernel(counts, UnitNoise(None))._checked_partition(Partition(order, np.arange(N + 1)))
    assert _address(copied) != _address(order) and np.array_equal(copied, checked)


def test_the_packed_sort_hands_over_a_takeable_order():
    """``packed_stable_argsort``'s order is a view whose one base is its sort's words (so a run's sorter
    output is taken: the release's order is built on the read-only memoryview, not on bytes).  Kills: the
    compiled function's returned view handed on (its base is numba's memory record: copied)."""
    keys = np.random.default_rng(4).normal(size=N)
    perm = packed_stable_argsort(keys, True)
    assert type(perm.base) is np.ndarray and perm.base.base is None and perm.base.flags.owndata
    assert np.array_equal(perm, np.argsort(-keys, kind="stable"))
    counts = (np.arange(N) * 7919) % 1013
    release = make_algorithm("GS").run(counts, 1.0, seed=3)
    assert type(release.partition.order.base) is memoryview


class _Holder:
    kept = None


@pytest.mark.parametrize("keep", ["array", "view", "memoryview", "sibling", "small", "int32", "subclass", "strided"])
def test_an_order_something_else_holds_is_copied(keep):
    """Anything else holding the order's memory (a variable, a view, a buffer export), a size below
    :data:`TAKE_MIN_BINS`, another dtype or layout, or a subclass of ``Partition`` takes the generic route: a
    copy; the caller's array stays writable, and changing it after the check changes nothing measured.
    Kills: the reference counts compared with one more than the slot and the function's own (an array the
    caller holds would be taken and its later change measured), the owner's count of a view compared with
    one more (``sibling``: another view of the owner), the size, dtype or class tests removed."""
    n = N // 2 if keep == "small" else N
    counts, kernel = _kernel(n)
    order = np.random.default_rng(5).permutation(n)
    fresh = order.copy()
    cls = type("Sub", (Partition,), {}) if keep == "subclass" else Partition
    if keep == "array":
        _Holder.kept = fresh
    elif keep == "view":
        _Holder.kept = fresh[:10]
    elif keep == "memoryview":
        _Holder.kept = memoryview(fresh)
    elif keep == "sibling":       # the order is a view of an owner another view also reaches
        owner = fresh
        fresh = owner.view(np.int64)
        _Holder.kept = owner[:10]
        del owner
    elif keep == "int32":
        fresh = fresh.astype(np.int32)
    elif keep == "strided":
        fresh = np.repeat(fresh, 2)[::2]
    p = cls(fresh, np.arange(n + 1), validate=False)
    if keep in ("int32", "strided"):
        object.__setattr__(p, "order", fresh)       # Partition's own conversion would make it int64 and fresh
    at = _address(p.order)
    del fresh
    checked, _, _ = kernel._checked_partition(p)
    assert _address(checked) != at and np.array_equal(checked, order)
    if keep in ("array", "view", "sibling"):
        target = _Holder.kept
        assert target.flags.writeable
        target[0], target[1] = target[1], target[0]      # still a permutation, changed after the check
        data = kernel.handle("t", "finalizer", 5.0)
        assert data.laplace_partition(SingletonPartition(checked), 1.0).tolist() == counts[order].tolist()
    _Holder.kept = None


def _run_with_sorter(sort, finalize_first):
    """GS at :data:`N` bins with the noisy-count sorter's ``sort`` replaced and ``finalize_first`` called at the
    start of the finalizer (after the pipeline's check of the sorter's and the partitioner's output)."""
    from dphist.components.builtin import GroupMeanFinalizer, NoisyCountSorter
    counts = (np.arange(N) * 7919) % 1013
    original_sort, original_finalize = NoisyCountSorter.sort, GroupMeanFinalizer.finalize

    def finalize(self, bins, ctx):
        finalize_first()
        return original_finalize(self, bins, ctx)
    try:
        NoisyCountSorter.sort, GroupMeanFinalizer.finalize = sort, finalize
        return make_algorithm("GS").run(counts, 1.0, seed=3)
    finally:
        NoisyCountSorter.sort, GroupMeanFinalizer.finalize = original_sort, original_finalize


def test_a_sorter_that_changes_its_order_after_the_check_changes_nothing():
    """Broken twins.  A sorter that keeps the order array it hands over and swaps two bins of it once the
    pipeline has checked it (still a permutation): the release is the honest run's, bit for bit (the kernel
    copied the array it could not take).  A sorter that keeps only the partition object: after the check its
    order is the kernel's read-only memory, and a write through it is refused.  Kills: an order the sorter
    still references taken (the swap would reach the measurement and the spread), the partition's slot left
    on the writable array (the write would succeed and change the release)."""
    from dphist.components.builtin import NoisyCountSorter
    honest = _run_with_sorter(NoisyCountSorter.sort, lambda: None)
    kept = []

    def keeping_array(self, bins, ctx):
        out = bins.reorder_groups(np.asarray(ctx.noisy, dtype=float), descending=True)
        kept.append(out.order)
        return out

    def swap():
        kept[0][0], kept[0][1] = kept[0][1], kept[0][0]
    release = _run_with_sorter(keeping_array, swap)
    assert kept[0].flags.writeable and release.partition.order[0] == kept[0][1]
    assert release.estimate.tobytes() == honest.estimate.tobytes() and release.partition == honest.partition
    kept.clear()

    def keeping_partition(self, bins, ctx):
        out = bins.reorder_groups(np.asarray(ctx.noisy, dtype=float), descending=True)
        kept.append(out)
        return out

    def write():
        with pytest.raises(ValueError):
            kept[0].order[0], kept[0].order[1] = kept[0].order[1], kept[0].order[0]
        with pytest.raises(ValueError):
            kept[0].order.setflags(write=True)
    release = _run_with_sorter(keeping_partition, write)
    assert release.estimate.tobytes() == honest.estimate.tobytes() and release.partition == honest.partition


def test_a_taken_order_that_is_not_a_permutation_is_refused_and_spends_nothing():
    """A fresh array listing a bin twice is taken, checked on the read-only memory and refused before the
    charge.  Kills: the permutation check skipped for a taken order."""
    counts, kernel = _kernel()
    order = np.random.default_rng(6).permutation(N)
    order[7] = order[8]
    data = kernel.handle("t", "finalizer", 5.0)
    with pytest.raises(InvalidParameter, match="permutation"):
        data.laplace_partition(SingletonPartition(order), 1.0)
    assert data.spent == 0.0 and len(kernel.ledger) == 0


def test_taken_memory_lives_as_long_as_its_last_view():
    """The owner of taken memory is freed with the last view of the immutable vector, not before (a read of
    freed memory) and not never (a leak of an input's worth per run).  Kills: the keeper attached to the
    intermediate ``memoryview`` (freed at once), or held by a module-level list."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        owner = np.arange(1 << 20, dtype=np.int64)
        frozen = frozen_taken(owner)
        del owner
        part = frozen[10:]
        del frozen
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] - base >= 8 << 20
        assert part[-1] == (1 << 20) - 1 and part[0] == 10
        del part
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] - base < 1 << 20
    finally:
        tracemalloc.stop()


def test_taken_order_takes_only_the_exact_classes():
    """``taken_order`` returns None for a subclass whose ``order`` is a property (it could hand out another
    array on every read) and for a domain below the size.  Kills: ``isinstance`` instead of the exact
    classes."""
    class Twin(Partition):
        pass
    p = Twin(np.random.default_rng(7).permutation(N), np.arange(N + 1), validate=False)
    assert taken_order(p, N) is None
    assert taken_order(Partition(np.arange(8)[::-1].copy(), np.arange(9)), 8) is None


def _seeded_kernel(counts, seed=5):
    from dphist.kernel.noise import SeededLaplace
    return PrivateKernel(counts, SeededLaplace(np.random.default_rng(seed)))


def _generic(counts, partition, shares, seed=5):
    kernel = _seeded_kernel(counts, seed)
    data = kernel.handle("t", "finalizer", sum(shares))
    return [partition.spread(data.laplace_partition(partition, eps)) for eps in shares]


def test_spread_measurement_consumes_the_counts_only_on_the_runs_last_read():
    """``laplace_partition_spread`` of sorted singletons equals ``spread(laplace_partition)`` bit for bit; it
    writes over the kernel's copy only for the measurement that spends the run's last share (the first of
    two halves reads the counts and leaves them; the second consumes them, and a later charge is refused),
    and never when something else references the copy.  Kills: consuming on a partial spend (the second
    half would read floats written over the counts), the reference count not checked (the held copy would
    change), the ledger row of another primitive."""
    counts = np.random.default_rng(8).integers(0, 1000, N)
    part = SingletonPartition(np.random.default_rng(9).permutation(N))
    want = _generic(counts, part, (0.25, 0.25))
    kernel = _seeded_kernel(counts)
    data = kernel.handle("t", "finalizer", 0.5)
    kernel._frees_counts_after(data)
    first = data.laplace_partition_spread(part, 0.25)
    assert kernel._PrivateKernel__counts is not None
    second = data.laplace_partition_spread(part, 0.25)
    assert first.tobytes() == want[0].tobytes() and second.tobytes() == want[1].tobytes()
    assert kernel._PrivateKernel__counts is None
    assert [e.primitive for e in kernel.ledger.entries] == ["laplace.partition"] * 2
    with pytest.raises(InvalidParameter, match="freed"):
        data.laplace_partition(part, 0.0001)

    kernel = _seeded_kernel(counts)
    data = kernel.handle("t", "finalizer", 0.25)
    kernel._frees_counts_after(data)
    held = kernel._PrivateKernel__counts
    before = held.copy()
    got = data.laplace_partition_spread(part, 0.25)
    assert got.tobytes() == want[0].tobytes() and np.array_equal(held, before) and not np.shares_memory(got, held)


def test_spread_measurement_of_other_partitions_takes_the_generic_route():
    """Groups wider than one bin, singletons in domain order, an explicit ``Partition`` of singletons and a
    person-level kernel (its noise source has no spread route) get ``spread(laplace_partition)``.  Kills: the
    fused route taken for any partition of N + 1 bounds' worth of groups, or for a noise source without
    ``laplace_mechanism_spread``."""
    counts = np.random.default_rng(10).integers(0, 1000, N)
    order = np.random.default_rng(11).permutation(N)
    for part in (Partition(order, np.r_[0:N:4, N]), Partition.singletons(N), Partition(order, np.arange(N + 1)),
                 SingletonPartition(np.arange(N))):
        kernel = _seeded_kernel(counts)
        got = kernel.handle("t", "finalizer", 1.0).laplace_partition_spread(part, 1.0)
        assert got.tobytes() == _generic(counts, part, (1.0,))[0].tobytes()
    from dphist.kernel.noise import SeededLaplace
    part = SingletonPartition(order)
    kernel = PrivateKernel(counts, SeededLaplace(np.random.default_rng(5)), contributions=2)
    twin = PrivateKernel(counts, SeededLaplace(np.random.default_rng(5)), contributions=2)
    got = kernel.handle("t", "finalizer", 1.0).laplace_partition_spread(part, 1.0)
    assert got.tobytes() == part.spread(twin.handle("t", "finalizer", 1.0).laplace_partition(part, 1.0)).tobytes()
