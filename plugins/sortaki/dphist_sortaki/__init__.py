"""SORTaki's new components (Doudalis & Mehrotra): error formulas, WAF, GP, DPP, DPCube, Table II presets.

The sorter of SORTaki (by noisy average frequency, Section IV-B) is the
core's ``noisy-count`` sorter and is reused by name.
"""
from .dpcube import DPCubePartitioner, kd_cuts
from .error_formulas import (AHPError, ErrorFormula, ExpectedError, SizePenaltyFormula, UnbiasedExpectedError,
                             bin_errors, resolve_error_formula, sse)
from .partitioners import DynamicProgrammingPartitioner, GreedyPartitioner
from .presets import FAMILY, TABLE_II
from .segmentation import dp_cuts, greedy_cuts, partition_cost, segment_values
from .waf import WeightedAverageFinalizer, waf_weights

__all__ = [
    "AHPError", "DPCubePartitioner", "DynamicProgrammingPartitioner", "ErrorFormula", "ExpectedError", "FAMILY",
    "GreedyPartitioner", "SizePenaltyFormula", "TABLE_II", "UnbiasedExpectedError", "WeightedAverageFinalizer",
    "bin_errors", "dp_cuts", "greedy_cuts", "kd_cuts", "partition_cost", "resolve_error_formula",
    "segment_values", "sse", "waf_weights",
]
