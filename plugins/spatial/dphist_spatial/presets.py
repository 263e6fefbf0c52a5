"""The spatial plugin's presets (entry points in ``dphist.algorithms``)."""
from __future__ import annotations

from dphist import Pipeline, preset

from .finalizer import CORMODE, GridTreeFinalizer
from .kdtree import KDTreeFinalizer

_T = GridTreeFinalizer.param_constraints


@preset("QuadTree", citation=CORMODE, params={"inference": _T["inference"]}, dims=(2,))
def quadtree(inference: bool = True) -> Pipeline:
    """Cormode et al.'s quadtree: 2 x 2 splits down to single cells, every level measured with the
    geometric budget (ratio 2^{1/3} per level towards the leaves), constrained inference (as DPBench's
    ``QuadTree``, whose post-processing approximates the same least squares)."""
    return Pipeline(None, None, "singleton",
                    GridTreeFinalizer(branching=2, budget="geometric", noisy_root=True, inference=inference),
                    (0.0, 0.0, 1.0), dims=(2,))


_K = KDTreeFinalizer.param_constraints


@preset("KDTree", citation=KDTreeFinalizer.citation,
        params={"depth": _K["depth"], "median_share": _K["median_share"], "inference": _K["inference"]}, dims=(2,))
def kdtree(depth="auto", median_share: float = 0.3, inference: bool = True) -> Pipeline:
    """Cormode et al.'s private kd-tree: ``depth`` levels of cuts at private medians (exponential mechanism,
    ``median_share`` of epsilon split evenly across them), counts at every level with the geometric budget
    (ratio 2^{1/6} per level towards the leaves), constrained inference; leaves spread over their cells."""
    return Pipeline(None, None, "singleton",
                    KDTreeFinalizer(depth=depth, quadtree=False, median_share=median_share, inference=inference),
                    (0.0, 0.0, 1.0), dims=(2,))


@preset("HybridTree", citation=KDTreeFinalizer.citation,
        params={"kd_levels": _K["depth"], "median_share": _K["median_share"], "inference": _K["inference"]},
        dims=(2,))
def hybridtree(kd_levels="auto", median_share: float = 0.3, inference: bool = True) -> Pipeline:
    """Cormode et al.'s hybrid tree: ``kd_levels`` levels of private-median cuts at the top, then quadtree
    cuts (free) down to single cells; geometric count budget over all levels, constrained inference."""
    return Pipeline(None, None, "singleton",
                    KDTreeFinalizer(depth=kd_levels, quadtree=True, median_share=median_share, inference=inference),
                    (0.0, 0.0, 1.0), dims=(2,))
