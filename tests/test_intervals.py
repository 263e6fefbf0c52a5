"""Interval statistics from centred prefix sums against direct computation."""
import numpy as np
import pytest

from dphist import InvalidParameter
from dphist.intervals import centred_prefix_sums, interval_sse


def test_interval_sse_equals_direct_computation():
    rng = np.random.default_rng(8)
    x = rng.normal(1e6, 50, 40)  # a large offset: centring keeps the subtraction accurate
    p, p2 = centred_prefix_sums(x)
    starts, ends = np.triu_indices(41, 0)
    got = interval_sse(starts, ends, p, p2)
    want = [((x[a:b] - x[a:b].mean()) ** 2).sum() if b > a else 0.0 for a, b in zip(starts, ends)]
    assert np.allclose(got, want, rtol=1e-9, atol=1e-6)
    assert np.all(got >= 0)


def test_prefix_sums_refuse_empty_or_2d():
    with pytest.raises(InvalidParameter, match="non-empty 1-D"):
        centred_prefix_sums([])
    with pytest.raises(InvalidParameter, match="non-empty 1-D"):
        centred_prefix_sums(np.ones((2, 2)))
