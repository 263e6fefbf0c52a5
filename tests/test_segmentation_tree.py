"""The tree mode's compiled routes (:mod:`dphist.segmentation._tree_kernels`) give numpy's numbers bit for bit.

Each test names the mutation it kills.  The numpy routes are the references: ``compiled_for`` patched to
False sends every cost through them (below ``COMPILED_MIN`` values, before numba is imported, they run).
"""
from __future__ import annotations

import numpy as np
import pytest

from dphist import InvalidParameter
from dphist import segmentation as S
from dphist.intervals import centred_prefix_sums, interval_sse
from dphist.segmentation import _tree_kernels as K
from dphist.segmentation import costs as C


def _numpy_routes(monkeypatch):
    from dphist.segmentation import search
    monkeypatch.setattr(C, "compiled_for", lambda size: False)
    monkeypatch.setattr(search, "compiled_for", lambda size: False)


def test_reduceat_sum_is_numpys_order():
    """``reduceat_sum`` equals ``numpy.add.reduceat`` of one range, plain and as |x - c|, on every length up
    to 300, around the 128-value blocks' splits and on long ranges, bit for bit.  Kills: a running sum in
    place of the eight (or of the first value plus the rest), the halves not rounded down to a multiple of
    8, the remainder added before the eight sums are combined, the first value taken into the pairwise part."""
    rng = np.random.default_rng(0)
    lengths = list(range(1, 301)) + [383, 384, 385, 1000, 4097, 70001]
    a = rng.standard_normal(70010) * 1e3
    for m in lengths:
        for lo in ((0, 5) if m <= 20 else (3,)):
            seg = a[lo:lo + m]
            assert K.reduceat_sum(a, lo, lo + m, 0.0, False) == np.add.reduceat(seg, [0])[0], m
            assert K.reduceat_sum(a, lo, lo + m, 1.7, True) == np.add.reduceat(np.abs(seg - 1.7), [0])[0], m


def test_l1_nodes_equal_the_numpy_route(monkeypatch):
    """``L1Deviation.nodes`` compiled equals its numpy route (gather, ``reduceat`` of values and deviations)
    on the ranges of every tree level, integers and non-integers, one-value ranges included.  Kills: the
    mean divided by the wrong size, a one-value range's deviation not 0, a range's last value dropped."""
    rng = np.random.default_rng(1)
    for x in (np.round(rng.laplace(0, 5, 4099) + 20), rng.standard_normal(4099) * 3):
        for span in (1, 3, 16, 256, 4099):
            s = np.arange(0, x.size, span, dtype=np.int64)
            e = np.minimum(s + span, x.size)
            got = S.L1Deviation(x).nodes(s, e)
            with monkeypatch.context() as m:
                _numpy_routes(m)
                want = S.L1Deviation(x).nodes(s, e)
            assert np.array_equal(got, want), span


def test_sse_prefix_sums_and_nodes_equal_the_numpy_route(monkeypatch):
    """``SSEPenalty``'s compiled prefix sums equal ``centred_prefix_sums``, and its compiled nodes (the
    level's penalty from a small table, or per node) equal ``interval_sse + penalty[sizes]``, for an
    elementwise penalty and a table.  Kills: the first prefix sum from 0 + x (a different zero sign),
    squares of the uncentred values, the table read at size instead of size - lo, the penalty added twice."""
    rng = np.random.default_rng(2)
    x = rng.laplace(0, 4, 5000) + 3.0
    p, p2 = centred_prefix_sums(x)
    cost = S.SSEPenalty(x, lambda m: 5.0 + 0.5 * np.sqrt(m))
    assert np.array_equal(cost.prefix, p) and np.array_equal(cost.prefix_sq, p2)

    def elementwise(m):
        return 7.0 - 0.25 * (np.asarray(m, dtype=float) - 1.0)
    elementwise.elementwise = True
    for penalty in (elementwise, np.r_[0.0, elementwise(np.arange(1, 5001))]):
        cost = S.SSEPenalty(x, penalty)
        for s, e in ((np.arange(0, 5000, 16), np.minimum(np.arange(16, 5016, 16), 5000)),
                     (np.array([0, 3, 10, 4000]), np.array([3, 10, 4000, 5000]))):   # sizes far apart: per node
            want = interval_sse(s, e, p, p2) + np.r_[0.0, elementwise(np.arange(1, 5001))][e - s]
            assert np.array_equal(cost.nodes(s, e), want)
    assert cost._penalty_fn is None and S.SSEPenalty(x, elementwise)._tables is None   # tables only when read


