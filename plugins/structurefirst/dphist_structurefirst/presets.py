"""NoiseFirst and StructureFirst (Xu et al., ICDE 2012 / VLDBJ 2013) as dphist presets.

``NF``: the core's ``laplace`` initializer with the whole budget, no sorter, the V-optimal grouping
of H~ with the paper's noise-corrected k (``structurefirst.noisefirst``), conditional means of H~
(``structurefirst.conditional-mean``); shares (1, 0, 0).

``SF``: no initializer, the boundaries (``structurefirst.sf``, share ``structure_share``, 0.05 = the
reference optimiser's value on every histogram it meets, see the module docstring of
:mod:`.structurefirst`), then a Hay tree per group (``structurefirst.group-trees``) with the rest.  ``calibration="dpbench"``
reproduces the reference code in both stages (the true-mean cap of the boundaries, and, with
``counts="tree"``, the internal tree nodes it leaves un-noised): not differentially private.
"""
from __future__ import annotations

from dphist import Pipeline, preset
from dphist.params import UNIT_SHARE
from .group_trees import GroupTreesFinalizer
from .noisefirst import CITATION as NF_CITATION
from .noisefirst import ConditionalMeanFinalizer, NoiseFirstPartitioner
from .structurefirst import CITATION as SF_CITATION
from .structurefirst import REFERENCE_CAP_FACTOR, REFERENCE_K_RATIO, StructureFirstPartitioner


@preset("NF", citation=NF_CITATION, params={
    "k": NoiseFirstPartitioner.param_constraints["k"],
    "conditional": ConditionalMeanFinalizer.param_constraints["conditional"]})
def noisefirst(k: int | None = None, conditional: bool = True) -> Pipeline:
    """NoiseFirst: Laplace H~, V-optimal groups of H~ with the noise-corrected k, conditional means."""
    return Pipeline("laplace", None, NoiseFirstPartitioner(k=k), ConditionalMeanFinalizer(conditional),
                    (1.0, 0.0, 0.0))


@preset("SF", citation=SF_CITATION, params={
    "structure_share": UNIT_SHARE, **StructureFirstPartitioner.param_constraints,
    "counts": GroupTreesFinalizer.param_constraints["counts"]})
def structurefirst(structure_share: float = 0.05, k: int | None = None, k_ratio: float = REFERENCE_K_RATIO,
                   cap: float | None = None, cap_factor: float = REFERENCE_CAP_FACTOR, cap_share: float = 0.05,
                   calibration: str = "paper", counts: str = "tree") -> Pipeline:
    """StructureFirst: exponential-mechanism boundaries of the V-optimal structure, then counts."""
    s = float(structure_share)
    return Pipeline(None, None,
                    StructureFirstPartitioner(k=k, k_ratio=k_ratio, cap=cap, cap_factor=cap_factor,
                                              cap_share=cap_share, calibration=calibration),
                    GroupTreesFinalizer(counts, calibration if counts == "tree" else "paper"), (0.0, s, 1.0 - s))
