"""Tests of dphist-kellaris (Kellaris, Papadopoulos, Papadias, TKDE).  Each names the mutation it kills."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import dphist
from dphist import InvalidParameter, Partition, Partitioner, Pipeline
from dphist import workloads as wl
from dphist.testing import check_component

from dphist_kellaris import (TABLE_1, PrunedTreeFinalizer, S2OnInitialPartitioner, S2Partitioner, parse_label,
                             s2_cost, s2_grouping, scheme)
from dphist_kellaris.pruned_tree import NOTE, root_levels, tree_height


# ----------------------------------------------------------------------------------------- helpers
def _sse(v):
    return float(np.sum((v - v.mean()) ** 2))


def _segmentations(n):
    for mask in itertools.product((False, True), repeat=n - 1):
        yield [0] + [i + 1 for i, cut in enumerate(mask) if cut] + [n]


def _brute_force(values, eps_1, eps_2, correction, candidates):
    best, arg = math.inf, None
    for cuts in candidates:
        total = 0.0
        for a, b in zip(cuts[:-1], cuts[1:]):
            total += _sse(values[a:b]) + 2.0 / eps_2 ** 2 - (2.0 * (b - a - 1) / eps_1 ** 2 if correction else 0.0)
        if total < best - 1e-9:
            best, arg = total, cuts
    return arg


def _tree_segmentations(lo, hi, n, branching, span):
    """Every segmentation of [lo, hi) (a node of width ``span``) into full-subtree groups."""
    yield [lo, hi]
    if span == 1:
        return
    child = span // branching
    kids = [(a, min(a + child, n)) for a in range(lo, hi, child)]
    for combo in itertools.product(*[list(_tree_segmentations(a, b, n, branching, child)) for a, b in kids]):
        cuts = [lo]
        for seg in combo:
            cuts.extend(seg[1:])
        yield cuts


# ------------------------------------------------------------------------------------------ S_2
@pytest.mark.parametrize("correction", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_s2_equals_brute_force(correction, seed):
    """S_2's O(N^2) DP returns the least-cost grouping of Eq. (2) over all 2^(n-1) groupings.
    Kills: a search over too few candidates (e.g. power-of-two runs only), a wrong argmin or trace-back,
    the correction applied when disabled; the cost itself is pinned by the next test."""
    rng = np.random.default_rng(seed)
    values = np.repeat(rng.integers(0, 30, 4), rng.integers(1, 4, 4)).astype(float)[:9]
    values += rng.laplace(0, 2.0, values.size)
    eps_1, eps_2 = 0.8, 0.9
    got = s2_grouping(values, eps_1, eps_2, mode="optimal", correction=correction)
    assert list(got) == _brute_force(values, eps_1, eps_2, correction, _segmentations(values.size))


@pytest.mark.parametrize("correction", [True, False])
def test_s2_group_cost_is_eq_2_with_the_bias_correction(correction):
    """Every candidate group's cost is SSE + 2/eps_2^2 - 2(|g| - 1)/eps_1^2 (the last term only with the
    correction), checked on all 45 groups of 9 values.  Kills: any change of the SSE, the publishing term
    or the bias (e.g. 1/eps_1^2 instead of 2/eps_1^2, |g| instead of |g| - 1)."""
    values = np.random.default_rng(5).normal(10, 4, 9)
    eps_1, eps_2 = 0.4, 0.7
    starts, ends = zip(*[(a, b) for a in range(9) for b in range(a + 1, 10)])
    got = s2_cost(values, eps_1, eps_2, correction).intervals(np.array(starts), np.array(ends))
    want = [_sse(values[a:b]) + 2 / eps_2 ** 2 - (2 * (b - a - 1) / eps_1 ** 2 if correction else 0.0)
            for a, b in zip(starts, ends)]
    assert np.allclose(got, want, rtol=1e-10, atol=1e-9)


def test_s2_correction_changes_the_grouping():
    """On this input the corrected and uncorrected optima differ (so the brute-force test above
    distinguishes them).  Kills: a correction that is a no-op."""
    values = np.array([3.0, 5.5, 1.0, 4.0, 2.5, 6.0, 0.5, 3.5])
    a = s2_grouping(values, 0.5, 1.0, correction=True)
    b = s2_grouping(values, 0.5, 1.0, correction=False)
    assert list(a) != list(b)
    assert len(a) < len(b)   # the correction removes the bias towards small groups (Section 5.1)


@pytest.mark.parametrize("correction", [True, False])
@pytest.mark.parametrize("n", [9, 12])
def test_s2_tree_mode_equals_brute_force_over_full_subtrees(correction, n):
    """Tree mode = the least-cost grouping among groupings into full subtrees (Section 6).
    Kills: candidate groups that are not tree nodes, or a child/parent comparison turned around."""
    rng = np.random.default_rng(n)
    values = rng.integers(0, 6, n).astype(float) * 3 + rng.laplace(0, 1.0, n)
    branching = 3
    span = branching ** tree_height(n, branching)
    got = s2_grouping(values, 0.7, 0.6, mode="tree", branching=branching, correction=correction)
    want = _brute_force(values, 0.7, 0.6, correction, _tree_segmentations(0, n, n, branching, span))
    assert list(got) == want


# ---------------------------------------------------------------------------- hierarchical smoothing
@pytest.mark.parametrize("label", ["S1+H", "S2+H"])
@pytest.mark.parametrize("n", [300, 4096])
def test_hierarchical_smoothing_forms_only_full_subtree_groups(label, n):
    """Every group of S_1 + H and S_2 + H is the leaf set of a node of the 16-ary tree, and some group
    is larger than one bin.  Kills: tree mode replaced by the all-runs DP, a misaligned tree."""
    x = np.repeat(np.arange(n // 20 + 1) % 5 * 40, 20)[:n]
    r = dphist.make_algorithm(TABLE_1[label]).run(x, 1.0, seed=2)
    b = r.partition.bounds
    levels = root_levels(b, n, 16)       # raises if a group is no node
    for (s, e), h in zip(zip(b[:-1], b[1:]), levels):
        assert s % 16 ** h == 0 and e == min(s + 16 ** h, n)
    assert levels.max() >= 1


class FixedGroups(Partitioner):
    """Test partitioner: merges the bins at the given cut points (public, spends nothing)."""

    name = "test.fixed-groups"

    def __init__(self, cuts=(0,)):
        self.cuts = cuts

    def partition(self, bins, ctx):
        return bins.merge(np.asarray(self.cuts))


@pytest.mark.parametrize("average_pruned", [True, False])
@pytest.mark.parametrize("inference", [True, False])
def test_pruned_nodes_sum_to_the_group_root(average_pruned, inference):
    """At every level under a group root, the pruned nodes' values sum to the group root's estimate
    and are spread evenly.  Kills: spreading a measurement other than the group root's, uneven shares."""
    n, cuts = 64, [0, 16, 17, 18, 19, 20, 24, 28, 32, 48, 64]   # fan-out 4: groups at levels 2, 0 (x4), 1 (x3), 2, 2
    pipe = Pipeline(None, None, FixedGroups(cuts), PrunedTreeFinalizer(4, average_pruned, inference), (0, 0, 1))
    x = np.arange(n) % 7 * 3
    r = pipe.run(x, 1.0, seed=5)
    note = r.notes[NOTE]
    est = r.estimate
    b = np.asarray(cuts)
    roots = root_levels(b, n, 4)
    assert list(roots) == [2, 0, 0, 0, 0, 1, 1, 1, 2, 2]
    for (s, e), h in zip(zip(b[:-1], b[1:]), roots):
        total = est[s:e].sum()
        for level in range(h):
            width = 4 ** level
            nodes = est[s:e].reshape(-1, width).sum(axis=1)
            assert math.isclose(nodes.sum(), total, rel_tol=1e-12, abs_tol=1e-9)
            assert np.allclose(nodes, total / nodes.size)
    if note is not None:
        assert np.allclose(np.add.reduceat(est, b[:-1]), note["group_totals"])


