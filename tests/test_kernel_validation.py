"""The kernel checks before it charges, keeps its own books, and hides data-dependent failures.

Each test is one of the exploits of issue 11, now refused: a bad argument
spends nothing and writes no ledger row; budget and spent are read-only; the
pipeline refuses a release whose ledger exceeds epsilon; the kernel copies the
caller's array; failures inside user code carry no data and no frames.
"""
import gc
import sys

import numpy as np
import pytest

from dphist import InvalidParameter, Partition, Pipeline, PrivacyViolation, VettedMechanism
from dphist.kernel import PrivateKernel, SeededLaplace

X = np.array([3, 1, 2, 0, 5])


def fresh(x=X, vetted=()):
    k = PrivateKernel(x, SeededLaplace(np.random.default_rng(0)))
    return k, k.handle("t", "finalizer", 1.0, vetted=vetted)


def assert_nothing_spent(k, h):
    assert h.spent == 0.0 and len(k.ledger) == 0


@pytest.mark.parametrize("order, bounds", [
    ([0, 1, 2, 3, 4], [0, 2, 2, 5]),      # an empty group
    ([0, 1, 2, 3, 4], [0, 3, 2, 5]),      # bounds going back: bins counted twice
    ([0, 0, 2, 3, 4], [0, 2, 5]),         # bin 0 twice, bin 1 never
    ([0, 1, 2, 3, 7], [0, 2, 5]),         # a bin outside the domain
    ([0, 1, 2, 3], [0, 2, 4]),            # too few bins
])
def test_laplace_partition_revalidates_the_partition(order, bounds):
    k, h = fresh()
    bad = Partition(np.array(order), np.array(bounds), validate=False)
    with pytest.raises(InvalidParameter):
        h.laplace_partition(bad, 0.5)
    assert_nothing_spent(k, h)


def test_the_shared_domain_order_is_immutable_and_trusted_only_as_that_object(monkeypatch):
    """The kernel takes the shared domain order (``Partition.whole``, ``singletons``) without a copy or a
    pass: nothing can make it (or the memory it views) writable; another view of the same memory, shifted
    by one (``1..5`` over 5 bins: bin 5 outside the domain), is read and refused like any order, nothing
    spent.  Kills (checked by hand): ``is_shared_identity`` recognising a view by the memory it views
    (the shifted view would be answered as the total without a check)."""
    import dphist.validation as validation
    from dphist.validation import identity_vectors
    # a fresh cache: an earlier test's vectors of 5 or 6 bins would make this pair's memory another's
    monkeypatch.setattr(validation, "_IDENTITIES", {})
    monkeypatch.setattr(validation, "_RECENT", [])
    k, h = fresh()
    p = Partition.whole(5)
    assert h.laplace_partition(p, 1.0).shape == (1,)
    for arr in (p.order, p.order.base):
        with pytest.raises(ValueError):
            arr.setflags(write=True)
    shifted = identity_vectors(5)[1][1:6]
    assert shifted.base is p.order.base
    k, h = fresh()
    with pytest.raises(InvalidParameter, match="permutation"):
        h.laplace_partition(Partition(shifted, np.array([0, 5]), validate=False), 0.5)
    assert_nothing_spent(k, h)


def _count_permutation_checks(monkeypatch) -> list:
    """The kernel's permutation checks, counted: one entry per call."""
    import dphist.kernel.private as private
    from dphist.validation import is_permutation
    calls = []

    def counting(order, n):
        calls.append(n)
        return is_permutation(order, n)
    monkeypatch.setattr(private, "is_permutation", counting)
    return calls


