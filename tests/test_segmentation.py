"""dphist.segmentation against brute force, for every mode and every cost.

Each test names the mutation it kills.  Brute force enumerates every segmentation of up to 9
units (2^8 compositions) and evaluates each group's cost by its definition (numpy on the slice),
independently of the engine's prefix sums, Fenwick trees and kernels.
"""
import itertools
from pathlib import Path

import numpy as np
import pytest

from dphist import segmentation as S
from dphist.errors import InvalidParameter

RNG = np.random.default_rng(2026)


# ------------------------------------------------------------------ brute force
def compositions(k, allowed=lambda length: True):
    """Every segmentation of k units as bounds 0 = b_0 < ... < b_m = k."""
    for mask in range(1 << (k - 1)):
        cuts = [0] + [i + 1 for i in range(k - 1) if mask >> i & 1] + [k]
        if all(allowed(b - a) for a, b in zip(cuts, cuts[1:])):
            yield np.array(cuts)


def tree_segmentations(lo, hi, span, branching):
    """Segmentations into aligned nodes: node [lo, hi) of ``span`` units, or its children's."""
    yield [lo, hi]
    if span == 1:
        return
    child = span // branching
    parts = [(a, min(a + child, hi)) for a in range(lo, hi, child)]
    for combo in itertools.product(*(list(tree_segmentations(a, b, child, branching)) for a, b in parts)):
        out = [lo]
        for seg in combo:
            out += seg[1:]
        yield out


def brute(direct, units, candidates):
    best, arg = np.inf, None
    for g in candidates:
        c = sum(direct(units[a], units[b]) for a, b in zip(g[:-1], g[1:]))
        if arg is None or c < best - 1e-9 * max(1.0, abs(best)):
            best, arg = c, np.asarray(g)
    return best, arg


def direct_total(direct, units, g):
    return sum(direct(units[a], units[b]) for a, b in zip(g[:-1], g[1:]))


# ------------------------------------------------------------------ costs under test
def sse_direct(x, pen):
    return lambda a, b: float(np.sum((x[a:b] - x[a:b].mean()) ** 2) + pen[b - a])


def l1_direct(x, w):
    return lambda a, b: float(np.sum(w[a:b] * np.abs(x[a:b] - x[a:b].mean())))


def cases(n, sorted_values=False):
    """(name, cost, direct cost) for every built-in and user cost over one random vector."""
    x = np.round(RNG.laplace(0, 8, n) + RNG.integers(0, 3, n) * 10)
    x[RNG.random(n) < 0.3] = 0.0
    if sorted_values:
        x = np.sort(x)[::-1]
    m = np.arange(n + 1, dtype=float)
    m[0] = 1
    uee = np.r_[0.0, -(m[1:] - 1) * 2.0 + 2.0 / (1.0 + m[1:] * 0.25)]
    inv = np.r_[0.0, 30.0 / m[1:]]
    w = RNG.random(n) + 0.1
    out = [
        ("sse+inverse-size", S.SSEPenalty.inverse_size(x, 30.0), sse_direct(x, inv)),
        ("sse+uee-table", S.SSEPenalty(x, uee), sse_direct(x, uee)),
        ("sse+uee-penalty-last", S.SSEPenalty(x, uee, penalty_last=True), sse_direct(x, uee)),
        ("l1", S.L1Deviation(x).then(lambda c, m: c + 5.0 / m), lambda a, b: l1_direct(x, np.ones(n))(a, b) + 5.0 / (b - a)),
        ("weighted-l1", S.L1Deviation(x, w).then(lambda c, m: c + 3.0), lambda a, b: l1_direct(x, w)(a, b) + 3.0),
        ("relative", S.RelativeError(x, delta=2.0).then(lambda c, m: c + 1.0),
         lambda a, b: l1_direct(x, 1 / np.maximum(np.abs(x), 2.0))(a, b) + 1.0),
        ("user-vectorised", S.IntervalCost(lambda s, e: (e - s) ** 0.5 * 4 + np.abs(x[s] - x[e - 1]), n),
         lambda a, b: (b - a) ** 0.5 * 4 + abs(x[a] - x[b - 1])),
        ("user-group", S.GroupCost(lambda g: np.ptp(g) + 7.0, x), lambda a, b: float(np.ptp(x[a:b]) + 7.0)),
    ]
    return x, out


def unit_bounds(n, grouped):
    if not grouped:
        return np.arange(n + 1)
    b = np.r_[0, np.cumsum(RNG.integers(1, 3, n))]
    b = b[b < n]
    return np.r_[b, n]


COST_NAMES = [name for name, _, _ in cases(6)[1]]


