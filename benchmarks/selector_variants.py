"""Variants of the selector's training, compared by simulated held-out regret:
``python benchmarks/selector_variants.py [--dims 2] [--results DIR] [--only NAME|NAME]``.

For each variant and each of ``benchmarks/selector_eval.py``'s three folds by source (``--dims 2``:
``benchmarks/selector_eval_2d.py``'s five folds of two 2-D sources, 64 x 64 cells): trees fitted
(:func:`dphist.selection.regret_tree.fit`, as :func:`dphist.selection.train.train_models` fits them) to the
training rows of the synthetic shapes and the other twelve sources only (grids: the other eight
sources), then applied to the fold's settings (4,096 bins or cells) with features drawn afresh (another seed than training's) from the fold's own
samples; a chosen candidate's regret is its error at ``(1 - share) eps`` (interpolated in epsilon,
:func:`~dphist.selection.train.errors_at`) over the setting's best error at the full epsilon.  A
simulation (no run of `auto`, the errors looked up in the training sweep): cheap, so it can rank
variants, while the stored evaluation (``selector_eval.py``) runs the real preset.  The training rows'
features are drawn once per share and number of draws for every setting, then each fold's rows taken
from them (so a packaged variant here is the packaged procedure with other noise draws).

Variants: the tree's size; noisy draws per training cell; the objective (the summed regret, or the
regret clipped, or its logarithm or square root: robust to a few settings of huge regret); features
(ratios of the statistics to the total-variation distance, post-processing of the same noisy values;
or the shape statistics left out); the candidates pruned to those within 1.25 of the oracle in at
least a tenth of the training rows; a bag of 15 trees fitted to bootstrap samples of the training
sources, choosing the least mean leaf regret; the feature share.

Also prints where the regret comes from (:func:`floor_tables`): per signal level ``log10(scale eps)``
the packaged tree size's simulated regret, a perfect choice run at ``(1 - share) eps``, and the best
single preset of that level in hindsight; and a selector that sees the data itself but chooses with
one run's luck (each candidate's error in one trial of the sweep picks it, its error in another
trial scores it, against that trial's best; every ordered pair of trials): what the oracle's run-to-run
luck costs any selector.
``--labels [NAME=DIR ...]`` (:func:`label_comparison`): the training labels compared on the training folds
only, by a nested simulation scored against the 16-trial errors of ``benchmarks/selector_oracle.py``
(:func:`nested_label_regret`): the sweep's two-trial means, the data-independent candidates' errors pooled,
the sweep rerun with more trials (``NAME=DIR``), 16-trial means where they exist; ``--labels --sizes``: the
tree's size and exchangeable settings averaged.  Writes ``notebooks/data/selection-labels.csv`` (or
``selection-sizes.csv``).  ``--skip`` (:func:`public_skip_comparison`): a rule on public inputs that runs a
preset with the full epsilon, measuring no features, where training says it beats the tree (the rule
:func:`dphist.selection.train.skip_cells` packages); ``--skip --dims 2``: the same on the grid model's folds,
scored against the 2-D sweep's three-trial means (``selection-skip-2d.csv``).  ``--gain``
(:func:`gain_comparison`, :func:`in_source_fit`): training variants of :data:`GAIN_VARIANTS` (the statistics as
signal-to-noise ratios, leaf sizes, draws, a candidate dropped, the training sources, the features' budget
split, the share) on the same nested folds against the 16-trial errors, and how low a tree fitted to the
evaluated sources themselves gets (``selection-gain.csv``, ``selection-ceiling.csv``).
Not a speed benchmark.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

import numpy as np

DOMAIN = 4096
SIGNAL_LEVELS = ((-9, 1.5), (1.5, 2.5), (2.5, 3.5), (3.5, 4.5), (4.5, 5.5), (5.5, 99))


def _ratios(X):
    """The coarse and fine statistics over the total-variation distance, appended (no new measurement)."""
    d = np.maximum(X[:, 3], 1e-3)
    return np.column_stack([X, X[:, 4] / d, X[:, 5] / d])


VARIANTS = {
    "depth 5, 20 rows a leaf, 4 draws, share 0.1 (the 1-D model's)": {},
    "depth 3, 50 rows a leaf (the grid model's)": {"max_depth": 3, "min_leaf": 50},
    "depth 2": {"max_depth": 2},
    "16 draws": {"draws": 16},
    "depth 3": {"max_depth": 3},
    "depth 4": {"max_depth": 4},
    "depth 6": {"max_depth": 6},
    "10 rows a leaf": {"min_leaf": 10},
    "100 rows a leaf": {"min_leaf": 100},
    "300 rows a leaf": {"min_leaf": 300},
    "depth 3, 100 rows a leaf": {"max_depth": 3, "min_leaf": 100},
    "depth 4, 100 rows a leaf": {"max_depth": 4, "min_leaf": 100},
    "regret clipped at 3": {"objective": lambda R: np.minimum(R, 3.0)},
    "regret clipped at 10": {"objective": lambda R: np.minimum(R, 10.0)},
    "log regret": {"objective": np.log},
    "square root of regret": {"objective": np.sqrt},
    "+ statistic ratios": {"features": _ratios},
    "no shape statistics": {"features": lambda X: X[:, [0, 1, 2, 6, 7]]},
    "candidates pruned": {"prune": 0.1},
    "bag of 15 trees": {"bag": 15},
    "share 0.02": {"share": 0.02},
    "share 0.05": {"share": 0.05},
    "share 0.15": {"share": 0.15},
    "share 0.2": {"share": 0.2},
}


class Simulation:
    """The training sweep's error tables and, per (share, draws), every setting's noisy features."""

    def __init__(self, tables, config, folds):
        self.tables, self.config, self.folds = tables, config, folds
        self._features = {}

    def features(self, share, draws, nonzero=None, seeds=(2017, 99)):
        """Training rows' and evaluation rows' features (``seeds``: their noise draws)."""
        from dphist.selection.train import cell_features
        key = (share, draws, nonzero, seeds)
        if key not in self._features:
            index = list(next(iter(self.tables.values())).index)
            self._features[key] = (cell_features(index, self.config, share, draws, seeds[0], nonzero=nonzero),
                                   cell_features(index, self.config, share, 4, seeds[1], nonzero=nonzero))
        return self._features[key]

    def chosen_regrets(self, wl, share=0.1, draws=4, max_depth=5, min_leaf=20, objective=None, features=None,
                       prune=None, bag=None, nonzero=None, seeds=(2017, 99), exclude=()):
        """Per held-out row (every fold): the chosen candidate's regret, and the row's setting.
        ``nonzero``: the weight of the noisy non-zero count (:func:`~dphist.selection.train.cell_features`);
        ``seeds``: the training and evaluation feature draws; ``exclude``: sources left out of training
        and evaluation alike (an outer fold, for the nested comparison)."""
        from dphist.selection.regret_tree import fit
        from dphist.selection.train import errors_at, regret_matrix
        table = self.tables[wl]
        (Xtr, str_), (Xev, sev) = self.features(share, draws, nonzero, seeds)
        datasets = table.index.get_level_values("dataset")
        at = errors_at(table, 1 - share).to_numpy()
        R = regret_matrix(at, table.to_numpy().min(axis=1))
        fx = features or (lambda X: X)
        out, settings = [], []
        for held in self.folds:
            train = np.asarray(~datasets.isin(held) & ~datasets.isin(exclude))[str_]
            X, S = Xtr[train], str_[train]
            cols = np.arange(R.shape[1])
            if prune is not None:        # candidates within 1.25 of the oracle in at least `prune` of the rows
                cols = np.flatnonzero((R[S] <= 1.25).mean(axis=0) >= prune)
            names = [f"f{i}" for i in range(fx(X[:1]).shape[1])]
            labels = [str(c) for c in cols]
            target = R[S][:, cols] if objective is None else objective(R[S][:, cols])
            if bag:
                rng = np.random.default_rng(5)
                sources = np.array(sorted(set(datasets[np.asarray(~datasets.isin(held) & ~datasets.isin(exclude))])))
                trees = []
                for _ in range(bag):
                    weight = {s: 0 for s in sources}
                    for s in rng.choice(sources, sources.size, replace=True):
                        weight[s] += 1
                    rows = np.repeat(np.arange(S.size), [weight[d] for d in datasets[S]])
                    tree = fit(fx(X[rows]), target[rows], labels, names, max_depth=max_depth, min_leaf=min_leaf)
                    leaves = tree.leaves(fx(X[rows]))
                    mean = np.zeros((tree.feature.size, cols.size))
                    for leaf in np.unique(leaves):
                        mean[leaf] = R[S[rows][leaves == leaf]][:, cols].mean(axis=0)
                    trees.append((tree, mean))
            else:
                tree = fit(fx(X), target, labels, names, max_depth=max_depth, min_leaf=min_leaf)
            held_rows = np.asarray(datasets.isin(held) & (table.index.get_level_values("domain") == DOMAIN))[sev]
            Xe, Se = Xev[held_rows], sev[held_rows]
            if bag:
                chosen = cols[sum(mean[t.leaves(fx(Xe))] for t, mean in trees).argmin(axis=1)]
            else:
                chosen = cols[tree.predict(fx(Xe))]
            out.append(at[Se, chosen] / table.to_numpy().min(axis=1)[Se])
            settings.append(Se)
        return np.concatenate(out), np.concatenate(settings)


def floor_tables(sim, results_csv, share=0.1, **tree) -> str:
    """Markdown: where the regret comes from (module docstring); ``tree``: the tree's size."""
    import pandas as pd

    from dphist.selection.train import candidates, errors_at, regret_matrix
    lines = ["| workload | signal log10(scale eps) | settings | the packaged tree size (simulated) | perfect choice at "
             f"{1 - share:g} eps | best single preset of the level (hindsight) |", "|---|---|---|---|---|---|"]
    for wl, table in sim.tables.items():
        regret, S = sim.chosen_regrets(wl, share=share, **tree)
        index = table.index
        signal = np.log10(index.get_level_values("scale").to_numpy(float)
                          * index.get_level_values("epsilon").to_numpy(float))[S]
        R = regret_matrix(errors_at(table, 1 - share).to_numpy(), table.to_numpy().min(axis=1))[S]
        for lo, hi in SIGNAL_LEVELS:
            m = (signal >= lo) & (signal < hi)
            level = R[m].mean(axis=0)
            best = int(np.argmin(level))
            lines.append(f"| {wl} | [{lo:g}, {hi:g}) | {np.unique(S[m]).size} | {regret[m].mean():.3f} | "
                         f"{R[m].min(axis=1).mean():.3f} | {table.columns[best].split('@')[0]} {level[best]:.3f} |")
        lines.append(f"| {wl} | all | {np.unique(S).size} | {regret.mean():.3f} | {R.min(axis=1).mean():.3f} | "
                     f"{sum(R[(signal >= lo) & (signal < hi)].mean(axis=0).min() * ((signal >= lo) & (signal < hi)).sum() for lo, hi in SIGNAL_LEVELS) / S.size:.3f} |")
    df = pd.read_csv(results_csv)
    df = df[(df["metric"] == "scaled-l2") & (df["domain"] == DOMAIN) & ~df["dataset"].str.startswith("synthetic")]
    lines += ["", "| workload | settings | one run's luck: chosen by one trial, scored on another against its "
              "best | the oracle (least mean over the trials) over the mean of the per-trial bests |", "|---|---|---|---|"]
    for wl in sim.tables:
        labels = list(candidates(sim.config, wl))
        sub = df[(df["workload"] == wl) & df["algorithm"].isin(labels)]
        wide = sub.pivot_table(index=["dataset", "scale", "epsilon"], columns=["trial", "algorithm"], values="value")
        E = [wide[t][labels].to_numpy() for t in sorted(sub["trial"].unique())]
        rows = np.arange(E[0].shape[0])
        luck = np.concatenate([E[b][rows, E[a].argmin(axis=1)] / E[b].min(axis=1)
                               for a, b in itertools.permutations(range(len(E)), 2)])
        oracle = (sum(E) / len(E)).min(axis=1) / (sum(e.min(axis=1) for e in E) / len(E))
        lines.append(f"| {wl} | {rows.size} | {luck.mean():.3f} | {oracle.mean():.3f} |")
    return "\n".join(lines)


