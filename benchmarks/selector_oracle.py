"""`auto` and the fixed presets against an honestly estimated oracle:
``python benchmarks/selector_oracle.py [--trials T] [--scales S ...] [--reuse RESULTS.csv]``.

Regret, as DPBench (Hay et al., SIGMOD 2016) and Pythia (Kotsogiannis et al., SIGMOD 2017) use it,
compares *expected* errors: an algorithm's expected error in a setting over the least expected error of
the candidates there (the per-input oracle).  Estimated from a few trials, the oracle is biased low: the
least of twelve noisy means is partly the luckiest one.  This benchmark measures that bias and estimates
the oracle so that it is small:

1. every candidate preset of the 1-D selector (``auto-1d.training.toml``) on the 18 DPBench 1-D
   sources at 4,096 bins, ``--scales`` (default three, one every second decade: the CPU budget goes to
   trials, not scales), epsilon 0.01, 0.1 and 1, ``--trials`` trials (each trial a fresh DPBench sample
   and fresh noise, as in :mod:`dphist.experiments`); cells an earlier sweep with the same root seed
   already ran (``--reuse``: the training sweep's ``results.csv``, whose cells are bit-identical) are
   copied, not rerun;
2. the real `auto` preset (each workload's share from its model, :data:`dphist.selection.train.SHARES_1D`, or
   one ``--share`` for all) on the same cells, per fold by source with the fold's model
   trained on the training sweep without the fold's sources (:func:`selector_eval.run_folds`);
3. ``notebooks/data/selection-oracle.csv``: one row per (source, scale, epsilon, workload, trial), every
   candidate's scaled L2 error and `auto`'s;
4. on stdout: the oracle's selection bias by trials per half (:func:`oracle_bias`), and the regret of
   `auto` and of the best fixed preset per workload and epsilon against the oracle estimated two ways
   (:func:`regret_table`): in-sample (the least of the candidates' means over every trial: biased low)
   and cross-fitted (the candidate chosen on one half of the trials, its error read on the other half,
   both ways: biased high, since a wrong choice on one half costs on the other).  The truth lies
   between; where the two agree, the oracle's luck no longer moves the regret.

Not a speed benchmark: ``make bench`` does not run it.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DOMAIN = 4096
SCALES = (1_000, 100_000, 10_000_000)
TRIALS = 6
#: `auto`'s feature share: None, the packaged procedure's per-workload shares (the model's, SHARES_1D)
SHARE = None
OUT_CSV = ROOT / "notebooks" / "data" / "selection-oracle.csv"
#: random splits of the trials into two disjoint halves (seeded) for the bias and the cross-fitted oracle
SPLITS = 20


def eval_config(config, out: Path, trials: int, scales):
    """The fixed presets' sweep: the training sweep's candidates on the real sources at :data:`DOMAIN` bins."""
    real = [d for d in config.datasets if not d.key.startswith("synthetic")]
    return replace(config, datasets=real, domains=[DOMAIN], scales=list(scales), trials=trials,
                   output=str(out / "fixed"), limits={})


def reuse_cells(previous, sweep) -> int:
    """Copy the rows of ``previous`` (an earlier sweep's ``results.csv``, same root seed) that are cells
    of ``sweep`` into its empty output folder, line for line: the engine then resumes past them (a cell's
    data and noise come from its own seed, so rerunning it gives the same numbers).  Returns the rows."""
    target = Path(sweep.output) / "results.csv"
    if previous is None or target.exists():
        return 0
    labels = {a.key for a in sweep.algorithms}
    datasets = {d.key for d in sweep.datasets}
    scales, epsilons = {int(s) for s in sweep.scales}, {float(e) for e in sweep.epsilons}
    target.parent.mkdir(parents=True, exist_ok=True)
    kept = 0
    with open(previous, newline="") as src, open(target, "w", newline="") as dst:
        reader = csv.reader(src)
        header = next(reader)
        col = {name: i for i, name in enumerate(header)}
        writer = csv.writer(dst, lineterminator="\n")
        writer.writerow(header)
        for row in reader:
            if (row[col["algorithm"]] in labels and row[col["dataset"]] in datasets
                    and int(row[col["domain"]]) in sweep.domains and int(row[col["scale"]]) in scales
                    and float(row[col["epsilon"]]) in epsilons and int(row[col["trial"]]) < sweep.trials
                    and int(row[col["seed"]]) == sweep.seed):
                writer.writerow(row)
                kept += 1
    return kept


def trial_table(fixed_csv, auto_csvs, config, share=SHARE):
    """One row per (dataset, scale, epsilon, workload, trial): each candidate's error (columns named
    without ``@<workload>``) and `auto`'s at feature share ``share`` (column ``auto``; None: the model's
    share per workload)."""
    import pandas as pd

    from dphist.selection.train import WORKLOADS, candidates
    from selector_eval import share_tag
    fixed = pd.read_csv(fixed_csv)
    fixed = fixed[fixed["metric"] == "scaled-l2"]
    auto = pd.concat([pd.read_csv(c) for c in auto_csvs])
    auto = auto[auto["metric"] == "scaled-l2"]
    index = ["dataset", "scale", "epsilon", "trial"]
    out = []
    for wl in WORKLOADS:
        labels = list(candidates(config, wl))
        sub = fixed[(fixed["workload"] == wl) & fixed["algorithm"].isin(labels)]
        wide = sub.pivot_table(index=index, columns="algorithm", values="value", aggfunc="first")[labels]
        wide.columns = [c.split("@")[0] for c in wide.columns]
        a = auto[(auto["workload"] == wl) & auto["algorithm"].str.startswith(f"auto@{wl}@{share_tag(share)}@")]
        wide["auto"] = a.set_index(index)["value"]
        wide["workload"] = wl
        out.append(wide.dropna().reset_index())
    return pd.concat(out, ignore_index=True)


def presets_of(df) -> list[str]:
    """The candidate columns of a :func:`trial_table`."""
    return [c for c in df.columns if c not in ("dataset", "scale", "epsilon", "trial", "workload", "auto")]


def cube(df, workload, trials=None):
    """``(keys, E, A)``: the settings of ``workload`` (a frame of dataset, scale, epsilon), the candidates'
    errors ``E[setting, trial, candidate]`` and `auto`'s ``A[setting, trial]`` (``trials``: those only)."""
    sub = df[df["workload"] == workload]
    if trials is not None:
        sub = sub[sub["trial"].isin(trials)]
    sub = sub.sort_values(["dataset", "scale", "epsilon", "trial"])
    nt = sub["trial"].nunique()
    keys = sub[["dataset", "scale", "epsilon"]].iloc[::nt].reset_index(drop=True)
    E = sub[presets_of(df)].to_numpy(float).reshape(len(keys), nt, -1)
    return keys, E, sub["auto"].to_numpy(float).reshape(len(keys), nt)


