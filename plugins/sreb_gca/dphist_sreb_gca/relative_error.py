"""The relative error of a group published as its mean plus Laplace noise (reconstructed Section 5.1).

**Reconstruction** (the outline keeps the section's principles, not its formulas).  A group G of
m bins with values x_t and mean mu is published as mu + L/m on every bin, L ~ Lap(1/eps_2) (the
core's ``group-mean`` finalizer: the group's sum plus Lap(1/eps_2), spread evenly).  Bin t's
relative error is |x_t - mu - L/m| / max(x_t, delta).  With a_t = x_t - mu and b = 1/(m eps_2),
L/m ~ Lap(b), and for any real a

    E|a + Lap(b)| = |a| + b exp(-|a| / b)                                    (1)

(integrate |a + u| e^{-|u|/b} / 2b over u; checked by simulation in the notebook).  So the
expected relative error of the group, with weights w_t = 1 / max(x_t, delta), is

    exact(G) = sum_t w_t (|x_t - mu| + b exp(-|x_t - mu| / b))              (2)
    bound(G) = sum_t w_t  |x_t - mu|  +  W(G) / (m eps_2),  W(G) = sum_t w_t (3)

(2) <= (3) since exp(-.) <= 1, with equality when every bin equals the mean.  The first
term of (3) is the **reconstruction error** of grouping, the second the **noise error**, the
outline's two sources; (2) couples them ("the other part is caused by both grouping and Laplace
noise").  ``form="bound"`` (3) is the default: O(log m) per group on sorted values from prefix
sums of w and w x and a binary search for the mean's position; ``form="exact"`` (2) costs O(m)
per group.

Inside the algorithm the values are the noisy counts H~ (the true ones are private), and delta is
public: a constant (default 1) or a fraction of the *noisy* total (see :mod:`dphist_sreb_gca.partitioners`).
Weights use max(x, delta), not |x|: a negative noisy count stands for a small true count, and
weighs as delta.  (The core's :class:`dphist.segmentation.RelativeError` uses max(|x|, delta);
both agree on values >= delta.)  The evaluation metric is different on purpose: the core's MRE
with Acs et al.'s sanity bound delta = 0.001 |D| on the true counts (notebook).

The kernels handle values in ascending order (the pipeline's); descending values are negated
first (|x - mu| is unchanged, the weights are computed from the original values).  On values
that are not monotone every group cost is an O(m) loop.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from dphist import InvalidParameter, segmentation
from dphist.kernel import positive_number

FORMS = ("bound", "exact")


def check_eps2(eps_2) -> float:
    return positive_number(eps_2, "SReB_GCA's group error needs eps_2 (the finalizer's share); eps_2")


def check_delta(delta) -> float:
    return positive_number(delta, "delta (the weights' floor 1/max(x, delta))")


def check_form(form) -> str:
    if form not in FORMS:
        raise InvalidParameter(f"unknown error form {form!r}; choose one of {', '.join(FORMS)}")
    return form


def expected_abs_laplace(a, b):
    """E|a + L| for L ~ Lap(b): |a| + b exp(-|a| / b)  (equation (1))."""
    a = np.abs(np.asarray(a, dtype=float))
    return a + b * np.exp(-a / b)


def weights(values, delta) -> np.ndarray:
    """w_t = 1 / max(x_t, delta)."""
    return 1.0 / np.maximum(np.asarray(values, dtype=float), check_delta(delta))


def monotone_direction(values) -> int:
    """+1 non-decreasing, -1 non-increasing (strictly: not constant), 0 neither."""
    d = np.diff(np.asarray(values, dtype=float))
    if np.all(d >= 0):
        return 1
    if np.all(d <= 0):
        return -1
    return 0


# -- compiled kernels (shared by the cost, the greedy scan and the lower bounds) -----------------

@numba.njit(cache=True)
def split_deviation(mu, pw, pwy, i, p, e):
    """sum_{t in [i, e)} w_t |y_t - mu| on ascending y, p the first position with y_p >= mu:
    mu W(left) - WY(left) + WY(right) - mu W(right), from prefix sums."""
    dev = (mu * (pw[p] - pw[i]) - (pwy[p] - pwy[i])) + ((pwy[e] - pwy[p]) - mu * (pw[e] - pw[p]))
    return dev if dev > 0.0 else 0.0     # rounding of the prefix differences; the true value is >= 0


@numba.njit(cache=True)
def group_cost(y, w, py, pw, pwy, i, e, inv_eps2, exact, ascending):
    """Cost (2) or (3) of positions [i, e); ``ascending``: y sorted non-decreasing (prefix path)."""
    m = e - i
    mu = (py[e] - py[i]) / m
    b = inv_eps2 / m
    if exact:
        s = 0.0
        for t in range(i, e):
            a = abs(y[t] - mu)
            s += w[t] * (a + b * math.exp(-a / b))
        return s
    if ascending:
        # first position whose value is >= mu (binary search in the sorted run)
        lo, hi = i, e
        while lo < hi:
            mid = (lo + hi) >> 1
            if y[mid] < mu:
                lo = mid + 1
            else:
                hi = mid
        dev = split_deviation(mu, pw, pwy, i, lo, e)
    else:
        dev = 0.0
        for t in range(i, e):
            dev += w[t] * abs(y[t] - mu)
    return dev + (pw[e] - pw[i]) * b


@numba.njit(cache=True)
def intervals_kernel(y, w, py, pw, pwy, starts, ends, inv_eps2, exact, ascending, out):
    for g in range(starts.size):
        out[g] = group_cost(y, w, py, pw, pwy, starts[g], ends[g], inv_eps2, exact, ascending)


@numba.njit(cache=True)
def row_kernel(y, w, py, pw, pwy, bounds, a, inv_eps2, exact, ascending, out):
    """Costs of positions [bounds[a], bounds[e]) for e = a+1..k.  Bound form on ascending values:
    the mean grows with e, so the split position only moves right (O(k) per row)."""
    i = bounds[a]
    k = bounds.size - 1
    if exact or not ascending:
        for e in range(a + 1, k + 1):
            out[e - a - 1] = group_cost(y, w, py, pw, pwy, i, bounds[e], inv_eps2, exact, ascending)
        return
    p = i
    for e in range(a + 1, k + 1):
        end = bounds[e]
        m = end - i
        mu = (py[end] - py[i]) / m
        while p < end and y[p] < mu:
            p += 1
        out[e - a - 1] = split_deviation(mu, pw, pwy, i, p, end) + (pw[end] - pw[i]) * (inv_eps2 / m)


class GroupRelativeError(segmentation.Cost):
    """Expected relative error of groups of consecutive positions, bound (3) or exact (2), as a
    :mod:`dphist.segmentation` cost (the GGS greedy and the optimal DP use the same one).

    ``values`` in position order (noisy counts after the sorter); ``eps_2`` the finalizer's
    budget; ``delta`` the public weight floor; ``form`` "bound" or "exact".
    """

    def __init__(self, values, eps_2, delta: float = 1.0, form: str = "bound"):
        x = np.ascontiguousarray(values, dtype=float)
        if x.ndim != 1 or x.size == 0 or not np.all(np.isfinite(x)):
            raise InvalidParameter(f"values must be a non-empty finite 1-D vector, got shape {x.shape}")
        self.eps_2 = check_eps2(eps_2)
        self.delta = check_delta(delta)
        self.form = check_form(form)
        self.n = x.size
        self.values = x
        self.w = weights(x, self.delta)
        direction = monotone_direction(x)
        # descending values are negated: ascending in the kernels, |x - mu| and the weights unchanged
        self.y = -x if direction < 0 else x
        self.ascending = direction != 0
        self.py = np.concatenate(([0.0], np.cumsum(self.y)))
        self.pw = np.concatenate(([0.0], np.cumsum(self.w)))
        self.pwy = np.concatenate(([0.0], np.cumsum(self.w * self.y)))
        self.inv_eps2 = 1.0 / self.eps_2
        self.exact = self.form == "exact"

    def _args(self):
        return self.y, self.w, self.py, self.pw, self.pwy

    def intervals(self, starts, ends):
        s = np.ascontiguousarray(starts, dtype=np.int64)
        e = np.ascontiguousarray(ends, dtype=np.int64)
        if s.shape != e.shape or np.any(e <= s) or (s.size and (s.min() < 0 or e.max() > self.n)):
            raise InvalidParameter("groups must be non-empty ranges [start, end) inside the sequence")
        out = np.empty(s.size)
        intervals_kernel(*self._args(), s, e, self.inv_eps2, self.exact, self.ascending, out)
        return out

    def rows_from(self, first_unit, bounds):
        out = np.empty(bounds.size - 1 - first_unit)
        row_kernel(*self._args(), np.ascontiguousarray(bounds, dtype=np.int64), int(first_unit),
                   self.inv_eps2, self.exact, self.ascending, out)
        return out

    def parts(self, starts, ends) -> tuple[np.ndarray, np.ndarray]:
        """(reconstruction, noise) parts of the bound (3) per group, for explanations."""
        s = np.asarray(starts, dtype=np.int64)
        e = np.asarray(ends, dtype=np.int64)
        noise = (self.pw[e] - self.pw[s]) / ((e - s) * self.eps_2)
        bound = GroupRelativeError(self.values, self.eps_2, self.delta, "bound").intervals(s, e)
        return bound - noise, noise


def relative_error_direct(values, eps_2, delta=1.0, form="bound") -> float:
    """Cost (2) or (3) of one group by the textbook formula (no prefix sums; for checks)."""
    x = np.asarray(values, dtype=float)
    w = weights(x, delta)
    a = np.abs(x - x.mean())
    b = 1.0 / (x.size * check_eps2(eps_2))
    if check_form(form) == "exact":
        return float(np.sum(w * expected_abs_laplace(a, b)))
    return float(np.sum(w * (a + b)))
