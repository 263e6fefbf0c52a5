"""Group error formulas EF(v, eps_in, eps_f) of SORTaki Section V-A, O(1) per group from prefix sums.

Names: the paper's *bin* v (a set of domain values published with one average) is our *group*;
a bin in dphist is one cell of the histogram.

Every formula here is *vectorised over many groups at once*::

    EF(starts, ends, prefix, prefix_sq, eps_in, eps_f) -> errors

A group is the run of positions ``[start, end)`` of the (possibly sorted) order;
``prefix``/``prefix_sq`` are the prefix sums of the values and of their
squares in that order (``prefix[0] = 0``).  The sum of squared deviations of a
group from its mean is then, in O(1),

    SSE(v) = sum_i x_i^2 - (sum_i x_i)^2 / |v|          (Xu et al. 2013; SORTaki Eq. 5)

The three formulas of the paper are all "SSE + a term that depends on the group
size only" (:class:`SizePenaltyFormula`), which the partitioners exploit for
their compiled fast paths:

* ``ahp`` - AHP's group error (Zhang et al. 2014, Theorem 4.2) evaluated on
  H~:  SSE~(v) + 2 / (|v| eps_f^2).  It ignores that SSE~ is computed from
  noisy values and that H~ could also be reused by the finalizer.
* ``ee``  - SORTaki Equation 4, the expected squared error of the WAF estimate:
  SSE(v) + 2 / (eps_in^2 + |v| eps_f^2).  It needs the TRUE counts: analysis
  only.  A partitioner handed ``ee`` inside a private pipeline raises
  :class:`~dphist.errors.PrivacyViolation`.
* ``uee`` - SORTaki Equation 5, the unbiased estimate of EE from H~:
  SSE~(v) - (|v| - 1) 2/eps_in^2 + 2 / (eps_in^2 + |v| eps_f^2).

Any callable with the vectorised signature above is accepted as a custom EF
(:func:`resolve_error_formula`); give it ``needs_true_data = True`` if it is
meant for analysis on true data.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from dphist import segmentation
from dphist.errors import InvalidParameter
from dphist.intervals import centred_prefix_sums, interval_sse


# The interval statistics live in the core (shared with the ahp plugin).  The prefix sums are the CENTRED
# ones (dphist.intervals.centred_prefix_sums), not dphist.workloads.prefix_sums (plain sums of a vector).
sse = interval_sse


class ErrorFormula:
    """A group error formula EF(v, eps_in, eps_f), vectorised over groups."""

    name: str = ""
    #: True when the formula is meaningful only on the true counts (analysis only)
    needs_true_data: bool = False
    citation: str = ""

    def __call__(self, starts, ends, prefix, prefix_sq, eps_in: float, eps_f: float) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<error formula {self.name!r}>"


class SizePenaltyFormula(ErrorFormula):
    """EF(v) = SSE(v) + penalty(|v|, eps_in, eps_f)."""

    def penalty(self, sizes, eps_in: float, eps_f: float) -> np.ndarray:
        raise NotImplementedError

    def cost(self, prefix, prefix_sq, eps_in: float, eps_f: float) -> segmentation.SSEPenalty:
        """This formula over the given prefix sums as the segmentation engine's compiled cost."""
        return segmentation.SSEPenalty.from_prefix_sums(prefix, prefix_sq,
                                                        lambda sizes: self.penalty(sizes, eps_in, eps_f),
                                                        penalty_last=True)

    def __call__(self, starts, ends, prefix, prefix_sq, eps_in, eps_f):
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        return sse(starts, ends, prefix, prefix_sq) + self.penalty(ends - starts, eps_in, eps_f)


def _positive(eps, what: str) -> float:
    eps = float(eps)
    if not np.isfinite(eps) or eps <= 0:
        raise InvalidParameter(f"the error formula needs {what} > 0, got {eps}")
    return eps


class AHPError(SizePenaltyFormula):
    """AHP's group error on H~: SSE~(v) + 2/(|v| eps_f^2) (Zhang et al. 2014, Thm 4.2)."""

    name = "ahp"
    citation = "Zhang et al., AHP, SDM 2014, Theorem 4.2; SORTaki Table II (AHP)"

    def penalty(self, sizes, eps_in, eps_f):
        eps_f = _positive(eps_f, "eps_f")
        return 2.0 / (np.asarray(sizes, dtype=float) * eps_f ** 2)


