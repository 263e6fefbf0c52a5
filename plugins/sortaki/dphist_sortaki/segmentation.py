"""The generic partitioners of SORTaki Section V-B as array algorithms (no privacy here).

Each works on *groups* in their current order: group ``g`` covers positions
``[bounds[g], bounds[g+1])`` and a candidate bin is a run of consecutive groups.
The error formula (:mod:`.error_formulas`) receives position ranges and the
prefix sums of the values in that order.  All return ``cuts``: the group
indices where a bin starts (``cuts[0] = 0``), ready for ``Partition.merge``.

* :func:`greedy_cuts` - GP, SORTaki Algorithm 5.
* :func:`dp_cuts` with ``variant="exact"`` - DPP, Algorithm 6, O(k^2);
  ``variant="power-of-two"`` - DPP restricted to bins of 2^j groups.

Algorithm 6 fills an interval table ``S[s, e]`` (O(n^3) as written).  Because
the error of a partition is the *sum* of its bins' errors, the optimum over
``[1, e]`` is reached by the classic 1-D segmentation recursion
``B[e] = min_s B[s] + EF(s, e)`` (Jagadish et al. 1998, used by AHP and
DAWA), which gives the same minimum in O(k^2) - the complexity the paper
claims.  Restricting the last bin to 2^j groups gives O(k log k) EF
evaluations (the paper states O(n log^2 n), inherited from DAWA whose L1 cost
needs a median; our EFs are O(1) from prefix sums).

Formulas of the form SSE + size penalty run in compiled numba kernels; any
other callable EF runs in vectorised numpy (one EF call per block of
candidates), which is slower but exact.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from dphist.errors import InvalidParameter

from .error_formulas import SizePenaltyFormula, resolve_error_formula

VARIANTS = ("exact", "power-of-two")


# ----------------------------------------------------------------- kernels
@njit(cache=True)
def _sse(p, p2, a, b):
    size = b - a
    s1 = p[b] - p[a]
    v = (p2[b] - p2[a]) - s1 * s1 / size
    return v if v > 0.0 else 0.0


@njit(cache=True)
def _greedy_kernel(bounds, p, p2, pen):
    k = bounds.size - 1
    cuts = np.empty(k, dtype=np.int64)
    cuts[0] = 0
    m = 1
    s = bounds[0]
    for i in range(1, k):
        a = bounds[i]
        b = bounds[i + 1]
        merged = _sse(p, p2, s, b) + pen[b - s]
        apart = _sse(p, p2, s, a) + pen[a - s] + _sse(p, p2, a, b) + pen[b - a]
        if not merged < apart:  # Algorithm 5 line 5: merge only when strictly better
            cuts[m] = i
            m += 1
            s = a
    return cuts[:m]


@njit(cache=True)
def _dp_exact_kernel(bounds, p, p2, pen):
    k = bounds.size - 1
    best = np.empty(k + 1)
    arg = np.zeros(k + 1, dtype=np.int64)
    best[0] = 0.0
    for e in range(1, k + 1):
        be = bounds[e]
        top = np.inf
        top_s = 0
        for s in range(e):
            c = best[s] + _sse(p, p2, bounds[s], be) + pen[be - bounds[s]]
            if c < top:
                top = c
                top_s = s
        best[e] = top
        arg[e] = top_s
    return best, arg


@njit(cache=True)
def _dp_pow2_kernel(bounds, p, p2, pen):
    k = bounds.size - 1
    best = np.empty(k + 1)
    arg = np.zeros(k + 1, dtype=np.int64)
    best[0] = 0.0
    for e in range(1, k + 1):
        be = bounds[e]
        top = np.inf
        top_s = 0
        length = 1
        while length <= e:
            s = e - length
            c = best[s] + _sse(p, p2, bounds[s], be) + pen[be - bounds[s]]
            if c < top:
                top = c
                top_s = s
            length *= 2
        best[e] = top
        arg[e] = top_s
    return best, arg


@njit(cache=True)
def _dp_matrix_kernel(costs, lengths):
    """B[e] = min_j B[e - lengths[j]] + costs[j, e] (costs precomputed by a vectorised EF)."""
    k = costs.shape[1] - 1
    best = np.empty(k + 1)
    arg = np.zeros(k + 1, dtype=np.int64)
    best[0] = 0.0
    for e in range(1, k + 1):
        top = np.inf
        top_s = 0
        for j in range(lengths.size):
            length = lengths[j]
            if length > e:
                break
            c = best[e - length] + costs[j, e]
            if c < top:
                top = c
                top_s = e - length
        best[e] = top
        arg[e] = top_s
    return best, arg


@njit(cache=True)
def _trace(arg, k):
    cuts = np.empty(k, dtype=np.int64)
    m = 0
    e = k
    while e > 0:
        e = arg[e]
        cuts[m] = e
        m += 1
    return cuts[:m][::-1].copy()


# ------------------------------------------------------------- front ends
def _check(prefix, prefix_sq, bounds):
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    prefix = np.ascontiguousarray(prefix, dtype=float)
    prefix_sq = np.ascontiguousarray(prefix_sq, dtype=float)
    if bounds.ndim != 1 or bounds.size < 2 or bounds[0] != 0 or np.any(np.diff(bounds) <= 0):
        raise InvalidParameter("group bounds must increase strictly from 0")
    if prefix.shape != (bounds[-1] + 1,) or prefix_sq.shape != prefix.shape:
        raise InvalidParameter(f"prefix sums must have length {bounds[-1] + 1} (positions + 1)")
    return prefix, prefix_sq, bounds


def _penalties(ef: SizePenaltyFormula, n: int, eps_in: float, eps_f: float) -> np.ndarray:
    pen = np.zeros(n + 1)
    pen[1:] = ef.penalty(np.arange(1, n + 1), eps_in, eps_f)
    if not np.all(np.isfinite(pen)):
        raise InvalidParameter("the error formula's size penalty is not finite")
    return pen


def _errors(ef, starts, ends, prefix, prefix_sq, eps_in, eps_f) -> np.ndarray:
    out = np.asarray(ef(starts, ends, prefix, prefix_sq, eps_in, eps_f), dtype=float)
    if out.shape != np.shape(starts):
        raise InvalidParameter(f"the error formula returned shape {out.shape} for {np.size(starts)} bins; "
                               "it must return one error per bin")
    if np.isnan(out).any():
        raise InvalidParameter("the error formula returned NaN")
    return out


def greedy_cuts(ef, prefix, prefix_sq, bounds, eps_in: float, eps_f: float) -> np.ndarray:
    """GP (SORTaki Algorithm 5): walk the groups, merge the next one when EF says it is better."""
    ef = resolve_error_formula(ef)
    prefix, prefix_sq, bounds = _check(prefix, prefix_sq, bounds)
    if isinstance(ef, SizePenaltyFormula):
        return _greedy_kernel(bounds, prefix, prefix_sq, _penalties(ef, int(bounds[-1]), eps_in, eps_f))
    # Generic EF: with the current bin starting at group s, the decision at group i depends only on
    # (s, i), so a whole block of decisions is evaluated at once up to the first refusal.
    k = bounds.size - 1
    cuts = [0]
    s, i, block = 0, 1, 64
    while i < k:
        idx = np.arange(i, min(k, i + block))
        start = np.full(idx.size, bounds[s])
        merged = _errors(ef, start, bounds[idx + 1], prefix, prefix_sq, eps_in, eps_f)
        apart = (_errors(ef, start, bounds[idx], prefix, prefix_sq, eps_in, eps_f)
                 + _errors(ef, bounds[idx], bounds[idx + 1], prefix, prefix_sq, eps_in, eps_f))
        refuse = ~(merged < apart)
        if refuse.any():
            j = int(idx[int(np.argmax(refuse))])
            cuts.append(j)
            s, i = j, j + 1
            block = 64
        else:
            i = int(idx[-1]) + 1
            block *= 2
    return np.asarray(cuts, dtype=np.int64)


def dp_cuts(ef, prefix, prefix_sq, bounds, eps_in: float, eps_f: float,
            variant: str = "exact", return_cost: bool = False):
    """DPP (SORTaki Algorithm 6): the partition minimising the total EF, exactly or over 2^j-group bins."""
    if variant not in VARIANTS:
        raise InvalidParameter(f"unknown DPP variant {variant!r}; use one of {', '.join(VARIANTS)}")
    ef = resolve_error_formula(ef)
    prefix, prefix_sq, bounds = _check(prefix, prefix_sq, bounds)
    k = bounds.size - 1
    if isinstance(ef, SizePenaltyFormula):
        pen = _penalties(ef, int(bounds[-1]), eps_in, eps_f)
        kernel = _dp_exact_kernel if variant == "exact" else _dp_pow2_kernel
        best, arg = kernel(bounds, prefix, prefix_sq, pen)
    elif variant == "power-of-two":
        lengths = 2 ** np.arange(int(np.log2(k)) + 1, dtype=np.int64)
        costs = np.full((lengths.size, k + 1), np.inf)
        for j, length in enumerate(lengths):
            e = np.arange(length, k + 1)
            costs[j, e] = _errors(ef, bounds[e - length], bounds[e], prefix, prefix_sq, eps_in, eps_f)
        best, arg = _dp_matrix_kernel(costs, lengths)
    else:
        best = np.empty(k + 1)
        arg = np.zeros(k + 1, dtype=np.int64)
        best[0] = 0.0
        for e in range(1, k + 1):
            s = np.arange(e)
            c = best[:e] + _errors(ef, bounds[s], np.full(e, bounds[e]), prefix, prefix_sq, eps_in, eps_f)
            j = int(np.argmin(c))  # first minimum: the smallest start, i.e. the largest last bin
            best[e], arg[e] = c[j], j
    cuts = _trace(arg, k)
    return (cuts, float(best[k])) if return_cost else cuts


# ----------------------------------------------------- analysis helpers
def partition_cost(ef, values, cuts_positions, eps_in: float, eps_f: float) -> float:
    """Total EF of the bins that start at ``cuts_positions`` over ``values`` (analysis)."""
    from .error_formulas import prefix_sums
    ef = resolve_error_formula(ef)
    p, p2 = prefix_sums(values)
    starts = np.asarray(cuts_positions, dtype=np.int64)
    ends = np.r_[starts[1:], len(values)]
    return float(np.sum(ef(starts, ends, p, p2, eps_in, eps_f)))


def segment_values(values, ef, eps_in: float, eps_f: float, method: str = "dp", variant: str = "exact"):
    """Bins (start positions) of ``values`` chosen by GP (``method="greedy"``) or DPP (``"dp"``).

    For analysis outside a pipeline, e.g. the oracle partition under EE on the
    true counts.  Inside a private pipeline use the partitioner components.
    """
    from .error_formulas import prefix_sums
    p, p2 = prefix_sums(values)
    bounds = np.arange(len(values) + 1)
    if method == "greedy":
        return greedy_cuts(ef, p, p2, bounds, eps_in, eps_f)
    if method == "dp":
        return dp_cuts(ef, p, p2, bounds, eps_in, eps_f, variant)
    raise InvalidParameter(f"method must be 'greedy' or 'dp', got {method!r}")
