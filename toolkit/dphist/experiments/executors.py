"""Executors: serial, local processes (concurrent.futures) and Dask distributed (optional).

Each takes a list of batches and yields ``(batch, rows)`` as batches finish.
Results do not depend on the executor: cells carry their own seeds.
"""
from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Iterator

import threadpoolctl

from ..errors import DPHistError, InvalidParameter
from .cells import Cell, Job, install_job, run_batch, run_installed_batch

#: Seconds to wait for a Dask scheduler before giving up (the address is named in the error).
DASK_CONNECT_TIMEOUT = 3


class ExecutorUnavailable(DPHistError):
    """The requested executor cannot run (Dask not installed, scheduler unreachable)."""


def blas_thread_counts() -> list[int]:
    """Threads each loaded BLAS library would use (empty when none is loaded)."""
    return [info["num_threads"] for info in threadpoolctl.threadpool_info() if info["user_api"] == "blas"]


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
    """
    with threadpoolctl.threadpool_limits(limits=n, user_api="blas"):
        yield


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


def _process_worker_init(job: Job) -> None:
    limit_blas_threads(1)
    install_job(job)


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run_serial(batches: list[list[Cell]], job: Job, workers=None) -> Iterator[tuple[list[Cell], list[dict]]]:
    for b in batches:
        yield b, run_batch(b, job)


def run_processes(batches, job: Job, workers=None) -> Iterator[tuple[list[Cell], list[dict]]]:
    workers = workers or default_workers()
    if workers == 1 or len(batches) == 1:
        yield from run_serial(batches, job)
        return
    with blas_threads_limited(1), ProcessPoolExecutor(max_workers=workers, initializer=_process_worker_init,
                                                      initargs=(job,)) as pool:
        pending = {pool.submit(run_installed_batch, b): b for b in batches}
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    yield pending.pop(fut), fut.result()
        finally:  # interrupted (Ctrl-C, an error): do not start the remaining batches
            for fut in pending:
                fut.cancel()


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
             processes: bool = True) -> Iterator[tuple[list[Cell], list[dict]]]:
    """Batches as Dask tasks; ``client`` (an existing ``distributed.Client``) takes precedence."""
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
    finally:
        if owns_client:
            client.close()
        if own_cluster is not None:
            own_cluster.close()


EXECUTORS = {"serial": run_serial, "process": run_processes, "dask": run_dask}