class ExpectedError(SizePenaltyFormula):
    """EE, SORTaki Equation 4: SSE(v) + 2/(eps_in^2 + |v| eps_f^2), on the TRUE counts."""

    name = "ee"
    needs_true_data = True
    citation = "Doudalis & Mehrotra, SORTaki, Section V-A, Equation 4"

    def penalty(self, sizes, eps_in, eps_f):
        eps_f = _positive(eps_f, "eps_f")
        eps_in = max(float(eps_in), 0.0)
        return 2.0 / (eps_in ** 2 + np.asarray(sizes, dtype=float) * eps_f ** 2)


class UnbiasedExpectedError(SizePenaltyFormula):
    """UEE, SORTaki Equation 5: SSE~(v) - (|v|-1) 2/eps_in^2 + 2/(eps_in^2 + |v| eps_f^2)."""

    name = "uee"
    citation = "Doudalis & Mehrotra, SORTaki, Section V-A, Equation 5"

    def penalty(self, sizes, eps_in, eps_f):
        eps_f = _positive(eps_f, "eps_f")
        eps_in = _positive(eps_in, "eps_in (UEE corrects the noise of H~)")
        sizes = np.asarray(sizes, dtype=float)
        return -(sizes - 1.0) * 2.0 / eps_in ** 2 + 2.0 / (eps_in ** 2 + sizes * eps_f ** 2)


class PerBinUEE(ErrorFormula):
    """UEE (Eq. 5) when H~'s bins carry their own error variances sigma_i^2 (``dphist.noise_model``;
    e.g. after AHP's thresholding).  For independent zero-mean errors, E SSE~(v) = SSE(v) +
    (1 - 1/|v|) S(v) with S(v) = sum_{i in v} sigma_i^2, and the WAF estimate's summed variance over v is
    S s_f / (|v| (S + s_f)) with s_f = 2/eps_f^2 (:func:`.waf.waf_weights_from_variances`), so

        UEE(v) = SSE~(v) - (1 - 1/|v|) S(v) + S(v) s_f / (|v| (S(v) + s_f)).

    With sigma_i^2 = 2/eps_in^2 it equals Equation 5.  ``variances`` are in the positions' order
    (H~'s variances rearranged like H~); a public function of H~: post-processing.
    """

    name = "uee-per-bin"
    citation = "Doudalis & Mehrotra, SORTaki, Section V-A, Equation 5, with per-bin noise variances"

    def __init__(self, variances):
        v = np.asarray(variances, dtype=float)
        self.variance_prefix = np.r_[0.0, np.cumsum(v)]

    def __call__(self, starts, ends, prefix, prefix_sq, eps_in, eps_f):
        starts = np.asarray(starts, dtype=np.int64)
        ends = np.asarray(ends, dtype=np.int64)
        m = (ends - starts).astype(float)
        s = self.variance_prefix[ends] - self.variance_prefix[starts]
        fresh = 2.0 / _positive(eps_f, "eps_f") ** 2
        return sse(starts, ends, prefix, prefix_sq) - (1.0 - 1.0 / m) * s + s * fresh / (m * (s + fresh))


FORMULAS: dict[str, ErrorFormula] = {f.name: f for f in (AHPError(), ExpectedError(), UnbiasedExpectedError())}


def resolve_error_formula(ef) -> ErrorFormula | Callable:
    """An error formula from a name (``ahp``, ``ee``, ``uee``) or a callable; clear error otherwise."""
    if isinstance(ef, str):
        key = ef.lower()
        if key not in FORMULAS:
            raise InvalidParameter(f"unknown error formula {ef!r}; known: {', '.join(FORMULAS)} "
                                   "or a callable EF(starts, ends, prefix, prefix_sq, eps_in, eps_f)")
        return FORMULAS[key]
    if not callable(ef):
        raise InvalidParameter(f"the error formula must be a name ({', '.join(FORMULAS)}) or a callable "
                               f"EF(starts, ends, prefix, prefix_sq, eps_in, eps_f); got {ef!r}")
    return ef


def bin_errors(ef, values, starts, ends, eps_in: float, eps_f: float) -> np.ndarray:
    """EF of every group ``[start, end)`` of ``values`` (a convenience for analysis and tests)."""
    ef = resolve_error_formula(ef)
    p, p2 = centred_prefix_sums(values)
    return np.asarray(ef(np.asarray(starts), np.asarray(ends), p, p2, eps_in, eps_f), dtype=float)
