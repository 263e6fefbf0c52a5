"""The process executor's workers on Linux and other fork platforms: ``os.fork`` and two kinds of pipe.

A sweep's batches are known before its workers start, so a forked worker inherits them and the job
(nothing is pickled on the way in) and only needs to learn *which* batch to run next.  That is a
shared pipe of batch numbers (4 bytes each): the parent writes the numbers of the batches it admits,
every worker reads 4 bytes when it is free, and the pipe hands each number to exactly one reader (a
write of at most ``PIPE_BUF`` bytes is atomic and every read takes one whole number under the pipe's
lock), so a free worker starts its next batch without a round trip through the parent.  Closing the
parent's end ends the workers once the pipe is empty (end of file).  Each worker sends back one
message per batch on a pipe of its own (an 8-byte length, then the pickled ``(batch number, rows,
interrupted)``, or the batch number and the exception a cell raised), and leaves by ``os._exit``
once it has written its last message: no interpreter shutdown, no inherited buffers flushed twice.

The parent only waits (``select.poll`` on the result pipes), turns messages into results and tops up
the pipe of numbers when a time budget admits batches one at a time.  Compared with
:class:`concurrent.futures.ProcessPoolExecutor` there is no manager thread, no call and result queues
with their feeder threads, no per-batch submission and no per-worker initializer call.

Failures: a cell's exception is raised in the parent with the worker's traceback as its cause; a
worker that ends without finishing the batch it took (killed, or ``os._exit`` in user code) raises
:class:`WorkerDied` naming its pid and how it ended.  Either way the other workers are killed and the
sweep has no table.  Ctrl-C: see :func:`run_forked`.
"""
from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import threading
import time
import traceback
from contextlib import nullcontext
from typing import Callable, Iterator

from ..errors import DPHistError
from .cells import Cell, Job, run_cells, stop_on_sigint

_NUMBER = 4          #: bytes of a batch number in the shared pipe
_LENGTH = 8          #: bytes of a message's length on a result pipe
#: batch numbers queued ahead of the workers when no time budget paces them (at most PIPE_BUF bytes in the
#: pipe, so the parent's writes never block)
_QUEUE_CAP = select.PIPE_BUF // _NUMBER


class WorkerDied(DPHistError):
    """A forked worker of the process executor ended before it finished the batches it took."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (its text), attached as the exception's cause."""

    def __str__(self) -> str:
        return self.args[0]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_exact(fd: int, n: int) -> bytes:
    """``n`` bytes from ``fd``, or fewer if the writer closed it first."""
    parts, left = [], n
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _send(fd: int, message: tuple) -> None:
    data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
    _write_all(fd, len(data).to_bytes(_LENGTH, "little") + data)


def _worker(numbers: int, out: int, batches: list[list[Cell]], job: Job, parent: int, close: list[int],
            first: Callable[[], None] | None) -> None:
    """A forked worker's life: ``first()``, close the parent's pipe ends ``close``, run the batches whose
    numbers it reads, send their rows, ``os._exit``."""
    status = 1
    try:
        if first is not None:
            first()
        for fd in close:
            os.close(fd)
        from .executors import one_search_thread
        from .lifeline import exit_with_parent
        exit_with_parent(parent)
        stop_on_sigint()
        one_search_thread()
        while True:
            raw = os.read(numbers, _NUMBER)
            if len(raw) != _NUMBER:       # end of file: no batch left
                break
            i = int.from_bytes(raw, "little")
            try:
                rows, interrupted = run_cells(batches[i], job, stop_on_interrupt=True)
            except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
                _send_error(out, i, exc)
                break
            _send(out, (i, rows, interrupted))
            if interrupted:
                break
        status = 0
    except BaseException:  # noqa: BLE001 - a worker never unwinds into its parent's code
        status = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(status)


def _send_error(out: int, i: int, exc: Exception) -> None:
    text = "".join(traceback.format_exception(exc))
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - an exception that does not survive pickling: its text instead
        exc = DPHistError(f"{type(exc).__name__}: {exc}")
    _send(out, (i, None, exc, text))


