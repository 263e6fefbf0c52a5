"""Generalized bins: constructors, vectorised helpers against naive loops, validation."""
import numpy as np
import pytest

from dphist import InvalidParameter, Partition


def naive_groups(order, bounds):
    return [list(order[bounds[g]:bounds[g + 1]]) for g in range(len(bounds) - 1)]


@pytest.fixture
def sorted_partition():
    rng = np.random.default_rng(3)
    order = rng.permutation(20)
    return Partition(order, [0, 4, 5, 12, 20])


def test_helpers_match_naive(sorted_partition):
    p = sorted_partition
    x = np.random.default_rng(0).integers(0, 50, 20)
    groups = naive_groups(p.order, p.bounds)
    assert np.array_equal(p.sizes, [len(g) for g in groups])
    assert np.array_equal(p.sums(x), [x[g].sum() for g in groups])
    assert np.allclose(p.means(x), [x[g].mean() for g in groups])
    labels = p.labels()
    for gi, g in enumerate(groups):
        assert np.all(labels[g] == gi)
    vals = np.array([10.0, 20.0, 30.0, 40.0])
    expanded = p.expand(vals)
    spread = p.spread(vals)
    for gi, g in enumerate(groups):
        assert np.all(expanded[g] == vals[gi])
        assert np.allclose(spread[g], vals[gi] / len(g))
    assert np.array_equal(p.to_original(p.in_order(x)), x)
    assert [list(a) for a in p.groups()] == groups


def test_constructors():
    assert Partition.singletons(5).n_groups == 5 and Partition.singletons(5).is_identity_order()
    assert Partition.whole(5).n_groups == 1
    assert np.array_equal(Partition.from_sizes([2, 3]).bounds, [0, 2, 5])
    p = Partition.from_labels([1, 0, 1, 2, 0])
    assert [list(g) for g in p.groups()] == [[1, 4], [0, 2], [3]]
    assert Partition.from_sizes([2, 3]).is_contiguous()
    assert not p.is_contiguous()


def test_merge_and_reorder(sorted_partition):
    p = Partition.singletons(6)
    m = p.merge([0, 2, 3])
    assert np.array_equal(m.bounds, [0, 2, 3, 6])
    with pytest.raises(InvalidParameter, match="strictly"):
        p.merge([0, 3, 3])
    q = sorted_partition
    keys = np.array([3.0, 1.0, 4.0, 2.0])
    r = q.reorder_groups(keys, descending=True)
    old = naive_groups(q.order, q.bounds)
    new = naive_groups(r.order, r.bounds)
    assert new == [old[i] for i in np.argsort(-keys, kind="stable")]
    r.validate()


@pytest.mark.parametrize("order, bounds, words", [
    ([0, 1, 1], [0, 3], "permutation"),
    ([0, 1, 3], [0, 3], "permutation"),
    ([0, 1, 2], [0, 2, 2, 3], "strictly"),
    ([0, 1, 2], [1, 3], "strictly"),
    ([0, 1, 2], [0, 2], "strictly"),
    ([], [0], "non-empty"),
])
def test_validation_names_the_fault(order, bounds, words):
    with pytest.raises(InvalidParameter, match=words):
        Partition(order, bounds)


