"""DAWA's named algorithms (Li, Hay, Miklau, Wang, PVLDB 7(12) 2014).

``ratio`` is DAWA's share of epsilon for the partition (0.25 in the paper and
in DPBench); the rest measures the groups.  No initializer: DAWA's
partition reads the data inside the kernel (SORTaki Section IV-A).
"""
from __future__ import annotations

from dphist import Pipeline, preset
from dphist.params import UNIT_SHARE

from .greedy_h import GreedyHFinalizer
from .l1_partition import L1Partitioner

_PAPER = "Li, Hay, Miklau, Wang, DAWA, PVLDB 7(12) 2014"


def _shares(ratio) -> tuple[float, float, float]:
    return (0.0, float(ratio), 1.0 - float(ratio))


#: ratio: the partition's share of epsilon (both the partition and the measurement need budget);
#: the other parameters go to dawa.l1 / dawa.greedy-h unchanged
_RATIO = {"ratio": UNIT_SHARE}
_GREEDY_H = {k: GreedyHFinalizer.param_constraints[k] for k in ("workload", "branching")}
_DAWA = {**_RATIO, **_GREEDY_H, "calibration": L1Partitioner.param_constraints["calibration"]}


_CALIBRATION_DOC = """

    ``calibration`` (of ``dawa.l1``): ``"postprocess"`` (default; eps-DP: Laplace counts per bin,
    the partition is post-processing), ``"noisy-min"`` (eps-DP, report-noisy-min on every
    candidate), or ``"dpbench"``: the DPBench/ektelo code's calibration, NOT differentially
    private - for reproducing published numbers only; release mode refuses it and the release
    carries the warning "not differentially private"."""


@preset("DAWA", citation=_PAPER + ", Sections 3-4", params=_DAWA)
def dawa(ratio: float = 0.25, workload="prefix", branching: int = 2, calibration: str = "postprocess") -> Pipeline:
    return Pipeline(None, None, L1Partitioner("exact", calibration=calibration), GreedyHFinalizer(workload, branching),
                    _shares(ratio))


dawa.__doc__ = "DAWA: exact private L1 partition (ratio * eps), then GreedyH on the groups." + _CALIBRATION_DOC


@preset("DAWA-approx", citation=_PAPER + ", Section 3.3 (power-of-two groups)", params=_DAWA)
def dawa_approx(ratio: float = 0.25, workload="prefix", branching: int = 2,
                calibration: str = "postprocess") -> Pipeline:
    return Pipeline(None, None, L1Partitioner("power-of-two", calibration=calibration),
                    GreedyHFinalizer(workload, branching), _shares(ratio))


dawa_approx.__doc__ = ("DAWA with the approximate partition (groups of power-of-two length), then GreedyH."
                       + _CALIBRATION_DOC)


@preset("GreedyH", citation=_PAPER + ", Section 4 (GreedyH alone)", params=_GREEDY_H)
def greedy_h(workload="prefix", branching: int = 2) -> Pipeline:
    """GreedyH on singleton bins: the workload-aware hierarchy without a partition."""
    return Pipeline(None, None, "singleton", GreedyHFinalizer(workload, branching), (0.0, 0.0, 1.0))
