"""Acs, Castelluccia, Chen, "Differentially private histogram publishing through lossy compression",
ICDM 2012, as dphist components.

* :class:`~dphist_acs2012.efpa.EFPAFinalizer` (``acs2012.efpa``) - EFPA (Section IV) in the
  orthonormal Fourier basis; ``calibration="dpbench"`` reproduces the reference code (not DP);
* :class:`~dphist_acs2012.php.PHPPartitioner` (``acs2012.php``) - P-HP's hierarchical bisection
  (Section V) in the kernel; :class:`~dphist_acs2012.php.ClippedGroupMean`
  (``acs2012.clipped-mean``) - noisy group averages clipped at 0;
* presets ``EFPA``, ``PHP``.
"""
from .efpa import DPBenchEFPA, EFPAFinalizer, FourierCoefficients
from .php import ClippedGroupMean, HierarchicalBisection, PHPPartitioner

__all__ = ["ClippedGroupMean", "DPBenchEFPA", "EFPAFinalizer", "FourierCoefficients", "HierarchicalBisection",
           "PHPPartitioner"]
