"""The linear and N log N presets' releases stay bit-identical to the recorded ones.

``fixtures/linear_releases.npz`` was written by ``make_linear_release_fixture.py`` on the kernel
that measured every partition through the generic permutation and group machinery
(``checked_partition``, ``reduceat``, ``spread``) and recomputed the prefix sums on every
``laplace_intervals`` call.  Kills: a singleton fast path (kernel, pipeline, ``Partition.spread``)
that changes one value, drops a copy the caller could still change, or takes the fast path for a
partition that is not singletons in domain order (the sorted-singleton pipelines); shared prefix
sums reused for another order (``sorted-singletons-H``) or a stale run.
"""
from pathlib import Path

import numpy as np
import pytest

from dphist import release_records

HERE = Path(__file__).resolve().parent
maker = release_records.load_script(HERE / "make_linear_release_fixture.py")
FIXTURE = np.load(HERE / "fixtures" / "linear_releases.npz")


@pytest.mark.parametrize("aname", sorted(maker.algorithms()))
def test_releases_are_unchanged(aname):
    assert release_records.mismatches(FIXTURE, {aname: maker.algorithms()[aname]}, maker.histograms()) == []


def test_exact_noise_releases_are_unchanged():
    assert release_records.array_mismatches(FIXTURE, maker.record_arrays(), prefix="exact|") == []


class _NoNoise:
    """A noise source that adds nothing: the kernel's answers are then the exact query values."""
    mode = "research"
    name = "none"

    def laplace_mechanism(self, values, sensitivity, epsilon, *, integral=False, support=None):
        return np.asarray(values, dtype=float)

    def probe(self):
        return self


def test_interval_sums_follow_each_calls_order():
    """The kept prefix sums belong to one order: calls alternating orders (and the identity given
    explicitly) get each order's own sums.  Kills: reusing the kept sums for another order, or
    keying them on the object instead of the values (an order changed in place between calls)."""
    from dphist.kernel import PrivateKernel
    rng = np.random.default_rng(5)
    x = rng.integers(0, 50, 64)
    kernel = PrivateKernel(x, _NoNoise())
    data = kernel.handle("test", "finalizer", 10.0)
    starts, ends = np.array([0, 3, 10, 40]), np.array([3, 10, 40, 64])
    order = rng.permutation(64)
    for o in (None, order, None, np.arange(64), order[::-1].copy(), order):
        arranged = x if o is None else x[o]
        want = [arranged[a:b].sum() for a, b in zip(starts, ends)]
        assert np.array_equal(data.laplace_intervals(starts, ends, 1.0, order=o), want)
    order[:2] = order[1::-1]            # the caller changes its array in place: the kernel sees the new order
    want = [x[order][a:b].sum() for a, b in zip(starts, ends)]
    assert np.array_equal(data.laplace_intervals(starts, ends, 1.0, order=order), want)


def test_blocks_are_the_intervals_of_runs_of_groups():
    """``laplace_blocks(partition, w)`` answers what ``laplace_intervals`` answers on the position intervals
    of runs of ``w`` consecutive groups (the last run shorter), for singletons, groups in domain order
    and groups in a permuted order, with the same ledger row; a bad width is refused before anything is
    charged.  Kills: a last run cut at the wrong bound, ``reduceat`` on the wrong firsts, the
    domain-order path taken for a permuted order, a charge for the wrong number of answers, a width
    of 0 or a float accepted.  Checked by hand: ``ends[-1] = n - 1`` and the in-order path for every
    order each fail here."""
    from dphist import Partition
    from dphist.errors import InvalidParameter
    from dphist.kernel import PrivateKernel
    rng = np.random.default_rng(11)
    x = rng.integers(0, 50, 97)
    bounds = np.r_[0, np.sort(rng.choice(np.arange(1, 97), 40, replace=False)), 97]
    partitions = [Partition.singletons(97), Partition(np.arange(97), bounds),
                  Partition(rng.permutation(97), bounds), Partition(rng.permutation(97), np.arange(98))]
    for partition in partitions:
        for width in (1, 2, 3, 7, 41, 200):
            kernel = PrivateKernel(x, _NoNoise())
            data = kernel.handle("test", "finalizer", 10.0)
            g = partition.n_groups
            firsts = np.arange(0, g, width)
            starts, ends = partition.bounds[firsts], partition.bounds[np.minimum(firsts + width, g)]
            want = data.laplace_intervals(starts, ends, 1.0, order=partition.order)
            got = data.laplace_blocks(partition, width, 1.0)
            assert np.array_equal(got, want)
            first, second = kernel.ledger.entries[-2:]
            assert (second.primitive, second.epsilon, second.sensitivity, second.answers) == \
                   (first.primitive, first.epsilon, first.sensitivity, first.answers)
    kernel = PrivateKernel(x, _NoNoise())
    data = kernel.handle("test", "finalizer", 10.0)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(InvalidParameter, match="width"):
            data.laplace_blocks(partitions[0], bad, 1.0)
    assert data.spent == 0


