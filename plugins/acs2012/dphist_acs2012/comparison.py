"""The inputs and scores of the comparison with the DPBench code (``notebooks/acs2012.ipynb``).

``reference_errors.csv`` (beside the package) holds the reference code's errors on these inputs,
produced by ``plugins/acs2012/reference_runs.py``; the notebook runs dphist's presets on the same
inputs and compares.  Synthetic inputs are always available; the DPBench histograms only when
the caller passes the folder of DPBench's 1-D sources (the notebook finds it as ``tests/conftest.py``
documents; a user's machine has no such folder: the notebook then says so).
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from dphist.datasets import synthetic

#: privacy budgets and seeds of the recorded reference runs
EPSILONS = (0.1, 1.0)
SEEDS = 30
SYNTHETIC = ("gaussian-mixture", "steps", "zipf")
#: DPBench 1-D histograms (4,096 bins): a time series, a power law, a sparse one, a dense one
DPBENCH = {"SEARCHLOGS": "SEARCHLOGS.n4096.npy", "HEPTH": "HEPTH.n4096.npy",
           "NETTRACE": "NETTRACE.n4096.npy", "PATENT": "PATENT.n4096.npy"}
REFERENCE_CSV = Path(__file__).resolve().parent.parent / "reference_errors.csv"


def inputs(dpbench_dir: Path | None = None, require_dpbench: bool = False) -> dict[str, np.ndarray]:
    """The comparison's histograms by name (4,096 bins each); the DPBench ones from ``dpbench_dir``
    (the folder of DPBench's 1-D ``.npy`` sources), when given."""
    out = {f"synthetic-{shape}": synthetic(shape, n=4096, scale=100_000, seed=0).counts for shape in SYNTHETIC}
    folder = None if dpbench_dir is None else Path(dpbench_dir)
    if folder is None or not folder.is_dir():
        if require_dpbench:
            raise FileNotFoundError(f"the DPBench 1-D sources are absent (dpbench_dir={dpbench_dir!r})")
        return out
    for name, file in DPBENCH.items():
        out[name] = np.load(folder / file).astype(np.int64)
    return out


def scores(x, estimate) -> dict[str, float]:
    """Per-bin mean squared error and the mean squared error over all n (n + 1) / 2 ranges."""
    e = np.asarray(estimate, dtype=np.float64) - np.asarray(x, dtype=np.float64)
    n = e.size
    p = np.concatenate(([0.0], np.cumsum(e)))
    # sum over i < j of (p_j - p_i)^2 = (n + 1) sum p^2 - (sum p)^2
    all_ranges = ((n + 1) * np.dot(p, p) - p.sum() ** 2) / (n * (n + 1) / 2)
    return {"bin_mse": float(np.mean(e * e)), "range_mse": float(all_ranges)}


def reference_rows(path: Path = REFERENCE_CSV) -> list[dict]:
    """The recorded reference runs (data, algorithm, epsilon, seed, bin_mse, range_mse, seconds)."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for key in ("epsilon", "bin_mse", "range_mse", "seconds"):
            r[key] = float(r[key])
        r["seed"] = int(r["seed"])
    return rows
