"""GP and DPP as pipeline components (SORTaki Section V-B, Algorithms 5 and 6).

Both decide on H~ only, so they spend nothing (gamma_p = 0): every
computation here is post-processing of the initializer's output.  They take
any error formula ``ef`` (:mod:`.error_formulas`): ``"ahp"``, ``"uee"``, or a
callable.  ``"ee"`` needs the true counts and is refused with
:class:`~dphist.errors.PrivacyViolation`.
"""
from __future__ import annotations

import numpy as np

from dphist import Partitioner
from dphist.errors import InvalidParameter, PrivacyViolation
from dphist.intervals import centred_prefix_sums
from dphist.params import Options

from .error_formulas import FORMULAS, PerBinUEE, UnbiasedExpectedError, resolve_error_formula
from .segmentation import VARIANTS, dp_cuts, greedy_cuts

_SORTAKI = "Doudalis & Mehrotra, SORTaki, Section V-B"
#: ``ef``: a formula's name, or a callable EF(starts, ends, prefix, prefix_sq, eps_in, eps_f)
#: ("ee" is accepted here and refused when a private pipeline runs: it needs the true counts)
ERROR_FORMULA = [Options(*FORMULAS), callable]


def noisy_prefix_sums(bins, ctx, who: str):
    """Prefix sums of H~ in the partition's order (post-processing of H~: free)."""
    if ctx.noisy is None:
        raise InvalidParameter(f"{who} decides on H~: give the pipeline an initializer with gamma_in > 0")
    return centred_prefix_sums(bins.in_order(ctx.noisy))


def private_error_formula(ef, who: str, bins=None, ctx=None):
    """The error formula to run on H~: never one that needs the true counts; UEE reads H~'s per-bin
    variances from ``ctx.noise_model`` when the initializer thresholded H~ (:class:`PerBinUEE`;
    post-processing: the model and H~ are public)."""
    ef = resolve_error_formula(ef)
    if getattr(ef, "needs_true_data", False):
        raise PrivacyViolation(
            f"{who} was given the error formula {getattr(ef, 'name', ef)!r}, which needs the true counts "
            "(SORTaki Eq. 4, for analysis only); inside a private pipeline use 'uee' (Eq. 5) or 'ahp'")
    model = None if ctx is None else ctx.noise_model
    if isinstance(ef, UnbiasedExpectedError) and model is not None and model.thresholded:
        return PerBinUEE(bins.in_order(model.variances(ctx.noisy)))
    return ef


class GreedyPartitioner(Partitioner):
    """GP, SORTaki Algorithm 5: merge the next unit into the current group when EF says so.

    Note: AHP's own greedy (Zhang et al. 2014, Algorithm 3) compares against a
    look-ahead lower bound err*(next); SORTaki's GP, implemented here, uses the
    next group's own error EF(V[i]) as Algorithm 5 states.
    """

    name = "sortaki.greedy"
    citation = _SORTAKI + ", Algorithm 5 (GP)"
    spends = False
    param_constraints = {"ef": ERROR_FORMULA}

    def __init__(self, ef="uee"):
        self.ef = ef

    def partition(self, bins, ctx):
        ef = private_error_formula(self.ef, self.name, bins, ctx)
        p, p2 = noisy_prefix_sums(bins, ctx, self.name)
        return bins.merge(greedy_cuts(ef, p, p2, bins.bounds, ctx.eps_in, ctx.eps_f))


class DynamicProgrammingPartitioner(Partitioner):
    """DPP, SORTaki Algorithm 6: the partition of minimum total EF.

    ``variant="exact"`` considers every candidate group, O(k^2) for k units;
    ``variant="power-of-two"`` only groups of 2^j units (the paper's scalable
    version "inspired from DAWA"; the paper says "multiple of 2", but only
    powers of two give the stated near-linear complexity, as in DAWA).
    """

    name = "sortaki.dp"
    citation = _SORTAKI + ", Algorithm 6 (DPP)"
    spends = False
    param_constraints = {"ef": ERROR_FORMULA, "variant": Options(*VARIANTS)}

    def __init__(self, ef="uee", variant: str = "exact"):
        self.ef = ef
        self.variant = variant

    def partition(self, bins, ctx):
        ef = private_error_formula(self.ef, self.name, bins, ctx)
        p, p2 = noisy_prefix_sums(bins, ctx, self.name)
        return bins.merge(dp_cuts(ef, p, p2, bins.bounds, ctx.eps_in, ctx.eps_f, self.variant))
