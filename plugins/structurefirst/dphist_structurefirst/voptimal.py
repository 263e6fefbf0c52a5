"""Prefix costs of V-optimal histograms, layer by layer: what StructureFirst's exponential
mechanism scores boundaries with (Xu et al., VLDBJ 2013, Section 5; ICDE 2012, Section IV).

``T(j, g)`` is the least SSE of the first ``j`` values cut into exactly ``g`` contiguous groups
(the V-optimal histogram of Jagadish et al. 1998 restricted to a prefix).  StructureFirst re-draws
the boundaries of the k-group V-optimal histogram from right to left; the boundary in front of
group ``g``, with the right end ``r`` already drawn, scores every candidate start ``t`` by

    E_r(t) = T(t, g - 1) + SSE(t, r),

so it needs the whole layer ``T(., g - 1)``, not only the optimum that
:func:`dphist.segmentation.k_groups` returns (that engine gives, per k, the total cost and the
back-pointers of the full-length optimum; the tests check that this module's ``T(n, k)`` equals
its ``best[k]``).  This is the only DP the plugin writes itself, for that reason.

Speed (exact, not approximate).  Filling layer ``g`` at end ``j`` scans the last group's start
``t`` downwards from ``j - 1`` and stops as soon as

    T(t, g) + SSE(t, j) >= best so far,

which is a lower bound on every remaining candidate ``t' < t``: SSE is superadditive over a
split, ``SSE(t', j) >= SSE(t', t) + SSE(t, j)``, and ``T(t', g - 1) + SSE(t', t) >= T(t, g)``
(append the group ``[t', t)`` to the best (g-1)-segmentation of the first ``t'`` values).  The
values computed are exactly the full DP's (same minimum; only candidates that cannot win are
skipped), so the exponential mechanism's scores, and its sensitivity argument, are unchanged.
Memory: the layers needed are used in decreasing order; every ``B``-th layer is kept and each
block of ``B`` layers is recomputed from its checkpoint when it is needed, only up to the right
end still open (``B = k`` when all layers fit in ``max_floats`` floats, else about sqrt(k)).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

from dphist.intervals import centred_prefix_sums

#: keep every layer in memory up to this many floats (128 MB); above, checkpoint and recompute
MAX_FLOATS = 16_000_000


@njit(cache=True, inline="always")
def _sse(p, p2, inv, i, j):
    # inv[m] = 1/m: a multiplication in the inner loop instead of a division
    s = p[j] - p[i]
    v = (p2[j] - p2[i]) - s * s * inv[j - i]
    return v if v > 0.0 else 0.0


@njit(cache=True)
def first_layer(p, p2, inv):
    """T(j, 1) = SSE of the first j values, j = 0..n (T(0, 1) = inf: a group is never empty)."""
    n = p.size - 1
    out = np.empty(n + 1)
    out[0] = np.inf
    for j in range(1, n + 1):
        out[j] = _sse(p, p2, inv, 0, j)
    return out


@njit(cache=True)
def next_layer(prev, g, p, p2, inv, out, upto):
    """Fill ``out[:upto + 1]`` with layer g from layer g - 1 (``prev``): out[j] = min over t in
    [g-1, j-1] of prev[t] + SSE(t, j) for j >= g, inf below.  Pruned exactly (module docstring).
    Only ``prev[:upto]`` is read."""
    for j in range(min(g, upto + 1)):
        out[j] = np.inf
    for j in range(g, upto + 1):
        best = np.inf
        for t in range(j - 1, g - 2, -1):
            s = _sse(p, p2, inv, t, j)
            c = prev[t] + s
            if c < best:
                best = c
            if t >= g and out[t] + s >= best:
                break
        out[j] = best
    return out


class PrefixCosts:
    """The layers ``T(., g)`` of a sequence, g = 1 .. k - 1, served in decreasing g.

    ``layer(g)`` returns the array ``T(j, g)``, j = 0..n; calls must come with non-increasing g
    (StructureFirst's right-to-left order); blocks are recomputed from checkpoints when the
    layers do not all fit in ``max_floats`` floats.
    """

    def __init__(self, values, k: int, max_floats: int = MAX_FLOATS):
        self.p, self.p2 = centred_prefix_sums(np.asarray(values, dtype=float))
        self.n = self.p.size - 1
        self.inv = np.r_[0.0, 1.0 / np.arange(1, self.n + 1)]
        self.k = int(k)
        top = max(self.k - 1, 1)                      # the highest layer ever asked for
        per_layer = self.n + 1
        self.block = top if top * per_layer <= max_floats else max(1, int(math.isqrt(top)) + 1)
        self._checkpoints = {}
        layer = first_layer(self.p, self.p2, self.inv)
        self._checkpoints[1] = layer
        if self.block < top:                           # forward pass keeping every block-th layer
            cur = layer
            for g in range(2, top + 1):
                cur = next_layer(cur, g, self.p, self.p2, self.inv, np.empty(per_layer), self.n)
                if (g - 1) % self.block == 0:
                    self._checkpoints[g] = cur
        self._cache = {}
        self._upto = -1
        self._top = top

    def _fill_block(self, g: int, upto: int) -> None:
        # a block is recomputed only up to the position asked for: StructureFirst's right end
        # shrinks as it draws, so the lower blocks cost a fraction of a forward pass
        start = 1 + ((g - 1) // self.block) * self.block
        stop = min(start + self.block - 1, self._top)
        self._cache = {start: self._checkpoints[start]}
        self._upto = upto
        cur = self._checkpoints[start]
        for h in range(start + 1, stop + 1):
            cur = next_layer(cur, h, self.p, self.p2, self.inv, np.full(self.n + 1, np.nan), upto)
            self._cache[h] = cur

    def layer(self, g: int, upto: int | None = None) -> np.ndarray:
        """T(j, g) for j = 0..n (valid up to ``upto``, default n; beyond it NaN when a block was
        recomputed only partly).  Calls come with non-increasing g and non-increasing ``upto``."""
        upto = self.n if upto is None else int(upto)
        if g not in self._cache or (g not in self._checkpoints and upto > self._upto):
            self._fill_block(g, upto)
        return self._cache[g]

    def scores(self, g: int, right: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidate starts t = g-1 .. right-1 of group g ending at ``right`` and their costs
        E(t) = T(t, g-1) + SSE(t, right) (g >= 2)."""
        t = np.arange(g - 1, right, dtype=np.int64)
        below = self.layer(g - 1, right)[t] if g > 1 else np.zeros(t.size)
        m = (right - t).astype(float)
        s = self.p[right] - self.p[t]
        sse = np.maximum((self.p2[right] - self.p2[t]) - s * s / m, 0.0)
        return t, below + sse


def all_layers_reference(values, k: int) -> np.ndarray:
    """T(j, g) for g = 1..k by the plain O(k n^2) DP without pruning (tests only)."""
    p, p2 = centred_prefix_sums(np.asarray(values, dtype=float))
    n = p.size - 1
    out = np.full((k + 1, n + 1), np.inf)
    out[1] = first_layer(p, p2, np.r_[0.0, 1.0 / np.arange(1, n + 1)])
    for g in range(2, k + 1):
        for j in range(g, n + 1):
            t = np.arange(g - 1, j)
            m = (j - t).astype(float)
            s = p[j] - p[t]
            out[g, j] = np.min(out[g - 1, t] + np.maximum(p2[j] - p2[t] - s * s / m, 0.0))
    return out
