"""UG and AG against the DPBench code on the same sampled 2-D inputs (the differential test).

Not part of `benchmarks/run.py` (it needs the DPBench code, dpcomp_core, checked out in a scratch folder
with an interpreter that runs it: Python 3 with numpy and the `future` package).  Run from a scratch folder:

    python benchmarks/grids_dpbench.py --dpcomp /path/to/dpcomp_core --reference-python /path/to/python \
        --work /scratch/folder --out plugins/grids/dpbench_ratios.csv

1. draws three DPBench 2-D sources (GOWALLA, BJ-CABS-S, ADULT-2D) at 10,000 and 1,000,000 records over
   128 x 128 cells (our generator, seed 7) into ``<work>/inputs.npz``;
2. runs the reference's ``UG_engine().Run`` and ``AG_engine().Run`` (unmodified, imported from the checkout;
   seeds 1000 + t) for eps in {0.1, 1} into ``<work>/ref.npz`` (skipped when that file exists);
3. runs our ``UG`` and ``AG`` (seeds t) with the total declared public (the reference's assumption: the
   same grids) and with the default noisy total, and writes the ratio of mean scaled L2 errors on
   2,000 DPBench random rectangles, ours / reference, per cell.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

SOURCES = ("GOWALLA", "BJ-CABS-S", "ADULT-2D")
SCALES = (10_000, 1_000_000)
EPSILONS = (0.1, 1.0)
SIDE = 128

# run by the reference interpreter: imports UG.py and AG.py without the package's __init__ (which
# imports every algorithm, some needing compiled parts), then calls their Run methods
_DRIVER = r"""
import importlib, sys, types
import numpy as np
root, work, trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, root)
import dpcomp_core
pkg = types.ModuleType("dpcomp_core.algorithm"); pkg.__path__ = [root + "/dpcomp_core/algorithm"]
sys.modules["dpcomp_core.algorithm"] = pkg
UG = importlib.import_module("dpcomp_core.algorithm.UG"); AG = importlib.import_module("dpcomp_core.algorithm.AG")
data = np.load(work + "/inputs.npz")
out = {}
for key in data.files:
    x = data[key].astype(float)
    for eps in (0.1, 1.0):
        for t in range(trials):
            out["UG|%s|%s|%d" % (key, eps, t)] = UG.UG_engine().Run(None, x, eps, 1000 + t)
            out["AG|%s|%s|%d" % (key, eps, t)] = AG.AG_engine().Run(None, x, eps, 1000 + t)
np.savez(work + "/ref.npz", **out)
"""


def make_inputs(shared_2d: Path, work: Path) -> None:
    from dphist.datasets import files, generator
    from dphist.datasets.lookup import load
    files.add_data_dir(shared_2d)
    out = {}
    for src in SOURCES:
        d = load(src)
        for scale in SCALES:
            out[f"{src}|{scale}"] = generator.generate(d, scale=scale, domain=(SIDE, SIDE), seed=7).counts
    np.savez(work / "inputs.npz", **out)


def ratios(work: Path, trials: int):
    import dphist
    from dphist import metrics, workloads
    data, ref = np.load(work / "inputs.npz"), np.load(work / "ref.npz")
    w = workloads.dpbench_random_rectangles((SIDE, SIDE), 2000)
    rows = []
    for alg in ("UG", "AG"):
        for key in data.files:
            x = data[key]
            source, scale = key.split("|")
            for eps in EPSILONS:
                e_ref = np.mean([metrics.scaled_error(w, x, ref[f"{alg}|{key}|{eps}|{t}"].astype(float))
                                 for t in range(trials)])
                pub = dphist.make_algorithm(alg, public_total=float(x.sum()))
                e_pub = np.mean([metrics.scaled_error(w, x, pub.run(x, eps, seed=t).estimate) for t in range(trials)])
                noisy = dphist.make_algorithm(alg)
                e_noisy = np.mean([metrics.scaled_error(w, x, noisy.run(x, eps, seed=t).estimate)
                                   for t in range(trials)])
                rows.append({"algorithm": alg, "source": source, "scale": int(scale), "epsilon": eps,
                             "reference_error": e_ref, "public_total_ratio": e_pub / e_ref,
                             "noisy_total_ratio": e_noisy / e_ref})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dpcomp", required=True, help="a checkout of dpcomp_core (scratch folder)")
    p.add_argument("--reference-python", required=True, help="an interpreter that runs dpcomp_core")
    p.add_argument("--shared", required=True, help="the shared folder holding datasets/peer-dpbench/2D")
    p.add_argument("--work", required=True, help="scratch folder for inputs and the reference's outputs")
    p.add_argument("--trials", type=int, default=8)
    p.add_argument("--out", required=True, help="CSV of the ratios")
    args = p.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "inputs.npz").exists():
        make_inputs(Path(args.shared) / "datasets" / "peer-dpbench" / "2D", work)
    if not (work / "ref.npz").exists():
        subprocess.run([args.reference_python, "-c", _DRIVER, args.dpcomp, str(work), str(args.trials)], check=True)
    import csv
    rows = ratios(work, args.trials)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    worst = max(r["public_total_ratio"] for r in rows), max(r["noisy_total_ratio"] for r in rows)
    print(f"largest ratio ours / DPBench: {worst[0]:.3f} (public total), {worst[1]:.3f} (noisy total)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