def test_root_average_uses_every_level_estimate():
    """With the optimisation and no inference, a group root at level r is the mean of r + 1 noisy
    estimates, so its variance is 1/(r + 1) of one node's (paper: 3^2/(2 eps^2) -> 3^2/(4 eps^2)).
    Kills: averaging over the wrong number of levels, or not averaging.  Power: here the group's root is
    at level 1, so either mutation publishes one node's estimate and doubles the variance (+100%).  With
    1,000 seeded runs the sample variance of a Laplace draw (kurtosis 6) has a relative s.d. of
    sqrt(5 / 1000) = 7.1%: the 20% tolerance is 2.8 s.d. from the truth and 11 s.d. from a mutation."""
    n, cuts = 4, [0, 1, 2, 4]            # Figure 1: leaves b1, b2 and the group {b3, b4}
    x = np.array([5, 9, 2, 4])
    out = {}
    for avg in (False, True):
        pipe = Pipeline(None, None, FixedGroups(cuts), PrunedTreeFinalizer(2, avg, False), (0, 0, 1))
        est = np.array([pipe.run(x, 1.0, seed=s).estimate[2] for s in range(1000)])
        out[avg] = np.var(est - 3.0)
    eps_2 = 1.0
    assert abs(out[False] / (9 / (2 * eps_2 ** 2)) - 1) < 0.2, out
    assert abs(out[True] / (9 / (4 * eps_2 ** 2)) - 1) < 0.2, out


