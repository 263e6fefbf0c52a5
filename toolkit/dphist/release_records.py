"""Recorded releases: pin a component's outputs before a refactoring, check them after.

``record`` runs every algorithm on every histogram, epsilon and seed (research mode: seeded,
reproducible) and returns flat arrays keyed ``"algorithm|histogram|epsilon|seed|field"`` for
``numpy.savez_compressed``; ``mismatches`` reruns them and names every key whose estimate,
partition bounds or order is not bit-identical to the record.  The ahp and sortaki plugins used
it to show that their port onto :mod:`dphist.segmentation` changed no release.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

FIELDS = ("estimate", "bounds", "order")
EPSILONS = (0.1, 1.0)
SEEDS = (1, 7)


def small_histograms() -> dict[str, np.ndarray]:
    """Three small seeded synthetic histograms: a skewed one, one with long zero runs (where
    thresholding creates exact ties), a bumpy one; sizes that are not powers of two."""
    from .datasets.synthetic import synthetic
    return {
        "zipf-200": synthetic("zipf", n=200, scale=5_000, seed=3).counts,
        "spikes-300": synthetic("spikes", n=300, scale=2_000, seed=4).counts,
        "mixture-257": synthetic("gaussian-mixture", n=257, scale=20_000, seed=5).counts,
    }


def load_script(path) -> object:
    """Import a fixture-making script by path (tests run with ``--import-mode=importlib``)."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(f"_release_records_{path.parent.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fixture_of(test_dir) -> tuple[object, Mapping]:
    """``(maker, recorded)`` of a plugin's tests folder: its ``make_release_fixture.py`` imported by
    path and its ``fixtures/releases.npz`` loaded."""
    test_dir = Path(test_dir)
    return load_script(test_dir / "make_release_fixture.py"), np.load(test_dir / "fixtures" / "releases.npz")


def _runs(algorithms: Mapping, histograms: Mapping, epsilons: Iterable[float], seeds: Iterable[int]):
    for hname, x in histograms.items():
        for aname, pipeline in algorithms.items():
            for eps in epsilons:
                for seed in seeds:
                    r = pipeline.run(x, eps, seed=seed)
                    yield f"{aname}|{hname}|{eps}|{seed}", (r.estimate, r.partition.bounds, r.partition.order)


def record(algorithms: Mapping, histograms: Mapping | None = None, epsilons=EPSILONS, seeds=SEEDS
           ) -> dict[str, np.ndarray]:
    """Every run's estimate, partition bounds and order, keyed for an ``.npz`` file."""
    histograms = small_histograms() if histograms is None else histograms
    return {f"{key}|{field}": value
            for key, values in _runs(algorithms, histograms, epsilons, seeds)
            for field, value in zip(FIELDS, values)}


def mismatches(recorded: Mapping, algorithms: Mapping, histograms: Mapping | None = None, epsilons=EPSILONS,
               seeds=SEEDS) -> list[str]:
    """Keys ``run|field`` whose rerun differs from ``recorded`` (or is missing from it)."""
    histograms = small_histograms() if histograms is None else histograms
    bad = []
    for key, values in _runs(algorithms, histograms, epsilons, seeds):
        for field, value in zip(FIELDS, values):
            name = f"{key}|{field}"
            if name not in recorded or not np.array_equal(value, recorded[name]):
                bad.append(name)
    return bad


def array_mismatches(recorded: Mapping, arrays: Mapping[str, np.ndarray], prefix: str = "array|") -> list[str]:
    """Keys under ``prefix`` that differ between ``recorded`` and ``arrays``, or are in one only."""
    keys = {k for k in recorded if k.startswith(prefix)} | set(arrays)
    return sorted(k for k in keys if k not in arrays or k not in recorded or not np.array_equal(arrays[k], recorded[k]))


def write(path, algorithms: Mapping, arrays: Mapping[str, np.ndarray] | None = None) -> None:
    """Record ``algorithms`` on the small histograms (plus any extra ``arrays``) into ``path`` (.npz)."""
    out = record(algorithms)
    out.update(arrays or {})
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **out)
