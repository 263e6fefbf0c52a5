"""DPBench's 2-D benchmark with dphist: ``python benchmarks/dpbench_2d_sweep.py [--moderate] [--summary FILE]``.

Runs the sweep of ``benchmarks/dpbench-2d.toml`` (the grid and its sources are described there) with
the experiment engine and writes its per-setting summary (one row per algorithm, source, domain,
scale and epsilon: the mean scaled L2 error over the trials, its standard deviation, the number of
trials and the mean run time), the small file ``notebooks/dpbench-2d.ipynb`` reads.  ``--moderate`` is
the grid that file holds (:func:`moderate`: 64^2 and 128^2 cells, 5 trials; a few minutes on two
cores); without it the full grid of the TOML.  ``--domains``, ``--scales`` and ``--trials`` cut it down;
the notebook's second summary (:data:`FULL_SUMMARY`) is the whole grid with its 10 trials::

    python benchmarks/dpbench_2d_sweep.py --summary notebooks/data/dpbench-2d-full-summary.csv

(72,000 runs; run with ``--trials 3``, then resumed to 6 and to 10 in the same output folder: 32 minutes
in all on two shared cores at ``nice -n 19``).  Trials can be added that way: the engine seeds every run
from its cell, so the first trials of a longer run are the same runs (the whole grid's first 5 trials at
64^2 and 128^2 reproduce the moderate summary's means to 5e-10, relative).

The DPBench sources are found as the tests find them (``tests/conftest.py``): ``DPHIST_SHARED``, else a
``shared`` folder beside the repository, then ``datasets/peer-dpbench/2D``.  Without them the sweep
runs on four seeded stand-in grids (Gaussian bumps on a faint background, :func:`stand_in`) instead,
and says so.  Seeds: the engine derives every run's seed from the cell's coordinates and the sweep's
root seed, so a subset of the grid run anywhere (the notebook's live cells, :func:`live_subset`)
gives the same numbers as the full sweep.  Not a speed benchmark: ``make bench`` does not run it.
"""
from __future__ import annotations

import argparse
import csv
import os
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CONFIG = Path(__file__).resolve().parent / "dpbench-2d.toml"
SUMMARY = ROOT / "notebooks" / "data" / "dpbench-2d-summary.csv"
#: the whole grid's summary (every domain, 10 trials), beside the moderate one
FULL_SUMMARY = ROOT / "notebooks" / "data" / "dpbench-2d-full-summary.csv"
#: the moderate grid (the stored summary): domains per axis and trials; every source, scale and epsilon
MODERATE = {"domains": (64, 128), "trials": 5}
#: the notebook's live subset of the moderate grid
LIVE = {"datasets": ("GOWALLA", "ADULT-2D"), "domains": (64,), "scales": (1_000_000,), "epsilons": (0.1,),
        "trials": 5}
SUMMARY_FIELDS = ("algorithm", "dataset", "domain", "scale", "epsilon", "trials", "mean", "sd", "seconds")


def dpbench_dir() -> Path | None:
    """``<shared>/datasets/peer-dpbench/2D`` by the documented search, or None when absent."""
    env = os.environ.get("DPHIST_SHARED")
    shared = Path(env).expanduser() if env else ROOT.parent / "shared"
    path = shared / "datasets" / "peer-dpbench" / "2D"
    return path if path.is_dir() else None


def stand_in(seed: int, side: int = 256) -> np.ndarray:
    """A seeded 2-D shape: ``bench_grids.field`` (Gaussian bumps on a faint background, 10 records a cell)."""
    import sys
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    from bench_grids import field
    return field(side, seed=seed)


def load_config(data_dir: Path | None = None):
    """The TOML's sweep and what it runs on; on four stand-in grids (and a note) when ``data_dir`` is None."""
    from dphist.datasets.files import add_data_dir
    from dphist.experiments.config import DatasetSpec, SweepConfig
    config = SweepConfig.from_toml(CONFIG)
    if data_dir is not None:
        add_data_dir(data_dir)
        return config, "DPBench's 2-D sources"
    folder = Path(tempfile.gettempdir()) / "dphist-dpbench-2d-stand-ins"
    folder.mkdir(exist_ok=True)
    for k in range(4):
        path = folder / f"bumps-{k}.npy"
        if not path.exists():
            np.save(path, stand_in(k))
    add_data_dir(folder)          # a data directory's .npy grid loads as a grid
    specs = [DatasetSpec(f"bumps-{k}") for k in range(4)]
    return replace(config, datasets=specs), "seeded stand-in grids (the DPBench 2-D sources are absent)"