class _Reaper:
    """One daemon thread per process reaping the workers of finished sweeps, started at the first sweep
    and then fed their pids: a sweep returns at its last result while its workers are still exiting, and
    a thread started per sweep cost that sweep 0.4-8 ms (median 3 ms of a 230 ms 200-cell sweep) waiting
    for the new thread to be scheduled beside the two exiting workers.  A pid stays pending until it is
    reaped, so :func:`workers_ended` sees a worker that is still exiting."""

    def __init__(self):
        self._cond = threading.Condition()
        self._pending: list[int] = []
        self._thread: threading.Thread | None = None

    def add(self, pids: list[int]) -> None:
        with self._cond:
            self._pending.extend(pids)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="dphist-reap-workers", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending:
                    self._cond.wait()
                pid = self._pending[0]
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:    # reaped elsewhere (a caller's own os.wait)
                pass
            with self._cond:
                self._pending.remove(pid)
                self._cond.notify_all()

    def ended(self, timeout: float | None) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending, timeout)


_REAPER = _Reaper()


def _fresh_reaper() -> None:
    """In a forked child (a worker, or a process forked by the user's code): the parent's reaper thread
    does not exist there, so the child's sweeps get a reaper of their own."""
    global _REAPER
    _REAPER = _Reaper()


os.register_at_fork(after_in_child=_fresh_reaper)


def workers_ended(timeout: float | None = None) -> bool:
    """Wait until the workers of every finished sweep have ended (at most ``timeout`` seconds); whether
    they all have.  A sweep returns at its last result, while its workers are still exiting (the
    benchmark waits here, untimed, so the next timed run does not share the cores with their exit)."""
    return _REAPER.ended(timeout)


def _how_it_ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        return f"was killed by signal {name}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


class _Workers:
    """The parent's side: the forked workers, their result pipes and the pipe of batch numbers."""

    def __init__(self, batches: list[list[Cell]]):
        self.batches = batches
        self.numbers_read, self.numbers_write = os.pipe()
        self.pids: dict[int, int] = {}           # result pipe -> pid
        self.poll = select.poll()
        self.written = 0                         # batch numbers written to the pipe
        self.closed = False

    def fork(self, job: Job, first: Callable[[], None] | None = None) -> None:
        out_read, out_write = os.pipe()
        for stream in (sys.stdout, sys.stderr):   # nothing buffered for the child to inherit
            stream.flush()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:   # the parent's ends of the pipes closed in the worker (never returns)
            _worker(self.numbers_read, out_write, self.batches, job, parent,
                    [out_read, *self.pids, *([] if self.closed else [self.numbers_write])], first)
        os.close(out_write)
        self.pids[out_read] = pid
        self.poll.register(out_read, select.POLLIN)

    def queue(self, n: int) -> None:
        """Write the next ``n`` batch numbers into the shared pipe."""
        if n > 0:
            _write_all(self.numbers_write, b"".join(i.to_bytes(_NUMBER, "little")
                                                    for i in range(self.written, self.written + n)))
            self.written += n

    def close(self) -> None:
        """No further batch: the workers end once the pipe is empty."""
        if not self.closed:
            os.close(self.numbers_write)
            self.closed = True

    def messages(self, timeout: float | None = None) -> Iterator[tuple]:
        """The messages that arrive within ``timeout`` seconds (None: the next ones, blocking); a
        worker's end of file reaps it, raising :class:`WorkerDied` unless it ended cleanly."""
        for fd, _ in self.poll.poll(None if timeout is None else max(0, int(timeout * 1000))):
            head = _read_exact(fd, _LENGTH)
            if len(head) == _LENGTH:
                yield pickle.loads(_read_exact(fd, int.from_bytes(head, "little")))
                continue
            self.poll.unregister(fd)
            os.close(fd)
            pid = self.pids.pop(fd)
            _, status = os.waitpid(pid, 0)
            if status != 0:
                raise WorkerDied(f"a worker process of the sweep (pid {pid}) {_how_it_ended(status)} "
                                 "before finishing its batch of cells")

    def signal(self, sig: int) -> None:
        for pid in self.pids.values():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def release(self) -> None:
        """After the last result: close the pipes and leave the workers, which end on their own (the pipe of
        numbers is closed), to be reaped by the process's reaper thread (:class:`_Reaper`).  Waiting here
        would add their exit, the kernel's teardown of an address space inherited from a large parent
        (9-18 ms measured at load 3.5), to the sweep's time."""
        self.close()
        for fd in self.pids:
            os.close(fd)
        os.close(self.numbers_read)
        self.numbers_read = -1
        pids, self.pids = list(self.pids.values()), {}
        if pids:
            _REAPER.add(pids)

    def kill(self) -> None:
        """End every worker still running (SIGKILL), reap them and close every pipe."""
        self.close()
        self.signal(signal.SIGKILL)
        for fd, pid in self.pids.items():
            os.close(fd)
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.pids.clear()
        if self.numbers_read >= 0:
            os.close(self.numbers_read)
            self.numbers_read = -1