def test_a_partition_checked_before_is_recognised_by_content_and_an_edited_one_checked_again(monkeypatch):
    """The kernel remembers the last partition it checked in full (its own copies): the same partition
    measured again skips the permutation's counting pass (the pipeline checks a stage's partition, the
    finalizer then measures it); the same object edited in place (bin 0 twice) is checked and refused.
    Kills: the memory kept as the caller's arrays or compared by identity (the edit would pass)."""
    calls = _count_permutation_checks(monkeypatch)
    k, h = fresh()
    p = Partition(np.array([4, 0, 1, 2, 3]), np.array([0, 2, 5]))
    assert h.laplace_partition(p, 0.25).shape == (2,) and len(calls) == 1
    assert h.laplace_partition(p, 0.25).shape == (2,) and len(calls) == 1     # recognised: no second count
    p.order[1] = 4                                                            # edited in place: 4 twice
    with pytest.raises(InvalidParameter, match="permutation"):
        h.laplace_partition(p, 0.25)
    assert len(calls) == 2 and h.spent == pytest.approx(0.5)


def test_the_checked_order_with_other_bounds_is_not_counted_again_and_its_bounds_are_checked(monkeypatch):
    """A partitioner that merges the checked partition's groups hands on the kernel's own immutable order
    with new bounds: that order is neither copied nor counted again (memory and a pass), and the new bounds
    are still checked (a broken twin: the checked order with bounds going back, or past the domain, is
    refused and spends nothing).  Kills (checked by hand): the shortcut skipping the bounds' check, or taken
    for an equal order that is another (writable) array."""
    calls = _count_permutation_checks(monkeypatch)
    k, h = fresh()
    order, bounds, _ = k._checked_partition(Partition(np.array([4, 0, 1, 2, 3]), np.arange(6)))
    assert len(calls) == 1
    merged = Partition(order, np.array([0, 2, 5]), validate=False)
    got = k._checked_partition(merged)
    assert got[0] is order and np.array_equal(got[1], [0, 2, 5]) and len(calls) == 1
    for bad in ([0, 3, 2, 5], [0, 2, 6]):
        with pytest.raises(InvalidParameter, match="bounds"):
            h.laplace_partition(Partition(order, np.array(bad), validate=False), 0.25)
    assert_nothing_spent(k, h)
    twin = Partition(np.array(order), np.array([0, 1, 5]))                     # equal, but another array
    assert k._checked_partition(twin)[0] is not twin.order                      # never handed on as checked
    twin.order[0] = 0                                                           # now bin 0 twice
    with pytest.raises(InvalidParameter, match="permutation"):
        h.laplace_partition(twin, 0.25)


def test_a_remembered_domain_order_is_checked_again_as_one():
    """A partition of groups in domain order is remembered as that fact, not as a copy of its order: measured
    again unchanged it is recognised; edited in place (bin 0 twice) it is checked and refused, nothing more
    spent.  Kills: a remembered domain order taken as known without checking the order again."""
    k, h = fresh()
    p = Partition(np.arange(5), np.array([0, 2, 5]))
    assert h.laplace_partition(p, 0.25).shape == (2,)
    assert h.laplace_partition(p, 0.25).shape == (2,)
    p.order[1] = 0
    with pytest.raises(InvalidParameter, match="permutation"):
        h.laplace_partition(p, 0.25)
    assert h.spent == pytest.approx(0.5)


@pytest.mark.parametrize("order", [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0], [0, 1, 1, 3, 4], [0, 2, 2, 2, 4]])
def test_one_group_is_the_total_only_over_a_permutation(order):
    """One group over all bins: its answer is the total (11) in domain order and over any other
    permutation; an order listing a bin twice is refused before anything is spent.  Kills: the one-group
    fast path taken on the bounds ``[0, n]`` alone (a duplicated bin would be answered as the total, or
    counted twice)."""
    k = PrivateKernel(X, SeededLaplace(np.random.default_rng(0)))
    h = k.handle("t", "finalizer", 1e9)        # noise of scale 1e-9: the answer rounds to the sum
    p = Partition(np.array(order), np.array([0, 5]), validate=False)
    if len(set(order)) < 5:
        with pytest.raises(InvalidParameter, match="permutation"):
            h.laplace_partition(p, 1e9)
        assert_nothing_spent(k, h)
    else:
        assert np.rint(h.laplace_partition(p, 1e9)).tolist() == [11.0]


