"""``hdmm.kronecker``: a Kronecker strategy optimised for a grid workload, measured once through the kernel.

The strategy (``dphist_hdmm.kron``) is public: it depends on the workload and the grid's shape only.
The finalizer hands the kernel :class:`dphist.kernel.KroneckerQueries` (one sparse p-Identity
factor per axis): the kernel computes the sensitivity (the product of the factors' largest column
L1 norms: 1), charges the whole share, applies the factors axis by axis and adds Laplace noise to
every answer.  The least-squares reconstruction ``(x)_k A_k^+`` is post-processing.  The release
states its error exactly (:class:`KroneckerStatedError`).
"""
from __future__ import annotations

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition
from dphist.params import Interval, Satisfies
from dphist.stated_error import StatedError

from .finalizer import CITATION
from .kron import (GRID_FORMS, GRID_NAMES, KroneckerStrategy, check_grid_spec, is_grid_spec, kronecker_svd_bound,
                   optimize_kron)
from .strategy import DEFAULT_ITERATIONS

KRON_CITATION = CITATION + "; Kronecker strategies (OPT_x): Section 6"


class KroneckerStatedError(StatedError):
    """The exact error of a Kronecker least-squares release: covariance ``s^2 (x)_k C_k``.

    ``s^2``: the run's noise law at the kernel-computed sensitivity, the share and the kernel's route
    (real-valued answers).  A query ``w`` has variance ``s^2 w^T ((x)_k C_k) w`` (``C_k`` applied axis
    by axis), a cell ``s^2 prod_k (C_k)_jj``, a rectangle ``s^2 prod_k u_k^T C_k u_k``
    (:meth:`rectangle_variances`)."""

    kind = "exact"

    def __init__(self, strategy: KroneckerStrategy, law, sensitivity: float, epsilon: float, integral: bool,
                 support: int, partition: Partition):
        super().__init__(partition, strategy.n)
        self.strategy = strategy
        self.law_name = law.name
        self.reconstruction = "least squares on the Kronecker product of optimised p-Identity strategies"
        self.noise_variance = float(law.variance(sensitivity, epsilon, integral, support))

    def group_variance(self, U):
        U = np.atleast_2d(np.asarray(U, dtype=float))
        return self.noise_variance * np.einsum("qj,jq->q", U, self.strategy.inverse_gram(U.T))

    def group_diagonal(self):
        return self.strategy.bin_variances(self.noise_variance)

    def rectangle_variances(self, rectangles) -> np.ndarray:
        """Variances of a :class:`dphist.workloads.RectangleWorkload`'s rectangles, O(m p)."""
        return self.strategy.rectangle_variances(rectangles, self.noise_variance)


class KroneckerFinalizer(Finalizer):
    """A Kronecker product of p-Identity strategies optimised for a grid workload, measured once.

    Parameters
    ----------
    workload : a grid workload: ``"all-rectangles"`` (default), ``"prefix"``, ``"identity"``,
        ``"marginals"``, ``"dpbench-random-<m>"`` (its Kronecker surrogate), a tuple of 1-D
        workloads (one per axis), a list of such tuples, a :class:`~dphist_hdmm.kron.KroneckerWorkload`,
        or a product-form :class:`dphist.workloads.RectangleWorkload`.
    p : rows of every axis's ``Theta`` (None: the 1-D default per axis length).
    seed, iterations : the optimiser's start and L-BFGS-B steps (public; part of the cache key).

    Works on the cells of a grid (singleton bins in row-major order); groups are refused.
    """

    name = "hdmm.kronecker"
    citation = KRON_CITATION
    spends = True
    requires_domain_order = True
    dims = (2,)
    param_constraints = {
        "workload": Satisfies(is_grid_spec, GRID_FORMS),
        "p": (None, Interval(int, 0, None)),
        "seed": Interval(int, 0, None),
        "iterations": Interval(int, 1, None),
    }

    def __init__(self, workload="all-rectangles", p=None, seed: int = 0, iterations: int = DEFAULT_ITERATIONS):
        check_grid_spec(workload, self.name)    # unknown names, malformed forms: refused here
        self.workload = workload
        self.p = p
        self.seed = seed
        self.iterations = iterations

    def check_input(self, n: int) -> None:
        """A workload with its own grid (rectangles, a KroneckerWorkload) must have ``n`` cells."""
        shape = getattr(self.workload, "shape", None)
        if shape is not None and int(np.prod(shape)) != int(n):
            raise InvalidParameter(f"{self.name}: the workload is over a grid of shape {tuple(shape)} "
                                   f"({int(np.prod(shape))} cells); the histogram has {n} cells")

    def strategy(self, shape) -> KroneckerStrategy:
        """The optimised strategy over a grid of ``shape`` (public: no data)."""
        shape = tuple(int(s) for s in shape)
        if len(shape) < 2:
            raise InvalidParameter(f"{self.name} measures the cells of a grid; got a 1-D histogram of {shape[0]} "
                                   "bins (use the 1-D presets OPT, OPT-prefix, OPT-ranges)")
        return optimize_kron(self.workload, shape, p=self.p, seed=int(self.seed), iterations=int(self.iterations))

    def _checked_bins(self, bins: Partition) -> None:
        if bins.n_groups != bins.n_bins or not bins.is_identity_order():
            raise InvalidParameter(f"{self.name} measures every cell of the grid in row-major order; got "
                                   f"{bins.n_groups} groups of {bins.n_bins} cells")

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter(f"{self.name} spends budget: give the finalizer a share gamma_f > 0")
        self._checked_bins(bins)
        strategy = self.strategy(ctx.shape)                            # public: no data; errors before the charge
        answers = ctx.data.laplace_linear(strategy.queries(), ctx.budget)
        return strategy.reconstruct(answers)                           # post-processing

    def stated_error(self, bins: Partition, ctx):
        """The exact statement (:class:`KroneckerStatedError`) with the kernel's own sensitivity, support
        and route (``check_queries`` on what ``finalize`` measures)."""
        from dphist.kernel.queries import check_queries
        self._checked_bins(bins)
        strategy = self.strategy(ctx.shape)
        checked = check_queries(strategy.queries(), ctx.n)
        integral = checked.integral and checked.sensitivity == round(checked.sensitivity)
        return KroneckerStatedError(strategy, ctx.noise_law, checked.sensitivity, ctx.eps_f, integral,
                                    checked.support, bins)

    def describe_lines(self) -> list[str]:
        """The SVD lower bound of the workload on a few square grids (``dphist describe``)."""
        if not isinstance(self.workload, str) or self.workload not in GRID_NAMES:
            return ["SVD lower bound: dphist_hdmm.kronecker_svd_bound(workload, shape) (depends on the grid)"]
        lines = [f"SVD lower bound on the expected total squared error of any linear strategy on "
                 f"{self.workload!r} over a grid, Laplace noise (x 2/eps^2; per-query RMSE at eps = 1):"]
        for n in (32, 64, 128, 256):
            b = kronecker_svd_bound(self.workload, (n, n))
            m = _queries(self.workload, n)
            lines.append(f"  {n} x {n}: {b:.6g} (RMSE per query >= {np.sqrt(2.0 * b / m):.4g})")
        return lines


def _queries(name: str, n: int) -> int:
    """The number of queries of a named workload on an ``n x n`` grid."""
    if name == "marginals":
        return 2 * n
    return {"prefix": n, "all-rectangles": n * (n + 1) // 2, "identity": n}[name] ** 2
