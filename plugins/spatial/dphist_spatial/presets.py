"""The spatial plugin's presets (entry points in ``dphist.algorithms``)."""
from __future__ import annotations

from dphist import Pipeline, preset

from .finalizer import CORMODE, GridTreeFinalizer

_T = GridTreeFinalizer.param_constraints


@preset("QuadTree", citation=CORMODE, params={"inference": _T["inference"]}, dims=(2,))
def quadtree(inference: bool = True) -> Pipeline:
    """Cormode et al.'s quadtree: 2 x 2 splits down to single cells, every level measured with the
    geometric budget (ratio 2^{1/3} per level towards the leaves), constrained inference (as DPBench's
    ``QuadTree``, whose post-processing approximates the same least squares)."""
    return Pipeline(None, None, "singleton",
                    GridTreeFinalizer(branching=2, budget="geometric", noisy_root=True, inference=inference),
                    (0.0, 0.0, 1.0), dims=(2,))
