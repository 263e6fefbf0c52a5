"""Variants of the 1-D selector's training, compared by simulated held-out regret:
``python benchmarks/selector_variants.py [--results DIR]``.

For each variant (tree depth, rows per leaf, noisy-feature draws per training cell) and each of
``benchmarks/selector_eval.py``'s three folds by source: the trees are trained on the synthetic shapes
and the other twelve sources only (:func:`dphist.selection.train.train_models` with the fold excluded),
then applied to the fold's settings (4,096 bins) with features drawn afresh (another seed than
training's) from the fold's own samples; a chosen candidate's regret is its error at ``(1 - share) eps``
(interpolated in epsilon, :func:`~dphist.selection.train.errors_at`) over the setting's best error at the
full epsilon.  A simulation (no run of `auto`, the errors looked up in the training sweep): cheap, so it
can rank variants, while the stored evaluation (``selector_eval.py``) runs the real preset.  Prints a
Markdown table: the mean simulated regret per workload and variant.  Not a speed benchmark.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

VARIANTS = {
    "packaged (depth 5, 20 rows a leaf, 4 draws)": {},
    "16 draws": {"draws": 16},
    "depth 4": {"max_depth": 4},
    "depth 6": {"max_depth": 6},
    "10 rows a leaf": {"min_leaf": 10},
    "40 rows a leaf": {"min_leaf": 40},
}
DOMAIN = 4096


def simulate(tables, config, held, share=0.1, seed=99, **variant):
    """Per workload: the mean simulated regret of the trees trained without ``held`` on ``held``'s settings."""
    from dphist.selection.regret_tree import RegretTree
    from dphist.selection.train import cell_features, errors_at, train_models
    model = train_models(tables, config, share=share, exclude=held, **variant)
    out = {}
    for wl, table in tables.items():
        t = table[table.index.get_level_values("dataset").isin(held)
                  & (table.index.get_level_values("domain") == DOMAIN)]
        X, setting = cell_features(list(t.index), config, share, 4, seed)
        tree = RegretTree.from_dict(model["workloads"][wl]["tree"])
        chosen = np.array([list(t.columns).index(tree.labels[i]) for i in tree.predict(X)])
        at = errors_at(table, 1 - share).loc[t.index].to_numpy()
        best = t.to_numpy().min(axis=1)
        out[wl] = float((at[setting, chosen] / best[setting]).mean())
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--results", default="results/selector-training")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dpbench_1d import dpbench_dir
    from selector_eval import folds

    from dphist.selection.train import error_table, training_config
    config = training_config(args.data_dir or dpbench_dir(), args.results)
    tables = error_table(Path(args.results) / "results.csv", config)
    rows = []
    for name, variant in VARIANTS.items():
        per_fold = [simulate(tables, config, held, **variant) for held in folds(config)]
        rows.append((name, {wl: np.mean([f[wl] for f in per_fold]) for wl in tables}))
    wls = list(tables)
    print("| variant | " + " | ".join(wls) + " |")
    print("|---|" + "---|" * len(wls))
    for name, r in rows:
        print(f"| {name} | " + " | ".join(f"{r[wl]:.3f}" for wl in wls) + " |")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    raise SystemExit(main())
