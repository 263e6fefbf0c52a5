"""MWEM on a 2-D grid (preset MWEM-2D): the closed-form update, the O(1) rectangle sums, the budget,
the kernel's primitives, the calibrations, bad input.

Each test names the mutation it kills.
"""
import numpy as np
import pytest

from dphist import InvalidParameter, Pipeline, make_algorithm, testing
from dphist import workloads as wl
from dphist.kernel.private import recording_kernel_calls
from dphist_mwem.finalizer import MWEMFinalizer
from dphist_mwem.grid import BlockWeights, grid_multiplicative_weights, rectangle_answers, rectangle_errors


def _rectangles(shape, m, seed):
    rng = np.random.default_rng(seed)
    lo = np.stack([rng.integers(0, s, m) for s in shape], 1)
    hi = np.stack([rng.integers(lo[:, k] + 1, s + 1) for k, s in enumerate(shape)], 1)
    return lo, hi


def _naive(shape, lo, hi, answers, passes, total, start=None):
    # DPBench's update over every cell: A * exp(q (m - q(A)) / 2T), rescaled to T, one measurement at a time
    A = np.full(shape, total / np.prod(shape)) if start is None else start.copy()
    for _ in range(passes):
        for a, b, m in zip(lo, hi, answers):
            q = np.zeros(shape)
            q[a[0]:b[0], a[1]:b[1]] = 1
            A = A * np.exp(q * (m - (q * A).sum()) / (2 * total))
            A *= total / A.sum()
    return A


def test_block_update_matches_the_update_over_every_cell():
    """Kills: weights carried to the wrong sub-blocks when a new rectangle refines the strips, an update
    without the rescale to T, a missing factor 2, block ranges off by one strip: two rounds (2 then 5
    rectangles) on a 13 x 9 grid against the full-grid update, to 1e-12."""
    shape, total = (13, 9), 500.0
    lo, hi = _rectangles(shape, 5, 1)
    answers = np.random.default_rng(2).uniform(0, 300, 5)
    blocks = BlockWeights(shape, total)
    grid_multiplicative_weights(blocks, lo[:2], hi[:2], answers[:2], 4, total)
    first = _naive(shape, lo[:2], hi[:2], answers[:2], 4, total)
    assert np.allclose(blocks.grid(), first, rtol=1e-12, atol=1e-12)
    grid_multiplicative_weights(blocks, lo, hi, answers, 7, total)
    assert np.allclose(blocks.grid(), _naive(shape, lo, hi, answers, 7, total, start=first), rtol=1e-12, atol=1e-12)
    assert blocks.weights.shape[0] <= 11 and blocks.weights.shape[1] <= 11   # at most 2m + 1 strips per axis


def test_rectangle_sums_in_closed_form():
    """Kills: a partial strip counted from the wrong block, the far edge (a corner at the last row or
    column) read out of range, a missing cross term dr * dc * w: 300 random rectangles and the whole
    grid against the summed-area table of the expanded grid."""
    shape = (17, 11)
    blocks = BlockWeights(shape, 900.0)
    lo, hi = _rectangles(shape, 4, 3)
    grid_multiplicative_weights(blocks, lo, hi, [10.0, 400.0, 3.0, 80.0], 5, 900.0)
    qlo, qhi = _rectangles(shape, 300, 4)
    qlo, qhi = np.vstack([qlo, [[0, 0]]]), np.vstack([qhi, [[17, 11]]])
    want = wl.RectangleWorkload(shape, qlo, qhi).answer(blocks.grid())
    assert np.allclose(blocks.rectangle_sums(qlo, qhi), want, rtol=1e-12, atol=1e-9)


def test_rows_pick_rectangles_and_answers_match_the_workload():
    """Kills: a compiled loop reading rectangle ``k`` instead of ``rows[k]`` (MWEM's open candidates), the
    four corners of inclusion-exclusion with a sign or an axis swapped: the picked rows equal the whole
    answer at those rows, and the answers of a summed-area table equal the workload's own answers."""
    shape = (17, 11)
    blocks = BlockWeights(shape, 900.0)
    lo, hi = _rectangles(shape, 4, 3)
    grid_multiplicative_weights(blocks, lo, hi, [10.0, 400.0, 3.0, 80.0], 5, 900.0)
    qlo, qhi = _rectangles(shape, 200, 5)
    rows = np.array([199, 3, 3, 0, 57])
    assert np.array_equal(blocks.rectangle_sums(qlo, qhi, rows), blocks.rectangle_sums(qlo, qhi)[rows])
    x = np.random.default_rng(6).poisson(4, shape)
    table = wl.summed_area_table(x, shape)
    want = wl.RectangleWorkload(shape, qlo, qhi).answer(x.ravel())
    assert np.allclose(rectangle_answers(table, qlo, qhi), want, rtol=0, atol=1e-9)
    assert np.array_equal(rectangle_errors(x, shape, np.zeros(rows.size), qlo, qhi, rows),
                          np.abs(rectangle_answers(table, qlo, qhi)[rows]))


