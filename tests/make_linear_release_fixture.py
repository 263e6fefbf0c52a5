"""Record the releases of the linear and N log N presets (and the partition paths they share).

Run once BEFORE a change to the kernel's ``laplace_*`` primitives, ``partition.py`` or the tree
presets' plugins (``python tests/make_linear_release_fixture.py``); ``test_linear_releases.py``
then checks that every release stays bit-identical.  Recorded on the kernel that measured every
partition through the generic permutation and group machinery and recomputed the prefix sums of
the counts on every ``laplace_intervals`` call; the fast paths for singleton bins in domain order
and the shared prefix sums must reproduce it.  Covers float (seeded) and exact (``noise="exact"``,
seeded words) noise, singleton bins in domain order and in a sorter's order, several groups.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dphist import Pipeline, make_algorithm, release_records

OUT = Path(__file__).resolve().parent / "fixtures" / "linear_releases.npz"

PRESETS = ("identity", "uniform", "Privelet", "H", "H-tilde", "Hb", "unattributed-S-bar", "AHP", "DPCube", "GS",
           "kellaris.S2+H", "kellaris.S1+H", "GreedyH", "DAWA-approx")


def algorithms() -> dict[str, Pipeline]:
    """The presets, and pipelines reaching ``laplace_partition`` / ``laplace_intervals`` through a
    sorter's order (singletons not in domain order) and through groups of several bins."""
    out = {name: make_algorithm(name) for name in PRESETS}
    out["sorted-singletons-group-mean"] = Pipeline("laplace", "noisy-count", "singleton", "group-mean", (0.5, 0.0, 0.5))
    out["sorted-singletons-H"] = Pipeline("laplace", "noisy-count", "singleton", "boost.hierarchical", (0.5, 0.0, 0.5))
    out["whole-group-mean"] = Pipeline(None, None, "whole", "group-mean", (0.0, 0.0, 1.0))
    return out


def histograms() -> dict[str, np.ndarray]:
    """The small histograms of :mod:`dphist.release_records` and one of 4,096 bins."""
    from dphist.datasets.synthetic import synthetic
    return {**release_records.small_histograms(),
            "zipf-4096": synthetic("zipf", n=4096, scale=40_960, seed=6).counts}


EXACT = ("identity", "H", "Privelet", "AHP", "sorted-singletons-group-mean")


def record_arrays() -> dict[str, np.ndarray]:
    """Estimates of a few pipelines with exact discrete noise (seeded words: research mode)."""
    algs, hists = algorithms(), histograms()
    return {f"exact|{a}|{h}|{seed}": algs[a].run(hists[h], 0.5, seed=seed, noise="exact").estimate
            for a in EXACT for h in ("zipf-200", "zipf-4096") for seed in (1, 2)}


if __name__ == "__main__":
    arrays = release_records.record(algorithms(), histograms())
    arrays.update(record_arrays())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {len(arrays)} arrays to {OUT}")
