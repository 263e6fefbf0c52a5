"""Block partitions (dphist.partition_blocks): axis-aligned boxes tiling a grid, described by edges and
per-block steps.  Their permutation form against the cell-by-cell definition, the kernel's sums and the
spread against the permutation's, the checks from the description, and broken twins the kernel and the
pipeline must refuse.  Each test names the mutation it kills."""
import pickle

import numpy as np
import pytest

from dphist import InvalidParameter, Partition, PrivacyViolation
from dphist.components.base import Partitioner
from dphist.kernel.noise import SeededLaplace
from dphist.kernel.private import PrivateKernel
from dphist.partition_blocks import BlockPartition, block_sums, checked_block_partition
from dphist.pipeline import Pipeline


def _labels(shape, edges, steps=None):
    """Every cell's group by definition, cell by cell: its block (row-major), then its sub-block inside the
    block (row-major, sub-blocks of steps[block] cells), groups numbered block by block."""
    blocks = [np.searchsorted(e, np.arange(n), side="right") - 1 for e, n in zip(edges, shape)]
    nb = [len(e) - 1 for e in edges]
    labels = np.empty(shape, dtype=np.int64)
    first, group_of = 0, {}
    for b in range(int(np.prod(nb))):
        coords = np.unravel_index(b, nb)
        ext = [edges[a][coords[a] + 1] - edges[a][coords[a]] for a in range(len(shape))]
        step = ext if steps is None else steps[b]
        across = [-(-ext[a] // step[a]) for a in range(len(shape))]
        group_of[b] = (first, across, step)
        first += int(np.prod(across))
    for cell in np.ndindex(*shape):
        b = int(np.ravel_multi_index([blocks[a][cell[a]] for a in range(len(shape))], nb))
        start, across, step = group_of[b]
        local = [(cell[a] - edges[a][blocks[a][cell[a]]]) // step[a] for a in range(len(shape))]
        labels[cell] = start + int(np.ravel_multi_index(local, across))
    return labels.reshape(-1)


def _cases():
    rng = np.random.default_rng(4)
    out = []
    for shape in [(1, 1), (5, 7), (13, 4), (17, 11), (3, 4, 5)]:
        for _ in range(3):
            edges = [np.unique(np.r_[0, rng.integers(1, n + 1, rng.integers(0, 4)), n]) if n > 1 else np.array([0, 1])
                     for n in shape]
            blocks = int(np.prod([len(e) - 1 for e in edges]))
            out.append((shape, edges, None))
            out.append((shape, edges, rng.integers(1, 6, (blocks, len(shape)))))
    return out


@pytest.mark.parametrize("shape,edges,steps", _cases())
def test_block_partition_is_the_labels_partition(shape, edges, steps):
    """Kills: refined cuts that miss a sub-block's first cell, a group numbered column-major or across
    blocks, a sub-block cut by the wrong border, sizes of the wrong sub-block, a repeat along the wrong
    axis, the reduction along an axis summing the wrong runs (2-D and 3-D grids, ragged blocks): the
    lazily built order and bounds equal ``Partition.from_labels`` of the cell-by-cell definition, and the
    kernel's sums, the labels and the spread equal the permutation form's."""
    p = BlockPartition(shape, edges, steps)
    want = Partition.from_labels(_labels(shape, edges, steps))
    assert np.array_equal(p.order, want.order) and np.array_equal(p.bounds, want.bounds)
    assert p.n_groups == want.n_groups and np.array_equal(p.sizes, want.sizes)
    x = np.random.default_rng(1).integers(0, 1000, int(np.prod(shape))).astype(np.int64)
    assert np.array_equal(block_sums(x, p), want.sums(x))
    assert np.array_equal(p.labels(), want.labels())
    totals = np.random.default_rng(2).normal(size=want.n_groups)
    assert np.array_equal(p.spread(totals), want.spread(totals))
    batch = np.random.default_rng(3).normal(size=(2, want.n_groups))
    assert np.array_equal(p.expand(batch), want.expand(batch))
    assert pickle.loads(pickle.dumps(p)) == want


def test_large_grids_take_every_reduction_route():
    """Kills: a fast route of the reduction (the axis moved to the front, runs of one height summed by a
    reshape or a gather) adding the wrong rows: on a 300 x 280 grid with sub-blocks of 1 to 9 cells the
    sums equal the permutation's, exactly, with counts near the kernel's cap (2**40: int64 sums, no
    float rounding)."""
    rng = np.random.default_rng(5)
    shape = (300, 280)
    p = BlockPartition.regular(shape, 23).nested(rng.integers(1, 10, 14 * 13))
    x = rng.integers(0, 1 << 40, shape[0] * shape[1], dtype=np.int64)
    assert np.array_equal(block_sums(x, p), Partition(p.order, p.bounds).sums(x))
    q = BlockPartition.regular(shape, (2, 3))
    assert np.array_equal(block_sums(x, q), Partition(q.order, q.bounds).sums(x))


def test_the_kernel_measures_blocks_as_their_permutation():
    """Kills: the kernel's block route measuring other sums, another group order or charging another
    number of answers than ``laplace_partition`` of the same groups as a permutation: the same seed gives
    the same noisy answers and the same ledger row."""
    x = np.random.default_rng(6).integers(0, 50, (30, 20))
    p = BlockPartition.regular(x.shape, 7).nested(np.arange(15) % 4 + 1)
    answers, rows = [], []
    for part in (p, Partition(p.order, p.bounds)):
        kernel = PrivateKernel(x, SeededLaplace(np.random.default_rng(9)))
        answers.append(kernel.handle("c", "finalizer", 1.0).laplace_partition(part, 1.0))
        rows.append([(e.primitive, e.epsilon, e.sensitivity, e.answers) for e in kernel.ledger])
    assert np.array_equal(answers[0], answers[1]) and rows[0] == rows[1]


class OverlappingBlocks(Partitioner):
    """Broken twin: boxes that overlap (edges 0, 4, 2, n: rows 2-3 in two blocks), built unchecked."""

    name = "twin.overlapping-blocks"
    citation = "dphist tests: a broken twin"

    def partition(self, bins, ctx):
        n1, n2 = ctx.shape
        return BlockPartition(ctx.shape, ([0, 4, 2, n1], [0, n2]), validate=False)


class GappedBlocks(Partitioner):
    """Broken twin: boxes that leave the last column out (column edges end at n2 - 1), built unchecked."""

    name = "twin.gapped-blocks"
    citation = "dphist tests: a broken twin"

    def partition(self, bins, ctx):
        n1, n2 = ctx.shape
        return BlockPartition(ctx.shape, ([0, n1], [0, 3, n2 - 1]), validate=False)


class TrueTotalBlocks(Partitioner):
    """Broken twin: UG's blocks sized from the true total (as the DPBench code does, ``x.sum()``), read
    through the kernel's private reader."""

    name = "twin.true-total-blocks"
    citation = "dphist tests: a broken twin"

    def partition(self, bins, ctx):
        total = int(ctx.data._kernel._true_counts().sum())
        return BlockPartition.regular(ctx.shape, max(1, int(np.sqrt(bins.n_bins / max(total / 10, 1)))))


@pytest.mark.parametrize("twin,message", [(OverlappingBlocks, "axis 0 must increase strictly"),
                                          (GappedBlocks, "axis 1 must increase strictly")])
def test_the_pipeline_refuses_overlapping_or_gapped_blocks(twin, message):
    """Kills: a stage gate or kernel that takes a block partition's word for its validity (boxes that
    overlap count a cell twice, a gap drops one): the pipeline refuses the partitioner's groups, naming it,
    before the finalizer runs or is charged; the kernel refuses them before any charge."""
    x = np.ones((10, 8), dtype=np.int64)
    pipe = Pipeline(None, None, twin(), "group-mean", (0, 0, 1), dims=(2,))
    with pytest.raises(InvalidParameter, match=f"partitioner {twin.name} returned an invalid partition.*{message}"):
        pipe.run(x, 1.0, seed=1)
    kernel = PrivateKernel(x, SeededLaplace(np.random.default_rng(0)))
    handle = kernel.handle("c", "finalizer", 1.0)
    with pytest.raises(InvalidParameter, match=message):
        handle.laplace_partition(twin().partition(Partition.singletons(80), type("C", (), {"shape": x.shape})), 1.0)
    assert handle.spent == 0 and len(kernel.ledger) == 0


def test_the_gate_refuses_blocks_sized_from_the_true_counts():
    """Kills: a kernel gate that lets a partitioner read the counts outside a primitive (the block size
    taken from the true total): the run stops with a PrivacyViolation."""
    with pytest.raises(PrivacyViolation):
        Pipeline(None, None, TrueTotalBlocks(), "group-mean", (0, 0, 1), dims=(2,)).run(np.ones((10, 8)), 1.0, seed=1)


def test_the_kernel_checks_its_own_copy_against_its_grid():
    """Kills: the kernel measuring the caller's arrays (changed after the check) or a partition over
    another grid of the same number of cells, or steps that are not positive or not one row per block:
    the checked copy is immutable, the wrong shape, zero steps and missing rows are refused by name."""
    edges = [np.array([0, 2, 6]), np.array([0, 5])]
    p = BlockPartition((6, 5), edges)
    checked = checked_block_partition(p, (6, 5))
    edges[0][1] = 4                                   # the caller's array, changed after the check
    assert checked.edges[0].tolist() == [0, 2, 6] and not checked.edges[0].flags.writeable
    with pytest.raises(ValueError):
        checked.edges[0].setflags(write=True)
    with pytest.raises(AttributeError):
        checked.edges = ()
    with pytest.raises(InvalidParameter, match=r"grid of shape \(6, 5\), the histogram's is \(5, 6\)"):
        checked_block_partition(p, (5, 6))
    with pytest.raises(InvalidParameter, match="positive"):
        BlockPartition((6, 5), ([0, 6], [0, 5]), [[0, 1]])
    with pytest.raises(InvalidParameter, match="one row of 2 per block"):
        BlockPartition((6, 5), ([0, 3, 6], [0, 5]), [[1, 1]])


def test_a_grid_run_builds_no_permutation():
    """Kills: UG's or AG's run building the cell-level permutation of its blocks (the work this structure
    removes: a sort or a full check of N cells) -- the released partition's order is built only when read,
    and then equals the labels' order."""
    import dphist
    from dphist.partition_blocks import _ORDER
    x = np.random.default_rng(7).integers(0, 30, (40, 50))
    for name in ("UG", "AG"):
        part = dphist.make_algorithm(name).run(x, 1.0, seed=3).partition
        assert isinstance(part, BlockPartition)
        with pytest.raises(AttributeError):
            _ORDER.__get__(part)                       # not built by the run
        assert np.array_equal(part.order, Partition.from_labels(part.labels()).order)
