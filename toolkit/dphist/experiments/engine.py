"""The sweep engine: plan cells, skip finished ones, run them on an executor, save a tidy table.

A sweep is algorithms x datasets x domain sizes x scales x epsilons x trials
(the DPBench generator supplies the data: :mod:`dphist.datasets.generator`).
Everything that can be checked is checked before a cell runs, so bad input
leaves nothing half-written.  Rows are appended to ``results.csv`` as batches
finish; restarting the same sweep skips the cells already complete there.
"""
from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..datasets import load as load_dataset
from ..datasets.generator import reduce_domain
from ..errors import InvalidParameter
from ..presets import make_algorithm
from ..registry import default_registry, import_modules
from ..workloads import make as make_workload
from .cells import Cell, Job, expected_rows
from .config import SweepConfig
from .executors import EXECUTORS, dask_client, default_workers
from .results import CsvAppender, Results, _atomic_write, cell_key, read_csv_rows

RESULTS_CSV, RESULTS_JSON, CONFIG_JSON = "results.csv", "results.json", "config.json"


@dataclass
class Plan:
    job: Job
    cells: list[Cell]
    skipped: list[dict] = field(default_factory=list)   #: cells left out by per-algorithm limits
    datasets: dict = field(default_factory=dict)        #: label -> Dataset (the sources)


@dataclass
class SweepOutcome:
    results: Results
    wall_seconds: float
    algorithm_seconds: float          #: summed pipeline run time of the cells run now
    cells_run: int
    cells_resumed: int
    skipped: list[dict]
    output: Path | None


def plan(config: SweepConfig) -> Plan:
    """Resolve names, load sources and check every combination; raises before anything runs."""
    import_modules(config.plugins, where="config key 'plugins'")   # before any name is looked up
    algorithms = {}
    for a in config.algorithms:
        default_registry.get("algorithm", a.name)   # UnknownComponent with the closest names
        try:
            make_algorithm(a.name, **a.params)
        except TypeError as exc:
            raise InvalidParameter(f"algorithm {a.name!r}: bad parameters {a.params}: {exc}") from None
        algorithms[a.key] = (a.name, dict(a.params))
    sources, datasets = {}, {}
    for d in config.datasets:
        try:
            ds = load_dataset(d.name, **d.params)
        except TypeError as exc:
            raise InvalidParameter(f"dataset {d.name!r}: bad parameters {d.params}: {exc}") from None
        sources[d.key] = ds.counts
        datasets[d.key] = ds
    sizes = set()
    variants = []   # (dataset label, domain, scale, sampled)
    for label, counts in sources.items():
        for dom in config.domains:
            n = counts.size if dom is None else dom
            try:
                reduced = reduce_domain(counts, n) if n != counts.size else counts
            except InvalidParameter as exc:
                raise InvalidParameter(f"dataset {label!r}: {exc}") from None
            sizes.add(n)
            for s in config.scales:
                variants.append((label, n, int(reduced.sum()) if s is None else s, s is not None))
    for w in config.workloads:
        for n in sorted(sizes):
            try:
                make_workload(w, n)
            except InvalidParameter as exc:
                raise InvalidParameter(f"workload {w!r} on {n} bins: {exc}") from None
    job = Job(sources, algorithms, tuple(config.workloads), tuple(config.metrics), config.population,
              plugins=tuple(config.plugins))
    cells, skipped = [], []
    for alg in algorithms:
        lim = config.limits.get(alg, {})
        trials = min(config.trials, lim.get("trials", config.trials))
        for label, n, scale, sampled in variants:
            if n > lim.get("max_domain", n):
                skipped.append({"algorithm": alg, "dataset": label, "domain": n,
                                "reason": f"domain {n} > limit max_domain={lim['max_domain']}"})
                continue
            for eps in config.epsilons:
                cells += [Cell(alg, label, n, scale, sampled, float(eps), t, config.seed) for t in range(trials)]
            if trials < config.trials:
                skipped.append({"algorithm": alg, "dataset": label, "domain": n,
                                "reason": f"trials limited to {trials} of {config.trials}"})
    return Plan(job, cells, skipped, datasets)


def prepare_output(path, force: bool = False) -> Path:
    """Create the output folder and prove it writable (a clear error otherwise)."""
    out = Path(path).expanduser()
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".dphist-write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise InvalidParameter(f"output folder {str(out)!r} is not writable ({exc.strerror or exc})") from None
    if force:
        for name in (RESULTS_CSV, RESULTS_JSON, CONFIG_JSON):
            (out / name).unlink(missing_ok=True)
    return out


def _finished(csv_path: Path, cells: list[Cell], job: Job) -> set:
    """Keys of the cells complete in an existing CSV; rewrites it without partial cells."""
    if not csv_path.exists():
        return set()
    rows, bad = read_csv_rows(csv_path)
    count: dict[tuple, int] = {}
    for r in rows:
        k = cell_key(r)
        count[k] = count.get(k, 0) + 1
    want = {c.key: expected_rows(c, job) for c in cells}
    done = {k for k, n in count.items() if want.get(k) == n}
    # rows of other sweeps' cells are kept; partial rows of this sweep's cells are dropped and rerun
    complete_rows = [r for r in rows if (cell_key(r) in done) or (cell_key(r) not in want)]
    if bad or len(complete_rows) != len(rows):
        from .results import _write_csv
        _atomic_write(csv_path, lambda fh: _write_csv(fh, complete_rows, header=True))
    return done