# ------------------------------------------------------------------ (a) and (b)
@pytest.mark.parametrize("name", COST_NAMES)
@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("lengths", ["all", "power-of-two"])
def test_optimal_matches_brute_force(name, grouped, lengths):
    """Kills: a wrong candidate range in the DP loops (``range(e)`` -> ``range(1, e)``), an
    off-by-one in the power-of-two lengths, a wrong SSE/Fenwick/penalty arithmetic, rows relaxed
    out of order, unit bounds ignored."""
    allowed = (lambda length: True) if lengths == "all" else (lambda length: length & (length - 1) == 0)
    for trial in range(6):
        n = int(RNG.integers(2, 13 if grouped else 10))
        x, all_cases = cases(n, sorted_values=trial % 2 == 0)
        cost, direct = {c[0]: (c[1], c[2]) for c in all_cases}[name]
        units = unit_bounds(n, grouped)
        k = units.size - 1
        want, _ = brute(direct, units, compositions(k, allowed))
        got = S.optimal(cost, units, lengths=lengths)
        assert got.bounds[0] == 0 and got.bounds[-1] == k
        assert all(allowed(int(d)) for d in np.diff(got.bounds))
        assert np.isclose(got.cost, want, rtol=1e-9, atol=1e-9)
        assert np.isclose(direct_total(direct, units, got.bounds), want, rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------------ (c)
@pytest.mark.parametrize("name", COST_NAMES)
@pytest.mark.parametrize("branching", [2, 3])
def test_tree_matches_brute_force(name, branching):
    """Kills: children summed over the wrong ranges (reduceat offsets), the top-down trace
    activating the wrong children, a last partial node dropped."""
    for trial in range(5):
        n = int(RNG.integers(2, 10))
        x, all_cases = cases(n, sorted_values=trial % 2 == 0)
        cost, direct = {c[0]: (c[1], c[2]) for c in all_cases}[name]
        units = np.arange(n + 1)
        span = 1
        while span < n:
            span *= branching
        want, _ = brute(direct, units, tree_segmentations(0, n, span, branching))
        got = S.tree(cost, branching=branching)
        assert np.isclose(got.cost, want, rtol=1e-9, atol=1e-9)
        assert np.isclose(direct_total(direct, units, got.bounds), want, rtol=1e-9, atol=1e-9)


# ------------------------------------------------------------------ (d)
@pytest.mark.parametrize("name", COST_NAMES)
def test_k_groups_matches_brute_force(name):
    """Kills: a wrong layer start (``range(m - 1, j)`` -> ``range(m, j)``), the backtrack reading the
    wrong layer, the Monge switch taken on a cost that is not Monge."""
    for trial in range(5):
        n = int(RNG.integers(2, 10))
        x, all_cases = cases(n, sorted_values=trial % 2 == 0)
        cost, direct = {c[0]: (c[1], c[2]) for c in all_cases}[name]
        units = np.arange(n + 1)
        ks = range(1, n + 1)
        got = S.k_groups(cost, ks)
        for k in ks:
            want, _ = brute(direct, units, (g for g in compositions(n) if g.size - 1 == k))
            assert got[k].n_groups == k
            assert np.isclose(got[k].cost, want, rtol=1e-9, atol=1e-9), (k, got[k], want)
            assert np.isclose(direct_total(direct, units, got[k].bounds), want, rtol=1e-9, atol=1e-9)


def test_monge_speed_up_equals_plain_dp_on_sorted_values_and_is_checked():
    """The divide-and-conquer layer equals the plain O(k^2) layer where the cost is Monge (SSE of
    sorted values + a convex penalty), and the check refuses it where it is not.
    Kills: a wrong opt_lo/opt_hi window in the divide and conquer; ``monge=None`` taking the
    speed-up on unsorted values or a non-convex penalty."""
    for trial in range(30):
        n = int(RNG.integers(5, 60))
        x = np.sort(np.round(RNG.laplace(0, 20, n)))
        cost = S.SSEPenalty.inverse_size(x, float(RNG.uniform(0.1, 100)))
        ks = list(range(1, min(n, 12) + 1))
        fast = S.k_groups(cost, ks)                  # auto: Monge on sorted values
        plain = S.k_groups(cost, ks, monge=False)
        for k in ks:
            assert np.isclose(fast[k].cost, plain[k].cost, rtol=1e-12, atol=1e-9)
    # the check itself: the dense matrix of SSE on sorted values is Monge, on shuffled values not
    x = np.sort(RNG.laplace(0, 20, 12))
    dense = lambda v: np.array([[np.sum((v[a:b] - v[a:b].mean()) ** 2) if b > a else np.inf
                                  for b in range(13)] for a in range(13)])
    assert S.monge_violation(dense(x)) <= 1e-9
    assert S.monge_violation(dense(RNG.permutation(x))) > 0
    # a non-convex penalty is detected, so auto falls back to the plain DP
    assert not S.SSEPenalty(x, np.r_[0.0, np.sin(np.arange(1, 13))]).penalty_is_convex()
    assert S.SSEPenalty.inverse_size(x, 2.0).penalty_is_convex()


def test_forced_monge_on_a_non_monge_cost_is_wrong_so_auto_must_check():
    """Shows that the check matters: asserting Monge on unsorted values can miss the optimum, which
    ``monge=None`` (the default) then avoids.  Kills: an auto-detection that always says Monge."""
    wrong = 0
    for trial in range(200):
        x = RNG.permutation(np.round(RNG.laplace(0, 30, 14)))
        cost = S.SSEPenalty.inverse_size(x, 1.0)
        plain = S.k_groups(cost, [3, 4, 5], monge=False)
        forced = S.k_groups(cost, [3, 4, 5], monge=True)
        auto = S.k_groups(cost, [3, 4, 5])
        wrong += any(forced[k].cost > plain[k].cost + 1e-9 for k in plain)
        assert all(np.isclose(auto[k].cost, plain[k].cost) for k in plain)
    assert wrong > 0


# ------------------------------------------------------------------ (e)
def reference_singleton_greedy(direct, units):
    k = units.size - 1
    cuts, s = [0], 0
    for i in range(1, k):
        merged = direct(units[s], units[i + 1])
        apart = direct(units[s], units[i]) + direct(units[i], units[i + 1])
        if not merged < apart:
            cuts.append(i)
            s = i
    return np.array(cuts + [k])


@pytest.mark.parametrize("name", COST_NAMES)
@pytest.mark.parametrize("grouped", [False, True])
def test_greedy_singleton_matches_the_rule(name, grouped):
    """Kills: ``<`` -> ``<=`` in the join rule, the batched scan skipping a unit after a refusal,
    the compiled kernel reading the wrong unit bounds."""
    for trial in range(10):
        n = int(RNG.integers(2, 40))
        x, all_cases = cases(n, sorted_values=trial % 2 == 0)
        cost, direct = {c[0]: (c[1], c[2]) for c in all_cases}[name]
        units = unit_bounds(n, grouped)
        want = reference_singleton_greedy(direct, units)
        got = S.greedy(cost, units, bound="singleton")
        assert np.array_equal(got.bounds, want), (got.bounds, want)
        assert np.isclose(got.cost, direct_total(direct, units, want), rtol=1e-9, atol=1e-9)


def reference_lookahead_greedy(x, c):
    """AHP Algorithm 3 by definition: err*(x_j) by exhaustive scan, err(C) directly."""
    n = x.size
    err = lambda g: float(np.sum((g - g.mean()) ** 2) + c / g.size)
    def err_star(j):
        return min((x[j] - x[j:l + 1].mean()) ** 2 + c / (l - j + 1) ** 2 for l in range(j, n))
    cuts, s = [0], 0
    for j in range(1, n):
        if err(x[s:j + 1]) < err(x[s:j]) + err_star(j):
            continue
        cuts.append(j)
        s = j
    return np.array(cuts + [n])


@pytest.mark.parametrize("sorted_values", [True, False])
def test_greedy_lookahead_matches_algorithm_3(sorted_values):
    """Kills: the early-stop rule applied to unsorted values, the galloping/branch-and-bound
    deciding differently from the scan, the share c/m^2 replaced by c/m, a running total that
    forgets the last group."""
    for trial in range(40):
        n = int(RNG.integers(2, 60))
        x = np.round(RNG.laplace(0, 10, n) + RNG.integers(0, 3, n) * 15)
        x[RNG.random(n) < 0.3] = 0.0
        if sorted_values:
            x = np.sort(x)[::-1]
        c = float(RNG.choice([0.5, 20.0, 400.0]))
        cost = S.SSEPenalty.inverse_size(x, c)
        want = reference_lookahead_greedy(x, c)
        for early in (True, False):
            got = S.greedy(cost, bound="lookahead", decide_early=early)
            assert np.array_equal(got.bounds, want), (early, got.bounds, want)
            assert np.isclose(got.cost, S.total_cost(cost, got.bounds), rtol=1e-9, atol=1e-6)
        brute_bounds = [min((x[j] - x[j:l + 1].mean()) ** 2 + c / (l - j + 1) ** 2 for l in range(j, n))
                        for j in range(n)]
        assert np.allclose(S.lookahead_bounds(cost), brute_bounds, rtol=1e-9, atol=1e-12)


def test_greedy_lookahead_interpreted_equals_compiled_bit_for_bit(monkeypatch):
    """The look-ahead greedy run by the interpreter on lists (what ``dphist run -a AHP`` does on a few
    thousand bins before numba is imported) returns the compiled scan's cuts and total, bit for bit, on
    sorted noisy-looking values with runs of zeros, and on a few levels in runs (groups of equal values: the
    total is then a sum of penalties alone).  Kills (checked by hand, with an empty numba cache: the cache is
    keyed to ``_lookahead.py`` alone): the typed overload of ``penalty`` in ``kernels`` rounding differently
    from the Python one (``c * (1 / m)`` for ``c / m``)."""
    from dphist.segmentation import search
    for trial in range(18):
        n = int(RNG.integers(2, 1500))
        if trial % 3:
            x = np.where(RNG.random(n) < 0.4, 0.0, RNG.poisson(40, n) + RNG.laplace(0, 1 / 0.85, n))
        else:
            x = RNG.integers(0, 6, n) * 10.0
        x = np.sort(x)[::-1] if trial % 2 else np.sort(x)
        cost = S.SSEPenalty.inverse_size(x, 2 / float(RNG.choice([0.01, 0.15, 1.0, 5.0])) ** 2)
        found = {}
        for route in ("compiled", "interpreted"):
            monkeypatch.setattr(search, "_runs_interpreted", lambda n, route=route: route == "interpreted")
            found[route] = S.greedy(cost, bound="lookahead")
        assert np.array_equal(found["compiled"].bounds, found["interpreted"].bounds)
        assert found["compiled"].cost == found["interpreted"].cost


def test_greedy_lookahead_skips_runs_of_equal_values_to_the_same_result(monkeypatch):
    """Joining the rest of a run of equal values without the test (``skip_runs``, a penalty c / size) gives
    the test's cuts and total bit for bit, on sorted values with long runs (zeros as AHP's threshold makes
    them, plateaus, a run that starts a group and one that joins a group of other values), both ways of
    deciding.  Kills (checked by hand): the skip taken after any merge (not only from a group of equal
    values: deviation 0 and SSE 0), or without advancing the group's size over the skipped values; the end
    of a run (``_lookahead.run_stop``, found by the scan one run at a time) one position past the run, or
    not found again for the next run (both also fail ``test_greedy_lookahead_matches_algorithm_3``)."""
    from dphist.segmentation import search
    for trial in range(16):
        n = int(RNG.integers(2, 200))
        x = np.where(RNG.random(n) < 0.6, 0.0, np.round(RNG.laplace(0, 6, n)) + RNG.integers(0, 4, n) * 10.0)
        x = np.sort(x)[::-1] if trial % 2 else np.sort(x)
        c = float(RNG.choice([0.5, 20.0, 400.0]))
        cost = S.SSEPenalty.inverse_size(x, c)
        assert search._skips_runs(c, c)
        for early in (True, False):
            got = []
            for skip in (False, True):
                monkeypatch.setattr(search, "_skips_runs", lambda pen, shares, skip=skip: skip)
                got.append(S.greedy(cost, bound="lookahead", decide_early=early))
            assert np.array_equal(got[0].bounds, got[1].bounds) and got[0].cost == got[1].cost, (trial, early)


def _taken_cases():
    """Values for the taken route: AHP-like sorted noisy counts with a run of zeros at either end, no zeros,
    all zeros, a run of -0.0 (never left out), runs of zeros inside unsorted values, ties of longest runs."""
    yield np.zeros(5)
    yield np.array([3.0, 2.0, 2.0, 1.0])
    yield np.array([4.0, -0.0, -0.0, 0.0, 0.0])
    yield np.array([0.0, 0.0, 5.0, 0.0, 0.0, 1.0])           # two longest runs: the first is left out
    yield np.array([-0.0, 0.0, 0.0, 0.0, 2.0, 7.0])
    for trial in range(30):
        n = int(RNG.integers(1, 400))
        x = np.where(RNG.random(n) < RNG.random(), 0.0, RNG.poisson(40, n) + RNG.laplace(0, 3, n))
        if trial % 5 == 4:
            x[RNG.random(n) < 0.2] = -0.0
        if trial % 3 == 0:
            x = np.round(x / 10) * 10                      # plateaus: runs of equal non-zero values
        yield np.sort(x)[::-1] if trial % 2 else (np.sort(x) if trial % 4 == 1 else x)


def test_greedy_lookahead_taken_equals_the_generic_route(monkeypatch):
    """``greedy_lookahead_taken`` (values read through an order, the run of zeros left out) returns the
    generic look-ahead greedy's cuts and total on the gathered values, bit for bit: sorted both ways,
    unsorted, with and without runs of zeros, through a random order and without one (``order=None``),
    compiled and with the Python accessors on the same tuples.  Kills: ``value`` or ``prefix_at`` mapping a
    position past the run one off (``j - (b - a) + 1``, ``l - (b - a) - 1``), the run's end read as
    ``b`` (``known_run_end``), the run's first zero or a -0.0 left out (``scan_taken``), ``gather_outside``'s
    first sum as ``0.0 + x_0`` (a -0.0 read back as +0.0), the Python accessors and the typed overloads
    disagreeing."""
    from dphist.segmentation import _lookahead, kernels, search
    monkeypatch.setattr(search, "_runs_interpreted", lambda n: False)
    for x in _taken_cases():
        n = x.size
        c = 2 / float(RNG.choice([0.05, 0.15, 1.0])) ** 2
        want = S.greedy(S.SSEPenalty.inverse_size(x, c), bound="lookahead")
        perm = RNG.permutation(n)
        values = np.empty(n)
        values[perm] = x                                      # values[perm] is x
        for vals, order in ((x, None), (values, perm), (values, perm.astype(np.int32))):
            got = S.greedy_lookahead_taken(vals, order, c)
            assert np.array_equal(got.bounds, want.bounds), (x, got.bounds, want.bounds)
            assert got.cost == want.cost
        finite, up, down, a, b = kernels.scan_taken(values, perm)
        assert (finite, up, down, a, b) == _lookahead.scan_taken(values, perm)
        kept, sums = np.empty(n - (b - a)), np.empty(n - (b - a) + 1)
        kernels.gather_outside(values, perm, a, b, kept, sums)
        prefix = np.zeros(n + 1)
        np.cumsum(x, out=prefix[1:])
        for l in range(n + 1):        # the prefix sums and values read back bit for bit, compiled and in Python
            assert _lookahead.prefix_at((sums, a, b), l) == prefix[l]
            assert np.signbit(_lookahead.prefix_at((sums, a, b), l)) == np.signbit(prefix[l])
        for j in range(n):
            assert np.float64(_lookahead.value((kept, a, b), j)).tobytes() == x[j].tobytes()
        args = ((kept, a, b), (sums, a, b), c, c, bool(up or down), True, search._skips_runs(c, c))
        python = _lookahead.greedy_lookahead(*args)
        compiled = kernels.greedy_lookahead(*args)
        assert np.array_equal(python[0], compiled[0]) and python[1] == compiled[1] == want.cost


def test_scan_taken_finds_the_longest_plain_run_of_zeros():
    """``scan_taken``'s flags and run against numpy: finite, both monotone directions as ``_is_monotone``
    compares neighbours, the longest maximal run of zeros holding no -0.0 (the first of equal length).
    Kills: a run of zeros that ends at the last position not counted, a run with a -0.0 accepted, the later
    of two equal runs chosen, NaN read as finite."""
    from dphist.segmentation import _lookahead, kernels, search
    cases = list(_taken_cases()) + [np.array([1.0, np.nan, 0.0]), np.array([np.inf, 0.0, 0.0]),
                                    np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])]
    for x in cases:
        want_runs = []
        i = 0
        while i < x.size:
            if x[i] == 0.0:
                j = i
                while j < x.size and x[j] == 0.0:
                    j += 1
                if not np.signbit(x[i:j]).any():
                    want_runs.append((j - i, -i, i, j))
                i = j
            else:
                i += 1
        a, b = max(want_runs)[2:] if want_runs else (0, 0)
        want = (bool(np.isfinite(x).all()), bool(np.all(x[1:] >= x[:-1])), bool(np.all(x[1:] <= x[:-1])), a, b)
        assert kernels.scan_taken(x, None) == want, (x, kernels.scan_taken(x, None), want)
        assert _lookahead.scan_taken(x, None) == want
        if want[0]:
            assert search._is_monotone(x) == (want[1] or want[2])


