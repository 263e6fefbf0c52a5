"""The singleton partition in domain order without its arrays, and the memory a run holds.

``PlainPartition`` (``Partition.singletons(n)``) builds ``0..n-1`` and ``0..n`` only when read; the kernel
frees its copy of the counts once a run's finalizer has spent its share; a vetted mechanism declared
``probe_any_layout`` is probed on a broadcast zero; the S_2 cost's prefix sums take the values' memory.
Each test names the mutation it kills.
"""
import pickle
import tracemalloc

import numpy as np
import pytest

from dphist import InvalidParameter, Partition, make_algorithm
from dphist.kernel import PrivateKernel, VettedMechanism
from dphist.kernel.noise import SeededLaplace
from dphist.kernel.private import PROBE_KEPT_MAX, is_plain_partition, is_whole_partition
from dphist.partition import PlainPartition
from dphist.testing.stated import UnitNoise

HOT = ("identity", "Privelet", "H", "Hb", "kellaris.S2+H", "kellaris.S1+H", "EFPA", "DPCube")


def _explicit(n):
    return Partition(np.arange(n), np.arange(n + 1))


def test_helpers_give_the_explicit_partitions_values():
    """Every helper of ``PlainPartition`` equals ``Partition``'s on explicit ``0..n-1`` / ``0..n`` (values and
    dtype) and returns a new array.  Kills: a helper returning its input (a view the caller may change),
    another dtype, or a merge whose bounds alias the caller's cuts."""
    n = 11
    p, q = Partition.singletons(n), _explicit(n)
    assert type(p) is PlainPartition and p == q and q == p and p == Partition.singletons(n)
    rng = np.random.default_rng(1)
    for x in (rng.integers(0, 9, n), rng.normal(size=n), rng.integers(0, 9, n).astype(np.int32)):
        for name in ("in_order", "to_original", "sums", "means", "spread", "expand"):
            got, want = getattr(p, name)(x), getattr(q, name)(x)
            assert got.dtype == want.dtype and np.array_equal(got, want), name
            assert not np.shares_memory(got, x), name
    assert np.array_equal(p.sizes, q.sizes) and np.array_equal(p.labels(), q.labels())
    cuts = np.array([0, 3, 4, 11])
    merged = p.merge(cuts)
    assert merged == q.merge(cuts) and not np.shares_memory(merged.bounds, cuts)
    assert p.reorder_groups(rng.normal(size=n)) is not None
    assert (p.n_bins, p.n_groups, p.is_plain(), p.is_contiguous(), p.is_identity_order()) == (n, n, True, True, True)
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(AttributeError):
        p.order = np.arange(n)[::-1]
    with pytest.raises(InvalidParameter):
        Partition.singletons(0)
    assert np.array_equal(p.order, np.arange(n)) and np.array_equal(p.bounds, np.arange(n + 1))


@pytest.mark.parametrize("preset", HOT)
def test_hot_paths_never_build_the_singletons_arrays(preset, monkeypatch):
    """A run of each preset never reads the singleton partition's ``order`` or ``bounds`` (building them
    raises here).  Kills: the kernel's whole-partition test run before the singleton test (it reads the
    arrays), S_2 or DAWA's L1 partition handing ``bins.bounds`` / ``bins.order`` to the search, a helper
    that reads ``self.order`` (expand's scatter index made before its branch)."""
    def built(self):
        raise AssertionError("the singleton partition's arrays were built")
    monkeypatch.setattr(PlainPartition, "_vectors", built)
    counts = np.arange(600) % 13
    release = make_algorithm(preset).run(counts, 1.0, seed=3)
    assert release.estimate.shape == (600,)


class _PretendPlain(PlainPartition):
    """Broken twin: a subclass of the plain partition whose order is reversed."""

    @property
    def order(self):
        return np.arange(self.n_bins)[::-1].copy()

    @property
    def bounds(self):
        return np.array([0, 2, self.n_bins])


def test_the_kernel_recognises_only_the_class_itself():
    """The O(1) recognition is by exact class: a subclass claiming to be plain is measured by its arrays.
    Kills: ``isinstance`` instead of ``type(...) is`` in ``is_plain_partition`` / ``is_whole_partition``."""
    x = np.arange(1, 9)
    kernel = PrivateKernel(x, UnitNoise(None))      # no noise: the answers are the sums
    twin = _PretendPlain(8)
    assert not is_plain_partition(twin, 8) and not is_whole_partition(twin, 8)
    assert is_plain_partition(Partition.singletons(8), 8) and not is_plain_partition(Partition.singletons(7), 8)
    assert is_whole_partition(Partition.singletons(1), 1) and not is_whole_partition(Partition.singletons(8), 8)
    answer = kernel.handle("t", "finalizer", 5.0).laplace_partition(twin, 1.0)
    assert answer.tolist() == [8 + 7, sum(range(1, 7))]
    assert kernel.handle("u", "finalizer", 5.0).laplace_partition(Partition.singletons(8), 1.0).tolist() == \
        x.tolist()


def test_the_run_frees_the_counts_once_the_finalizer_spent_its_share():
    """After the finalizer's last charge the kernel holds no counts, and a handle kept from an earlier stage
    is refused before anything is booked.  Kills: freeing before the measurement returns (its answer would
    fail), freeing at a partial spend (H's first level: the next level's read would fail), or a charge
    booked before the refusal (the ledger would grow)."""
    kernel = PrivateKernel(np.arange(10), SeededLaplace(np.random.default_rng(0)))
    early = kernel.handle("p", "partitioner", 0.5)
    last = kernel.handle("f", "finalizer", 0.5)
    kernel._frees_counts_after(last)
    first = last.laplace_identity(0.25)
    assert first.shape == (10,) and kernel._PrivateKernel__counts is not None   # half spent: still held
    assert last.laplace_partition(Partition.singletons(10), 0.25).shape == (10,)
    assert kernel._PrivateKernel__counts is None
    rows = len(kernel.ledger.entries)
    with pytest.raises(InvalidParameter, match="freed the counts"):
        early.laplace_identity(0.1)
    assert len(kernel.ledger.entries) == rows and early.spent == 0.0


