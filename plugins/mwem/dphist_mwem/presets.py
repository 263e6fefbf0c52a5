"""The preset of the mwem plugin (entry point ``MWEM`` in ``dphist.algorithms``)."""
from __future__ import annotations

from dphist import Pipeline, preset

from .finalizer import CITATION, DEFAULT_TOTAL_RATIO, MWEMFinalizer


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