def test_greedy_lookahead_taken_leaves_other_inputs_to_the_generic_route(monkeypatch):
    """None (the caller's generic route) for what the taken route does not serve: interpreted sizes, values
    that are not a float64 vector, an order that is not an integer vector of their length, a value that is
    not finite (the generic route raises its error), unsorted values beyond ``unsorted_max`` (the caller
    refuses them).  Kills: the finiteness or the ``unsorted_max`` check dropped, the interpreted route
    replaced by the compiled one (numba imported for ``dphist run -a AHP`` on a few thousand bins)."""
    from dphist.segmentation import search
    x = np.array([5.0, 3.0, 0.0, 0.0])
    monkeypatch.setattr(search, "_runs_interpreted", lambda n: True)
    assert S.greedy_lookahead_taken(x, None, 1.0) is None
    monkeypatch.setattr(search, "_runs_interpreted", lambda n: False)
    assert S.greedy_lookahead_taken(x, None, 1.0) is not None
    assert S.greedy_lookahead_taken(x.astype(np.float32), None, 1.0) is None
    assert S.greedy_lookahead_taken(x.astype(np.int64), None, 1.0) is None
    assert S.greedy_lookahead_taken(x, np.arange(3), 1.0) is None
    assert S.greedy_lookahead_taken(x, np.arange(4.0), 1.0) is None
    assert S.greedy_lookahead_taken(np.array([5.0, np.inf, 0.0]), None, 1.0) is None
    assert S.greedy_lookahead_taken(np.array([5.0, np.nan, 0.0]), None, 1.0) is None
    unsorted = np.array([1.0, 3.0, 2.0, 0.0])
    assert S.greedy_lookahead_taken(unsorted, None, 1.0, unsorted_max=3) is None
    assert S.greedy_lookahead_taken(unsorted, None, 1.0, unsorted_max=4) is not None
    assert S.greedy_lookahead_taken(x, None, 1.0, unsorted_max=3) is not None      # sorted: served
    with pytest.raises(InvalidParameter, match="coefficient"):
        S.greedy_lookahead_taken(x, None, -1.0)


