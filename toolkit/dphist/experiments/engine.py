"""The sweep engine: plan cells, skip finished ones, run them on an executor, save a tidy table.

A sweep is algorithms x datasets x domain sizes x scales x epsilons x trials
(the DPBench generator supplies the data: :mod:`dphist.datasets.generator`).
Everything that can be checked is checked before a cell runs, so bad input
leaves nothing half-written.  Rows are appended to ``results.csv`` as batches
finish; restarting the same sweep skips the cells already complete there, and
reports them whatever the new per-algorithm limits (a cell a limit would cut
but that is already finished is a result, not a gap).  An output folder that
holds another sweep (its ``config.json`` differs in what the cells compute) is
refused unless ``force``.  A ``deadline`` (:class:`Deadline`) stops starting
batches once the next one is predicted to end after it; the cells not started
are reported as cut.  Ctrl-C keeps the finished cells of the running batches
(:mod:`.executors`).
"""
from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..datasets import load as load_dataset
from ..datasets.generator import reduce_domain
from ..errors import InvalidParameter
from ..presets import make_algorithm
from ..registry import default_registry, import_modules
from .cells import Cell, Job, expected_rows, workload_for
from .config import SweepConfig
from .executors import EXECUTORS, dask_client, default_workers
from .results import CsvAppender, Results, _atomic_write, cell_key, read_csv_rows

RESULTS_CSV, RESULTS_JSON, CONFIG_JSON = "results.csv", "results.json", "config.json"
#: the configuration keys that decide what a sweep's cells compute: an output folder whose config.json
#: differs in one of them holds another sweep (trials, limits and the executor only add or pace cells)
SWEEP_IDENTITY = ("algorithms", "datasets", "epsilons", "scales", "domains", "workloads", "metrics",
                  "population", "seed")


@dataclass
class Plan:
    job: Job
    cells: list[Cell]
    skipped: list[dict] = field(default_factory=list)   #: cells left out by per-algorithm limits
    datasets: dict = field(default_factory=dict)        #: label -> Dataset (the sources)
    limited: list[Cell] = field(default_factory=list)   #: those cells (reported if finished earlier)


@dataclass
class SweepOutcome:
    results: Results
    wall_seconds: float
    algorithm_seconds: float          #: summed pipeline run time of the cells run now
    cells_run: int
    cells_resumed: int
    skipped: list[dict]
    output: Path | None
    cells_cut: int = 0                #: cells not started because the deadline (time budget) came


def plan(config: SweepConfig) -> Plan:
    """Resolve names, load sources and check every combination; raises before anything runs."""
    import_modules(config.plugins, where="config key 'plugins'")   # before any name is looked up
    algorithms, pipes = {}, {}
    for a in config.algorithms:
        default_registry.get("algorithm", a.name)   # UnknownComponent with the closest names
        try:
            pipes[a.key] = make_algorithm(a.name, **a.params)
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
    shapes = set()
    variants = []   # (dataset label, domain, scale, sampled)
    for label, counts in sources.items():
        for dom in config.domains:
            # a grid's domain is given per axis (the generator's one-integer form) and counted in cells
            n = counts.size if dom is None else dom ** counts.ndim
            try:
                reduced = reduce_domain(counts, dom) if n != counts.size else counts
            except InvalidParameter as exc:
                raise InvalidParameter(f"dataset {label!r}: {exc}") from None
            shapes.add(reduced.shape)
            for s in config.scales:
                variants.append((label, n, int(reduced.sum()) if s is None else s, s is not None))
    for key, pipe in pipes.items():
        for label, counts in sources.items():
            check = getattr(pipe, "check_dims", None)
            if check is not None:
                try:
                    check(counts.shape)   # a 1-D preset on a grid: the error names both, before any cell
                except InvalidParameter as exc:
                    raise InvalidParameter(f"algorithm {key!r} on dataset {label!r}: {exc}") from None
    for w in config.workloads:
        for shape in sorted(shapes):
            try:
                workload_for(w, shape)
            except InvalidParameter as exc:
                where = f"{shape[0]} bins" if len(shape) == 1 else f"a grid of {'x'.join(map(str, shape))} cells"
                raise InvalidParameter(f"workload {w!r} on {where}: {exc}") from None
    job = Job(sources, algorithms, tuple(config.workloads), tuple(config.metrics), config.population,
              plugins=tuple(config.plugins))
    cells, skipped, limited = [], [], []
    for alg in algorithms:
        lim = config.limits.get(alg, {})
        trials = min(config.trials, lim.get("trials", config.trials))
        for label, n, scale, sampled in variants:
            every = [Cell(alg, label, n, scale, sampled, float(eps), t, config.seed)
                     for eps in config.epsilons for t in range(config.trials)]
            if n > lim.get("max_domain", n):
                skipped.append({"algorithm": alg, "dataset": label, "domain": n,
                                "reason": f"domain {n} > limit max_domain={lim['max_domain']}"})
                limited += every
                continue
            cells += [c for c in every if c.trial < trials]
            if trials < config.trials:
                skipped.append({"algorithm": alg, "dataset": label, "domain": n,
                                "reason": f"trials limited to {trials} of {config.trials}"})
                limited += [c for c in every if c.trial >= trials]
    return Plan(job, cells, skipped, datasets, limited)


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


