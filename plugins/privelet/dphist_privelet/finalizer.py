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

from .haar import (haar_matrix, haar_row_norms, inverse_weighted_haar, inverse_weighted_haar_grid, levels,
                   weighted_haar, weighted_haar_grid)

CITATION = ("Xiao, Wang, Gehrke, Differential Privacy via Wavelet Transforms, ICDE 2010, Section IV "
            "(Privelet with the Haar wavelet: weights, generalized sensitivity 1 + log2 N, exact inverse)")


class WeightedHaarMeasurement(VettedMechanism):
    """The weighted Haar coefficients of the group sums plus Laplace((1 + m) / epsilon) each.

    ``levels`` (``m``) is fixed when the mechanism is made, so the ledger's sensitivity is known
    before the charge; :meth:`check` refuses a partition whose padded size is not ``2^m``.  Immutable:
    its run on the kernel's probe histogram (all zeros) without groups is fixed by the domain size,
    epsilon and the kind of noise source (``2^m`` finite floats), so it is declared ``probe_once`` and
    the finalizer runs one shared object per ``m`` (:func:`weighted_haar_measurement`).
    """

    __slots__ = ("levels",)

    name = "privelet.weighted-haar"
    #: the counts are read, never written, in any layout (a gather, ``reduceat``, the transform's pairs): above
    #: 65,536 bins the kernel's probe is a broadcast zero, not an array of the domain's size (memory)
    probe_any_layout = True
    proof = ("epsilon-DP: Xiao, Wang, Gehrke ICDE 2010, Section IV (HWT generalized sensitivity 1 + log2 N). "
             "The released values are the weighted coefficients W(c)c: the total and, for every node of "
             "the complete binary tree over the N = 2^m padded groups, sum(left) - sum(right). Adding or "
             "removing one record changes the total and exactly one coefficient per level by 1, so their "
             "L1 sensitivity is 1 + m; Laplace((1 + m)/epsilon) on each is the Laplace mechanism "
             "(dphist_privelet.haar docstring; notebooks/privelet.ipynb Section 1).")

    #: the probe's output (``2^m`` floats) depends on the domain size, epsilon and the noise kind only: the
    #: kernel probes a shared object once per those and checks every output on the data against it
    probe_once = True

    def __init__(self, levels: int = 0):
        if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 0:
            raise InvalidParameter(f"privelet.weighted-haar: levels must be an integer >= 0, got {levels!r}")
        object.__setattr__(self, "levels", int(levels))

    def __setattr__(self, name, value):
        raise AttributeError(f"{self.name} is immutable (make another for other levels)")

    @property
    def sensitivity(self) -> float:
        return float(1 + self.levels)

    def check(self, n: int, order=None, bounds=None) -> dict:
        """``order`` and ``bounds`` of the groups (``None``: the bins in domain order, one group each); no
        arguments (``{}``) for the bins in domain order."""
        if order is not None or bounds is not None:
            order = np.arange(n) if order is None else np.array(order, dtype=np.int64, copy=True)
            bounds = np.arange(n + 1) if bounds is None else np.array(bounds, dtype=np.int64, copy=True)
            Partition(order, bounds)  # validates: a permutation, bounds increasing from 0 to n
        k = n if bounds is None else bounds.size - 1
        if levels(k) != self.levels:
            raise InvalidParameter(f"privelet.weighted-haar: {k} groups pad to 2^{levels(k)}, "
                                   f"the mechanism was made for 2^{self.levels}")
        return {} if order is None and bounds is None else dict(order=order, bounds=bounds)

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


@functools.lru_cache(maxsize=64)
def weighted_haar_measurement(m: int) -> WeightedHaarMeasurement:
    """The finalizer's shared :class:`WeightedHaarMeasurement` of ``m`` levels (immutable): the kernel keeps
    its probe per domain size, epsilon and noise kind (``probe_once``), so a run of the same size and share
    is not probed again."""
    return WeightedHaarMeasurement(m)