#: the noisy non-zero count's weight in the features' budget (:func:`nonzero_comparison`); None: left out
NONZERO_WEIGHTS = (None, 0.15, 0.3)
#: where ``--nonzero`` writes its table (read by notebooks/selection.ipynb)
NONZERO_CSV = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "selection-nonzero.csv"


def nonzero_comparison(sim, repeats: int = 5):
    """The packaged features against the same with a noisy count of non-zero bins added
    (:data:`NONZERO_WEIGHTS` of the features' budget, taken evenly from the three statistics), measured
    on the training folds only: for each outer fold (:func:`selector_eval.folds`) its sources are left
    out entirely, the other twelve split into three inner folds (sorted, every third), trees fitted
    without the inner fold and scored on it; the mean simulated regret over every inner held-out row of
    every outer fold.  ``repeats`` pairs of feature-noise seeds (training, evaluation) give the spread.
    Also the ordinary simulation (the outer folds held out), for reference.  A frame: one row per
    weight (``0``: the packaged features), workload and seed pair."""
    import pandas as pd
    real = sorted({d for fold in sim.folds for d in fold})
    outer = list(sim.folds)
    rows = []
    for r in range(repeats):
        seeds = (2017 + r, 99 + r)
        for w in NONZERO_WEIGHTS:
            for wl in sim.tables:
                regs = []
                for held in outer:
                    inner = [d for d in real if d not in held]
                    sim.folds = [inner[k::3] for k in range(3)]
                    try:
                        regs.append(sim.chosen_regrets(wl, nonzero=w, seeds=seeds, exclude=held)[0])
                    finally:
                        sim.folds = outer
                rows.append({"weight": w or 0.0, "workload": wl, "seed": r,
                             "nested": float(np.concatenate(regs).mean()),
                             "held_out": float(sim.chosen_regrets(wl, nonzero=w, seeds=seeds)[0].mean())})
    return pd.DataFrame(rows)