def test_elementwise_penalty_is_still_checked():
    """An elementwise penalty is evaluated on the sizes asked, and still refused when not finite or not one
    value per size (as the tables are at construction).  Kills: the lazy route skipping those checks."""
    def bad(m):
        return np.where(np.asarray(m) > 8, np.inf, 1.0)
    bad.elementwise = True

    def short(m):
        return np.ones(1)
    short.elementwise = True
    x = np.arange(40.0) % 7
    with pytest.raises(InvalidParameter, match="not finite"):
        S.tree(S.SSEPenalty(x, bad), branching=4)
    with pytest.raises(InvalidParameter, match="one value per size"):
        S.tree(S.SSEPenalty(x, short), branching=4)


def _offset(costs, sizes):
    return costs + 25.0


_offset.thread_safe = True        # pure: the tree computes its levels by blocks


@pytest.mark.parametrize("branching", [2, 3, 16])
def test_tree_equals_its_numpy_route(monkeypatch, branching):
    """The tree search with compiled costs, leaves folded block by block into their parents and group starts
    marked, equals the numpy route with the leaves stored whole (blocks of 7 nodes against whole levels), on
    SSE and L1 costs over positions and over uneven units.  Kills: a fold block that is not a multiple of
    the fan-out (a run split across blocks), the last partial run dropped, a start marked at the wrong level."""
    from dphist.segmentation import search
    rng = np.random.default_rng(branching)
    x = np.round(rng.laplace(0, 3, 2000) + np.repeat(rng.integers(0, 40, 20), 100))
    units = np.r_[0, np.sort(rng.choice(np.arange(1, 2000), 700, replace=False)), 2000]
    for bounds in (None, units):
        for make in (lambda: S.SSEPenalty(x, lambda m: 30.0 + 0.0 * m), lambda: S.L1Deviation(x).then(_offset)):
            with monkeypatch.context() as m:
                m.setattr(search, "NODE_BLOCK", 7)
                got = S.tree(make(), bounds, branching=branching)
            with monkeypatch.context() as m:
                _numpy_routes(m)
                m.setattr(search, "NODE_BLOCK", 1 << 30)
                want = S.tree(make(), bounds, branching=branching)
            assert np.array_equal(got.bounds, want.bounds) and got.cost == want.cost
            assert 2 < got.bounds.size < (units.size if bounds is not None else 2001)


def test_keep_prefix_sums_only():
    """A cost that dropped its values gives the same tree and refuses the look-ahead greedy, which needs them.
    Kills: prefix sums dropped with the values, the greedy reading None."""
    x = np.round(np.random.default_rng(5).laplace(0, 3, 300) + 10)
    pen = lambda m: 12.0 + 0.0 * m                                   # noqa: E731
    cost = S.SSEPenalty(x, pen)
    cost.keep_prefix_sums_only()
    assert cost.values is None
    want = S.tree(S.SSEPenalty(x, pen), branching=4)
    got = S.tree(cost, branching=4)
    assert np.array_equal(got.bounds, want.bounds) and got.cost == want.cost
    with pytest.raises(InvalidParameter, match="look-ahead"):
        S.greedy(cost, bound="lookahead")