def _haar_inverse_gram(n: int, weight: float, U):
    """``(w A^T A)^{-1} U`` for the weighted Haar matrix ``A``: its rows are orthogonal, ``A A^T = D =
    diag(N, |v|...)``, so ``(A^T A)^{-1} = A^T D^-2 A`` (O(N log N) per column)."""
    A = haar_matrix(n)
    d = haar_row_norms(n)
    U = np.asarray(U, dtype=float)
    scale = (1.0 / (d * d)).reshape((-1,) + (1,) * (U.ndim - 1))
    return np.asarray(A.T @ (scale * (A @ U))) / weight


def grid_strategy(shape, epsilon: float):
    """Privelet-2D's statement: the tensor product ``A = H_1 (x) H_2 (x) ...`` of the axes' weighted
    Haar matrices over the padded grid (row-major), integer answers of sensitivity ``prod(1 + m_a)``,
    and its exact inverse (square: the release is its least squares).  The strategy's columns are the
    real cells in row-major order first, then the padding cells (true value 0), as
    :class:`dphist.stated_error.LinearStrategy` orders them.  ``(A^T A)^{-1}`` is the tensor product
    of the axes' ``(H_a^T H_a)^{-1}`` (each from :func:`_haar_inverse_gram`), applied axis by axis."""
    from dphist.stated_error import LinearStrategy, Measurement
    shape = tuple(int(s) for s in shape)
    ms = tuple(levels(s) for s in shape)
    padded = tuple(1 << m for m in ms)
    sens = float(np.prod([1 + m for m in ms]))
    real = np.ravel_multi_index(np.indices(shape).reshape(len(shape), -1), padded)
    pad = np.setdiff1d(np.arange(int(np.prod(padded))), real)
    columns = np.concatenate([real, pad])          # strategy column c is padded cell columns[c]
    weight = (float(epsilon) / sens) ** 2
    matrix = functools.partial(_grid_matrix, padded, columns)
    inverse_gram = functools.partial(_grid_inverse_gram, padded, columns, weight)
    return LinearStrategy([Measurement(matrix, sens, float(epsilon), integral=True, support=int(sens))],
                          columns.size, reconstruction="exact inverse of the tensor-product Haar transform",
                          inverse_gram=inverse_gram)


def _grid_matrix(padded, columns):
    """The tensor product of the axes' weighted Haar matrices (sparse), its columns in ``columns`` order."""
    import scipy.sparse as sp
    A = haar_matrix(padded[0])
    for n in padded[1:]:
        A = sp.kron(A, haar_matrix(n), format="csr")
    return A[:, columns]


@functools.lru_cache(maxsize=8)
def _axis_inverse_gram(n: int) -> np.ndarray:
    """``(H^T H)^{-1}`` of one axis' weighted Haar matrix (dense ``n x n``, computed once per size)."""
    return _haar_inverse_gram(n, 1.0, np.eye(n))


def _grid_inverse_gram(padded, columns, weight: float, U):
    """``(w A^T A)^{-1} U`` for the tensor product ``A``: the axes' inverses applied axis by axis."""
    U = np.asarray(U, dtype=float)
    q = U.shape[1:]
    grid = np.zeros((columns.size,) + q)
    grid[columns] = U
    grid = grid.reshape(tuple(padded) + q)
    for axis, n in enumerate(padded):
        grid = np.moveaxis(np.tensordot(_axis_inverse_gram(n), grid, axes=([1], [axis])), 0, axis)
    return grid.reshape((columns.size,) + q)[columns] / weight


