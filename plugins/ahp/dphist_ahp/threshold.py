"""AHP's initializer: Laplace noise on every bin, then the Threshold procedure.

Zhang et al., SDM 2014, Algorithm 1 lines 2-3 and Section 4.2:

    H^ = H + <Lap(1/eps_1)>^n                      (line 2, eps_1-DP, sensitivity 1)
    H^_i = H^_i if H^_i >= theta else 0,  theta = eta * log(n) / eps_1     (line 3)

The threshold reads only H^ and public quantities (n, eta, eps_1), so it is
post-processing and costs no budget.  The paper writes ``log`` without a base
and leaves eta open; we take the natural logarithm and eta = 0.35 as the public
reference implementations do (DPBench / dpcomp_core ``ahp_engine``: ``math.log``,
``eta=0.35``, ``ratio=0.85``).  The reference zeroes values ``<= theta``; the paper
keeps values ``>= theta``.  We follow the paper (the two differ only on a
probability-zero event).
"""
from __future__ import annotations

import math

import numpy as np

from dphist import Initializer, InvalidParameter
from dphist.noise_model import NoiseModel
from dphist.validation import sole_float_vector
from dphist.params import Interval

CITATION = "Zhang, Chen, Xu, Meng, Xie. Towards Accurate Histogram Publication under DP. SDM 2014"


def threshold_value(n: int, eta: float, eps_1: float) -> float:
    """theta = eta * ln(n) / eps_1 (Section 4.2; natural log as the reference implementation)."""
    return float(eta) * math.log(n) / eps_1


def apply_threshold(noisy, n: int, eta: float, eps_1: float) -> np.ndarray:
    """The Threshold procedure: noisy values below theta become 0.

    Post-processing of an already private vector: free.
    """
    noisy = np.asarray(noisy, dtype=float)
    theta = threshold_value(n, eta, eps_1)
    return np.where(noisy >= theta, noisy, 0.0)


def threshold_in_place(noisy: np.ndarray, n: int, eta: float, eps_1: float) -> np.ndarray:
    """:func:`apply_threshold` written over ``noisy`` (a float64 vector): the same floats (every value that
    is not ``>= theta`` set to ``+0.0``), without a second vector of n floats.  Returns ``noisy``."""
    below = noisy >= threshold_value(n, eta, eps_1)
    np.logical_not(below, out=below)
    np.copyto(noisy, 0.0, where=below)
    return noisy


class ThresholdInitializer(Initializer):
    """Laplace(1/eps_1) on every bin, then zero the values below eta*ln(n)/eps_1.

    Spends its whole share eps_1 = gamma_in * epsilon on one ``laplace_identity``
    call (AHP Algorithm 1 line 2); thresholding (line 3) is post-processing.
    Parameter: ``eta`` (default 0.35, the DPBench/ektelo value; the paper leaves it open),
    a finite number >= 0 (the paper asks eta > 0; eta = 0 only clips negatives).
    """

    name = "ahp.threshold"
    citation = CITATION + ", Algorithm 1 lines 2-3 (Threshold, Section 4.2)"
    spends = True
    param_constraints = {"eta": Interval(float, 0, None)}

    def __init__(self, eta: float = 0.35):
        self.eta = eta

    def initialize(self, ctx):
        eps_1 = ctx.budget
        if eps_1 <= 0:
            raise InvalidParameter("ahp.threshold needs a positive share gamma_in: it spends eps_1 = gamma_in * "
                                   "epsilon on the noisy first look (AHP Algorithm 1 line 2)")
        noisy = ctx.data.laplace_identity(eps_1)
        # Post-processing of the eps_1-DP vector (free): the Threshold procedure, written over the kernel's
        # answer when nothing else holds it (the same floats, one vector of n fewer: memory, page faults)
        if sole_float_vector(noisy, holders=1):       # the variable above
            return threshold_in_place(noisy, ctx.n, self.eta, eps_1)
        return apply_threshold(noisy, ctx.n, self.eta, eps_1)

    def noise_model(self, ctx):
        """Laplace(1/eps_1) per bin, then values below theta = eta ln(n) / eps_1 zeroed: the
        components that weigh H~ by its variance (SORTaki's WAF and UEE) read the zeroed bins'
        variance from it (:mod:`dphist.noise_model`).  Public: n, eta and eps_1 only."""
        eps_1 = ctx.eps_in
        return NoiseModel.laplace(eps_1, zeroed_below=threshold_value(ctx.n, self.eta, eps_1))
