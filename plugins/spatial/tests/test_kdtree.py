"""The kd-tree and hybrid tree: the box tree, the private medians (with broken twins the checks reject),
the budget and its ledger, the kit, the audit on 2-D pairs, bad input.  Each test names the mutation it kills."""
import numpy as np
import pytest

from dphist import BudgetExceeded, InvalidParameter, make_algorithm, testing
from dphist.kernel import PrivateKernel, SeededLaplace
from dphist_spatial.boxes import BoxTree, kd_axes, midpoint_cuts
from dphist_spatial.budgets import boundary_epsilons
from dphist_spatial.kdtree import KDTreeFinalizer, auto_levels, nominal_nodes
from dphist_spatial.medians import KDMedians, cut_scores, summed_area
from dphist_spatial.tree import constrained_inference


# ------------------------------------------------------------------ broken twins
class ExactMedians(KDMedians):
    """Twin: the true median cut of every box, no noise (a median computed on true counts, unpaid for)."""

    def run(self, counts, epsilon, noise, shape=None, r0=None, r1=None, c0=None, c1=None, axis=None):
        scores, first = cut_scores(summed_area(counts, shape), r0, r1, c0, c1, axis)
        cuts = np.full(axis.size, -1, dtype=np.int64)
        lo = np.where(axis == 0, r0, c0)
        for k, node in enumerate(np.flatnonzero(axis >= 0)):
            cuts[node] = lo[node] + 1 + int(np.argmax(scores[first[k]:first[k + 1]]))
        return cuts


class TenfoldMedians(KDMedians):
    """Twin: the exponential mechanism run with ten times the epsilon it is charged."""

    def run(self, counts, epsilon, noise, **arguments):
        return super().run(counts, 10 * epsilon, noise, **arguments)


class ExactMedianKD(KDTreeFinalizer):
    """Twin: the kd-tree cutting at the true medians (ExactMedians), charged as if private."""

    medians = ExactMedians


class OverspendingKD(KDTreeFinalizer):
    """Twin: the medians' share taken on top of the counts' (the counts get the whole budget)."""

    def finalize(self, bins, ctx):
        tree, grown = self.build(ctx, tuple(ctx.shape), self.median_share * ctx.budget)
        for d, e in enumerate(boundary_epsilons(ctx.budget, nominal_nodes(grown, tree.height))):
            ctx.data.laplace_partition(tree.partition(d), float(e))
        return np.zeros(bins.n_bins)


def _grid(shape=(12, 10), seed=0):
    i, j = np.indices(shape)
    rng = np.random.default_rng(seed)
    return rng.poisson(400.0 / (1 + (i - 3) ** 2 + (j - 7) ** 2)).astype(np.int64)


def _medians_args(shape, axis_value=1):
    one = np.zeros(1, dtype=np.int64)
    return dict(shape=shape, r0=one, r1=one + shape[0], c0=one.copy(), c1=one + shape[1],
                axis=one + axis_value)


# ------------------------------------------------------------------ the box tree
def test_box_tree_levels_partition_and_nest():
    """Kills: children made from the wrong corners (a cell mapped to a node whose box does not hold it,
    the bug of a swapped column bound), a level missing or repeating a cell, a parent map pointing
    outside the parent's box, a one-cell box losing its node."""
    tree = BoxTree((7, 5))
    r0, r1, c0, c1 = tree.boxes[-1]
    tree.grow(np.array([3]), c1)                                   # a kd cut across rows
    r0, r1, c0, c1 = tree.boxes[-1]
    tree.grow(r1, np.array([1, 4]))                                # kd cuts across columns
    while not tree.all_single():
        r0, r1, c0, c1 = tree.boxes[-1]
        tree.grow(midpoint_cuts(r0, r1), midpoint_cuts(c0, c1))   # quadtree cuts
    rows, cols = np.indices((7, 5))
    for d in range(tree.height + 1):
        node = tree.node_of_cell(d)
        r0, r1, c0, c1 = tree.boxes[d]
        assert np.all((rows.ravel() >= r0[node]) & (rows.ravel() < r1[node])
                      & (cols.ravel() >= c0[node]) & (cols.ravel() < c1[node]))
        part = tree.partition(d)
        assert np.array_equal(np.sort(part.order), np.arange(35))
        assert np.array_equal(part.sizes, tree.node_sizes(d))
        if d:
            assert np.array_equal(tree.parent_of_node(d)[node], tree.node_of_cell(d - 1))
    assert tree.n_nodes(1) == 2 and tree.n_nodes(2) == 4 and tree.n_nodes(tree.height) == 35


