"""Private medians of one kd level: one exponential mechanism per box, all boxes of the level in one kernel call.

Cormode, Procopiuc, Srivastava, Shen, Yu (ICDE 2012, Section 3.2) compare four private medians
(smooth sensitivity, the exponential mechanism, a cell-based median, a noisy mean) and find the
exponential mechanism the most accurate; it is also the one of the four that is pure epsilon-DP
without a second parameter (smooth sensitivity gives (epsilon, delta)-DP, the noisy mean is biased
by outliers).  On a grid the candidates are the cell boundaries strictly inside the box along the
cut axis, ``lo < p < hi``; with ``L(p)`` the records of the box before ``p`` and ``R(p) = T - L(p)``
the rest, the score of ``p`` is

    u(p) = -|L(p) - R(p)|,

the distance of the cut from the median in records, doubled.  Adding or removing one record moves
``L(p) - R(p)`` by exactly 1 (it is on one side of every cut), so ``u`` has sensitivity 1, and the
cut is drawn with probability proportional to ``exp(eps u(p) / 2)`` (McSherry & Talwar 2007).

Privacy of one call (epsilon-DP).  The boxes of one level are disjoint: a record lies in at most one
box, and the scores of every other box are unchanged on a neighbouring grid.  The joint law of the
cuts is the product of the per-box laws, so the likelihood ratio of any outcome is that of the one
box holding the record, at most ``exp(eps)`` (parallel composition; equivalently the exponential
mechanism over the product of the candidate sets with the summed score, whose sensitivity is 1).
The boxes themselves are outputs of earlier levels (adaptive sequential composition across levels).
Each draw goes through the run's noise source (``noise.exponential_mechanism``), exact in release mode.

Why a vetted mechanism and not the kernel's ``exponential`` primitive: that primitive draws one candidate
per call and charges every call, so one call per box would charge a level ``2^d`` times for what costs
epsilon once by parallel composition.  One ``custom`` call per level is charged once, with the score
sensitivity declared (1) in the ledger; the kernel runs it on the counts behind its gate (the component
sees only the cuts), probes it on the all-zero histogram first, and the conformance kit replays it on
neighbours (as P-HP's bisection in ``dphist_acs2012.php``).

The scores are read in the kernel from a summed-area table of the counts: O(cells) to build, O(1)
per candidate, all candidates of a level at once; only the draws loop over boxes (at most
``2^depth`` per level), never over cells.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from dphist import InvalidParameter, VettedMechanism


def summed_area(counts, shape) -> np.ndarray:
    """``S[i, j]`` = sum of ``counts[:i, :j]`` on the grid (one row and column of zeros in front)."""
    x = np.asarray(counts).reshape(shape)
    s = np.zeros((shape[0] + 1, shape[1] + 1), dtype=np.float64 if x.dtype.kind == "f" else np.int64)
    np.cumsum(x, axis=0, out=s[1:, 1:])
    np.cumsum(s[1:, 1:], axis=1, out=s[1:, 1:])
    return s


def cut_scores(S: np.ndarray, r0, r1, c0, c1, axis) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, first)``: the scores ``-|L - R|`` of every candidate cut of every box with ``axis >= 0``,
    boxes in order, candidates in increasing position; ``first[k]`` where box ``k``'s candidates start
    (``first[-1]`` = their number).  Four reads of the summed-area table ``S`` per candidate, in one
    compiled loop (a level has a few boxes on the grids of small runs, where numpy's per-call cost was
    most of a run; the loop checks its indices)."""
    r0, r1, c0, c1, axis = (np.asarray(v, dtype=np.int64) for v in (r0, r1, c0, c1, axis))
    split = axis >= 0
    m = np.where(axis == 0, r1 - r0, c1 - c0)[split] - 1    # candidates per box (>= 1 where it splits)
    if m.size and m.min() < 1:
        raise InvalidParameter("cut_scores: a box to cut must be at least two cells long along its axis")
    first = np.concatenate(([0], np.cumsum(m)))
    return _cut_scores(S, r0, r1, c0, c1, axis, first), first


