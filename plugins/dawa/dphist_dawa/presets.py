"""DAWA's named algorithms (Li, Hay, Miklau, Wang, PVLDB 7(12) 2014).

``ratio`` is DAWA's share of epsilon for the partition; the rest measures the groups.  No
initializer: DAWA's partition reads the data inside the kernel (SORTaki Section IV-A).

Defaults: ``ratio=0.25`` and ``calibration="select"`` (``dawa.l1``: Laplace counts, a few candidate
partitions built from them, the exponential mechanism on DAWA's cost), chosen by measurement on
DPBench's 1-D benchmark against the reference code (``benchmarks/dpbench_dawa_mwem.py``,
``plugins/dawa/dpbench_grid.csv``, notebooks/dawa.ipynb Section 3d).  The reference code's own
choice differs: DPBench's 1-D ``dawa_engine`` spends ratio 0.5 on the power-of-two partition
(``l1partition_approx_engine``); 0.25 is the default of its 2-D engine (``dawa2D_engine``).
"""
from __future__ import annotations

from dphist import Pipeline, preset
from dphist.params import UNIT_SHARE

from .greedy_h import GreedyHFinalizer
from .l1_partition import L1Partitioner

_PAPER = "Li, Hay, Miklau, Wang, DAWA, PVLDB 7(12) 2014"
DEFAULT_RATIO = 0.25             #: the partition's share (measured: module docstring)
DEFAULT_CALIBRATION = "select"   #: dawa.l1's calibration in the presets (measured: module docstring)


def _shares(ratio) -> tuple[float, float, float]:
    return (0.0, float(ratio), 1.0 - float(ratio))


#: ratio: the partition's share of epsilon (both the partition and the measurement need budget);
#: the other parameters go to dawa.l1 / dawa.greedy-h unchanged
_RATIO = {"ratio": UNIT_SHARE}
_GREEDY_H = {k: GreedyHFinalizer.param_constraints[k] for k in ("workload", "branching")}
_DAWA = {**_RATIO, **_GREEDY_H, "calibration": L1Partitioner.param_constraints["calibration"]}


_CALIBRATION_DOC = """

    ``calibration`` (of ``dawa.l1``): ``"select"`` (default; eps-DP: Laplace counts per bin, candidate
    partitions built from them, the exponential mechanism on DAWA's cost), ``"postprocess"`` (eps-DP:
    the partition is post-processing of Laplace counts), ``"noisy-min"`` (eps-DP, report-noisy-min on
    every candidate), or ``"dpbench"``: the DPBench/ektelo code's calibration, NOT differentially
    private - for reproducing published numbers only; release mode refuses it and the release
    carries the warning "not differentially private"."""


@preset("DAWA", citation=_PAPER + ", Sections 3-4", params=_DAWA)
def dawa(ratio: float = DEFAULT_RATIO, workload="prefix", branching: int = 2,
         calibration: str = DEFAULT_CALIBRATION) -> Pipeline:
    return Pipeline(None, None, L1Partitioner("exact", calibration=calibration), GreedyHFinalizer(workload, branching),
                    _shares(ratio))


dawa.__doc__ = "DAWA: exact private L1 partition (ratio * eps), then GreedyH on the groups." + _CALIBRATION_DOC


@preset("DAWA-approx", citation=_PAPER + ", Section 3.3 (power-of-two groups)", params=_DAWA)
def dawa_approx(ratio: float = DEFAULT_RATIO, workload="prefix", branching: int = 2,
                calibration: str = DEFAULT_CALIBRATION) -> Pipeline:
    return Pipeline(None, None, L1Partitioner("power-of-two", calibration=calibration),
                    GreedyHFinalizer(workload, branching), _shares(ratio))


dawa_approx.__doc__ = ("DAWA with the approximate partition (groups of power-of-two length), then GreedyH."
                       + _CALIBRATION_DOC)


@preset("GreedyH", citation=_PAPER + ", Section 4 (GreedyH alone)", params=_GREEDY_H)
def greedy_h(workload="prefix", branching: int = 2) -> Pipeline:
    """GreedyH on singleton bins: the workload-aware hierarchy without a partition."""
    return Pipeline(None, None, "singleton", GreedyHFinalizer(workload, branching), (0.0, 0.0, 1.0))


@preset("DAWA-2D", citation=_PAPER + ", Section 5 (2-D data on the Hilbert curve); DPBench's dawa2D_engine",
        params=_DAWA, dims=(2,))
def dawa_2d(ratio: float = DEFAULT_RATIO, workload="prefix", branching: int = 2,
            calibration: str = "postprocess") -> Pipeline:
    """DAWA on a grid: the cells listed along the Hilbert curve (a public order: ``dphist.linearise``), DAWA's
    power-of-two partition (DPBench's ``l1partition_approx_engine``) with ``ratio * eps``, GreedyH on the
    groups, the estimate mapped back to the grid.  ``workload`` is over the curve's positions (DPBench
    maps its 2-D rectangles onto the curve as 0/1 rows, which GreedyH's range workloads cannot hold:
    our default is the prefix ranges of the curve).  Default calibration ``"postprocess"``: on DPBench's
    2-D sources at 128^2 (``benchmarks/dpbench_2d.py``) it had the lowest error of the three private
    calibrations in 2 of 3 cells and ran 4x faster than ``"select"`` (BENCHMARKS.md, DAWA-2D)."""
    from dphist.linearise import Linearised
    return Linearised(dawa_approx(ratio=ratio, workload=workload, branching=branching, calibration=calibration),
                      "hilbert")


dawa_2d.__doc__ += _CALIBRATION_DOC