def check_same_sweep(out_dir: Path, config: SweepConfig) -> None:
    """Refuse an output folder whose ``config.json`` describes another sweep (see ``SWEEP_IDENTITY``)."""
    path = out_dir / CONFIG_JSON
    if not path.exists():
        return
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = None
    if not isinstance(earlier, dict):
        raise InvalidParameter(f"output folder {str(out_dir)!r}: {CONFIG_JSON} is unreadable; choose another "
                               "folder or pass --force to replace its results")
    now = json.loads(json.dumps(config.to_dict()))   # the same JSON round trip as the file's
    differ = [k for k in SWEEP_IDENTITY if earlier.get(k) != now.get(k)]
    if differ:
        raise InvalidParameter(f"output folder {str(out_dir)!r} holds the results of another sweep (it differs "
                               f"in {', '.join(differ)}); choose another folder or pass --force to replace them")


class Deadline:
    """A sweep's time budget: a batch is admitted only if it is predicted to end by ``at``.

    ``at`` is a :func:`time.perf_counter` value.  A batch's cost is ``predict(cell)`` summed over its
    cells (default 1 per cell), times the seconds per predicted unit measured so far (wall time x
    workers / predicted units finished; 1 before any cell finished with ``predict``, 0 without).
    Work admitted and not finished is queued ahead of the batch, shared by ``workers``.
    """

    def __init__(self, at: float, workers: int = 1, predict: Callable[[Cell], float] | None = None):
        self.at, self.workers, self.predict = at, max(1, workers), predict
        self.started: float | None = None
        self.admitted = self.finished = 0.0      # predicted units
        self.refused = False

    def _units(self, cells) -> float:
        return float(sum(self.predict(c) for c in cells)) if self.predict else float(len(cells))

    def rate(self, now: float) -> float:
        if self.finished <= 0 or self.started is None:
            return 1.0 if self.predict else 0.0
        return (now - self.started) * self.workers / self.finished

    def admit(self, batch) -> bool:
        now = time.perf_counter()
        if self.started is None:
            self.started = now
        units = self._units(batch)
        end = now + (self.admitted - self.finished + units) * self.rate(now) / self.workers
        if self.refused or now >= self.at or end > self.at:
            self.refused = True
            return False
        self.admitted += units
        return True

    def done(self, cells) -> None:
        self.finished += self._units(cells)


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


#: cells per batch of the serial executor (batches only pace the progress bar and the CSV appends there)
SERIAL_BATCH = 16
#: the parallel executors' batches: at most this many cells ...
MAX_BATCH = 64
#: ... about ``1 / (BATCHES_PER_WORKER * workers)`` of the sweep each while most of it is left ...
BATCHES_PER_WORKER = 12
#: ... and towards the end ``1 / (TAIL_SHARE * workers)`` of the cells left, but at least ``MIN_TAIL_BATCH``
TAIL_SHARE, MIN_TAIL_BATCH = 3, 2


