"""The 2-core speed-up of the threaded dynamic programs estimated from CPU time, for a machine that
other processes keep busy (``python benchmarks/parallel_cpu_split.py``; not part of ``make bench``).

On a loaded machine a process's threads share the cores with every other runnable thread (and, with
the kernel's autogroup scheduling, the process's session gets one share however many threads it
runs), so the wall-clock ratio of ``bench_parallel.py`` then shows little of the speed-up.  This
script times each of its cases on 1 thread and on 2, and splits the 2-thread run's CPU time into
the part outside the threaded tasks (serial: the calling thread alone) and the tasks' CPU time (on
all threads, per-thread ``time.thread_time``).  On two otherwise idle cores the run would take
about ``serial + tasks / 2``; the estimate is ``1-thread CPU time / (serial + tasks / 2)``.  It is an
estimate: CPU time itself grows under load (shared caches), which is why the 1-thread and 2-thread
CPU times are printed beside it.
"""
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_parallel  # noqa: E402
from dphist.segmentation import parallel  # noqa: E402

_CPU: dict[int, float] = {}
_run_all = parallel.run_all


def _timed_run_all(tasks, threads=None):
    def timed(task):
        def run():
            start = time.thread_time()
            task()
            me = threading.get_ident()
            _CPU[me] = _CPU.get(me, 0.0) + time.thread_time() - start
        return run
    return _run_all([timed(t) for t in tasks], threads)


def main() -> None:
    parallel.run_all = _timed_run_all
    for case in bench_parallel.CASES:
        args = case["setup"]()
        case["reference"](*args)
        case["run"](*args)
        start = time.thread_time()
        case["reference"](*args)
        one = time.thread_time() - start
        _CPU.clear()
        start = time.thread_time()
        case["run"](*args)
        calling = time.thread_time() - start
        me = threading.get_ident()
        serial = calling - _CPU.get(me, 0.0)
        tasks = sum(_CPU.values())
        estimate = one / (serial + tasks / 2)
        print(f"| {case['name'].split(' (target')[0]} | {one:.3f} | {serial:.3f} | {tasks:.3f} | {estimate:.2f} |",
              flush=True)


if __name__ == "__main__":
    print("| case | 1 thread: CPU s | 2 threads: serial CPU s | 2 threads: CPU s in threaded tasks | "
          "estimated speed-up on 2 idle cores |")
    print("|---|---|---|---|---|")
    main()
