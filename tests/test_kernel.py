"""The private kernel: validation, metering, primitives and the noise seam."""
import numpy as np
import pytest
import scipy.sparse as sp

from dphist import BudgetExceeded, InvalidHistogram, InvalidParameter, Partition, PrivacyViolation, VettedMechanism
from dphist.kernel import PrivateKernel, SeededLaplace, validate_counts, validate_epsilon


def kernel(counts, seed=0):
    return PrivateKernel(counts, SeededLaplace(np.random.default_rng(seed)))


@pytest.mark.parametrize("bad, words", [
    ([1, -2, 3], "non-negative"),
    ([1.0, np.nan], "finite"),
    ([1.0, np.inf], "finite"),
    ([1.5, 2.0], "not an integer"),
    ([], "empty"),
    ([[1, 2], [3, 4]], "1-D"),
    (np.array([True, False]), "booleans"),
    (np.array(["a", "b"]), "integers"),
])
def test_bad_histograms_are_named(bad, words):
    with pytest.raises(InvalidHistogram, match=words):
        validate_counts(bad)


def test_integer_valued_floats_are_accepted():
    assert validate_counts(np.array([1.0, 0.0, 7.0])).dtype == np.int64


@pytest.mark.parametrize("eps", [0, -1, np.inf, np.nan, "abc", None])
def test_bad_epsilon(eps):
    with pytest.raises(InvalidParameter, match="epsilon"):
        validate_epsilon(eps)


def test_budget_exceeded_gives_no_answer_and_no_ledger_row():
    k = kernel([1, 2, 3])
    h = k.handle("greedy", "initializer", 0.5)
    h.laplace_identity(0.3)
    with pytest.raises(BudgetExceeded, match="greedy"):
        h.laplace_identity(0.3)
    assert len(k.ledger) == 1 and h.spent == pytest.approx(0.3)
    h.laplace_identity(0.2)  # exactly the rest is fine (float slack)
    assert k.ledger.total == pytest.approx(0.5)


def test_ledger_rows_record_component_primitive_sensitivity_answers():
    k = kernel(np.arange(10))
    h = k.handle("c", "finalizer", 1.0)
    h.laplace_partition(Partition.from_sizes([3, 7]), 0.25)
    h.laplace_intervals([0, 0], [5, 10], 0.25)
    h.sorted_counts(0.5)
    rows = k.ledger.entries
    assert [r.primitive for r in rows] == ["laplace.partition", "laplace.intervals", "laplace.sorted-counts"]
    assert [r.answers for r in rows] == [2, 2, 10]
    assert [r.sensitivity for r in rows] == [1.0, 2.0, 1.0]  # overlapping intervals cover bins twice
    assert k.ledger.by_component() == {"c": pytest.approx(1.0)}


def test_laplace_identity_has_the_right_variance():
    x = np.zeros(200_000, dtype=np.int64)
    noisy = kernel(x, seed=1).handle("t", "initializer", 0.5).laplace_identity(0.5)
    assert abs(noisy.mean()) < 0.05
    assert noisy.var() == pytest.approx(2 / 0.5 ** 2, rel=0.03)


def test_partition_and_interval_sums_are_exact_up_to_noise_scale():
    x = np.arange(1, 9)
    order = np.array([7, 6, 5, 4, 3, 2, 1, 0])
    big = 1e9  # tiny noise
    k = kernel(x)
    h = k.handle("t", "finalizer", 3 * big)
    p = Partition(order, [0, 3, 8])
    assert np.allclose(h.laplace_partition(p, big), [8 + 7 + 6, 15], atol=1e-6)
    got = h.laplace_intervals([0, 2, 4], [2, 2, 8], big, order=order)
    assert np.allclose(got, [15, 0, 10], atol=1e-6)  # the middle interval is empty (padding node)
    with pytest.raises(InvalidParameter, match="0 <= start <= end"):
        h.laplace_intervals([3], [2], 1.0)


