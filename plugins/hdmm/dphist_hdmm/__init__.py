"""Workload-optimised strategies for dphist: HDMM's p-Identity parameterisation (OPT_0), and Kronecker
products of per-axis p-Identity strategies on grids (OPT_x).

McKenna, Miklau, Hay, Machanavajjhala, "Optimizing error of high-dimensional statistical queries under
differential privacy", PVLDB 11(10) 2018, written from the paper (not from HDMM's code).

* :func:`optimize` -> :class:`Strategy` (``strategy`` matrix, ``reconstruct``, ``query_variances``,
  ``bin_variances``, ``covariance``), cached in memory and on disk;
* :func:`svd_bound`, :func:`laplace_error_bound`: the lower bound on any linear strategy's error;
  :func:`l2_dual_bound`: the optimum of the L2 problem from below (tighter; dense);
* finalizer ``hdmm.p-identity``; presets ``OPT``, ``OPT-prefix``, ``OPT-ranges``;
* on grids: :func:`optimize_kron` -> :class:`KroneckerStrategy`, :func:`kronecker_svd_bound`, finalizer
  ``hdmm.kronecker``, presets ``OPT-2D``, ``OPT-2D-prefix``, ``OPT-2D-ranges``.
"""
from .bounds import l2_dual_bound, laplace_error_bound, svd_bound
from .finalizer import OptimizedFinalizer, group_workload
from .gram import Gram
from .kron import (KroneckerStrategy, KroneckerWorkload, kronecker_surrogate, kronecker_svd_bound, optimize_kron,
                   resolve_grid)
from .kron_finalizer import KroneckerFinalizer, KroneckerStatedError
from .objective import objective, objective_and_gradient
from .presets import opt, opt_2d, opt_2d_prefix, opt_2d_ranges, opt_prefix, opt_ranges
from .strategy import Strategy, cache_dir, clear_memory_cache, default_p, fingerprint, optimize

__all__ = ["Gram", "KroneckerFinalizer", "KroneckerStatedError", "KroneckerStrategy", "KroneckerWorkload",
           "OptimizedFinalizer", "Strategy", "cache_dir", "clear_memory_cache", "default_p", "fingerprint",
           "group_workload", "kronecker_surrogate", "kronecker_svd_bound", "l2_dual_bound", "laplace_error_bound", "objective",
           "objective_and_gradient", "opt", "opt_2d", "opt_2d_prefix", "opt_2d_ranges", "opt_prefix", "opt_ranges",
           "optimize", "optimize_kron", "resolve_grid", "svd_bound"]
