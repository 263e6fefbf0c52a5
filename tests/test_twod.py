"""d-dimensional histograms in the core: shape through kernel, pipeline and release; presets' declared
dims; rectangle workloads from summed-area tables; the closed form over all rectangles; the
linearisations (sorters and the Linearised wrapper); bad input refused before anything is spent.

Each test names the mutation it kills."""
import numpy as np
import pytest

import dphist
from dphist import InvalidHistogram, InvalidParameter, Pipeline, metrics, workloads
from dphist.kernel import PrivateKernel, SeededLaplace
from dphist.linearise import Linearised, curve_order, curve_positions, hilbert_index, morton_index


def _grid(shape=(8, 8), seed=0):
    return np.random.default_rng(seed).integers(0, 30, shape)


def test_shape_flows_to_release_and_context():
    """Kills: a pipeline flattening the grid without recording its shape (release.shape (64,)), the
    context not seeing the shape, or a grid flattened column-major instead of row-major."""
    x = _grid((4, 6))
    seen = {}

    class Spy(dphist.Finalizer):
        name, spends = "spy", True

        def finalize(self, bins, ctx):
            seen["shape"], seen["dims"] = ctx.shape, ctx.dims
            return bins.spread(ctx.data.laplace_partition(bins, ctx.budget))

    rel = Pipeline(None, None, "singleton", Spy(), dims=(2,)).run(x, 1e6, seed=1)
    assert seen == {"shape": (4, 6), "dims": 2}
    assert rel.shape == (4, 6) and rel.dims == 2 and rel.estimate.shape == (24,)
    assert np.allclose(rel.grid, x, atol=1e-3)            # row-major: grid[i, j] = estimate[6 i + j]
    assert rel.to_dict()["shape"] == [4, 6] and abs(rel.ledger.total - 1e6) < 1e-3
    assert rel.rerun(x).estimate.tolist() == rel.estimate.tolist()
    one = dphist.make_algorithm("identity").run(x.ravel(), 1.0, seed=1)
    assert one.shape == (24,) and "shape" not in one.to_dict()


def test_kernel_keeps_public_shape():
    """Kills: a kernel refusing grids, or one whose handle reports another shape than the data's."""
    k = PrivateKernel(_grid((3, 5)), SeededLaplace(np.random.default_rng(0)))
    assert k.n == 15 and k.shape == (3, 5) and k.handle("c", "finalizer", 1.0).shape == (3, 5)
    with pytest.raises(InvalidParameter, match=r"shape \(5, 3\) given for a histogram of shape \(3, 5\)"):
        PrivateKernel(_grid((3, 5)), SeededLaplace(np.random.default_rng(0)), shape=(5, 3))


def test_one_d_preset_refuses_a_grid_before_spending():
    """Kills: a 1-D preset silently run on the flattened grid (a release whose ranges mix rows), or
    an error that does not name the preset and what it supports, or a charge before the refusal."""
    charged = []

    class Watch(dphist.Finalizer):
        name, spends = "watch", True

        def finalize(self, bins, ctx):
            charged.append(1)
            return bins.spread(ctx.data.laplace_partition(bins, ctx.budget))

    pipe = Pipeline(None, None, "singleton", Watch(), name="mine")
    with pytest.raises(InvalidParameter, match=r"'mine' supports 1-D histograms only; got a 2-D histogram of "
                                               r"shape \(8, 8\).*linearise='hilbert'.*nothing was spent"):
        pipe.run(_grid(), 1.0, seed=1)
    assert charged == []
    with pytest.raises(InvalidParameter, match=r"'AHP' supports 1-D histograms only"):
        dphist.make_algorithm("AHP").run(_grid(), 1.0, seed=1)
    two = Pipeline(None, None, "singleton", "group-mean", dims=(1, 2), name="flat")
    with pytest.raises(InvalidParameter, match=r"'flat' supports 1-D and 2-D histograms; got a 3-D"):
        two.run(np.ones((2, 2, 2), dtype=int), 1.0, seed=1)


