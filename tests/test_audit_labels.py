"""``dphist.audit.sampling.canonical_labels``: set partitions labelled by first appearance, without a sort.

Each test names the mutation it kills."""
import numpy as np

from dphist import Partition
from dphist.audit.sampling import canonical_labels


def _by_unique(partition):
    """The definition, through ``np.unique`` (first index of each label, ranked)."""
    labels = partition.labels()
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.reshape(-1)]


def test_canonical_labels_equal_the_definition_on_every_kind_of_partition():
    """Kills: the groups' own numbering returned when their first bins do not increase (a partition
    in a sorted order), a group's first appearance taken as its first listed bin instead of its smallest
    (bins unsorted inside a group); both checked by hand (the test fails with either)."""
    rng = np.random.default_rng(3)
    parts = [Partition.singletons(7), Partition.whole(5), Partition.singletons(6, order=rng.permutation(6)),
             Partition.from_sizes([2, 3, 1]), Partition(np.array([3, 0, 4, 1, 2]), [0, 2, 5])]
    for _ in range(60):
        n = int(rng.integers(1, 40))
        k = int(rng.integers(1, n + 1))
        cuts = np.sort(rng.choice(np.arange(1, n), size=k - 1, replace=False)) if k > 1 else np.array([], int)
        parts.append(Partition(rng.permutation(n), np.r_[0, cuts, n]))
        parts.append(Partition.from_labels(rng.integers(0, k, n)))
    for p in parts:
        got = canonical_labels(p)
        assert got.dtype.kind == "i"
        np.testing.assert_array_equal(got, _by_unique(p))
    # the same set partition listed two ways: the same labels
    a = Partition(np.array([0, 2, 1, 3]), [0, 2, 4])
    b = Partition(np.array([3, 1, 2, 0]), [0, 2, 4])
    np.testing.assert_array_equal(canonical_labels(a), canonical_labels(b))
