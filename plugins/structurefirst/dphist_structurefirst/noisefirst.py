"""NoiseFirst (Xu, Zhang, Xiao, Yang, Yu, Winslett, "Differentially private histogram publication",
ICDE 2012 / VLDB Journal 22(6) 2013, Section 4): V-optimal grouping of the *noisy* histogram.

    H~ = x + Lap(1/eps) per bin (the core's ``laplace`` initializer, the whole budget);
    k* = argmin_k  SSE*(H~, k) - 2 (n - 2k) / eps^2          (the noise-corrected error of k groups);
    groups = the V-optimal k*-group histogram of H~;
    per group g of m bins: publish the group mean of H~, unless
        SSE(H~ on g) - 2 (m - 2) / eps^2  >  2 m / eps^2      (conditional merging: keep H~ there).

Why these formulas (derived in notebooks/structurefirst.ipynb, checked by simulation): with noise of
variance s^2 = 2/eps^2 per bin, a group of m bins has E[SSE(H~)] = SSE(x) + (m - 1) s^2 and its
mean's squared error summed over the group is SSE(x) + s^2; so SSE(H~) - (m - 2) s^2 estimates the
merged error without bias and the sum over k groups is SSE(H~) - (n - 2k) s^2, the reference code's
``findOptK`` (DPBench ``thirdparty/xiaokui/DP.cpp``; read, not copied).  Not merging costs m s^2.

Speed.  min over k of SSE*(k) + 2 k s^2 equals the least total of SSE + 2 s^2 per group over all
segmentations (minimise over k, then over the segmentations with k groups), so k* and its
V-optimal groups come from ONE penalised DP, ``dphist.segmentation.optimal`` with
``SSEPenalty(H~, 4/eps^2 per group)``, O(n^2), instead of the reference's O(n^3) table of every k.
Ties between k (probability 0 on continuous noise) may resolve differently from the reference's
"smallest k".  A fixed ``k`` uses ``dphist.segmentation.k_groups`` (O(k n^2): the SSE of unsorted
values is not Monge).

Privacy: everything after H~ is post-processing (free).  The noise variance s^2 is that of the
research-mode float Laplace, 2/eps_in^2; release mode's discrete Laplace has variance
2 e^-eps / (1 - e^-eps)^2, within 1% of it for eps_in <= 0.25 (the formulas are estimates either way).
"""
from __future__ import annotations

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition, Partitioner
from dphist.intervals import centred_prefix_sums, interval_sse
from dphist.params import Interval
from dphist.segmentation import SSEPenalty, k_groups, optimal


CITATION = ("Xu, Zhang, Xiao, Yang, Yu, Winslett, Differentially private histogram publication, "
            "ICDE 2012 / VLDB Journal 22(6) 2013, NoiseFirst (Section 4)")


def noise_variance(ctx, owner: str) -> float:
    """Variance 2/eps_in^2 of the initializer's Laplace noise on each bin of H~."""
    if ctx.noisy is None or ctx.eps_in <= 0:
        raise InvalidParameter(f"{owner} needs H~: give the pipeline the 'laplace' initializer with gamma_in > 0")
    return 2.0 / float(ctx.eps_in) ** 2


def noisefirst_bounds(noisy, variance: float, k: int | None = None) -> np.ndarray:
    """Group bounds (positions 0 .. n) of NoiseFirst on the noisy values: the V-optimal histogram
    with the paper's k* (``k=None``) or with exactly ``k`` groups."""
    h = np.asarray(noisy, dtype=float)
    if k is None:
        return optimal(SSEPenalty(h, np.full(h.size + 1, 2.0 * variance))).bounds
    return k_groups(SSEPenalty(h, np.zeros(h.size + 1)), [min(int(k), h.size)], monge=False)[min(int(k), h.size)].bounds


def estimated_error(noisy, variance: float, ks) -> np.ndarray:
    """The paper's noise-corrected error SSE*(H~, k) - (n - 2k) s^2 for each k in ``ks`` (analysis helper)."""
    h = np.asarray(noisy, dtype=float)
    ks = [int(k) for k in ks]
    best = k_groups(SSEPenalty(h, np.zeros(h.size + 1)), ks, monge=False)
    return np.array([best[k].cost - (h.size - 2 * k) * variance for k in ks])


class NoiseFirstPartitioner(Partitioner):
    """``structurefirst.noisefirst``: the V-optimal grouping of H~ (free: post-processing).

    Parameters
    ----------
    k : number of groups; ``None`` (default) = the paper's noise-corrected choice
        k* = argmin SSE*(H~, k) - 2(n - 2k)/eps_in^2 (module docstring).
    """

    name = "structurefirst.noisefirst"
    citation = CITATION
    requires_domain_order = True
    param_constraints = {"k": [None, Interval(int, 1, None)]}

    def __init__(self, k: int | None = None):
        self.k = k

    def partition(self, bins: Partition, ctx) -> Partition:
        variance = noise_variance(ctx, self.name)
        if not bins.is_identity_order() or bins.n_groups != bins.n_bins:
            raise InvalidParameter(f"{self.name} groups the bins in domain order: use it on singleton bins, no sorter")
        return Partition(np.arange(bins.n_bins), noisefirst_bounds(ctx.noisy, variance, self.k))


def conditional_means(noisy, bounds, variance: float, conditional: bool = True) -> np.ndarray:
    """Each group's mean of H~, except groups whose estimated merged error
    SSE(H~) - (m - 2) s^2 exceeds the unmerged m s^2 (kept as H~) when ``conditional``."""
    h = np.asarray(noisy, dtype=float)
    b = np.asarray(bounds, dtype=np.int64)
    sizes = np.diff(b)
    means = np.add.reduceat(h, b[:-1]) / sizes
    out = np.repeat(means, sizes)
    if conditional:
        p, p2 = centred_prefix_sums(h)
        sse = interval_sse(b[:-1], b[1:], p, p2)
        keep = (sse - (sizes - 2) * variance > sizes * variance) & (sizes > 1)
        mask = np.repeat(keep, sizes)
        out[mask] = h[mask]
    return out


class ConditionalMeanFinalizer(Finalizer):
    """``structurefirst.conditional-mean``: NoiseFirst's output from H~ and the groups (free).

    Parameters
    ----------
    conditional : True (default, the paper's and the reference code's rule) keeps H~ on a group whose
        estimated merged error exceeds the unmerged one; False publishes every group's mean of H~.
    """

    name = "structurefirst.conditional-mean"
    citation = CITATION
    spends = False
    requires_domain_order = True
    param_constraints = {"conditional": bool}

    def __init__(self, conditional: bool = True):
        self.conditional = bool(conditional)

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        variance = noise_variance(ctx, self.name)
        if not bins.is_identity_order():
            raise InvalidParameter(f"{self.name} needs the groups in domain order (no sorter)")
        return conditional_means(ctx.noisy, bins.bounds, variance, self.conditional)

    def stated_error(self, bins: Partition, ctx):
        """No statement, and why: every part of the estimate is H~, from which the groups were chosen."""
        from dphist.stated_error import Unstated
        return Unstated("NoiseFirst publishes means of H~ over groups chosen from H~ itself (and keeps H~ where "
                        "the rule says so): no noise in it is independent of the published groups, so no part "
                        "of its error can be stated exactly given them")