@pytest.mark.parametrize("bad, message", [
    ([[1, 2], [3]], "ragged"),
    ([[1, 2], [3, -1]], r"cell \(1, 1\) is -1"),
    ([[1.5, 2], [3, 4]], r"cell \(0, 0\) is 1.5, not an integer"),
    (np.zeros((0, 3), dtype=int), r"empty \(shape \(0, 3\)"),
    (5, "scalar"),
])
def test_bad_grids_are_named(bad, message):
    """Kills: a ragged list turned into an object array and run, a bad cell named by its flattened
    index only, an empty axis or a scalar accepted."""
    with pytest.raises(InvalidHistogram, match=message):
        dphist.make_algorithm("identity").run(bad, 1.0, seed=1)


def test_preset_dims_declared_and_validated():
    """Kills: make_algorithm not carrying the preset's dims, a malformed dims declaration accepted,
    or from_spec losing the dims (a rerun of a 2-D release refused)."""
    assert dphist.make_algorithm("identity").dims == "any"
    assert dphist.make_algorithm("AHP").dims == (1,)
    for bad in ((), (0,), "2", (1.5,), (True,)):
        with pytest.raises(InvalidParameter, match="dims must be"):
            Pipeline(dims=bad)
    p = Pipeline(None, None, "singleton", "group-mean", dims=(2,))
    assert Pipeline.from_spec(p.spec).dims == (2,)


def test_list_dims_cli(capsys):
    """Kills: `dphist list --dims 2` listing 1-D-only presets, or missing the 2-D ones."""
    from dphist.cli import main
    assert main(["list", "--dims", "2"]) == 0
    out = capsys.readouterr().out
    names = [line.split()[0] for line in out.splitlines() if line.startswith("  ")]
    assert "identity" in names and "uniform" in names and "AHP" not in names and "DAWA" not in names


# ------------------------------------------------------------------------------ rectangle workloads
def _brute(x, lo, hi):
    return np.array([x[l[0]:h[0], l[1]:h[1]].sum() for l, h in zip(lo, hi)])


def test_rectangles_match_brute_force_and_matrix():
    """Kills: a wrong corner sign or an off-by-one in the summed-area table (answers differ from the
    slices' sums), or a query matrix over column-major cells."""
    x = _grid((6, 9)).astype(float)
    w = workloads.dpbench_random_rectangles((6, 9), 300)
    assert np.allclose(w.answer(x), _brute(x, w.lo, w.hi))
    assert np.allclose(w.answer(x.ravel()), w.matrix() @ x.ravel())
    m = workloads.marginals((6, 9)).answer(x)
    assert np.allclose(m, np.concatenate([x.sum(axis=1), x.sum(axis=0)]))
    p = workloads.prefix_rectangles((6, 9)).answer(x)
    assert np.allclose(p, np.cumsum(np.cumsum(x, 0), 1).ravel())
    assert np.allclose(workloads.identity_cells((6, 9)).answer(x), x.ravel())


def test_dpbench_random_rectangles_reproduce_the_reference_draws():
    """Kills: drawing all sides before all corners (or the axes in another order, or another seed):
    the first queries of DPBench's RandomRange(None, (32, 16), m, seed=9001), recorded from
    dpcomp_core in a scratch run (lower corners, upper corners exclusive)."""
    w = workloads.dpbench_random_rectangles((32, 16), 4)
    assert w.lo.tolist() == [[5, 2], [24, 5], [2, 4], [16, 0]]
    assert w.hi.tolist() == [[31, 15], [32, 13], [32, 16], [30, 11]]
    w2 = workloads.dpbench_random_rectangles((8, 8), 5)
    assert w2.lo.tolist() == [[5, 2], [0, 0], [1, 5], [2, 4], [0, 0]]
    assert w2.hi.tolist() == [[7, 7], [8, 8], [8, 6], [8, 8], [6, 3]]
    assert workloads.dpbench_random_rectangles((40,), 50).lo[:, 0].tolist() == \
        workloads.dpbench_random_ranges(40, 50).lo.tolist()


