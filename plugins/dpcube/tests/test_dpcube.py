"""dphist-dpcube: conformance, the kd-tree against a bin-level brute force, the inference's closed form,
the ledger, privacy hygiene and bad input.  Each test names the mutation it kills."""
import types

import numpy as np
import pytest

import dphist
from dphist import InvalidParameter, Pipeline, make_algorithm, testing
from dphist.partition import Partition
from dphist_dpcube import (CellInitializer, KDTreePartitioner, LeastSquaresFinalizer, cell_bounds, kd_regions,
                           least_squares_cells)
from dphist_dpcube.cells import WIDTH_NOTE


# ------------------------------------------------------------------ conformance

@pytest.mark.parametrize("cls", [CellInitializer, KDTreePartitioner])
def test_components_conform(cls):
    # kills: spending without a share / not the whole share, non-reproducible output, reading counts
    # outside the kernel, a release-mode failure (harness pipelines of the conformance kit)
    testing.check_component(cls)


def test_least_squares_finalizer_conforms_with_cells_and_after_a_per_bin_initializer():
    # kills: the finalizer failing, or charging != its share, with dpcube.cells' cells or with the core's
    # per-bin laplace initializer (every bin a cell)
    testing.check_component(LeastSquaresFinalizer)
    testing.check_component(LeastSquaresFinalizer,
                            pipeline=Pipeline("dpcube.cells", None, "dpcube.kd", "dpcube.least-squares",
                                              (0.5, 0.0, 0.5)))


@pytest.mark.parametrize("options", [{}, dict(stop="variance"), dict(stop="variance", xi=3.0),
                                     dict(inference="least-squares"), dict(cell_width=1), dict(cell_width=100),
                                     dict(alpha=0.2, inference="least-squares")])
def test_preset_conforms(options):
    # kills: a preset whose shares do not add up to epsilon, an option that breaks the pipeline in either mode
    testing.check_algorithm("DPCube", **options)


@pytest.mark.parametrize("alpha", [0.5, 0.25])
def test_ledger_is_alpha_eps_on_cells_and_the_rest_on_regions(alpha):
    # kills: eps_1 and eps_2 swapped, the tree charged, the cells measured as bins (answers = n)
    n, eps = 100, 0.8
    x = testing.example_histograms(n)["power-law"]
    r = make_algorithm("DPCube", alpha=alpha).run(x, eps, seed=1)
    rows = list(r.ledger)
    assert [row.stage for row in rows] == ["initializer", "finalizer"]
    cells, regions = rows
    assert cells.epsilon == pytest.approx(alpha * eps) and cells.sensitivity == 1 and cells.answers == 10
    assert regions.epsilon == pytest.approx((1 - alpha) * eps) and regions.sensitivity == 1
    assert regions.answers == r.partition.n_groups
    assert r.ledger.total == pytest.approx(eps)


# ------------------------------------------------------------------ phase 1: cells

@pytest.mark.parametrize("n, width, expected", [(23, 11, [0, 11, 22, 23]), (22, 11, [0, 11, 22]), (5, 11, [0, 5]),
                                                (4, 1, [0, 1, 2, 3, 4])])
def test_cell_bounds_keep_the_remainder_in_a_last_cell(n, width, expected):
    # kills: dropping the remainder bins (n mod width), or splitting them over the other cells
    assert cell_bounds(n, width).tolist() == expected


def test_cells_are_spread_evenly_and_noisy_at_the_right_scale():
    # kills: spreading a cell's count without dividing by its width, noise per bin instead of per cell,
    # the noise scale 1/eps_1 wrong (measured: Laplace scale b has mean |noise| = b; 2,000 cells, 5% tolerance)
    n, width, eps = 22_000, 11, 0.5
    x = np.random.default_rng(0).integers(0, 40, n)
    r = Pipeline(CellInitializer(width), None, "singleton", "group-mean", (0.5, 0.0, 0.5)).run(x, eps, seed=3)
    h = r.noisy.reshape(-1, width)
    assert np.all(h == h[:, :1])                               # constant within each cell
    noise = h[:, 0] * width - x.reshape(-1, width).sum(axis=1)  # cell count error
    assert np.mean(np.abs(noise)) == pytest.approx(1 / (0.5 * eps), rel=0.05)
    assert r.notes[WIDTH_NOTE] == width


