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

from dphist import Pipeline, preset
from dphist.params import UNIT_SHARE, Options

from .cells import CITATION, DEFAULT_CELL_WIDTH, CellInitializer
from .least_squares import LeastSquaresFinalizer
from .kdtree import KDTreePartitioner

#: DPBench's ``alpha``: the share of the budget spent on the cells.
DEFAULT_ALPHA = 0.5
INFERENCES = ("none", "least-squares")


@preset("DPCube", citation=CITATION,
        params={"alpha": UNIT_SHARE,   # eps_1 / eps: strictly inside (0, 1), the cells and the regions both need budget
                **CellInitializer.param_constraints, **KDTreePartitioner.param_constraints,
                "inference": Options(*INFERENCES)})
def DPCube(alpha: float = DEFAULT_ALPHA, cell_width: int = DEFAULT_CELL_WIDTH, stop: str = "dpbench",
           xi="noise", inference: str = "none") -> Pipeline:
    """DPCube (1-D, DPBench): noisy cells of 11 bins, V-optimal kd-tree on them, noisy region counts."""
    a = float(alpha)
    cells = CellInitializer(cell_width=cell_width)
    tree = KDTreePartitioner(stop=stop, xi=xi)
    final = "group-mean" if inference == "none" else LeastSquaresFinalizer()
    return Pipeline(cells, None, tree, final, (a, 0.0, 1.0 - a))


@preset("DPCube-2D", citation=CITATION + "; 2-D form of DPBench's DPcube (Hay et al., SIGMOD 2016)",
        params={"alpha": UNIT_SHARE, **CellInitializer.param_constraints}, dims=(2,))
def DPCube_2d(alpha: float = DEFAULT_ALPHA, cell_width: int = DEFAULT_CELL_WIDTH) -> Pipeline:
    """DPCube on a grid (DPBench's ``DPcube_engine``): noisy blocks of 11 x 11 cells with alpha * eps, a
    kd-tree of boxes on them (cuts across the longer side at the SSE-optimal position, DPBench's
    stopping rule), the leaf boxes' noisy counts spread evenly ((1 - alpha) eps); ``dphist_dpcube.grid``."""
    a = float(alpha)
    return Pipeline(CellInitializer(cell_width=cell_width), None, KDTreePartitioner(stop="dpbench"), "group-mean",
                    (a, 0.0, 1.0 - a), dims=(2,))
