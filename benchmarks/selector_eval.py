"""The `auto` preset on held-out sources: ``python benchmarks/selector_eval.py [--results DIR] [--out DIR]``.

Needs the training sweep's results (``make selector`` writes them to ``results/selector-training``) and
the DPBench sources (``--data-dir``, else found as ``benchmarks/dpbench_1d.py`` finds them).  Steps:

1. the 18 DPBench 1-D sources, sorted by name, go into three folds (every third source); for each fold
   and each feature share in :data:`SHARES`, a model is trained (``dphist.selection.train.train_models``)
   on the synthetic shapes and the *other* twelve sources only;
2. the real `auto` preset, with that model, runs on the fold's sources (the experiment engine: 4,096
   bins, scales 1e3 .. 1e8, epsilon 0.01, 0.1, 1, two trials, the same root seed as training, so the
   same DPBench samples the fixed presets ran on);
3. per setting (source, scale, epsilon, workload), the regret of `auto` and of every fixed candidate
   against the per-input oracle (the candidate of least mean error at the full epsilon);
4. ``notebooks/data/selection-heldout.csv`` (one row per setting: every candidate's and every share's
   mean error, the preset `auto` chose in each trial) and a Markdown summary on stdout.

Not a speed benchmark: ``make bench`` does not run it.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: feature shares measured, each for every workload (the packaged model's are per workload:
#: dphist.selection.train.SHARES_1D; benchmarks/selector_oracle.py evaluates them)
SHARES = (0.05, 0.1, 0.2)
#: the share whose choices are recorded per trial
CHOICE_SHARE = 0.1
FOLDS = 3
DOMAIN = 4096
OUT_CSV = ROOT / "notebooks" / "data" / "selection-heldout.csv"


def folds(config) -> list[list[str]]:
    names = sorted(d.key for d in config.datasets if not d.key.startswith("synthetic"))
    return [names[k::FOLDS] for k in range(FOLDS)]


def share_tag(share) -> str:
    """A share as labels and file names show it: ``0.05``, or ``model`` for None (the packaged procedure's
    per-workload shares, :data:`dphist.selection.train.SHARES_1D`, `auto` taking its share from the model)."""
    return "model" if share is None else f"{share:g}"


def auto_label(wl, share, fold):
    """The sweep's label of `auto` (the fold in it: the engine caches pipelines by label)."""
    return f"auto@{wl}@{share_tag(share)}@fold{fold}"


def run_folds(config, tables, out: Path, held_out=None, dims: int = 1, domain: int = DOMAIN, shares=SHARES,
              **overrides):
    """Per fold (``held_out``: default :func:`folds`) and share (``shares``): a model trained without the
    fold's sources, then the real `auto` with it on them (``domain`` as the sweep gives it: bins, or a
    grid's side); ``dims=2`` trains grid models, handed over as ``grid_model``.  ``overrides``: fields of
    the evaluation's sweep that differ from the training sweep's (``scales``, ``trials``); the models
    are trained on ``config``'s."""
    from dataclasses import replace

    from dphist.experiments.config import AlgorithmSpec
    from dphist.experiments.engine import run_sweep
    from dphist.selection.train import WORKLOADS, train_models, write_model
    models, frames = {}, []
    key = "model" if dims == 1 else "grid_model"
    for k, held in enumerate(folds(config) if held_out is None else held_out):
        algs = []
        for share in shares:
            path = out / "models" / f"share{share_tag(share)}-fold{k}.json"
            if not path.exists():
                path.parent.mkdir(parents=True, exist_ok=True)
                write_model(train_models(tables, config, share=share, exclude=held, dims=dims), path)
            models[(k, share)] = path
            given = {} if share is None else {"share": share}     # None: the model's share per workload
            algs += [AlgorithmSpec("auto", {"workload": wl, **given, key: str(path)}, auto_label(wl, share, k))
                     for wl in WORKLOADS]
        sweep = replace(config, algorithms=algs, datasets=[d for d in config.datasets if d.key in held],
                        domains=[domain], output=str(out / f"fold{k}"), limits={}, **overrides)
        frames.append(run_sweep(sweep, progress=False).output / "results.csv")
    return models, frames


