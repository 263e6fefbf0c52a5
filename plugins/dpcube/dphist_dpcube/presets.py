"""DPCube as a dphist preset: DPBench's 1-D DPCube, with the paper's options.

    eps_1 = alpha * eps   noisy cells of ``cell_width`` bins       (``dpcube.cells``)
                          kd-tree on the cell estimate, free       (``dpcube.kd``)
    eps_2 = (1 - alpha) eps   noisy region counts, spread evenly   (core ``group-mean``), or
                          region counts + least-squares inference  (``dpcube.least-squares``)

Defaults are DPBench's ``DPcube1D_engine(gz=11, alpha=0.5)`` (Hay et al., SIGMOD 2016): cells of
11 bins, half the budget on them, V-optimal cuts with DPBench's stopping rule, the region counts
published alone.  Options: ``stop="variance"`` (with ``xi``) is the paper's variance stopping
rule; ``inference="least-squares"`` is the paper's final inference combining cell and region
counts.  Each choice is explained in the component's module and measured in
``notebooks/dpcube.ipynb``.

DPBench's DPCube is differentially private: the cells are disjoint (one Laplace count each,
sensitivity 1, eps_1), the tree reads only their noisy counts (post-processing), the regions are
disjoint (sensitivity 1, eps_2); eps_1 + eps_2 = eps.  So there is no ``calibration="dpbench"``
variant here: the default *is* the reference's calibration.

Not to be confused with SORTaki's ``DPC`` (sortaki plugin): Laplace on every bin with 0.9 eps, a
kd-tree cut at the median of the mass while the noisy variance exceeds xi = 2/eps^2, and the WAF
finalizer.  The notebook compares the two.
"""
from __future__ import annotations

import math

from dphist import Pipeline, preset
from dphist.errors import InvalidParameter

from .cells import CITATION, DEFAULT_CELL_WIDTH, CellInitializer
from .least_squares import LeastSquaresFinalizer
from .kdtree import KDTreePartitioner

#: DPBench's ``alpha``: the share of the budget spent on the cells.
DEFAULT_ALPHA = 0.5
INFERENCES = ("none", "least-squares")


def check_alpha(alpha) -> float:
    if isinstance(alpha, bool):
        raise InvalidParameter(f"DPCube: alpha must be a number in (0, 1), got {alpha!r}")
    try:
        a = float(alpha)
    except (TypeError, ValueError):
        raise InvalidParameter(f"DPCube: alpha must be a number in (0, 1), got {alpha!r}") from None
    if not (math.isfinite(a) and 0.0 < a < 1.0):
        raise InvalidParameter(f"DPCube: alpha (the share eps_1/eps of the cells) must lie strictly between 0 and 1 "
                               f"(the cells and the regions both need budget), got {alpha!r}")
    return a


@preset("DPCube", citation=CITATION)
def DPCube(alpha: float = DEFAULT_ALPHA, cell_width: int = DEFAULT_CELL_WIDTH, stop: str = "dpbench",
           xi="noise", inference: str = "none") -> Pipeline:
    """DPCube (1-D, DPBench): noisy cells of 11 bins, V-optimal kd-tree on them, noisy region counts."""
    a = check_alpha(alpha)
    if inference not in INFERENCES:
        raise InvalidParameter(f"DPCube: unknown inference {inference!r}; use one of "
                               f"{', '.join(map(repr, INFERENCES))}")
    cells = CellInitializer(cell_width=cell_width)
    tree = KDTreePartitioner(stop=stop, xi=xi)
    final = "group-mean" if inference == "none" else LeastSquaresFinalizer()
    return Pipeline(cells, None, tree, final, (a, 0.0, 1.0 - a))