def test_a_run_makes_its_public_generator_only_when_a_component_reads_it():
    """``ctx.rng`` of a seeded run is the generator of the seed's second spawned sequence, made on first
    read and shared by every read; a run whose components never read it does not make it.  Kills: the
    public generator seeded from the wrong child (the noise's), a new generator per read (a component
    reading twice would see the stream restart), and eager construction."""
    from dphist import Finalizer
    seen = []

    class Reader(Finalizer):
        name = "rng-reader"
        spends = True
        citation = "test"

        def finalize(self, bins, ctx):
            seen.append(np.r_[ctx.rng.random(2), ctx.rng.random(2)])
            return bins.spread(ctx.data.laplace_partition(bins, ctx.budget))

    Pipeline(finalizer=Reader()).run(X, 1.0, seed=9)
    expected = np.random.default_rng(np.random.SeedSequence(9).spawn(2)[1]).random(4)
    assert seen[0].tolist() == expected.tolist()
    plain = Pipeline()
    prepared = plain.prepare(X, 1.0, seed=9)
    plain.execute(prepared)
    assert prepared.public_rng._made is None


def test_a_partition_with_reassigned_slots_is_checked_again():
    k, h = fresh()
    with pytest.raises(AttributeError):   # the singletons in domain order are immutable (PlainPartition)
        Partition.singletons(5).bounds = np.array([0, 3, 2, 5])
    p = Partition.singletons(5, order=np.arange(5))   # the shared 0..n as bounds
    p.bounds = np.array([0, 3, 2, 5])     # reassigned after construction
    with pytest.raises(InvalidParameter, match="bounds"):
        h.laplace_partition(p, 0.5)
    assert_nothing_spent(k, h)


@pytest.mark.parametrize("call, words", [
    (lambda h: h.laplace_intervals([0], [3], 0.5, order=[0, 0, 1, 2, 3]), "permutation"),
    (lambda h: h.laplace_intervals([0], [3], 0.5, order=[0, 1, 2]), "permutation"),
    (lambda h: h.laplace_intervals([0, 2], [6, 3], 0.5), "start <= end"),
    (lambda h: h.laplace_intervals([-1], [3], 0.5), "start <= end"),
    (lambda h: h.laplace_intervals([3], [1], 0.5), "start <= end"),
    (lambda h: h.laplace_linear(np.ones((2, 4)), 0.5), "5 columns"),
    (lambda h: h.laplace_linear(np.array([[1, np.nan, 0, 0, 0]]), 0.5), "finite"),
    (lambda h: h.laplace_linear(np.zeros((2, 5)), 0.5), "all zeros"),
    (lambda h: h.laplace_identity(0.0), "positive"),
    (lambda h: h.laplace_intervals([0, 0], [3, 2], 0.5, sensitivity=1), "below the 2"),
    (lambda h: h.laplace_linear(np.array([[1, 2, 0, 0, 0]]), 0.5, sensitivity=1.5), "below the 2"),
    (lambda h: h.laplace_identity(float("nan")), "positive"),
    (lambda h: h.exponential(lambda c: c, 5, 0.0, 0.5), "sensitivity"),
    (lambda h: h.exponential(lambda c: c, 0, 1.0, 0.5), "n_candidates"),
    (lambda h: h.exponential("not callable", 5, 1.0, 0.5), "callable"),
])
def test_bad_arguments_spend_nothing(call, words):
    k, h = fresh()
    with pytest.raises(InvalidParameter, match=words):
        call(h)
    assert_nothing_spent(k, h)


def test_budget_and_spent_are_read_only():
    k, h = fresh()
    for name, value in (("budget", 100.0), ("spent", 0.0), ("component", "other")):
        with pytest.raises(AttributeError):
            setattr(h, name, value)
    h.laplace_identity(0.6)
    assert h.spent == pytest.approx(0.6) and h.remaining == pytest.approx(0.4)


def test_implicit_queries_are_probed_not_trusted():
    class Lying:
        """A 2 x 5 operator (column 0 has L1 norm 100) whose abs_rmatvec claims 1."""
        shape = (2, 5)

        def matvec(self, x):
            return np.array([100 * x[0], x[1]])

        def abs_rmatvec(self, y):
            return np.ones(5)

    k, h = fresh()
    h.laplace_linear(Lying(), 0.5)
    assert k.ledger.entries[-1].sensitivity == pytest.approx(100.0)