def run_forked(batches: list[list[Cell]], job: Job, workers: int, queued_per_worker: int,
               result: Callable[[int, list[dict]], tuple], admit: Callable[[list[Cell]], bool] | None = None,
               grace: float = 1.0, around_forks: Callable | None = None) -> Iterator[tuple]:
    """Yield ``result(batch number, rows)`` as ``workers`` forked workers finish ``batches``.

    Without ``admit`` every batch number is queued at once (at most ``_QUEUE_CAP`` ahead of the
    results).  With it, ``admit(batch)`` is asked in batch order and at most ``queued_per_worker *
    workers`` admitted batches are unfinished at any time; the first refusal closes the queue.

    ``around_forks``: a context manager factory entered around the forks, yielding what each worker
    calls first or None (the executor's :func:`~.executors.forks_prepared`: one BLAS thread, the heap
    frozen).

    Ctrl-C (a KeyboardInterrupt in the parent, or a worker reporting that one reached it first): the
    queue is closed, the workers get SIGINT (each abandons its cell in progress and sends the cells it
    finished), what arrives within ``grace`` seconds is yielded, the rest are killed, and
    KeyboardInterrupt is raised again.
    """
    ahead = _QUEUE_CAP if admit is None else queued_per_worker * workers
    finished = 0

    def top_up(pool: _Workers) -> None:
        want = min(len(batches), finished + ahead) - pool.written
        if admit is None:
            pool.queue(max(0, want))
        else:
            n = 0
            while n < want and admit(batches[pool.written + n]):
                n += 1
            pool.queue(n)
            if n < want:
                pool.close()
                return
        if pool.written == len(batches):
            pool.close()

    pool = _Workers(batches)
    try:
        top_up(pool)                  # the first batches are queued before the forks: no worker waits
        with around_forks() if around_forks is not None else nullcontext() as first:
            for _ in range(min(workers, max(1, pool.written))):
                pool.fork(job, first)
        try:
            while pool.pids and not (pool.closed and finished == pool.written):
                for message in pool.messages():
                    i, rows = message[:2]
                    if rows is None:         # (batch number, None, exception, traceback text)
                        exc = message[2]
                        exc.__cause__ = RemoteTraceback(message[3])
                        raise exc
                    finished += 1
                    yield result(i, rows)
                    if message[2]:           # the terminal's Ctrl-C reached a worker first
                        raise KeyboardInterrupt
                    if not pool.closed:
                        top_up(pool)
                    elif finished == pool.written:
                        break                # the last result: other pipes can only hold ends of file
        except KeyboardInterrupt:
            for i, rows in _salvage(pool, grace):
                yield result(i, rows)
            raise
        if finished < pool.written:   # every worker ended cleanly, yet a batch it took never came back
            raise WorkerDied(f"the sweep's worker processes ended with {pool.written - finished} batch(es) "
                             "of cells unfinished")
        pool.release()
    finally:
        pool.kill()


def _salvage(pool: _Workers, grace: float) -> list[tuple[int, list[dict]]]:
    """After Ctrl-C: no further batch, SIGINT to the workers, their messages for ``grace`` seconds."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
    try:
        pool.close()
        pool.signal(signal.SIGINT)
        end = time.monotonic() + grace
        got = []
        while pool.pids and time.monotonic() < end:
            try:
                for message in pool.messages(end - time.monotonic()):
                    if message[1] is not None:
                        got.append((message[0], message[1]))
            except WorkerDied:
                continue
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return got


def _main_thread() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


__all__ = ["RemoteTraceback", "WorkerDied", "run_forked", "workers_ended"]
