"""DPCube (Xiao, Xiong et al.) in one dimension, as DPBench runs it, for dphist.

``dpcube.cells`` (equal-width noisy cells), ``dpcube.kd`` (kd-tree on the cell estimate),
``dpcube.least-squares`` (the paper's inference) and the preset ``DPCube``.
"""
from .cells import CellInitializer, cell_bounds, cell_sums
from .least_squares import LeastSquaresFinalizer, least_squares_cells
from .kdtree import KDTreePartitioner, kd_regions
from .presets import DPCube

__all__ = ["CellInitializer", "KDTreePartitioner", "LeastSquaresFinalizer", "DPCube", "cell_bounds", "cell_sums",
           "kd_regions", "least_squares_cells"]