def test_pruned_tree_with_singletons_is_h():
    """Without groups, the pruned tree is the plain 16-ary tree: it equals boost.hierarchical(16) on the
    same seed up to floating point (both measure every level with eps/levels and run least squares).
    Kills: a per-level budget other than eps/(T + 1), an unmeasured root, a broken inference pass."""
    x = np.random.default_rng(0).integers(0, 50, 300)
    a = Pipeline(None, None, "singleton", PrunedTreeFinalizer(16), (0, 0, 1)).run(x, 0.5, seed=9).estimate
    b = dphist.make_algorithm(TABLE_1["H"]).run(x, 0.5, seed=9).estimate
    assert np.allclose(a, b, atol=1e-8)


# --------------------------------------------------------------------------------------- presets
_SHARES = {"S1": (0, .25, .75), "S~": (0, .25, .75), "S2": (0, .25, .75),
           "O+S1": (.325, .325, .35), "O+S~": (.325, .325, .35), "O+S2": (.65, 0, .35),
           "H": (0, 0, 1)}


@pytest.mark.parametrize("label", sorted(TABLE_1))
def test_every_preset_spends_its_documented_split(label):
    """The ledger sums to eps and each stage is charged the split of Section 7.1 (module docstring).
    Kills: a wrong split (e.g. 0.75/0.25 swapped), an O + S_1 charging ordering twice."""
    shares = _SHARES.get(label, (0, .25, .75))
    x = np.random.default_rng(1).integers(0, 40, 96)
    r = dphist.make_algorithm(TABLE_1[label]).run(x, 0.8, seed=1)
    assert math.isclose(r.ledger.total, 0.8, rel_tol=1e-9)
    by_stage = r.ledger.by_stage()
    for stage, share in zip(("initializer", "partitioner", "finalizer"), shares):
        assert math.isclose(by_stage.get(stage, 0.0), 0.8 * share, rel_tol=1e-9, abs_tol=1e-12), (stage, by_stage)


