"""Training the ``auto`` preset's selector on public data only: ``python -m dphist.selection.train``.

``make selector`` runs it.  Steps:

1. the sweep of ``auto-1d.training.toml`` (the experiment engine, resumable): every candidate preset on
   the DPBench generator's samples of the 18 shipped 1-D sources and six synthetic shapes, three domain
   sizes, six scales, three epsilons, two trials; scaled L2 error on each workload;
2. per workload, the candidates (the workload-free presets and the workload-aware ones run with that
   workload), each setting's mean error per candidate and its regret: the candidate's error at the
   epsilon it gets inside ``auto``, ``(1 - share) epsilon`` (:func:`errors_at`, interpolated between the
   sweep's epsilons), over the setting's best error at the full epsilon (the per-input oracle's);
3. training rows: for every setting and trial, the features the selector would measure, with the
   noise of ``share * epsilon`` drawn afresh (``draws`` times) so that the tree learns from noisy
   features as it will see them; ``share`` is the workload's own (:data:`SHARES_1D`), written into its
   entry of the model (format version 4) as ``auto``'s default for it;
4. one :class:`~dphist.selection.regret_tree.RegretTree` per workload, fitted to the regret matrix, written
   with its candidates and the training configuration's hash to ``auto-1d.json``;
5. the public skip rule per workload (:func:`skip_cells`): for each domain size and epsilon of the sweep,
   the candidate of least mean training regret when run with the *whole* epsilon (no features measured)
   runs instead of the tree wherever that regret is below the tree's own mean training regret there
   (its in-sample choice, run with ``(1 - share) epsilon``).  Public inputs only; the rule and every
   cell's regrets are written beside the tree (``"skip"``), and ``auto`` applies it before anything is
   measured (:func:`dphist.selection.auto.rule_cell`: inside the trained ranges, the cell nearest in
   log domain size and log epsilon; outside them, none).

``--dims 2`` trains the grid model the same way: the sweep of ``auto-2d.training.toml`` (the ten DPBench
2-D sources at 32 x 32 and 64 x 64 cells, the ten presets of ``benchmarks/dpbench-2d.toml`` scored on the three rectangle workloads), the
grid statistics as features (:func:`~dphist.selection.features.grid_statistics`), every one of them a
candidate (AHP-2D and DAWA-2D, linearised, run on ``auto``'s kernel reordered along their curve),
written to ``auto-2d.json``, with its own skip rule (over 1,024 and 4,096 cells; the nested comparison on
the 2-D training folds, ``benchmarks/selector_variants.py --dims 2 --skip``, found it lower on prefix and
random rectangles, ``benchmarks/notes/selection.md``).

It needs the DPBench sources (``--data-dir``: ``<shared>/datasets/peer-dpbench/1D``, which ``make
selector`` passes) and reads no
data the selector is later applied to: the held-out evaluation (``benchmarks/selector_eval.py``)
trains on a subset of sources with :func:`train_models` and applies the result to the others.
Development tool: it imports pandas (a ``dev`` extra), the ``auto`` preset does not.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import numpy as np

from ..errors import InvalidParameter
from .auto import (DEFAULT_MODEL, DEFAULT_MODEL_2D, DEFAULT_SHARE, MODEL_FORMAT, MODEL_VERSION, TRAINING_CONFIG,
                   TRAINING_CONFIG_2D)
from .features import (FEATURE_NAMES, TOTAL_WEIGHT, feature_matrix, grid_statistic_sensitivities, grid_statistics,
                       statistic_sensitivities, statistics)
from .regret_tree import fit

#: the workloads the selector has trees for
WORKLOADS = ("identity", "prefix", "dpbench-random-2000")
#: the 1-D tree's size: depth and the fewest training rows in a leaf
MAX_DEPTH, MIN_LEAF = 5, 20
#: the grid tree's size: smaller, for a smaller training set (eight to ten 2-D sources against 1-D's 18 and
#: six shapes); depth 3 with 50 rows a leaf against depth 5 with 20 moved the simulated held-out regret
#: from 1.215 / 1.318 / 1.378 to 1.188 / 1.258 / 1.278 (identity, prefix, random rectangles:
#: ``benchmarks/selector_variants.py --dims 2``)
MAX_DEPTH_2D, MIN_LEAF_2D = 3, 50
#: noisy-feature draws per training cell
DRAWS = 4
#: how the skip rule was learned and how ``auto`` applies it (written into the model's training record)
SKIP_RULE_TEXT = ("per (domain, epsilon) of the sweep: the candidate of least mean training regret at the whole "
                  "epsilon, where below the tree's in-sample mean training regret at (1 - share) epsilon; applied "
                  "to the cell nearest in log domain and log epsilon (split at geometric midpoints), none outside "
                  "the trained ranges of either")
#: whether the model of ``dims`` axes carries the public skip rule (:func:`skip_cells`)
SKIP_RULE = {1: True, 2: True}
#: the 1-D model's feature share per workload, each the share of least regret on the nested training folds
#: among those measured there (0.02, 0.05, 0.1: ``benchmarks/selector_variants.py --gain``, the training
#: sources only, held-out sources never seen; identity 1.200 / 1.205 / 1.225, prefix 1.259 / 1.245 / 1.274,
#: random ranges 1.288 / 1.283 / 1.323 at 0.02 / 0.05 / 0.1; ``benchmarks/notes/selection.md``), the rule
#: fixed before any held-out run.  The grid model keeps one share for every workload (:data:`SHARES_2D`).
SHARES_1D = {"identity": 0.02, "prefix": 0.05, "dpbench-random-2000": 0.05}
#: the grid model's feature share, every workload
SHARES_2D = {wl: DEFAULT_SHARE for wl in WORKLOADS}


def workload_shares(share=None, dims: int = 1, workloads=WORKLOADS) -> dict[str, float]:
    """``{workload: share}``: ``share`` a number (every workload), a mapping (per workload), or None (the
    packaged procedure's: :data:`SHARES_1D` or :data:`SHARES_2D`); each checked to lie in (0, 1)."""
    if share is None:
        share = SHARES_1D if dims == 1 else SHARES_2D
    out = {}
    for wl in workloads:
        s = share.get(wl) if isinstance(share, dict) else share
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 < s < 1:
            raise InvalidParameter(f"the feature share for workload {wl!r} must be a number strictly between 0 "
                                   f"and 1, got {s!r}")
        out[wl] = float(s)
    return out


def config_path(dims: int = 1) -> Path:
    """The training configuration of the ``dims``-D model."""
    return TRAINING_CONFIG if dims == 1 else TRAINING_CONFIG_2D


def training_config(data_dir, output=None, dims: int = 1):
    """The training sweep (:data:`TRAINING_CONFIG`, or :data:`TRAINING_CONFIG_2D` for ``dims=2``), with
    ``data_dir`` (DPBench's sources, the ``.npy`` files of ``datasets/peer-dpbench/1D`` or ``2D``; the
    caller finds it, the library does not) registered."""
    from ..datasets.files import add_data_dir
    from ..experiments.config import SweepConfig
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise InvalidParameter(f"the selector is trained on DPBench's {dims}-D sources; {data_dir} is not a folder "
                               f"(give the folder holding datasets/peer-dpbench/{dims}D's files)")
    add_data_dir(data_dir)
    config = SweepConfig.from_toml(config_path(dims))
    if output is not None:
        config.output = str(output)
    return config


def candidates(config, workload: str) -> dict[str, dict]:
    """``{label: {"name", "params"}}``: the sweep's presets that answer ``workload`` and that ``auto`` can
    run on its own kernel (:func:`~dphist.selection.auto.runs_on_a_prepared_kernel`)."""
    out = {}
    for a in config.algorithms:
        wl = a.params.get("workload")
        if (wl is None or wl == workload) and runs_plainly(a.name, tuple(sorted(a.params.items()))):
            out[a.key] = {"name": a.name, "params": dict(a.params)}
    return out


def runs_plainly(name: str, params: tuple = ()) -> bool:
    """Can ``auto`` run the preset on its own kernel (a plain or a linearised pipeline)?"""
    from ..presets import make_algorithm
    from .auto import runs_on_a_prepared_kernel
    return runs_on_a_prepared_kernel(make_algorithm(name, **dict(params)))


def error_table(results_csv, config):
    """Mean scaled L2 error per (dataset, domain, scale, epsilon, workload) and candidate (pandas)."""
    import pandas as pd
    df = pd.read_csv(results_csv)
    df = df[df["metric"] == "scaled-l2"]
    tables = {}
    for wl in WORKLOADS:
        labels = list(candidates(config, wl))
        sub = df[(df["workload"] == wl) & df["algorithm"].isin(labels)]
        wide = sub.pivot_table(index=["dataset", "domain", "scale", "epsilon"], columns="algorithm",
                               values="value", aggfunc="mean")
        tables[wl] = wide[labels].dropna()
    return tables


#: the candidates whose error does not depend on the data (1-D): a fixed linear strategy answered with
#: Laplace noise and no data-dependent step (``identity``; ``Hb``, its branching from the domain size alone;
#: ``Privelet``), so that their error is the noise alone, of a law fixed by the domain size and epsilon
DATA_INDEPENDENT = ("identity", "Hb", "Privelet")


def expected_errors(table, pooled=DATA_INDEPENDENT):
    """The training labels' errors: ``table`` (mean errors per dataset, domain, scale, epsilon) with the
    columns of ``pooled`` replaced by their mean over every dataset and every setting of the same domain
    size and signal ``scale x epsilon``.

    Why it is exact in expectation: such a preset releases ``x + e`` with ``e`` of a law that depends on
    the domain size and on epsilon only, as ``e = z / epsilon`` (``z`` of a fixed law); the scaled error
    ``||W e|| / (|W| scale)`` is ``||W z|| / (|W| scale epsilon)``, of one law for every dataset and every
    setting of the same ``n`` and ``scale x epsilon`` (DPBench's sample holds exactly ``scale`` records).
    So each setting's expected error is estimated from all of them (24 sources, up to three settings of a
    signal, every trial) instead of its own trials; the other candidates' errors stay their own means."""
    cols = [c for c in table.columns if c.split("@")[0] in set(pooled)]
    if not cols:
        return table
    index = table.index
    signal = np.round(np.log10(index.get_level_values("scale").to_numpy(float)
                               * index.get_level_values("epsilon").to_numpy(float)), 6)
    out = table.copy()
    out[cols] = table[cols].groupby([index.get_level_values("domain"), signal]).transform("mean")
    return out


def regret_matrix(errors, best=None) -> np.ndarray:
    """Each setting's errors over its best (``best``: default the row's least error; a setting whose
    best error is 0 gets regret 1 for 0s)."""
    e = np.asarray(errors, dtype=float)
    best = e.min(axis=1, keepdims=True) if best is None else np.asarray(best, dtype=float).reshape(-1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(best > 0, e / np.where(best > 0, best, 1), np.where(e == 0, 1.0, np.inf))
    return np.minimum(r, 1e6)


def errors_at(table, factor: float):
    """The errors of ``table`` (rows dataset, domain, scale, epsilon) at ``epsilon * factor``: log-log
    interpolation between the sweep's two neighbouring epsilons of the same dataset, domain and scale
    (below the smallest, the line through the two smallest).  The chosen preset runs with
    ``(1 - share) epsilon``, so its regret is its error there over the best error at the full epsilon."""
    import pandas as pd
    eps_all = np.array(sorted(set(table.index.get_level_values("epsilon"))), dtype=float)
    if eps_all.size < 2:
        return table
    log = np.log(table.clip(lower=1e-300))
    out = np.empty(table.shape)
    for i, (dataset, domain, scale, eps) in enumerate(table.index):
        target = float(eps) * factor
        j = int(np.clip(np.searchsorted(eps_all, target) - 1, 0, eps_all.size - 2))
        lo, hi = eps_all[j], eps_all[j + 1]
        try:
            a, b = log.loc[(dataset, domain, scale, lo)].to_numpy(), log.loc[(dataset, domain, scale, hi)].to_numpy()
        except KeyError:
            out[i] = table.iloc[i].to_numpy()
            continue
        w = (np.log(target) - np.log(lo)) / (np.log(hi) - np.log(lo))
        out[i] = np.exp(a + w * (b - a))
    return pd.DataFrame(out, index=table.index, columns=table.columns)


def cell_features(index, config, share: float, draws: int, seed: int,
                  nonzero: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Training rows for the settings ``index`` (dataset, domain, scale, epsilon): the features of
    every trial's sample with ``draws`` fresh noise draws at ``share`` of the epsilon (split as
    :func:`~dphist.selection.features.measure` splits it).  Returns ``(X, setting)``, ``setting[i]``
    the position in ``index`` of row ``i``.

    ``nonzero``: a candidate feature, not in the packaged model (``benchmarks/selector_variants.py``
    measures it): the weight, in the features' budget, of a noisy count of non-zero bins (L1
    sensitivity 1: adding or removing a record changes one bin's count by one, so at most one bin
    between zero and non-zero), taken evenly from the three statistics' weights (the total keeps its
    :data:`~dphist.selection.features.TOTAL_WEIGHT`); appended as the column ``nz~ / n`` clipped to
    ``[0, 1]`` (post-processing)."""
    from ..experiments.cells import Cell, cell_data
    from ..experiments.engine import plan
    sources = plan_sources(config, plan)
    rng = np.random.default_rng(seed)
    stat_weight = (1 - TOTAL_WEIGHT - (nonzero or 0.0)) / 3
    totals, stats, ns, eps_runs, setting, nz = [], [], [], [], [], []
    for i, (dataset, domain, scale, eps) in enumerate(index):
        for trial in range(config.trials):
            cell = Cell("-", dataset, int(domain), int(scale), True, float(eps), trial, config.seed)
            counts, _ = cell_data(cell, sources[dataset])
            n = counts.size
            eps_f = float(eps) * share                      # the features' epsilon; eps is the whole run's
            totals.append(counts.sum() + rng.laplace(0, 1 / (eps_f * TOTAL_WEIGHT), draws))
            if counts.ndim == 2:
                exact, sens = grid_statistics(counts, counts.shape), grid_statistic_sensitivities(counts.shape)
            else:
                exact, sens = statistics(counts), statistic_sensitivities(n)
            scale_s = sens / (eps_f * stat_weight)
            stats.append(exact[None, :] + rng.laplace(0, 1, (draws, 3)) * scale_s)
            if nonzero:
                nz.append(np.count_nonzero(counts) + rng.laplace(0, 1 / (eps_f * nonzero), draws))
            ns += [n] * draws
            eps_runs += [float(eps) * (1 - share)] * draws
            setting += [i] * draws
    X = feature_matrix(np.concatenate(totals), np.concatenate(stats), np.array(ns), np.array(eps_runs))
    if nonzero:
        X = np.column_stack([X, np.clip(np.concatenate(nz) / np.array(ns), 0.0, 1.0)])
    return X, np.array(setting)


def skip_cells(table, R, setting, chosen, labels) -> dict:
    """The public skip rule learned from one workload's training table: per (domain size, epsilon) of
    the sweep, every candidate's mean regret when run with the whole epsilon (``table``'s errors over the
    setting's best: nothing spent on features) against the tree's mean regret on the same settings'
    training rows (``R[setting, chosen]``: its in-sample choice ``chosen`` per row, run with ``(1 - share)
    epsilon``).  A cell's ``label`` is the candidate of least such regret where it is below the tree's,
    else None (the tree chooses).  Inputs public: the domain size and epsilon; the regrets are training
    data's.  Returns ``{"domains", "epsilons", "cells"}`` as written to the model."""
    E = np.asarray(table, dtype=float)
    full = regret_matrix(E, E.min(axis=1))
    tree_rows = np.asarray(R, dtype=float)[np.asarray(setting), np.asarray(chosen)]
    domain = table.index.get_level_values("domain").to_numpy(np.int64)
    eps = table.index.get_level_values("epsilon").to_numpy(float)
    cells = []
    for n in sorted(set(domain.tolist())):
        for e in sorted(set(eps.tolist())):
            m = (domain == n) & (eps == e)
            if not m.any():
                continue
            cand = full[m].mean(axis=0)
            tree = float(tree_rows[m[setting]].mean())
            best = int(np.argmin(cand))
            cells.append({"domain": int(n), "epsilon": float(e), "settings": int(m.sum()),
                          "tree_regret": round(tree, 6), "regret": np.round(cand, 6).tolist(),
                          "label": labels[best] if cand[best] < tree else None})
    return {"domains": sorted({c["domain"] for c in cells}), "epsilons": sorted({c["epsilon"] for c in cells}),
            "cells": cells}