def test_tree_levels_in_turn_sum_the_kept_level():
    """One kernel measuring a tree's levels in turn (each from the kept sums of the level before) answers
    every level as ``laplace_intervals`` does, also for a width that is not a multiple of the kept one,
    another partition after it, and 2^16 + 5 singletons (strided adds).  Kills: the kept sums reused for
    another partition (the ``kept[0] is bounds`` test dropped) or for a width they do not divide, the
    runs of the kept sums taken ``width`` long instead of ``width // kept``, a short last run dropped.
    Checked by hand: the first two fail here."""
    from dphist import Partition
    from dphist.kernel import PrivateKernel
    rng = np.random.default_rng(12)
    for n in (97, 2 ** 16 + 5):
        x = rng.integers(0, 50, n)
        bounds = np.r_[0, np.sort(rng.choice(np.arange(1, n), 40, replace=False)), n]
        kernel = PrivateKernel(x, _NoNoise())
        data = kernel.handle("test", "finalizer", 1e3)
        partitions = (Partition.singletons(n), Partition(np.arange(n), bounds))
        for partition, width in [(partitions[0], w) for w in (1, 2, 4, 8, 32, 3, 9, 4, 64)] + \
                                [(partitions[1], w) for w in (128, 2, 4, 24, 5)] + [(partitions[0], 10)]:
            g = partition.n_groups
            firsts = np.arange(0, g, width)
            starts, ends = partition.bounds[firsts], partition.bounds[np.minimum(firsts + width, g)]
            assert np.array_equal(data.laplace_blocks(partition, width, 1.0),
                                  data.laplace_intervals(starts, ends, 1.0, order=partition.order))


def test_coarser_partitions_in_turn_sum_the_kept_groups(monkeypatch):
    """One kernel measuring partitions in domain order, each a coarsening of the one before (the pruned tree's
    levels), answers each as ``laplace_intervals`` does, through the walk over the kept groups' sums; a
    partition whose bounds are not among the kept ones (not a coarsening), one that is not coarser, and the
    route before numba is imported below ``COARSENED_MIN`` sums each take ``add.reduceat`` of the counts with
    the same answers.  Kills: a run's last kept group dropped or the next run's first added, a start that is
    no kept bound accepted (its run summed from the wrong group), the kept sums of another width coarsened,
    the last run not summed up to n."""
    from dphist import Partition
    from dphist.kernel import PrivateKernel
    from dphist.kernel import _sums_jit
    import dphist.kernel.private as private
    walked = []
    real = _sums_jit.coarsened_sums

    def counting(*args):
        walked.append(real(*args))
        return walked[-1]
    monkeypatch.setattr(_sums_jit, "coarsened_sums", counting)
    rng = np.random.default_rng(13)
    n = 3000
    x = rng.integers(0, 1 << 40, n) * (rng.random(n) < 0.7)
    fine = np.r_[0, np.sort(rng.choice(np.arange(1, n), 900, replace=False)), n]
    mid = np.r_[fine[:-1][rng.random(fine.size - 1) < 0.3], n]
    mid[0] = 0
    coarse = np.r_[mid[:-1][rng.random(mid.size - 1) < 0.2], n]
    coarse[0] = 0
    other = np.r_[0, np.sort(rng.choice(np.setdiff1d(np.arange(1, n), fine), 50, replace=False)), n]
    for sequence, walks in (((fine, mid, coarse, np.array([0, n])), [True, True, True]),
                            ((fine, other), [False]), ((fine, mid, mid.copy()), [True])):
        walked.clear()
        kernel = PrivateKernel(x, _NoNoise())
        data = kernel.handle("test", "finalizer", 1e3)
        for bounds in sequence:
            partition = Partition(np.arange(n), bounds)
            assert np.array_equal(data.laplace_blocks(partition, 1, 1.0),
                                  data.laplace_intervals(bounds[:-1], bounds[1:], 1.0))
        assert walked == walks
    walked.clear()
    with monkeypatch.context() as m:
        m.delitem(__import__("sys").modules, "numba")
        m.setattr(private, "COARSENED_MIN", n + 1)
        kernel = PrivateKernel(x, _NoNoise())
        data = kernel.handle("test", "finalizer", 1e3)
        for bounds in (fine, mid):
            assert np.array_equal(data.laplace_blocks(Partition(np.arange(n), bounds), 1, 1.0),
                                  data.laplace_intervals(bounds[:-1], bounds[1:], 1.0))
    assert walked == []


def test_a_remembered_partition_is_compared_not_trusted():
    """The kernel answers a partition equal to the one it checked last from its own copies (no copy of
    the caller's arrays), and singleton bounds come back as None (``0..n``, neither built, copied nor
    kept); a partition changed in place after the check is measured as it now is, and a change
    that breaks it is refused.  Kills: the remembered copies used without comparing the caller's arrays,
    the comparison skipped when the shapes match, singleton bounds handed on as an array.  Checked by
    hand: ``_equals_known`` returning True on equal shapes fails here."""
    from dphist import Partition
    from dphist.errors import InvalidParameter
    from dphist.kernel import PrivateKernel
    rng = np.random.default_rng(3)
    x = rng.integers(0, 50, 64)
    kernel = PrivateKernel(x, _NoNoise())
    data = kernel.handle("test", "finalizer", 10.0)
    order = rng.permutation(64)
    partition = Partition(order, np.arange(65))
    checked_order, bounds, in_order = kernel._checked_partition(partition)
    assert bounds is None and not in_order and np.array_equal(checked_order, order)   # None: singletons, 0..n
    assert np.array_equal(data.laplace_partition(partition, 1.0), x[order])
    order[[0, 1]] = order[[1, 0]]                 # still a permutation: measured as it now is
    assert np.array_equal(data.laplace_partition(partition, 1.0), x[order])
    order[0] = order[1]                           # a bin twice: refused
    with pytest.raises(InvalidParameter, match="permutation"):
        data.laplace_partition(partition, 1.0)
    grouped = Partition(np.arange(64), np.array([0, 10, 64]))
    assert np.array_equal(data.laplace_partition(grouped, 1.0), [x[:10].sum(), x[10:].sum()])
    grouped.bounds[1] = 20                        # the remembered bounds are the kernel's, not the caller's
    assert np.array_equal(data.laplace_partition(grouped, 1.0), [x[:20].sum(), x[20:].sum()])