def test_table_1_is_complete_and_unique():
    """15 labels, 15 distinct registered names, none another plugin's.  Kills: a missing scheme, a
    name collision."""
    assert len(TABLE_1) == 15 and len(set(TABLE_1.values())) == 15
    for name in TABLE_1.values():
        factory = dphist.registry.default_registry.get("algorithm", name)
        assert factory.__module__.startswith("dphist_kellaris")


def test_pmm_range_answers_are_differences_of_two_prefix_estimates():
    """PMM is GreedyH with the prefix workload (MM: all ranges), and every range answer of a PMM
    release is s^[hi] - s^[lo - 1] of its noisy prefix sums (Section 5.2).  Kills: PMM and MM
    swapped, a PMM that answers ranges other than through its prefix sums."""
    assert scheme("S1+PMM").finalizer.get_params()["workload"] == "prefix"
    assert scheme("S1+MM").finalizer.get_params()["workload"] == "all-ranges"
    x = np.random.default_rng(2).integers(0, 40, 50)
    est = dphist.make_algorithm(TABLE_1["S1+PMM"]).run(x, 1.0, seed=3).estimate
    prefix = np.r_[0.0, np.cumsum(est)]
    assert np.allclose(wl.prefix(50).answer(est), prefix[1:])
    ranges = wl.all_ranges(50)
    assert np.allclose(ranges.answer(est), prefix[ranges.hi] - prefix[ranges.lo])


# ------------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("label", ["O+S1+PMM", "O+S~+MM", "O+S2+H", "O+H", "O+S1+H"])
def test_ordering_with_fixed_queries_or_hierarchy_is_refused(label):
    """Kills: a builder that silently sorts before MM / PMM / H."""
    with pytest.raises(InvalidParameter, match="ordering"):
        parse_label(label)


def test_pruned_tree_refuses_sorted_bins_and_non_subtree_groups():
    """Kills: a pruned tree built over a permuted order, or over groups that are no tree nodes."""
    with pytest.raises(InvalidParameter, match="domain order|sorter"):
        Pipeline("laplace", "noisy-count", "singleton", PrunedTreeFinalizer(), (0.5, 0, 0.5))
    with pytest.raises(InvalidParameter, match="full subtree"):
        Pipeline(None, None, FixedGroups([0, 3, 16]), PrunedTreeFinalizer(16), (0, 0, 1)).run(np.ones(16), 1.0, seed=1)


@pytest.mark.parametrize("bad", [1, 0, -3, 2.5, True, "16"])
def test_fanout_below_two_is_refused(bad):
    """Kills: a tree of fan-out < 2 (an infinite loop or a division by zero)."""
    with pytest.raises(InvalidParameter, match="branching"):
        PrunedTreeFinalizer(bad)
    with pytest.raises(InvalidParameter, match="branching"):
        S2Partitioner("tree", bad)


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.2, float("nan"), "a", True])
def test_shares_outside_the_open_unit_interval_are_refused(bad):
    """Kills: a ratio of 0 or 1 that leaves a stage without budget, or a negative one."""
    with pytest.raises(InvalidParameter, match="ratio"):
        dphist.make_algorithm(TABLE_1["S2+H"], ratio=bad)
    with pytest.raises(InvalidParameter, match="order_share"):
        dphist.make_algorithm(TABLE_1["O+S1"], order_share=bad)


def test_bad_component_parameters_are_refused():
    """Kills: silently accepting an unknown mode or a non-boolean flag."""
    with pytest.raises(InvalidParameter, match="mode"):
        S2Partitioner("exact")
    with pytest.raises(InvalidParameter, match="correction"):
        S2Partitioner(correction="yes")
    with pytest.raises(InvalidParameter, match="measure_epsilon"):
        S2Partitioner(measure_epsilon=0)
    with pytest.raises(InvalidParameter, match="average_pruned"):
        PrunedTreeFinalizer(average_pruned=1)
    with pytest.raises(InvalidParameter, match="unknown scheme"):
        parse_label("S3+H")