# ------------------------------------------------------------------ phase 2: the kd-tree

def _sse(v):
    return float(np.sum((v - v.mean()) ** 2)) if v.size else 0.0


def brute_force_regions(v, stop, eps_2=1.0, xi=0.0):
    """Region starts (bins) of DPBench's 1-D rule written out per bin: every cut tried, leftmost minimum."""
    starts = []

    def grow(lo, hi):
        node = _sse(v[lo:hi])
        best, cut = np.inf, None
        for k in range(lo + 1, hi):
            c = _sse(v[lo:k]) + _sse(v[k:hi])
            if c < best:
                best, cut = c, k
        if cut is not None and (best + 2 / eps_2 < node + 1 / eps_2 if stop == "dpbench" else node / (hi - lo) > xi):
            grow(lo, cut)
            grow(cut, hi)
        else:
            starts.append(lo)

    grow(0, v.size)
    return sorted(starts)


@pytest.mark.parametrize("stop", ["dpbench", "variance"])
def test_kd_tree_equals_the_bin_level_brute_force(stop):
    # kills: cutting at the middle or the median instead of the V-optimal point, the rightmost of tied
    # minima, a wrong stop inequality (1/eps_2 vs 2/eps_2), the variance divided by cells instead of bins,
    # and checks the claim that cutting only at cell boundaries gives DPBench's bin-level result
    # (120 seeded random instances with widths 1, 2, 3, 11 and a short last cell)
    rng = np.random.default_rng(2024)
    for trial in range(120):
        width = [1, 2, 3, 11][trial % 4]
        n = int(rng.integers(1, 70))
        bounds = cell_bounds(n, width)
        w = np.diff(bounds)
        level = rng.choice([0.0, 30.0, 200.0], size=w.size) * w
        sums = level + rng.laplace(0, rng.choice([1.0, 10.0]), w.size)
        v = np.repeat(sums / w, w)
        eps_2 = float(rng.choice([0.01, 0.1, 1.0]))
        xi = float(rng.choice([0.5, 50.0, 5000.0]))
        ours = bounds[kd_regions(sums, w, stop, eps_2=eps_2, xi=xi)][:-1].tolist()
        assert ours == brute_force_regions(v, stop, eps_2, xi), (trial, width, n, stop)


def test_compiled_kd_tree_equals_the_level_by_level_tree(monkeypatch):
    # kills, in the compiled node-by-node loop (dphist_dpcube._kd_kernel, used from COMPILED_CELLS cells; checked
    # by hand): the rightmost of tied best cuts (score >= best), the left child started a cell late, <= for < in
    # DPBench's rule (the exact tie at the end), >= for > in the variance rule; also a leaf left out.  Against the
    # vectorised levels (itself checked against the bin-level brute force above) on 48 seeded instances:
    # noisy levels, constant cells (every cut tied), a deep tree (a ramp), both stopping rules
    import dphist_dpcube.kdtree as kd
    rng = np.random.default_rng(11)
    for trial in range(48):
        m = int(rng.integers(1, 300))
        kind = trial % 3
        sums = (rng.choice([0.0, 30.0, 200.0], m) * 11 + rng.laplace(0, 5, m) if kind == 0 else
                np.full(m, 7.0) if kind == 1 else np.arange(m, dtype=float) ** 2)
        w = np.full(m, 11.0)
        w[-1] = float(rng.integers(1, 12))
        stop = ("dpbench", "variance")[trial % 2]
        args = dict(eps_2=float(rng.choice([0.01, 1.0, 10.0])), xi=float(rng.choice([0.0, 1.0, 50.0])))
        monkeypatch.setattr(kd, "COMPILED_CELLS", 1 << 30)
        levels = kd_regions(sums, w, stop, **args)
        monkeypatch.setattr(kd, "COMPILED_CELLS", 1)
        assert kd_regions(sums, w, stop, **args).tolist() == levels.tolist(), (trial, stop)
    # an exact tie of DPBench's rule (cells 0 and 2, eps_2 = 0.5: 2 - 2 + 4 < 2 + 2 is false): no cut
    assert kd_regions([0.0, 2.0], [1.0, 1.0], "dpbench", eps_2=0.5).tolist() == [0, 2]


