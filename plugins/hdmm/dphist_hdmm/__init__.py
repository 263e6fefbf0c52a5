"""Workload-optimised strategies for dphist: HDMM's p-Identity parameterisation (OPT_0) in one dimension.

McKenna, Miklau, Hay, Machanavajjhala, "Optimizing error of high-dimensional statistical queries under
differential privacy", PVLDB 11(10) 2018, written from the paper (not from HDMM's code).

* :func:`optimize` -> :class:`Strategy` (``strategy`` matrix, ``reconstruct``, ``query_variances``,
  ``bin_variances``, ``covariance``), cached in memory and on disk;
* :func:`svd_bound`, :func:`laplace_error_bound`: the lower bound on any linear strategy's error;
* finalizer ``hdmm.p-identity``; presets ``OPT``, ``OPT-prefix``, ``OPT-ranges``.
"""
from .bounds import laplace_error_bound, svd_bound
from .finalizer import OptimizedFinalizer, group_workload
from .gram import Gram
from .objective import objective, objective_and_gradient
from .presets import opt, opt_prefix, opt_ranges
from .strategy import Strategy, cache_dir, clear_memory_cache, default_p, fingerprint, optimize

__all__ = ["Gram", "OptimizedFinalizer", "Strategy", "cache_dir", "clear_memory_cache", "default_p", "fingerprint",
           "group_workload", "laplace_error_bound", "objective", "objective_and_gradient", "opt", "opt_prefix",
           "opt_ranges", "optimize", "svd_bound"]
