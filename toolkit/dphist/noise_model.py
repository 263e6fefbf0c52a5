"""A public description of the noise in H~, the initializer's output (``Context.noise_model``).

Components that reuse H~ beyond sorting - SORTaki's WAF (Eq. 3) weighs H~'s group mean against a
fresh one by their variances, and UEE (Eq. 5) removes the noise's share from the noisy SSE - need
the variance of every bin of H~.  Both papers assume plain Laplace(1/eps_in) noise, variance
2/eps_in^2 on every bin.  AHP's Threshold (Zhang et al. 2014, Sec. 4.2) breaks that: a value of
``x_i + Z_i`` below ``theta`` is replaced by 0, so such a bin's error is ``-x_i`` (a bias, not
noise of variance 2/eps_in^2).

The initializer that produced H~ describes it (:meth:`dphist.Initializer.noise_model`); the
pipeline puts the description on the context.  It is built from public quantities only (budget,
domain size, the initializer's parameters) and its per-bin :meth:`NoiseModel.variances` are a
function of H~ alone: using it is post-processing, free.

The variance given to a zeroed bin.  Its error is ``-x_i`` where ``x_i + Z_i < theta``; the true
``x_i`` is private, so the model takes the mean squared error under a flat prior on ``x_i >= 0``
(no preference among counts; nothing fitted to data).  With ``t = theta / b`` (``b`` the Laplace
scale), ``P(zeroed | x) = F(x)`` is ``1 - e^{x - t}/2`` for ``x <= t`` and ``e^{t - x}/2`` above, and

    E[x^2 | zeroed] = b^2 (t^3/3 + 2t + e^{-t}) / (t + e^{-t}/2)

(moments of ``F`` in closed form).  At ``t = 0`` (only negative values zeroed) it is ``2 b^2``, the
plain Laplace variance; at AHP's default ``theta = 0.35 ln(n) / eps_1`` and n = 4,096 (t = 2.9) it
is 4.8 b^2.  A bin that survived the threshold keeps the plain variance 2 b^2 (its noise is
conditioned on ``x_i + Z_i >= theta``; the model ignores that conditioning).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import InvalidParameter

FAMILIES = ("laplace",)


@dataclass(frozen=True)
class NoiseModel:
    """H~ = x + Laplace(``scale``) per bin, then (if ``zeroed_below`` is set) every value below
    ``zeroed_below`` replaced by 0 (AHP's Threshold).  Public: never built from the true counts."""

    scale: float                        #: Laplace scale b of every bin (1 / eps_in)
    family: str = "laplace"             #: distribution family of the per-bin noise
    zeroed_below: float | None = None   #: theta of a thresholding step, None when there was none

    def __post_init__(self):
        if self.family not in FAMILIES:
            raise InvalidParameter(f"noise family must be one of {', '.join(FAMILIES)}, got {self.family!r}")
        if not (isinstance(self.scale, (int, float)) and math.isfinite(self.scale) and self.scale > 0):
            raise InvalidParameter(f"the noise scale must be a finite number > 0, got {self.scale!r}")
        if self.zeroed_below is not None and not (math.isfinite(self.zeroed_below) and self.zeroed_below >= 0):
            raise InvalidParameter(f"zeroed_below must be a finite number >= 0 or None, got {self.zeroed_below!r}")

    @classmethod
    def laplace(cls, epsilon: float, zeroed_below: float | None = None) -> "NoiseModel":
        """Laplace(1/epsilon) per bin (the ``laplace`` initializer's H~), optionally thresholded."""
        return cls(scale=1.0 / float(epsilon), zeroed_below=None if zeroed_below is None else float(zeroed_below))

    @property
    def thresholded(self) -> bool:
        """Whether some values of H~ may have been replaced by 0."""
        return self.zeroed_below is not None

    @property
    def variance(self) -> float:
        """Variance of one bin's noise before any thresholding: 2 b^2."""
        return 2.0 * self.scale ** 2

    @property
    def zeroed_variance(self) -> float:
        """Mean squared error of a zeroed bin under a flat prior on its count (module docstring)."""
        if self.zeroed_below is None:
            return self.variance
        t = self.zeroed_below / self.scale
        return self.scale ** 2 * (t ** 3 / 3.0 + 2.0 * t + math.exp(-t)) / (t + 0.5 * math.exp(-t))

    def variances(self, noisy) -> np.ndarray:
        """Per-bin variance of H~'s error, from H~ itself (post-processing): 2 b^2, and
        :attr:`zeroed_variance` where a thresholding step left an exact 0."""
        noisy = np.asarray(noisy, dtype=float)
        out = np.full(noisy.shape, self.variance)
        if self.zeroed_below is not None and self.zeroed_below > 0:
            out[noisy == 0.0] = self.zeroed_variance
        return out
