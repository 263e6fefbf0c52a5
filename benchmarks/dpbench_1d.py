"""DPBench's 1-D benchmark with dphist: ``python benchmarks/dpbench_1d.py [--reduced] [--output DIR]``.

Runs the sweep of ``benchmarks/dpbench-1d.toml`` (the grid and its sources are described there) and
prints each algorithm's regret (DPBench, Hay et al. SIGMOD 2016, Section 6: in each setting, the
algorithm's mean scaled L2 error over the best algorithm's; ``dphist.experiments.analysis.regret``).

The DPBench sources are found as the tests find them (``tests/conftest.py``): ``DPHIST_SHARED``, else
a ``shared`` folder beside the repository, then ``datasets/peer-dpbench/1D``.  Without them the sweep
runs on five built-in synthetic shapes of 4,096 bins instead (and says so): the same grid, other data.
``--reduced`` is the grid of ``notebooks/dpbench-1d.ipynb`` (:func:`reduced`).  Not a speed benchmark:
``make bench`` does not run it.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = Path(__file__).resolve().parent / "dpbench-1d.toml"
#: the built-in stand-ins when the DPBench sources are absent
FALLBACK_SHAPES = ("zipf", "steps", "gaussian-mixture", "spikes", "uniform")
#: the reduced grid (notebooks/dpbench-1d.ipynb): sources, domain size, epsilons, trials
REDUCED = {"datasets": ("HEPTH", "INCOME", "NETTRACE", "PATENT", "SEARCHLOGS", "MD-SAL"), "domain": 1024,
           "epsilons": (0.1,), "trials": 5, "scales": (1000, 100_000, 10_000_000)}


def dpbench_dir() -> Path | None:
    """``<shared>/datasets/peer-dpbench/1D`` by the documented search, or None when absent."""
    env = os.environ.get("DPHIST_SHARED")
    shared = Path(env).expanduser() if env else ROOT.parent / "shared"
    path = shared / "datasets" / "peer-dpbench" / "1D"
    return path if path.is_dir() else None


def load_config(data_dir: Path | None = None):
    """The TOML's sweep; on built-in shapes (and a note) when ``data_dir`` is None."""
    from dphist.datasets.files import add_data_dir
    from dphist.experiments.config import DatasetSpec, SweepConfig
    config = SweepConfig.from_toml(CONFIG)
    if data_dir is not None:
        add_data_dir(data_dir)
        return config, "DPBench's 1-D sources"
    n = config.domains[0]
    specs = [DatasetSpec("synthetic", {"shape": s, "n": n, "scale": 10 * n, "seed": 1}, label=f"synthetic-{s}")
             for s in FALLBACK_SHAPES]
    return replace(config, datasets=specs), "built-in synthetic shapes (the DPBench sources are absent)"


def reduced(config, on_dpbench: bool = True):
    """The notebook's reduced grid of ``config`` (a copy): fewer sources, 1,024 bins, fewer settings."""
    from dphist.experiments.config import DatasetSpec
    keep = [d for d in config.datasets if d.name in REDUCED["datasets"]] if on_dpbench else config.datasets[:4]
    if not on_dpbench:   # the synthetic stand-ins at the reduced domain size
        keep = [DatasetSpec(d.name, {**d.params, "n": REDUCED["domain"]}, d.label) for d in keep]
    return replace(config, datasets=keep, domains=[REDUCED["domain"]], epsilons=list(REDUCED["epsilons"]),
                   scales=list(REDUCED["scales"]), trials=REDUCED["trials"], limits={})


def main(argv=None) -> int:
    from dphist.experiments.analysis import regret
    from dphist.experiments.engine import run_sweep
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reduced", action="store_true", help="the notebook's reduced grid")
    parser.add_argument("--output", default=None, help="results folder (default: the TOML's output)")
    parser.add_argument("--force", action="store_true", help="start over instead of resuming")
    args = parser.parse_args(argv)
    data = dpbench_dir()
    config, what = load_config(data)
    if args.reduced:
        config = reduced(config, data is not None)
    print(f"DPBench 1-D grid on {what}: {len(config.algorithms)} algorithms x {len(config.datasets)} sources")
    outcome = run_sweep(config, output=args.output, force=args.force)
    table = regret(outcome.results, "scaled-l2", config.workloads[0])
    for alg, r in sorted(table.items(), key=lambda kv: kv[1]["mean"]):
        print(f"{alg:10s} mean regret {r['mean']:7.2f}   worst {r['max']:8.2f}   ({r['settings']} settings)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
