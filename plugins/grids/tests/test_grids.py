"""UG and AG (Qardaji, Yang, Li, ICDE 2013): conformance on grids, the paper's grid sizes, the
constrained inference, the budget split, refusals.  Each test names the mutation it kills."""
import math

import numpy as np
import pytest

import dphist
from dphist import InvalidParameter, Pipeline, testing
from dphist_grids.grid import (AdaptiveGrid, AdaptiveInference, UniformGrid, block_labels, block_partition, cell_side,
                               nested_block_partition)
from dphist_grids import grid


def _blob(n=64, total=20000, seed=0):
    i, j = np.indices((n, n))
    p = np.exp(-((i - n / 3) ** 2 + (j - n / 2) ** 2) / (2 * (n / 8) ** 2)) + 0.02
    return np.random.default_rng(seed).multinomial(total, (p / p.sum()).ravel()).reshape(n, n)


def test_presets_conform_on_grids():
    """Kills: a preset that leaves budget unspent or overspends on a grid, is not reproducible, or
    runs on a 1-D histogram it does not support (dphist.testing.check_algorithm on example_grids)."""
    for name in ("UG", "AG"):
        testing.check_algorithm(name)
    testing.check_algorithm("UG", public_total=5000.0)


def test_components_conform():
    """Kills: an undeclared or unstored parameter, a spending flag that lies (UG with a public total
    spends nothing), the inference finalizer reading data outside ctx.data (dphist.testing)."""
    testing.check_component(UniformGrid)
    testing.check_component(AdaptiveGrid, pipeline=dphist.make_algorithm("AG"))
    testing.check_component(AdaptiveInference, pipeline=dphist.make_algorithm("AG"))
    assert UniformGrid(public_total=10.0).spends is False and UniformGrid().spends is True