@pytest.mark.parametrize("cls", [S2Partitioner, S2OnInitialPartitioner, PrunedTreeFinalizer])
def test_components_pass_the_conformance_kit(cls):
    """dphist.testing: ledger, reproducibility, release mode.  Kills: any spending beyond the share."""
    check_component(cls)


@pytest.mark.parametrize("average_pruned", [True, False])
def test_inference_is_the_least_squares_estimate_of_the_group_totals(average_pruned):
    """The two-pass inference over the pruned tree equals ordinary least squares (all measurements have one
    variance) on the group totals, computed densely with numpy.  Kills: a wrong residual share, a single-child
    chain mishandled, an unmeasured interval used as if measured."""
    n, cuts = 64, [0, 16, 17, 18, 19, 20, 24, 28, 32, 48, 64]
    pipe = Pipeline(None, None, FixedGroups(cuts), PrunedTreeFinalizer(4, average_pruned, True), (0, 0, 1))
    r = pipe.run(np.arange(n) % 5 * 4, 1.0, seed=11)
    note = r.notes[NOTE]
    b = np.asarray(cuts)
    rows, ys = [], []
    for (level_cuts, measured), y in zip(note["levels"], note["values"]):
        for s, e, m, v in zip(level_cuts[:-1], level_cuts[1:], measured, y):
            if m:
                rows.append((b[:-1] >= s) & (b[1:] <= e))
                ys.append(v)
    A = np.array(rows, dtype=float)
    want = np.linalg.lstsq(A, np.array(ys), rcond=None)[0]
    assert np.allclose(note["group_totals"], want, atol=1e-8)
    assert np.allclose(np.add.reduceat(r.estimate, b[:-1]), want, atol=1e-8)


_WIRING = {   # label -> (sorter, partitioner (name, key params), finalizer (name, key params))
    "S1": (None, ("dawa.l1", {"variant": "exact"}), ("group-mean", {})),
    "S~": (None, ("dawa.l1", {"variant": "power-of-two"}), ("group-mean", {})),
    "S2": (None, ("kellaris.s2", {"mode": "optimal", "correction": True}), ("group-mean", {})),
    "O+S1": ("noisy-count", ("dawa.l1", {"variant": "exact"}), ("group-mean", {})),
    "O+S~": ("noisy-count", ("dawa.l1", {"variant": "power-of-two"}), ("group-mean", {})),
    "O+S2": ("noisy-count", ("kellaris.s2-initial", {"mode": "optimal"}), ("group-mean", {})),
    "S1+MM": (None, ("dawa.l1", {"variant": "exact"}), ("dawa.greedy-h", {"workload": "all-ranges"})),
    "S~+MM": (None, ("dawa.l1", {"variant": "power-of-two"}), ("dawa.greedy-h", {"workload": "all-ranges"})),
    "S2+MM": (None, ("kellaris.s2", {"mode": "optimal"}), ("dawa.greedy-h", {"workload": "all-ranges"})),
    "S1+PMM": (None, ("dawa.l1", {"variant": "exact"}), ("dawa.greedy-h", {"workload": "prefix"})),
    "S~+PMM": (None, ("dawa.l1", {"variant": "power-of-two"}), ("dawa.greedy-h", {"workload": "prefix"})),
    "S2+PMM": (None, ("kellaris.s2", {"mode": "optimal"}), ("dawa.greedy-h", {"workload": "prefix"})),
    "H": (None, ("singleton", {}), ("boost.hierarchical", {"branching": 16, "inference": True})),
    "S1+H": (None, ("dawa.l1", {"variant": "tree", "branching": 16}), ("kellaris.pruned-tree", {"branching": 16})),
    "S2+H": (None, ("kellaris.s2", {"mode": "tree", "branching": 16}), ("kellaris.pruned-tree", {"branching": 16})),
}


