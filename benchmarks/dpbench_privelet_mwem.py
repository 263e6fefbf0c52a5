"""Reference errors of DPBench's Privelet and MWEM on dphist's seeded synthetic histograms.

Writes ``plugins/privelet/dpbench_reference.csv`` and ``plugins/mwem/dpbench_reference.csv``, read by
``notebooks/privelet.ipynb`` and ``notebooks/mwem.ipynb`` (the notebooks cannot run the reference
code: it is not part of dphist).  Two steps, because the reference code needs the ``future``
package and must not be imported next to dphist:

1. ``.venv/bin/python benchmarks/dpbench_privelet_mwem.py inputs /tmp/ref/inputs.npz``
   (dphist's synthetic histograms, the same calls the notebooks make);
2. in a scratch copy of github:dpcomp-org/dpcomp_core with numpy and future installed:
   ``PYTHONPATH=<scratch> <scratch python> benchmarks/dpbench_privelet_mwem.py reference /tmp/ref/inputs.npz``.

Patches to the scratch copy (none to the algorithms): ``dpcomp_core/algorithm/__init__.py`` emptied
(it imports every algorithm, some of them C extensions, and fails with a circular import);
``query_nd_union.ndRangeUnion.slice`` returns a tuple instead of a list (numpy >= 1.23 refuses a
list of slices as an index: the "crash on current numpy").  Nothing of the reference code is
copied here: it is imported from the scratch copy.

Also writes ``plugins/mwem/dpbench_update_reference.csv``: DPBench's MW update (``_updateH``, 100
passes) on the seeded case of :func:`update_case`, for a value-by-value comparison of the update.

Error metric: mean over the prefix workload (DPBench's 1-D workload) of the squared error.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHAPES = ("zipf", "steps", "gaussian-mixture", "spikes")
SCALE = 100_000
EPSILONS = (0.1, 1.0)
PRIVELET_SIZES = (4096, 1000)   # 1000: not a power of two (padding)
PRIVELET_SEEDS = 20
MWEM_SIZE = 4096
MWEM_SEEDS = 10


def update_case():
    """A seeded case for DPBench's MW update (``_updateH``: 100 passes over 6 prefix measurements of 512 bins).

    numpy only, so both steps (and ``notebooks/mwem.ipynb``) rebuild the same inputs.
    """
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 100, 512)
    hi = rng.integers(1, 513, 6)
    answers = np.array([x[:h].sum() + rng.normal(0, 300) for h in hi])
    return x, hi, answers


def histogram(shape: str, n: int):
    """The seeded synthetic histogram the notebooks use (dphist side only)."""
    from dphist.datasets import load
    return load("synthetic", shape=shape, n=n, scale=SCALE, seed=1).counts


def write_inputs(path: str) -> None:
    import numpy as np
    arrays = {f"{shape}-{n}": histogram(shape, n) for shape in SHAPES for n in sorted({*PRIVELET_SIZES, MWEM_SIZE})}
    np.savez(path, **arrays)


def prefix_mse(x, estimate) -> float:
    import numpy as np
    d = np.cumsum(np.asarray(estimate, dtype=float) - x)
    return float(np.mean(d ** 2))


def run_reference(path: str) -> None:
    import numpy as np
    from dpcomp_core import workload
    from dpcomp_core.algorithm import mwemND, privelet
    data = np.load(path)
    rows = []
    for shape in SHAPES:
        for n in PRIVELET_SIZES:
            x = data[f"{shape}-{n}"]
            W = workload.Prefix1D(domain_shape_int=n)
            for eps in EPSILONS:
                for seed in range(PRIVELET_SEEDS):
                    est = privelet.privelet_engine().Run(W, x, eps, seed + 1)
                    rows.append(dict(shape=shape, n=n, epsilon=eps, seed=seed + 1, prefix_mse=prefix_mse(x, est)))
    _write(ROOT / "plugins/privelet/dpbench_reference.csv", rows)
    rows = []
    x = None
    for shape in SHAPES:
        x = data[f"{shape}-{MWEM_SIZE}"]
        W = workload.Prefix1D(domain_shape_int=MWEM_SIZE)
        for eps in EPSILONS:
            for seed in range(MWEM_SEEDS):
                est = mwemND.mwemND_engine().Run(W, x, eps, seed + 1)   # 10 rounds, ratio 0.5, 100 passes
                rows.append(dict(shape=shape, n=MWEM_SIZE, epsilon=eps, seed=seed + 1, prefix_mse=prefix_mse(x, est)))
                print(shape, eps, seed, rows[-1]["prefix_mse"], flush=True)
    _write(ROOT / "plugins/mwem/dpbench_reference.csv", rows)
    from dpcomp_core.query_nd_union import ndRangeUnion
    x, hi, answers = update_case()
    measured = [(ndRangeUnion().add1DRange(0, int(h) - 1, 1.0), a) for h, a in zip(hi, answers)]   # [0, h-1] inclusive
    updated = mwemND.mwemND_engine()._updateH(x.copy(), measured)
    _write(ROOT / "plugins/mwem/dpbench_update_reference.csv",
           [dict(bin=i, value=repr(float(v))) for i, v in enumerate(updated)])


def _write(path: Path, rows) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("inputs", "reference"):
        raise SystemExit("usage: dpbench_privelet_mwem.py inputs|reference PATH.npz")
    (write_inputs if sys.argv[1] == "inputs" else run_reference)(sys.argv[2])