def test_cached_random_rectangles_are_not_shared_with_callers():
    """The draws are cached per (shape, m, seed) (MWEM on a grid rebuilds its workload every run).
    Kills: the cache handing out its own arrays, so that a caller editing one workload's corners
    changes the next one's; and a cache keyed without the seed or the count."""
    w = workloads.dpbench_random_rectangles((8, 8), 5)
    w.lo[:] = 0
    w.hi[:] = 1
    again = workloads.dpbench_random_rectangles((8, 8), 5)
    assert again.lo.tolist() == [[5, 2], [0, 0], [1, 5], [2, 4], [0, 0]]
    assert again.hi.tolist() == [[7, 7], [8, 8], [8, 6], [8, 8], [6, 3]]
    r = workloads.dpbench_random_ranges(40, 7)
    r.lo[:] = 0
    assert workloads.dpbench_random_ranges(40, 7).lo.tolist() == \
        workloads.dpbench_random_rectangles((40,), 7).lo[:, 0].tolist() != [0] * 7
    assert workloads.dpbench_random_rectangles((8, 8), 5, seed=1).lo.tolist() != again.lo.tolist()
    assert len(workloads.dpbench_random_rectangles((8, 8), 6)) == 6


def test_all_rectangles_closed_form():
    """Kills: a wrong Laplacian on one axis in AllRectangles.sum_squared (differs from enumerating
    the 420 rectangles of a 5 x 7 grid), or the metrics not routing AllRectangles to it."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 9, (5, 7)).astype(float)
    x_hat = x + rng.normal(size=x.shape)
    a = workloads.AllRectangles((5, 7))
    e = a.answer(x_hat - x)
    assert len(a) == e.size == 15 * 28
    assert np.isclose(metrics.mse(a, x, x_hat), np.mean(e ** 2))
    both = metrics.evaluate(a, x, x_hat.ravel(), ["mse", "scaled-l2", "max"])
    assert np.isclose(both["scaled-l2"], np.linalg.norm(e) / (e.size * x.sum()))
    assert np.isclose(both["max"], np.abs(e).max())


def test_rectangle_workload_bad_input():
    """Kills: a rectangle outside the grid or an empty one accepted, or a vector of the wrong size
    answered."""
    with pytest.raises(InvalidParameter, match=r"rectangle 0 is \[\[0, 0\], \[3, 2\]\), not inside"):
        workloads.RectangleWorkload((2, 2), [[0, 0]], [[3, 2]])
    with pytest.raises(InvalidParameter, match=r"rectangle 0 .* or empty"):
        workloads.RectangleWorkload((2, 2), [[1, 0]], [[1, 2]])
    with pytest.raises(InvalidParameter, match=r"shape \(2, 2\) \(4 cells\), the histogram has shape \(5,\)"):
        workloads.marginals((2, 2)).answer(np.ones(5))
    with pytest.raises(InvalidParameter, match="unknown workload 'ranges-5%' for a grid"):
        workloads.make_rectangles("ranges-5%", (4, 4))


# -------------------------------------------------------------------------------- linearisations
def test_hilbert_is_a_continuous_curve():
    """Kills: a wrong rotation in hilbert_index (consecutive positions not adjacent cells, or not a
    bijection onto 0..N-1) on 2^k grids."""
    for k in (1, 2, 5):
        n = 1 << k
        i, j = np.unravel_index(np.arange(n * n), (n, n))
        d = hilbert_index(i, j, k)
        assert np.array_equal(np.sort(d), np.arange(n * n))
        inv = np.argsort(d)
        steps = np.abs(np.diff(i[inv])) + np.abs(np.diff(j[inv]))
        assert np.all(steps == 1)


def test_morton_and_row_major():
    """Kills: Z-order bits interleaved in the wrong order, or row-major not the identity."""
    assert morton_index([np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])], 1).tolist() == [0, 1, 2, 3]
    assert curve_positions((2, 4), "z-order").tolist() == [0, 1, 4, 5, 2, 3, 6, 7]
    assert np.array_equal(curve_order((3, 5), "row-major"), np.arange(15))


def test_non_square_grids_skip_outside_positions():
    """Kills: padding cells reaching the 1-D run (a linearised vector longer than the grid), or a
    curve order that is not a permutation of the grid's cells."""
    for shape in ((3, 5), (1, 7), (6, 6), (2, 3, 5)):
        for curve in ("z-order", "row-major") + (("hilbert",) if len(shape) <= 2 else ()):
            order = curve_order(shape, curve)
            assert np.array_equal(np.sort(order), np.arange(np.prod(shape)))
    with pytest.raises(InvalidParameter, match="Hilbert curve is defined here for 1-D and 2-D grids, got 3"):
        dphist.make_algorithm("identity", linearise="hilbert").run(np.ones((2, 2, 2), dtype=int), 1.0, seed=1)
    with pytest.raises(InvalidParameter, match="unknown linearisation 'peano'"):
        dphist.make_algorithm("AHP", linearise="peano")


