"""Threads for the quadratic searches of :mod:`dphist.segmentation` (modes (a) and (d) of the package table).

The exact searches split their work into blocks whose parts are independent (the candidate starts
of a block of ends, the cost rows of a block of first units) and run the parts on threads; the
compiled loops release the GIL (``nogil``), so plain Python threads run them on separate cores.
Every candidate's total is computed by the same arithmetic and compared in the same order as the
serial loop, so releases are bit-identical for every thread count (pinned by
``tests/test_segmentation_threads.py``).

Why Python threads and not numba's ``prange``: numba's threading layers are either not fork-safe
(GNU OpenMP, the one numba picks here: a worker forked by the experiment engine or the auditor after
a parallel run in the parent is terminated) or not thread-safe (``workqueue``: two threads of the
explorer or of a thread executor running a parallel loop at once end the process).  A pool of
Python threads is both: it is rebuilt in a forked child (keyed by the process id) and any number of
callers may share it.  The blocks are coarse (hundreds of ends, dozens of rows), so the hand-over
costs well under 1% of the search.

The thread count: the ``threads=`` argument of :func:`~dphist.segmentation.optimal`, else
:func:`set_threads`, else the environment (``DPHIST_THREADS``, then ``NUMBA_NUM_THREADS``), else
every core this process may run on.  One thread runs the serial loops.
"""
from __future__ import annotations

import os
import threading

from ..errors import InvalidParameter

_LOCK = threading.Lock()
_POOL = {"pid": None, "executor": None, "size": 0}
_PREFIX = "dphist-segmentation"
_DEFAULT = {"threads": None}


def _from_environment() -> int:
    for name in ("DPHIST_THREADS", "NUMBA_NUM_THREADS"):
        text = os.environ.get(name, "").strip()
        if text:
            try:
                value = int(text)
            except ValueError:
                raise InvalidParameter(f"{name}={text!r} is not a whole number of threads") from None
            if value < 1:
                raise InvalidParameter(f"{name}={text!r}: the number of threads must be at least 1")
            return value
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:       # not Linux
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """The thread count used when a search is given none (see the module docstring)."""
    return _DEFAULT["threads"] if _DEFAULT["threads"] is not None else _from_environment()


def set_threads(threads: int | None) -> None:
    """Set the default thread count of the quadratic searches for this process (``None``: from the
    environment again)."""
    _DEFAULT["threads"] = None if threads is None else resolve(threads)


def resolve(threads) -> int:
    """A validated thread count (``None``: :func:`default_threads`)."""
    if threads is None:
        return default_threads()
    if isinstance(threads, bool) or not hasattr(threads, "__index__"):
        raise InvalidParameter(f"threads must be a whole number >= 1, got {threads!r}")
    value = threads.__index__()
    if value < 1:
        raise InvalidParameter(f"threads must be a whole number >= 1, got {threads!r}")
    return value


def _executor(workers: int):
    from concurrent.futures import ThreadPoolExecutor
    with _LOCK:
        pid = os.getpid()
        if _POOL["pid"] != pid or _POOL["size"] < workers:
            # a forked child inherits the pool object but not its threads: build its own
            _POOL.update(pid=pid, executor=ThreadPoolExecutor(workers, thread_name_prefix=_PREFIX),
                         size=workers)
        return _POOL["executor"]


def on_pool_thread() -> bool:
    """Whether the calling thread is one of the pool's: work it hands to the pool may wait behind the very
    task it runs (a pool whose threads all wait on queued work never finishes), so it runs serially."""
    return threading.current_thread().name.startswith(_PREFIX)


def run_all(tasks, threads: int | None = None) -> None:
    """Run the callables ``tasks`` on ``threads`` threads (default: one per task), this one included:
    each thread takes the next task not yet taken, so a thread the system deschedules delays only the
    task it holds (the machine may be shared).  Waits for all, then raises the first error."""
    tasks = list(tasks)
    workers = min(len(tasks), len(tasks) if threads is None else threads)
    if workers <= 1:
        for task in tasks:
            task()
        return
    queue = iter(tasks)
    lock = threading.Lock()
    errors = []

    def drain():
        while True:
            with lock:
                task = next(queue, None)
            if task is None:
                return
            try:
                task()
            except BaseException as exc:  # noqa: BLE001 - re-raised once every task is done
                errors.append(exc)

    futures = [_executor(workers - 1).submit(drain) for _ in range(workers - 1)]
    drain()
    for future in futures:
        future.result()
    if errors:
        raise errors[0]


def run_graph(work, needs: dict, threads: int, key=None) -> None:
    """``work(node)`` for every node of ``needs`` (node -> the nodes that must be done before it), each
    once its needs are done, on ``threads`` threads (this one included) without a join between steps:
    a thread that finishes a node takes the next ready one, the least by ``key`` first (default: the
    node itself).  Waits for all, then raises the first error (no node starts after an error).  The
    order of the nodes of one chain of needs is fixed, so a computation whose every value is built
    along such chains gives the same bits on any number of threads."""
    import heapq
    key = (lambda node: node) if key is None else key
    pending = {node: len(before) for node, before in needs.items()}
    after: dict = {node: [] for node in needs}
    for node, before in needs.items():
        for other in before:
            after[other].append(node)
    ready = [(key(node), i, node) for i, node in enumerate(needs) if not pending[node]]
    heapq.heapify(ready)
    order = {node: i for i, node in enumerate(needs)}
    state = {"left": len(needs), "running": 0, "error": None}
    cond = threading.Condition()

    def drain():
        while True:
            with cond:
                # nothing ready and nothing running: every node is done, or the rest can never be ready
                while not ready and state["left"] and state["running"] and state["error"] is None:
                    cond.wait()
                if state["error"] is not None or not ready:
                    cond.notify_all()
                    return
                node = heapq.heappop(ready)[2]
                state["running"] += 1
            try:
                work(node)
            except BaseException as exc:  # noqa: BLE001 - re-raised once every thread has stopped
                with cond:
                    state["error"] = state["error"] or exc
                    state["running"] -= 1
                    cond.notify_all()
                return
            with cond:
                state["left"] -= 1
                state["running"] -= 1
                woken = 0
                for other in after[node]:
                    pending[other] -= 1
                    if not pending[other]:
                        heapq.heappush(ready, (key(other), order[other], other))
                        woken += 1
                if woken or not state["left"] or not state["running"]:
                    cond.notify_all()

    workers = max(1, min(threads, len(needs)))
    futures = [_executor(workers - 1).submit(drain) for _ in range(workers - 1)] if workers > 1 else []
    drain()
    for future in futures:
        future.result()
    if state["error"] is not None:
        raise state["error"]
    if state["left"]:
        raise ValueError("the needs of run_graph form a cycle or name a node that is not in it")


def split(lo: int, hi: int, parts: int, multiple: int = 1) -> list[tuple[int, int]]:
    """``[lo, hi)`` cut into at most ``parts`` consecutive non-empty ranges of near-equal length;
    every cut but the last falls a multiple of ``multiple`` after ``lo``."""
    size = hi - lo
    if size <= 0:
        return []
    step = -(-size // parts)
    step = -(-step // multiple) * multiple
    return [(a, min(hi, a + step)) for a in range(lo, hi, step)]