# ------------------------------------------------------------------ tie rules
def test_tie_rules_are_the_documented_ones():
    """On an all-zero vector every split of SSE + a constant per group ties only where the group
    count ties; with a zero penalty every segmentation ties.
    Kills: ``<`` -> ``<=`` in the exact / k / power-of-two loops, ``own < children`` -> ``<=``,
    the greedy joining on a tie."""
    zeros = np.zeros(6)
    flat = S.SSEPenalty(zeros, np.zeros(7))                     # every segmentation costs 0
    assert np.array_equal(S.optimal(flat).bounds, [0, 6])        # (a): longest last group, recursively
    assert np.array_equal(S.k_groups(flat, [3])[3].bounds, [0, 1, 2, 6])   # (d): earliest start of the last
    assert np.array_equal(S.optimal(flat, lengths="power-of-two").bounds, [0, 2, 6])   # (b): longest, recursively
    assert np.array_equal(S.optimal(flat, lengths="power-of-two", longest_on_ties=False).bounds,
                          [0, 1, 2, 3, 4, 5, 6])                                      # or the shortest
    assert np.array_equal(S.tree(flat).bounds, [0, 1, 2, 3, 4, 5, 6])           # (c): the children
    assert np.array_equal(S.greedy(flat).bounds, [0, 1, 2, 3, 4, 5, 6])         # (e): a tie opens a group
    # the same rules on the generic (row / window / dense-matrix) paths of any other cost
    free = S.IntervalCost(lambda s, e: np.zeros(s.shape), 6)
    assert np.array_equal(S.optimal(free).bounds, [0, 6])
    assert np.array_equal(S.k_groups(free, [3])[3].bounds, [0, 1, 2, 6])
    assert np.array_equal(S.optimal(free, lengths="power-of-two").bounds, [0, 2, 6])
    assert np.array_equal(S.optimal(free, lengths="power-of-two", longest_on_ties=False).bounds,
                          [0, 1, 2, 3, 4, 5, 6])
    assert np.array_equal(S.tree(free).bounds, [0, 1, 2, 3, 4, 5, 6])
    assert np.array_equal(S.greedy(free).bounds, [0, 1, 2, 3, 4, 5, 6])
    # a tie that only the rule decides, at a real optimum: 3 ones of penalty 1 + SSE; 6 = 4 + 2 = 2 + 4
    pen = np.r_[0.0, np.ones(6)]
    assert np.array_equal(S.optimal(S.SSEPenalty(zeros, pen), lengths="power-of-two").bounds, [0, 2, 6])
    assert np.array_equal(S.optimal(S.SSEPenalty(zeros, pen), lengths="power-of-two",
                                    longest_on_ties=False).bounds, [0, 4, 6])