def held_out_table(config, tables, fixed, out: Path, workloads=None, **fold_args):
    """Train and run every fold (:func:`run_folds` with ``fold_args``), then one row per held-out
    setting and workload: the errors of ``fixed`` (per workload, indexed by dataset, domain, scale and
    epsilon) at :data:`DOMAIN` cells joined with `auto`'s at every share, a workload-aware preset's
    column named without its ``@<workload>``.  Returns ``(models, rows)``."""
    import pandas as pd
    from dphist.selection.train import WORKLOADS
    models, csvs = run_folds(config, tables, out, **fold_args)
    auto = pd.concat([pd.read_csv(c) for c in csvs])
    auto = auto[auto["metric"] == "scaled-l2"]
    rows = []
    for wl in workloads or WORKLOADS:
        wide = fixed[wl].xs(DOMAIN, level="domain").join(auto_errors(auto, wl), how="inner")
        wide.columns = [c.split("@")[0] for c in wide.columns]
        wide["workload"] = wl
        rows.append(wide.reset_index())
    return models, pd.concat(rows, ignore_index=True)


def auto_errors(auto, wl):
    """`auto`'s mean error per (dataset, scale, epsilon), one column ``auto_<share>`` per share."""
    a = auto[(auto["workload"] == wl) & auto["algorithm"].str.startswith(f"auto@{wl}@")]
    a = a.assign(algorithm="auto_" + a["algorithm"].str.split("@").str[2])
    return a.pivot_table(index=["dataset", "scale", "epsilon"], columns="algorithm", values="value", aggfunc="mean")


def choices(config, models, held_rows):
    """The preset `auto` chose in each (fold, share, setting, trial): its first part rerun with the cell's seed."""
    from dphist.experiments.cells import Cell, cell_data
    from dphist.experiments.engine import plan
    from dphist.selection.auto import AutoPipeline
    sources = {k: np.asarray(v) for k, v in plan(config).job.sources.items()}
    out = {}
    pipes = {}
    for (k, share), path in models.items():
        for wl in ("identity", "prefix", "dpbench-random-2000"):
            pipes[(k, share, wl)] = AutoPipeline(wl, share=share, model=path)
    for k, held in enumerate(folds(config)):
        for (dataset, scale, eps) in held_rows:
            if dataset not in held:
                continue
            for trial in range(config.trials):
                for share in (CHOICE_SHARE,):
                    for wl in ("identity", "prefix", "dpbench-random-2000"):
                        cell = Cell(auto_label(wl, share, k), dataset, DOMAIN, int(scale), True, float(eps), trial,
                                    config.seed)
                        counts, _ = cell_data(cell, sources[dataset])
                        _, choice = pipes[(k, share, wl)].select(counts, eps, seed=cell.algorithm_seed())
                        out[(dataset, scale, eps, wl, share, trial)] = choice["label"].split("@")[0]
    return out


