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
    check, and returns a fresh one (its bounds the shared immutable ``[0, n]``); one group whose order lists a bin twice is refused there, before the
    finalizer is charged.  Kills (checked by hand): the one-group shortcut of ``checked_stage_partition``
    taken on the bounds ``[0, n]`` alone."""
    from dphist.pipeline import checked_stage_partition
    whole = Partition.whole(8)
    out = checked_stage_partition(whole, 8, "partitioner", "whole")
    assert out is not whole and out.bounds.tolist() == [0, 8]
    if out.bounds is whole.bounds:      # only the shared immutable [0, n] (validation.whole_bounds) is shared
        with pytest.raises(ValueError):
            out.bounds.setflags(write=True)
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


def test_a_parameter_changed_between_runs_changes_the_release_spec():
    """A pipeline keeps the spec of its last run while its components' parameters are the same objects
    (``Pipeline._run_spec``); a parameter given a new value between runs, a component replaced, or a list
    parameter changed in place (never kept: rebuilt every run) shows in the next release's spec, and each
    release's spec is its own dict.  Kills (the first and the third checked by hand): the kept spec reused
    without comparing the parameters' objects (``c = 3`` missing from the second release), list
    parameters kept like scalars (the in-place change missed), one dict shared by two releases."""
    x = np.random.default_rng(1).integers(0, 20, (24, 24))
    ug = make_algorithm("UG")
    a = ug.run(x, 0.5, seed=1)
    b = ug.run(x, 0.5, seed=1)
    assert a.spec == b.spec == ug.spec and a.spec is not b.spec
    assert a.spec["partitioner"]["params"] is not b.spec["partitioner"]["params"]
    b.spec["partitioner"]["params"]["c"] = -1.0                 # one release's dict, edited by its reader
    ug.partitioner.c = 3.0
    c = ug.run(x, 0.5, seed=1)
    assert c.spec["partitioner"]["params"]["c"] == 3.0 and a.spec["partitioner"]["params"]["c"] == 10.0
    assert c.spec == ug.spec
    ug.finalizer = make_algorithm("AG").finalizer
    assert ug.run(x, 0.5, seed=1).spec["finalizer"]["name"] == "grids.adaptive-inference"

    class Listed(Partitioner):
        name = "test.listed"
        citation = "dphist tests"

        def __init__(self, weights=None):
            self.weights = [1, 2] if weights is None else weights

        def partition(self, bins, ctx):
            return bins

    pipe = Pipeline(None, None, Listed(), "group-mean", (0, 0, 1))
    first = pipe.run(np.arange(6), 1.0, seed=1).spec
    pipe.partitioner.weights.append(3)                          # changed in place: the same list object
    assert pipe.run(np.arange(6), 1.0, seed=1).spec["partitioner"]["params"]["weights"] == [1, 2, 3]
    assert first["partitioner"]["params"]["weights"] == [1, 2]


def test_a_block_grid_checked_before_is_served_only_for_the_same_contents():
    """The kernel keeps its checked copies of recent block grids by their contents
    (``partition_blocks._CHECKED``): the same blocks in a later run get a new object over the same immutable
    edges and layout, never another grid's; an invalid grid is refused after a valid one of the same shape
    was kept, and nothing invalid is kept.  Kills (the first two checked by hand): the key without the edges
    (a grid of other blocks measured as the kept one), the key without the steps (AG's level 2 of other
    sub-blocks served as the kept one), a copy served for another shape, invalid contents kept, the kept
    layout's arrays writable (one run's caller could change the next run's spread), no eviction (the kept
    copies growing with every new grid)."""
    from dphist.partition_blocks import BlockPartition, _CHECKED, checked_block_partition
    shape = (10, 12)
    first = checked_block_partition(BlockPartition(shape, ([0, 5, 10], [0, 6, 12])), shape)
    again = checked_block_partition(BlockPartition(shape, ([0, 5, 10], [0, 6, 12])), shape)
    assert again is not first and again.edges[0] is first.edges[0] and again._layout is first.layout()
    other = checked_block_partition(BlockPartition(shape, ([0, 4, 10], [0, 6, 12])), shape)
    assert other.edges[0].tolist() == [0, 4, 10] and other.n_groups == 4
    assert other.sizes.tolist() == [24, 24, 36, 36]
    with pytest.raises(InvalidParameter, match="grid of shape"):
        checked_block_partition(BlockPartition(shape, ([0, 5, 10], [0, 6, 12])), (12, 10))
    kept = len(_CHECKED)
    with pytest.raises(InvalidParameter, match="axis 0 must increase strictly"):
        checked_block_partition(BlockPartition(shape, ([0, 6, 5, 10], [0, 6, 12]), validate=False), shape)
    assert len(_CHECKED) == kept
    for array in (first.layout().sizes, *first.layout().widths):
        with pytest.raises(ValueError):
            array.setflags(write=True)
    nested = [checked_block_partition(BlockPartition(shape, ([0, 5, 10], [0, 6, 12]), steps), shape)
              for steps in ([[5, 6], [5, 6], [5, 6], [5, 3]], [[5, 6], [5, 6], [5, 6], [5, 2]])]
    assert [p.n_groups for p in nested] == [5, 6] and nested[0].steps[-1].tolist() == [5, 3]
    for side in range(1, 13):              # kept caches stay bounded (the oldest entries dropped)
        checked_block_partition(BlockPartition.regular(shape, side), shape)
    from dphist.partition_blocks import _CHECKED_KEEP, _REGULAR, _REGULAR_KEEP
    assert len(_CHECKED) <= _CHECKED_KEEP and len(_REGULAR) <= _REGULAR_KEEP
    x = np.arange(120).reshape(shape)
    k = PrivateKernel(x, SeededLaplace(np.random.default_rng(0)))
    sums = k.handle("t", "finalizer", 1e9).laplace_partition(BlockPartition(shape, ([0, 4, 10], [0, 6, 12])), 1e9)
    assert np.round(sums).tolist() == [x[:4, :6].sum(), x[:4, 6:].sum(), x[4:, :6].sum(), x[4:, 6:].sum()]


def test_one_group_of_the_shared_vectors_is_recognised_only_for_its_own_size():
    """``Partition.whole(n)`` holds the shared immutable ``[0, n]`` (``validation.whole_bounds``) and
    ``0..n-1``, recognised by the kernel by identity; the same bounds over a domain of another size are not
    one group of it, and are refused, nothing charged.  Kills (checked by hand): the recognition without
    the size (``[0, 9]`` over 8 bins measured as their total), the shared bounds writable."""
    from dphist.validation import identity_vector, whole_bounds
    k, h = _kernel()
    assert Partition.whole(8).bounds is whole_bounds(8)
    with pytest.raises(ValueError):
        whole_bounds(8).setflags(write=True)
    assert round(float(h.laplace_partition(Partition.whole(8), 1e9)[0])) == X.sum()
    spent = h.spent
    with pytest.raises(InvalidParameter):
        h.laplace_partition(Partition(identity_vector(8), whole_bounds(9), validate=False), 1e9)
    assert h.spent == spent and len(k.ledger) == 1


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 0.0, -0.0, -1.0, float("-inf"), True, "x"])
def test_the_epsilon_fast_path_refuses_every_bad_epsilon_before_the_charge(bad):
    """The kernel accepts a positive finite Python float at once (``positive_number``'s first test) and
    sends anything else to the full check: infinite (the twin ``InfiniteEpsilonFinalizer``: the true
    sums), NaN, zero, negative, a bool or a non-number is refused, nothing charged, no answer.  Kills (both
    checked by hand): the fast path's upper test dropped (``0.0 < value``: inf accepted, and the
    twin's run releases the true sums), its lower test written ``0.0 <= value`` (zero accepted)."""
    from dphist.testing import twins
    k, h = _kernel()
    with pytest.raises(InvalidParameter, match="epsilon"):
        h.laplace_partition(Partition.singletons(X.size), bad)
    assert len(k.ledger) == 0 and h.spent == 0.0
    assert h.laplace_partition(Partition.whole(X.size), 5e-324).shape == (1,)   # the smallest positive float
    pipe = Pipeline(finalizer=twins.InfiniteEpsilonFinalizer())
    with pytest.raises(InvalidParameter, match="positive and finite"):
        pipe.run(X, 1.0, seed=1)


@pytest.mark.parametrize("bad", [True, 0, -2, 1.0, "1"])
def test_the_contributions_fast_path_refuses_bools_and_non_positive_counts(bad):
    """``check_contributions`` accepts a positive Python int at once; a bool (``True`` is an int), zero, a
    negative, a float or a string goes to the full check and is refused, before a kernel exists.  Kills
    (both checked by hand): the fast path's ``type(k) is int`` written ``isinstance(k, int)`` (True accepted as
    one record per person), its ``k > 0`` dropped (zero or negative k: noise scaled by 0 or less)."""
    with pytest.raises(InvalidParameter, match="max_contributions"):
        PrivateKernel(X, SeededLaplace(np.random.default_rng(0)), contributions=bad)
    with pytest.raises(InvalidParameter, match="max_contributions"):
        make_algorithm("identity").run(X, 1.0, seed=1, contributions=bad)


def test_vetted_names_are_checked_unless_there_are_none():
    """A component declaring no vetted mechanism (``()``) skips the name check; any other declaration is
    checked: one string (the twin ``TextVettedFinalizer``) is refused by the pipeline before any handle,
    and by the kernel's ``handle`` itself; a list of names is copied as a tuple.  Kills (the first checked
    by hand): the kernel's fast path written ``if vetted:`` (an empty string passed on as the names), the
    pipeline's check dropped for strings."""
    from dphist.testing import twins
    with pytest.raises(InvalidParameter, match="vetted_mechanisms must be a tuple"):
        Pipeline(finalizer=twins.TextVettedFinalizer()).run(X, 1.0, seed=1)
    k, _ = _kernel()
    for bad in ("", "twin.scaled-laplace", ("a", 1)):
        with pytest.raises(InvalidParameter, match="vetted must be a tuple"):
            k.handle("t", "finalizer", 1.0, vetted=bad)
    assert k.handle("t", "finalizer", 1.0, vetted=["a"])._vetted == ("a",)
    assert k.handle("t", "finalizer", 1.0)._vetted == ()


def test_a_components_own_input_and_shape_checks_run_before_anything_is_spent():
    """The pipeline skips the base class's ``check_input`` / ``check_shape`` (they check nothing) and calls
    any other, also one inherited from a parent class: a partitioner refusing more than 4 bins, or 1-D
    shapes, stops the run before the finalizer's handle exists.  Kills (each checked by hand): the test
    inverted (``is _CHECK_INPUT``: every override skipped), an override looked up in the class's own
    ``__dict__`` only (the inherited ``Child.check_input`` skipped)."""
    from dphist.components.builtin import SingletonPartitioner
    calls = []

    class Small(SingletonPartitioner):
        def check_input(self, n):
            calls.append("input")
            if n > 4:
                raise InvalidParameter("at most 4 bins")

    class Child(Small):
        pass

    class FlatOnly(SingletonPartitioner):
        def check_shape(self, shape):
            calls.append("shape")
            if len(shape) == 1:
                raise InvalidParameter("grids only")

    for part, words in ((Small(), "at most 4"), (Child(), "at most 4"), (FlatOnly(), "grids only")):
        pipe = Pipeline(partitioner=part)
        with pytest.raises(InvalidParameter, match=words):
            pipe.run(X, 1.0, seed=1)
    assert calls == ["input", "input", "shape"]


def _generic(counts):
    """CheckedCounts through validate_grid's route (the same counts as uint32 when they fit, else as floats)."""
    from dphist.kernel.private import CheckedCounts
    return CheckedCounts(counts.astype(np.uint32) if 0 <= counts.min() and counts.max() < 2 ** 32
                         else counts.astype(float))


@pytest.mark.parametrize("make", [
    lambda: np.arange(12, dtype=np.int64),
    lambda: np.arange(12, dtype=np.int64).reshape(3, 4),
    lambda: np.arange(24, dtype=np.int64).reshape(4, 6)[:, ::2],          # not contiguous: flattened by a copy
    lambda: np.arange(12, dtype=np.int64).reshape(3, 4).T,
    lambda: np.array([[0, 1 << 41], [3, 2]], dtype=np.int64),           # above the cap: clamped
    lambda: np.array([3, 2, 7, 1 << 41], dtype=np.int64),               # the largest in the last cell
])
def test_checked_counts_common_route_is_validate_grids(make):
    """A native int64 ndarray of at most one block is checked and copied without validate_grid's generic
    checks: the same private counts (flattened row-major, clamped, read-only, never the caller's array)
    and shape as the generic route.  Kills (checked by hand): the common route keeping the caller's array
    (no copy: an edit of the input reaches the kernel), a transposed input flattened in memory order, the
    clamp skipped."""
    from dphist.kernel.private import CheckedCounts
    x = make()
    ours, theirs = CheckedCounts(x), _generic(np.array(x))
    assert ours.shape == theirs.shape == x.shape and ours.counts.dtype == np.int64
    assert np.array_equal(ours.counts, theirs.counts) and not ours.counts.flags.writeable
    before = ours.counts.copy()
    x[(0,) * x.ndim] = 99
    assert np.array_equal(ours.counts, before)


@pytest.mark.parametrize("bad, text", [
    (np.array([[1, 2], [3, -4]], dtype=np.int64), "cell (1, 1) is -4"),
    (np.array([5, -1, 2], dtype=np.int64), "bin 1 is -1"),
    (np.array(7, dtype=np.int64), "scalar"),
    (np.zeros((0, 3), dtype=np.int64), "empty"),
])
def test_checked_counts_common_route_refuses_what_the_generic_one_refuses(bad, text):
    """Negative counts (read as 2^63 or more by the unsigned reduction), a 0-d array and an empty axis are
    refused on the common route with validate_grid's messages.  Kills (checked by hand): the reduction read
    as signed (``np.maximum.reduce(private)``: a negative count accepted), the scalar let through (its
    one-cell shape ``()``)."""
    from dphist import InvalidHistogram
    from dphist.kernel.private import CheckedCounts
    with pytest.raises(InvalidHistogram, match=text.replace("(", r"\(").replace(")", r"\)")):
        CheckedCounts(bad)
    with pytest.raises(InvalidHistogram, match=text.replace("(", r"\(").replace(")", r"\)")):
        CheckedCounts(bad.astype(np.int32))        # validate_grid's route: the same message


def test_statement_law_of_the_pipelines_own_sources_and_of_any_other():
    """A release's noise law is made directly for the sources the pipeline makes (float Laplace, exact
    noise), and asked of ``noise_law`` for any other: a subclass's or an object's own ``noise_law`` is used,
    and a person-level source's law carries its k.  Kills (checked by hand): the shortcut taken for a
    subclass (``isinstance`` for ``type(...) is``: the subclass's own law ignored), or for an object that
    declares its own law."""
    from dphist.kernel.noise import ExactNoise
    from dphist.stated_error import DiscreteLaplaceLaw, LaplaceLaw

    class Own(LaplaceLaw):
        pass

    class MyLaplace(SeededLaplace):
        def noise_law(self):
            return Own()

    p = make_algorithm("identity")
    assert type(p.run(X, 1.0, seed=1).stated.law) is LaplaceLaw
    assert type(p.run(X, 1.0, seed=1, noise="exact").stated.law) is DiscreteLaplaceLaw
    assert type(p.run(X, 1.0, seed=1, contributions=2).stated.law) is LaplaceLaw
    assert p.run(X, 1.0, seed=1, contributions=2).stated.law.k == 2
    assert type(p.run(X, 1.0, seed=1, noise=MyLaplace(np.random.default_rng(1))).stated.law) is Own
    plain = SeededLaplace(np.random.default_rng(1))
    plain.noise_law = lambda: Own()
    assert type(p.run(X, 1.0, seed=1, noise=plain).stated.law) is Own
    assert type(p.run(X, 1.0, noise=ExactNoise()).stated.law) is DiscreteLaplaceLaw