def nonzero_markdown(frame) -> str:
    """Markdown of :func:`nonzero_comparison`: mean and spread over the seed pairs, the difference to the
    packaged features paired by seed."""
    base = frame[frame["weight"] == 0].set_index(["workload", "seed"])
    lines = ["| non-zero count's weight | workload | nested simulated regret: mean (sd over seeds) | "
             "difference to the packaged features: mean (sd), paired by seed | held-out folds: mean |",
             "|---|---|---|---|---|"]
    for (w, wl), g in frame.groupby(["weight", "workload"]):
        g = g.set_index(["workload", "seed"])
        d = g["nested"] - base["nested"].loc[g.index]
        lines.append(f"| {'none (packaged)' if w == 0 else f'{w:g}'} | {wl} | {g['nested'].mean():.3f} "
                     f"({g['nested'].std():.3f}) | {d.mean():+.3f} ({d.std():.3f}) | {g['held_out'].mean():.3f} |")
    return "\n".join(lines)


#: where ``--labels`` writes its table (read by notebooks/selection.ipynb)
LABELS_CSV = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "selection-labels.csv"
#: where ``--labels --sizes`` writes its table
SIZES_CSV = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "selection-sizes.csv"
#: the 16-trial errors of every candidate on the 18 sources (``benchmarks/selector_oracle.py``'s table)
ORACLE_CSV = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "selection-oracle.csv"


def sixteen_trial_tables(tables, oracle_csv=ORACLE_CSV):
    """Per workload, the candidates' mean errors over every trial of ``oracle_csv`` (16 trials, 4,096 bins,
    three scales), indexed and labelled as the training tables (``tables``)."""
    import pandas as pd
    o = pd.read_csv(oracle_csv)
    out = {}
    for wl, table in tables.items():
        m = o[o["workload"] == wl].groupby(["dataset", "scale", "epsilon"]).mean(numeric_only=True)
        cols = list(table.columns)
        m = m[[c.split("@")[0] for c in cols]].set_axis(cols, axis=1)
        m.index = pd.MultiIndex.from_tuples([(d, DOMAIN, s, e) for d, s, e in m.index], names=table.index.names)
        out[wl] = m
    return out