@pytest.mark.parametrize("lo, hi, rows, error", [
    ([[0, 0]], [[18, 11]], None, InvalidParameter),    # past the last row
    ([[0, 0]], [[17, 12]], None, InvalidParameter),    # past the last column
    ([[-1, 0]], [[3, 3]], None, InvalidParameter),    # a negative corner (numpy would wrap it round)
    ([[4, 0]], [[3, 3]], None, InvalidParameter),    # lo above hi
    ([[0, 0]], [[3, 3]], [1], IndexError),          # a row past the rectangles
    ([[0, 0]], [[3, 3]], [-1], IndexError),
])
def test_rectangles_outside_the_grid_are_refused(lo, hi, rows, error):
    """Kills: the compiled loops (which read without bounds checks) handed a corner outside the grid or
    a row outside the rectangles: each is refused with the reason, for the estimate's sums and for the
    answers of a table alike."""
    shape = (17, 11)
    lo, hi = np.array(lo), np.array(hi)
    with pytest.raises(error):
        BlockWeights(shape, 10.0).rectangle_sums(lo, hi, rows)
    with pytest.raises(error):
        rectangle_answers(np.zeros((18, 12)), lo, hi, rows)


def test_ledger_and_primitives_on_a_grid():
    """Kills: a selection made outside the kernel (an argmax on the counts) or over the wrong candidates
    (the measured rectangle not leaving them), a measurement of sensitivity above 1, a split that spends
    more or less than epsilon: the noisy total (0.1 eps), then per round one exponential over the open
    rectangles (2000, 1999, ...) and one laplace.linear of sensitivity 1 and one answer."""
    x = testing.example_grids()["power-law"]
    with recording_kernel_calls() as calls:
        r = make_algorithm("MWEM-2D", rounds=4, ratio=0.25).run(x, 2.0, seed=1)
    rows = [(e.primitive, e.epsilon, e.sensitivity, e.answers) for e in r.ledger.entries]
    assert rows[0] == ("laplace.partition", pytest.approx(0.2), 1.0, 1)
    assert [p for p, *_ in rows[1:]] == ["exponential", "laplace.linear"] * 4
    assert all(e == pytest.approx(0.25 * 1.8 / 4) for p, e, *_ in rows[1:] if p == "exponential")
    assert all((e, s, a) == (pytest.approx(0.75 * 1.8 / 4), 1.0, 1) for p, e, s, a in rows[1:] if p == "laplace.linear")
    assert [c.details["n_candidates"] for c in calls if c.primitive == "exponential"] == [2000, 1999, 1998, 1997]
    assert r.ledger.total == pytest.approx(2.0) and r.grid.shape == (8, 8)


def test_mwem_2d_learns_the_grid():
    """Kills: an update that does not move towards the measurements, or rectangles measured as other
    rectangles (transposed axes): 10 rounds at eps = 1 on two blobs must beat the uniform start on the
    workload by 3x (mean squared error)."""
    i, j = np.indices((32, 32))
    x = (np.floor(4000 / (1 + (i - 6) ** 2 + (j - 24) ** 2)) + np.floor(2000 / (1 + (i - 25) ** 2 + (j - 8) ** 2)))
    x = x.astype(np.int64)
    W = wl.dpbench_random_rectangles((32, 32), 2000)
    err = lambda e: np.mean((W.answer(e) - W.answer(x)) ** 2)
    uniform = np.full(x.size, x.sum() / x.size)
    errors = [err(make_algorithm("MWEM-2D").run(x, 1.0, seed=s).estimate) for s in range(3)]
    assert np.mean(errors) < err(uniform) / 3
    transposed = [err(make_algorithm("MWEM-2D").run(x.T.copy(), 1.0, seed=s).grid.T.ravel()) for s in range(3)]
    assert np.mean(transposed) < err(uniform) / 3


def test_mwem_2d_conformance():
    """Kills: a 2-D preset that mis-spends, releases the wrong shape, fails in release mode or on the
    kit's degenerate grids (one cell, one row, one column, 5 x 7)."""
    testing.check_algorithm("MWEM-2D", rounds=3, updates=20)


def test_finalizer_conformance_on_grids_with_sorted_cells():
    """Kills: the grid route failing on sorted singleton cells (the kit's noisy-count harness), or
    reading counts outside the kernel (the kit runs the component on 1-D histograms and on grids)."""
    testing.check_component(MWEMFinalizer, pipeline=Pipeline("laplace", "noisy-count", "singleton",
                                                               MWEMFinalizer(rounds=3, updates=10),
                                                               (0.5, 0.0, 0.5), dims=(1, 2)))