def test_one_axis_regions_are_a_block_grid_measured_as_the_merged_partition():
    # kills: the regions' block grid built from other edges than the kd-tree's leaves (its bounds checked
    # against the merged partition's), and the kernel's 1-D block sums reduced at other cuts (the release
    # checked against the same run with the regions handed on as Partition.merge's groups)
    counts = np.random.default_rng(4).poisson(20.0, 5_000).astype(np.int64)
    release = make_algorithm("DPCube").run(counts, 1.0, seed=3)
    assert isinstance(release.partition, dphist.partition_blocks.BlockPartition)

    class Merged(KDTreePartitioner):
        def partition(self, bins, ctx):
            return bins.merge(super().partition(bins, ctx).bounds)

    merged = Pipeline("dpcube.cells", None, Merged(), "group-mean", (0.5, 0.0, 0.5)).run(counts, 1.0, seed=3)
    assert type(merged.partition) is Partition
    assert release.partition.bounds.tolist() == merged.partition.bounds.tolist()
    assert np.array_equal(release.estimate, merged.estimate)
    assert [(e.primitive, e.epsilon, e.answers) for e in release.ledger.entries] == \
        [(e.primitive, e.epsilon, e.answers) for e in merged.ledger.entries]


def test_dpbench_rule_splits_exactly_when_the_sse_drop_exceeds_one_over_eps2():
    # kills: a region cost of 2/eps_2^2 (the Laplace variance) or 2/eps_2 instead of the reference's 1/eps_2
    for eps_2 in (0.1, 1.0, 4.0):
        d = np.sqrt(2 / eps_2)                                   # two single-bin cells: SSE drop d^2/2 = 1/eps_2
        assert kd_regions([0.0, 1.01 * d], [1, 1], "dpbench", eps_2=eps_2).tolist() == [0, 1, 2]
        assert kd_regions([0.0, 0.99 * d], [1, 1], "dpbench", eps_2=eps_2).tolist() == [0, 2]


def test_tied_cuts_go_to_the_leftmost_as_in_the_reference():
    # kills: taking the rightmost (or any other) of tied best cuts; DPBench's loop keeps the first strict minimum.
    # [0, 12, 12, 0]: cuts after bin 1 and after bin 3 tie exactly (centred sums are exact in binary);
    # xi = 33 lets the root (variance 36) split but not its child [12, 12, 0] or [0, 12, 12] (variance 32)
    sums, widths = [0.0, 12.0, 12.0, 0.0], [1, 1, 1, 1]
    assert kd_regions(sums, widths, "variance", xi=33.0).tolist() == [0, 1, 4]
    assert brute_force_regions(np.array(sums), "variance", xi=33.0) == [0, 1]


def test_noise_threshold_is_the_variance_of_one_spread_cell():
    # kills: xi="noise" forgetting the cell width (2/eps_1^2) or using the total epsilon
    assert KDTreePartitioner(stop="variance").threshold(0.5, 11) == pytest.approx(2 / 5.5 ** 2)
    assert KDTreePartitioner(stop="variance", xi=7).threshold(0.5, 11) == 7.0


class _NoData:
    def __getattr__(self, name):
        raise AssertionError(f"touched ctx.data.{name}")


def _context(noisy, width, eps_in=0.5, eps_f=0.5):
    return types.SimpleNamespace(n=len(noisy), noisy=np.asarray(noisy, dtype=float), eps_in=eps_in, eps_f=eps_f,
                                 notes={WIDTH_NOTE: width}, data=_NoData(), budget=0.0)


