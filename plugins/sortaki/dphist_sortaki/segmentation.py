"""The generic partitioners of SORTaki Section V-B on the core's segmentation engine (no privacy here).

Each works on *units* in their current order (the groups of the incoming partition): unit ``g``
covers positions ``[bounds[g], bounds[g+1])`` and a candidate group (the paper's *bin*) is a run of
consecutive units.  The error formula (:mod:`.error_formulas`) receives position ranges and the
prefix sums of the values in that order.  All return ``cuts``: the unit
indices where a group starts (``cuts[0] = 0``), ready for ``Partition.merge``.

* :func:`greedy_cuts` - GP, SORTaki Algorithm 5: :func:`dphist.segmentation.greedy` with the
  singleton bound (the next unit joins when EF(group + unit) < EF(group) + EF(unit)).
* :func:`dp_cuts` with ``variant="exact"`` - DPP, Algorithm 6, O(k^2)
  (:func:`dphist.segmentation.optimal`); ``variant="power-of-two"`` - DPP restricted to groups of
  2^j units (``lengths="power-of-two"``).

Algorithm 6 fills an interval table ``S[s, e]`` (O(n^3) as written).  Because
the error of a partition is the *sum* of its groups' errors, the optimum over
``[1, e]`` is reached by the classic 1-D segmentation recursion
``B[e] = min_s B[s] + EF(s, e)`` (Jagadish et al. 1998, used by AHP and
DAWA), which gives the same minimum in O(k^2) - the complexity the paper
claims.  Restricting the last group to 2^j units gives O(k log k) EF
evaluations (the paper states O(n log^2 n), inherited from DAWA whose L1 cost
needs a median; our EFs are O(1) from prefix sums).

``DPP(ef="ahp", variant="exact")`` on singleton groups is AHP's optimal grouping (``ahp.optimal``):
the same engine call with the same cost (see that component's docstring for why both exist).

Formulas of the form SSE + size penalty become the engine's compiled
:class:`~dphist.segmentation.SSEPenalty`; any other callable EF is evaluated vectorised
(one EF call per batch of candidates), which is slower but exact.
"""
from __future__ import annotations

import numpy as np

from dphist import segmentation
from dphist.errors import InvalidParameter
from dphist.intervals import centred_prefix_sums

from .error_formulas import SizePenaltyFormula, resolve_error_formula

VARIANTS = ("exact", "power-of-two")
_LENGTHS = {"exact": "all", "power-of-two": "power-of-two"}


def _cost(ef, prefix, prefix_sq, bounds, eps_in: float, eps_f: float):
    """The segmentation cost of an error formula over the prefix sums, and the validated group bounds."""
    bounds = np.ascontiguousarray(bounds, dtype=np.int64)
    prefix = np.ascontiguousarray(prefix, dtype=float)
    prefix_sq = np.ascontiguousarray(prefix_sq, dtype=float)
    if bounds.ndim != 1 or bounds.size < 2 or bounds[0] != 0 or np.any(np.diff(bounds) <= 0):
        raise InvalidParameter("group bounds must increase strictly from 0")
    if prefix.shape != (bounds[-1] + 1,) or prefix_sq.shape != prefix.shape:
        raise InvalidParameter(f"prefix sums must have length {bounds[-1] + 1} (positions + 1)")
    if isinstance(ef, SizePenaltyFormula):
        return ef.cost(prefix, prefix_sq, eps_in, eps_f), bounds
    return segmentation.IntervalCost(lambda s, e: ef(s, e, prefix, prefix_sq, eps_in, eps_f), prefix.size - 1), bounds


def greedy_cuts(ef, prefix, prefix_sq, bounds, eps_in: float, eps_f: float) -> np.ndarray:
    """GP (SORTaki Algorithm 5): walk the groups, merge the next one when EF says it is better."""
    cost, bounds = _cost(resolve_error_formula(ef), prefix, prefix_sq, bounds, eps_in, eps_f)
    return segmentation.greedy(cost, bounds, bound="singleton").starts


def dp_cuts(ef, prefix, prefix_sq, bounds, eps_in: float, eps_f: float,
            variant: str = "exact", return_cost: bool = False):
    """DPP (SORTaki Algorithm 6): the partition minimising the total EF, exactly or over groups of 2^j units."""
    if variant not in VARIANTS:
        raise InvalidParameter(f"unknown DPP variant {variant!r}; use one of {', '.join(VARIANTS)}")
    cost, bounds = _cost(resolve_error_formula(ef), prefix, prefix_sq, bounds, eps_in, eps_f)
    # ties: the shortest last group in the power-of-two variant, as this plugin's DP did before the port
    found = segmentation.optimal(cost, bounds, lengths=_LENGTHS[variant], longest_on_ties=variant == "exact")
    return (found.starts, found.cost) if return_cost else found.starts


# ----------------------------------------------------- analysis helpers
def partition_cost(ef, values, cuts_positions, eps_in: float, eps_f: float) -> float:
    """Total EF of the groups that start at ``cuts_positions`` over ``values`` (analysis)."""
    ef = resolve_error_formula(ef)
    p, p2 = centred_prefix_sums(values)
    starts = np.asarray(cuts_positions, dtype=np.int64)
    ends = np.r_[starts[1:], len(values)]
    return float(np.sum(ef(starts, ends, p, p2, eps_in, eps_f)))


def segment_values(values, ef, eps_in: float, eps_f: float, method: str = "dp", variant: str = "exact"):
    """Groups (start positions) of ``values`` chosen by GP (``method="greedy"``) or DPP (``"dp"``).

    For analysis outside a pipeline, e.g. the oracle partition under EE on the
    true counts.  Inside a private pipeline use the partitioner components.
    """
    p, p2 = centred_prefix_sums(values)
    bounds = np.arange(len(values) + 1)
    if method == "greedy":
        return greedy_cuts(ef, p, p2, bounds, eps_in, eps_f)
    if method == "dp":
        return dp_cuts(ef, p, p2, bounds, eps_in, eps_f, variant)
    raise InvalidParameter(f"method must be 'greedy' or 'dp', got {method!r}")
