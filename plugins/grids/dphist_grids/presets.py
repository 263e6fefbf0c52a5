"""The presets UG and AG (Qardaji, Yang, Li, ICDE 2013), 2-D histograms only."""
from __future__ import annotations

from dphist import Pipeline, preset
from dphist.params import Interval

from .grid import CITATION, DEFAULT_C, DEFAULT_TOTAL_RATIO, AdaptiveGrid, AdaptiveInference, UniformGrid


@preset("UG", citation=CITATION + ", Section IV", dims=(2,),
        params={**UniformGrid.param_constraints})
def ug(c: float = DEFAULT_C, total_ratio: float = DEFAULT_TOTAL_RATIO, public_total: float | None = None) -> Pipeline:
    """Uniform grid: about N eps / c square blocks, each measured with Laplace noise (c = 10).

    Shares: ``total_ratio`` of epsilon on a noisy total, the rest on the blocks; with a declared
    ``public_total`` the whole epsilon measures the blocks."""
    grid = UniformGrid(c=c, total_ratio=total_ratio, public_total=public_total)
    shares = (0.0, 0.0, 1.0) if public_total is not None else (0.0, total_ratio, 1.0 - total_ratio)
    return Pipeline(None, None, grid, "group-mean", shares, dims=(2,))


@preset("AG", citation=CITATION + ", Section V", dims=(2,),
        params={**AdaptiveGrid.param_constraints, "alpha": Interval(float, 0, 1, closed="neither")})
def ag(c: float = DEFAULT_C, c2: float = DEFAULT_C / 2, alpha: float = 0.5, m1_min: int = 10,
       total_ratio: float = DEFAULT_TOTAL_RATIO, public_total: float | None = None) -> Pipeline:
    """Adaptive grid: level 1 of m1 x m1 blocks (alpha of the budget), each split by its noisy count,
    the levels reconciled by constrained inference (c = 10, c2 = c / 2, alpha = 0.5).

    Shares: ``total_ratio`` of epsilon on a noisy total (none with ``public_total``), then ``alpha`` of
    the rest on level 1 (the partitioner) and ``1 - alpha`` on level 2 (the finalizer)."""
    rho = 0.0 if public_total is not None else total_ratio
    grid = AdaptiveGrid(c=c, c2=c2, m1_min=m1_min, total_ratio=total_ratio, public_total=public_total)
    gamma_p = rho + alpha * (1.0 - rho)
    return Pipeline(None, None, grid, AdaptiveInference(), (0.0, gamma_p, 1.0 - gamma_p), dims=(2,))