def plan_sources(config, plan) -> dict[str, np.ndarray]:
    """Every dataset label's source counts, loaded as the engine loads them."""
    the_plan = plan(config)
    return {k: np.asarray(v) for k, v in the_plan.job.sources.items()}


def train_models(tables, config, share=None, exclude=(), max_depth: int | None = None,
                 min_leaf: int | None = None, draws: int = DRAWS, seed: int = 2017, dims: int = 1,
                 pooled=(), skip: bool | None = None) -> dict:
    """The model (a dict, as written to JSON) trained on every setting whose source is not in ``exclude``;
    the tree's size by default :data:`MAX_DEPTH` and :data:`MIN_LEAF` (1-D) or :data:`MAX_DEPTH_2D` and
    :data:`MIN_LEAF_2D` (grids).  ``pooled``: candidates whose training errors are replaced by their mean
    over the training sources (:func:`expected_errors`, e.g. :data:`DATA_INDEPENDENT`); not in the packaged
    models (``benchmarks/selector_variants.py --labels`` measured it within the simulation's spread).
    ``skip``: learn the public skip rule (:func:`skip_cells`) into each workload's entry (default
    :data:`SKIP_RULE` of ``dims``).  ``share``: the features' share of epsilon, a number (every workload), a
    ``{workload: share}`` mapping, or None (:func:`workload_shares`: the packaged per-workload shares); each
    workload's training rows draw their feature noise at its own share, its regrets and skip rule take its
    candidates at ``(1 - share) epsilon``, and its entry records the share (``auto``'s default for it)."""
    exclude = set(exclude)
    if skip is None:
        skip = SKIP_RULE[dims]
    if max_depth is None:
        max_depth = MAX_DEPTH if dims == 1 else MAX_DEPTH_2D
    if min_leaf is None:
        min_leaf = MIN_LEAF if dims == 1 else MIN_LEAF_2D
    shares = workload_shares(share, dims, list(tables))
    out = {"format": MODEL_FORMAT, "version": MODEL_VERSION, "feature_names": list(FEATURE_NAMES),
           "dims": dims, "workloads": {}}
    features = {}       # per (settings, share): the same draws for workloads that share both
    for wl, table in tables.items():
        keep = ~table.index.get_level_values("dataset").isin(exclude)
        t = table[keep]
        share = shares[wl]
        key = (tuple(t.index), share)
        if key not in features:
            features[key] = cell_features(list(t.index), config, share, draws, seed)
        X, setting = features[key]
        # regret of each candidate at the epsilon it runs with, against the best at the full epsilon
        if pooled:
            t = expected_errors(t, pooled)
        R = regret_matrix(errors_at(t, 1 - share).to_numpy(), t.to_numpy().min(axis=1))
        labels = list(t.columns)
        tree = fit(X, R[setting], labels, FEATURE_NAMES, max_depth=max_depth, min_leaf=min_leaf)
        leaves = tree.leaves(X)
        leaf_regret = np.zeros((tree.feature.size, len(labels)))
        for leaf in np.unique(leaves):
            leaf_regret[leaf] = R[setting[leaves == leaf]].mean(axis=0)
        for node in range(tree.feature.size):       # inner nodes: the mean over their rows too
            if not leaf_regret[node].any():
                leaf_regret[node] = tree.regret[node]
        cands = candidates(config, wl)
        out["workloads"][wl] = {"presets": {lab: cands[lab] for lab in labels}, "tree": tree.to_dict(),
                                "leaf_regret": np.round(leaf_regret, 4).tolist(), "share": share}
        if skip:
            out["workloads"][wl]["skip"] = skip_cells(t, R, setting, tree.label[leaves], labels)
    out["training"] = {"config": config_path(dims).name,
                       "config_sha256": hashlib.sha256(config_path(dims).read_bytes()).hexdigest(),
                       "excluded_sources": sorted(exclude), "max_depth": max_depth, "min_leaf": min_leaf,
                       "draws": draws, "seed": seed, "rows_per_workload": int(X.shape[0]),
                       "skip_rule": SKIP_RULE_TEXT if skip else "none"}
    if pooled:
        out["training"]["pooled_errors"] = list(pooled)
    return out


