"""Executors: serial, local processes (concurrent.futures) and Dask distributed (optional).

Each takes a list of batches and yields ``(cells, rows)`` as batches finish (``cells``: the batch,
or the prefix of it that finished when Ctrl-C cut it short).  Results do not depend on the
executor: cells carry their own seeds.

``admit(batch) -> bool`` (optional; the engine's time budget, :class:`.engine.Deadline`) is asked
before a batch starts: once it says no, no further batch starts, and the batches not started are
left to the caller (the engine reports them as cut).

Ctrl-C: the serial executor keeps the cells of its batch that finished; the process executor
signals its workers (which abandon the cell in progress: :func:`.cells.stop_on_sigint`), waits at
most ``INTERRUPT_GRACE`` seconds for the finished cells of every running batch, kills what is left
and re-raises KeyboardInterrupt after yielding them, so the engine writes them to ``results.csv``.
Pool workers end with their parent (:mod:`.lifeline`).
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import signal
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Callable, Iterator

import threadpoolctl

from ..errors import DPHistError, InvalidParameter
from .cells import Cell, Job, expected_rows, install_job, run_batch, run_cells, run_installed_batch, stop_on_sigint

#: Seconds to wait for a Dask scheduler before giving up (the address is named in the error).
DASK_CONNECT_TIMEOUT = 3
#: Seconds the process executor waits, after Ctrl-C, for its workers to hand over their finished cells
INTERRUPT_GRACE = 1.0
#: batches queued per process worker: enough to keep it busy, few enough to stop soon (time budget, Ctrl-C)
QUEUED_PER_WORKER = 2


class ExecutorUnavailable(DPHistError):
    """The requested executor cannot run (Dask not installed, scheduler unreachable)."""


def blas_thread_counts() -> list[int]:
    """Threads each loaded BLAS library would use (empty when none is loaded)."""
    return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]


#: forks made by this process so far (counted by an ``os.register_at_fork`` hook; see blas_threads_limited)
_forks = 0


def _count_fork() -> None:
    global _forks
    _forks += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_parent=_count_fork)


@contextmanager
def blas_threads_limited(n: int = 1):
    """Limit the loaded BLAS libraries to ``n`` threads inside the block (threadpoolctl); restored after.

    The process executor runs its pool inside this block: on Linux the
    workers are forked and inherit the limit, so two workers on two cores do
    not also start one BLAS thread per core each.  Limiting in the parent
    matters: setting the limit in a freshly forked worker makes OpenBLAS start
    its thread pool, whose threads then busy-wait for ~0.1 s; measured on a
    120-cell sweep, the summed cell time rose 12% above serial instead of 2-3%
    (process executor 1.68x serial instead of 1.84x; BENCHMARKS.md).

    The same happens to the parent on the way out: a fork ends OpenBLAS's
    threads (its fork handler, ``blas_thread_shutdown_``) and the restored
    limit starts them again, idle, to busy-wait: measured after a 200-cell
    process sweep, the parent burned 45-70 ms of CPU in the next 0.3 s (load
    9; up to 0.1 s a thread on an idle core), taken from whatever ran next (in
    the benchmark's paired case, the serial sweep timed right after).  So when
    the block forked, each OpenBLAS library that was above ``n`` has the
    threads its restore started ended again by the same function its fork
    handler calls (exported by the library; none is called where it is
    missing), once the pool inside the block has ended: the limit stays
    restored and OpenBLAS starts its threads at the next call that has work
    for them (0.1 ms of CPU left in the next 0.3 s).
    """
    blas = _blas_controller()
    above = [lib.filepath for lib in blas.lib_controllers if lib.internal_api == "openblas" and lib.num_threads > n]
    forks = _forks
    with blas.limit(limits=n):
        yield
    if above and _forks != forks:
        _stop_idle_blas_threads(above)


_controller: tuple[int, object] | None = None


def _blas_controller():
    """threadpoolctl's controller of the loaded BLAS libraries, kept while ``sys.modules`` keeps its size.

    Building one scans every loaded shared library (1-10 ms in a sweep's parent with numba loaded, load
    3.5), once per process sweep.  A BLAS library is loaded by importing the extension module that
    links it (numpy, scipy), which adds to ``sys.modules``, so a module count unchanged since the last
    scan means the same libraries; thread counts are read from the libraries at every use, never kept.
    """
    global _controller
    import sys
    if _controller is None or _controller[0] != len(sys.modules):
        _controller = (len(sys.modules), threadpoolctl.ThreadpoolController().select(user_api="blas"))
    return _controller[1]


def _stop_idle_blas_threads(paths: list[str]) -> None:
    """End the idle threads of the OpenBLAS libraries at ``paths`` (already loaded): their
    ``blas_thread_shutdown_``, which their fork handler runs; OpenBLAS starts them again when a call
    has work for them."""
    import ctypes
    for path in paths:
        try:
            library = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_GLOBAL)
        except OSError:
            continue
        shutdown = getattr(library, "blas_thread_shutdown_", None)
        if shutdown is not None:
            shutdown.restype = ctypes.c_int
            shutdown()


def limit_blas_threads(n: int = 1) -> int:
    """Pin this process's BLAS libraries to ``n`` threads if any uses more; returns how many were above ``n``.

    Workers call this at start: a no-op when they inherited the limit from
    :func:`blas_threads_limited` (forked), a real limit when they were
    spawned or run on a Dask cluster.
    """
    above = sum(c > n for c in blas_thread_counts())
    if above:
        threadpoolctl.threadpool_limits(limits=n, user_api="blas")
    return above


def _process_worker_init(job: Job, parent: int | None = None, forked: bool = False) -> None:
    from .lifeline import exit_with_parent   # workers only: `dphist --help` does not load it
    exit_with_parent(parent)
    stop_on_sigint()
    if not forked:   # a forked worker inherited the limit (:func:`blas_threads_limited`); looking costs 2-6 ms
        limit_blas_threads(1)
    one_search_thread()
    install_job(job)


@contextmanager
def heap_frozen(on: bool = True):
    """The garbage collector's tracked objects frozen (``gc.freeze``) inside the block, unfrozen after.

    The process executor forks its workers inside this block.  A forked worker inherits the parent's
    heap (about 130,000 tracked objects once numpy, numba and the presets are loaded); a full
    collection in the worker would walk every one of them, writing to their headers and so copying
    their pages: measured on a 200-cell sweep's parent, a worker's first full collection took
    130-166 ms and 8,700 page copies (35 MB), and 0.1 ms and 3 copies with the heap frozen (load 5;
    when it strikes depends on the parent's collection counters at the fork).  Frozen, the inherited
    objects stay out of the worker's collections for its life; the parent unfreezes its own copy as
    soon as the workers exist (Python's documentation of ``gc.freeze`` recommends this before a fork).
    """
    if not on:
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def forks_prepared():
    """What the forked workers of :func:`run_processes` are forked inside: the parent's heap frozen, and
    each worker on one BLAS thread.  Yields what a worker calls first (None: nothing).

    Where every BLAS library above one thread is a pthreads OpenBLAS that exports its thread count
    ``blas_cpu_number`` (numpy's and scipy's wheels), the worker writes 1 there: OpenBLAS then runs
    its calls on the calling thread and starts no thread (measured in a forked child: no thread after
    the write and after 600 x 600 products; ``openblas_set_num_threads(1)`` there starts the pool, whose
    threads then busy-wait), and the parent's limit is never touched (a limit and its restore in the
    parent cost 1-26 ms of set-up, thread starts and joins, load 3.5-5: :func:`blas_threads_limited`).
    A fork already ends the parent's OpenBLAS threads (the library's own fork handler), so a worker
    inherits none.  Elsewhere the workers are forked inside :func:`blas_threads_limited` (they inherit
    the limit), restored as soon as they exist.
    """
    counts = _openblas_counts(1)
    if counts is None:
        with blas_threads_limited(1), heap_frozen():
            yield None
        return
    with heap_frozen():
        yield (lambda: _write_counts(counts, 1)) if counts else None


def _openblas_counts(n: int):
    """``blas_cpu_number`` of each loaded BLAS library above ``n`` threads (ctypes views), or None when
    one of them is not a pthreads OpenBLAS exporting it."""
    import ctypes
    views = []
    for lib in _blas_controller().lib_controllers:
        if lib.num_threads <= n:
            continue
        if lib.internal_api != "openblas" or getattr(lib, "threading_layer", None) != "pthreads":
            return None
        try:
            views.append(ctypes.c_int.in_dll(lib.dynlib, "blas_cpu_number"))
        except (ValueError, AttributeError):
            return None
    return views


def _write_counts(views, n: int) -> None:
    for view in views:
        view.value = n


def one_search_thread() -> None:
    """In a worker of a pool: the quadratic searches of :mod:`dphist.segmentation` on one thread
    (the pool's processes already share the cores; set through the environment so that a worker
    that never runs one does not import it)."""
    os.environ["DPHIST_THREADS"] = "1"


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def finished_prefix(batch: list[Cell], rows: list[dict], job: Job) -> list[Cell]:
    """The cells of ``batch`` whose rows are ``rows`` (the whole batch, or the prefix an interrupt left)."""
    n = i = 0
    while i < len(batch) and n + expected_rows(batch[i], job) <= len(rows):
        n += expected_rows(batch[i], job)
        i += 1
    return batch[:i]


def run_serial(batches: list[list[Cell]], job: Job, workers=None,
               admit: Callable[[list[Cell]], bool] | None = None) -> Iterator[tuple[list[Cell], list[dict]]]:
    for b in batches:
        if admit is not None and not admit(b):
            return
        rows, interrupted = run_cells(b, job, stop_on_interrupt=True)
        yield finished_prefix(b, rows, job), rows
        if interrupted:
            raise KeyboardInterrupt


def run_processes(batches, job: Job, workers=None,
                  admit: Callable[[list[Cell]], bool] | None = None) -> Iterator[tuple[list[Cell], list[dict]]]:
    workers = workers or default_workers()
    if workers == 1 or len(batches) == 1:
        yield from run_serial(batches, job, admit=admit)
        return
    context = multiprocessing.get_context()   # the default start method, named so that it can be asked
    forked = context.get_start_method() == "fork"
    if forked:   # os.fork and pipes (:mod:`.forking`): no pool manager, no round trip per batch
        from .forking import run_forked
        yield from run_forked(batches, job, workers, QUEUED_PER_WORKER,
                              lambda i, rows: (finished_prefix(batches[i], rows, job), rows),
                              admit=admit, grace=INTERRUPT_GRACE, around_forks=forks_prepared)
        return
    with blas_threads_limited(1), ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                                      initializer=_process_worker_init,
                                                      initargs=(job, os.getpid(), forked)) as pool:
        queue, pending, closed = iter(batches), {}, False

        def fill():
            nonlocal closed
            while not closed and len(pending) < QUEUED_PER_WORKER * workers:
                b = next(queue, None)
                if b is None or (admit is not None and not admit(b)):
                    closed = True
                    return
                pending[pool.submit(run_installed_batch, b)] = b

        try:
            with heap_frozen(forked):   # a forking pool starts all its workers at its first submit
                fill()
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    b = pending.pop(fut)
                    rows, interrupted = fut.result()
                    yield finished_prefix(b, rows, job), rows
                    if interrupted:   # the terminal's Ctrl-C reached a worker first
                        raise KeyboardInterrupt
                fill()
        except KeyboardInterrupt:
            with _sigint_ignored():   # a second Ctrl-C must not cut the hand-over short
                salvaged = _salvage(pool, pending)
            for b, rows in salvaged:
                yield finished_prefix(b, rows, job), rows
            raise
        finally:  # interrupted (Ctrl-C, an error): do not start the remaining batches
            for fut in pending:
                fut.cancel()


@contextmanager
def _sigint_ignored():
    """SIGINT ignored inside the block (main thread only: elsewhere no KeyboardInterrupt arrives)."""
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _salvage(pool: ProcessPoolExecutor, pending: dict) -> list[tuple[list[Cell], list[dict]]]:
    """After Ctrl-C: cancel the queued batches, tell the workers to stop (SIGINT: each abandons its cell
    in progress and returns the cells it finished), collect what arrives within ``INTERRUPT_GRACE``
    seconds, kill the workers still running.  Returns ``(batch, rows)`` of every batch that answered."""
    running = [f for f in pending if not f.cancel()]
    processes = list(getattr(pool, "_processes", {}).values())
    for p in processes:
        try:
            os.kill(p.pid, signal.SIGINT)
        except (ProcessLookupError, TypeError):
            pass
    done, _ = wait(running, timeout=INTERRUPT_GRACE) if running else (set(), set())
    out = []
    for fut in running:
        if fut in done and fut.exception() is None:
            rows, _ = fut.result()
            out.append((pending[fut], rows))
    stop_pool(pool)
    return out


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Shut ``pool`` down without waiting for its calls: queued ones cancelled, workers still running
    killed, then the pool's manager thread joined (it ends once it sees the workers gone; left
    running, it races the interpreter's exit hook, which then writes to its closed wake-up pipe)."""
    processes = list(getattr(pool, "_processes", {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.kill()
    if manager is not None:
        manager.join(timeout=5.0)


def dask_client(scheduler: str = "", workers=None, processes: bool = True):
    """A ``distributed.Client``: to ``scheduler`` if given, else on a new LocalCluster."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ExecutorUnavailable("the dask executor needs dask[distributed]: pip install 'dphist[dask]'") from None
    if scheduler:
        try:
            return Client(scheduler, timeout=DASK_CONNECT_TIMEOUT), None
        except (OSError, TimeoutError) as exc:
            raise ExecutorUnavailable(f"cannot reach the Dask scheduler at {scheduler!r} within "
                                      f"{DASK_CONNECT_TIMEOUT} s ({type(exc).__name__}); is it running?") from None
        except ValueError as exc:
            raise InvalidParameter(f"Dask scheduler address {scheduler!r} is malformed: {exc}") from None
        except Exception as exc:  # something answered, but not a Dask scheduler (a proxy, another service)
            raise ExecutorUnavailable(f"no Dask scheduler at {scheduler!r}: the connection failed with "
                                      f"{type(exc).__name__}: {str(exc)[:200]}") from None
    cluster = LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1, processes=processes,
                           dashboard_address=None)
    return Client(cluster), cluster


def run_dask(batches, job: Job, workers=None, scheduler: str = "", client=None,
             processes: bool = True, admit: Callable[[list[Cell]], bool] | None = None
             ) -> Iterator[tuple[list[Cell], list[dict]]]:
    """Batches as Dask tasks; ``client`` (an existing ``distributed.Client``) takes precedence.
    Every batch is submitted at once; ``admit([])`` (is there time left?) is asked as each finishes,
    and a refusal cancels the tasks not finished."""
    from dask.distributed import as_completed
    own_cluster = None
    if client is None:
        client, own_cluster = dask_client(scheduler, workers, processes)
        owns_client = True
    else:
        owns_client = False
    try:
        if any(pid != os.getpid() for pid in client.run(os.getpid).values()):
            client.run(limit_blas_threads, 1)   # workers in their own processes: one BLAS thread each
        job_future = client.scatter(job, broadcast=True)
        futures = {client.submit(run_batch, b, job_future, pure=False): i for i, b in enumerate(batches)}
        for fut in as_completed(list(futures)):
            yield batches[futures[fut]], fut.result()
            if admit is not None and not admit([]):
                client.cancel([f for f in futures if not f.done()])
                return
    finally:
        if owns_client:
            client.close()
        if own_cluster is not None:
            own_cluster.close()


EXECUTORS = {"serial": run_serial, "process": run_processes, "dask": run_dask}
