"""The grouping algorithms of AHP against brute force and the paper's worked example."""
import itertools

import numpy as np
import pytest

from dphist_ahp.group_error import group_errors, lower_bound_exhaustive, lower_bounds, total_error
from dphist_ahp.greedy import greedy_cuts
from dphist_ahp.segmentation import k_group_cuts, optimal_cuts, rule_of_thumb

EPS2 = [0.05, 0.5, 2.0]


def all_segmentations(n):
    for mask in itertools.product([0, 1], repeat=n - 1):
        yield np.r_[0, 1 + np.flatnonzero(mask), n]


def brute_force(values, eps_2):
    return min(total_error(values, b, eps_2) for b in all_segmentations(values.size))


def small_inputs(seed=0, count=60):
    """Sorted noisy-looking vectors (with ties and zeros) of 1..10 values."""
    rng = np.random.default_rng(seed)
    for t in range(count):
        n = int(rng.integers(1, 11))
        x = rng.laplace(0, 3, n) + rng.choice([0, 5, 20], n)
        if t % 3 == 0:
            x[rng.random(n) < 0.4] = 0.0       # thresholded zeros: exact ties
        yield np.sort(x)[::-1] if t % 2 else np.sort(x)


def test_group_error_matches_direct_formula():
    rng = np.random.default_rng(1)
    x = rng.normal(1e4, 3, 50)
    bounds = np.array([0, 7, 8, 30, 50])
    direct = [np.sum((c - c.mean()) ** 2) + 2 / (c.size * 0.3 ** 2) for c in np.split(x, bounds[1:-1])]
    np.testing.assert_allclose(group_errors(x, bounds, 0.3), direct, rtol=1e-9, atol=1e-7)


def test_example_3_1_groups():
    # Zhang et al. 2014, Example 3.1: {1,1,3,3,4,6,7}, eps_2 = 0.5 -> {1,1}, {3,3,4}, {6,7}
    x = np.array([1, 1, 3, 3, 4, 6, 7], dtype=float)
    assert greedy_cuts(x, 0.5).tolist() == [0, 2, 5, 7]
    assert lower_bounds(x, 0.5)[2] == pytest.approx(1.0)  # err*(H3) = 1/9 + 8/9


@pytest.mark.parametrize("eps_2", EPS2)
def test_optimal_equals_brute_force_and_greedy_is_never_better(eps_2):
    for x in small_inputs():
        best = brute_force(x, eps_2)
        cuts, err = optimal_cuts(x, eps_2)
        assert err == pytest.approx(best, rel=1e-9, abs=1e-9)
        assert total_error(x, cuts, eps_2) == pytest.approx(best, rel=1e-9, abs=1e-9)
        greedy = total_error(x, greedy_cuts(x, eps_2), eps_2)
        assert greedy >= best - 1e-9


def test_greedy_is_sometimes_strictly_worse_than_optimal():
    # guards the test above against vacuity: the two differ on some inputs
    gaps = [total_error(x, greedy_cuts(x, 0.5), 0.5) - optimal_cuts(x, 0.5)[1] for x in small_inputs(seed=3)]
    assert max(gaps) > 1e-6


def test_optimal_is_min_over_k_of_k_group_dp():
    rng = np.random.default_rng(4)
    for _ in range(10):
        x = np.sort(rng.laplace(0, 5, 40) + rng.choice([0, 30, 60], 40))
        found = k_group_cuts(x, 0.2, range(1, 41))
        assert min(e for _, e in found.values()) == pytest.approx(optimal_cuts(x, 0.2)[1], rel=1e-9)
        for k, (cuts, e) in found.items():
            assert cuts.size == k + 1 and e == pytest.approx(total_error(x, cuts, 0.2), rel=1e-9)