def test_expand_checks_length():
    with pytest.raises(InvalidParameter, match="one value per group"):
        Partition.singletons(3).expand([1.0, 2.0])


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("kind", ["continuous", "few ties", "mostly ties", "nan", "mostly zeros", "close"])
def test_stable_argsort_is_the_stable_sort(kind, packed, monkeypatch):
    """The fast sorter of the noisy-count sorter returns exactly ``np.argsort(kind="stable")``.

    Kills: equal keys left in quicksort's arbitrary order (no tie repair), a tie repair by key
    instead of by original index, run labels that merge two neighbouring runs, a wrong fallback; on
    mostly zero keys (AHP's thresholded H~; blocks of 7 for the zeros' indices, so that they span
    blocks), each checked by hand: the zeros placed before the negative keys, a block's zeros' indices
    not shifted by the block's start, descending keys not negated on that path; the keys mix 0.0, -0.0,
    NaN and infinities.  ``packed``: every size through :func:`dphist.partition.packed_stable_argsort`
    (one sort of words carrying the index); "close" keys share their high bits and differ in the low
    ones, so runs of equal prefixes must be re-ordered.  Kills, each checked by hand: runs of equal
    prefixes left in index order, -0.0 given its own word (sorted before 0.0), the descending word not
    flipped (``~``), one index bit too few, a NaN not handed back to numpy."""
    from dphist import partition
    from dphist.partition import stable_argsort
    monkeypatch.setattr(partition, "_ZERO_BLOCK", 7)
    monkeypatch.setattr(partition, "PACKED_MIN_KEYS", 1 if packed else partition.PACKED_MIN_KEYS)
    rng = np.random.default_rng(11)
    for _ in range(200):
        n = int(rng.integers(1, 400))
        if kind == "continuous":
            keys = rng.normal(size=n)
        elif kind == "few ties":                     # the tie-repair path (ties on < 1/8 of keys)
            u = rng.random(n)                        # two tied values among continuous ones
            keys = np.where(u < 0.03, 1.0, np.where(u < 0.06, -1.0, rng.normal(size=n)))
        elif kind == "mostly ties":
            keys = rng.integers(0, 5, n).astype(float) * rng.choice([-1.0, 0.5])
        elif kind == "close":                        # the same high bits, not the same keys; 0.0 and -0.0
            keys = rng.choice([1.0, -2.0], n) + rng.integers(0, 5, n) * 2.0**-50
            keys = np.where(rng.random(n) < 0.1, rng.choice([0.0, -0.0], n), keys)   # zeros on < 1/8 of keys
        elif kind == "nan":
            keys = np.where(rng.random(n) < 0.1, np.nan, rng.integers(0, 50, n).astype(float))
        else:
            keys = rng.choice([0.0, -0.0, 0.0, 0.0, 2.0, -3.0, np.nan, np.inf, -np.inf], n) + np.where(
                rng.random(n) < 0.2, rng.normal(size=n), 0.0)
        assert np.array_equal(stable_argsort(keys), np.argsort(keys, kind="stable"))
        assert np.array_equal(stable_argsort(keys, descending=True), np.argsort(-keys, kind="stable"))


def test_domain_order_vectors_are_shared_immutable_and_recognised_as_those_objects():
    """Singleton partitions in domain order share one immutable order and bounds per size (a pipeline builds
    several per run); ``is_identity`` trusts the shared vector without reading it, and only that object.
    Kills (the first two checked by hand): ``singletons`` handing out writable arrays (one component's edit
    would reach every partition of that size); the shortcut in ``is_identity`` taken for another view of
    the shared memory (the view ``1..7`` would pass as the identity)."""
    from dphist.validation import identity_vector, identity_vectors, is_identity
    a, b = Partition.singletons(7), Partition.singletons(7)
    assert a.order is b.order and a.bounds is b.bounds and a.order is identity_vector(7)
    assert np.array_equal(a.order, np.arange(7)) and np.array_equal(a.bounds, np.arange(8))
    for arr in (a.order, a.bounds, a.order.base):
        with pytest.raises(ValueError):
            arr[0] = 5
        with pytest.raises(ValueError):
            arr.setflags(write=True)           # bytes underneath: no view can be made writable
    assert is_identity(a.order, 7) and is_identity(a.bounds, 8) and not is_identity(a.order, 6)
    assert not is_identity(identity_vectors(7)[1][1:], 7)   # the same memory shifted: read, and refused
    whole = Partition.whole(7)
    assert whole.order is a.order and np.array_equal(whole.expand([2.5]), np.full(7, 2.5))


def test_reordered_singletons_hand_on_the_shared_bounds_and_copy_others():
    """Sorted singletons keep the shared immutable ``0..n`` as their bounds (no copy of N + 1 bounds; the
    kernel's check recognises it without its own copy), and copy bounds anyone could change.  Kills: the
    shared vector copied (memory), or a caller's writable bounds handed on uncopied (a later change to the
    caller's array would change the sorted partition)."""
    from dphist.validation import is_shared_identity
    keys = np.array([0.5, 3.0, 1.0, 2.0, 0.0])
    r = Partition.singletons(5).reorder_groups(keys)
    assert is_shared_identity(r.bounds, 6) and r.order.tolist() == [4, 0, 2, 3, 1]
    mine = np.arange(6)
    s = Partition(np.arange(5), mine).reorder_groups(keys)
    assert s.bounds is not mine and s.bounds.tolist() == list(range(6))
    mine[1] = 9
    assert s.bounds.tolist() == list(range(6))


