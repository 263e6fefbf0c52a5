"""AHP's greedy grouping (Zhang et al., SDM 2014, Algorithm 3).

Scanning the sorted noisy histogram left to right, bin x_j joins the current
group C iff

    err(C u {x_j}) < err(C) + err*(x_j)                        (Algorithm 3 line 8)

with err from Theorem 4.2 and err* the lower bound of :mod:`.group_error`: the core's
greedy scan with the look-ahead bound, :func:`dphist.segmentation.greedy` with
``bound="lookahead"``.  On sorted values the comparison ``err*(x_j) > err(C u x_j) - err(C)`` is
decided by galloping and branch and bound (O(log n) candidate evaluations in typical cases)
instead of the paper's scan; ``decide_early=False`` runs the paper's scan with its early-stop
rule.  Both give identical groups (a test checks this on many inputs).
"""
from __future__ import annotations

import numpy as np

from dphist import segmentation

from .group_error import check_eps2, group_cost


def greedy_cuts_taken(values, order, eps_2, unsorted_max: int | None = None) -> np.ndarray | None:
    """:func:`greedy_cuts` of ``values[order]`` (``values`` when ``order`` is None) read through the order,
    without the gathered copy (:func:`dphist.segmentation.greedy_lookahead_taken`): the same boundaries.
    None where the generic route is to be taken (see that function)."""
    seg = segmentation.greedy_lookahead_taken(values, order, 2.0 / check_eps2(eps_2) ** 2,
                                              unsorted_max=unsorted_max)
    return None if seg is None else seg.bounds


def greedy_cuts(values, eps_2, decide_early: bool = True) -> np.ndarray:
    """Group boundaries ``0 = c_0 < c_1 < ... < c_m = n`` found by Algorithm 3."""
    if np.size(values) == 0:
        return np.zeros(1, dtype=np.int64)
    cost = group_cost(values, eps_2)
    return segmentation.greedy(cost, bound="lookahead", decide_early=decide_early).bounds