# ------------------------------------------------------------------ DAWA's results
class SeededStream:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def laplace_mechanism(self, values, sensitivity, epsilon, support=None):
        return np.asarray(values, dtype=float) + self.rng.laplace(0.0, sensitivity / epsilon, size=np.size(values))


def test_l1_cost_reproduces_dawa_partitions():
    """The engine with the L1-deviation cost and DAWA's cost transforms gives the cuts dawa's own DP
    gave (fixture recorded by ``tests/make_dawa_l1_fixture.py``), for the exact, power-of-two and
    tree variants, grouped units, shuffled orders, and both private calibrations: noisy-min (noise
    drawn batch by batch) and postprocess (deterministic costs on rounded noisy counts, with ties).
    Kills: a different batch order (noise drawn for other candidates), wrong batch sizes, a
    different Fenwick arithmetic, a different tie or comparison rule in any of the three modes."""
    fx = np.load(Path(__file__).resolve().parent / "fixtures" / "dawa_l1_partition.npz")
    checked = 0
    for key in fx.files:
        parts = key.split("|")
        if len(parts) != 7:
            continue
        i, calibration, variant, branching, penalty, eps, seed = parts
        order, bounds = fx[f"{i}|order"], fx[f"{i}|bounds"]
        eps, penalty = float(eps), float(penalty)
        if calibration == "noisy-min":
            stream, scale = SeededStream(int(seed)), 4.0 / eps
            x = fx[f"{i}|values"][order]
            fn = lambda d, m: stream.laplace_mechanism(d, scale, 1.0) + (2.0 + penalty * scale)
        else:   # dawa's DebiasedCosts: dev - c * scale (L - 1/L) + measure cost, c = 1
            x = fx[f"{i}|rounded"][order]
            fn = lambda d, m: d - 1.0 * ((1.0 / eps) * (m.astype(np.float64) - 1.0 / m.astype(np.float64))) \
                + (2.0 + penalty / eps)
        cost = S.L1Deviation(x).then(fn)
        if variant == "tree":
            got = S.tree(cost, bounds, branching=int(branching))
        else:
            got = S.optimal(cost, bounds, lengths="all" if variant == "exact" else "power-of-two")
        assert np.array_equal(got.bounds, fx[key]), key
        checked += 1
    assert checked == 144