def write_model(model: dict, path) -> Path:
    path = Path(path)
    path.write_text(json.dumps(model, indent=1, sort_keys=True) + "\n")
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Train the auto preset's selector (make selector).")
    parser.add_argument("--data-dir", required=True,
                        help="DPBench's sources (<shared>/datasets/peer-dpbench/1D, or 2D with --dims 2)")
    parser.add_argument("--dims", type=int, choices=(1, 2), default=1, help="train the 1-D or the grid model")
    parser.add_argument("--results", default=None,
                        help="the training sweep's output folder (resumed when present; default "
                             "results/selector-training, -2d for grids)")
    parser.add_argument("--share", type=float, default=None,
                        help="one feature share for every workload (default: the per-workload shares, "
                             "SHARES_1D; grids SHARES_2D)")
    parser.add_argument("--model", default=None, help="where to write the model JSON (default: the packaged one)")
    parser.add_argument("--skip-sweep", action="store_true", help="train from the folder's results as they are")
    args = parser.parse_args(argv)
    if args.results is None:
        args.results = "results/selector-training" + ("-2d" if args.dims == 2 else "")
    if args.model is None:
        args.model = str(DEFAULT_MODEL if args.dims == 1 else DEFAULT_MODEL_2D)
    config = training_config(args.data_dir, args.results, dims=args.dims)
    if not args.skip_sweep:
        from ..experiments.engine import run_sweep
        run_sweep(config)
    tables = error_table(Path(args.results) / "results.csv", config)
    model = train_models(tables, config, share=args.share, dims=args.dims)
    path = write_model(model, args.model)
    for wl, entry in model["workloads"].items():
        print(f"{wl}: {len(entry['tree']['nodes']['feature'])} nodes over {len(entry['presets'])} presets")
    print(f"model written to {path}")
    return 0


if __name__ == "__main__":    # pragma: no cover - make selector
    raise SystemExit(main())
