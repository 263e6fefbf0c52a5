"""The error of a group (Theorem 4.2) and the greedy lower bound err* (Section 4.2).

A group C of the sorted noisy histogram is published as its true mean plus
Lap(1/eps_2)/|C| on every bin (Algorithm 1 line 9), so (Theorem 4.2)

    err(C) = sum_{x in C} (x - mean(C))^2  +  2 / (|C| eps_2^2)        (AE + LE)

AHP evaluates it on the *noisy* values (the true ones are private).  This is the core's
``SSEPenalty.inverse_size(values, 2 / eps_2^2)`` (:mod:`dphist.segmentation`), O(1) per
group from prefix sums.

The greedy algorithm needs a lower bound on the error that bin j will carry if it
starts a new group C_{j,l} = {x_j, ..., x_l}:

    err*(x_j) = min_{l >= j} f_j(l),   f_j(l) = (x_j - mean(C_{j,l}))^2 + 2 / (|C_{j,l}|^2 eps_2^2)

(its own squared deviation plus its share of the group's Laplace variance).  On
sorted values x_j is an extreme point of every C_{j,l}, so the first term grows
with l and the second shrinks; the paper stops the scan at the first l with

    AE(l+1) - AE(l) >= LE(l) - LE_min,   LE_min = 2 / ((n-j+1)^2 eps_2^2).

Then every l' > l has f_j(l') >= AE(l+1) + LE_min >= f_j(l): the minimum is among
the l already seen.  The paper states the result as f_j(l) at the stopping point;
f_j need not be unimodal, so we return the running minimum (which is what the
argument proves, and what DPBench's ``err_star`` computes too).  A run of bins
equal to x_j (e.g. thresholded zeros) has AE = 0, so its minimum is at its end:
the scan jumps there directly.  On values that are not monotone the stop rule is not
valid; every l is then scanned.  The scan is the core's
:func:`dphist.segmentation.lookahead_bounds` (share(m) = 2 / (m^2 eps_2^2)).
"""
from __future__ import annotations

import numpy as np

from dphist import InvalidParameter
from dphist import segmentation


def check_eps2(eps_2) -> float:
    eps_2 = float(eps_2)
    if not np.isfinite(eps_2) or eps_2 <= 0:
        raise InvalidParameter(f"AHP's group error needs eps_2 > 0 (the finalizer's share), got {eps_2}")
    return eps_2


def group_cost(values, eps_2) -> segmentation.SSEPenalty:
    """err(C) of Theorem 4.2 over ``values`` as a segmentation cost: SSE + (2 / eps_2^2) / |C|."""
    return segmentation.SSEPenalty.inverse_size(values, 2.0 / check_eps2(eps_2) ** 2)


def group_errors(values, bounds, eps_2) -> np.ndarray:
    """err(C) of Theorem 4.2 for the groups ``values[bounds[g]:bounds[g+1]]`` (O(1) each)."""
    b = np.asarray(bounds, dtype=np.int64)
    return group_cost(values, eps_2).intervals(b[:-1], b[1:])


def total_error(values, bounds, eps_2) -> float:
    """Theorem 5.2: the expected squared error of the whole release = sum of err(C)."""
    return float(group_errors(values, bounds, eps_2).sum())


def is_monotone(values) -> bool:
    """Whether the values never decrease or never increase (finite values: neighbours compared directly,
    the same answer as the signs of ``np.diff``, one byte per value instead of a float difference)."""
    x = np.asarray(values, dtype=float)
    return bool(np.all(x[1:] >= x[:-1]) or np.all(x[1:] <= x[:-1]))


def lower_bounds(values, eps_2, early_stop: bool = True) -> np.ndarray:
    """err*(x_j) for every position j (the paper's scan; ``early_stop`` uses its stop rule)."""
    return segmentation.lookahead_bounds(group_cost(values, eps_2), early_stop=early_stop)


def lower_bound_exhaustive(values, j: int, eps_2) -> float:
    """err*(x_j) by evaluating f_j(l) at every l >= j (no early stop; for checks)."""
    x = np.asarray(values, dtype=float)[j:]
    m = np.arange(1, x.size + 1)
    means = np.cumsum(x) / m
    return float(np.min((x[0] - means) ** 2 + 2.0 / (m * m * check_eps2(eps_2) ** 2)))