def _batch_sizes(n: int, workers: int, executor: str) -> list[int]:
    """How many cells each batch of a sweep of ``n`` cells takes, in order.

    Serial: ``SERIAL_BATCH`` each.  Process and Dask: ``ceil(n / (12 workers))`` (at most 64) each,
    enough batches to balance the load and few enough to keep scheduling cheap; once the cells left
    would fill fewer than ``TAIL_SHARE`` such batches per worker, each batch takes a ``1 / (TAIL_SHARE
    workers)`` share of them (at least 2): the batches shrink towards the end, so the last one a
    worker receives is short and the other workers do not idle while it runs (guided
    self-scheduling, Polychronopoulos and Kuck 1987, applied to the tail only: the first batches
    keep their size, so a time budget admits them as before).
    """
    if executor == "serial":
        return [SERIAL_BATCH] * (n // SERIAL_BATCH) + ([n % SERIAL_BATCH] if n % SERIAL_BATCH else [])
    even = max(1, min(MAX_BATCH, math.ceil(n / (workers * BATCHES_PER_WORKER))))
    sizes, left = [], n
    while left > 0:
        size = min(left, even, max(MIN_TAIL_BATCH, math.ceil(left / (workers * TAIL_SHARE))))
        sizes.append(size)
        left -= size
    return sizes


def _in_order(cells: list[Cell]) -> list[Cell]:
    """The order a sweep runs its cells in and gives its table's rows in, whatever the executor."""
    # cells of one data variant together, so the worker's data and workload caches hit; the data of an
    # unsampled variant are the same in every trial, so there one algorithm's cells run back to back
    # (measured: interleaving the algorithms made the same pipeline runs 0.5% slower)
    return sorted(cells, key=lambda c: (c.dataset, c.domain, c.scale, c.trial if c.sampled else -1,
                                        c.algorithm, c.epsilon, c.trial))


def _batches(cells: list[Cell], workers: int, executor: str) -> list[list[Cell]]:
    ordered = _in_order(cells)
    out, start = [], 0
    for size in _batch_sizes(len(ordered), workers, executor):
        out.append(ordered[start:start + size])
        start += size
    return out


def run_sweep(config: SweepConfig, output=None, progress: bool = True, force: bool = False,
              client=None, dask_processes: bool = True, deadline: Deadline | None = None) -> SweepOutcome:
    """Run (or resume) ``config``; ``output=None`` uses ``config.output``, ``output=False`` keeps results in memory.

    ``deadline``: stop starting batches once the next one would end after it; the cells not started
    are counted in ``cells_cut`` and listed in ``skipped`` ("time budget").

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
            if not force:
                check_same_sweep(out_dir, config)
            done = _finished(out_dir / RESULTS_CSV, the_plan.cells + the_plan.limited, the_plan.job)
            _atomic_write(out_dir / CONFIG_JSON, lambda fh: json.dump(config.to_dict(), fh, indent=2))
        todo = [c for c in the_plan.cells if c.key not in done]
        batches = _batches(todo, workers, config.executor)
        runner = EXECUTORS[config.executor]
        kwargs = {"workers": workers}
        if config.executor == "dask":
            kwargs.update(client=client)
        if deadline is not None:
            kwargs.update(admit=deadline.admit)
        ran_keys: set = set()
        appender = CsvAppender(out_dir / RESULTS_CSV) if out_dir is not None else None
        # each batch's rows under its place in the plan: the table's rows in plan order whatever order
        # the executor's batches finish in (a batch is known by its first cell)
        place = {b[0].key: i for i, b in enumerate(batches)}
        batch_rows: dict[int, list[dict]] = {}
        algorithm_seconds = 0.0
        bar = _progress(len(todo), progress, config)
        try:
            def take(batch, rows):
                nonlocal algorithm_seconds
                if appender is not None:
                    appender.append(rows)
                if batch:
                    batch_rows[place[batch[0].key]] = rows
                algorithm_seconds += _cell_seconds(batch, rows, the_plan.job)
                ran_keys.update(c.key for c in batch)
                if deadline is not None:
                    deadline.done(batch)
                if bar is not None:
                    bar.update(len(batch))

            if batches:
                results_of = runner(batches, the_plan.job, **kwargs)
                try:
                    for batch, rows in results_of:
                        take(batch, rows)
                except KeyboardInterrupt:   # Ctrl-C between two results: the executor still hands over
                    for batch, rows in _handed_over(results_of):
                        take(batch, rows)
                    raise
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
    # finished earlier and cut by this plan's limits: still results (a limit saves work, it hides none)
    kept = [c for c in the_plan.limited if c.key in done]
    keys = {c.key for c in the_plan.cells} | {c.key for c in kept}
    if out_dir is not None and done:  # resumed: the table is what the file holds for this plan, in plan order
        all_rows, _ = read_csv_rows(out_dir / RESULTS_CSV)
        rank = {c.key: i for i, c in enumerate(_in_order(the_plan.cells + kept))}
        results = Results.from_rows(sorted((r for r in all_rows if cell_key(r) in keys),
                                           key=lambda r: rank[cell_key(r)]))
    else:
        results = Results.from_rows([r for i in sorted(batch_rows) for r in batch_rows[i]])
    missing = {(c.algorithm, c.dataset, c.domain) for c in the_plan.limited if c.key not in done}
    earlier: dict[tuple, int] = {}
    for c in kept:
        earlier[(c.algorithm, c.dataset, c.domain)] = earlier.get((c.algorithm, c.dataset, c.domain), 0) + 1
    # an entry stays while its cut leaves cells missing, with the count of its cells finished earlier
    skipped = [{**s, "finished_earlier": earlier.get((s["algorithm"], s["dataset"], s["domain"]), 0)}
               for s in the_plan.skipped if (s["algorithm"], s["dataset"], s["domain"]) in missing]
    cut = [c for c in todo if c.key not in ran_keys]
    if deadline is not None and cut:
        skipped += _cut_entries(cut)
    wall = time.perf_counter() - t0
    outcome = SweepOutcome(results, wall, algorithm_seconds, len(todo) - len(cut), len(done & keys),
                           skipped, out_dir, len(cut) if deadline is not None else 0)
    if out_dir is not None:
        results.to_json(out_dir / RESULTS_JSON, meta=sweep_meta(config, outcome))
    return outcome


def _handed_over(results_of):
    """What an executor's generator still yields once KeyboardInterrupt is thrown into it (the finished
    cells of its running batches); nothing if it has already ended (the interrupt came from inside it)."""
    try:
        item = results_of.throw(KeyboardInterrupt())
        while True:
            yield item
            item = next(results_of)
    except (KeyboardInterrupt, StopIteration):
        return


def _cut_entries(cut: list[Cell]) -> list[dict]:
    """``skipped`` entries for the cells a deadline left unstarted, one per algorithm, dataset and domain."""
    count: dict[tuple, int] = {}
    for c in cut:
        count[(c.algorithm, c.dataset, c.domain)] = count.get((c.algorithm, c.dataset, c.domain), 0) + 1
    return [{"algorithm": a, "dataset": d, "domain": n, "reason": f"time budget: {k} cell(s) not started"}
            for (a, d, n), k in sorted(count.items())]


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
            "cells_cut": outcome.cells_cut,
            "cells_resumed": outcome.cells_resumed, "skipped": outcome.skipped,
            "dphist": dphist.__version__, "numpy": np.__version__, "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "finished_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}


__all__ = ["Deadline", "Plan", "SweepOutcome", "check_same_sweep", "plan", "prepare_output", "run_sweep",
           "sweep_meta"]
