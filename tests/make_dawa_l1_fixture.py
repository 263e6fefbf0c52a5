"""Record the cuts of the dawa plugin's private L1 partition (``dphist_dawa.l1_partition``) as of
2026-11-23 (main 6d51b69, calibrations noisy-min and postprocess), so that ``test_segmentation.py`` can check that ``dphist.segmentation`` with the
L1-deviation cost reproduces them (the later port of dawa onto the engine is then mechanical).

The port is done (dawa's ``least_cost_partition`` now calls the engine), so re-running this script
would record the engine against itself: keep the committed fixture.  ``python
tests/make_dawa_l1_fixture.py`` (needs dphist-dawa).  The noise is a plain seeded numpy
Laplace stream, so the fixture does not depend on the kernel's noise sources.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "fixtures" / "dawa_l1_partition.npz"


class SeededStream:
    """The only noise call DAWA's mechanism makes: ``laplace_mechanism(values, sensitivity, epsilon)``
    (values + Laplace(sensitivity / epsilon), research mode's float route)."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def laplace_mechanism(self, values, sensitivity, epsilon, support=None):
        values = np.asarray(values, dtype=float)
        return values + self.rng.laplace(0.0, sensitivity / epsilon, size=values.size)


def cases():
    rng = np.random.default_rng(21)
    for i in range(6):
        n = int(rng.integers(20, 90))
        values = rng.poisson(rng.choice([2.0, 30.0, 200.0], n)).astype(float)
        values[rng.random(n) < 0.25] = 0.0
        if i % 2:
            bounds = np.r_[0, np.cumsum(rng.integers(1, 4, n))]
            bounds = bounds[bounds <= n]
            if bounds[-1] != n:
                bounds = np.r_[bounds, n]
        else:
            bounds = np.arange(n + 1)
        order = rng.permutation(n) if i % 3 == 0 else np.arange(n)
        yield i, values, order, bounds


CONFIGS = [("exact", 2, 1.0), ("power-of-two", 2, 1.0), ("tree", 2, 1.0), ("tree", 3, 2.0),
           ("exact", 2, 0.0), ("power-of-two", 2, 3.0)]
CALIBRATIONS = ("noisy-min", "postprocess")


def record() -> dict[str, np.ndarray]:
    """Cuts of ``least_cost_partition`` under the two private calibrations' costs: noisy-min
    (Laplace noise on every candidate, drawn batch by batch) and postprocess (deterministic costs
    on rounded noisy counts, where exact ties occur)."""
    from dphist_dawa.l1_partition import DebiasedCosts, NoisyMinCosts, least_cost_partition
    arrays = {}
    for i, values, order, bounds in cases():
        arrays[f"{i}|values"], arrays[f"{i}|order"], arrays[f"{i}|bounds"] = values, order, bounds
        rounded = np.round(values + np.random.default_rng(i).laplace(0, 3.0, values.size))
        arrays[f"{i}|rounded"] = rounded
        for c, (variant, branching, penalty) in enumerate(CONFIGS):
            for eps in (0.2, 2.0):
                seed = 100 * i + 10 * c + int(eps * 3)
                scale = 4.0 / eps
                for calibration in CALIBRATIONS:
                    if calibration == "noisy-min":
                        x, costs = values[order], NoisyMinCosts(SeededStream(seed), scale, 2.0 + penalty * scale)
                    else:
                        x, costs = rounded[order], DebiasedCosts(1.0 / eps, 2.0 + penalty / eps, 1.0)
                    cuts = least_cost_partition(x, bounds, variant, branching, costs)
                    arrays[f"{i}|{calibration}|{variant}|{branching}|{penalty}|{eps}|{seed}"] = cuts
    return arrays


if __name__ == "__main__":
    OUT.parent.mkdir(exist_ok=True)
    arrays = record()
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {len(arrays)} arrays to {OUT.name}")