def test_inference_on_a_box_tree_is_the_least_squares_solution():
    """Kills: inference assuming a fixed fan-out (the box tree has nodes of 1, 2 and 4 children), a wrong
    weight in either pass."""
    rng = np.random.default_rng(1)
    tree = BoxTree((5, 6))
    tree.grow(np.array([2]), np.array([6]))
    r0, r1, c0, c1 = tree.boxes[-1]
    tree.grow(r1, np.array([4, 1]))
    while not tree.all_single():
        r0, r1, c0, c1 = tree.boxes[-1]
        tree.grow(midpoint_cuts(r0, r1), midpoint_cuts(c0, c1))
    values, variances, rows, rhs = [], [], [], []
    for d in range(tree.height + 1):
        k = tree.n_nodes(d)
        M = np.zeros((k, tree.n_cells))
        M[tree.node_of_cell(d), np.arange(tree.n_cells)] = 1.0
        values.append(rng.normal(5, 3, k))
        variances.append(0.5 + d)
        rows.append(M / np.sqrt(variances[-1]))
        rhs.append(values[-1] / np.sqrt(variances[-1]))
    dense = np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=None)[0]
    leaves = constrained_inference(tree, values, variances)[-1]        # leaves in node order
    assert np.allclose(leaves[tree.node_of_cell(tree.height)], dense, atol=1e-9)


def test_kd_axes_alternate_and_fall_back():
    """Kills: axes not alternating (always rows), a one-cell-thick box cut along its thin side, a one-cell
    box cut at all."""
    r0, r1 = np.array([0, 0, 0, 0]), np.array([4, 1, 4, 1])
    c0, c1 = np.array([0, 0, 0, 0]), np.array([4, 4, 1, 1])
    assert kd_axes(r0, r1, c0, c1, 0).tolist() == [0, 1, 0, -1]
    assert kd_axes(r0, r1, c0, c1, 1).tolist() == [1, 1, 0, -1]


# ------------------------------------------------------------------ private medians
def test_cut_scores_match_brute_force():
    """Kills: an off-by-one in the summed-area reads (a cut counting its own row on the left), rows and
    columns swapped, a score of L - R instead of -|L - R|."""
    x = _grid((6, 7), seed=3)
    S = summed_area(x, x.shape)
    r0, r1, c0, c1 = np.array([1, 0]), np.array([6, 4]), np.array([2, 0]), np.array([7, 3])
    axis = np.array([0, 1])
    scores, first = cut_scores(S, r0, r1, c0, c1, axis)
    box = x[1:6, 2:7]
    expect0 = [-abs(box[:p].sum() - box[p:].sum()) for p in range(1, 5)]
    box = x[0:4, 0:3]
    expect1 = [-abs(box[:, :q].sum() - box[:, q:].sum()) for q in range(1, 3)]
    assert first.tolist() == [0, 4, 6]
    assert np.allclose(scores, expect0 + expect1)


def test_cut_scores_skip_uncut_boxes_and_refuse_bad_boxes():
    """Kills: the compiled loop pairing the k-th cut box with the k-th box of the level (a box with axis -1
    between two cut ones shifts every later score), and reads outside the summed-area table: a box too
    short to cut is refused by name, a box past the grid raises IndexError (the loop checks its indices)."""
    x = _grid((6, 7), seed=3)
    S = summed_area(x, x.shape)
    r0, r1, c0, c1 = np.array([1, 0, 0]), np.array([6, 2, 4]), np.array([2, 4, 0]), np.array([7, 6, 3])
    with_gap, first = cut_scores(S, r0, r1, c0, c1, np.array([0, -1, 1]))
    alone, _ = cut_scores(S, r0[[0, 2]], r1[[0, 2]], c0[[0, 2]], c1[[0, 2]], np.array([0, 1]))
    assert first.tolist() == [0, 4, 6] and np.array_equal(with_gap, alone)
    with pytest.raises(InvalidParameter, match="at least two cells"):
        cut_scores(S, np.array([0]), np.array([1]), np.array([0]), np.array([3]), np.array([0]))
    with pytest.raises(IndexError):
        cut_scores(S, np.array([0]), np.array([9]), np.array([0]), np.array([3]), np.array([0]))


