"""The preset of the privelet plugin (entry point ``Privelet`` in ``dphist.algorithms``)."""
from __future__ import annotations

from dphist import Pipeline, preset

from .finalizer import CITATION, PriveletFinalizer


@preset("Privelet", citation=CITATION)
def privelet() -> Pipeline:
    """Privelet (1-D, Haar): every bin a unit, the whole budget on the weighted Haar coefficients.

    Domains that are not a power of two are padded with empty bins (DPBench's choice).
    """
    return Pipeline(None, None, "singleton", PriveletFinalizer(), (0.0, 0.0, 1.0))


@preset("Privelet-2D", citation=CITATION + "; Section V (multi-dimensional)", dims=(2,))
def privelet_2d() -> Pipeline:
    """Privelet on a grid: the tensor-product weighted Haar transform of the cells (each axis padded with
    empty cells to a power of two, as DPBench's ``privelet2D``), Laplace(prod(1 + log2 N_a) / eps) on every
    weighted coefficient, the exact inverse."""
    return Pipeline(None, None, "singleton", PriveletFinalizer(), (0.0, 0.0, 1.0), dims=(2,))