def test_implicit_queries_over_large_domains_are_refused():
    class Op:
        shape = (1, 5000)

        def matvec(self, x):
            return np.array([x.sum()])

    k = PrivateKernel(np.zeros(5000, dtype=np.int64), SeededLaplace(np.random.default_rng(0)))
    h = k.handle("t", "finalizer", 1.0)
    with pytest.raises(InvalidParameter, match="IntervalQueries"):
        h.laplace_linear(Op(), 0.5)
    assert_nothing_spent(k, h)


def test_the_kernel_copies_and_never_changes_the_callers_array():
    x = np.array([4, 0, 2], dtype=np.int64)
    release = Pipeline(None, None, "singleton", "group-mean").run(x, 1.0, seed=1)
    assert x.flags.writeable
    x[0] = 1000  # changing the caller's array afterwards does not touch the run's data
    assert release.estimate[0] < 100


def test_a_non_finite_score_is_mapped_not_raised():
    # exploit: a score finite on one histogram and infinite on its neighbour ([3, 1, 2] vs [3, 0, 2]);
    # it is finite on the public probe, so it runs, and the infinity is mapped, never raised
    for x in ([3, 1, 2], [3, 0, 2]):
        k, h = fresh(np.array(x))
        with np.errstate(divide="ignore"):
            i = h.exponential(lambda c: 1.0 / (c.astype(float) - 1.0), 3, 1.0, 1.0)
        assert 0 <= i < 3


def test_a_score_not_finite_on_the_public_probe_is_refused_before_the_charge():
    # kills: dropping the finiteness check of the probe: log(count) is -inf on the all-zero probe, and
    # on the data it would be finite or not depending on the counts
    for x in ([3, 1, 2], [3, 0, 2]):
        k, h = fresh(np.array(x))
        with np.errstate(divide="ignore"), pytest.raises(InvalidParameter, match="non-finite value on the public"):
            h.exponential(lambda c: np.log(c.astype(float)), 3, 1.0, 1.0)
        assert_nothing_spent(k, h)


def _frames_hold(tb, value: np.ndarray) -> bool:
    """Does a frame of the traceback, below the test's own frame, hold ``value``?"""
    tb = tb.tb_next
    while tb is not None:
        for v in tb.tb_frame.f_locals.values():
            if isinstance(v, np.ndarray) and v.shape == value.shape and np.array_equal(v, value):
                return True
        tb = tb.tb_next
    return False


def test_a_failing_mechanism_leaks_no_frames_holding_the_counts():
    class Fails(VettedMechanism):
        name = "fails"
        proof = "test"

        def run(self, counts, epsilon, noise):
            secret = counts.copy()  # noqa: F841 - a local that holds the data
            if counts.any():        # runs on the all-zero probe; fails on the data
                raise ValueError(f"bad count {counts[0]}")
            return noise.laplace_mechanism(counts, 1.0, epsilon)

    secret = np.array([7, 11, 13, 17])
    k = PrivateKernel(secret, SeededLaplace(np.random.default_rng(0)))
    h = k.handle("t", "finalizer", 1.0, vetted=("fails",))
    with pytest.raises(PrivacyViolation) as info:
        h.custom(Fails(), 0.5)
    exc = info.value
    assert "7" not in str(exc) and "ValueError" in str(exc)
    assert exc.__context__ is None and exc.__cause__ is None
    assert not _frames_hold(exc.__traceback__, secret)


def test_a_failing_score_function_leaks_nothing():
    k, h = fresh()
    with pytest.raises(PrivacyViolation) as info:
        h.exponential(lambda c: 1 / 0 if c[0] == 3 else c, 5, 1.0, 0.5)   # fine on the probe, fails on X
    assert info.value.__context__ is None and not _frames_hold(info.value.__traceback__, X)