def test_groups_on_a_grid_get_their_cells_mean():
    """Kills: ignoring a partitioner's groups on a grid (the release must be constant on each group, its
    total the MW estimate's): one group of all cells gives a flat grid."""
    pipe = Pipeline("laplace", None, "whole", MWEMFinalizer(workload="marginals", rounds=2), (0.5, 0.0, 0.5),
                    dims=(2,))
    r = pipe.run(testing.example_grids()["power-law"], 1.0, seed=4)
    assert np.allclose(r.estimate, r.estimate[0])


def test_release_mode_on_a_grid():
    """Kills: a measurement outside the kernel's exact route (release mode must run with the exact
    samplers, keep no seed and spend exactly epsilon)."""
    r = make_algorithm("MWEM-2D", rounds=2, updates=5).run(testing.example_grids()["spiky"], 1.0)
    assert r.mode == "release" and r.seed is None and r.ledger.total == pytest.approx(1.0)


def test_dpbench_calibration_on_a_grid_keeps_the_true_total_and_is_flagged():
    """Kills: the 2-D reference calibration losing its not-DP flag (release mode must refuse it) or not
    starting from the true total (the reference's flaw, reproduced for comparison)."""
    x = testing.example_grids()["power-law"]
    pipe = make_algorithm("MWEM-2D", calibration="dpbench", rounds=3)
    r = pipe.run(x, 1.0, seed=2)
    assert r.estimate.sum() == pytest.approx(x.sum(), rel=1e-9)
    assert any("not differentially private" in w for w in r.warnings)
    with pytest.raises(Exception, match="differentially private"):
        pipe.run(x, 1.0)


def test_fast_audit_on_2d_pairs():
    """Kills: a leak beyond epsilon on neighbouring grids (e.g. the true total kept, or the selection's
    score read with the wrong sensitivity): the fast audit on a 2-D pair (a spike removed from a 4 x 4
    grid) passes the private default and fails the reference calibration (true total) on the same pair.
    Small settings (2 rounds, 10 passes, the marginals) keep it cheap: the same code paths."""
    from dphist.audit import audit
    from dphist.audit.pairs import GRID_FAST_PAIRS
    small = dict(rounds=2, updates=10, workload="marginals")
    result = audit(make_algorithm("MWEM-2D", **small), level="fast", pairs=GRID_FAST_PAIRS[:1], seed=3)
    assert result.passed and result.pairs == 1, result
    leaky = audit(make_algorithm("MWEM-2D", calibration="dpbench", **small), level="fast",
                  pairs=GRID_FAST_PAIRS[:1], seed=3)
    assert not leaky.passed and leaky.epsilon_lower_bound > 1.0, leaky


@pytest.mark.parametrize("workload, shape, message", [
    (wl.dpbench_random_rectangles((4, 16), 10), (8, 8), "shape \\(4, 16\\)"),
    ((np.array([0]), np.array([3])), (8, 8), "workload is a name"),
    ("small-ranges", (8, 8), "unknown workload"),
    ("all-rectangles", (64, 64), "all-rectangles"),
    ("marginals", (64,), "is over a grid"),
    (wl.prefix_rectangles((8, 8)), (64,), "is over a grid"),
])
def test_bad_workloads_spend_nothing(workload, shape, message):
    """Refused with a message naming the problem before any primitive (the noisy total comes first in a
    run).  Kills: a shape check left to finalize, rectangles of another grid answered on this one, 1-D
    ranges read as rectangles, an all-rectangles workload enumerated on a large grid."""
    calls = []

    class Spy(MWEMFinalizer):
        def finalize(self, bins, ctx):
            calls.append(ctx.budget)
            return super().finalize(bins, ctx)

    pipe = Pipeline(None, None, "singleton", Spy(workload=workload), (0, 0, 1), dims=(1, 2))
    with pytest.raises(InvalidParameter, match=message):
        pipe.run(np.ones(shape, dtype=np.int64), 1.0, seed=0)
    assert calls == []


def test_1d_preset_refuses_a_grid_and_the_2d_preset_a_vector():
    """Kills: MWEM (1-D) silently run on a grid's flattened cells, or MWEM-2D on a vector: both refused,
    naming the preset and what it supports, before the kernel exists."""
    with pytest.raises(InvalidParameter, match="'MWEM' supports 1-D"):
        make_algorithm("MWEM").run(np.ones((4, 4), dtype=np.int64), 1.0, seed=0)
    with pytest.raises(InvalidParameter, match="'MWEM-2D' supports 2-D"):
        make_algorithm("MWEM-2D").run(np.ones(16, dtype=np.int64), 1.0, seed=0)
