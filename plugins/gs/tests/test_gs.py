"""Tests of the gs plugin (GS, reconstructed).  Each names the mutation it kills."""
import math

import numpy as np
import pytest

from dphist import InvalidParameter, make_algorithm, testing
from dphist.intervals import centred_prefix_sums
from dphist_gs import FixedWidthPartitioner
from dphist_gs.grouping import best_width, width_errors


def _brute(values, noise_each, correction):
    n = values.size
    out = [np.inf]
    for w in range(1, n + 1):
        total = 0.0
        for a in range(0, n, w):
            g = values[a:a + w]
            total += np.sum((g - g.mean()) ** 2) - correction * (g.size - 1) + noise_each / g.size
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize("correction", [0.0, 3.0])
def test_width_errors_match_the_definition(correction):
    """Kills: a last (shorter) group charged as a full one, the noise term 2/eps_2^2 not divided by
    the group size, or the correction applied per bin instead of per group."""
    rng = np.random.default_rng(0)
    x = np.sort(rng.poisson(6, 37).astype(float))[::-1]
    p, p2 = centred_prefix_sums(x)
    got = width_errors(p, p2, 8.0, correction)
    np.testing.assert_allclose(got[1:], _brute(x, 8.0, correction)[1:], rtol=1e-9, atol=1e-9)


def test_best_width_trades_smoothing_against_noise():
    """Kills: an argmin over the wrong axis or an off-by-one in w: flat data at low eps_2 takes
    one group, distinct well-separated values at high eps_2 stay single."""
    assert best_width(np.full(64, 5.0), eps_2=0.1) == 64
    assert best_width(np.arange(64, 0, -1) * 100.0, eps_2=10.0) == 1
    # two plateaus of 16: w = 16 is exact smoothing with 4x less noise than w = 4
    assert best_width(np.repeat([50.0, 10.0], 16), eps_2=1.0) == 16


def test_pruned_width_search_picks_the_argmin_of_every_total():
    """``_first_min_width`` (the search that stops a w once its partial total reaches the best so far) gives
    ``argmin(width_errors)`` exactly, ties to the smallest w.  Kills (each checked by hand): the groups' SSE not clipped at 0, the
    later w on ties (``<=``), the last shorter group's SSE left out of a finished total, and the pruned search
    taken with NoiseFirst's correction (negative terms).  A stop with a relative slack of 0.1% is not
    killed: no total here comes that close to the best."""
    from dphist_gs.grouping import _best_width, _centred_prefix_pairs, _first_min_width, _width_errors
    rng = np.random.default_rng(3)
    cases = [(np.sort(rng.laplace(0, 1, n) + rng.pareto(1.2, n) * 5)[::-1], eps) for n in (1, 2, 3, 17, 100, 1001)
             for eps in (0.1, 1.0, 10.0)]
    cases += [(np.full(40, 3.0), np.inf), (np.repeat([9.0, 1.0], 20), 1.0), (np.repeat([5.0, 4.0, 0.0], 7), 0.05)]
    pairs = [(_centred_prefix_pairs(np.array(x, dtype=float))[0], 2.0 / eps**2) for x, eps in cases]
    # prefix pairs of small integers (any pairs the search may be given) with a noise term of 1/2 to 4 per
    # group: totals of two widths equal bit for bit happen here (e.g. errors 15, 15.5, 15 for w = 1, 2, 3)
    for _ in range(3000):
        n = int(rng.integers(2, 8))
        pp = np.zeros((n + 1, 2))
        pp[1:, 0] = np.cumsum(rng.integers(-2, 3, n))
        pp[1:, 1] = np.cumsum(rng.integers(0, 9, n))
        pairs.append((pp, float(rng.choice([0.5, 1.0, 2.0, 4.0]))))
    for pp, noise_each in pairs:
        want = int(np.argmin(_width_errors(pp, noise_each, 0.0)[1:]) + 1)
        assert _first_min_width(pp, noise_each) == want, (pp, noise_each)
        eps = math.sqrt(2.0 / noise_each) if noise_each else np.inf
        assert _best_width(pp, eps, 0.0) == int(np.argmin(_width_errors(pp, 2.0 / eps**2, 0.0)[1:]) + 1)
        corrected = int(np.argmin(_width_errors(pp, 2.0 / eps**2, 0.5)[1:]) + 1)
        assert _best_width(pp, eps, 0.5) == corrected


def test_groups_are_consecutive_in_the_sorted_order():
    """Kills: groups cut in domain order instead of the noisy sort (the sort would be wasted)."""
    x = np.zeros(64)
    x[::8] = 1000.0                                        # 8 large bins scattered over the domain
    r = make_algorithm("GS", w=8).run(x, 100.0, seed=1)
    big = np.flatnonzero(x > 0)
    labels = r.partition.labels()
    assert len(set(labels[big])) == 1                       # the 8 large bins share one group


def test_smoothing_divides_the_noise():
    """Kills: Laplace scale 1/eps_2 on each bin instead of each group's sum (no variance reduction):
    on a flat histogram with w = 16 the per-bin error is about 2/(16^2 eps_2^2) x 16 / 16."""
    x = np.full(256, 20.0)
    pipe = make_algorithm("GS", w=16, ratio=0.5)
    errs = [np.mean((pipe.run(x, 1.0, seed=s).estimate - x) ** 2) for s in range(300)]
    predicted = 2 / (16 ** 2 * 0.5 ** 2)                    # Var(Lap(1/eps_2)/w) per bin
    assert abs(np.mean(errs) / predicted - 1) < 0.15