def test_a_meta_algorithms_part_keeps_the_counts():
    """``execute`` without ``frees_counts`` (a part of a meta-algorithm) leaves the kernel able to measure.
    Kills: freeing in every execute (``auto``'s second part would be refused)."""
    pipeline = make_algorithm("identity")
    prepared = pipeline.prepare(np.arange(20), 1.0, seed=1)
    pipeline.execute(prepared, 0.5)
    assert prepared.kernel.handle("more", "finalizer", 0.5).laplace_identity(0.5).shape == (20,)


class _Recording(VettedMechanism):
    name = "test.recording"
    proof = "test only: Laplace(1/eps) on every count"
    seen: list = []

    def run(self, counts, epsilon, noise):
        _Recording.seen.append((counts.strides, counts.flags.writeable))
        return noise.laplace_mechanism(np.asarray(counts)[:4], 1.0, epsilon)

    def answers(self, n):
        return 4


class _AnyLayout(_Recording):
    name = "test.any-layout"
    probe_any_layout = True


def test_only_a_mechanism_declared_any_layout_is_probed_on_a_broadcast_zero():
    """Above ``PROBE_KEPT_MAX`` bins the probe of a ``probe_any_layout`` mechanism is a read-only zero of
    stride 0 (no array of the domain's size); every other mechanism gets contiguous zeros.  Kills: the
    broadcast probe given to a mechanism that did not declare it, or the flag ignored (Privelet's probe
    back to an input's worth)."""
    n = PROBE_KEPT_MAX + 1
    kernel = PrivateKernel(np.ones(n, dtype=np.int64), SeededLaplace(np.random.default_rng(0)))
    data = kernel.handle("t", "finalizer", 2.0, vetted=(_Recording.name, _AnyLayout.name))
    for mech, probe_strides in ((_Recording(), (8,)), (_AnyLayout(), (0,))):
        _Recording.seen.clear()
        data.custom(mech, 1.0)
        assert _Recording.seen[0] == (probe_strides, False)    # the probe, read-only
        assert _Recording.seen[1][0] == (8,)                    # the data


def _peak_ratio(preset, n):
    counts = (np.arange(n) * 7919) % 23
    pipeline = make_algorithm(preset)
    pipeline.run(np.zeros(1 << 15, dtype=np.int64), 1.0, seed=7)       # imports, compilation, kept tables
    tracemalloc.start()
    try:
        pipeline.run(counts, 1.0, seed=7)
        return tracemalloc.get_traced_memory()[1] / counts.nbytes
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("preset, bound", [("identity", 2.3), ("H", 3.6)])
def test_peak_memory_of_a_run(preset, bound):
    """The traced peak of one run at 2^18 bins, over the input's size (the benchmark's measure, smaller; at
    2^24 identity 2.0 and H 3.25).  Kills: the singleton partition's ``0..n`` built in the run (identity
    3.0), the kernel's copy kept through H's inference (H 4.25)."""
    assert _peak_ratio(preset, 1 << 18) < bound


def test_the_s2_cost_writes_its_prefix_sums_over_its_own_values():
    """The prefix sums written over the values (the cost holding the last reference) equal those of the
    allocating pass bit for bit, a negative zero first value included; values someone else holds are never
    written.  Kills: a loop adding in another order or starting from 0.0 (-0.0 lost), or the in-place path
    taken while the caller still holds the array."""
    from dphist.segmentation.costs import SSEPenalty
    rng = np.random.default_rng(4)
    n = 1 << 16           # the compiled size (compiled_for)
    for x in (np.zeros(n), rng.laplace(size=n) * 1e3):
        x[0] = -0.0 if not x.any() else x[0]     # all zeros: the first centred value is -0.0 - 0.0 = -0.0
        penalty = np.full(n + 1, 1.0)
        want = SSEPenalty(x.copy(), penalty)
        want._prefix_sums()
        owned = SSEPenalty(x.copy(), penalty)
        assert owned._values_owned()                 # the in-place path is the one tested
        owned.keep_prefix_sums_only()
        for a, b in zip(owned._sums, want._sums):
            assert a.shape == (n + 1,) and a.tobytes() == b.tobytes()
        held = x.copy()
        cost = SSEPenalty(held, penalty)
        assert not cost._values_owned()
        cost.keep_prefix_sums_only()
        assert np.array_equal(held, x) and cost._sums[0].tobytes() == want._sums[0].tobytes()


def test_tree_search_without_unit_bounds_is_the_search_over_positions():
    """``segmentation.tree(cost, None)`` gives the segmentation of explicit bounds ``0..n``.  Kills: the
    None path reading units, or a unit count off by one."""
    from dphist import segmentation
    rng = np.random.default_rng(2)
    for n in (1, 2, 17, 300):
        x = rng.integers(0, 30, n).astype(float)
        cost = segmentation.L1Deviation(x).then(lambda dev, lengths: dev + 3.0)
        a = segmentation.tree(cost, None, branching=3)
        b = segmentation.tree(cost, np.arange(n + 1), branching=3)
        assert np.array_equal(a.bounds, b.bounds) and a.cost == b.cost
