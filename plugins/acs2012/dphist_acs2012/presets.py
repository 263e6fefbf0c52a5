"""The ICDM 2012 paper's named algorithms (Acs, Castelluccia, Chen): ``EFPA`` and ``PHP``.

Budget splits are the paper's and the DPBench code's: EFPA gives half of epsilon to the choice of
the number of coefficients and half to their noise (``ratio`` = 0.5, inside the finalizer); P-HP
gives half to the partition and half to the group sums (``ratio`` = 0.5, the partitioner's share).
"""
from __future__ import annotations

from dphist import Pipeline, preset

from .efpa import CITATION as EFPA_CITATION
from .efpa import EFPAFinalizer, _ratio
from .php import CITATION as PHP_CITATION
from .php import DEFAULT_MAX_GROUPS, ClippedGroupMean, PHPPartitioner


@preset("EFPA", citation=EFPA_CITATION)
def efpa(ratio: float = 0.5, calibration: str = "parseval") -> Pipeline:
    """EFPA: the K lowest Fourier coefficients, K by the exponential mechanism (``ratio`` * eps),
    Laplace on their real and imaginary parts in the orthonormal basis (the rest), inverse DFT.

    ``calibration``: ``"parseval"`` (default, the paper's bound sqrt(kept)), ``"entrywise"``
    (kept/sqrt(n), tighter; dphist's option) or ``"dpbench"``: the DPBench code's, NOT
    differentially private - for reproducing published numbers only; release mode refuses it and
    the release carries the warning "not differentially private"."""
    finalizer = EFPAFinalizer(ratio=ratio, calibration=calibration)
    finalizer._check()
    return Pipeline(None, None, "singleton", finalizer, (0.0, 0.0, 1.0))


@preset("PHP", citation=PHP_CITATION)
def php(ratio: float = 0.5, depth: int | None = None, max_groups: int = DEFAULT_MAX_GROUPS) -> Pipeline:
    """P-HPartition: hierarchical bisection by the exponential mechanism (``ratio`` * eps), then
    Laplace on each group's sum, spread as the group average and clipped at 0 (the rest)."""
    r = _ratio(ratio, "PHP: ratio (the partition's share of epsilon)")
    partitioner = PHPPartitioner(depth=depth, max_groups=max_groups)
    partitioner._check()
    return Pipeline(None, None, partitioner, ClippedGroupMean(), (0.0, r, 1.0 - r))
