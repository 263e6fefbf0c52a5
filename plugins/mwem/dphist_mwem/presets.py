"""The preset of the mwem plugin (entry point ``MWEM`` in ``dphist.algorithms``)."""
from __future__ import annotations

from dphist import Pipeline, preset

from .finalizer import CITATION, DEFAULT_TOTAL_RATIO, GRID_WORKLOAD, MWEMFinalizer


@preset("MWEM", citation=CITATION, params=MWEMFinalizer.param_constraints)
def mwem(rounds: int = 10, ratio: float = 0.5, updates: int = 100, workload="prefix",
         calibration: str = "noisy-total", total_ratio: float = DEFAULT_TOTAL_RATIO,
         public_total: float | None = None) -> Pipeline:
    """MWEM on every bin, the whole budget in the finalizer ``mwem.mw`` (DPBench defaults: 10 rounds,
    ratio 0.5, 100 update passes, prefix workload).  ``calibration="dpbench"`` reproduces the
    reference code's true total (NOT differentially private, research mode only)."""
    return Pipeline(None, None, "singleton",
                    MWEMFinalizer(rounds=rounds, ratio=ratio, updates=updates, workload=workload,
                                  calibration=calibration, total_ratio=total_ratio, public_total=public_total),
                    (0.0, 0.0, 1.0))


@preset("MWEM-2D", citation=CITATION + "; on a grid as DPBench's mwemND_engine (rectangle workload)",
        params=MWEMFinalizer.param_constraints, dims=(2,))
def mwem_2d(rounds: int = 10, ratio: float = 0.5, updates: int = 100, workload=GRID_WORKLOAD,
            calibration: str = "noisy-total", total_ratio: float = DEFAULT_TOTAL_RATIO,
            public_total: float | None = None) -> Pipeline:
    """MWEM on the cells of a 2-D grid (DPBench's 2-D setting): the worst-answered rectangle of the
    workload selected by the exponential mechanism, measured with Laplace noise, multiplicative
    weights in closed form over the blocks the measured rectangles cut (``dphist_mwem.grid``).
    Defaults as DPBench's: 10 rounds, ratio 0.5, 100 update passes, and the workload DPBench
    evaluates 2-D algorithms on and MWEM selects from, 2,000 random rectangles (RandomRange, seed
    9001: ``dpbench-random-2000``); the total measured with ``total_ratio`` of epsilon."""
    return Pipeline(None, None, "singleton",
                    MWEMFinalizer(rounds=rounds, ratio=ratio, updates=updates, workload=workload,
                                  calibration=calibration, total_ratio=total_ratio, public_total=public_total),
                    (0.0, 0.0, 1.0), dims=(2,))