def test_linear_queries_sensitivity_dense_sparse_implicit():
    x = np.array([3, 1, 4, 1, 5])
    A = np.array([[1, 1, 0, 0, 0], [0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 2.0]])

    class Implicit:
        shape = A.shape

        def matvec(self, v):
            return A @ v

        def abs_rmatvec(self, y):
            return np.abs(A).T @ y

    for q in (A, sp.csr_matrix(A), Implicit()):
        k = kernel(x)
        out = k.handle("t", "finalizer", 1e9).laplace_linear(q, 1e9)
        assert np.allclose(out, A @ x, atol=1e-6)
        assert k.ledger.entries[0].sensitivity == 4.0  # largest column L1 norm: last column 1 + 1 + 2
    with pytest.raises(InvalidParameter, match="columns"):
        kernel(x).handle("t", "finalizer", 1).laplace_linear(np.ones((2, 3)), 1)


def test_sorted_counts_are_sorted_truth_plus_noise():
    x = np.array([5, 0, 9, 2])
    out = kernel(x).handle("t", "finalizer", 1e9).sorted_counts(1e9)
    assert np.allclose(out, [0, 2, 5, 9], atol=1e-6)


def test_exponential_mechanism_frequencies():
    x = np.array([0, 0, 0])
    k = kernel(x, seed=5)
    scores = np.array([0.0, 1.0, 2.0])
    eps, trials = 2.0, 20_000
    h = k.handle("t", "partitioner", eps * trials + 1)
    picks = np.bincount([h.exponential(lambda c: scores, 3, 1.0, eps) for _ in range(trials)], minlength=3)
    expected = np.exp(eps * scores / 2)
    expected = expected / expected.sum()
    assert np.allclose(picks / trials, expected, atol=0.015)
    spent = h.spent
    # kills: dropping the probe of the score's shape before the charge (the wrong shape would then be
    # found on the data, after the charge): a refused call spends nothing
    with pytest.raises(InvalidParameter, match="one per candidate"):
        h.exponential(lambda c: np.ones(2), 3, 1.0, 1.0)
    assert h.spent == spent
    # a score whose shape changes with the data passes the probe: the one documented abort after a charge
    h = kernel([4, 0, 1]).handle("t", "partitioner", 1.0)
    with pytest.raises(PrivacyViolation, match="must return 3 values"):
        h.exponential(lambda c: np.ones(3) if c.sum() == 0 else np.ones(2), 3, 1.0, 1.0)
    assert h.spent == 1.0  # the data was read: the charge stands


def test_custom_mechanism_must_state_a_proof_and_is_recorded():
    class Unproven(VettedMechanism):
        name = "unproven"

    class Proven(VettedMechanism):
        name = "noisy-total"
        proof = "sum has sensitivity 1; Laplace mechanism (Dwork et al. 2006, Thm 1)"

        def answers(self, n, **kw):
            return 1

        def run(self, counts, epsilon, noise, **kw):
            return counts.sum() + noise.laplace(1 / epsilon, 1)[0]

    k = kernel([1, 2, 3])
    h = k.handle("t", "partitioner", 1.0, vetted=("unproven", "noisy-total"))
    with pytest.raises(InvalidParameter, match="no privacy proof"):
        h.custom(Unproven(), 0.5)
    assert len(k.ledger) == 0
    h.custom(Proven(), 0.5)
    row = k.ledger.entries[0]
    assert row.primitive == "custom:noisy-total" and "Dwork" in row.note and row.answers == 1


def test_noise_source_is_a_seam_no_component_changes():
    import dphist
    from dphist.kernel import ExactNoise
    x = np.arange(100)
    release = dphist.make_algorithm("identity").run(x, 1.0, noise=ExactNoise())
    assert release.noise.startswith("exact-discrete-laplace") and release.mode == "release"
    assert np.all(release.estimate == np.round(release.estimate))  # integer noise on integer counts
    assert release.ledger.total == pytest.approx(1.0)


