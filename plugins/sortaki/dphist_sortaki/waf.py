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
        a1 = self._mean_weights(bins, ctx, ctx.budget)
        return bins.expand(a1 * bins.means(ctx.noisy) + (1.0 - a1) * fresh_means)

    @staticmethod
    def _mean_weights(bins, ctx, eps_f: float) -> np.ndarray:
        """a1 per group (public: the sizes, the shares, H~'s noise model)."""
        model = ctx.noise_model
        if model is not None and model.thresholded:
            # H~'s zeroed bins do not carry Laplace(1/eps_in) noise (dphist.noise_model): per-bin variances
            return waf_weights_from_variances(bins.sums(model.variances(ctx.noisy)), eps_f)
        return waf_weights(bins.sizes, ctx.eps_in, eps_f)   # Equation 3 as the paper writes it

    def stated_error(self, bins, ctx):
        """The fresh noise, exactly, given the released groups and H~; H~'s share is named unknown.

        A group's total estimate is ``a1 sum(H~_v) + a2 sum~_v`` with ``a2 = 1 - a1``: its fresh part
        ``a2 Z_v`` (Laplace of sensitivity 1 and the whole share, one per group) is independent of
        everything published before it, so its variance ``a2^2 sigma^2`` is exact given the groups and
        H~.  H~'s part is not stated: the groups (and their order) were chosen from H~ by the sorter or
        partitioner, so given them H~'s noise no longer has its unconditional law; it goes with the
        bias of averaging within a group into the unknown part.  Without H~, the group-mean statement."""
        from dphist.stated_error import GroupNoiseStatedError, group_mean_strategy
        if ctx.noisy is None:
            return group_mean_strategy(bins.n_groups, ctx.eps_f)
        a2 = 1.0 - self._mean_weights(bins, ctx, ctx.eps_f)
        out = GroupNoiseStatedError(bins, a2, ctx.noise_law, 1.0, ctx.eps_f, integral=True, support=1)
        out.kind, out.given = "noise-only", "the released partition and H~"
        out.bias = ("unknown: H~'s share of each group's mean (weight a1 = 1 - a2; H~'s noise is not independent "
                    "of groups chosen from it) and the averaging within groups, which depends on the private "
                    "spread of the true counts")
        return out