def test_l1_batches_equal_the_direct_definition():
    """Rows, windows and tree nodes of the Fenwick-based deviation equal the O(m) definition.
    Kills: a window not removing its first unit, a Fenwick update with the wrong sign or weight."""
    x = RNG.poisson(5, 50).astype(float)
    w = RNG.random(50)
    units = unit_bounds(50, True)
    k = units.size - 1
    cost = S.L1Deviation(x, w)
    for a in range(k):
        ends = units[a + 1:]
        assert np.allclose(cost.rows_from(a, units), [l1_direct(x, w)(units[a], e) for e in ends])
    for length in (1, 2, 4, 8):
        got = cost.windows(length, units)
        assert np.allclose(got, [l1_direct(x, w)(units[a], units[a + length]) for a in range(k - length + 1)])
    starts, ends = units[:-1:3], np.r_[units[3:-1:3], units[-1]]
    assert np.allclose(cost.nodes(starts, ends), [l1_direct(x, w)(a, b) for a, b in zip(starts, ends)])


def _fenwick_row(x, units, a):
    cost = S.L1Deviation(x)
    out = np.empty(units.size - 1 - a)
    S.kernels.deviations_from(cost.values, cost.weights, cost.rank, cost.sorted_values, units, a, out)
    return out


@pytest.mark.parametrize("shape", ["ties-around-zero", "rounded-noise", "spikes", "all-equal", "negative", "one-unit"])
def test_l1_rows_by_deletion_equal_the_fenwick_route_bit_for_bit(shape):
    """Integer values with unit weights take the linked-list route (rows in pairs: row a shrunk
    from the right, row a + 1 grown back by the undo with unit a as an uncounted ghost); its costs
    must equal the Fenwick trees' bit for bit (DAWA's recorded releases depend on it) and the
    definition.  Kills: an undo in the wrong order or a missing relink (later rows see a corrupted
    list), the ghost still counted or a re-inserted value not counted (row a + 1 wrong), a pointer
    left on a vanished value, the count or sum at the pointer not updated on deletion or
    insertion, the set not losing units a and a + 1 after a pair, a walk that moves by positions instead of
    the wrong side of a tie with the mean is harmless (equal costs) and not a target here."""
    rng = np.random.default_rng(7)
    for trial in range(12):
        n = int(rng.integers(2, 60))
        x = {"ties-around-zero": rng.integers(-1, 2, n),
             "rounded-noise": np.round(rng.laplace(0.0, 3.0, n) + rng.integers(0, 40, n)),
             "spikes": rng.integers(0, 10 ** 9, n) * (rng.random(n) < 0.2),
             "all-equal": np.full(n, 4),
             "negative": -rng.poisson(3, n),
             "one-unit": rng.integers(0, 5, n)}[shape].astype(float)
        units = np.array([0, n]) if shape == "one-unit" else unit_bounds(n, trial % 2 == 0)
        cost = S.L1Deviation(x)
        for a in range(units.size - 1):
            got = cost.rows_from(a, units)
            assert np.array_equal(got, _fenwick_row(x, units, a)), (shape, trial, a)
            assert np.allclose(got, [l1_direct(x, np.ones(n))(units[a], e) for e in units[a + 1:]])
        assert cost._exact_sums