@njit(cache=True, nogil=True, boundscheck=True)
def _cut_scores(S, r0, r1, c0, c1, axis, first):
    out = np.empty(first[-1])
    k = 0                                  # the k-th box that is cut
    for b in range(axis.size):
        if axis[b] < 0:
            continue
        a0, a1, b0, b1 = r0[b], r1[b], c0[b], c1[b]
        total = S[a1, b1] - S[a0, b1] - S[a1, b0] + S[a0, b0]
        start = first[k]
        for t in range(first[k + 1] - start):
            if axis[b] == 0:               # rows a0 .. pos-1
                pos = a0 + 1 + t
                left = S[pos, b1] - S[a0, b1] - S[pos, b0] + S[a0, b0]
            else:                          # columns b0 .. pos-1
                pos = b0 + 1 + t
                left = S[a1, pos] - S[a0, pos] - S[a1, b0] + S[a0, b0]
            out[start + t] = -abs(2.0 * left - total)
        k += 1
    return out


class KDMedians(VettedMechanism):
    """One kd level's private cuts (module docstring): returns the cut of every box, ``-1`` where ``axis = -1``."""

    name = "spatial.kd-medians"
    sensitivity = 1.0        #: of every score -|L - R| (one record moves L - R by one)
    proof = ("eps-DP (Cormode, Procopiuc, Srivastava, Shen, Yu, ICDE 2012, Sec. 3.2; dphist_spatial.medians "
             "docstring; notebooks/spatial.ipynb): one exponential mechanism per box with score -|L(p) - R(p)| "
             "(sensitivity 1) and epsilon; the boxes of a level are disjoint (parallel composition), the boxes "
             "are outputs of earlier levels (adaptive composition).")

    def check(self, n, shape=None, r0=None, r1=None, c0=None, c1=None, axis=None):
        """Validate before the charge: a 2-D shape of ``n`` cells, boxes inside it, an axis each box can cut."""
        if shape is None or len(tuple(shape)) != 2 or int(np.prod(shape)) != n:
            raise InvalidParameter(f"{self.name}: shape must be the 2-D shape of the {n} cells, got {shape!r}")
        shape = tuple(int(s) for s in shape)
        arrays = [np.array(v, dtype=np.int64, copy=True).reshape(-1) for v in (r0, r1, c0, c1, axis)]
        r0, r1, c0, c1, axis = arrays
        if len({a.size for a in arrays}) != 1 or r0.size == 0:
            raise InvalidParameter(f"{self.name}: r0, r1, c0, c1 and axis must be non-empty and of one length")
        if np.any(r0 < 0) or np.any(r1 > shape[0]) or np.any(r0 >= r1) or np.any(c0 < 0) \
                or np.any(c1 > shape[1]) or np.any(c0 >= c1):
            raise InvalidParameter(f"{self.name}: every box must be a non-empty box inside the grid {shape}")
        if np.any((axis < -1) | (axis > 1)) or np.any((axis == 0) & (r1 - r0 < 2)) \
                or np.any((axis == 1) & (c1 - c0 < 2)):
            raise InvalidParameter(f"{self.name}: axis must be -1, 0 (rows) or 1 (columns), on a box at least two "
                                   "cells long along it")
        return dict(shape=shape, r0=r0, r1=r1, c0=c0, c1=c1, axis=axis)

    def answers(self, n, axis=None, **_):
        return int(np.count_nonzero(np.asarray(axis) >= 0))

    def run(self, counts, epsilon, noise, shape=None, r0=None, r1=None, c0=None, c1=None, axis=None):
        scores, first = cut_scores(summed_area(counts, shape), r0, r1, c0, c1, axis)
        split = np.flatnonzero(axis >= 0)
        lo = np.where(axis == 0, r0, c0)
        cuts = np.full(axis.size, -1, dtype=np.int64)
        for k, node in enumerate(split):      # one draw per box (at most 2^depth), never per cell
            pick = noise.exponential_mechanism(scores[first[k]:first[k + 1]], self.sensitivity, epsilon)
            cuts[node] = lo[node] + 1 + int(pick)
        return cuts