def moderate(config):
    """The grid of the stored summary (a copy): 64^2 and 128^2 cells, 5 trials, everything else as the TOML."""
    return replace(config, domains=list(MODERATE["domains"]), trials=MODERATE["trials"])


def live_subset(config, on_dpbench: bool = True):
    """The notebook's live cells (a copy of ``config`` cut down): two sources, 64^2 cells, 10^6 records,
    epsilon 0.1, 5 trials; on the stand-ins, their first two."""
    keep = [d for d in config.datasets if d.name in LIVE["datasets"]] if on_dpbench else config.datasets[:2]
    return replace(config, datasets=keep, domains=list(LIVE["domains"]), scales=list(LIVE["scales"]),
                   epsilons=list(LIVE["epsilons"]), trials=LIVE["trials"], limits={})


def summarize(results, metric: str = "scaled-l2") -> list[dict]:
    """One row per (algorithm, dataset, domain, scale, epsilon): mean, standard deviation (ddof 1) and
    number of the trials' errors, and their mean run time (seconds)."""
    sel = results.filter(metric=metric, reference="sample")
    groups: dict[tuple, list] = {}
    for a, d, n, s, e, v, t in zip(sel["algorithm"], sel["dataset"], sel["domain"], sel["scale"], sel["epsilon"],
                                   sel["value"], sel["time_total"]):
        groups.setdefault((str(a), str(d), int(n), int(s), float(e)), []).append((float(v), float(t)))
    rows = []
    for (a, d, n, s, e), vt in sorted(groups.items()):
        v = np.array([x for x, _ in vt])
        rows.append(dict(algorithm=a, dataset=d, domain=n, scale=s, epsilon=e, trials=v.size, mean=float(v.mean()),
                         sd=float(v.std(ddof=1)) if v.size > 1 else 0.0,
                         seconds=float(np.mean([t for _, t in vt]))))
    return rows


def write_summary(rows: list[dict], path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=SUMMARY_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({**r, "mean": f"{r['mean']:.10g}", "sd": f"{r['sd']:.6g}", "seconds": f"{r['seconds']:.4g}"})


def read_summary(path=SUMMARY) -> list[dict]:
    with open(path, newline="") as fh:
        return [dict(algorithm=r["algorithm"], dataset=r["dataset"], domain=int(r["domain"]), scale=int(r["scale"]),
                     epsilon=float(r["epsilon"]), trials=int(r["trials"]), mean=float(r["mean"]), sd=float(r["sd"]),
                     seconds=float(r["seconds"])) for r in csv.DictReader(fh)]


def main(argv=None) -> int:
    from dphist.experiments.engine import run_sweep
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moderate", action="store_true", help="the stored summary's grid (64^2, 128^2, 5 trials)")
    parser.add_argument("--output", default=None, help="results folder (default: the TOML's output)")
    parser.add_argument("--summary", default=None, help=f"summary CSV (default with --moderate: {SUMMARY})")
    parser.add_argument("--domains", type=int, nargs="+", default=None, help="sides per axis (default: the TOML's)")
    parser.add_argument("--scales", type=int, nargs="+", default=None, help="scales (default: the TOML's)")
    parser.add_argument("--trials", type=int, default=None, help="trials per setting (default: the TOML's)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: every core)")
    parser.add_argument("--force", action="store_true", help="start over instead of resuming")
    args = parser.parse_args(argv)
    data = dpbench_dir()
    config, what = load_config(data)
    if args.moderate:
        config = moderate(config)
    if args.domains:
        config = replace(config, domains=list(args.domains))
    if args.scales:
        config = replace(config, scales=list(args.scales))
    if args.trials:
        config = replace(config, trials=args.trials)
    if args.workers:
        config = replace(config, workers=args.workers)
    print(f"DPBench 2-D grid on {what}: {len(config.algorithms)} algorithms x {len(config.datasets)} sources x "
          f"domains {config.domains} x {len(config.scales)} scales x {len(config.epsilons)} eps x {config.trials} trials")
    outcome = run_sweep(config, output=args.output, force=args.force)
    print(f"{outcome.cells_run} runs in {outcome.wall_seconds:.0f} s ({outcome.cells_resumed} resumed)")
    summary = args.summary or (SUMMARY if args.moderate and data is not None else None)
    if summary:
        write_summary(summarize(outcome.results), summary)
        print(f"summary: {summary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