@pytest.mark.parametrize("label", sorted(TABLE_1))
def test_each_preset_is_wired_as_its_table_1_label(label):
    """The registered preset has the components of its label (Section 4 / module docstring), and equals
    scheme(label).  Kills: S~ wired to the exact grouping, MM and PMM swapped, a tree of another fan-out,
    ordering missing from an O scheme, a preset registered under the wrong label."""
    spec = dphist.make_algorithm(TABLE_1[label]).spec
    sorter, (part, part_params), (fin, fin_params) = _WIRING[label]
    assert (spec["sorter"] or {}).get("name") == sorter
    assert spec["partitioner"]["name"] == part
    assert spec["finalizer"]["name"] == fin
    for key, value in part_params.items():
        assert spec["partitioner"]["params"][key] == value, (label, key)
    for key, value in fin_params.items():
        assert spec["finalizer"]["params"][key] == value, (label, key)
    built = scheme(label).spec
    assert {k: v for k, v in spec.items() if k != "name"} == {k: v for k, v in built.items() if k != "name"}


# ------------------------------------------------------------ the per-node publishing cost (S2+H)
def test_tree_publish_cost_is_the_pruned_group_roots_variance():
    """2 (T+1)^2 / ((r+1) eps_2^2), r = ceil(log_16 |g|), minus the bias.  Kills: r off by one (a
    floor of the logarithm), the (r+1) averaging left out, (T+1) not squared, the flat term kept."""
    from dphist_kellaris.s2 import s2_penalty
    eps_1, eps_2, levels = 0.5, 2.0, 4
    sizes = np.array([1, 2, 16, 17, 256, 300])
    r = np.array([0, 1, 1, 2, 2, 3])
    expected = 2 * levels ** 2 / ((r + 1) * eps_2 ** 2) - 2 * (sizes - 1) / eps_1 ** 2
    assert np.allclose(s2_penalty(eps_1, eps_2, True, levels, 16)(sizes), expected)
    assert np.allclose(s2_penalty(eps_1, eps_2, False, None)(sizes), 2 / eps_2 ** 2)


def test_tree_publish_cost_merges_more_and_is_reachable_from_the_preset():
    """Kills: the preset's publish_cost not reaching the grouping, the tree levels counted over the
    wrong domain (no change in the grouping), or the default changed from the paper's flat Eq. (2)."""
    x = np.tile([0, 0, 3, 40, 0, 1, 0, 0], 128)            # 1,024 bins, T + 1 = 4 levels of 16
    flat = dphist.make_algorithm("kellaris.S2+H")
    per_node = dphist.make_algorithm("kellaris.S2+H", publish_cost="tree")
    assert flat.partitioner.publish_cost == "flat" and per_node.partitioner.publish_cost == "tree"
    g_flat = [flat.run(x, 0.1, seed=s).partition.n_groups for s in range(3)]
    g_tree = [per_node.run(x, 0.1, seed=s).partition.n_groups for s in range(3)]
    assert max(g_tree) < min(g_flat)
    noisy = np.random.default_rng(0).laplace(0, 10, 1024)
    same = s2_grouping(noisy, 0.025, 0.075, mode="tree", branching=16)
    assert np.array_equal(same, s2_grouping(noisy, 0.025, 0.075, mode="tree", branching=16, publish_cost="flat"))


@pytest.mark.parametrize("make", [
    lambda: S2Partitioner("optimal", publish_cost="tree"),
    lambda: S2Partitioner("tree", publish_cost="nodes"),
    lambda: scheme("S2", publish_cost="tree"),
    lambda: dphist.make_algorithm("kellaris.S2+H", publish_cost="per-node"),
])
def test_publish_cost_outside_s2_tree_mode_is_refused(make):
    """Kills: a per-node cost silently accepted where there is no pruned tree (S_2 alone, optimal
    mode), or an unknown value accepted."""
    with pytest.raises(InvalidParameter, match="publish_cost"):
        make()


