"""One cell of a sweep (a single pipeline run) and the worker that evaluates batches of cells.

Seeds: every cell's randomness comes from ``numpy.random.SeedSequence(seed,
spawn_key=...)`` whose spawn key is built from the cell's coordinates, never
from its position in the sweep, so the numbers are the same whichever
executor runs the cell and in whichever order.  The data stream (the DPBench
multinomial sample) depends on (dataset, scale, domain, trial) only, so every
algorithm and every epsilon of a trial sees the same sample.
"""
from __future__ import annotations

import signal
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..datasets.generator import reduce_domain
from ..errors import DPHistError
from ..metrics import evaluate_workloads, kl_divergence
from ..presets import make_algorithm
from ..workloads import make as make_workload
from ..workloads import make_rectangles

_DATA_STREAM, _ALGORITHM_STREAM = 0, 1


class CellFailed(DPHistError):
    """A pipeline raised while running a cell; the message names the cell and the error."""


def _word(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


@dataclass(frozen=True)
class Cell:
    algorithm: str        #: label of the algorithm in the sweep
    dataset: str          #: label of the dataset
    domain: int           #: number of bins (a grid's cells) after domain reduction
    scale: int            #: records in the data (sampled, or the source's total)
    sampled: bool         #: True when the data are a DPBench multinomial sample
    epsilon: float
    trial: int
    seed: int             #: the sweep's root seed

    @property
    def key(self) -> tuple:
        return (self.algorithm, self.dataset, self.domain, self.scale, self.epsilon, self.trial, self.seed)

    def data_seed(self) -> np.random.SeedSequence:
        return np.random.SeedSequence(self.seed, spawn_key=(
            _DATA_STREAM, _word(self.dataset), self.scale, self.domain, self.trial))

    def algorithm_seed(self) -> int:
        ss = np.random.SeedSequence(self.seed, spawn_key=(
            _ALGORITHM_STREAM, _word(self.algorithm), _word(self.dataset), self.scale, self.domain,
            _word(repr(float(self.epsilon))), self.trial))
        return int.from_bytes(ss.generate_state(4, np.uint32).tobytes(), "little")


@dataclass(frozen=True)
class Job:
    """What a worker needs besides the cells: sources, algorithm specs, workloads, metrics."""

    sources: dict            #: dataset label -> source counts (int64)
    algorithms: dict         #: algorithm label -> (preset name, overrides)
    workloads: tuple
    metrics: tuple
    population: bool
    plugins: tuple = ()      #: modules imported before the batch runs (their runtime registrations)


# per-process caches: a worker evaluates many cells on the same data and workloads
_data_cache: dict = {}
_workload_cache: dict = {}
_pipeline_cache: dict = {}


def cell_data(cell: Cell, source: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The counts a cell runs on and the population they come from (DPBench generator)."""
    key = (cell.dataset, cell.domain, cell.scale, cell.sampled, cell.trial if cell.sampled else -1, cell.seed,
           source.size)
    hit = _data_cache.get(key)
    if hit is not None:
        return hit
    reduced = reduce_domain(source, domain_target(source, cell.domain)) if cell.domain != source.size \
        else np.asarray(source)
    if cell.sampled:
        p = reduced / reduced.sum()
        counts = np.random.default_rng(cell.data_seed()).multinomial(cell.scale, p.reshape(-1)).reshape(p.shape)
        population = cell.scale * p
    else:
        counts, population = reduced, reduced.astype(float)
    if len(_data_cache) > 256:
        _data_cache.clear()
    _data_cache[key] = (counts, population)
    return counts, population


def domain_target(source: np.ndarray, cells: int):
    """What :func:`~dphist.datasets.generator.reduce_domain` reduces ``source`` to for a cell of
    ``cells`` bins: that number for a vector; for a grid, the side ``d`` with ``d ** ndim == cells``
    (every axis reduced to ``d``, the generator's one-integer form)."""
    if source.ndim == 1:
        return cells
    side = round(cells ** (1.0 / source.ndim))
    return next(d for d in (side - 1, side, side + 1) if d ** source.ndim == cells)


def workload_for(name: str, shape: tuple):
    """Workload ``name`` over a vector of ``shape[0]`` bins, or the rectangles of that name over a grid."""
    if len(shape) == 1:
        return make_workload(name, shape[0])
    return make_rectangles(name, shape)


def _workload(name: str, shape: tuple):
    wl = _workload_cache.get((name, shape))
    if wl is None:
        wl = _workload_cache[(name, shape)] = workload_for(name, shape)
    return wl


def _pipeline(label: str, spec):
    """The pipeline of ``spec`` (preset name, overrides), kept per process by label *and* spec: a later
    sweep in the same process (or on the same Dask worker) may give the label to another preset."""
    name, params = spec
    key = (label, name, repr(sorted(params.items())))
    pipe = _pipeline_cache.get(key)
    if pipe is None:
        pipe = _pipeline_cache[key] = make_algorithm(name, **params)
    return pipe


@dataclass
class _Ran:
    """A cell's pipeline run, waiting to be scored."""
    cell: Cell
    release: object
    seconds: float
    counts: np.ndarray
    population: np.ndarray


def _run_pipeline(cell: Cell, job: Job, seed: int) -> _Ran:
    counts, population = cell_data(cell, job.sources[cell.dataset])
    pipe = _pipeline(cell.algorithm, job.algorithms[cell.algorithm])
    t = time.perf_counter()
    release = pipe.run(counts, cell.epsilon, seed=seed)
    return _Ran(cell, release, time.perf_counter() - t, counts, population)


def _score(ran: _Ran, job: Job) -> list[dict]:
    """One row per workload x metric (x reference) for a finished run."""
    cell, release = ran.cell, ran.release
    estimate = release.estimate
    # a grid's cells in row-major order, as the release's estimate (the workloads take either form)
    references = [("sample", ran.counts.astype(float).reshape(-1))]
    if job.population and cell.sampled:
        references.append(("population", np.asarray(ran.population, dtype=float).reshape(-1)))
    if release.unattributed:
        # an unattributed release is a sorted vector (Hay et al. 2010, Sec. 3): score it against sorted truth
        references = [(r, np.sort(x)) for r, x in references]
    base = {"algorithm": cell.algorithm, "dataset": cell.dataset, "domain": cell.domain, "scale": cell.scale,
            "epsilon": cell.epsilon, "trial": cell.trial, "seed": cell.seed, "sampled": cell.sampled,
            "unattributed": bool(release.unattributed), "time_total": ran.seconds,
            **{f"time_{s}": float(release.timings.get(s, 0.0))
               for s in ("initializer", "sorter", "partitioner", "finalizer")}}
    rows = []
    workload_metrics = [m for m in job.metrics if m != "kl"]
    for ref, truth in references:
        # one pass over each workload's query errors for all its metrics (dphist.metrics.evaluate_workloads)
        values = evaluate_workloads({w: _workload(w, ran.counts.shape) for w in job.workloads}, truth, estimate,
                                    workload_metrics)
        for metric in job.metrics:
            if metric == "kl":
                rows.append({**base, "workload": "histogram", "metric": "kl", "reference": ref,
                             "value": kl_divergence(truth, estimate)})
                continue
            for wname in job.workloads:
                rows.append({**base, "workload": wname, "metric": metric, "reference": ref,
                             "value": values[wname][metric]})
    return rows


def expected_rows(cell: Cell, job: Job) -> int:
    per_ref = sum(1 if m == "kl" else len(job.workloads) for m in job.metrics)
    return per_ref * (2 if job.population and cell.sampled else 1)


_installed_job: Job | None = None


def install_job(job: Job) -> None:
    """Process-pool initializer: the job (sources, specs) is sent once per worker, not per batch."""
    global _installed_job
    _installed_job = job


def run_installed_batch(cells: list[Cell]) -> tuple[list[dict], bool]:
    """A process worker's batch: the rows of the cells finished, and whether Ctrl-C cut the batch short."""
    return run_cells(cells, _installed_job, stop_on_interrupt=True)


#: a batch scores its finished runs once their estimates hold this many bins in total (bounds memory)
SCORE_EVERY_BINS = 1 << 20


class _Interrupt:
    """Ctrl-C in a process worker (:func:`stop_on_sigint`): ``requested`` once a SIGINT came; it raises
    KeyboardInterrupt only while a pipeline runs (``running``), so a worker waiting for work survives."""
    requested = False
    running = False


def _on_sigint(signum, frame):
    if _Interrupt.requested:            # the terminal's SIGINT and the parent's: act on the first only
        return
    _Interrupt.requested = True
    if _Interrupt.running:
        raise KeyboardInterrupt


def stop_on_sigint() -> None:
    """Process-worker initializer: on SIGINT abandon the cell in progress, return the finished ones
    (:func:`run_cells`), and run no further cell."""
    _Interrupt.requested = _Interrupt.running = False
    signal.signal(signal.SIGINT, _on_sigint)


def run_batch(cells: list[Cell], job: Job) -> list[dict]:
    """Worker entry point (must be importable for process and Dask executors): the rows of ``cells``."""
    return run_cells(cells, job)[0]


def run_cells(cells: list[Cell], job: Job, stop_on_interrupt: bool = False) -> tuple[list[dict], bool]:
    """The rows of ``cells`` run in order, and whether a Ctrl-C stopped them early.

    With ``stop_on_interrupt`` a KeyboardInterrupt (or a SIGINT caught by :func:`stop_on_sigint`)
    abandons the cell in progress; the cells finished before it are scored and returned, so their
    rows are kept (``(rows of a prefix of cells, True)``).  Without it the interrupt propagates.

    The engine's own work is done in runs, not between pipeline runs: the
    seeds of the batch are derived first and the runs are scored together
    (every ``SCORE_EVERY_BINS`` bins of estimates).  Measured on the overhead
    benchmark (BENCHMARKS.md), deriving a seed right after a pipeline run took
    40 us instead of 14 us and scoring 92 us instead of 62 us: the
    pipeline had just evicted their code and data from the CPU caches.
    """
    if job.plugins:   # a spawned or Dask worker has not imported the prototype yet (no-op once imported)
        from ..registry import import_modules
        import_modules(list(job.plugins), where="config key 'plugins'")
    seeds = [c.algorithm_seed() for c in cells]
    out: list[dict] = []
    ran: list[_Ran] = []
    held = 0
    interrupted = False
    try:
        for c, seed in zip(cells, seeds):
            if _Interrupt.requested and stop_on_interrupt:
                interrupted = True
                break
            _Interrupt.running = True
            try:
                with _naming(c):
                    done = _run_pipeline(c, job, seed)
            finally:
                _Interrupt.running = False
            ran.append(done)
            held += c.domain
            if held >= SCORE_EVERY_BINS:
                _score_into(out, ran, job)
                ran, held = [], 0
    except KeyboardInterrupt:
        if not stop_on_interrupt:
            raise
        interrupted = True
    _score_into(out, ran, job)
    return out, interrupted


def _score_into(out: list[dict], ran: list[_Ran], job: Job) -> None:
    for r in ran:
        with _naming(r.cell):
            out.extend(_score(r, job))


@contextmanager
def _naming(c: Cell):
    """Name the cell in any error: the traceback of a worker process is hard to read."""
    try:
        yield
    except Exception as exc:
        raise CellFailed(f"{c.algorithm} on {c.dataset} (domain {c.domain}, scale {c.scale}, "
                         f"epsilon {c.epsilon:g}, trial {c.trial}) failed: {type(exc).__name__}: {exc}") from exc
