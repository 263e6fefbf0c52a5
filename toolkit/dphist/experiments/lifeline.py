"""Worker processes that exit when their parent dies.

A pool worker whose parent is killed (SIGKILL, the OOM killer) is re-parented to init and would
live on, holding its memory, until killed by hand.  :func:`exit_with_parent` is called first thing
in a worker (the sweep's process executor, the audit's forked workers) and arms two mechanisms:

* on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` through ``ctypes``: the kernel kills the worker
  the moment the thread that forked it ends (pools are started by the main thread, which outlives
  them);
* everywhere, a daemon thread that polls the parent every ``WATCH_SECONDS`` and ends the worker
  with ``os._exit`` once it is gone (re-parented, or the expected pid no longer exists): the
  fallback where ``prctl`` is missing, and the guard for a parent that died before the signal was
  armed.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

#: seconds between two looks at the parent by the watchdog thread
WATCH_SECONDS = 0.5
#: the worker's exit status when its parent is gone
ORPHAN_EXIT = 70
_PR_SET_PDEATHSIG = 1

_armed_in: int | None = None   #: the pid that armed (a forked child of an armed worker arms again)


def _parent_gone(first_ppid: int, parent: int | None) -> bool:
    if os.getppid() != first_ppid:      # re-parented: the process that started us has ended
        return True
    if parent is None or parent == first_ppid:
        return False
    try:                                 # started through an intermediate (a fork server): watch the pid given
        os.kill(parent, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _set_pdeathsig() -> bool:
    """Ask the Linux kernel to SIGKILL this process when its parent ends; False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def exit_with_parent(parent: int | None = None, watch: float = WATCH_SECONDS) -> None:
    """Make this (worker) process end when its parent does; ``parent``: the pid the pool was started
    from (``os.getpid()`` in the parent, passed to the worker), checked at once and by the watchdog.

    Idempotent within a process.  Exits at once (``os._exit(ORPHAN_EXIT)``) when the parent is
    already gone.
    """
    global _armed_in
    if _armed_in == os.getpid():
        return
    _armed_in = os.getpid()
    first_ppid = os.getppid()
    _set_pdeathsig()
    if _parent_gone(first_ppid, parent) or (parent is not None and first_ppid == 1 and parent != 1):
        os._exit(ORPHAN_EXIT)           # the parent died before the signal was armed

    def watchdog():
        while True:
            time.sleep(watch)
            if _parent_gone(first_ppid, parent):
                os._exit(ORPHAN_EXIT)

    threading.Thread(target=watchdog, name="dphist-exit-with-parent", daemon=True).start()


__all__ = ["ORPHAN_EXIT", "WATCH_SECONDS", "exit_with_parent"]
