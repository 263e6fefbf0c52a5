"""Record the releases of the dawa plugin's presets and of ``dawa.l1`` in every calibration and variant.

Run once BEFORE a change to the partition code (``python plugins/dawa/tests/make_release_fixture.py``);
``test_release_fixture.py`` then checks that the releases stay bit-identical.  The fixture written
on 2026-11-23 (branch engine-names, from main 4d37d26) recorded the plugin's own DP code
(``least_cost_partition`` and its numba kernels) before it was ported onto ``dphist.segmentation``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dphist import Pipeline, make_algorithm, release_records

OUT = Path(__file__).resolve().parent / "fixtures" / "releases.npz"
CALIBRATIONS = ("postprocess", "noisy-min", "dpbench")


def algorithms() -> dict[str, Pipeline]:
    """The presets in every calibration, the tree variant (binary and ternary), grouped units
    (after a sort) and a non-default penalty, correction and measuring budget."""
    out = {"GreedyH": make_algorithm("GreedyH")}
    for calibration in CALIBRATIONS:
        # the recorded configuration is ratio 0.25 with each calibration, named explicitly: it is not
        # the presets' default configuration (plugins/dawa/README.md)
        out[f"DAWA-{calibration}"] = make_algorithm("DAWA", ratio=0.25, calibration=calibration)
        out[f"DAWA-approx-{calibration}"] = make_algorithm("DAWA-approx", ratio=0.25, calibration=calibration)
        for branching in (2, 3):
            out[f"dawa.l1-tree{branching}-{calibration}"] = Pipeline(
                None, None, ("dawa.l1", {"variant": "tree", "branching": branching, "calibration": calibration}),
                "group-mean", (0.0, 0.3, 0.7))
        for variant in ("exact", "power-of-two", "tree"):
            # sorted noisy counts (units are single bins in a new order) and a coarse first partition
            out[f"dawa.l1-sorted-{variant}-{calibration}"] = Pipeline(
                "laplace", "noisy-count", ("dawa.l1", {"variant": variant, "calibration": calibration}),
                "group-mean", (0.3, 0.3, 0.4))
    out["dawa.l1-knobs"] = Pipeline(
        None, None, ("dawa.l1", {"variant": "exact", "bucket_penalty": 2.5, "correction": 0.5,
                                 "measure_epsilon": 0.3}), "group-mean", (0.0, 0.5, 0.5))
    out["dawa.l1-noisy-min-knobs"] = Pipeline(
        None, None, ("dawa.l1", {"variant": "power-of-two", "calibration": "noisy-min", "bucket_penalty": 0.5}),
        "group-mean", (0.0, 0.5, 0.5))
    return out


def record_arrays() -> dict[str, np.ndarray]:
    """Nothing beyond the releases (the engine's array-level equality is tests/test_segmentation.py's)."""
    return {}


if __name__ == "__main__":
    release_records.write(OUT, algorithms(), record_arrays())