def _marked_starts(takes, k, branching):
    """The tree's bounds as its numpy route marks them: level by level from the root, a flag per node."""
    is_start = np.zeros(k + 1, dtype=bool)
    is_start[k] = True
    active = np.ones(1, dtype=bool)
    for h in range(len(takes) - 1, -1, -1):
        chosen = active if takes[h] is None else active & takes[h]
        is_start[np.flatnonzero(chosen) * branching ** h] = True
        if h:
            active = np.repeat(active & ~takes[h], branching)[:-(-k // branching ** (h - 1))]
    return np.flatnonzero(is_start)


@pytest.mark.parametrize("branching", [2, 3, 16])
def test_traced_starts_equal_the_marks(branching):
    """The compiled walk from the root gives the numpy route's marked bounds for random flags at every level,
    short last nodes included.  Kills: children taken in the wrong order (bounds out of order), a leaf range
    past the last leaf, a node's start at the wrong level's span, the count pass and the fill pass apart."""
    from dphist.segmentation.search import _traced_starts
    rng = np.random.default_rng(branching)
    for k in (2, branching, branching + 1, branching ** 2 - 1, branching ** 3 + 5, 2000):
        for density in (0.0, 0.3, 0.9, 1.0):
            takes, size = [None], k
            while size > 1:
                size = -(-size // branching)
                takes.append(rng.random(size) < density)
            got = _traced_starts(takes, k, branching)
            assert got.dtype == np.int64 and np.array_equal(got, _marked_starts(takes, k, branching)), (k, density)


@pytest.mark.parametrize("branching", [2, 3, 16])
def test_fused_leaves_equal_the_stored_prefix_sums(branching):
    """An SSE cost over positions that still holds its values (the leaves in one pass, the levels above read
    from the sums kept at their nodes) gives the tree, the cost and every level's node costs of the same cost
    with its prefix sums stored whole, on lengths around multiples of the fan-out and with the penalty as a
    function of the sizes asked (elementwise) and as a table.  Kills: the last partial run's sums not those at
    the end, the first running sum as 0 + x, a node's end read one kept sum off, the leaves' penalty of
    another size, the leaves' runs summed in another order."""
    from dphist.segmentation.search import _AlignedSSE, _fused_leaves, _node_costs
    rng = np.random.default_rng(10 + branching)

    def elementwise(m):
        return 9.0 - 0.5 * (np.asarray(m, dtype=float) - 1.0)
    elementwise.elementwise = True
    for n in (2, branching, branching + 1, branching ** 3 - 1, branching ** 3, 4099):
        x = np.round(rng.laplace(0, 3, n) + np.repeat(rng.integers(0, 40, -(-n // 50)), 50)[:n]) + 0.25
        for penalty in (elementwise, np.r_[0.0, 7.0 + np.sqrt(np.arange(1, n + 1))]):
            stored = S.SSEPenalty(x.copy(), penalty)
            stored.keep_prefix_sums_only()
            fused = _fused_leaves(S.SSEPenalty(x.copy(), penalty), None, branching)
            assert fused is not None
            folded, aligned = fused
            assert isinstance(aligned, _AlignedSSE)
            assert np.array_equal(folded, _node_costs(stored, None, 1, n, fold=branching))
            span = branching
            while span < n * branching:
                assert np.array_equal(_node_costs(aligned, None, span, n), _node_costs(stored, None, span, n))
                span *= branching
            got = S.tree(S.SSEPenalty(x.copy(), penalty), branching=branching)
            want = S.tree(stored, branching=branching)
            assert np.array_equal(got.bounds, want.bounds) and got.cost == want.cost


def test_fused_leaves_only_where_they_apply(monkeypatch):
    """The one-pass leaves are taken only by an SSE cost over positions that holds its values, on the compiled
    route; units, an L1 cost, a cost with its prefix sums made and the numpy route take the generic route (the
    one-pass loop made to fail shows which).  Kills: the one-pass leaves over units (positions read as unit
    indices), on a cost whose values are gone, or on the numpy route."""
    from dphist.segmentation import search

    def fails(*args):
        raise AssertionError("the one-pass leaves were taken")
    x = np.round(np.random.default_rng(3).laplace(0, 3, 500) + 10)
    pen = lambda m: 12.0 + 0.0 * m                                   # noqa: E731
    units = np.r_[0, np.arange(3, 500, 3), 500]
    made = S.SSEPenalty(x, pen)
    made.keep_prefix_sums_only()
    want = {"units": S.tree(S.SSEPenalty(x, pen), units, branching=4), "made": S.tree(made, branching=4)}
    with monkeypatch.context() as m:
        m.setattr(K, "sse_leaves", fails)
        assert np.array_equal(S.tree(S.SSEPenalty(x, pen), units, branching=4).bounds, want["units"].bounds)
        assert np.array_equal(S.tree(made, branching=4).bounds, want["made"].bounds)
        S.tree(S.L1Deviation(x), branching=4)
        _numpy_routes(m)
        assert np.array_equal(S.tree(S.SSEPenalty(x, pen), branching=4).bounds, want["made"].bounds)
        m.undo()
    with monkeypatch.context() as m:
        m.setattr(K, "sse_leaves", fails)
        with pytest.raises(AssertionError, match="one-pass"):
            S.tree(S.SSEPenalty(x, pen), branching=4)