class GridHaarMeasurement(VettedMechanism):
    """The tensor-product weighted Haar coefficients of a grid's cells plus Laplace(prod(1 + m_a) / epsilon).

    The grid (``shape``, the histogram's public shape; cells flattened in row-major order) is padded
    with empty cells to ``2^{m_a}`` along every axis.  Fixed when made: the shape, hence the levels and
    the ledger's sensitivity, before the charge.
    """

    name = "privelet.weighted-haar-grid"
    proof = ("epsilon-DP: Xiao, Wang, Gehrke ICDE 2010, Section V (multi-dimensional Privelet: the generalized "
             "sensitivity of the tensor-product transform is the product of the axes' 1 + log2 N_a). A record "
             "in one cell moves, along each axis, the total and one difference per level by 1; the tensor "
             "product's coefficients moved are the products of those, each by 1: prod(1 + m_a) of them, "
             "so the L1 sensitivity of the weighted coefficients is prod(1 + m_a) and "
             "Laplace(prod(1 + m_a)/epsilon) on each is the Laplace mechanism (notebooks/privelet.ipynb).")

    def __init__(self, shape=(1,)):
        shape = tuple(shape)
        if not shape or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1 for s in shape):
            raise InvalidParameter(f"privelet.weighted-haar-grid: shape must be positive integers, got {shape!r}")
        self.shape = tuple(int(s) for s in shape)
        self.levels = tuple(levels(s) for s in self.shape)

    @property
    def sensitivity(self) -> float:
        return float(np.prod([1 + m for m in self.levels]))

    def check(self, n: int) -> dict:
        if int(np.prod(self.shape)) != int(n):
            raise InvalidParameter(f"privelet.weighted-haar-grid: the grid {self.shape} does not have {n} cells")
        return {}

    def answers(self, n: int) -> int:
        return 1 << sum(self.levels)

    def run(self, counts, epsilon, noise):
        padded = np.zeros(tuple(1 << m for m in self.levels), dtype=np.int64)
        padded[tuple(slice(0, s) for s in self.shape)] = np.asarray(counts, dtype=np.int64).reshape(self.shape)
        s = self.sensitivity
        return noise.laplace_mechanism(weighted_haar_grid(padded).ravel(), s, epsilon, integral=True, support=s)


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
    vetted_mechanisms = ("privelet.weighted-haar", "privelet.weighted-haar-grid")
    dims = (1, 2)   # 1-D: the groups in their order; a grid: its cells (the tensor-product transform)
    spends = True

    def stated_error(self, bins: Partition, ctx):
        """The weighted Haar matrix over the ``2^m`` padded groups (integer answers, sensitivity
        ``1 + m``) and its exact inverse: a square strategy, so the release is its least squares.
        On a grid (the cells in row-major order, as :meth:`finalize` takes the tensor-product route):
        :func:`grid_strategy`."""
        from dphist.stated_error import LinearStrategy, Measurement
        shape = tuple(getattr(ctx, "shape", None) or (bins.n_bins,))
        if len(shape) > 1 and bins.n_groups == bins.n_bins and bins.is_identity_order():
            return grid_strategy(shape, ctx.eps_f)
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
        shape = tuple(getattr(ctx, "shape", None) or (bins.n_bins,))
        if len(shape) > 1 and bins.n_groups == bins.n_bins and bins.is_identity_order():
            return self._finalize_grid(bins, ctx, shape)     # the cells of a grid: the tensor-product transform
        k = bins.n_groups
        mechanism = weighted_haar_measurement(levels(k))
        plain = k == bins.n_bins and bins.is_identity_order()   # bins in domain order, one group each (the preset)
        groups = {} if plain else dict(order=bins.order, bounds=bins.bounds)
        noisy = ctx.data.custom(mechanism, ctx.budget, **groups)
        estimate = inverse_weighted_haar(noisy)[:k]   # post-processing of the noisy coefficients
        return estimate if plain else bins.spread(estimate)

    def _finalize_grid(self, bins: Partition, ctx, shape) -> np.ndarray:
        """Multi-dimensional Privelet over the cells of a grid (Xiao et al. Section V): the tensor-product
        transform, one vetted measurement, the exact inverse cut back to the grid (post-processing).
        Groups or a sorted order on a grid take the 1-D route: the groups in their current order."""
        mechanism = GridHaarMeasurement(shape)
        noisy = ctx.data.custom(mechanism, ctx.budget)
        grid = inverse_weighted_haar_grid(noisy.reshape(tuple(1 << m for m in mechanism.levels)))
        return grid[tuple(slice(0, s) for s in shape)].ravel()
