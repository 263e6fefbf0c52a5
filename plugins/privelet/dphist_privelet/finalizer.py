"""``privelet.haar``: Privelet's measurement in the kernel and its exact inverse (post-processing).

Which kernel primitive.  ``laplace_linear`` computes a sensitivity itself, but the weighted Haar
matrix is dense in structure (``N log N`` non-zeros): as a ``scipy.sparse`` matrix it costs about
22 million entries at ``N = 2^20``, and an implicit operator is probed only up to 4,096 bins.  So
the coefficients are measured by a :class:`~dphist.VettedMechanism` that computes them in O(N) and
adds noise through ``noise.laplace_mechanism(y, sensitivity=1 + m, epsilon, integral=True,
support=1 + m)``: release mode draws exact discrete Laplace noise (the coefficients are integers),
and the conformance kit replays the mechanism on neighbouring histograms and checks the measured
noise against the move of each coefficient (``dphist.testing.check_vetted_mechanism``).  The privacy
auditor runs the whole preset.

Units.  The finalizer measures the *groups* of its input partition in their current order (a
bin each for the preset ``Privelet``), pads them with empty groups to ``N = 2^m`` (DPBench's
choice), and spreads each group's estimate evenly over its bins.
"""
from __future__ import annotations

import functools

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition, VettedMechanism

from .haar import haar_matrix, haar_row_norms, inverse_weighted_haar, levels, weighted_haar

CITATION = ("Xiao, Wang, Gehrke, Differential Privacy via Wavelet Transforms, ICDE 2010, Section IV "
            "(Privelet with the Haar wavelet: weights, generalized sensitivity 1 + log2 N, exact inverse)")


class WeightedHaarMeasurement(VettedMechanism):
    """The weighted Haar coefficients of the group sums plus Laplace((1 + m) / epsilon) each.

    ``levels`` (``m``) is fixed when the mechanism is made, so the ledger's sensitivity is known
    before the charge; :meth:`check` refuses a partition whose padded size is not ``2^m``.
    """

    name = "privelet.weighted-haar"
    proof = ("epsilon-DP: Xiao, Wang, Gehrke ICDE 2010, Section IV (HWT generalized sensitivity 1 + log2 N). "
             "The released values are the weighted coefficients W(c)c: the total and, for every node of "
             "the complete binary tree over the N = 2^m padded groups, sum(left) - sum(right). Adding or "
             "removing one record changes the total and exactly one coefficient per level by 1, so their "
             "L1 sensitivity is 1 + m; Laplace((1 + m)/epsilon) on each is the Laplace mechanism "
             "(dphist_privelet.haar docstring; notebooks/privelet.ipynb Section 1).")

    def __init__(self, levels: int = 0):
        if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 0:
            raise InvalidParameter(f"privelet.weighted-haar: levels must be an integer >= 0, got {levels!r}")
        self.levels = int(levels)

    @property
    def sensitivity(self) -> float:
        return float(1 + self.levels)

    def check(self, n: int, order=None, bounds=None) -> dict:
        """``order`` and ``bounds`` of the groups (``None``: the bins in domain order, one group each)."""
        if order is not None or bounds is not None:
            order = np.arange(n) if order is None else np.array(order, dtype=np.int64, copy=True)
            bounds = np.arange(n + 1) if bounds is None else np.array(bounds, dtype=np.int64, copy=True)
            Partition(order, bounds)  # validates: a permutation, bounds increasing from 0 to n
        k = n if bounds is None else bounds.size - 1
        if levels(k) != self.levels:
            raise InvalidParameter(f"privelet.weighted-haar: {k} groups pad to 2^{levels(k)}, "
                                   f"the mechanism was made for 2^{self.levels}")
        return dict(order=order, bounds=bounds)

    def answers(self, n: int, order=None, bounds=None) -> int:
        return 1 << self.levels

    def run(self, counts, epsilon, noise, order=None, bounds=None):
        x = np.asarray(counts, dtype=np.int64)
        if order is not None:
            x = x[order]
        sums = x if bounds is None or bounds.size == x.size + 1 else np.add.reduceat(x, bounds[:-1])
        padded = sums
        if sums.size != 1 << self.levels:   # empty groups up to 2^m (weighted_haar does not write its input)
            padded = np.zeros(1 << self.levels, dtype=np.int64)
            padded[:sums.size] = sums
        m1 = 1 + self.levels
        return noise.laplace_mechanism(weighted_haar(padded), m1, epsilon, integral=True, support=m1)


def _haar_inverse_gram(n: int, weight: float, U):
    """``(w A^T A)^{-1} U`` for the weighted Haar matrix ``A``: its rows are orthogonal, ``A A^T = D =
    diag(N, |v|...)``, so ``(A^T A)^{-1} = A^T D^-2 A`` (O(N log N) per column)."""
    A = haar_matrix(n)
    d = haar_row_norms(n)
    U = np.asarray(U, dtype=float)
    scale = (1.0 / (d * d)).reshape((-1,) + (1,) * (U.ndim - 1))
    return np.asarray(A.T @ (scale * (A @ U))) / weight


class PriveletFinalizer(Finalizer):
    """``privelet.haar``: Privelet over the groups in their current order, its whole share in one call.

    No parameters: the paper's weights are fixed by the transform.  The estimate is the exact
    inverse transform of the noisy weighted coefficients (post-processing, free), truncated to the
    real groups (the padding groups' estimates are dropped, as in DPBench's code), each spread
    evenly over its bins.  Not rounded, not clipped: the estimate is unbiased, as in the paper.

    DPBench's code answers domains of at most 16 bins with the Laplace mechanism instead; the paper
    has no such rule and neither do we (so small histograms, the auditor's, run the wavelet too).
    """

    name = "privelet.haar"
    citation = CITATION
    #: opt-in to the privacy proofs of vetted mechanisms (the kernel cannot check them)
    vetted_mechanisms = ("privelet.weighted-haar",)
    spends = True

    def stated_error(self, bins: Partition, ctx):
        """The weighted Haar matrix over the ``2^m`` padded groups (integer answers, sensitivity
        ``1 + m``) and its exact inverse: a square strategy, so the release is its least squares."""
        from dphist.stated_error import LinearStrategy, Measurement
        k = bins.n_groups
        m = levels(k)
        n = 1 << m
        weight = (ctx.eps_f / (1 + m)) ** 2
        haar = functools.partial(haar_matrix, n)
        inverse_gram = functools.partial(_haar_inverse_gram, n, weight)
        return LinearStrategy([Measurement(haar, float(1 + m), ctx.eps_f, integral=True, support=1 + m)], n,
                              reconstruction="exact inverse Haar transform", inverse_gram=inverse_gram)

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter("privelet.haar spends budget: give the finalizer a share gamma_f > 0")
        k = bins.n_groups
        mechanism = WeightedHaarMeasurement(levels(k))
        plain = k == bins.n_bins and bins.is_identity_order()   # bins in domain order, one group each (the preset)
        groups = {} if plain else dict(order=bins.order, bounds=bins.bounds)
        noisy = ctx.data.custom(mechanism, ctx.budget, **groups)
        estimate = inverse_weighted_haar(noisy)[:k]   # post-processing of the noisy coefficients
        return estimate if plain else bins.spread(estimate)
