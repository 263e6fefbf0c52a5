"""DAWA's named algorithms (Li, Hay, Miklau, Wang, PVLDB 7(12) 2014).

``ratio`` is DAWA's share of epsilon for the partition (0.25 in the paper and
in DPBench); the rest measures the groups.  No initializer: DAWA's
partition reads the data inside the kernel (SORTaki Section IV-A).
"""
from __future__ import annotations

import math

from dphist import InvalidParameter, Pipeline, preset

from .greedy_h import GreedyHFinalizer
from .l1_partition import L1Partitioner

_PAPER = "Li, Hay, Miklau, Wang, DAWA, PVLDB 7(12) 2014"


def _shares(ratio) -> tuple[float, float, float]:
    try:
        r = float(ratio)
    except (TypeError, ValueError):
        raise InvalidParameter(f"ratio must be a number in (0, 1), got {ratio!r}") from None
    if not math.isfinite(r) or not 0 < r < 1:
        raise InvalidParameter(f"ratio (the partition's share of epsilon) must be in (0, 1), got {ratio!r}")
    return (0.0, r, 1.0 - r)


_CALIBRATION_DOC = """

    ``calibration`` (of ``dawa.l1``): ``"postprocess"`` (default; eps-DP: Laplace counts per bin,
    the partition is post-processing), ``"noisy-min"`` (eps-DP, report-noisy-min on every
    candidate), or ``"dpbench"``: the DPBench/ektelo code's calibration, NOT differentially
    private - for reproducing published numbers only; release mode refuses it and the release
    carries the warning "not differentially private"."""


@preset("DAWA", citation=_PAPER + ", Sections 3-4")
def dawa(ratio: float = 0.25, workload="prefix", branching: int = 2, calibration: str = "postprocess") -> Pipeline:
    return Pipeline(None, None, L1Partitioner("exact", calibration=calibration), GreedyHFinalizer(workload, branching),
                    _shares(ratio))


dawa.__doc__ = "DAWA: exact private L1 partition (ratio * eps), then GreedyH on the groups." + _CALIBRATION_DOC


@preset("DAWA-approx", citation=_PAPER + ", Section 3.3 (power-of-two groups)")
def dawa_approx(ratio: float = 0.25, workload="prefix", branching: int = 2,
                calibration: str = "postprocess") -> Pipeline:
    return Pipeline(None, None, L1Partitioner("power-of-two", calibration=calibration),
                    GreedyHFinalizer(workload, branching), _shares(ratio))


dawa_approx.__doc__ = ("DAWA with the approximate partition (groups of power-of-two length), then GreedyH."
                       + _CALIBRATION_DOC)


@preset("GreedyH", citation=_PAPER + ", Section 4 (GreedyH alone)")
def greedy_h(workload="prefix", branching: int = 2) -> Pipeline:
    """GreedyH on singleton bins: the workload-aware hierarchy without a partition."""
    return Pipeline(None, None, "singleton", GreedyHFinalizer(workload, branching), (0.0, 0.0, 1.0))