def nested_label_regret(sim, label_tables, label_fn=None, seeds=(2017, 99), share=0.1, draws=4, max_depth=5,
                        min_leaf=20, eval_trials=16, oracle_csv=ORACLE_CSV):
    """The nested simulation scored against 16-trial errors, measured on training folds only: for each outer
    fold (:func:`selector_eval.folds`) its six sources are left out entirely; the other twelve are split
    into three inner folds (sorted, every third); trees are fitted to the rows of the synthetic shapes and
    the other eight sources, with training regrets from ``label_tables`` (per workload: mean errors per
    setting, the index of the training tables) passed through ``label_fn`` (e.g.
    :func:`~dphist.selection.train.expected_errors`) on the training sources only, then applied to the
    inner fold's settings of the 16-trial run (4,096 bins, three scales) with features drawn afresh from
    each of its trials' samples; the chosen candidate's regret is its 16-trial mean error at ``(1 - share)
    eps`` (interpolated) over the least 16-trial mean at ``eps``.  Returns a frame: workload, outer fold,
    mean regret over the inner held-out rows."""
    import pandas as pd
    from dataclasses import replace

    from dphist.selection.regret_tree import fit
    from dphist.selection.train import cell_features, errors_at, regret_matrix
    truth = sixteen_trial_tables(sim.tables, oracle_csv)
    real = sorted({d for fold in sim.folds for d in fold})
    wide = replace(sim.config, trials=eval_trials)
    rows = []
    for wl, labels in label_tables.items():
        at, best = errors_at(truth[wl], 1 - share), truth[wl].min(axis=1)
        for k, held in enumerate(sim.folds):
            inner = [d for d in real if d not in held]
            regs = []
            for j in range(3):
                out = set(held) | set(inner[j::3])
                train = labels[~labels.index.get_level_values("dataset").isin(out)]
                L = train if label_fn is None else label_fn(train)
                R = regret_matrix(errors_at(L, 1 - share).to_numpy(), L.to_numpy().min(axis=1))
                X, S = _cached(sim, ("train", tuple(L.index), share, draws, seeds[0] + 1000 * k + 100 * j),
                               lambda: cell_features(list(L.index), sim.config, share, draws,
                                                     seeds[0] + 1000 * k + 100 * j))
                tree = fit(X, R[S], list(L.columns), [f"f{i}" for i in range(X.shape[1])], max_depth=max_depth,
                           min_leaf=min_leaf)
                ev = truth[wl][truth[wl].index.get_level_values("dataset").isin(inner[j::3])].index
                Xe, Se = _cached(sim, ("eval", tuple(ev), share, seeds[1] + 1000 * k + 100 * j),
                                 lambda: cell_features(list(ev), wide, share, 1, seeds[1] + 1000 * k + 100 * j))
                chosen = tree.predict(Xe)
                regs.append(at.loc[ev].to_numpy()[Se, chosen] / best.loc[ev].to_numpy()[Se])
            rows.append({"workload": wl, "outer": k, "regret": float(np.concatenate(regs).mean())})
    return pd.DataFrame(rows)


#: where ``--skip`` writes its table (read by notebooks/selection.ipynb)
SKIP_CSV = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "selection-skip.csv"
#: ``--skip --dims 2``: the same nested comparison on the grid model's folds
SKIP_2D_CSV = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "selection-skip-2d.csv"
#: the held-out regret table with the rule (``--skip``)
SKIP_HELD_CSV = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "selection-skip-heldout.csv"


def public_skip_comparison(sim, repeats: int = 3, share=0.1, draws=4, oracle_csv=ORACLE_CSV, dims: int = 1):
    """A rule on public inputs only, measured like :func:`nested_label_regret` (the same nested folds, the
    packaged labels and tree size, scored against the 16-trial errors): per public cell (domain size,
    epsilon) of the training rows, the candidate of least mean regret at the *full* epsilon (no features
    measured, nothing of epsilon spent on them) is run instead of the tree wherever its training regret is
    below the tree's own (in-sample) training regret on those rows.  Returns a frame: workload, outer
    fold, seed, the tree's regret, the rule's, and the public cells it skips (``eps:preset``).
    ``dims=2``: the grid model's folds and tree size, scored against the 2-D sweep's own three-trial means
    (no 16-trial run on grids), at 64 x 64 cells."""
    import pandas as pd
    from dataclasses import replace

    from dphist.selection.regret_tree import fit
    from dphist.selection.train import MAX_DEPTH, MAX_DEPTH_2D, MIN_LEAF, MIN_LEAF_2D, cell_features, errors_at, regret_matrix
    if dims == 1:
        truth, wide, size = sixteen_trial_tables(sim.tables, oracle_csv), replace(sim.config, trials=16), (MAX_DEPTH, MIN_LEAF)
    else:
        truth, wide, size = sim.tables, sim.config, (MAX_DEPTH_2D, MIN_LEAF_2D)
    real = sorted({d for fold in sim.folds for d in fold})
    rows = []
    for r in range(repeats):
        seeds = (2017 + r, 99 + r)
        for wl, labels in sim.tables.items():
            full = truth[wl]
            at, best = errors_at(full, 1 - share), full.min(axis=1)
            for k, held in enumerate(sim.folds):
                inner = [d for d in real if d not in held]
                tree_regs, skip_regs, skipped = [], [], set()
                for j in range(3):
                    train = labels[~labels.index.get_level_values("dataset").isin(set(held) | set(inner[j::3]))]
                    E = train.to_numpy()
                    R = regret_matrix(errors_at(train, 1 - share).to_numpy(), E.min(axis=1))
                    R_full = regret_matrix(E, E.min(axis=1))
                    X, S = _cached(sim, ("train", tuple(train.index), share, draws, seeds[0] + 1000 * k + 100 * j),
                                   lambda: cell_features(list(train.index), sim.config, share, draws,
                                                         seeds[0] + 1000 * k + 100 * j))
                    tree = fit(X, R[S], list(train.columns), [f"f{i}" for i in range(X.shape[1])], max_depth=size[0],
                               min_leaf=size[1])
                    in_sample = R[S, tree.predict(X)]
                    cells = {}
                    public = list(zip(train.index.get_level_values("domain"), train.index.get_level_values("epsilon")))
                    for cell in set(public):
                        m = np.array([c == cell for c in public])
                        c = int(np.argmin(R_full[m].mean(axis=0)))
                        if R_full[m, c].mean() < in_sample[m[S]].mean():
                            cells[cell] = c
                    ev = full[full.index.get_level_values("dataset").isin(inner[j::3])
                              & (full.index.get_level_values("domain") == DOMAIN)].index
                    Xe, Se = _cached(sim, ("eval", tuple(ev), share, seeds[1] + 1000 * k + 100 * j),
                                     lambda: cell_features(list(ev), wide, share, 1, seeds[1] + 1000 * k + 100 * j))
                    chosen = tree.predict(Xe)
                    tree_reg = at.loc[ev].to_numpy()[Se, chosen] / best.loc[ev].to_numpy()[Se]
                    rule = np.array([cells.get((DOMAIN, e), -1) for e in ev.get_level_values("epsilon")])[Se]
                    skip_reg = np.where(rule >= 0, full.loc[ev].to_numpy()[Se, np.maximum(rule, 0)]
                                        / best.loc[ev].to_numpy()[Se], tree_reg)
                    tree_regs.append(tree_reg)
                    skip_regs.append(skip_reg)
                    skipped |= {f"{e:g}:{train.columns[c].split('@')[0]}" for (n, e), c in cells.items() if n == DOMAIN}
                rows.append({"workload": wl, "outer": k, "seed": r, "tree": float(np.concatenate(tree_regs).mean()),
                             "rule": float(np.concatenate(skip_regs).mean()), "skipped": " ".join(sorted(skipped))})
                print(rows[-1], flush=True)
    return pd.DataFrame(rows)


