"""DPCube on a grid: the vectorised kd-tree of boxes against a plain recursion of DPBench's rule, the
block cells, the box partition.  Each test names the mutation it kills.

(A scratch run against DPBench's ``DPcube_engine.dpcube`` itself, with its Laplace draws replaced by
distinct markers, gave the same leaf boxes on three grids: BENCHMARKS.md, DPCube-2D.)"""
import numpy as np
import pytest

from dphist_dpcube.grid import block_partition, boxes_partition, kd_boxes


def _recursive(est, eps, r0, r1, c0, c1, out):
    """DPBench's rule as a plain recursion (slow; for the check only)."""
    def sse(a0, a1, b0, b1):
        v = est[a0:a1, b0:b1]
        return float((v * v).sum() - v.sum() ** 2 / v.size)
    rows = (r1 - r0) > (c1 - c0)
    length = (r1 - r0) if rows else (c1 - c0)
    cur, pos = sse(r0, r1, c0, c1) + 1.0 / eps, None
    for k in range(1, length):
        if rows:
            c = sse(r0, r0 + k, c0, c1) + sse(r0 + k, r1, c0, c1)
        else:
            c = sse(r0, r1, c0, c0 + k) + sse(r0, r1, c0 + k, c1)
        if c + 2.0 / eps < cur - 1e-9:
            cur, pos = c + 2.0 / eps, k
    if pos is None:
        out.append((r0, r1, c0, c1))
    elif rows:
        _recursive(est, eps, r0, r0 + pos, c0, c1, out)
        _recursive(est, eps, r0 + pos, r1, c0, c1, out)
    else:
        _recursive(est, eps, r0, r1, c0, c0 + pos, out)
        _recursive(est, eps, r0, r1, c0 + pos, c1, out)


@pytest.mark.parametrize("shape,eps", [((12, 9), 0.05), ((16, 16), 1.0)])
def test_kd_boxes_equal_the_recursion(shape, eps):
    """Kills: cutting the shorter side, ties to the wide side going to rows, a penalty of 2/eps on both
    sides of the stopping rule, the rightmost instead of the leftmost best cut."""
    est = np.round(np.random.default_rng(len(shape) + shape[0]).gamma(0.3, 20, shape), 1)
    ref = []
    _recursive(est, eps, 0, shape[0], 0, shape[1], ref)
    ours = {tuple(int(v) for v in b) for b in kd_boxes(est, eps)}
    assert ours == set(ref)


def test_partitions_tile_the_grid():
    """Kills: a box partition that misses or repeats a cell, blocks that drop the remainder row/column."""
    boxes = kd_boxes(np.random.default_rng(0).gamma(0.5, 10, (23, 17)), 0.2)
    part = boxes_partition(boxes, 17)
    assert np.array_equal(np.sort(part.order), np.arange(23 * 17))
    assert np.array_equal(part.sizes, (boxes[:, 1] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 2]))
    blocks = block_partition((23, 17), 11)
    assert blocks.n_groups == 3 * 2 and sorted(blocks.sizes.tolist()) == sorted([121, 66, 121, 66, 11, 6])


def test_dpcube_2d_conformance():
    """Kills: the 2-D preset mis-spending or releasing the wrong shape on grids, the blocks not charged
    alpha * eps (the kit)."""
    from dphist import testing
    testing.check_algorithm("DPCube-2D")
