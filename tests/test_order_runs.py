"""The compiled gather and scatter through an order (``dphist.partition.gather_run`` / ``scatter_run``), which
the kernel's sorted measurements and ``Partition.expand`` use a block at a time."""
import numpy as np
import pytest

from dphist.partition import gather_run, scatter_run


@pytest.mark.parametrize("dtype", [np.int64, np.float64])
def test_runs_equal_fancy_indexing(dtype):
    """Kills: the run started at 0 instead of ``start``, the last entry of a run left out, the scatter
    writing in order instead of through the order, an int64 run cast through float."""
    rng = np.random.default_rng(3)
    n = 5000
    values = (rng.integers(-(1 << 62), 1 << 62, n) if dtype is np.int64 else rng.standard_normal(n)).astype(dtype)
    order = rng.permutation(n)
    for start, size in [(0, 1), (0, n), (17, 1000), (n - 3, 3)]:
        out = np.empty(size, dtype=dtype)
        assert gather_run(values, order, start, out) is out
        assert out.tobytes() == values[order[start:start + size]].tobytes()
        target = np.zeros(n, dtype=dtype)
        want = target.copy()
        want[order[start:start + size]] = out
        assert scatter_run(out, order, start, target) is target
        assert target.tobytes() == want.tobytes()


def test_an_index_outside_the_array_is_refused():
    """numba reads and writes without bounds checks, so the loops check each index.  Kills: either check
    dropped (a read or a write outside the array)."""
    values = np.arange(10, dtype=np.int64)
    for bad in (10, -1, 1 << 40):
        order = np.arange(10)
        order[6] = bad
        with pytest.raises(IndexError, match="position 6"):
            gather_run(values, order, 0, np.empty(10, dtype=np.int64))
        target = np.zeros(10, dtype=np.int64)
        with pytest.raises(IndexError, match="position 6"):
            scatter_run(values, order, 0, target)
        assert target[:6].tolist() == list(range(6)) and not target[6:].any()   # written up to the bad index


def test_positions_past_the_order_are_refused():
    """The loops read the order's positions unchecked, so the wrappers check the run lies inside it.  Kills:
    the check dropped (entries read past the order's end, or before its start)."""
    values = np.arange(10, dtype=np.int64)
    order = np.arange(10)
    for start, size in [(8, 3), (-1, 2), (10, 1)]:
        with pytest.raises(IndexError, match="outside the order"):
            gather_run(values, order, start, np.empty(size, dtype=np.int64))
        target = np.zeros(10, dtype=np.int64)
        with pytest.raises(IndexError, match="outside the order"):
            scatter_run(np.ones(size, dtype=np.int64), order, start, target)
        assert not target.any()
    assert gather_run(values, order, 7, np.empty(3, dtype=np.int64)).tolist() == [7, 8, 9]
