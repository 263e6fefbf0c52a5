"""Private bounds: propose a domain when none can be stated, under a charged epsilon.

A histogram needs a public domain; reading it from the data would publish the
minimum and maximum.  When the user cannot state one, :func:`private_bounds`
spends ``epsilon`` on a noisy histogram of the values' *magnitudes* on a log
scale (bins ``[2^e, 2^(e+1))`` for each sign, ``e`` from -16 to 61, and one bin
around zero) and proposes ``[lo, hi)`` from the outermost bins whose noisy count
clears a threshold.  This is the approach of Google's differential-privacy
library (``ApproxBounds``: logarithmic bins, Laplace noise, the most extreme bins
above a threshold set from a failure probability; cc/docs/algorithms/approx-bounds.md)
and of OpenDP's prototype (opendp/opendp issue 659).  Our code is our own.

Privacy: the magnitude histogram is measured by the kernel's ``laplace.identity``
(sensitivity 1 per record, or ``k`` with ``user_id`` and ``max_contributions=k``),
written in the returned ledger; everything after it is post-processing.  The
release that uses the proposed domain spends its own epsilon: the total is the
sum (sequential composition).

Threshold: ``t = (k / epsilon) ln(m / (2 beta))`` for ``m`` bins, so that with
probability at least ``1 - beta`` no empty bin's noise clears it (each does with
probability ``exp(-t epsilon / k) / 2``).  The proposal covers the bulk of the
data, not its extremes: bins holding fewer than about ``t`` records are left
out, and values beyond the proposal are then clamped (the default policy).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import binning
from ..errors import InvalidParameter
from ..kernel import ExactNoise, Ledger, PrivateKernel, SeededLaplace, validate_epsilon
from .histogram import histogram

EXPONENTS = range(-16, 62)


def magnitude_bins() -> binning.Edges:
    """The public log-scale bins of the bounds step (no data involved)."""
    pos = [2.0 ** e for e in EXPONENTS] + [2.0 ** (EXPONENTS[-1] + 1)]
    return binning.edges([-v for v in reversed(pos)] + pos)


@dataclass(frozen=True)
class Bounds:
    """A proposed domain ``[lo, hi)`` and the ledger of the epsilon it cost."""

    lo: float
    hi: float
    epsilon: float
    threshold: float
    ledger: Ledger

    def bins(self, n: int, **policies) -> binning.Edges:
        """``n`` equal-width bins over the proposed domain."""
        return binning.count(self.lo, self.hi, n, **policies)


def private_bounds(source, column: str, epsilon, *, user_id=None, max_contributions=None, seed=None,
                   beta: float = 1e-3, **reader) -> Bounds:
    """Propose ``[lo, hi)`` for ``column`` of ``source`` with ``epsilon``-DP (module docstring).

    ``seed``: research mode (seeded float Laplace, reproducible, never to be published); without it,
    release mode's exact noise.  ``beta``: the probability that an empty bin clears the threshold.
    """
    eps = validate_epsilon(epsilon)
    if not 0 < beta < 1:
        raise InvalidParameter(f"beta must be between 0 and 1, got {beta!r}")
    spec = magnitude_bins()
    h = histogram(source, column, spec, user_id=user_id, max_contributions=max_contributions, seed=seed, **reader)
    if seed is None:
        noise = ExactNoise()
    else:
        noise = SeededLaplace(np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1]))
    kernel = PrivateKernel(h.counts, noise, contributions=h.max_contributions)
    noisy = kernel.handle("private-bounds", "bounds", eps).laplace_identity(eps)
    k = h.max_contributions
    t = k / eps * math.log(spec.n / (2 * beta))
    above = np.flatnonzero(noisy > t)
    if above.size == 0:
        raise InvalidParameter(f"no magnitude bin clears the threshold {t:.3g} at epsilon={eps:g}: too few records "
                               "for a private proposal; state a domain, or spend more epsilon")
    e = spec.edges
    return Bounds(float(e[above[0]]), float(e[above[-1] + 1]), eps, t, kernel.ledger)