def public_rule(train, share=0.1, draws=4, seed=2017, config=None):
    """The public skip rule of :func:`public_skip_comparison` learned on ``train`` (one workload's training
    table) with the packaged procedure's trees (:func:`~dphist.selection.train.train_models`' features, seed and
    size): ``{(domain, epsilon): candidate label}`` where a candidate at the full epsilon beats the tree."""
    from dphist.selection.regret_tree import fit
    from dphist.selection.train import MAX_DEPTH, MIN_LEAF, cell_features, errors_at, regret_matrix
    E = train.to_numpy()
    R = regret_matrix(errors_at(train, 1 - share).to_numpy(), E.min(axis=1))
    R_full = regret_matrix(E, E.min(axis=1))
    X, S = cell_features(list(train.index), config, share, draws, seed)
    tree = fit(X, R[S], list(train.columns), [f"f{i}" for i in range(X.shape[1])], max_depth=MAX_DEPTH,
               min_leaf=MIN_LEAF)
    in_sample = R[S, tree.predict(X)]
    public = list(zip(train.index.get_level_values("domain"), train.index.get_level_values("epsilon")))
    out = {}
    for cell in sorted(set(public)):
        m = np.array([c == cell for c in public])
        c = int(np.argmin(R_full[m].mean(axis=0)))
        if R_full[m, c].mean() < in_sample[m[S]].mean():
            out[cell] = train.columns[c]
    return out


def held_out_with_rule(sim, oracle_csv=ORACLE_CSV):
    """The held-out 16-trial table (``oracle_csv``: every candidate's and the packaged `auto`'s errors per
    trial) with the public rule learned on each fold's training sources (:func:`public_rule`, the sources
    of the other two folds and the synthetic shapes): in the settings it covers, `auto`'s error replaced by
    the rule's candidate's error at the full epsilon in the same trial (that preset's own run of the same
    sample).  Returns ``(frame, rules)``: the frame as ``selector_oracle.trial_table`` with the column
    ``auto`` so replaced, and per (workload, fold) the rule."""
    import pandas as pd
    df = pd.read_csv(oracle_csv)
    rules = {}
    for wl, table in sim.tables.items():
        for k, held in enumerate(sim.folds):
            train = table[~table.index.get_level_values("dataset").isin(held)]
            rule = public_rule(train, config=sim.config)
            rules[(wl, k)] = rule
            for (n, eps), label in rule.items():
                if n != DOMAIN:
                    continue
                m = (df["workload"] == wl) & df["dataset"].isin(held) & np.isclose(df["epsilon"], eps)
                df.loc[m, "auto"] = df.loc[m, label.split("@")[0]]
    return df, rules


def _cached(sim, key, make):
    """``make()`` once per ``key`` (the noisy feature rows, the same for every workload and label variant)."""
    store = sim.__dict__.setdefault("_rows", {})
    if key not in store:
        store[key] = make()
    return store[key]


def exchangeable_errors(table):
    """Every candidate's errors averaged over the settings of one dataset, domain size and signal ``scale x
    epsilon`` (DPBench's scale-epsilon exchangeability: exact for the data-independent presets, approximate
    for the others, whose samples at different scales differ)."""
    index = table.index
    signal = np.round(np.log10(index.get_level_values("scale").to_numpy(float)
                               * index.get_level_values("epsilon").to_numpy(float)), 6)
    return table.groupby([index.get_level_values("dataset"), index.get_level_values("domain"), signal]).transform("mean")


#: the tree sizes (depth, rows a leaf) of ``--sizes``, beside the packaged (5, 20)
SIZES = ((4, 10), (4, 20), (5, 10), (5, 50), (6, 20))


def label_comparison(sim, more_trials=(), repeats: int = 5, sizes=False):
    """Training labels compared by :func:`nested_label_regret`: the sweep's own two-trial means; the same
    with the data-independent candidates' errors pooled (:func:`~dphist.selection.train.expected_errors`);
    each table of ``more_trials`` (``{name: tables}``: the training sweep rerun with more trials, same
    root seed), plain and pooled; and the 16-trial means where the oracle run has them (4,096 bins,
    three scales: the label noise of the evaluated settings removed, the rest two-trial).  ``sizes``:
    instead, the two-trial labels with the tree sizes of :data:`SIZES`, and every candidate's errors
    averaged over exchangeable settings (:func:`exchangeable_errors`).  ``repeats`` pairs of feature-noise
    seeds.  A frame: variant, workload, outer fold, seed, regret."""
    import pandas as pd
    from dphist.selection.train import expected_errors
    variants = {"two trials": (sim.tables, None, {})}
    if sizes:
        for depth, leaf in SIZES:
            variants[f"two trials, depth {depth}, {leaf} rows a leaf"] = (
                sim.tables, None, {"max_depth": depth, "min_leaf": leaf})
        variants["two trials, exchangeable settings averaged"] = (sim.tables, exchangeable_errors, {})
    else:
        sixteen = sixteen_trial_tables(sim.tables)
        where_run = {}
        for wl, t in sim.tables.items():
            t = t.copy()
            t.loc[sixteen[wl].index, :] = sixteen[wl][t.columns].to_numpy()
            where_run[wl] = t
        variants["two trials, data-independent pooled"] = (sim.tables, expected_errors, {})
        for name, tables in dict(more_trials).items():
            variants[name] = (tables, None, {})
            variants[f"{name}, data-independent pooled"] = (tables, expected_errors, {})
        variants["16 trials where the oracle run has them"] = (where_run, None, {})
    frames = []
    for r in range(repeats):
        for name, (tables, fn, size) in variants.items():
            f = nested_label_regret(sim, tables, fn, seeds=(2017 + r, 99 + r), **size)
            frames.append(f.assign(variant=name, seed=r))
            print(name, r, f.groupby("workload")["regret"].mean().round(4).to_dict(), flush=True)
    return pd.concat(frames, ignore_index=True)


