"""Record the releases of every AHP preset and partitioner on a few histograms and seeds.

Run once BEFORE a change to the grouping code (``python plugins/ahp/tests/make_release_fixture.py``);
``test_release_fixture.py`` then checks that the releases stay bit-identical.  The fixture written
on 2026-11-23 recorded the plugin's own DP code, before it was ported onto ``dphist.segmentation``
(re-recorded on main 111ebba, still with the old DP code, after main changed the G presets' gamma_in).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dphist import Pipeline, make_algorithm, release_records

OUT = Path(__file__).resolve().parent / "fixtures" / "releases.npz"


def _pipe(partitioner):
    return Pipeline("ahp.threshold", "noisy-count", partitioner, "group-mean", (0.85, 0.0, 0.15))


def algorithms() -> dict[str, Pipeline]:
    """Every preset and every partitioner configuration (sorted, unsorted, ascending)."""
    out = {
        "AHP": make_algorithm("AHP"),
        "AHP-optimal": make_algorithm("AHP-optimal"),
        "AHP-empirical": make_algorithm("AHP-empirical"),
        "AHP-ascending": make_algorithm("AHP", descending=False),
        "AHP-optimal-ascending": make_algorithm("AHP-optimal", descending=False),
        "AHP-empirical-sqrt": make_algorithm("AHP-empirical", rule="sqrt"),
        "AHP-empirical-doane": make_algorithm("AHP-empirical", rule="doane"),
    }
    for name in ("ahp.greedy", "ahp.optimal", "ahp.empirical"):
        out[f"{name}-unsorted"] = Pipeline("ahp.threshold", None, name, "group-mean", (0.85, 0.0, 0.15))
        out[f"{name}-laplace"] = Pipeline("laplace", "noisy-count", name, "group-mean", (0.5, 0.0, 0.5))
    return out


def array_inputs():
    """Noisy-looking vectors with ties and zero runs, sorted and not."""
    rng = np.random.default_rng(12)
    for i in range(4):
        n = int(rng.integers(30, 150))
        values = np.round(rng.laplace(0, 15, n) + rng.integers(0, 4, n) * 25)
        values[rng.random(n) < 0.3] = 0.0
        yield i, "raw", values
        yield i, "sorted", np.sort(values)[::-1]


def record_arrays() -> dict[str, np.ndarray]:
    """Array-level outputs of the three groupings and of the lower bound err*."""
    from dphist_ahp.greedy import greedy_cuts
    from dphist_ahp.segmentation import k_group_cuts, optimal_cuts
    from dphist_ahp.group_error import lower_bounds
    arrays = {}
    for i, order, values in array_inputs():
        for eps_2 in (0.05, 0.5):
            key = f"array|{i}|{order}|{eps_2}"
            cuts, err = optimal_cuts(values, eps_2)
            arrays[key + "|optimal|cuts"], arrays[key + "|optimal|cost"] = cuts, np.array(err)
            arrays[key + "|greedy|cuts"] = greedy_cuts(values, eps_2)
            arrays[key + "|lower_bounds"] = lower_bounds(values, eps_2)
            ks = (1, 2, 3, 5, 8, 13)
            for monotone in (None, False):
                found = k_group_cuts(values, eps_2, ks, monotone=monotone)
                for k in ks:
                    arrays[f"{key}|k|{monotone}|{k}|cuts"] = found[k][0]
                    arrays[f"{key}|k|{monotone}|{k}|cost"] = np.array(found[k][1])
    return arrays


if __name__ == "__main__":
    release_records.write(OUT, algorithms(), record_arrays())