def test_l1_rows_asked_out_of_turn_restart_the_linked_list():
    """Rows asked in any order (exactly-k asks in turn, a user may not) and with other bounds
    still equal the Fenwick route.  Kills: a cursor that keeps going from a stale row or bounds."""
    x = np.round(RNG.laplace(0.0, 2.0, 40))
    units = unit_bounds(40, True)
    cost = S.L1Deviation(x)
    for a in (3, 0, 1, 2, 2, 7, 5):
        assert np.array_equal(cost.rows_from(a, units), _fenwick_row(x, units, a))
    other = np.arange(41)
    assert np.array_equal(cost.rows_from(4, other), _fenwick_row(x, other, 4))


def test_l1_rows_of_weighted_or_fractional_values_take_the_fenwick_route():
    """Kills: the linked-list route used where its sums are not exact (its bit-identity rests on
    integer sums)."""
    x = RNG.random(20) * 10
    cost = S.L1Deviation(x)
    cost.rows_from(0, np.arange(21))
    assert cost._exact_sums is False
    weighted = S.L1Deviation(np.arange(20.0), RNG.random(20))
    weighted.rows_from(0, np.arange(21))
    assert weighted._exact_sums is False and weighted._rows is None


# ------------------------------------------------------------------ bad input
def test_bad_input_is_named():
    """Kills: silently accepted malformed bounds, wrong-shaped penalties or user costs, unknown modes."""
    x = np.arange(5.0)
    cost = S.SSEPenalty.inverse_size(x, 1.0)
    with pytest.raises(InvalidParameter, match="bounds"):
        S.optimal(cost, [0, 2, 2, 5])
    with pytest.raises(InvalidParameter, match="bounds"):
        S.optimal(cost, [0, 2, 4])
    with pytest.raises(InvalidParameter, match="lengths"):
        S.optimal(cost, lengths="odd")
    with pytest.raises(InvalidParameter, match="penalty"):
        S.SSEPenalty(x, np.ones(3))
    with pytest.raises(InvalidParameter, match="one cost per group"):
        S.optimal(S.IntervalCost(lambda s, e: np.ones(2), 5))
    with pytest.raises(InvalidParameter, match="NaN"):
        S.optimal(S.IntervalCost(lambda s, e: np.full(s.shape, np.nan), 5))
    with pytest.raises(InvalidParameter, match="n="):
        S.optimal(lambda s, e: np.zeros(s.shape))
    with pytest.raises(InvalidParameter, match=r"\[1, 5\]"):
        S.k_groups(cost, [0, 2])
    with pytest.raises(InvalidParameter, match="power-of-two"):
        S.optimal(cost, longest_on_ties=False)
    with pytest.raises(InvalidParameter, match="branching"):
        S.tree(cost, branching=1)
    with pytest.raises(InvalidParameter, match="look-ahead"):
        S.greedy(S.L1Deviation(x), bound="lookahead")
    with pytest.raises(InvalidParameter, match="finite"):
        S.SSEPenalty([1.0, np.nan], np.zeros(3))
    assert np.array_equal(S.optimal(lambda s, e: (e - s) ** 2.0, n=4).bounds, [0, 1, 2, 3, 4])