def test_linearised_preset_runs_on_the_curve_order():
    """Kills: the wrapper running the 1-D preset on the row-major vector instead of the curve order,
    or mapping the estimate back with the inverse permutation (the release's cells swapped)."""
    x = _grid((8, 8), seed=3)
    order = curve_order(x.shape, "hilbert")
    rel = dphist.make_algorithm("AHP", linearise="hilbert").run(x, 1.0, seed=5)
    ref = dphist.make_algorithm("AHP").run(x.ravel()[order], 1.0, seed=5)
    assert np.array_equal(rel.estimate[order], ref.estimate)
    assert rel.shape == (8, 8) and abs(rel.ledger.total - 1.0) < 1e-12 and rel.spec["linearise"] == "hilbert"
    assert np.array_equal(rel.partition.order, order[ref.partition.order])
    assert rel.rerun(x).estimate.tolist() == rel.estimate.tolist()
    assert Pipeline.from_spec(rel.spec).run(x, 1.0, seed=5).estimate.tolist() == rel.estimate.tolist()
    # a Grid histogram from records carries its 2-D shape into the run
    h = dphist.histogram({"a": np.repeat(np.arange(4), 4), "b": np.tile(np.arange(4), 4)}, ("a", "b"),
                         ("0:4:1", "0:4:1"))
    assert dphist.make_algorithm("AHP", linearise="z-order").run(h, 1.0, seed=1).shape == (4, 4)


def test_curve_sorter_needs_no_initializer():
    """Kills: the pipeline refusing a data-independent sorter without H~, or the sorter not ordering
    the cells along the curve (groups of 4 consecutive Hilbert cells are 2 x 2 blocks)."""
    x = _grid((4, 4))
    rel = Pipeline(None, "hilbert", "singleton", "group-mean", dims=(2,)).run(x, 1.0, seed=1)
    order = curve_order((4, 4), "hilbert")
    assert np.array_equal(rel.partition.order, order)
    blocks = np.sort(order.reshape(4, 4), axis=1)          # 4 consecutive Hilbert cells: a 2 x 2 block
    assert blocks[0].tolist() == [0, 1, 4, 5]
    with pytest.raises(InvalidParameter, match="sorter needs an initializer"):
        Pipeline(None, "noisy-count", "singleton", "group-mean")


# ------------------------------------------------------------------------------- datasets, 2-D
def test_generator_reduces_grids_and_samples():
    """Kills: a 2-D reduction merging along one axis only or summing the wrong blocks (the block sums
    differ from a loop over blocks), a sample not of the requested scale, or a 2-D dataset flattened."""
    from dphist.datasets import Dataset, generator
    src = Dataset("g", np.arange(64).reshape(8, 8), "test", "8 x 8")
    red = generator.reduce_domain(src.counts, (4, 2))
    ref = np.array([[src.counts[2 * a:2 * a + 2, 4 * b:4 * b + 4].sum() for b in range(2)] for a in range(4)])
    assert np.array_equal(red, ref)
    g = generator.generate(src, scale=1000, domain=(4, 4), seed=3)
    assert g.counts.shape == (4, 4) and g.scale == 1000 and g.grid_shape == (4, 4)
    assert np.isclose(g.meta["population"].sum(), 1000) and g.meta["domain"] == (4, 4)
    with pytest.raises(InvalidParameter, match="axis 1: domain size 3 does not divide"):
        generator.generate(src, domain=(4, 3))


def test_dpbench_2d_sources_by_name(dpbench_dir):
    """Kills: a wrong file behind a DPBench 2-D name (the scale of GOWALLA, DPBench's check-ins,
    is 6,442,863 over 256 x 256 cells).  Skips without the shared sources."""
    from dphist.datasets import files
    from dphist.datasets.lookup import load
    files.add_data_dir(dpbench_dir.parent / "2D")
    d = load("GOWALLA")
    assert d.counts.shape == (256, 256) and d.scale == 6_442_863


