"""Compiled loops of :mod:`dphist.binning`: equal-width bins in one pass over the values.

Binning 10^8 values with numpy takes six to eight passes and temporaries
(scale, floor, clip, cast, the edge correction, the missing mask, bincount);
this is one pass with no temporary (BENCHMARKS.md, "records").  Imported only
when values are binned (numba stays out of ``import dphist``).

A value's bin: ``i = floor((v - lo) * inv_width)``, then one correction step
against the published edges (``v < e[i]``: ``i - 1``; ``v >= e[i + 1]``:
``i + 1``), so the bin agrees with the edges in :meth:`Bins.labels` even when
the floating-point division lands one bin off (0.3 / 0.1 = 2.9999...).
Outside ``[lo, hi)``: the first or last bin (clamp) or dropped; NaN: the
missing bin or dropped.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

DROP = -1


@njit(cache=True, inline="always")
def _bin(v, lo, inv_w, e, n, clamp, missing_bin):
    if v != v:
        return missing_bin
    if v < e[0]:
        i = -1
    elif v >= e[n]:
        i = n
    else:                               # inside [lo, hi): scale, then one step against the exact edges
        t = (v - lo) * inv_w
        i = min(max(int(math.floor(t)), 0), n - 1)
        if v < e[i]:
            i -= 1
        elif v >= e[i + 1]:
            i += 1
    if i < 0:
        return 0 if clamp else DROP
    if i >= n:
        return n - 1 if clamp else DROP
    return i


@njit(cache=True)
def equal_width_index(values, lo, inv_w, e, clamp, missing_bin, out):
    n = e.size - 1
    for j in range(values.size):
        out[j] = _bin(values[j], lo, inv_w, e, n, clamp, missing_bin)


@njit(cache=True)
def equal_width_count(values, lo, inv_w, e, clamp, missing_bin, counts):
    n = e.size - 1
    for j in range(values.size):
        i = _bin(values[j], lo, inv_w, e, n, clamp, missing_bin)
        if i >= 0:
            counts[i] += 1


def index(values: np.ndarray, edges: np.ndarray, clamp: bool, missing_bin: int) -> np.ndarray:
    out = np.empty(values.size, dtype=np.int64)
    n = edges.size - 1
    equal_width_index(values, edges[0], n / (edges[-1] - edges[0]), edges, clamp, missing_bin, out)
    return out


def count(values: np.ndarray, edges: np.ndarray, clamp: bool, missing_bin: int, counts: np.ndarray) -> None:
    n = edges.size - 1
    equal_width_count(values, edges[0], n / (edges[-1] - edges[0]), edges, clamp, missing_bin, counts)