def test_over_budget_and_refusals_in_mechanism_arguments_spend_nothing():
    class Checked(VettedMechanism):
        name = "checked"
        proof = "test"

        def check(self, n, **arguments):
            if arguments.get("width", 1) < 1:
                raise InvalidParameter("width must be >= 1")
            return arguments

        def run(self, counts, epsilon, noise, width=1):
            return noise.laplace_mechanism(counts.astype(float), 1.0, epsilon)

    k, h = fresh(vetted=("checked",))
    with pytest.raises(InvalidParameter, match="width"):
        h.custom(Checked(), 0.5, width=0)
    assert_nothing_spent(k, h)
    h.custom(Checked(), 0.5, width=2)
    assert h.spent == pytest.approx(0.5)


def test_a_declared_sensitivity_above_the_computed_one_is_used():
    k, h = fresh()
    h.laplace_intervals([0], [3], 0.5, sensitivity=4)
    assert k.ledger.entries[-1].sensitivity == 4.0


def test_a_run_checks_and_copies_its_counts_once(monkeypatch):
    """``Pipeline.run`` checks the counts once (``CheckedCounts``, the kernel's own check and copy) and the
    kernel takes them as they are; the copy is never the caller's array, and it is clamped and read-only.
    Kills (the first checked by hand): the kernel checking a ``CheckedCounts`` again (two checks per run),
    ``CheckedCounts`` keeping the caller's array (a later change of the input would reach the kernel)."""
    import dphist
    from dphist.kernel import private
    real = private.validate_grid
    calls = []
    monkeypatch.setattr(private, "validate_grid", lambda counts, **kw: calls.append(1) or real(counts, **kw))
    x = np.array([0, 1, 2, 1 << 41], dtype=np.int64)
    checked = private.CheckedCounts(x)
    x[0] = 99
    assert checked.counts.tolist() == [0, 1, 2, private.count_cap(4)] and not checked.counts.flags.writeable
    calls.clear()
    dphist.make_algorithm("identity").run(np.arange(10.0), 1.0, seed=1)   # float counts: validate_grid's route
    assert len(calls) == 1
    made = []
    init = private.CheckedCounts.__init__
    monkeypatch.setattr(private.CheckedCounts, "__init__", lambda self, c: made.append(1) or init(self, c))
    dphist.make_algorithm("identity").run(np.arange(10), 1.0, seed=1)     # int64 counts: the common route
    assert len(made) == 1


def test_probe_draws_are_drawn_once_and_never_edited_by_a_caller():
    """The probe's repeating draws are made once per process (a probe runs before every charge) and
    shared read-only, each call's values those of ``np.resize`` of them.  Kills: a caller's edit of one probe's
    output reaching the next probe (the shared arrays handed out instead of copies), draws that change from
    probe to probe, and a short call's slice one value off."""
    first = SeededLaplace(np.random.default_rng(1)).probe()
    a = first.laplace(2.0, 10)
    g = first.rng.gumbel(size=10)
    g1 = first.rng.gumbel(size=(4096,))                # a shape, as the exponential mechanism asks
    a[:] = 0.0
    g[:] = 0.0
    g1[:] = 0.0
    second = SeededLaplace(np.random.default_rng(2)).probe()
    reference = np.random.default_rng(0)
    assert np.array_equal(second.laplace(2.0, 10), 2.0 * reference.laplace(size=4096)[:10])
    gumbel = reference.gumbel(size=4096)
    assert np.array_equal(second.rng.gumbel(size=10), gumbel[:10])
    for size in ((0,), (1,), (4095,), (4096,), (4097,), (9000,), 3, (2, 3)):
        assert np.array_equal(second.rng.gumbel(size=size), np.resize(gumbel, size)), size