def splits(trials: int, half: int, count: int = SPLITS, seed: int = 7):
    """``count`` seeded random pairs of disjoint sets of ``half`` trials each (positions 0..trials-1)."""
    rng = np.random.default_rng(seed)
    return [(p[:half], p[half:2 * half]) for p in (rng.permutation(trials) for _ in range(count))]


def oracle_estimates(E, half=None):
    """Per setting: the in-sample oracle (the least candidate mean over every trial) and the
    cross-fitted one (over :func:`splits` into halves of ``half`` trials, default half the trials:
    the candidate of least mean on one half, its mean on the other, both ways, averaged)."""
    nt = E.shape[1]
    half = half or nt // 2
    rows = np.arange(E.shape[0])
    cross = []
    for a, b in splits(nt, half):
        ma, mb = E[:, a].mean(axis=1), E[:, b].mean(axis=1)
        cross += [mb[rows, ma.argmin(axis=1)], ma[rows, mb.argmin(axis=1)]]
    return E.mean(axis=1).min(axis=1), np.mean(cross, axis=0)


def oracle_bias(df, halves=None):
    """Per workload and half size ``k``: over :func:`splits` into two disjoint halves of ``k`` trials,
    the mean over settings of (the error, on half B, of the candidate of least mean on half A) over (the
    least mean on half B), both ways: how much lower the in-sample oracle of ``k`` trials is than an
    honest one (1: no bias).  A frame indexed by workload, one column per ``k``."""
    import pandas as pd
    out = {}
    for wl in sorted(df["workload"].unique()):
        _, E, _ = cube(df, wl)
        nt = E.shape[1]
        rows = np.arange(E.shape[0])
        for k in halves or range(1, nt // 2 + 1):
            ratios = []
            for a, b in splits(nt, k):
                ma, mb = E[:, a].mean(axis=1), E[:, b].mean(axis=1)
                ratios += [mb[rows, ma.argmin(axis=1)] / mb.min(axis=1), ma[rows, mb.argmin(axis=1)] / ma.min(axis=1)]
            out.setdefault(wl, {})[k] = float(np.mean(ratios))
    return pd.DataFrame(out).T.rename_axis("workload")


def regrets(df, trials=None):
    """Per setting and workload: every candidate's and `auto`'s regret (mean error over the trials)
    against the in-sample and the cross-fitted oracle; columns ``<name>|in`` and ``<name>|cross``."""
    import pandas as pd
    frames = []
    names = presets_of(df)
    for wl in sorted(df["workload"].unique()):
        keys, E, A = cube(df, wl, trials)
        inside, cross = oracle_estimates(E)
        means = np.column_stack([E.mean(axis=1), A.mean(axis=1)])
        f = keys.copy()
        f["workload"] = wl
        for j, name in enumerate(names + ["auto"]):
            f[f"{name}|in"] = means[:, j] / inside
            f[f"{name}|cross"] = means[:, j] / cross
        f["oracle cross/in"] = cross / inside
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def regret_table(df, trials=None):
    """Per workload, and per workload and epsilon: `auto`'s mean regret and the best fixed preset's
    (the preset of least mean regret), against both oracles, and `auto`'s gain over that preset."""
    import pandas as pd
    r = regrets(df, trials)
    names = presets_of(df)
    rows = []
    groups = [((wl, "all"), g) for wl, g in r.groupby("workload")] + list(r.groupby(["workload", "epsilon"]))
    for (wl, eps), g in groups:
        row = {"workload": wl, "epsilon": eps, "settings": len(g)}
        for how in ("in", "cross"):
            fixed = g[[f"{n}|{how}" for n in names]].mean()
            best = fixed.idxmin()
            row[f"auto ({how})"] = g[f"auto|{how}"].mean()
            row[f"best fixed ({how})"] = best.split("|")[0]
            row[f"its regret ({how})"] = fixed.min()
            row[f"gain ({how})"] = 1 - row[f"auto ({how})"] / fixed.min()
        row["oracle cross/in"] = g["oracle cross/in"].mean()
        rows.append(row)
    return pd.DataFrame(rows)


def markdown(frame, digits: int = 3) -> str:
    cols = list(frame.columns)
    lines = ["| " + " | ".join(str(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for _, row in frame.iterrows():
        lines.append("| " + " | ".join(f"{v:.{digits}f}" if isinstance(v, float) else str(v) for v in row) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--results", default="results/selector-training", help="the training sweep's folder")
    parser.add_argument("--out", default="results/selector-oracle")
    parser.add_argument("--trials", type=int, default=TRIALS)
    parser.add_argument("--scales", type=int, nargs="+", default=list(SCALES))
    parser.add_argument("--reuse", default=None, help="an earlier sweep's results.csv with the same root seed "
                        "(default: the training sweep's)")
    parser.add_argument("--csv", default=str(OUT_CSV))
    parser.add_argument("--share", type=float, default=SHARE, help="`auto`'s feature share for every workload "
                        "(its models trained for it; default: the per-workload shares of the packaged procedure, "
                        "stored in each fold's model)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    from dpbench_1d import dpbench_dir
    from selector_eval import run_folds

    from dphist.experiments.engine import run_sweep
    from dphist.selection.train import error_table, training_config
    config = training_config(args.data_dir or dpbench_dir(), args.results)
    tables = error_table(Path(args.results) / "results.csv", config)
    out = Path(args.out)
    sweep = eval_config(config, out, args.trials, args.scales)
    print("cells reused:", reuse_cells(args.reuse or Path(args.results) / "results.csv", sweep), flush=True)
    fixed = run_sweep(sweep, progress=False).output / "results.csv"
    _, autos = run_folds(config, tables, out / "auto", shares=(args.share,), scales=list(args.scales),
                         trials=args.trials)
    df = trial_table(fixed, autos, config, args.share)
    Path(args.csv).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.csv, index=False, float_format="%.6g")
    print(markdown(oracle_bias(df).reset_index()))
    print()
    print(markdown(regret_table(df)))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    raise SystemExit(main())