def labels_markdown(frame) -> str:
    """Markdown of :func:`label_comparison`: mean regret (sd over seeds) and the difference to the two-trial
    labels, paired by seed (mean, sd, and the sign in each outer fold)."""
    per_seed = frame.groupby(["variant", "workload", "seed"])["regret"].mean()
    base = per_seed.xs("two trials", level="variant")
    per_fold = frame.groupby(["variant", "workload", "outer"])["regret"].mean()
    base_fold = per_fold.xs("two trials", level="variant")
    lines = ["| training labels | workload | nested regret: mean (sd over seeds) | difference to two trials: mean "
             "(sd), paired by seed | difference per outer fold |", "|---|---|---|---|---|"]
    for variant, wl in itertools.product(frame["variant"].unique(), sorted(frame["workload"].unique())):
        g = per_seed.loc[(variant, wl)]
        d = g - base.loc[wl]
        folds = per_fold.loc[(variant, wl)] - base_fold.loc[wl]
        lines.append(f"| {variant} | {wl} | {g.mean():.3f} ({g.std():.3f}) | {d.mean():+.3f} ({d.std():.3f}) | "
                     + " / ".join(f"{v:+.3f}" for v in folds) + " |")
    return "\n".join(lines)


#: where ``--gain`` writes its table (read by notebooks/selection.ipynb)
GAIN_CSV = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "selection-gain.csv"
#: where ``--gain`` writes the in-source diagnosis (:func:`in_source_fit`)
CEILING_CSV = Path(__file__).resolve().parent.parent / "notebooks" / "data" / "selection-ceiling.csv"


def _z_scores(X, extra):
    """The three shape statistics as signal-to-noise ratios: each noisy statistic over its Laplace scale
    (``sensitivity / (eps_f w)``: public, from the domain size, epsilon, share and weights), log10 of it
    floored at 0.1, in place of the statistics' share of the noisy total (post-processing)."""
    z = extra["stats"] / extra["scale"]
    return np.column_stack([X[:, [0, 1, 2, 6, 7]], np.log10(np.maximum(z, 0.1))])


#: the variants of ``--gain`` (:func:`gain_comparison`): each changes the packaged procedure (share 0.1,
#: four draws, depth 5, 20 rows a leaf, every candidate, the packaged training sources and weights)
GAIN_VARIANTS = {
    "packaged (share 0.1, 4 draws, depth 5, 20 rows a leaf)": {},
    "z-scores of the statistics in place of their shares": {"features": _z_scores},
    "40 rows a leaf": {"min_leaf": 40},
    "80 rows a leaf": {"min_leaf": 80},
    "16 draws, 80 rows a leaf": {"draws": 16, "min_leaf": 80},
    "DAWA-approx dropped": {"drop": ("DAWA-approx",)},
    "no synthetic shapes": {"sources": lambda names: ~np.char.startswith(names, "synthetic")},
    "total weight 0.2 (statistics 0.267 each)": {"weights": (0.2, 0.8 / 3, 0.8 / 3, 0.8 / 3)},
    "total weight 0.7 (statistics 0.1 each)": {"weights": (0.7, 0.1, 0.1, 0.1)},
    "share 0.05": {"share": 0.05},
    "share 0.02": {"share": 0.02},
    "share 0.05, 16 draws, 80 rows a leaf": {"share": 0.05, "draws": 16, "min_leaf": 80},
    "share 0.05, z-scores": {"share": 0.05, "features": _z_scores},
}


def exact_statistics(index, config):
    """Per (setting of ``index``, trial of ``config``): the sample's total, exact ``(D, C, W)``, domain
    size and epsilon, and the setting's position: the noise-free part of :func:`~dphist.selection.train.
    cell_features`, computed once so that each noise draw costs only the Laplace draws."""
    from dphist.experiments.cells import Cell, cell_data
    from dphist.experiments.engine import plan
    from dphist.selection.features import statistics
    from dphist.selection.train import plan_sources
    sources = plan_sources(config, plan)
    total, stats, n, eps, setting = [], [], [], [], []
    for i, (dataset, domain, scale, e) in enumerate(index):
        for trial in range(config.trials):
            counts, _ = cell_data(Cell("-", dataset, int(domain), int(scale), True, float(e), trial, config.seed),
                                  sources[dataset])
            total.append(counts.sum())
            stats.append(statistics(counts))
            n.append(counts.size)
            eps.append(float(e))
            setting.append(i)
    return {"total": np.array(total, float), "stats": np.array(stats), "n": np.array(n), "eps": np.array(eps),
            "setting": np.array(setting)}


def noisy_rows(exact, share, draws, seed, weights=None):
    """``(X, setting, extra)``: :func:`exact_statistics`' rows with ``draws`` fresh Laplace draws each, as
    ``auto`` measures them (``weights``: total and the three statistics, default the packaged 0.4 / 0.2 /
    0.2 / 0.2); ``extra``: the noisy statistics and their Laplace scales (for :func:`_z_scores`)."""
    from dphist.selection.features import TOTAL_WEIGHT, feature_matrix, statistic_sensitivities
    w = np.array(weights or (TOTAL_WEIGHT, *([(1 - TOTAL_WEIGHT) / 3] * 3)))
    rng = np.random.default_rng(seed)
    rep = lambda a: np.repeat(a, draws, axis=0)
    eps_f = rep(exact["eps"]) * share
    total = rep(exact["total"]) + rng.laplace(0, 1, eps_f.size) / (eps_f * w[0])
    sens = {int(v): statistic_sensitivities(int(v)) for v in np.unique(exact["n"])}
    scale = rep(np.array([sens[int(v)] for v in exact["n"]])) / (eps_f[:, None] * w[1:])
    stats = rep(exact["stats"]) + rng.laplace(0, 1, scale.shape) * scale
    X = feature_matrix(total, stats, rep(exact["n"]), rep(exact["eps"]) * (1 - share))
    return X, rep(exact["setting"]), {"stats": stats, "scale": scale}


