"""WAF, the weighted average finalizer (SORTaki Section V-A, Equations 1-3, Algorithm 4).

For a group v (the paper's *bin*), two unbiased estimates of its average frequency exist:

* the mean of H~ over v, with variance 2 / (|v| eps_in^2);
* a fresh noisy sum of v with budget eps_f, divided by |v|: variance 2 / (|v|^2 eps_f^2).

Their minimum-variance unbiased combination (Equation 3) is

    avg~_v = a1 * mean(H~_v) + a2 * sum~_v / |v|,   a1 = eps_in^2 / (eps_in^2 + |v| eps_f^2),  a2 = 1 - a1,

with variance 2 / (|v| (eps_in^2 + |v| eps_f^2)) per bin (so EE's noise term
2 / (eps_in^2 + |v| eps_f^2) over the group's |v| bins, Equation 4).  Without H~
(gamma_in = 0), a1 = 0 and WAF is AHP's finalizer (``group-mean``).
"""
from __future__ import annotations

import numpy as np

from dphist import Finalizer


def waf_weights(sizes, eps_in: float, eps_f: float) -> np.ndarray:
    """a1 of SORTaki Equation 3 for groups of the given sizes (0 when eps_in = 0)."""
    sizes = np.asarray(sizes, dtype=float)
    eps_in2 = float(eps_in) ** 2
    return eps_in2 / (eps_in2 + sizes * float(eps_f) ** 2)


def waf_weights_from_variances(noise_sums, eps_f: float) -> np.ndarray:
    """a1 of Equation 3 when H~'s bins have their own variances sigma_i^2 (``noise_sums``: their sum
    S over each group): var(mean H~) = S / m^2 and var(fresh mean) = 2 / (m^2 eps_f^2), so
    a1 = (2 / eps_f^2) / (S + 2 / eps_f^2).  With sigma_i^2 = 2 / eps_in^2 it is Equation 3's weight."""
    fresh = 2.0 / float(eps_f) ** 2
    return fresh / (np.asarray(noise_sums, dtype=float) + fresh)


class WeightedAverageFinalizer(Finalizer):
    """WAF (SORTaki Algorithm 4): combine H~'s group mean with a fresh noisy group mean (Eq. 3 weights).

    The fresh means come from one ``laplace_partition`` call with the whole
    share: the groups are disjoint, so the vector of group sums has sensitivity 1.
    Combining them with H~ is post-processing (free).  When the initializer thresholded H~
    (``ctx.noise_model.thresholded``, e.g. ``ahp.threshold``), the weights come from the model's
    per-bin variances instead of Laplace(1/eps_in) (:func:`waf_weights_from_variances`).
    """

    name = "sortaki.waf"
    citation = "Doudalis & Mehrotra, SORTaki, Section V-A, Equation 3 and Algorithm 4 (WAF)"

    def finalize(self, bins, ctx):
        fresh_means = ctx.data.laplace_partition(bins, ctx.budget) / bins.sizes
        if ctx.noisy is None:
            return bins.expand(fresh_means)
        model = ctx.noise_model
        if model is not None and model.thresholded:
            # H~'s zeroed bins do not carry Laplace(1/eps_in) noise (dphist.noise_model): per-bin variances
            a1 = waf_weights_from_variances(bins.sums(model.variances(ctx.noisy)), ctx.budget)
        else:
            a1 = waf_weights(bins.sizes, ctx.eps_in, ctx.budget)   # Equation 3 as the paper writes it
        return bins.expand(a1 * bins.means(ctx.noisy) + (1.0 - a1) * fresh_means)