@pytest.mark.parametrize("eps_2", EPS2)
def test_early_stop_gives_the_exact_lower_bound(eps_2):
    rng = np.random.default_rng(5)
    for t in range(30):
        x = np.sort(rng.laplace(0, 4, 200) + rng.choice([0, 10, 50], 200))
        x[: rng.integers(0, 100)] = 0.0
        x = np.sort(x)[::-1] if t % 2 else np.sort(x)
        fast = lower_bounds(x, eps_2)
        slow = [lower_bound_exhaustive(x, j, eps_2) for j in range(x.size)]
        np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)


def test_lower_bound_is_a_lower_bound_on_the_bins_own_error():
    # In any grouping where x_j opens group C = x_j..x_l, bin j's expected error
    # (x_j - mean C)^2 + 2/(|C|^2 eps^2) is at least err*(x_j).
    rng = np.random.default_rng(6)
    x = np.sort(rng.laplace(0, 4, 60) + rng.choice([0, 10, 50], 60))
    lb = lower_bounds(x, 0.5)
    for j in range(x.size):
        for l in range(j, x.size):
            c = x[j:l + 1]
            assert (x[j] - c.mean()) ** 2 + 2 / (c.size ** 2 * 0.25) >= lb[j] - 1e-9


def test_unsorted_values_are_scanned_in_full():
    rng = np.random.default_rng(7)
    x = rng.laplace(0, 10, 80)
    np.testing.assert_allclose(lower_bounds(x, 0.5), [lower_bound_exhaustive(x, j, 0.5) for j in range(80)])


def test_decision_shortcut_does_not_change_the_groups():
    rng = np.random.default_rng(8)
    for t in range(60):
        n = int(rng.integers(2, 400)) if t < 45 else int(rng.integers(2000, 6000))
        x = rng.laplace(0, rng.choice([0.5, 5, 50]), n) + rng.choice([0, 10, 100], n)
        x[rng.random(n) < 0.5] = 0.0
        if t % 4 == 0:
            x = np.round(x)                     # integer values: many exact ties
        x = [np.sort(x), np.sort(x)[::-1], x][t % 3]
        for eps_2 in EPS2:
            assert np.array_equal(greedy_cuts(x, eps_2), greedy_cuts(x, eps_2, decide_early=False))


def test_rules_of_thumb():
    x = np.random.default_rng(9).exponential(5, 4096)
    assert rule_of_thumb("sqrt", x) == 64
    assert rule_of_thumb("sturges", x) == 13
    assert rule_of_thumb("rice", x) == 32
    # numpy's 'doane' estimator uses the same formula for the number of bins
    assert rule_of_thumb("doane", x) == np.histogram_bin_edges(x, "doane").size - 1
    assert rule_of_thumb("sqrt", x[:3]) == 2


def test_monge_speed_up_matches_the_plain_k_group_dp():
    rng = np.random.default_rng(10)
    for t in range(20):
        n = int(rng.integers(5, 300))
        x = rng.laplace(0, rng.choice([1, 10]), n) + rng.choice([0, 20, 100], n)
        x[rng.random(n) < 0.3] = 0.0
        x = np.sort(x)[::-1] if t % 2 else np.sort(x)
        ks = sorted({1, 2, int(rng.integers(1, n + 1)), n})
        fast = k_group_cuts(x, 0.3, ks, monotone=True)
        slow = k_group_cuts(x, 0.3, ks, monotone=False)
        for k in ks:
            assert fast[k][1] == pytest.approx(slow[k][1], rel=1e-9, abs=1e-9)
            assert total_error(x, fast[k][0], 0.3) == pytest.approx(fast[k][1], rel=1e-9, abs=1e-9)


def test_decision_shortcut_on_pipeline_outputs():
    # sorted, thresholded noisy vectors as the partitioner sees them
    import dphist
    from dphist.datasets import load
    for shape in ["zipf", "spikes", "uniform"]:
        x = load("synthetic", shape=shape, n=20000, scale=200000, seed=2).counts
        for eps in [1.0, 0.05]:
            r = dphist.make_algorithm("AHP").run(x, eps, seed=4)
            v = r.partition.in_order(r.noisy)
            assert np.array_equal(greedy_cuts(v, 0.15 * eps), greedy_cuts(v, 0.15 * eps, decide_early=False))