def test_tree_reads_only_the_noisy_cells():
    # kills: any read through the data handle (the true counts) in the partitioner; a partition that is
    # not a function of H~ and the public parameters
    rng = np.random.default_rng(5)
    noisy = np.repeat(rng.laplace(40, 30, 30), 11)
    bins = Partition.singletons(noisy.size)
    first = KDTreePartitioner().partition(bins, _context(noisy, 11))
    assert first == KDTreePartitioner().partition(bins, _context(noisy, 11))
    assert np.all((first.bounds % 11 == 0) | (first.bounds == noisy.size))


def test_tree_refuses_sorted_bins():
    # kills: running the kd-tree on sorted bins, where cells are no longer runs of the domain
    with pytest.raises(InvalidParameter):
        Pipeline("dpcube.cells", "noisy-count", "dpcube.kd", "group-mean", (0.5, 0.0, 0.5)).run(
            np.arange(30), 1.0, seed=1)


# ------------------------------------------------------------------ the inference

def test_least_squares_closed_form_equals_a_weighted_least_squares_solve():
    # kills: swapped variances (s1 <-> s2), the correction not shared equally by the region's cells,
    # the region total not inverse-variance weighted (checked against numpy's lstsq on 50 instances)
    rng = np.random.default_rng(7)
    for _ in range(50):
        m = int(rng.integers(1, 12))
        starts = np.r_[0, np.sort(rng.choice(np.arange(1, m), size=int(rng.integers(0, m)), replace=False))] \
            if m > 1 else np.array([0])
        starts = np.unique(starts)
        y = rng.normal(0, 10, m)
        z = rng.normal(0, 10, starts.size)
        s1_sq, s2_sq = rng.uniform(0.1, 10, 2)
        rows = [np.eye(m) / np.sqrt(s1_sq)]
        ends = np.r_[starts[1:], m]
        region = np.zeros((starts.size, m))
        for r, (a, b) in enumerate(zip(starts, ends)):
            region[r, a:b] = 1
        A = np.vstack(rows + [region / np.sqrt(s2_sq)])
        rhs = np.r_[y / np.sqrt(s1_sq), z / np.sqrt(s2_sq)]
        expected = np.linalg.lstsq(A, rhs, rcond=None)[0]
        np.testing.assert_allclose(least_squares_cells(y, z, starts, s1_sq, s2_sq), expected, atol=1e-9)


def test_least_squares_refuses_regions_that_cut_cells_before_measuring():
    # kills: measuring (spending eps_2) before the check, or silently combining regions that split a cell
    noisy = np.repeat(np.arange(4.0), 11)
    bins = Partition.singletons(44).merge([0, 5, 11, 22])        # the region [5, 11) cuts the first cell
    with pytest.raises(InvalidParameter, match="unions of"):
        LeastSquaresFinalizer().finalize(bins, _context(noisy, 11))


def test_least_squares_refuses_a_noisy_histogram_that_is_not_constant_on_cells():
    # kills: weighting a per-bin H~ as if it were cell counts (variance off by the width), silently
    noisy = np.arange(22.0)
    bins = Partition.singletons(22).merge([0, 11])
    with pytest.raises(InvalidParameter, match="not constant"):
        LeastSquaresFinalizer().finalize(bins, _context(noisy, 11))


