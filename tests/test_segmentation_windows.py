"""The power-of-two search streamed by blocks of ends, its L1 windows counted over distinct integers,
and searches sharing one pass over the windows: the numbers of the Fenwick-tree route and of the
matrix search, bit for bit."""
import numpy as np
import pytest

from dphist import segmentation
from dphist.segmentation import _windows, kernels, search


def _fenwick(values, bounds, length):
    cost = segmentation.L1Deviation(values)
    out = np.empty(bounds.size - length)
    kernels.deviations_of_length(cost.values, cost.weights, cost.rank, cost.sorted_values, bounds, length, out)
    return out


def _data(seed, n=700):
    rng = np.random.default_rng(seed)
    x = np.round(rng.laplace(0, 4, n) + np.where(rng.random(n) < 0.05, rng.integers(0, 3000, n), 0))
    cuts = np.sort(rng.choice(np.arange(1, n), n // 3, replace=False))
    return x, np.arange(n + 1), np.concatenate(([0], cuts, [n]))


@pytest.mark.parametrize("seed", [0, 1])
def test_counting_windows_equal_the_fenwick_route(seed):
    """Kills: a wrong count or sum below the pointer (the ``d < ptr`` test as ``<=``), a pointer walk that
    stops one value early, a window that forgets to remove its oldest unit, multi-bin units read as bins."""
    x, singles, grouped = _data(seed)
    for bounds in (singles, grouped):
        k = bounds.size - 1
        for length in (1, 2, 3, 8, 16, 17, 64, 200, k):
            got = segmentation.L1Deviation(x).windows(length, bounds)
            assert np.array_equal(got, _fenwick(x, bounds, length)), (bounds.size, length)


def test_streamed_blocks_equal_whole_windows_and_refuse_going_back():
    """Kills: a block that restarts its window state (wrong windows after the first block), a stream that
    accepts a block it has passed."""
    x, bounds, _ = _data(2, n=500)
    lengths = 1 << np.arange(9)
    stream = segmentation.L1Deviation(x).window_stream(bounds, lengths)
    blocks = [stream.block(e0, min(501, e0 + 37)) for e0 in range(1, 501, 37)]
    got = np.concatenate(blocks, axis=1)
    for j, L in enumerate(lengths):
        want = np.full(500, np.inf)
        want[L - 1:] = _fenwick(x, bounds, int(L))
        assert np.array_equal(got[j], want)
    with pytest.raises(ValueError):
        stream.block(1, 10)


def test_sliding_windows_move_their_pointer_both_ways_and_continue_after_a_gap():
    """Single positions with runs of large and small values, so the mean of short and long sliding windows
    passes many distinct values up and down; blocks of uneven widths, one of them after a gap of ends.
    Kills: a pointer walk that stops one value early or skips the walk down, a multiplicity not removed when
    a value leaves, a window continued after a gap from a state that is not the previous end's."""
    rng = np.random.default_rng(11)
    n = 2100
    level = np.repeat(rng.choice([0, 40, 900, 5000], n // 50), 50)[:n]
    x = np.round(level + rng.laplace(0, 6, level.size))
    bounds = np.arange(x.size + 1)
    lengths = np.array([32, 64, 128, 256, 512, 1024, 300])
    stream = segmentation.L1Deviation(x).window_stream(bounds, lengths)
    got = np.full((lengths.size, x.size + 1), np.nan)
    for e0, e1 in ((1, 90), (90, 700), (1301, 1400), (1400, 2101)):   # ends 700-1300 skipped
        got[:, e0:e1] = stream.block(e0, e1, got[:, e0:e1])           # writes outside its block: seen below
    keep = np.r_[1:700, 1301:2101]
    for j, L in enumerate(lengths):
        want = np.full(x.size + 1, np.inf)
        want[L:] = _fenwick(x, bounds, int(L))
        assert np.array_equal(got[j, keep], want[keep]), L
    assert np.isnan(got[:, 700:1301]).all()


def test_non_integer_values_take_the_fenwick_route():
    """Kills: counting windows used where sums are not exact (non-integer values)."""
    x = np.random.default_rng(3).random(100)
    assert segmentation.L1Deviation(x).window_stream(np.arange(101), [1, 2]) is None


class _Offsets:
    """A transform stating its arithmetic: (dev - table[size]) + plus."""

    def __init__(self, plus):
        self.plus = plus

    def _table(self, n):
        return np.sqrt(np.arange(n + 1.0)) * 1.7

    def __call__(self, dev, sizes):
        return (dev - self._table(int(np.max(sizes)))[sizes]) + self.plus

    def size_offsets(self, n, shared):
        return self._table(n), self.plus


@pytest.mark.parametrize("grouped, threads", [(False, 1), (True, 1), (False, 2)])
def test_shared_searches_equal_one_matrix_search_each(grouped, threads, monkeypatch):
    """Kills: searches sharing windows that mix up their ``best`` arrays or offsets, a streamed block that
    reads the window of the wrong end, a traceback off by one group, a tie rule lost in the block kernel;
    in ``power_of_two_levels_many``, a level of long groups skipped or compared for ends whose starts are not
    final yet (blocks of 128 ends: levels 4 to 6 inside a block); on two threads, the next block's windows
    written into the buffer being searched."""
    x, singles, groups = _data(4, n=900)
    bounds = groups if grouped else singles
    fns = [_Offsets(p) for p in (0.0, 3.0, 40.0)]
    monkeypatch.setattr(search, "STREAM_BLOCK", 128)          # several blocks
    monkeypatch.setattr(search, "STREAM_THREADS_MIN", 0)      # threads from the first end on
    shared = segmentation.power_of_two_shared(segmentation.L1Deviation(x), fns, bounds, threads=threads)
    for fn, seg in zip(fns, shared):
        class Plain:            # the same transform without its stated arithmetic: the matrix search
            def __call__(self, dev, sizes, fn=fn):
                return fn(dev, sizes)
        want = segmentation.optimal(segmentation.L1Deviation(x).then(Plain()), bounds, lengths="power-of-two")
        assert np.array_equal(seg.bounds, want.bounds) and seg.cost == want.cost
    for longest in (True, False):     # the plain cost streams too (zero offsets), both tie rules
        cost = segmentation.L1Deviation(x)
        n_lengths = int(np.log2(bounds.size - 1)) + 1
        windows = np.full((n_lengths, bounds.size - 1), np.inf)
        for j in range(n_lengths):
            windows[j, :bounds.size - (1 << j)] = _fenwick(x, bounds, 1 << j)
        best, back = kernels.power_of_two_lengths(bounds, np.zeros(1), np.zeros(1), np.zeros(1), windows, False,
                                                  longest)
        got = segmentation.optimal(cost, bounds, lengths="power-of-two", longest_on_ties=longest)
        assert np.array_equal(got.bounds, search._trace(back, bounds.size - 1)) and got.cost == best[-1]


def test_trace_of_powers_of_two():
    """Kills: a traceback that drops the first group or the last cut."""
    back_j = np.array([0, 0, 1, 0, 2, 0], dtype=np.int8)   # [0,4) then [4,5) then ... from e = 5
    assert _windows.trace_power_of_two(back_j, 5).tolist() == [0, 4, 5]


def test_distinct_values_rank_as_numpy_unique():
    """Kills: a value at or beyond the counted range (``lo + n``) ranked by the table or off by one, a range
    that starts at 0 instead of the least value (negative counts), non-integers counted (floored) instead of
    sorted, a wider or narrower index type than before."""
    rng = np.random.default_rng(5)
    n = 500
    cases = [np.round(rng.laplace(0, 4, n)), rng.integers(0, 3 * n, n).astype(float), np.zeros(n),
             np.r_[np.arange(-3.0, n - 3.0), [n - 3.0, 5e6, 5e6]], rng.random(n) * 10, np.array([-0.0, 0.0, 2.0])]
    for x in cases:
        dv, node = _windows.distinct_values(x)
        want = np.unique(x)
        assert np.array_equal(dv, want) and node.dtype == np.int16
        assert np.array_equal(node, np.searchsorted(want, x))