def gain_comparison(sim, variants=None, repeats: int = 5, oracle_csv=ORACLE_CSV):
    """Training variants (:data:`GAIN_VARIANTS`) measured on the training folds only, scored against the
    16-trial errors as :func:`nested_label_regret` scores them: for each outer fold its six sources are
    left out entirely, the other twelve split into three inner folds (sorted, every third); trees are
    fitted to the synthetic shapes and the other eight sources and applied to the inner fold's settings
    of the 16-trial run (4,096 bins, three scales), one feature draw from each trial's sample; a choice's
    regret is the candidate's 16-trial mean error at ``(1 - share) eps`` over the least 16-trial mean at
    ``eps``.  ``repeats`` pairs of feature-noise seeds, the same draws for every variant of a seed and
    share.  A frame: variant, workload, seed, mean regret over every inner held-out row."""
    import pandas as pd
    from dataclasses import replace

    from dphist.selection.regret_tree import fit
    from dphist.selection.train import errors_at, regret_matrix
    variants = GAIN_VARIANTS if variants is None else variants
    truth = sixteen_trial_tables(sim.tables, oracle_csv)
    train_index = list(next(iter(sim.tables.values())).index)
    eval_index = list(next(iter(truth.values())).index)
    ex_train = _cached(sim, ("exact", "train"), lambda: exact_statistics(train_index, sim.config))
    ex_eval = _cached(sim, ("exact", "eval"), lambda: exact_statistics(eval_index, replace(sim.config, trials=16)))
    real = sorted({d for fold in sim.folds for d in fold})
    rows = []
    for r in range(repeats):
        for name, v in variants.items():
            share, draws = v.get("share", 0.1), v.get("draws", 4)
            Xa, Sa, ea = _cached(sim, ("gain-train", share, draws, v.get("weights"), r),
                                 lambda: noisy_rows(ex_train, share, draws, 2017 + r, v.get("weights")))
            Xv, Sv, ev = _cached(sim, ("gain-eval", share, v.get("weights"), r),
                                 lambda: noisy_rows(ex_eval, share, 1, 99 + r, v.get("weights")))
            names_train = np.array([k[0] for k in train_index])[Sa]
            names_eval = np.array([k[0] for k in eval_index])[Sv]
            fx = v.get("features") or (lambda X, extra: X)
            for wl, table in sim.tables.items():
                labels = list(table.columns)
                keep = np.array([i for i, lab in enumerate(labels) if lab.split("@")[0] not in v.get("drop", ())])
                R = regret_matrix(errors_at(table, 1 - share).to_numpy(), table.to_numpy().min(axis=1))[:, keep]
                at = errors_at(truth[wl], 1 - share).to_numpy()
                best = truth[wl].min(axis=1).to_numpy()
                regs = []
                for held in sim.folds:
                    inner = [d for d in real if d not in held]
                    for j in range(3):
                        m = ~np.isin(names_train, list(set(held) | set(inner[j::3])))
                        if "sources" in v:
                            m &= v["sources"](names_train.astype(str))
                        X = fx(Xa[m], {k: a[m] for k, a in ea.items()})
                        tree = fit(X, R[Sa[m]], [labels[i] for i in keep], [f"f{i}" for i in range(X.shape[1])],
                                   max_depth=v.get("max_depth", 5), min_leaf=v.get("min_leaf", 20))
                        e = np.isin(names_eval, inner[j::3])
                        chosen = keep[tree.predict(fx(Xv[e], {k: a[e] for k, a in ev.items()}))]
                        regs.append(at[Sv[e], chosen] / best[Sv[e]])
                rows.append({"variant": name, "workload": wl, "seed": r, "regret": float(np.concatenate(regs).mean())})
            print(name, r, {x["workload"]: round(x["regret"], 4) for x in rows[-len(sim.tables):]}, flush=True)
    return pd.DataFrame(rows)


def gain_markdown(frame) -> str:
    """Markdown of :func:`gain_comparison`: mean (sd over seeds) and the difference to the first variant,
    paired by seed."""
    first = frame["variant"].iloc[0]
    base = frame[frame["variant"] == first].set_index(["workload", "seed"])["regret"]
    lines = ["| variant | workload | nested regret: mean (sd over seeds) | difference to the packaged procedure: "
             "mean (sd), paired by seed |", "|---|---|---|---|"]
    for (variant, wl), g in frame.groupby(["variant", "workload"], sort=False):
        d = g.set_index(["workload", "seed"])["regret"] - base
        lines.append(f"| {variant} | {wl} | {g['regret'].mean():.3f} ({g['regret'].std():.3f}) | "
                     f"{d.mean():+.3f} ({d.std():.3f}) |")
    return "\n".join(lines)


