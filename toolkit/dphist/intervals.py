"""O(1) statistics of runs of consecutive values, from prefix sums.

Partitioners that merge consecutive (possibly sorted) bins score a candidate
run ``[start, end)`` by its sum of squared deviations from the run mean
(AHP Theorem 4.2's AE term; SORTaki Equations 4-5; DPCube's variance):

    SSE = sum x_i^2 - (sum x_i)^2 / |run|,

read in O(1) per run from the prefix sums of ``x`` and ``x^2``.  The values
are centred on their mean first: SSE is shift invariant, and centring keeps
``sum x^2`` small so the subtraction loses less precision to cancellation.
"""
from __future__ import annotations

import numpy as np

from .errors import InvalidParameter


def centred_prefix_sums(values) -> tuple[np.ndarray, np.ndarray]:
    """Prefix sums (leading 0) of the centred values and of their squares.

    The shift is the mean of the values given (a public function of H~, or of
    the true counts in an analysis), so it adds no privacy cost.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise InvalidParameter("prefix sums need a non-empty 1-D vector of values")
    x = x - x.mean()
    p = np.zeros(x.size + 1)
    np.cumsum(x, out=p[1:])
    p2 = np.zeros(x.size + 1)
    np.multiply(x, x, out=x)     # x is this function's own centred copy: squared in place (memory)
    np.cumsum(x, out=p2[1:])
    return p, p2


def interval_sse(starts, ends, prefix, prefix_sq) -> np.ndarray:
    """Sum of squared deviations from the mean of every run ``[start, end)``, O(1) each (0 for empty runs)."""
    starts = np.asarray(starts, dtype=np.int64)
    ends = np.asarray(ends, dtype=np.int64)
    size = (ends - starts).astype(float)
    s1 = prefix[ends] - prefix[starts]
    s2 = prefix_sq[ends] - prefix_sq[starts]
    with np.errstate(invalid="ignore", divide="ignore"):
        out = s2 - s1 * s1 / size
    # rounding can make a constant run's SSE slightly negative; it is >= 0 mathematically
    return np.maximum(np.where(size > 0, out, 0.0), 0.0)
