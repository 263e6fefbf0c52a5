"""SReB_GCA end to end (reconstructed Algorithm 1) as dphist presets.

    eps = eps_1 + eps_2,  eps_1 = alpha eps  (Laplace on every bin: H~),  eps_2 = (1 - alpha) eps

1. H~ = x + Lap(1/eps_1) per bin (the core's ``laplace`` initializer; ``threshold=True`` uses
   AHP's thresholded initializer ``ahp.threshold`` instead, if the ahp plugin is installed);
2. sort H~ **ascending** (the core's ``noisy-count`` sorter, ``descending=False``; the outline:
   "sorting from small to large is favorable to improve the availability of small bins first";
   ``ascending=False`` is the switch for the comparison);
3. group the sorted H~ by GGS (``sreb_gca.ggs``) or optimally (``sreb_gca.optimal``): free;
4. each group's true sum + Lap(1/eps_2), spread evenly (the core's ``group-mean`` finalizer).

alpha: the outline gives no value.  Default 0.85, the share AHP's public reference implementation
gives its noisy sort (DPBench ``ahp_engine(ratio=0.85)``), SReB_GCA being in AHP's lineage and
compared against it; the notebook shows the effect of alpha on synthetic data only.
"""
from __future__ import annotations

import math

from dphist import InvalidParameter, Pipeline, preset

from .partitioners import CITATION, GGSPartitioner, OptimalPartitioner


def check_alpha(alpha) -> float:
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise InvalidParameter(f"SReB_GCA: alpha must be a number in (0, 1), got {alpha!r}") from None
    if not math.isfinite(a) or not 0 < a < 1:
        raise InvalidParameter(f"SReB_GCA: alpha (the share eps_1/eps of the noisy histogram) must lie strictly "
                               f"between 0 and 1, got {alpha!r}")
    return a


def _pipeline(partitioner, alpha, ascending, threshold, eta) -> Pipeline:
    a = check_alpha(alpha)
    initializer = ("ahp.threshold", {"eta": eta}) if threshold else "laplace"
    return Pipeline(initializer, ("noisy-count", {"descending": not bool(ascending)}), partitioner,
                    "group-mean", (a, 0.0, 1.0 - a))


@preset("SReB_GCA", citation=CITATION + ", Algorithm 1 with GGS")
def sreb_gca(alpha: float = 0.85, delta: float = 1.0, delta_fraction: float | None = None,
             form: str = "bound", ascending: bool = True, ties: str = "join", threshold: bool = False,
             eta: float = 0.35) -> Pipeline:
    """SReB_GCA: Laplace H~, ascending noisy sort, GGS on relative error, group means."""
    return _pipeline(GGSPartitioner(delta=delta, delta_fraction=delta_fraction, form=form, ties=ties),
                     alpha, ascending, threshold, eta)


@preset("SReB_GCA-optimal", citation=CITATION + ", Algorithm 1 with the optimal grouping of the same error")
def sreb_gca_optimal(alpha: float = 0.85, delta: float = 1.0, delta_fraction: float | None = None,
                     form: str = "bound", ascending: bool = True, threshold: bool = False, eta: float = 0.35,
                     max_bins: int = 16384) -> Pipeline:
    """SReB_GCA with the optimal grouping (O(n^2) DP; at most ``max_bins`` bins)."""
    return _pipeline(OptimalPartitioner(delta=delta, delta_fraction=delta_fraction, form=form,
                                        max_bins=max_bins), alpha, ascending, threshold, eta)