def _batches(cells: list[Cell], workers: int, executor: str) -> list[list[Cell]]:
    if executor == "serial":
        size = 16   # batches only pace the progress bar and the CSV appends here
    else:  # enough batches to balance the load, few enough to keep scheduling cheap
        size = max(1, min(64, math.ceil(len(cells) / (workers * 12))))
    # cells of one data variant together, so the worker's data and workload caches hit; the data of an
    # unsampled variant are the same in every trial, so there one algorithm's cells run back to back
    # (measured: interleaving the algorithms made the same pipeline runs 0.5% slower)
    ordered = sorted(cells, key=lambda c: (c.dataset, c.domain, c.scale, c.trial if c.sampled else -1,
                                           c.algorithm, c.epsilon, c.trial))
    return [ordered[i:i + size] for i in range(0, len(ordered), size)]


def run_sweep(config: SweepConfig, output=None, progress: bool = True, force: bool = False,
              client=None, dask_processes: bool = True) -> SweepOutcome:
    """Run (or resume) ``config``; ``output=None`` uses ``config.output``, ``output=False`` keeps results in memory.

    ``progress``: True (a ``tqdm.auto`` bar), False, or a tqdm-like class called as
    ``progress(total=, desc=, unit=, smoothing=)`` (the explorer passes a widget bar it displays itself).

    ``client`` is an existing ``dask.distributed.Client`` for the dask executor.
    """
    t0 = time.perf_counter()
    the_plan = plan(config)
    workers = config.workers or default_workers()
    own_client = own_cluster = None
    if config.executor == "dask" and client is None:
        # connect before touching the output folder: an unreachable scheduler leaves nothing behind
        own_client, own_cluster = dask_client(config.scheduler, workers, dask_processes)
        client = own_client
    try:
        out_dir = None if output is False else prepare_output(config.output if output is None else output, force)
        done: set = set()
        if out_dir is not None:
            done = _finished(out_dir / RESULTS_CSV, the_plan.cells, the_plan.job)
            _atomic_write(out_dir / CONFIG_JSON, lambda fh: json.dump(config.to_dict(), fh, indent=2))
        todo = [c for c in the_plan.cells if c.key not in done]
        batches = _batches(todo, workers, config.executor)
        runner = EXECUTORS[config.executor]
        kwargs = {"workers": workers}
        if config.executor == "dask":
            kwargs.update(client=client)
        appender = CsvAppender(out_dir / RESULTS_CSV) if out_dir is not None else None
        new_rows: list[dict] = []
        algorithm_seconds = 0.0
        bar = _progress(len(todo), progress, config)
        try:
            if batches:
                for batch, rows in runner(batches, the_plan.job, **kwargs):
                    if appender is not None:
                        appender.append(rows)
                    new_rows.extend(rows)
                    algorithm_seconds += _cell_seconds(batch, rows, the_plan.job)
                    if bar is not None:
                        bar.update(len(batch))
        finally:
            if bar is not None:
                bar.close()
            if appender is not None:
                appender.close()
    finally:
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()
    if out_dir is not None and done:  # resumed: the table is what the file holds for this plan
        all_rows, _ = read_csv_rows(out_dir / RESULTS_CSV)
        keys = {c.key for c in the_plan.cells}
        results = Results.from_rows([r for r in all_rows if cell_key(r) in keys])
    else:
        results = Results.from_rows(new_rows)
    wall = time.perf_counter() - t0
    outcome = SweepOutcome(results, wall, algorithm_seconds, len(todo), len(done & {c.key for c in the_plan.cells}),
                           the_plan.skipped, out_dir)
    if out_dir is not None:
        results.to_json(out_dir / RESULTS_JSON, meta=sweep_meta(config, outcome))
    return outcome


def _cell_seconds(batch: list[Cell], rows: list[dict], job: Job) -> float:
    """Summed pipeline time of a batch: each cell's rows are contiguous and carry the same ``time_total``."""
    total, i = 0.0, 0
    for c in batch:
        total += rows[i]["time_total"]
        i += expected_rows(c, job)
    return total


def _progress(total: int, enabled, config: SweepConfig):
    """A tqdm bar, or none; ``enabled`` may be a tqdm-like class (e.g. the explorer's widget bar)."""
    if not enabled or total == 0:
        return None
    if callable(enabled):
        return enabled(total=total, desc=f"sweep ({config.executor})", unit="cell", smoothing=0.1)
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=f"sweep ({config.executor})", unit="cell", smoothing=0.1)


def sweep_meta(config: SweepConfig, outcome: SweepOutcome) -> dict:
    """What a report records of a sweep: its configuration, timing, cell counts and the machine."""
    import dphist
    return {"config": config.to_dict(), "wall_seconds": outcome.wall_seconds,
            "algorithm_seconds": outcome.algorithm_seconds, "cells_run": outcome.cells_run,
            "cells_resumed": outcome.cells_resumed, "skipped": outcome.skipped,
            "dphist": dphist.__version__, "numpy": np.__version__, "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "finished_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}


__all__ = ["Plan", "SweepOutcome", "plan", "prepare_output", "run_sweep", "sweep_meta"]
