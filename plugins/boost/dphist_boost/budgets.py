"""How the finalizer's budget is split over the measured levels of the tree.

Each level is a set of disjoint intervals (sensitivity 1), so measuring level
``j`` with ``eps_j`` is ``eps_j``-DP and the tree is ``sum_j eps_j``-DP by
sequential composition; the split must use the whole share exactly.

* ``"uniform"`` - ``eps / m`` per level: Hay et al. 2010, Section 4
  (``Lap(ell/eps)`` on every node, Proposition 4).
* ``"geometric"`` - Cormode, Procopiuc, Srivastava, Shen, Yu, *Differentially
  private spatial decompositions*, ICDE 2012, Section 4 (geometric budget):
  ``eps_i = 2**((h - i)/3) * eps * (2**(1/3) - 1) / (2**((h + 1)/3) - 1)`` for
  level ``i`` counted from the leaves (``i = 0``) to the top measured level
  ``h``: each level up gets ``2**(-1/3)`` times the budget of the level below.
  Cormode et al. derive the factor for quadtrees (a range query touches
  ``O(2**(h-i))`` nodes at level ``i``, and ``eps_i`` proportional to the cube
  root of that count minimises the summed variance); Kellaris et al. apply the
  same allocation to 1-D trees, which is what we implement.
* a list of positive numbers - explicit epsilons, **leaves first**, one per
  measured level, summing to the finalizer's share.
"""
from __future__ import annotations

import math

import numpy as np

from dphist.errors import InvalidParameter

_SUM_TOLERANCE = 1e-9


def level_epsilons(spec, n_levels: int, total: float) -> np.ndarray:
    """Per-level epsilons, leaves first, summing to ``total``."""
    m = int(n_levels)
    if m < 1:
        raise InvalidParameter("the tree has no measured level")
    if isinstance(spec, str):
        if spec == "uniform":
            weights = np.ones(m)
        elif spec == "geometric":
            weights = 2.0 ** ((m - 1 - np.arange(m)) / 3.0)
        else:
            raise InvalidParameter(f"level_budgets must be 'uniform', 'geometric' or a list of epsilons, got {spec!r}")
        eps = total * weights / weights.sum()
        eps[-1] = total - eps[:-1].sum()  # exact total despite rounding
        return eps
    try:
        eps = np.asarray([float(e) for e in spec], dtype=float)
    except (TypeError, ValueError):
        raise InvalidParameter(f"level_budgets must be 'uniform', 'geometric' or a list of epsilons, got {spec!r}") from None
    if eps.size != m:
        raise InvalidParameter(f"level_budgets lists {eps.size} epsilons but the tree has {m} measured levels")
    if not np.all(np.isfinite(eps)) or np.any(eps <= 0):
        raise InvalidParameter(f"every level epsilon must be positive and finite, got {list(eps)}")
    if not math.isclose(eps.sum(), total, rel_tol=_SUM_TOLERANCE):
        raise InvalidParameter(f"level epsilons sum to {eps.sum():.12g} but the finalizer's budget is {total:.12g}")
    eps[-1] = total - eps[:-1].sum()  # absorb floating-point slack so the share is used exactly
    return eps


def validate_spec(spec) -> None:
    """Constructor-time check of a ``level_budgets`` value (lengths are checked at run time)."""
    if isinstance(spec, str):
        if spec not in ("uniform", "geometric"):
            raise InvalidParameter(f"level_budgets must be 'uniform', 'geometric' or a list of epsilons, got {spec!r}")
        return
    try:
        values = [float(e) for e in spec]
    except (TypeError, ValueError):
        raise InvalidParameter(f"level_budgets must be 'uniform', 'geometric' or a list of epsilons, got {spec!r}") from None
    if not values or any(not math.isfinite(v) or v <= 0 for v in values):
        raise InvalidParameter(f"every level epsilon must be positive and finite, got {values}")