def test_interval_sensitivity_fast_path_agrees_with_coverage():
    from dphist.kernel.queries import interval_coverage, max_interval_coverage
    rng = np.random.default_rng(4)
    n = 50
    for _ in range(300):
        m = rng.integers(0, 8)
        a = rng.integers(0, n + 1, m)
        b = rng.integers(0, n + 1, m)
        s, e = np.minimum(a, b), np.maximum(a, b)
        order = np.argsort(s, kind="stable")
        for starts, ends in ((s, e), (s[order], e[order])):
            expected = int(interval_coverage(n, starts, ends).max()) if m else 0
            assert max_interval_coverage(n, starts, ends) == expected
    level = np.arange(0, 48, 4)
    assert max_interval_coverage(n, level, level + 4) == 1


def test_interval_coverage_and_answers_keep_numpys_sums():
    """The coverage sums each position's starts, then its ends, each in query order, then subtracts (numpy's
    bincount route), and interval answers are float prefix sums of the integer counts (no float copy first),
    int32 bounds kept as int32: the same numbers, bit for bit.  Kills: the ends subtracted one at a time
    (another rounding where several intervals end together), the counts summed as integers then converted
    (other numbers beyond 2^53), int32 bounds widened or narrowed wrongly (other intervals)."""
    from dphist.kernel import IntervalQueries
    from dphist.kernel.queries import check_intervals, check_queries, interval_coverage
    rng = np.random.default_rng(11)
    n, m = 500, 4000
    s = rng.integers(0, n, m)
    e = np.minimum(n, s + rng.integers(1, 9, m))              # short intervals: many end together
    w = rng.random(m) * 3
    want = np.cumsum(np.bincount(s, w, minlength=n + 1) - np.bincount(e, w, minlength=n + 1))[:-1]
    assert np.array_equal(interval_coverage(n, s, e, w), want)
    assert np.array_equal(interval_coverage(n, s, e), np.cumsum(np.bincount(s, minlength=n + 1)
                                                                - np.bincount(e, minlength=n + 1))[:-1])
    s32, e32 = check_intervals(n, s.astype(np.int32), e.astype(np.int32))
    assert s32.dtype == np.int32 and np.array_equal(s32, s) and np.array_equal(e32, e)
    n = 2 ** 15                                               # counts near the cap: sums beyond 2^53
    x = rng.integers(2 ** 39, 2 ** 40, n)
    s = rng.integers(0, n, m)
    e = np.minimum(n, s + rng.integers(1, n, m))
    prefix = np.concatenate(([0.0], np.cumsum(x.astype(float))))
    got = check_queries(IntervalQueries(s.astype(np.int32), e.astype(np.int32), w), n).answer(x)
    assert np.array_equal(got, w * (prefix[e] - prefix[s]))


def test_one_row_dense_query_is_answered_as_the_matrix_product():
    """The one-row dense path (einsum instead of BLAS): kills a row taken from the wrong axis, a sum of
    the weights or of the counts alone, and an answer without its row axis."""
    from dphist.kernel.queries import check_queries
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6])
    row = np.array([[0.5, 0, 2, 0, 1, 0, 0, 3]])
    checked = check_queries(row, 8)
    answer = checked.answer(x.astype(float))
    assert answer.shape == (1,) and answer[0] == pytest.approx(float((row @ x)[0]))
    assert (checked.sensitivity, checked.rows) == (3.0, 1)
    out = kernel(x).handle("t", "finalizer", 1e9).laplace_linear(row, 1e9)
    assert out.shape == (1,) and out[0] == pytest.approx(float((row @ x)[0]), abs=1e-6)


