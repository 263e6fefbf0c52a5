"""The spatial plugin: the tree's structure, the exact least squares of its inference, the budgets,
and the conformance kit.  Each test names the mutation it kills."""
import numpy as np
import pytest

from dphist import InvalidParameter, testing
from dphist_spatial.budgets import geometric_ratio, level_epsilons
from dphist_spatial.finalizer import GridTreeFinalizer, qardaji_branching
from dphist_spatial.tree import GridTree, constrained_inference, split_segments


def test_split_rule_matches_dpbench():
    """Kills: remainders given to the last parts instead of the first, empty parts kept (DPBench's
    QuadTree / HB2D split a side of 5 into 3, 2 and a side of 2 by 4 into 1, 1)."""
    sizes, parent = split_segments(np.array([5, 2]), 2)
    assert sizes.tolist() == [3, 2, 1, 1] and parent.tolist() == [0, 0, 1, 1]
    sizes, parent = split_segments(np.array([2]), 4)
    assert sizes.tolist() == [1, 1] and parent.tolist() == [0, 0]


def test_levels_partition_the_grid_and_nest():
    """Kills: a level whose boxes miss or repeat a cell, a parent map pointing outside the parent's box,
    leaves that are not the cells in row-major order."""
    tree = GridTree((5, 3), 2)
    assert tree.height == 3
    for d in range(tree.height + 1):
        part = tree.partition(d)
        assert np.array_equal(np.sort(part.order), np.arange(15))
        assert part.n_groups == tree.n_nodes(d)
        assert np.array_equal(part.sizes, tree.node_sizes(d))
        if d:
            cells_parent = tree.node_of_cell(d - 1)
            assert np.array_equal(tree.parent_of_node(d)[tree.node_of_cell(d)], cells_parent)
    assert np.array_equal(tree.node_of_cell(tree.height), np.arange(15))


def test_inference_is_the_least_squares_solution():
    """Kills: a wrong weight in either pass (e.g. 1/k instead of V[c]/sum V in the top-down split, the
    own measurement's weight var/(var+S) instead of S/(var+S)), an unmeasured level treated as measured."""
    rng = np.random.default_rng(1)
    tree = GridTree((6, 5), 2)
    H = tree.height
    values, variances, rows, rhs = [None] * (H + 1), [np.inf] * (H + 1), [], []
    for d in range(H + 1):
        if d == 1:
            continue   # an unmeasured level
        k = tree.n_nodes(d)
        M = np.zeros((k, tree.n_cells))
        M[tree.node_of_cell(d), np.arange(tree.n_cells)] = 1.0
        values[d], variances[d] = rng.normal(5, 3, k), 0.5 + d * d
        rows.append(M / np.sqrt(variances[d]))
        rhs.append(values[d] / np.sqrt(variances[d]))
    dense = np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=None)[0]
    assert np.allclose(constrained_inference(tree, values, variances)[-1], dense, atol=1e-9)


def test_geometric_budget_is_cormodes():
    """Kills: the ratio 2 or 4 instead of 2^{1/3} for the 2-D quadtree, a budget that does not sum to
    epsilon, the larger shares on the root instead of the leaves (Cormode et al. Section 4.1:
    eps_i = 2^{(h-i)/3} eps (2^{1/3} - 1) / (2^{(h+1)/3} - 1), i the height above the leaves)."""
    h, eps = 8, 0.7
    ours = level_epsilons(eps, range(h + 1), "geometric", geometric_ratio((256, 256), 2))
    height = h - np.arange(h + 1)
    paper = 2 ** ((h - height) / 3) * eps * (2 ** (1 / 3) - 1) / (2 ** ((h + 1) / 3) - 1)
    assert np.allclose(ours, paper) and ours.sum() == pytest.approx(eps, abs=1e-15)
    assert geometric_ratio((1, 64), 2) == 1.0   # a line: uniform


def test_qardaji_branching_is_dpbenchs_choice():
    """Kills: minimising over the cells N instead of the side n, a wrong height (DPBench's HB2D, run on
    these sides, picks b = 6, 8, 12, 7: 7 * 255 * 3^2 = 16,065 beats 4 * 255 * 4^2 = 16,320 at 256)."""
    assert [qardaji_branching((s, s)) for s in (32, 64, 128, 256)] == [6, 8, 12, 7]


def test_bad_parameters_refused():
    """Kills: a branching of 1 (a tree that never ends) or an unknown budget accepted."""
    with pytest.raises(InvalidParameter):
        GridTreeFinalizer(branching=1)
    with pytest.raises(InvalidParameter):
        GridTreeFinalizer(budget="harmonic")


def test_conformance():
    """Kills: unspent or overspent budget, reads outside the kernel, unseeded randomness (the kit)."""
    testing.check_component(GridTreeFinalizer)
    testing.check_algorithm("QuadTree")


def test_quadtree_levels_and_budget_in_the_ledger():
    """Kills: a level measured twice or skipped, the root left out of the quadtree, the geometric shares
    reversed (more budget on the root), a release whose ledger is not epsilon."""
    from dphist import make_algorithm
    x = np.random.default_rng(2).integers(0, 30, (16, 16))
    rel = make_algorithm("QuadTree").run(x, 0.8, seed=1)
    rows = list(rel.ledger)
    assert [r.answers for r in rows] == [1, 4, 16, 64, 256]
    eps = np.array([r.epsilon for r in rows])
    assert np.allclose(eps[1:] / eps[:-1], 2 ** (1 / 3)) and eps.sum() == pytest.approx(0.8, abs=1e-12)
    assert rel.grid.shape == (16, 16)


def test_quadtree_refuses_a_vector_before_spending():
    """Kills: a 2-D preset run on a 1-D histogram (the tree would silently be a binary tree)."""
    from dphist import make_algorithm
    with pytest.raises(InvalidParameter, match="QuadTree"):
        make_algorithm("QuadTree").run(np.arange(16), 1.0, seed=1)


def test_algorithm_conformance():
    """Kills: unspent or overspent budget, a release of the wrong shape, reads outside the kernel (the kit,
    on grids for a 2-D preset)."""
    testing.check_algorithm("QuadTree")