def test_score_sensitivity_is_one():
    """Kills: a declared sensitivity below the scores' (e.g. a score -|L - T| or -2|L - R|): one record
    added or removed at any cell moves every candidate score of every box by at most 1 (brute force)."""
    x = _grid((5, 6), seed=7)
    r0, r1, c0, c1 = np.array([0, 1, 2]), np.array([5, 4, 5]), np.array([0, 2, 1]), np.array([6, 6, 3])
    axis = np.array([0, 1, 1])
    base, _ = cut_scores(summed_area(x, x.shape), r0, r1, c0, c1, axis)
    worst = 0.0
    for cell in range(x.size):
        for step in (1, -1):
            y = x.copy().ravel()
            if y[cell] + step < 0:
                continue
            y[cell] += step
            moved, _ = cut_scores(summed_area(y, x.shape), r0, r1, c0, c1, axis)
            worst = max(worst, float(np.abs(moved - base).max()))
    assert worst == KDMedians.sensitivity == 1.0


def test_median_draws_follow_the_exponential_mechanism():
    """Kills: the factor 1/2 of the exponential mechanism dropped (too little noise), the score's sign
    flipped (cuts far from the median favoured), a cut offset by one from its candidate.  Power: the cut
    probabilities are (0.03, 0.50, 0.33, 0.07, 0.07); at 2,000 draws the 4-s.e. band is 0.063 wide and the
    mutations move one probability by 0.17 (factor 1/2) or 0.47 (sign, offset), 10 and 36 of their
    standard errors beyond the band."""
    x = np.array([[0, 9, 1, 4, 0, 2]])
    args = KDMedians().check(x.size, **_medians_args(x.shape))
    eps, draws = 0.4, 2_000
    noise = SeededLaplace(np.random.default_rng(5))
    cuts = np.array([KDMedians().run(x.ravel(), eps, noise, **args)[0] for _ in range(draws)])
    u = np.array([-abs(x[0, :q].sum() - x[0, q:].sum()) for q in range(1, 6)], dtype=float)
    p = np.exp(eps * u / 2)
    p /= p.sum()
    freq = np.bincount(cuts - 1, minlength=5) / draws
    assert np.abs(freq - p).max() < 4 * np.sqrt(p.max() / draws), (freq, p)


def test_kit_replay_rejects_the_median_twins():
    """Kills: a median computed on the true counts without noise (ExactMedians), or with ten times the
    charged epsilon (TenfoldMedians): the kit's certified replay on neighbours fails both and passes
    the honest mechanism.  On [5, 1, 6] one record at the first cell moves the true median cut."""
    x = np.array([[5, 1, 6]])
    args = KDMedians().check(x.size, **_medians_args(x.shape))
    testing.check_vetted_mechanism(KDMedians(), 1.0, x.ravel(), args)
    for twin in (ExactMedians(), TenfoldMedians()):
        with pytest.raises(AssertionError, match="too little noise"):
            testing.check_vetted_mechanism(twin, 1.0, x.ravel(), args)


def test_medians_follow_the_data():
    """Kills: the median replaced by the box's midpoint (a data-independent cut, the quadtree's), or the
    cut drawn uniformly: with all records in the first rows, the root's cut lands among them."""
    x = np.zeros((32, 4), dtype=np.int64)
    x[:6] = 500
    k = PrivateKernel(x, SeededLaplace(np.random.default_rng(2)))
    h = k.handle("spatial.kd", "finalizer", 1.0, vetted=(KDMedians.name,))
    cut = h.custom(KDMedians(), 1.0, **_medians_args(x.shape, axis_value=0))[0]
    assert 1 <= cut <= 5