def test_tree_costs_by_blocks_are_the_level_at_once(monkeypatch):
    """An SSE cost's tree level computed by blocks of nodes (memory) gives the same segmentation and cost.
    Kills: a block boundary that skips or repeats a node, blocks written at the wrong offset, the last
    partial block dropped."""
    from dphist.segmentation import search
    rng = np.random.default_rng(3)
    x = np.round(rng.laplace(0, 4, 1000) + np.repeat(rng.integers(0, 50, 10), 100))
    penalty = lambda sizes: 30.0 + 0.0 * sizes              # noqa: E731  (one value per size)
    whole = S.tree(S.SSEPenalty(x, penalty), branching=2)
    monkeypatch.setattr(search, "NODE_BLOCK", 7)            # 1000 leaves: 142 full blocks and a partial one
    blocked = S.tree(S.SSEPenalty(x, penalty), branching=2)
    assert np.array_equal(whole.bounds, blocked.bounds) and whole.cost == blocked.cost
    assert whole.bounds.size > 2


class _Offset:
    """A pure transform (declares ``thread_safe``) or, with ``pure=False``, one that counts its calls."""

    def __init__(self, pure):
        self.thread_safe, self.calls = pure, 0

    def __call__(self, costs, sizes):
        self.calls += 1
        return costs + 40.0


def test_tree_l1_costs_by_blocks_and_stateful_transforms_once_per_level(monkeypatch):
    """An L1 deviation under a pure transform gives the same segmentation by blocks of nodes; a transform
    that does not declare itself pure still sees each level in one call (its documented batch order).
    Kills: blocks of an L1 cost that skip or repeat a node, a stateful transform (noise per batch) called
    per block."""
    from dphist.segmentation import search
    rng = np.random.default_rng(4)
    x = np.round(rng.laplace(0, 4, 1000) + np.repeat(rng.integers(0, 50, 10), 100))
    whole = S.tree(S.L1Deviation(x).then(_Offset(True)), branching=2)
    monkeypatch.setattr(search, "NODE_BLOCK", 7)
    blocked = S.tree(S.L1Deviation(x).then(_Offset(True)), branching=2)
    assert np.array_equal(whole.bounds, blocked.bounds) and whole.cost == blocked.cost and whole.bounds.size > 2
    stateful = _Offset(False)
    S.tree(S.L1Deviation(x).then(stateful), branching=2)
    assert stateful.calls == 11                              # levels of 1000, 500, ..., 1 nodes
