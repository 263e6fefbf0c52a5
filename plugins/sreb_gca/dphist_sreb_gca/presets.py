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

from dphist import Pipeline, preset
from dphist.params import UNIT_SHARE, Interval

from .partitioners import CITATION, GGSPartitioner, OptimalPartitioner

#: alpha = eps_1 / eps, the share of the noisy histogram (strictly between 0 and 1: both steps need budget);
#: eta is ahp.threshold's (declared here too: this plugin does not import ahp)
_COMMON = {"alpha": UNIT_SHARE, "ascending": bool, "threshold": bool, "eta": Interval(float, 0, None)}


def _pipeline(partitioner, alpha, ascending, threshold, eta) -> Pipeline:
    a = float(alpha)
    initializer = ("ahp.threshold", {"eta": eta}) if threshold else "laplace"
    return Pipeline(initializer, ("noisy-count", {"descending": not bool(ascending)}), partitioner,
                    "group-mean", (a, 0.0, 1.0 - a))


@preset("SReB_GCA", citation=CITATION + ", Algorithm 1 with GGS",
        params={**_COMMON, **{k: v for k, v in GGSPartitioner.declared_constraints().items()
                              if k in ("delta", "delta_fraction", "form", "ties")}})
def sreb_gca(alpha: float = 0.85, delta: float = 1.0, delta_fraction: float | None = None,
             form: str = "bound", ascending: bool = True, ties: str = "join", threshold: bool = False,
             eta: float = 0.35) -> Pipeline:
    """SReB_GCA: Laplace H~, ascending noisy sort, GGS on relative error, group means."""
    return _pipeline(GGSPartitioner(delta=delta, delta_fraction=delta_fraction, form=form, ties=ties),
                     alpha, ascending, threshold, eta)


@preset("SReB_GCA-optimal", citation=CITATION + ", Algorithm 1 with the optimal grouping of the same error",
        params={**_COMMON, **OptimalPartitioner.declared_constraints()})
def sreb_gca_optimal(alpha: float = 0.85, delta: float = 1.0, delta_fraction: float | None = None,
                     form: str = "bound", ascending: bool = True, threshold: bool = False, eta: float = 0.35,
                     max_bins: int = 16384) -> Pipeline:
    """SReB_GCA with the optimal grouping (O(n^2) DP; at most ``max_bins`` bins)."""
    return _pipeline(OptimalPartitioner(delta=delta, delta_fraction=delta_fraction, form=form,
                                        max_bins=max_bins), alpha, ascending, threshold, eta)