def test_medians_refuse_bad_boxes_before_spending():
    """Kills: a box outside the grid or an axis a box cannot be cut along reaching the charge."""
    x = _grid((4, 4))
    k = PrivateKernel(x, SeededLaplace(np.random.default_rng(0)))
    h = k.handle("spatial.kd", "finalizer", 1.0, vetted=(KDMedians.name,))
    bad = _medians_args((4, 4))
    with pytest.raises(InvalidParameter, match="inside the grid"):
        h.custom(KDMedians(), 0.5, **{**bad, "c1": bad["c1"] + 1})
    with pytest.raises(InvalidParameter, match="axis"):
        h.custom(KDMedians(), 0.5, **{**bad, "c0": bad["c1"] - 1})
    assert h.spent == 0.0


# ------------------------------------------------------------------ budgets and ledger
def test_boundary_budget_is_the_quadtrees_and_the_kd_trees():
    """Kills: the kd-tree given the quadtree's ratio 2^{1/3} per level (a kd level cuts one axis: 2^{1/6}),
    the quadtree levels of the hybrid given 2^{1/6}, a budget that does not sum to epsilon."""
    quad = boundary_epsilons(0.7, 4.0 ** np.arange(9))
    assert np.allclose(quad[1:] / quad[:-1], 2 ** (1 / 3)) and quad.sum() == pytest.approx(0.7, abs=1e-15)
    kd = boundary_epsilons(1.0, nominal_nodes(6, 6))
    assert np.allclose(kd[1:] / kd[:-1], 2 ** (1 / 6))
    hybrid = boundary_epsilons(1.0, nominal_nodes(3, 6))
    assert np.allclose(hybrid[1:4] / hybrid[:3], 2 ** (1 / 6)) and np.allclose(hybrid[4:] / hybrid[3:-1], 2 ** (1 / 3))


@pytest.mark.parametrize("name, quad", [("KDTree", False), ("HybridTree", True)])
def test_ledger_splits_medians_and_counts(name, quad):
    """Kills: a median share other than the declared one, the medians' budget not split evenly across the
    kd levels, a level's medians charged per box (2^d times: an overspend) or its counts measured twice,
    a ledger that is not epsilon."""
    x = _grid((16, 16))
    rel = make_algorithm(name, median_share=0.25).run(x, 0.8, seed=1)
    rows = list(rel.ledger)
    med = [r for r in rows if r.primitive == "custom:spatial.kd-medians"]
    cnt = [r for r in rows if r.primitive == "laplace.partition"]
    L = auto_levels((16, 16), quad)
    answers = [r.answers for r in med]         # boxes one cell thick along both axes stop being cut
    assert len(med) == L and answers[:3] == [1, 2, 4] and all(a <= 2 ** d for d, a in enumerate(answers))
    assert np.allclose([r.epsilon for r in med], 0.25 * 0.8 / L) and all(r.sensitivity == 1.0 for r in med)
    assert cnt[0].answers == 1 and sum(r.epsilon for r in cnt) == pytest.approx(0.75 * 0.8, abs=1e-12)
    assert rel.ledger.total == pytest.approx(0.8, abs=1e-12) and rel.grid.shape == (16, 16)
    if quad:
        assert cnt[-1].answers == 256           # the hybrid ends at single cells
    else:
        assert len(cnt) == L + 1 and cnt[-1].answers <= 2 ** L


def test_overspending_twin_is_refused():
    """Kills: a budget split that overspends (medians on top of the whole count budget): the kernel refuses
    the charge that crosses the share, and the kit fails the twin."""
    from dphist import Pipeline
    pipe = Pipeline(None, None, "singleton", OverspendingKD(), (0.0, 0.0, 1.0), dims=(2,))
    with pytest.raises(BudgetExceeded):
        pipe.run(_grid((8, 8)), 1.0, seed=1)


