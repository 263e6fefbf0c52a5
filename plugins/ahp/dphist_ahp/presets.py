"""The AHP algorithms as dphist presets (Zhang et al., SDM 2014, Algorithm 1).

    eps = eps_1 + eps_2,  eps_1 = gamma_in * eps (ahp.threshold),  eps_2 = (1 - gamma_in) * eps (group-mean)

The paper leaves the split open; gamma_in = 0.85 is the public reference
implementations' default (DPBench / dpcomp_core ``ahp_engine(ratio=0.85, eta=0.35)``,
where ``eps1 = epsilon * ratio``).  The sorter is the core's ``noisy-count`` sorter
(descending by default; ``descending=False`` sorts ascending, as the reference code and
the paper's Example 3.1 do).  The finalizer is the core's ``group-mean`` finalizer:
each group's true sum plus Lap(1/eps_2), divided by its size (Algorithm 1 lines 6-9).
"""
from __future__ import annotations

from dphist import Pipeline, preset
from dphist.params import UNIT_SHARE

from .partitioners import EmpiricalPartitioner, GreedyPartitioner, OptimalPartitioner
from .threshold import CITATION, ThresholdInitializer


#: gamma_in = eps_1 / eps, the share of the noisy sort (strictly between 0 and 1: both steps need budget)
_COMMON = {"gamma_in": UNIT_SHARE, "eta": ThresholdInitializer.param_constraints["eta"], "descending": bool}


def _pipeline(partitioner, gamma_in, eta, descending) -> Pipeline:
    g = float(gamma_in)
    return Pipeline(ThresholdInitializer(eta=eta), ("noisy-count", {"descending": bool(descending)}),
                    partitioner, "group-mean", (g, 0.0, 1.0 - g))


@preset("AHP", citation=CITATION + ", Algorithm 1 with Algorithm 3 (the variant evaluated in Section 6)",
        params=_COMMON)
def ahp(gamma_in: float = 0.85, eta: float = 0.35, descending: bool = True) -> Pipeline:
    """AHP with greedy grouping: threshold, noisy sort, Algorithm 3, group means."""
    return _pipeline(GreedyPartitioner(), gamma_in, eta, descending)


@preset("AHP-optimal", citation=CITATION + ", Algorithm 1 with the optimal grouping of Section 4.2",
        params={**_COMMON, **OptimalPartitioner.param_constraints})
def ahp_optimal(gamma_in: float = 0.85, eta: float = 0.35, descending: bool = True,
                max_bins: int = 32768) -> Pipeline:
    """AHP with the optimal grouping (O(n^2) DP; at most ``max_bins`` bins)."""
    return _pipeline(OptimalPartitioner(max_bins=max_bins), gamma_in, eta, descending)


@preset("AHP-empirical", citation=CITATION + ", Algorithm 1 with Algorithm 2 (empirical grouping)",
        params={**_COMMON, **EmpiricalPartitioner.param_constraints})
def ahp_empirical(gamma_in: float = 0.85, eta: float = 0.35, descending: bool = True, rule: str = "all",
                  max_bins: int = 65536) -> Pipeline:
    """AHP with the empirical grouping (rules of thumb for k; at most ``max_bins`` bins)."""
    return _pipeline(EmpiricalPartitioner(rule=rule, max_bins=max_bins), gamma_in, eta, descending)


@preset("AHP-2D", citation=CITATION + "; on a grid through a linearisation (DPBench's ahpND_engine)",
        params=_COMMON, dims=(2,))
def ahp_2d(gamma_in: float = 0.85, eta: float = 0.35, descending: bool = True) -> Pipeline:
    """AHP on a grid: the cells listed along the Hilbert curve (``dphist.linearise``), then AHP unchanged.
    DPBench's ``ahpND_engine`` flattens the grid row-major; AHP groups cells by their sorted noisy counts,
    so the order of the cells only breaks ties between equal noisy counts."""
    from dphist.linearise import Linearised
    return Linearised(ahp(gamma_in=gamma_in, eta=eta, descending=descending), "hilbert")