def test_probe_sources_draw_at_most_probe_draws_per_call(monkeypatch):
    """The kernel's probes of user code (public all-zero histogram, nothing published) draw at most
    ``PROBE_DRAWS`` values per call and repeat them: research mode's probe noise has that period, release
    mode's probe asks the exact sampler for no more, and keeps the exact routes (the refusal of raw floats).
    Kills (the first checked by hand): a probe source drawing the full size again (a vetted mechanism's noise
    paid twice at 2^20 bins)."""
    from dphist.kernel import exact, noise
    n = 3 * noise.PROBE_DRAWS + 5
    probe = SeededLaplace(np.random.default_rng(1)).probe()
    z = probe.laplace_mechanism(np.zeros(n, dtype=np.int64), 1.0, 1.0)
    assert np.array_equal(z[:noise.PROBE_DRAWS], z[noise.PROBE_DRAWS:2 * noise.PROBE_DRAWS]) and np.all(z[:50] != 0)
    sizes = []
    real = exact.discrete_laplace
    monkeypatch.setattr(exact, "discrete_laplace",
                        lambda t, s, size, src, **kw: sizes.append(size) or real(t, s, size, src, **kw))
    exact_probe = noise.ExactNoise().probe()
    assert exact_probe.laplace_mechanism(np.zeros(n, dtype=np.int64), 1, 1.0, integral=True).shape == (n,)
    assert sizes == [noise.PROBE_DRAWS]
    with pytest.raises(PrivacyViolation):
        exact_probe.laplace(1.0, 3)


@pytest.mark.parametrize("at", [3, 40_000, 2 ** 16 + 9])
def test_a_negative_count_in_any_block_of_the_fused_copy_is_refused(at):
    """The kernel checks int64 counts for negatives block by block as it copies and clamps them
    (``CheckedCounts``); a negative count in the first, a middle or the last (short) block is refused
    naming its bin (or its cell on a grid), before any kernel exists.  Kills: the sign check dropped
    with ``sign=False``, only the first block's minimum kept, the minimum taken of the counts before the
    copy of another block.  Checked by hand: keeping the first block's minimum only fails here."""
    from dphist.errors import InvalidHistogram
    from dphist.kernel.private import CheckedCounts
    x = np.full(2 ** 16 + 10, 5, dtype=np.int64)
    x[at] = -2
    with pytest.raises(InvalidHistogram, match=f"count at bin {at} is -2; counts must be non-negative"):
        CheckedCounts(x)
    cell = tuple(int(i) for i in np.unravel_index(at, (2 ** 15 + 5, 2)))
    with pytest.raises(InvalidHistogram, match=rf"count at cell \({cell[0]}, {cell[1]}\) is -2"):
        CheckedCounts(x.reshape(2 ** 15 + 5, 2))
    x[at] = 2 ** 45                              # clamped, not refused; the caller's array untouched
    assert CheckedCounts(x).counts[at] == 2 ** 40 and x[at] == 2 ** 45


@pytest.mark.parametrize("n", [7, 2 ** 15 + 3, 2 ** 22 + 8])
def test_the_copy_reads_every_count_as_unsigned_against_the_cap(n):
    """``CheckedCounts`` copies int64 counts and reads the copy's bits as unsigned in one reduction: only if
    the largest is below the cap are the counts left unclamped and unrefused.  A count of -1 alone (every
    other count 0: the signed maximum is 0) is refused; counts at ``cap - 1``, ``cap`` and ``cap + 1`` come
    out ``cap - 1``, ``cap``, ``cap``.  Kills (the first checked by hand): the reduction read as signed (a
    negative count copied as it is), the fallback's clamp dropped (a count above the cap kept), a part of
    the copy left out of the reduction (the -1 last), the cap of small domains (2**40) used above 2**22
    bins, where ``count_cap`` is lower."""
    from dphist.errors import InvalidHistogram
    from dphist.kernel.private import CheckedCounts, count_cap
    x = np.zeros(n, dtype=np.int64)
    x[-1] = -1
    with pytest.raises(InvalidHistogram, match=f"count at bin {n - 1} is -1"):
        CheckedCounts(x)
    cap = count_cap(n)
    x[-3:] = [cap - 1, cap, cap + 1]
    out = CheckedCounts(x).counts
    assert out[-3:].tolist() == [cap - 1, cap, cap] and out[:-3].tolist() == [0] * (n - 3)