def test_small_grids_spend_everything():
    """Kills: median budget left unspent when the boxes are single cells before the last kd level (a 1 x 1
    or 2 x 1 grid): the ledger must still be epsilon, the rest going to the counts."""
    for x in (np.array([[42]]), np.array([[3], [9]])):
        for name in ("KDTree", "HybridTree"):
            rel = make_algorithm(name, **({"depth": 4} if name == "KDTree" else {"kd_levels": 4})).run(x, 1.0, seed=2)
            assert rel.ledger.total == pytest.approx(1.0, abs=1e-12)


# ------------------------------------------------------------------ kit, audit, release mode, bad input
def test_conformance():
    """Kills: unspent or overspent budget, reads outside the kernel, unseeded randomness, an undeclared
    vetted mechanism, a broken release mode (the kit on grids, with the vetted replay of the medians)."""
    testing.check_contract(KDTreeFinalizer)           # the component's declarations; its runs: the presets below
    for name in ("KDTree", "HybridTree"):
        with pytest.warns(testing.VettedMechanismWarning):
            testing.check_algorithm(name)


def test_release_mode_runs_exactly():
    """Kills: a median or count drawn from float noise in release mode (the exact samplers refuse raw float
    Laplace), a release keeping its seed."""
    x = _grid((9, 11))
    for name in ("KDTree", "HybridTree"):
        rel = make_algorithm(name).run(x, 0.5)
        assert rel.mode == "release" and rel.seed is None and rel.ledger.total == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("name, pairs", [("KDTree", slice(0, 1)), ("HybridTree", slice(1, 2))])
def test_fast_audit_on_2d_pairs(name, pairs):
    """Kills: a leak beyond epsilon on neighbouring grids (e.g. a median or a level chosen from a true count;
    the release-to-release loss is measured, whatever the ledger says): the auditor's fast level on a
    2-D pair each (a spike removed from a 4 x 4 grid; a record at the corner of a flat 8 x 8 grid) finds no
    loss above epsilon."""
    from dphist.audit import audit
    from dphist.audit.pairs import GRID_FAST_PAIRS
    result = audit(name, level="fast", pairs=GRID_FAST_PAIRS[pairs], seed=3)
    assert result.passed and result.pairs == len(GRID_FAST_PAIRS[pairs]), result


def test_audit_catches_true_medians_on_a_pair_that_moves_them():
    """Kills: a kd-tree cutting at the true median (the twin ExactMedianKD): on the 1 x 3 grid [5, 1, 6] one
    record added at the first cell moves the true median cut from 2 to 1, which a one-level kd-tree shows
    in its release (which two cells share a leaf); the auditor's fast level fails the twin and passes the
    honest kd-tree on the same pair."""
    from dphist import Pipeline
    from dphist.audit import audit
    from dphist.audit.pairs import grid_pair
    pair = grid_pair("kd-median-flip", np.array([[5, 1, 6]]), (0, 0))
    for finalizer, ok in ((KDTreeFinalizer(depth=1), True), (ExactMedianKD(depth=1), False)):
        pipe = Pipeline(None, None, "singleton", finalizer, (0.0, 0.0, 1.0), dims=(2,))
        assert audit(pipe, epsilon=1.0, level="fast", pairs=[pair], seed=3).passed is ok


def test_bad_input_named_before_spending():
    """Kills: a kd-tree run on a 1-D histogram (it would cut a line), a depth of 0 or a median share of 1
    accepted (no median level, or no budget for the counts)."""
    with pytest.raises(InvalidParameter, match="KDTree"):
        make_algorithm("KDTree").run(np.arange(16), 1.0, seed=1)
    with pytest.raises(InvalidParameter, match="HybridTree"):
        make_algorithm("HybridTree").run(np.arange(16), 1.0, seed=1)
    with pytest.raises(InvalidParameter, match="KDTree.*depth"):
        make_algorithm("KDTree", depth=0)
    with pytest.raises(InvalidParameter, match="HybridTree.*kd_levels"):
        make_algorithm("HybridTree", kd_levels=-1)
    with pytest.raises(InvalidParameter, match="median_share"):
        make_algorithm("KDTree", median_share=1.0)
