"""GGS, the greedy grouping of SReB_GCA with its lower bound and early stop (reconstructed Section 5.2).

**Reconstruction** (the outline: "a lower bound in the greedy grouping process ... is theoretically
deduced", in the lineage of AHP's greedy grouping with err*, Zhang et al. SDM 2014 Algorithm 3).
Scan the ascending noisy values y_1 <= ... <= y_n.  With C the current group and E(.) the group
error of :mod:`.relative_error` (bound (3) by default), bin j joins C iff

    E(C + j) - E(C)  <=  LB(j)                                                   (4)

else it starts a new group.  LB(j) bounds from below what bin j costs if it starts a group
[j, l] instead: its own term in that group's error,

    f_j(l) = w_j g(A_j(l), b(l)),  A_j(l) = |y_j - mean(y_j..y_l)|,  b(l) = 1 / ((l - j + 1) eps_2),
    g(a, b) = a + b (bound form)  or  a + b exp(-a/b) (exact form),
    LB(j) = min_{l >= j} f_j(l).

(Every group [j, l] costs at least f_j(l) >= LB(j), so a new group adds at least LB(j); (4) joins when
joining is no dearer than that.)  Ties join (``ties="join"``, the issue's "does not exceed");
``ties="split"`` uses "<" as AHP Algorithm 3 line 8 and the core's greedy do.

**Early stop.**  On ascending values y_j is the smallest value of every group [j, l], so
A_j(l) = mean(y_j..y_l) - y_j is non-decreasing in l (a larger value raises the mean), while b(l)
decreases to b_min = 1 / ((n - j + 1) eps_2).  g is non-decreasing in both arguments (dg/da =
1 - e^{-a/b} >= 0, dg/db = (1 + a/b) e^{-a/b} >= 0 for the exact form).  Hence for every l' >= l

    f_j(l') >= w_j g(A_j(l), b_min),

and once w_j g(A_j(l), b_min) >= the running minimum of f_j over the l already seen, no later l can
lower it: the scan stops and returns exactly the full scan's minimum (``early_stop``; a test
compares both).  A run of values equal to y_j has A = 0 and b decreasing, so its minimum is at the
run's end, which the scan jumps to (A is defined as exactly 0 inside the run, in both scans).

**Deciding (4) without LB.**  (4) asks whether f_j(l) >= Delta for every l.  ``decide_early``
answers that on the same monotonicity: first the bound over all l at once, w_j g(A_j(j+1), b_min);
then galloping over blocks of l of doubling length from j (near positions first), where a block
[lo, hi] passes when w_j g(A_j(lo), b(hi)) does, goes to branch and bound otherwise (fails at the
first f_j(l) < Delta), and every l from the first one with w_j A_j(l) >= Delta on passes.  Same
decisions as computing LB (tested), typically a few evaluations per bin.  (Computing LB itself in
O(log n) is possible for the bound form, since f_j(l) is then the slope from a point below the
convex prefix-sum curve, quasi-convex in l; measured slower here because LB's minimiser is often
far away while the decision is usually settled near j.)
Group errors cost O(log m) each from prefix sums (binary search for the mean's position), so the
scan is O(n log n) in typical cases.

On values that are not monotone (the domain-order harness), A is not monotone: LB is computed by
the full scan (O(n) per bin) and the group error by O(m) loops; :mod:`dphist_sreb_gca.partitioners` limits the
size of such inputs.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from dphist import InvalidParameter

from .relative_error import GroupRelativeError, group_cost, split_deviation

TIES = ("join", "split")


@numba.njit(cache=True)
def _g(a, b, exact):
    if exact:
        return a + b * math.exp(-a / b)
    return a + b


@numba.njit(cache=True)
def _deviation(y, py, j, l, run_end_j):
    """A_j(l); exactly 0 inside the run of values equal to y_j."""
    if l <= run_end_j:
        return 0.0
    return abs(y[j] - (py[l + 1] - py[j]) / (l - j + 1))


@numba.njit(cache=True)
def _term(y, w, py, j, l, run_end_j, inv_eps2, exact):
    """f_j(l)."""
    return w[j] * _g(_deviation(y, py, j, l, run_end_j), inv_eps2 / (l - j + 1), exact)


@numba.njit(cache=True)
def _lower_bound(y, w, py, run_end, j, inv_eps2, exact, early_stop):
    """LB(j) = min_{l >= j} f_j(l); ``early_stop`` (ascending values only) stops by the rule above."""
    n = y.size
    r = run_end[j]
    if not early_stop:
        best = math.inf
        for l in range(j, n):
            t = _term(y, w, py, j, l, r, inv_eps2, exact)
            if t < best:
                best = t
        return best
    best = _term(y, w, py, j, r, r, inv_eps2, exact)     # the run's minimum is at its end
    b_min = inv_eps2 / (n - j)
    for l in range(r + 1, n):
        a = _deviation(y, py, j, l, r)
        if w[j] * _g(a, b_min, exact) >= best:
            break
        t = w[j] * _g(a, inv_eps2 / (l - j + 1), exact)
        if t < best:
            best = t
    return best


@numba.njit(cache=True)
def _passes(v, delta_cost, join_ties):
    if join_ties:
        return v >= delta_cost
    return v > delta_cost


@numba.njit(cache=True)
def _joins_by_search(y, w, py, run_end, j, inv_eps2, exact, delta_cost, join_ties, stack):
    """Whether f_j(l) passes against ``delta_cost`` for every l >= j (ascending values)."""
    n = y.size
    r = run_end[j]
    if not _passes(_term(y, w, py, j, r, r, inv_eps2, exact), delta_cost, join_ties):
        return False
    lo, hi = r + 1, n - 1
    if lo > hi:
        return True
    # the bound over all remaining l at once (the common case: a small or negative increment)
    if _passes(w[j] * _g(_deviation(y, py, j, lo, r), inv_eps2 / (n - j), exact), delta_cost, join_ties):
        return True
    # galloping: blocks [lo + 2^k - 1, lo + 2^(k+1) - 2], near ones first (cheap memory accesses);
    # a block whose bound fails goes to branch and bound; once w_j A_j(l) passes, all later l do
    # (f_j >= w_j A_j and A_j is non-decreasing)
    size = 1
    s = lo
    while s <= hi:
        if _passes(w[j] * _deviation(y, py, j, s, r), delta_cost, join_ties):
            return True
        e = min(s + size - 1, hi)
        stack[0, 0] = s
        stack[0, 1] = e
        top = 1
        while top > 0:
            top -= 1
            a, b = stack[top, 0], stack[top, 1]
            bound = w[j] * _g(_deviation(y, py, j, a, r), inv_eps2 / (b - j + 1), exact)
            if _passes(bound, delta_cost, join_ties):
                continue
            if not _passes(_term(y, w, py, j, a, r, inv_eps2, exact), delta_cost, join_ties):
                return False
            if a == b:
                continue
            mid = (a + 1 + b) >> 1
            # depth-first, left part first: failures sit where A is small
            stack[top, 0] = mid
            stack[top, 1] = b
            top += 1
            if mid - 1 >= a + 1:
                stack[top, 0] = a + 1
                stack[top, 1] = mid - 1
                top += 1
        s = e + 1
        size *= 2
    return True


@numba.njit(cache=True)
def _ggs_kernel(y, w, py, pw, pwy, run_end, inv_eps2, exact, ascending, mode, join_ties):
    """The scan; mode 0: decide by branch and bound, 1: LB with early stop, 2: LB by full scan."""
    n = y.size
    cuts = np.empty(n + 1, dtype=np.int64)
    cuts[0] = 0
    count = 1
    s = 0
    current = group_cost(y, w, py, pw, pwy, 0, 1, inv_eps2, exact, ascending)
    stack = np.empty((2 * 64 + 8, 2), dtype=np.int64)
    fast = ascending and not exact
    p = 0                        # bound form on ascending values: first position >= the group mean
    for j in range(1, n):
        if fast:
            # the mean only grows as the group grows: the split position moves right (O(1) amortised)
            mu = (py[j + 1] - py[s]) / (j + 1 - s)
            while p <= j and y[p] < mu:
                p += 1
            joined = split_deviation(mu, pw, pwy, s, p, j + 1) + (pw[j + 1] - pw[s]) * (inv_eps2 / (j + 1 - s))
        else:
            joined = group_cost(y, w, py, pw, pwy, s, j + 1, inv_eps2, exact, ascending)
        delta_cost = joined - current
        if mode == 0 and ascending:
            join = _joins_by_search(y, w, py, run_end, j, inv_eps2, exact, delta_cost, join_ties, stack)
        else:
            lb = _lower_bound(y, w, py, run_end, j, inv_eps2, exact, mode == 1 and ascending)
            join = _passes(lb, delta_cost, join_ties)
        if join:
            current = joined
        else:
            cuts[count] = j
            count += 1
            s = j
            p = j
            current = group_cost(y, w, py, pw, pwy, j, j + 1, inv_eps2, exact, ascending)
    cuts[count] = n
    return cuts[:count + 1].copy()


def run_ends(y) -> np.ndarray:
    """For each position, the last position of its run of equal values."""
    y = np.asarray(y)
    last = np.flatnonzero(np.r_[y[1:] != y[:-1], True])
    return last[np.searchsorted(last, np.arange(y.size))].astype(np.int64)


def check_ties(ties) -> str:
    if ties not in TIES:
        raise InvalidParameter(f"unknown tie rule {ties!r}; choose 'join' (<=, default) or 'split' (<)")
    return ties


def _scan_inputs(cost: GroupRelativeError):
    return cost.y, cost.w, cost.py, run_ends(cost.y), cost.inv_eps2, cost.exact


def lower_bounds(cost: GroupRelativeError, early_stop: bool = True) -> np.ndarray:
    """LB(j) for every position j (``early_stop`` applies on monotone values only)."""
    y, w, py, ends, inv, exact = _scan_inputs(cost)
    stop = bool(early_stop and cost.ascending)
    return np.array([_lower_bound(y, w, py, ends, j, inv, exact, stop) for j in range(cost.n)])


def ggs(values, eps_2, delta: float = 1.0, form: str = "bound", *, ties: str = "join",
        decide_early: bool = True, early_stop: bool = True) -> np.ndarray:
    """Group boundaries ``0 = c_0 < ... < c_m = n`` of GGS on ``values`` (noisy, in scan order).

    ``decide_early`` (default): decide (4) by branch and bound; else compute LB(j), with the
    early stop when ``early_stop``, by the full scan otherwise.  All three give the same groups.
    """
    cost = GroupRelativeError(values, eps_2, delta, form)
    return ggs_on(cost, ties=ties, decide_early=decide_early, early_stop=early_stop)


def ggs_on(cost: GroupRelativeError, *, ties: str = "join", decide_early: bool = True,
           early_stop: bool = True) -> np.ndarray:
    """GGS with a prepared cost (see :func:`ggs`)."""
    join_ties = check_ties(ties) == "join"
    mode = 0 if decide_early else (1 if early_stop else 2)
    y, w, py, ends, inv, exact = _scan_inputs(cost)
    return _ggs_kernel(y, w, py, cost.pw, cost.pwy, ends, inv, exact, cost.ascending, mode, join_ties)