# ------------------------------------------------------------------ compiled routes of the pruned tree
def _random_tree_groups(rng, n, branching):
    """Cut points of a random grouping of ``n`` bins into full subtrees (a node kept or split at random)."""
    from dphist_kellaris.pruned_tree import tree_height
    cuts, stack = [], [(0, branching ** tree_height(n, branching))]
    while stack:
        lo, span = stack.pop()
        if lo >= n:
            continue
        if span == 1 or rng.random() < 0.3:
            cuts.append(lo)
        else:
            child = span // branching
            stack.extend((lo + j * child, child) for j in range(branching - 1, -1, -1))
    return np.array(sorted(cuts) + [n], dtype=np.int64)


@pytest.mark.parametrize("n,branching", [(1000, 4), (4099, 16), (257, 2)])
def test_pruned_tree_compiled_route_equals_numpy(monkeypatch, n, branching):
    """The compiled root levels, level cuts and least squares (``_pruned_jit``) equal the numpy route on random
    groupings of padded trees, with and without the pruned sums measured, bit for bit; both refuse a group
    that is no tree node.  Kills: a child given to the wrong parent (the walk over the cuts), the only-child
    share rule dropped, an unmeasured interval's precision or value counted, the root-level search stopped
    early at a bound that still matches higher up (a last group shorter than its node), a spread that
    multiplies by the reciprocal size or writes a group one bin off."""
    import dphist_kellaris.pruned_tree as pt
    rng = np.random.default_rng(n)
    for trial in range(3):
        bounds = _random_tree_groups(rng, n, branching)
        for average in (True, False):
            levels, roots = pt.pruned_tree_intervals(bounds, n, branching, average)
            values = [rng.laplace(0, 3, cuts.size - 1) for cuts, _ in levels]
            got = pt.least_squares_tree(levels, values, 8.0, compiled=True)
            with monkeypatch.context() as m:
                m.setattr(pt, "compiled_for", lambda size: False)
                levels_np, roots_np = pt.pruned_tree_intervals(bounds, n, branching, average)
                want = pt.least_squares_tree(levels_np, values, 8.0, compiled=False)
            assert np.array_equal(roots, roots_np)
            assert all(np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) for a, b in zip(levels, levels_np))
            assert all(np.array_equal(a, b) for a, b in zip(got, want))
            from dphist_kellaris._pruned_jit import spread_in_order      # the finalizer's spread of the totals
            assert np.array_equal(spread_in_order(bounds, got[0], np.empty(n)),
                                  Partition.singletons(n).merge(bounds).spread(got[0]))
    bad = np.array([0, 3, n], dtype=np.int64)             # [0, 3) is no node of a tree of fan-out >= 2
    for compiled in (True, False):
        with monkeypatch.context() as m:
            m.setattr(pt, "compiled_for", lambda size, c=compiled: c)
            with pytest.raises(InvalidParameter, match=r"group \[0, 3\) is not"):
                pt.root_levels(bad, n, branching)


@pytest.mark.parametrize("n,branching", [(1000, 4), (4099, 16), (257, 2)])
def test_pruned_levels_pick_each_level_from_the_one_below(n, branching):
    """Each level's cuts, picked from the level below, are the bounds at that level by definition
    (:func:`level_intervals`), and the indices the finalizer merges the groups at are where those cuts are
    among the bounds.  Kills: a level's cuts picked with another level's flags, the indices not picked with
    the cuts, a level's indices off by one group."""
    import dphist_kellaris.pruned_tree as pt
    rng = np.random.default_rng(n + branching)
    for trial in range(4):
        bounds = _random_tree_groups(rng, n, branching)
        levels, _, index = pt._pruned_levels(bounds, n, branching, True)
        assert index[0] is None and np.array_equal(levels[0][0], bounds)
        for h in range(1, len(levels)):
            cuts = levels[h][0]
            assert np.array_equal(cuts, pt.level_intervals(bounds, n, branching, h))
            assert np.array_equal(index[h], np.searchsorted(bounds, cuts))
