"""GGS, its lower bound and the group cost against textbook references (mutations named per test)."""
import itertools

import numpy as np
import pytest

from dphist import segmentation
from dphist_sreb_gca.ggs import ggs, lower_bounds
from dphist_sreb_gca.relative_error import (GroupRelativeError, expected_abs_laplace, relative_error_direct,
                                            weights)

FORMS = ("bound", "exact")


def _sorted_inputs(seed, count=150, n_max=40):
    """Ascending and descending noisy-looking sequences, some with runs of equal values."""
    rng = np.random.default_rng(seed)
    for t in range(count):
        n = int(rng.integers(1, n_max))
        x = rng.laplace(4.0, 6.0, n)
        if t % 3 == 0:
            x = np.round(x)                       # runs of equal values
        x = np.sort(x)
        yield (x[::-1] if t % 2 else x), float(rng.choice([0.05, 0.5, 2.0]))


@pytest.mark.parametrize("form", FORMS)
def test_group_cost_matches_the_textbook_formula(form):
    # kills: a wrong split position in the prefix-sum formula, mixing the two forms, rows_from
    # drifting from intervals (the optimal DP and the greedy would then disagree on costs)
    for x, eps2 in _sorted_inputs(1):
        cost = GroupRelativeError(x, eps2, 1.0, form)
        n = x.size
        for i in range(n):
            ends = np.arange(i + 1, n + 1)
            ref = [relative_error_direct(x[i:e], eps2, 1.0, form) for e in ends]
            np.testing.assert_allclose(cost.intervals(np.full(ends.size, i), ends), ref, rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(cost.rows_from(i, np.arange(n + 1)), ref, rtol=1e-9, atol=1e-9)


def test_reconstruction_part_is_the_cores_relative_error():
    # kills: weights other than 1 / max(x, delta) (e.g. 1 / x, or delta ignored) on values >= delta,
    # where the core's dphist.segmentation.RelativeError is the same quantity
    rng = np.random.default_rng(2)
    x = np.sort(rng.uniform(1.0, 50.0, 30))
    ours = GroupRelativeError(x, 0.3, 1.0)
    core = segmentation.RelativeError(x, delta=1.0)
    s, e = np.array([0, 3, 10, 0]), np.array([5, 20, 30, 30])
    np.testing.assert_allclose(ours.parts(s, e)[0], core.intervals(s, e), rtol=1e-9)
    np.testing.assert_allclose(ours.parts(s, e)[1], [weights(x[a:b], 1.0).sum() / ((b - a) * 0.3)
                                                     for a, b in zip(s, e)])


def test_exact_form_below_bound_and_equal_on_constant_groups():
    # kills: a sign error in the exact form (b e^{+a/b}), which would exceed the bound
    rng = np.random.default_rng(3)
    for _ in range(50):
        x = rng.uniform(0, 20, int(rng.integers(1, 12)))
        assert relative_error_direct(x, 0.4, 1.0, "exact") <= relative_error_direct(x, 0.4, 1.0, "bound") + 1e-12
    c = np.full(7, 5.0)
    assert relative_error_direct(c, 0.4, 1.0, "exact") == pytest.approx(relative_error_direct(c, 0.4, 1.0, "bound"))


def test_expected_absolute_laplace_by_simulation():
    # kills: a wrong closed form for E|a + Lap(b)| (e.g. |a| + b, or b e^{-a/b} without |a|)
    rng = np.random.default_rng(4)
    for a, b in [(0.0, 1.0), (0.7, 1.0), (3.0, 0.5), (-2.0, 2.0)]:
        draws = np.abs(a + rng.laplace(0.0, b, 400_000))
        assert abs(draws.mean() - expected_abs_laplace(a, b)) < 4 * draws.std() / np.sqrt(draws.size)


@pytest.mark.parametrize("form", FORMS)
def test_early_stop_gives_the_full_scan_lower_bound(form):
    # kills: a stop rule using b(l) instead of b_min, or stopping on the running term instead of
    # the bound (both stop too early on some inputs and return a larger LB)
    for x, eps2 in _sorted_inputs(5):
        cost = GroupRelativeError(x, eps2, 1.0, form)
        assert np.array_equal(lower_bounds(cost, early_stop=True), lower_bounds(cost, early_stop=False))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("ties", ["join", "split"])
def test_three_ways_of_deciding_give_the_same_groups(form, ties):
    # kills: a branch-and-bound that prunes an interval whose bound fails, a galloping block that
    # skips positions, an early stop that changes LB (each yields different cuts on some input)
    for x, eps2 in _sorted_inputs(6):
        fast = ggs(x, eps2, 1.0, form, ties=ties)
        paper = ggs(x, eps2, 1.0, form, ties=ties, decide_early=False)
        full = ggs(x, eps2, 1.0, form, ties=ties, decide_early=False, early_stop=False)
        assert np.array_equal(fast, paper) and np.array_equal(paper, full), x


def _reference_ggs(x, eps2, form, join_ties=True):
    """The rule (4) by brute force: E from the textbook formula, LB by evaluating every l."""
    n = x.size
    w = weights(x, 1.0)

    def lb(j):
        terms = []
        for l in range(j, n):
            a = abs(x[j] - x[j:l + 1].mean())
            b = 1.0 / ((l - j + 1) * eps2)
            terms.append(w[j] * (float(expected_abs_laplace(a, b)) if form == "exact" else a + b))
        return min(terms)

    cuts, s = [0], 0
    for j in range(1, n):
        d = relative_error_direct(x[s:j + 1], eps2, 1.0, form) - relative_error_direct(x[s:j], eps2, 1.0, form)
        if not (d <= lb(j) if join_ties else d < lb(j)):
            cuts.append(j)
            s = j
    return np.array(cuts + [n])


@pytest.mark.parametrize("form", FORMS)
def test_ggs_follows_rule_4(form):
    # kills: Delta computed as E(C + j) alone, LB taken at l = j only (the singleton bound),
    # the comparison reversed; continuous values (no exact ties to be decided by rounding)
    rng = np.random.default_rng(7)
    for _ in range(120):
        x = np.sort(rng.exponential(8.0, int(rng.integers(1, 25))))
        eps2 = float(rng.choice([0.1, 1.0, 3.0]))
        assert np.array_equal(ggs(x, eps2, 1.0, form), _reference_ggs(x, eps2, form)), x


def _brute_force_optimum(x, eps2, form):
    n = x.size
    best = (np.inf, None)
    for k in range(n):
        for inner in itertools.combinations(range(1, n), k):
            cuts = (0,) + inner + (n,)
            total = sum(relative_error_direct(x[a:b], eps2, 1.0, form) for a, b in zip(cuts, cuts[1:]))
            best = min(best, (total, cuts))
    return best


@pytest.mark.parametrize("form", FORMS)
def test_optimal_variant_is_the_brute_force_optimum_and_ggs_never_beats_it(form):
    # kills: an optimal partitioner on another cost than GGS's, a DP that misses candidates
    rng = np.random.default_rng(8)
    for _ in range(40):
        x = np.sort(rng.exponential(6.0, int(rng.integers(1, 9))))
        cost = GroupRelativeError(x, 0.5, 1.0, form)
        found = segmentation.optimal(cost)
        total, _ = _brute_force_optimum(x, 0.5, form)
        assert found.cost == pytest.approx(total, rel=1e-9)
        greedy = ggs(x, 0.5, 1.0, form)
        assert segmentation.total_cost(cost, greedy) >= total - 1e-9


@pytest.mark.parametrize("form", FORMS)
def test_ggs_equals_the_optimum_on_constant_runs(form):
    # kills: a GGS that splits equal values (e.g. strict comparison against a zero LB)
    for value, n, eps2 in [(0.0, 50, 1.0), (7.0, 33, 0.1), (300.0, 200, 2.0)]:
        x = np.full(n, value)
        optimum = segmentation.optimal(GroupRelativeError(x, eps2, 1.0, form))
        assert np.array_equal(ggs(x, eps2, 1.0, form), [0, n])
        assert np.array_equal(optimum.bounds, [0, n])


@pytest.mark.parametrize("form", FORMS)
def test_ggs_equals_the_optimum_on_well_separated_values(form):
    # kills: a GGS that always merges (or ignores the reconstruction error): plateaus far apart
    # relative to 1/eps_2 must be split where the optimum splits them
    x = np.concatenate([np.full(20, 2.0), np.full(15, 200.0), np.full(30, 20_000.0)])
    for eps2 in (0.5, 1.0, 5.0):
        optimum = segmentation.optimal(GroupRelativeError(x, eps2, 1.0, form))
        assert np.array_equal(optimum.bounds, [0, 20, 35, 65])
        assert np.array_equal(ggs(x, eps2, 1.0, form), optimum.bounds)
        assert np.array_equal(ggs(x[::-1], eps2, 1.0, form), [0, 30, 45, 65])


@pytest.mark.parametrize("decide_early", [True, False])
def test_exact_tie_joins_by_default_and_splits_on_request(decide_early):
    # kills: "<" in place of "<=" for the default ties="join" (the "does not exceed"), and the
    # switch being ignored.  x = [0, 1], delta = 4 (both weights 1/4), eps_2 = 1: E({0}) = 1/4,
    # E({0, 1}) = 1/4 + 1/4, so Delta = 1/4 = LB(1) = w_1 / eps_2, exactly in binary floating point
    x = np.array([0.0, 1.0])
    assert np.array_equal(ggs(x, 1.0, 4.0, decide_early=decide_early), [0, 2])
    assert np.array_equal(ggs(x, 1.0, 4.0, ties="split", decide_early=decide_early), [0, 1, 2])