def test_the_cell_check_in_chunks_is_the_whole_comparison(monkeypatch):
    """``_spreads_evenly`` compares chunks of cells and answers what ``np.allclose`` of H~ and the full spread
    answers: a bin off in the last cell of the last chunk (a short remainder cell) or in the first cell of a
    middle chunk is found, an even spread passes.  Kills: a chunk skipped (the loop stopped after the first
    chunk, the step too long), a chunk's bins taken off by one (``cells[j] + 1`` or from ``cells[i] + 1``).
    Checked by hand: ``return True`` after the first chunk fails here."""
    from dphist_dpcube import least_squares as ls
    from dphist_dpcube.cells import cell_bounds, cell_sums
    monkeypatch.setattr(ls, "CHECK_CELLS", 2)
    cells = cell_bounds(7 * 11 + 4, 11)                           # 8 cells, the last of 4 bins: 4 chunks
    widths = np.diff(cells)
    even = np.repeat(np.arange(1.0, 9.0) / widths, widths)
    for bin_off in (None, cells[-2] + 3, cells[4]):
        noisy = even.copy()
        if bin_off is not None:
            noisy[bin_off] += 1e-3
        means = cell_sums(noisy, cells) / widths
        want = bool(np.allclose(noisy, np.repeat(means, widths), rtol=1e-9, atol=1e-9))
        assert ls._spreads_evenly(noisy, means, cells) is want
        assert want is (bin_off is None)


def test_inference_lowers_the_error_on_a_flat_histogram():
    # kills: an inference that ignores the cells (no gain) or weights them wrongly (a loss); 200 seeds
    # on a flat histogram, where the tree keeps large regions: cells add information about each region
    x = np.full(440, 50)
    errors = {}
    for inference in ("none", "least-squares"):
        pipe = make_algorithm("DPCube", inference=inference)
        errors[inference] = np.mean([np.sum((pipe.run(x, 0.05, seed=s).estimate - x) ** 2) for s in range(200)])
    assert errors["least-squares"] < 0.9 * errors["none"], errors


# ------------------------------------------------------------------ bad input

@pytest.mark.parametrize("options, word", [
    (dict(alpha=0), "alpha"), (dict(alpha=1), "alpha"), (dict(alpha="half"), "alpha"), (dict(alpha=True), "alpha"),
    (dict(alpha=float("nan")), "alpha"), (dict(cell_width=0), "cell_width"), (dict(cell_width=2.5), "cell_width"),
    (dict(cell_width=True), "cell_width"), (dict(stop="median"), "stop"), (dict(xi=-1.0), "xi"),
    (dict(xi="big"), "xi"), (dict(xi=float("inf")), "xi"), (dict(inference="boost"), "inference"),
])
def test_bad_parameters_are_refused_by_name_before_anything_runs(options, word):
    # kills: a bad option accepted (and failing later, after budget was spent) or an error not naming it
    with pytest.raises(InvalidParameter, match=word):
        make_algorithm("DPCube", **options)


def test_dpbench_rule_needs_a_region_budget():
    # kills: a division by zero (or an infinite region cost) when the finalizer has no budget
    ctx = _context(np.repeat([1.0, 50.0], 11), 11, eps_f=0.0)
    with pytest.raises(InvalidParameter, match="no budget"):
        KDTreePartitioner().partition(Partition.singletons(22), ctx)


def test_release_mode_runs_and_keeps_no_seed():
    # kills: a component that needs the seed (e.g. a global RNG) and fails without it
    r = make_algorithm("DPCube", inference="least-squares").run(np.arange(100), 1.0)
    assert r.mode == "release" and r.seed is None and r.estimate.shape == (100,)
    assert dphist.default_registry.get("algorithm", "DPCube") is not None


def test_after_a_per_bin_initializer_every_bin_is_a_cell():
    # kills: a default cell width other than 1 when dpcube.cells did not run (regions forced onto 11-bin
    # boundaries the per-bin H~ does not have, or least squares weighting bins as 11-bin cells)
    x = np.repeat([0, 300, 0, 500, 20], [7, 5, 9, 3, 6])
    r = Pipeline("laplace", None, "dpcube.kd", "dpcube.least-squares", (0.5, 0.0, 0.5)).run(x, 2.0, seed=4)
    assert np.any(r.partition.bounds[:-1] % 11 != 0)
    region_starts = r.partition.bounds[:-1]
    z = np.add.reduceat(r.estimate, region_starts)                # the least-squares region totals
    y = np.add.reduceat(r.noisy, region_starts)
    assert not np.allclose(z, y)                                  # the region counts were combined in
    assert WIDTH_NOTE not in r.notes