def test_uniform_grid_size_is_guideline_1():
    """Kills: m = sqrt(N eps / c) replaced by N eps / c or sqrt(N / (eps c)), or c not used: with a
    public total the blocks are floor(sqrt(n^2 / M)) cells a side, M = N eps / c."""
    x = _blob()
    for total, eps in ((20000.0, 1.0), (20000.0, 0.1), (1e6, 1.0)):
        rel = dphist.make_algorithm("UG", public_total=total).run(x, eps, seed=1)
        side = max(1, min(int(math.sqrt(64 * 64 / (total * eps / 10))), 64))
        assert rel.notes["grids.uniform"]["cell_side"] == side
        assert rel.partition.n_groups == (-(-64 // side)) ** 2
        assert rel.ledger.total == pytest.approx(eps)
    assert cell_side((64, 64), 0.0) == 64


def test_blocks_are_square_grid_blocks():
    """Kills: block labels from column-major cells or with the wrong number of block columns on a
    non-square grid (cells of one block are not a side x side square)."""
    lab = block_labels((5, 7), 3).reshape(5, 7)
    assert lab[0, :].tolist() == [0, 0, 0, 1, 1, 1, 2] and lab[3, :].tolist() == [3, 3, 3, 4, 4, 4, 5]
    assert lab.max() == 5


def _level2_labels(shape, side1, side2):
    """The definition AG's level 2 is built to equal: each cell's label is its level-1 block (times a
    stride above any sub-block count), plus its sub-block's row-major index inside that block."""
    i, j = np.indices(shape)
    blk = block_labels(shape, side1).reshape(shape)
    s = side2[blk]
    cols = np.minimum(side1, shape[1] - (j // side1) * side1)     # width of the cell's level-1 block
    local = ((i % side1) // s) * (-(-cols // s)) + (j % side1) // s
    return (blk * side1 * side1 + local).reshape(-1)


@pytest.mark.parametrize("shape", [(1, 1), (5, 7), (7, 5), (16, 16), (17, 3), (64, 48)])
def test_block_partitions_equal_the_labels_sort(shape):
    """Kills: UG's or AG's block description meaning another partition than ``from_labels`` of the
    paper's labels (blocks column-major, edge blocks cut wrongly, AG's level-2 side given to another
    level-1 block, level-2 bounds shifted by a block, a group's level-1 block misread by the finalizer)."""
    rng = np.random.default_rng(1)
    for side in (1, 2, 3, 5, 16, 100):
        want = dphist.Partition.from_labels(block_labels(shape, side))
        got = block_partition(shape, side)
        assert np.array_equal(got.order, want.order) and np.array_equal(got.bounds, want.bounds)
        side2, sizes = AdaptiveGrid.second_level_sides(shape, side, rng.integers(1, 6, got.n_groups))
        want2 = dphist.Partition.from_labels(_level2_labels(shape, side, side2))
        got2 = nested_block_partition(shape, side, side2)
        assert np.array_equal(got2.order, want2.order) and np.array_equal(got2.bounds, want2.bounds)
        # every level-2 group: a full rectangle of cells inside one level-1 block
        r, c = np.divmod(np.arange(got2.n_bins), shape[1])
        level1 = block_labels(shape, side)
        for group in got2.groups():
            assert (np.ptp(r[group]) + 1) * (np.ptp(c[group]) + 1) == group.size
            assert np.unique(level1[group]).size == 1
        assert got2.n_groups == sizes.sum()
        assert np.array_equal(grid._level1_block(got2, shape, side),
                              grid._level1_block(dphist.Partition(got2.order, got2.bounds), shape, side))


def test_adaptive_levels_and_budget():
    """Kills: m1 without the floor of 10 or without the 1/4, m2 from the true count, the level-2
    split ignoring a block's noisy count, or a ledger that is not total + alpha / 1 - alpha."""
    x = _blob()
    rel = dphist.make_algorithm("AG").run(x, 1.0, seed=2)
    note = rel.notes["grids.adaptive"]
    eps_grid = 0.95
    assert note["m1"] == max(10, int(math.sqrt(note["total"] * eps_grid / 10) / 4))
    rows = [(e.stage, round(e.epsilon, 9)) for e in rel.ledger]
    assert rows == [("partitioner", 0.05), ("partitioner", round(0.5 * 0.95, 9)), ("finalizer", round(0.5 * 0.95, 9))]
    m2 = AdaptiveGrid().second_level(note["level1"], 0.475)
    assert np.array_equal(m2, np.where(note["level1"] > 0, np.maximum(1, np.floor(np.sqrt(
        np.maximum(note["level1"], 0) * 0.475 / 5))), 1))
    dense, sparse = np.argmax(note["level1"]), np.argmin(note["level1"])
    assert note["sub_blocks"][dense] > note["sub_blocks"][sparse] >= 1
    assert rel.partition.n_groups == note["sub_blocks"].sum()


def test_constrained_inference_variance():
    """Kills: the weights swapped (alpha^2 s on the level-2 sum: block totals of variance ~21 instead
    of 6.4), or the reconciled total not spread back over the sub-blocks: on a flat 40 x 40 grid
    (blocks of 4 x 4 cells, 4 sub-blocks each), the released block totals have the variance of the
    inverse-variance average, (1 / var v + 1 / var sum u)^-1 with var v = 2 / (a eps)^2 and
    var sum u = 2 s / ((1 - a) eps)^2."""
    x = np.full((40, 40), 5, dtype=np.int64)
    pipe = dphist.make_algorithm("AG", public_total=float(x.sum()))
    runs = [pipe.run(x, 1.0, seed=s) for s in range(200)]
    note = runs[0].notes["grids.adaptive"]
    assert note["cell_side"] == 4 and np.all(note["sub_blocks"] == 4)
    labels1 = block_labels(x.shape, 4)
    totals = np.array([np.bincount(labels1, weights=r.estimate) for r in runs]) - 80
    var_v, var_u = 2 / 0.5 ** 2, 2 * 4 / 0.5 ** 2
    predicted = 1 / (1 / var_v + 1 / var_u)
    assert abs(totals.var() / predicted - 1) < 0.1, (totals.var(), predicted)


def test_grids_refuse_bad_use():
    """Kills: UG run on a 1-D histogram (its blocks are 2-D), AG's inference inventing a level 1
    after another partitioner (it must then measure the groups as group-mean does), or a
    non-positive constant accepted."""
    with pytest.raises(InvalidParameter, match="'UG' supports 2-D histograms only; got a 1-D"):
        dphist.make_algorithm("UG").run(np.arange(10), 1.0, seed=1)
    alone = Pipeline(None, None, "singleton", AdaptiveInference(), dims=(2,)).run(_blob(8), 1.0, seed=1)
    plain = Pipeline(None, None, "singleton", "group-mean", dims=(2,)).run(_blob(8), 1.0, seed=1)
    assert np.array_equal(alone.estimate, plain.estimate)      # no level 1: nothing to reconcile
    with pytest.raises(InvalidParameter, match="c"):
        dphist.make_algorithm("UG", c=0.0)
    with pytest.raises(InvalidParameter, match="alpha"):
        dphist.make_algorithm("AG", alpha=1.0)


def test_fast_audit_on_2d_pairs():
    """Kills: a leak in AG's two levels beyond epsilon on neighbouring grids (e.g. a level chosen
    from a true count; the release-to-release loss is measured, whatever the ledger says): the
    auditor's fast level on two 2-D pairs (a spike removed, a corner of a flat grid) finds no loss
    above epsilon.  The audit's power on grids is shown in tests/test_twod.py (it catches a
    half-noise twin); UG's blocks are measured by the core's group-mean, audited with the core."""
    from dphist.audit import audit
    from dphist.audit.pairs import GRID_FAST_PAIRS
    result = audit("AG", level="fast", pairs=GRID_FAST_PAIRS[:2], seed=3)
    assert result.passed and result.pairs == 2, result
