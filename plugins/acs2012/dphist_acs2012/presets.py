"""The ICDM 2012 paper's named algorithms (Acs, Castelluccia, Chen): ``EFPA`` and ``PHP``.

Budget splits are the paper's and the DPBench code's: EFPA gives half of epsilon to the choice of
the number of coefficients and half to their noise (``ratio`` = 0.5, inside the finalizer); P-HP
gives half to the partition and half to the group sums (``ratio`` = 0.5, the partitioner's share).
"""
from __future__ import annotations

from dphist import Pipeline, preset
from dphist.params import UNIT_SHARE

from .efpa import CITATION as EFPA_CITATION
from .efpa import EFPAFinalizer
from .php import CITATION as PHP_CITATION
from .php import DEFAULT_MAX_GROUPS, ClippedGroupMean, PHPPartitioner

#: ratio: EFPA's share for choosing K (inside the finalizer) / P-HP's share for the partition
_EFPA = {"ratio": UNIT_SHARE, "calibration": EFPAFinalizer.param_constraints["calibration"]}
_PHP = {"ratio": UNIT_SHARE, **{k: PHPPartitioner.param_constraints[k] for k in ("depth", "max_groups")}}


@preset("EFPA", citation=EFPA_CITATION, params=_EFPA)
def efpa(ratio: float = 0.5, calibration: str = "parseval") -> Pipeline:
    """EFPA: the K lowest Fourier coefficients, K by the exponential mechanism (``ratio`` * eps),
    Laplace on their real and imaginary parts in the orthonormal basis (the rest), inverse DFT.

    ``calibration``: ``"parseval"`` (default, the paper's bound sqrt(kept)), ``"entrywise"``
    (kept/sqrt(n), tighter; dphist's option) or ``"dpbench"``: the DPBench code's, NOT
    differentially private - for reproducing published numbers only; release mode refuses it and
    the release carries the warning "not differentially private"."""
    return Pipeline(None, None, "singleton", EFPAFinalizer(ratio=ratio, calibration=calibration), (0.0, 0.0, 1.0))


@preset("PHP", citation=PHP_CITATION, params=_PHP)
def php(ratio: float = 0.5, depth: int | None = None, max_groups: int = DEFAULT_MAX_GROUPS) -> Pipeline:
    """P-HPartition: hierarchical bisection by the exponential mechanism (``ratio`` * eps), then
    Laplace on each group's sum, spread as the group average and clipped at 0 (the rest)."""
    r = float(ratio)
    return Pipeline(None, None, PHPPartitioner(depth=depth, max_groups=max_groups), ClippedGroupMean(),
                    (0.0, r, 1.0 - r))