# ------------------------------------------------------------------------------------ audit, 2-D
def test_grid_pairs_are_neighbours_on_grids():
    """Kills: a grid pair whose neighbour differs in another cell than the named one (row-major
    flattening lost), or a shape that does not hold the cells accepted."""
    from dphist.audit.pairs import GRID_PAIRS, Pair, grid_pair
    for p in GRID_PAIRS:
        d = p.counts_prime - p.counts
        assert p.counts.ndim == 2 and np.abs(d).sum() == 1 and d.reshape(-1)[p.bin] == p.change
    p = grid_pair("mine", np.zeros((3, 4), dtype=int), (2, 1))
    assert p.bin == 9 and "cell (2, 1)" in p.describe() and p.to_dict()["shape"] == [3, 4]
    with pytest.raises(InvalidParameter, match="does not hold its 5 cells"):
        Pair("bad", (0,) * 5, 0, 1, 1, (2, 2))
    with pytest.raises(InvalidParameter, match=r"cell \(3, 0\) is outside"):
        grid_pair("bad", np.zeros((3, 4), dtype=int), (3, 0))


def test_audit_uses_grid_pairs_and_catches_a_2d_twin():
    """Kills: the auditor running a 2-D-only pipeline on its 1-D families (every case refused, an
    empty pass), or the grid families not reaching the estimation: the half-scale Laplace twin on
    a 2-D pipeline fails the fast audit; the correct Laplace mechanism on grids passes."""
    from dphist.audit import audit
    from dphist.audit.twins import BatchedHalfScaleLaplace
    bad = audit(Pipeline(None, None, "singleton", BatchedHalfScaleLaplace(), dims=(2,), name="half"),
                level="fast", seed=1)
    assert not bad.passed and "grid-" in bad.witness.pair.name
    good = audit(Pipeline(None, None, "singleton", "group-mean", dims=(2,), name="laplace-2d"), level="fast", seed=1)
    assert good.passed and any("grid pair families" in n for n in good.notes)


# ---------------------------------------------------------------------------------------- plots
def test_group_outlines_and_heatmap():
    """Kills: outlines drawn between cells of the same group (or missing between different ones),
    x and y swapped, a straight run of edges not merged into one segment, or merged across a cell
    where the edge stops; or a 1-D release drawn as a heat map."""
    from dphist import plots
    seg = plots.group_outlines(np.array([[0, 0, 1], [2, 2, 1]]))
    assert sorted(map(tuple, seg.reshape(-1, 4).tolist())) == sorted([
        (-0.5, 0.5, 1.5, 0.5),                                # below row 0, columns 0 and 1: one run
        (1.5, -0.5, 1.5, 1.5)])                               # right of column 1, rows 0 and 1: one run
    seg = plots.group_outlines(np.array([[0, 1, 1, 2], [0, 3, 1, 2], [0, 0, 0, 2]]))
    assert sorted(map(tuple, seg.reshape(-1, 4).tolist())) == sorted([
        (0.5, 0.5, 1.5, 0.5),                                 # below (0, 1) only
        (0.5, 1.5, 2.5, 1.5),                                 # below (1, 1) and (1, 2): one run, stops at (1, 3)
        (0.5, -0.5, 0.5, 1.5), (1.5, 0.5, 1.5, 1.5),          # right of column 0 (rows 0-1, not 2), of (1, 1)
        (2.5, -0.5, 2.5, 2.5)])                               # right of column 2, every row
    rel = Pipeline(None, None, "whole", "group-mean", dims=(2,)).run(_grid((4, 4)), 1.0, seed=1)
    fig = plots.release_heatmap(rel, truth=_grid((4, 4)), titles=["whole"])
    assert [ax.get_title() for ax in fig.axes[:2]] == ["truth", "whole (1 groups)"]
    with pytest.raises(InvalidParameter, match="draws 2-D releases"):
        plots.release_heatmap(dphist.make_algorithm("identity").run(np.arange(5), 1.0, seed=1))