def in_source_fit(sim, shares=(0.1, 0.05, 0.02), sizes=((5, 20), (3, 50)), oracle_csv=ORACLE_CSV):
    """A diagnosis, not a selector one could train: trees fitted to the 16-trial run's own settings (the
    18 sources at 4,096 bins, one feature draw per trial, seed 501) and scored on the same settings with
    other draws (seed 100): how low a tree of these features gets when the sources it is applied to are
    the ones it learned from, beside a perfect choice run with ``(1 - share) eps``.  A frame: share,
    workload, depth, rows a leaf, regret, perfect choice."""
    import pandas as pd
    from dataclasses import replace

    from dphist.selection.regret_tree import fit
    from dphist.selection.train import errors_at
    truth = sixteen_trial_tables(sim.tables, oracle_csv)
    eval_index = list(next(iter(truth.values())).index)
    ex = _cached(sim, ("exact", "eval"), lambda: exact_statistics(eval_index, replace(sim.config, trials=16)))
    rows = []
    for share in shares:
        Xt, St, _ = noisy_rows(ex, share, 1, 501)
        Xe, Se, _ = noisy_rows(ex, share, 1, 100)
        for wl, t in truth.items():
            R = errors_at(t, 1 - share).to_numpy() / t.min(axis=1).to_numpy()[:, None]
            for depth, leaf in sizes:
                tree = fit(Xt, R[St], list(t.columns), [f"f{i}" for i in range(Xt.shape[1])], max_depth=depth,
                           min_leaf=leaf)
                rows.append({"share": share, "workload": wl, "depth": depth, "min_leaf": leaf,
                             "regret": float(R[Se, tree.predict(Xe)].mean()), "perfect": float(R.min(axis=1).mean())})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--dims", type=int, choices=(1, 2), default=1)
    parser.add_argument("--results", default=None, help="the training sweep's folder (default "
                        "results/selector-training, -2d for grids)")
    parser.add_argument("--only", default=None, help="variant names (substrings) separated by |")
    parser.add_argument("--nonzero", action="store_true",
                        help="only the nested comparison of the noisy non-zero count (1-D)")
    parser.add_argument("--labels", nargs="*", default=None, metavar="NAME=DIR",
                        help="only the nested comparison of training labels (1-D), scored against the 16-trial "
                             "errors; NAME=DIR: the training sweep rerun with more trials (same root seed)")
    parser.add_argument("--skip", action="store_true", help="only the nested comparison of a public skip rule "
                        "(1-D): no features where a preset at the full epsilon beats the tree in training")
    parser.add_argument("--gain", action="store_true", help="only the nested comparison of training variants "
                        "(GAIN_VARIANTS: features, leaf size, draws, candidates, sources, weights, share) and the "
                        "in-source diagnosis, scored against the 16-trial errors")
    parser.add_argument("--sizes", action="store_true", help="with --labels: the tree sizes and exchangeable "
                        "settings instead of the labels' trials")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    if args.dims == 1:
        from dpbench_1d import dpbench_dir
        from selector_eval import folds
    else:
        from dpbench_2d_sweep import dpbench_dir
        from selector_eval_2d import folds

    from dphist.selection.train import (MAX_DEPTH, MAX_DEPTH_2D, MIN_LEAF, MIN_LEAF_2D, error_table,
                                        training_config)
    args.results = args.results or "results/selector-training" + ("-2d" if args.dims == 2 else "")
    config = training_config(args.data_dir or dpbench_dir(), args.results, dims=args.dims)
    tables = error_table(Path(args.results) / "results.csv", config)
    sim = Simulation(tables, config, folds(config))
    if args.gain:
        frame = gain_comparison(sim, variants={k: v for k, v in GAIN_VARIANTS.items()
                                               if not args.only or k == next(iter(GAIN_VARIANTS))
                                               or any(part in k for part in args.only.split("|"))})
        frame.to_csv(GAIN_CSV, index=False, float_format="%.6g")
        print(gain_markdown(frame))
        ceiling = in_source_fit(sim)
        ceiling.to_csv(CEILING_CSV, index=False, float_format="%.6g")
        print(ceiling.round(3).to_string(index=False))
        return 0
    if args.skip and args.dims == 2:
        frame = public_skip_comparison(sim, dims=2)
        frame.to_csv(SKIP_2D_CSV, index=False, float_format="%.6g")
        print(frame.groupby("workload")[["tree", "rule"]].mean().round(3).to_string())
        print(frame.assign(d=frame.rule - frame.tree).groupby(["workload", "seed"])["d"].mean()
              .groupby("workload").agg(["mean", "std"]).round(3).to_string())
        return 0
    if args.skip:
        frame = public_skip_comparison(sim)
        frame.to_csv(SKIP_CSV, index=False, float_format="%.6g")
        print(frame.groupby("workload")[["tree", "rule"]].mean().round(3).to_string())
        from selector_oracle import markdown, regret_table
        held, rules = held_out_with_rule(sim)
        for (wl, k), rule in rules.items():
            print(wl, k, {f"{n}:{e:g}": lab for (n, e), lab in rule.items()})
        table = regret_table(held)
        table.to_csv(SKIP_HELD_CSV, index=False, float_format="%.6g")
        print(markdown(table))
        return 0
    if args.labels is not None:
        more = {}
        for item in args.labels:
            name, _, folder = item.partition("=")
            more[name] = error_table(Path(folder) / "results.csv", config)
        frame = label_comparison(sim, more, sizes=args.sizes)
        frame.to_csv(SIZES_CSV if args.sizes else LABELS_CSV, index=False, float_format="%.6g")
        print(labels_markdown(frame))
        return 0
    if args.nonzero:
        frame = nonzero_comparison(sim)
        frame.to_csv(NONZERO_CSV, index=False, float_format="%.6g")
        print(nonzero_markdown(frame))
        return 0
    wls = list(tables)
    print("| variant | " + " | ".join(wls) + " |")
    print("|---|" + "---|" * len(wls))
    for name, variant in VARIANTS.items():
        if args.only and not any(part in name for part in args.only.split("|")):
            continue
        r = {wl: sim.chosen_regrets(wl, **variant)[0].mean() for wl in wls}
        print(f"| {name} | " + " | ".join(f"{r[wl]:.3f}" for wl in wls) + " |", flush=True)
    print()
    size = (MAX_DEPTH, MIN_LEAF) if args.dims == 1 else (MAX_DEPTH_2D, MIN_LEAF_2D)
    print(floor_tables(sim, Path(args.results) / "results.csv", max_depth=size[0], min_leaf=size[1]))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    raise SystemExit(main())