def test_means_of_singletons_are_the_values_in_the_partitions_order():
    """Singleton groups in any order: the means are the values gathered in that order (the sums of one value
    over sizes of 1, bit for bit, -0.0 and NaN included); groups of several bins keep the division.  Kills
    (checked by hand): the gather's shortcut taken for groups of several bins, or in domain order."""
    x = np.array([2.5, -0.0, np.nan, 7.0, -3.25, 1e-300])
    order = np.array([3, 0, 5, 1, 4, 2])
    single = Partition(order, np.arange(7))
    general = single.sums(x) / single.sizes
    got = single.means(x)
    assert got.tobytes() == general.tobytes() and got.tobytes() == x[order].tobytes()
    grouped = Partition(order, np.array([0, 2, 6]))
    assert np.array_equal(grouped.means(x), [(7.0 + 2.5) / 2, np.nan], equal_nan=True)
    assert single.means(np.arange(6)).dtype == np.float64                    # integers: the division's floats


def _straddling_bounds(n, rng):
    """Group bounds over ``n`` positions that put edges exactly at, just before and just after the
    block edges of :func:`dphist.partition.order_blocks`, one group longer than a block, and random cuts."""
    from dphist.partition import ORDER_BLOCK
    edges = {ORDER_BLOCK - 1, ORDER_BLOCK, ORDER_BLOCK + 1, 3 * ORDER_BLOCK}   # group [B+1, 3B) spans a block
    if n > 3 * ORDER_BLOCK + 500:
        edges |= set(rng.choice(np.arange(3 * ORDER_BLOCK + 1, n), 500, replace=False).tolist())
    return np.array([0, *sorted(e for e in edges if 0 < e < n), n])


def test_expand_of_sorted_groups_block_by_block_equals_one_scatter():
    """Kills, in the scatter a block at a time of sorted groups (``n_bins >= ORDER_BLOCK``): a group's size
    not clipped to the block on either side (values shifted by one position at a block edge), the first group
    found with ``searchsorted(side="left")`` (a group starting at a block's edge taken one too early), the last
    block dropped (``range`` to ``n - ORDER_BLOCK``); and, with an empty group, sizes that are not zero for it."""
    from dphist.partition import ORDER_BLOCK
    rng = np.random.default_rng(5)
    for n in (ORDER_BLOCK, 4 * ORDER_BLOCK + 777):
        order = rng.permutation(n)
        bounds = _straddling_bounds(n, rng)
        values = rng.normal(size=bounds.size - 1)
        expected = np.empty(n)
        expected[order] = np.repeat(values, np.diff(bounds))
        got = Partition(order, bounds).expand(values)
        assert got.dtype == np.float64 and np.array_equal(got, expected)
    # an empty group (equal bounds, built without validation) at a block's edge and inside a block
    n = 2 * ORDER_BLOCK
    order = rng.permutation(n)
    bounds = np.array([0, 10, ORDER_BLOCK, ORDER_BLOCK, ORDER_BLOCK + 5, ORDER_BLOCK + 5, n])
    values = np.arange(1.0, bounds.size)
    expected = np.empty(n)
    expected[order] = np.repeat(values, np.diff(bounds))
    assert np.array_equal(Partition(order, bounds, validate=False).expand(values), expected)


def test_expand_of_small_or_batched_sorted_groups_takes_the_one_scatter(monkeypatch):
    """Kills the block route taken below ``ORDER_BLOCK`` bins or for a batch of value rows (its loop assumes
    one vector): with ``order_blocks`` made to raise, both still expand."""
    import dphist.partition as partition
    def boom(*args):
        raise AssertionError("block route taken")
    monkeypatch.setattr(partition, "order_blocks", boom)
    rng = np.random.default_rng(1)
    n = partition.ORDER_BLOCK - 1
    p = Partition(rng.permutation(n), np.array([0, 7, 1000, n]))
    assert p.expand(np.array([1.0, 2.0, 3.0]))[p.order[8]] == 2.0
    big = Partition(rng.permutation(2 * n + 2), np.array([0, 5, 2 * n + 2]))
    rows = big.expand(np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert rows.shape == (2, 2 * n + 2) and rows[1, big.order[6]] == 4.0
    with pytest.raises(AssertionError, match="block route"):
        big.expand(np.array([1.0, 2.0]))