@pytest.mark.parametrize("make, message", [
    (lambda: FixedWidthPartitioner(w=0), "w"),
    (lambda: FixedWidthPartitioner(w=2.5), "w"),
    (lambda: FixedWidthPartitioner(corrected="no"), "corrected"),
    (lambda: make_algorithm("GS", ratio=0), "ratio"),
    (lambda: make_algorithm("GS", ratio=1), "ratio"),
    (lambda: make_algorithm("GS", ratio="half"), "ratio"),
])
def test_bad_parameters_are_named(make, message):
    """Kills: a missing check, or an error that does not name the parameter."""
    with pytest.raises(InvalidParameter, match=message):
        make()


def test_component_and_preset_conform():
    """Kills: a partitioner that spends, or a preset that leaves budget unspent (the conformance kit)."""
    testing.check_component(FixedWidthPartitioner)
    testing.check_algorithm("GS", epsilon=1.0, n=64)


def test_width_one_shortcut_only_when_the_search_returns_one():
    """``_width_one_wins`` (the partitioner's one pass that answers w = 1 without the prefix pairs) says yes
    only when the pruned search returns 1, and says it on the usual case (distinct values, high eps_2).
    Kills, each checked by hand: w = 1's noise terms left out of its total, the widest width (w = n)
    left out of the first groups' minimum (two values), the bound check dropped (running sums past 1e150)."""
    from dphist_gs.grouping import _FINITE_BOUND, _centred_prefix_pairs, _first_min_width, _width_one_wins
    rng = np.random.default_rng(4)
    cases = [(np.sort(rng.laplace(0, 1, n) + rng.pareto(1.2, n) * 5)[::-1], eps) for n in (1, 2, 3, 17, 300)
             for eps in (0.1, 1.0, 10.0, 100.0)]
    cases += [(np.array([5.0, 5.0]), 0.1), (np.array([5.0, 4.9]), 1.0), (np.array([3e151, 1e151, -1e151, -3e151]), 100.0),
              (np.arange(64, 0, -1) * 100.0, 10.0), (np.repeat([9.0, 1.0], 20), 1.0)]
    said = 0
    for x, eps in cases:
        noise_each = 2.0 / eps**2
        pp, bounded = _centred_prefix_pairs(x.copy())
        # through a shuffled order: x = noisy[order] (the partitioner reads H~ through the sorted order)
        order = np.random.default_rng(x.size).permutation(x.size)
        noisy = np.empty_like(x)
        noisy[order] = x
        if _width_one_wins(noisy, order, float(x.mean()), _FINITE_BOUND, noise_each):
            said += 1
            assert bounded and _first_min_width(pp, noise_each) == 1, (x, eps)
    assert said >= 8


@pytest.mark.parametrize("block", [128, 1 << 16])
def test_sorted_mean_is_the_mean_of_the_gathered_values(block, monkeypatch):
    """``sorted_mean(values, order)`` equals ``values[order].mean()`` bit for bit on sizes around numpy's
    pairwise blocks (8, 128) and splits, with runs summed at most ``block`` at a time, on values spread over
    twelve orders of magnitude (where the order of additions shows).  Kills: halves not rounded down to a
    multiple of 8, the runs summed by ``math.fsum`` or a running sum, the values read in domain order, the
    division done before the sum of the halves."""
    import dphist_gs.grouping as grouping
    monkeypatch.setattr(grouping, "_MEAN_BLOCK", block)
    rng = np.random.default_rng(9)
    for n in (1, 7, 8, 9, 127, 128, 129, 1000, 65536, 65537, 65543, 131085, 300007):
        values = rng.laplace(size=n) * rng.choice([1.0, 1e6, 1e-6], size=n)
        order = rng.permutation(n)
        assert grouping.sorted_mean(values, order) == values[order].mean(), n


@pytest.mark.parametrize("n", [1, 2, 7, 64, 1001])
def test_fixed_width_groups_are_the_merge_of_every_w_th_cut(n):
    """``_fixed_width`` (bounds built directly; w = 1 hands on the partition itself) gives the partition
    ``merge`` of the cuts 0, w, 2w, ..., n gives.  Kills: the last shorter group dropped or doubled
    (bounds past n), a width-1 partition other than the singletons."""
    from dphist import Partition
    from dphist_gs.grouping import _fixed_width
    bins = Partition.singletons(n, np.random.default_rng(n).permutation(n))
    for w in (1, 2, 3, 7, 64, n, n + 5):
        got = _fixed_width(bins, w)
        assert got == bins.merge(np.r_[np.arange(0, n, min(w, n)), n])
        got.validate()


def test_the_passes_through_the_order_refuse_an_index_outside_the_values():
    """The compiled passes read H~ through the order without numpy's bounds checks, so they check each index
    themselves.  Kills: the check dropped from ``_gather_into`` or ``_width_one_pass`` (a read outside the
    array, a mean or a decision made of whatever lies there)."""
    import dphist_gs.grouping as grouping
    values = np.arange(10.0)
    for bad in (10, -1, 1 << 40):
        order = np.arange(10)
        order[7] = bad
        with pytest.raises(IndexError, match="outside"):
            grouping.sorted_mean(values, order)
        with pytest.raises(IndexError, match="outside"):
            grouping._width_one_wins(values, order, 4.5, grouping._FINITE_BOUND, 2.0)
        order[0], order[7] = bad, 7     # the first index is read before the loop
        with pytest.raises(IndexError, match="outside"):
            grouping._width_one_wins(values, order, 4.5, grouping._FINITE_BOUND, 2.0)
