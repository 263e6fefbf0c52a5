"""The `auto` preset on held-out 2-D sources: ``python benchmarks/selector_eval_2d.py [--results DIR] [--out DIR]``.

The grid counterpart of ``benchmarks/selector_eval.py``.  Needs the 2-D training sweep's results (``make
selector`` writes them to ``results/selector-training-2d``) and DPBench's 2-D sources (``--data-dir``,
else found as ``benchmarks/dpbench_2d_sweep.py`` finds them).  Steps:

1. the ten DPBench 2-D sources, sorted by name, go into five folds of two (every fifth source); for each
   fold and each feature share in :data:`SHARES`, a grid model is trained
   (``dphist.selection.train.train_models(..., dims=2)``) on the *other* eight sources only;
2. the real `auto` preset, with that model as its ``grid_model``, runs on the fold's sources (the
   experiment engine: 64 x 64 cells, scales 1e3 .. 1e8, epsilon 0.01, 0.1, 1, three trials, the same root
   seed as training, so the same DPBench samples every candidate ran on);
3. per setting (source, scale, epsilon, workload), the regret of `auto` and of every candidate against the
   per-input oracle (the candidate of least mean error at the full epsilon: the ten 2-D presets of
   ``benchmarks/dpbench-2d.toml``, every one of them a candidate of `auto`);
4. ``notebooks/data/selection-2d-heldout.csv`` (one row per setting: every preset's and every share's mean
   error, the preset `auto` chose in each trial at the default share) and a Markdown summary on stdout.

Not a speed benchmark: ``make bench`` does not run it.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FOLDS = 5
DOMAIN = 4096                  # 64 x 64 cells
WORKLOADS = ("identity", "prefix", "dpbench-random-2000")
OUT_CSV = ROOT / "notebooks" / "data" / "selection-2d-heldout.csv"


sys.path.insert(0, str(Path(__file__).resolve().parent))
from selector_eval import CHOICE_SHARE, SHARES, auto_label, held_out_table  # noqa: E402  (this folder's 1-D evaluation)


def folds(config) -> list[list[str]]:
    names = sorted(d.key for d in config.datasets)
    return [names[k::FOLDS] for k in range(FOLDS)]


def choices(config, models, held_rows):
    """The preset `auto` chose in each (fold, setting, trial) at the default share: its first part
    rerun with the cell's seed."""
    from dphist.experiments.cells import Cell, cell_data
    from dphist.experiments.engine import plan
    from dphist.selection.auto import AutoPipeline
    sources = {k: np.asarray(v) for k, v in plan(config).job.sources.items()}
    out = {}
    for k, held in enumerate(folds(config)):
        pipes = {wl: AutoPipeline(wl, share=CHOICE_SHARE, grid_model=models[(k, CHOICE_SHARE)]) for wl in WORKLOADS}
        for (dataset, scale, eps) in held_rows:
            if dataset not in held:
                continue
            for trial in range(config.trials):
                for wl in WORKLOADS:
                    cell = Cell(auto_label(wl, CHOICE_SHARE, k), dataset, DOMAIN, int(scale), True, float(eps), trial,
                                config.seed)
                    counts, _ = cell_data(cell, sources[dataset])
                    _, choice = pipes[wl].select(counts, eps, seed=cell.algorithm_seed())
                    out[(dataset, scale, eps, wl, trial)] = choice["label"]
    return out


def all_presets(results_csv):
    """Mean scaled L2 error per (dataset, domain, scale, epsilon) and every preset of the sweep, per workload."""
    import pandas as pd
    df = pd.read_csv(results_csv)
    df = df[df["metric"] == "scaled-l2"]
    return {wl: df[df["workload"] == wl].pivot_table(index=["dataset", "domain", "scale", "epsilon"],
                                                     columns="algorithm", values="value", aggfunc="mean").dropna()
            for wl in WORKLOADS}


def main(argv=None) -> int:
    from dphist.selection.train import error_table, training_config
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None, help="DPBench's 2-D sources (default: found as "
                        "benchmarks/dpbench_2d_sweep.py finds them)")
    parser.add_argument("--results", default="results/selector-training-2d", help="the 2-D training sweep's folder")
    parser.add_argument("--out", default="results/selector-eval-2d", help="fold models and the auto sweeps")
    parser.add_argument("--csv", default=str(OUT_CSV))
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dpbench_2d_sweep import dpbench_dir
    data_dir = args.data_dir or dpbench_dir()
    if data_dir is None:
        parser.error("DPBench's 2-D sources were not found: give --data-dir")
    config = training_config(data_dir, args.results, dims=2)
    tables = error_table(Path(args.results) / "results.csv", config)       # auto's candidates
    everything = all_presets(Path(args.results) / "results.csv")           # every preset of the sweep
    out = Path(args.out)
    models, df = held_out_table(config, tables, everything, out, WORKLOADS, held_out=folds(config), dims=2,
                               domain=int(round(DOMAIN ** 0.5)))
    chosen = choices(config, models, sorted(set(zip(df["dataset"], df["scale"], df["epsilon"]))))
    for trial in range(config.trials):
        df[f"chosen_{CHOICE_SHARE:g}_t{trial}"] = [chosen[(d, s, e, w, trial)] for d, s, e, w in
                                                   zip(df["dataset"], df["scale"], df["epsilon"], df["workload"])]
    df["fold"] = [next(k for k, h in enumerate(folds(config)) if d in h) for d in df["dataset"]]
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.csv, index=False, float_format="%.6g")
    from selector_eval import summary
    print(summary(df, sorted(everything[WORKLOADS[0]].columns)))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    raise SystemExit(main())