def main(argv=None) -> int:
    from dphist.selection.train import candidates, error_table, training_config
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None,
                        help="DPBench's 1-D sources (default: found as benchmarks/dpbench_1d.py finds them)")
    parser.add_argument("--results", default="results/selector-training", help="the training sweep's folder")
    parser.add_argument("--out", default="results/selector-eval", help="fold models and the auto sweeps")
    parser.add_argument("--csv", default=str(OUT_CSV))
    args = parser.parse_args(argv)
    from dpbench_1d import dpbench_dir   # this folder: DPHIST_SHARED, else ../shared beside the repository
    data_dir = args.data_dir or dpbench_dir()
    if data_dir is None:
        parser.error("DPBench's 1-D sources were not found: give --data-dir")
    config = training_config(data_dir, args.results)
    tables = error_table(Path(args.results) / "results.csv", config)
    models, fixed = held_out_table(config, tables, tables, Path(args.out))
    df = fixed[~fixed["dataset"].str.startswith("synthetic")].reset_index(drop=True)
    chosen = choices(config, models, sorted(set(zip(df["dataset"], df["scale"], df["epsilon"]))))
    for share in (CHOICE_SHARE,):
        for trial in range(config.trials):
            df[f"chosen_{share:g}_t{trial}"] = [chosen[(d, s, e, w, share, trial)] for d, s, e, w in
                                               zip(df["dataset"], df["scale"], df["epsilon"], df["workload"])]
    df["fold"] = [next(k for k, h in enumerate(folds(config)) if d in h) for d in df["dataset"]]
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.csv, index=False, float_format="%.6g")
    print(summary(df, [c.split("@")[0] for c in candidates(config, "prefix")]))
    print()
    print(floor_table(tables, df))
    return 0


def floor_table(tables, df) -> str:
    """Markdown: the regret of a selector that always chose the best candidate but ran it with
    ``(1 - share) epsilon`` (its error interpolated in epsilon from the training sweep's runs of the
    same samples, :func:`dphist.selection.train.errors_at`): what the share alone costs, per workload."""
    from dphist.selection.train import WORKLOADS, errors_at
    lines = ["| workload | " + " | ".join(f"perfect choice at share {s:g}" for s in SHARES) + " |",
             "|---|" + "---|" * len(SHARES)]
    for wl in WORKLOADS:
        t = tables[wl].xs(DOMAIN, level="domain")
        keys = set(zip(df.loc[df["workload"] == wl, "dataset"], df.loc[df["workload"] == wl, "scale"],
                       df.loc[df["workload"] == wl, "epsilon"]))
        t = t[[k in keys for k in t.index]]
        full = tables[wl].xs(DOMAIN, level="domain", drop_level=False)
        cells = []
        for share in SHARES:
            at = errors_at(full, 1 - share).xs(DOMAIN, level="domain").loc[t.index]
            cells.append(f"{float((at.min(axis=1) / t.min(axis=1)).mean()):.3f}")
        lines.append(f"| {wl} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def regrets(df, presets):
    """Per row: every fixed preset's and every share's regret against the oracle (the least error)."""
    e = df[presets].to_numpy(float)
    best = e.min(axis=1, keepdims=True)
    out = pd_frame(df, presets, e / best)
    for share in SHARES:
        out[f"auto_{share:g}"] = df[f"auto_{share:g}"].to_numpy(float) / best[:, 0]
    return out


def pd_frame(df, presets, values):
    import pandas as pd
    out = pd.DataFrame(values, columns=presets, index=df.index)
    out["workload"], out["epsilon"] = df["workload"].to_numpy(), df["epsilon"].to_numpy()
    return out


def summary(df, presets) -> str:
    """Markdown: mean regret per workload (and per epsilon) of `auto` at each share, the best fixed
    preset, and the oracle (1 by definition)."""
    r = regrets(df, presets)
    shares = " | ".join(f"auto ({s:g})" for s in SHARES)
    lines = [f"| workload | epsilon | {shares} | best fixed preset | its regret | oracle |",
             "|---|---|" + "---|" * len(SHARES) + "---|---|---|"]
    for (wl, eps), g in [((wl, "all"), g) for wl, g in r.groupby("workload")] + list(r.groupby(["workload", "epsilon"])):
        fixed = g[presets].mean()
        autos = " | ".join(f"{g[f'auto_{s:g}'].mean():.3f}" for s in SHARES)
        lines.append(f"| {wl} | {eps} | {autos} | {fixed.idxmin()} | {fixed.min():.3f} | 1 |")
    return "\n".join(lines)


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    raise SystemExit(main())