def test_interval_queries_sensitivity_and_support_match_the_dense_matrix():
    """The kernel's check of weighted intervals against the dense matrix's column L1 norms and non-zeros,
    with every query live (positive weights; one negative) and with dead ones (an empty interval, a zero weight).
    Kills: a negative weight counted without its absolute value (sensitivity too low), the all-live shortcut
    taken when some query is dead (a zero-weight interval counted in the support)."""
    from dphist.kernel import IntervalQueries
    from dphist.kernel.queries import check_queries
    n = 6
    cases = [([0, 0, 3], [6, 3, 6], [0.5, 0.25, 0.25]), ([0, 0, 3], [6, 3, 6], [0.5, -0.75, 0.25]),
             ([0, 2, 1, 0], [6, 2, 4, 3], [0.5, 1.0, 0.0, 0.25])]
    for s, e, w in cases:
        dense = np.zeros((len(s), n))
        for r, (a, b, x) in enumerate(zip(s, e, w)):
            dense[r, a:b] = x
        got = check_queries(IntervalQueries(np.array(s), np.array(e), np.array(w)), n)
        assert got.sensitivity == np.abs(dense).sum(axis=0).max()
        assert got.support == np.count_nonzero(dense, axis=0).max()


def test_sorted_group_sums_block_by_block_are_reduceats_integers():
    """The kernel's group sums of a sorted partition of int64 counts (``_group_sums_gathered``, no gathered
    copy of the counts) are ``add.reduceat(counts[order], bounds[:-1])`` exactly.  Kills: a block's first
    group summed from its own start instead of the block's (``starts[0] = 0`` dropped: that group's part
    before the edge lost), a group's part added to the next group, the last block dropped; the wrap of int64
    sums is checked too (integer additions in any order)."""
    from dphist.kernel.private import _group_sums_gathered
    from dphist.partition import ORDER_BLOCK
    rng = np.random.default_rng(3)
    n = 4 * ORDER_BLOCK + 7
    order = rng.permutation(n)
    for bounds in (np.array([0, n]), np.array([0, ORDER_BLOCK, n]),
                   np.array([0, ORDER_BLOCK - 1, ORDER_BLOCK + 1, 3 * ORDER_BLOCK, n]),
                   np.r_[0, np.sort(rng.choice(np.arange(1, n), 999, replace=False)), n]):
        counts = rng.integers(0, 50, n)
        assert np.array_equal(_group_sums_gathered(counts, order, bounds), np.add.reduceat(counts[order], bounds[:-1]))
    counts = np.full(n, 2 ** 62, dtype=np.int64)        # sums past 2^63 wrap alike
    bounds = np.array([0, 3, ORDER_BLOCK + 2, n])
    with np.errstate(over="ignore"):
        assert np.array_equal(_group_sums_gathered(counts, order, bounds), np.add.reduceat(counts[order], bounds[:-1]))


def test_sorted_partition_measurement_takes_the_block_sums_only_for_large_int64_counts(monkeypatch):
    """``laplace_partition`` of a sorted partition sums through ``_group_sums_gathered`` from ``ORDER_BLOCK``
    bins (int64 counts) and gives the same release as the one gather; below it, the one gather.  Kills the
    block sums never taken (the memory of the gather kept) or taken for small inputs."""
    import dphist.kernel.private as private
    from dphist.partition import ORDER_BLOCK
    rng = np.random.default_rng(2)
    calls = []
    real = private._group_sums_gathered
    monkeypatch.setattr(private, "_group_sums_gathered", lambda *a: calls.append(1) or real(*a))
    for n, taken in ((ORDER_BLOCK - 1, False), (ORDER_BLOCK + 3, True)):
        counts = rng.integers(0, 20, n)
        part = Partition(rng.permutation(n), np.array([0, 1, 500, ORDER_BLOCK - 2, n]))
        calls.clear()
        got = kernel(counts, seed=9).handle("t", "finalize", 1.0).laplace_partition(part, 1.0)
        assert bool(calls) is taken
        sums = np.add.reduceat(counts[part.order], part.bounds[:-1])
        expected = SeededLaplace(np.random.default_rng(9)).laplace_mechanism(sums, 1.0, 1.0, integral=True, support=1)
        assert np.array_equal(got, expected)
