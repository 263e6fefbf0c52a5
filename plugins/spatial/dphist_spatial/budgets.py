"""Budgets across the levels of a tree (Cormode et al., ICDE 2012, Section 4.1).

A range query on a ``d``-dimensional tree with ``b`` parts per axis touches ``O(b^{(d-1)(H-i)})``
nodes of depth ``i`` near its boundary (Cormode et al.'s Lemma for the quadtree: ``O(2^{H-i})``
on a 2-D grid).  Minimising ``sum_i n_i * 2 / eps_i^2`` subject to ``sum_i eps_i = eps`` gives
``eps_i`` proportional to ``n_i^{1/3}``: the geometric budget, ``eps_i`` growing by the ratio
``b^{(d-1)/3}`` per level towards the leaves (``2^{1/3}`` for the quadtree, the paper's
``eps_i = 2^{(H-i)/3} eps (2^{1/3} - 1) / (2^{(H+1)/3} - 1)`` with ``i`` the height above the
leaves).  The derivation is written out and checked in ``notebooks/spatial.ipynb``.
"""
from __future__ import annotations

import numpy as np

from dphist import InvalidParameter


def geometric_ratio(shape, branching: int) -> float:
    """``b^{(d-1)/3}``, ``d`` the number of axes longer than one cell (1: uniform on a line)."""
    d = sum(1 for s in shape if int(s) > 1)
    return float(branching) ** (max(d - 1, 0) / 3.0)


def level_epsilons(epsilon: float, depths, rule: str, ratio: float = 1.0) -> np.ndarray:
    """The epsilon of each measured depth (root = 0); they sum to ``epsilon`` (the last one takes the rest)."""
    depths = np.asarray(list(depths), dtype=float)
    if depths.size == 0:
        raise InvalidParameter("no level to measure")
    if rule == "uniform":
        weights = np.ones(depths.size)
    elif rule == "geometric":
        weights = float(ratio) ** depths
    else:
        raise InvalidParameter(f"budget rule must be 'uniform' or 'geometric', got {rule!r}")
    eps = float(epsilon) * weights / weights.sum()
    eps[-1] = float(epsilon) - eps[:-1].sum()
    return eps


def boundary_epsilons(epsilon: float, nodes, axes: int = 2) -> np.ndarray:
    """Geometric budget of a tree whose depth ``d`` has ``nodes[d]`` nodes (nominal, public) on ``axes`` axes.

    A range query's boundary crosses about ``nodes^{(axes-1)/axes}`` nodes of a level of balanced boxes
    (the side of the grid over the side of a box, per boundary face); the optimum of the module
    docstring, ``eps_i`` proportional to ``n_i^{1/3}``, is then ``nodes^{(axes-1)/(3 axes)}``: the
    quadtree's ``2^{d/3}`` (``nodes = 4^d``), the kd-tree's ``2^{d/6}`` (``nodes = 2^d``, one axis cut per
    level), and both in turn in the hybrid tree.  They sum to ``epsilon`` (the last one takes the rest).
    """
    nodes = np.asarray(list(nodes), dtype=float)
    if nodes.size == 0 or np.any(nodes < 1):
        raise InvalidParameter("a geometric budget needs at least one level of at least one node")
    weights = nodes ** ((axes - 1) / (3.0 * axes))
    eps = float(epsilon) * weights / weights.sum()
    eps[-1] = float(epsilon) - eps[:-1].sum()
    return eps
