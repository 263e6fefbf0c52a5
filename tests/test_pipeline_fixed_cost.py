"""The cheaper forms of a run's fixed work keep every check: each shortcut is exact, and a broken input
still meets the full check.

What each test kills is named in its docstring (each mutation made once by hand and seen to fail).
"""
import numpy as np
import pytest

from dphist import InvalidParameter, Partition, Pipeline, make_algorithm
from dphist.components.base import Partitioner
from dphist.kernel import PrivateKernel, SeededLaplace

X = np.array([3, 1, 2, 0, 5, 7, 4, 6])


def _kernel():
    k = PrivateKernel(X, SeededLaplace(np.random.default_rng(0)))
    return k, k.handle("t", "finalizer", 1e9)        # noise of scale ~1e-9: answers round to the sums


@pytest.mark.parametrize("seed", [0, 7, 2 ** 32 + 5, 2 ** 70 + 3])
def test_noise_seed_words_start_the_generator_of_the_seeds_first_child(seed):
    """A research run's noise generator is seeded from the four words of ``SeedSequence(seed).spawn(2)[0]``,
    kept per seed: the same state as the sequence itself gives, and any other request of the sequence is
    answered by the sequence.  Kills (checked by hand): the words of the second child (``spawn_key=(1,)``,
    the public generator's), the words asked as 32-bit (``generate_state(4)``: another state)."""
    from dphist.pipeline import _noise_seed
    child = np.random.SeedSequence(seed).spawn(2)[0]
    kept = _noise_seed(seed)
    assert np.random.PCG64(kept).state == np.random.PCG64(child).state
    assert kept is _noise_seed(seed)
    assert np.array_equal(kept.generate_state(3), child.generate_state(3))
    with pytest.raises(ValueError):
        kept.generate_state(4, np.uint64)[0] = 1                      # shared between runs: immutable
    r = make_algorithm("identity").run(X, 1.0, seed=seed)
    expected = X + np.random.default_rng(child).laplace(0.0, 1.0, X.size)
    assert np.array_equal(r.estimate, expected)


def test_the_kernels_own_checked_arrays_are_immutable_and_recognised_without_a_second_count(monkeypatch):
    """The partition a stage hands on is checked once: its arrays become the kernel's immutable copies
    (bytes underneath: no view can be made writable), and the finalizer's measurement of a partition of
    those very arrays is recognised in O(1), with no second permutation count.  Kills (checked by hand):
    the checked copies left writable (``np.array`` copies: a component could edit them after the check)."""
    from unittest import mock

    import dphist.kernel.private as private
    counted = mock.Mock(wraps=private.is_permutation)
    monkeypatch.setattr(private, "is_permutation", counted)
    k, h = _kernel()
    order, bounds, _ = k._checked_partition(Partition(np.array([7, 6, 5, 4, 3, 2, 1, 0]), np.array([0, 3, 8])))
    assert counted.call_count == 1
    for arr in (order, bounds):
        with pytest.raises(ValueError):
            arr.setflags(write=True)
        with pytest.raises(ValueError):
            arr[0] = 0
    assert np.rint(h.laplace_partition(Partition(order, bounds, validate=False), 1e9)).tolist() == [17.0, 11.0]
    assert counted.call_count == 1


@pytest.mark.parametrize("which", ["order", "bounds"])
def test_a_partition_with_one_of_the_kernels_arrays_is_checked_in_full(which):
    """Recognition by identity needs both arrays to be the kernel's: the kernel's bounds with an order listing
    bin 7 twice, or the kernel's order with bounds going back, are checked and refused, nothing spent.
    Kills (checked by hand): ``_is_known`` testing the bounds' identity only (the duplicated bin would be
    measured), or the order's only (bins counted twice)."""
    k, h = _kernel()
    order, bounds, _ = k._checked_partition(Partition(np.array([7, 6, 5, 4, 3, 2, 1, 0]), np.array([0, 3, 8])))
    if which == "order":
        bad = Partition(np.array([7, 7, 5, 4, 3, 2, 1, 0]), bounds, validate=False)
        message = "permutation"
    else:
        bad = Partition(order, np.array([0, 5, 3, 8]), validate=False)
        message = "bounds"
    with pytest.raises(InvalidParameter, match=message):
        h.laplace_partition(bad, 0.5)
    assert h.spent == 0 and len(k.ledger) == 0


class _OneGroupTwice(Partitioner):
    """A broken twin: one group over all bins whose order lists bin 0 twice (built without validation)."""

    name = "twin.one-group-twice"
    citation = "test"

    def partition(self, bins, ctx):
        order = np.arange(bins.n_bins)
        order[1] = 0
        return Partition(order, np.array([0, bins.n_bins]), validate=False)


def test_a_one_group_partition_is_passed_by_the_stage_gate_only_over_a_permutation():
    """The pipeline's gate passes one group in domain order (``Partition.whole``) without the kernel's full
    check, and returns a fresh one; one group whose order lists a bin twice is refused there, before the
    finalizer is charged.  Kills (checked by hand): the one-group shortcut of ``checked_stage_partition``
    taken on the bounds ``[0, n]`` alone."""
    from dphist.pipeline import checked_stage_partition
    whole = Partition.whole(8)
    out = checked_stage_partition(whole, 8, "partitioner", "whole")
    assert out is not whole and out.bounds is not whole.bounds and out.bounds.tolist() == [0, 8]
    with pytest.raises(InvalidParameter, match="partitioner twin.one-group-twice returned an invalid partition"):
        Pipeline(partitioner=_OneGroupTwice()).run(X, 1.0, seed=1)
    r = make_algorithm("uniform").run(X, 1.0, seed=1)
    assert np.allclose(r.estimate, r.estimate[0]) and len(r.ledger) == 1


def test_a_finished_runs_kernel_is_freed_without_the_cyclic_collector():
    """The kernel (and its private copy of the counts) is freed as soon as the run's last reference goes,
    with the cyclic garbage collector off: no reference cycle through the gate.  At 2^20 bins a kernel left
    to the collector kept 8 MiB per run alive, and the next run's copy paid fresh pages (uniform 2.1 ->
    3.5 ms).  Kills (checked by hand): the gate holding its kernel (``_Gate(self)``)."""
    import gc
    import weakref
    was = gc.isenabled()
    gc.disable()
    try:
        k = PrivateKernel(X, SeededLaplace(np.random.default_rng(0)))
        with k._gate:
            assert k._true_counts().sum() == X.sum()
        ref = weakref.ref(k)
        del k
        assert ref() is None
    finally:
        if was:
            gc.enable()
