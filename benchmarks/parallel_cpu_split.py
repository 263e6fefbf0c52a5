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

``--only "A|B"``: the cases whose name contains A or B; ``--repeat R`` (default 3): each side timed R
times, alternating, and the least CPU time kept (CPU time only grows under load: the least is the
closest to an idle machine's).
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


def _one(case, args) -> float:
    start = time.thread_time()
    case["reference"](*args)
    return time.thread_time() - start


def _two(case, args) -> tuple[float, float]:
    _CPU.clear()
    start = time.thread_time()
    case["run"](*args)
    calling = time.thread_time() - start
    serial = calling - _CPU.get(threading.get_ident(), 0.0)
    return serial, sum(_CPU.values())


def main(argv: list[str]) -> None:
    only, repeat = None, 3
    if "--only" in argv:
        only = [part for part in argv[argv.index("--only") + 1].split("|") if part]
    if "--repeat" in argv:
        repeat = max(1, int(argv[argv.index("--repeat") + 1]))
    parallel.run_all = _timed_run_all
    for case in bench_parallel.CASES:
        if only is not None and not any(part in case["name"] for part in only):
            continue
        args = case["setup"]()
        case["reference"](*args)
        case["run"](*args)
        ones, twos = [], []
        for _ in range(repeat):
            ones.append(_one(case, args))
            twos.append(_two(case, args))
        one = min(ones)
        serial, tasks = min(twos, key=sum)
        estimate = one / (serial + tasks / 2)
        print(f"| {case['name'].split(' (target')[0]} | {one:.3f} | {serial:.3f} | {tasks:.3f} | {estimate:.2f} |",
              flush=True)


if __name__ == "__main__":
    print("| case | 1 thread: CPU s | 2 threads: serial CPU s | 2 threads: CPU s in threaded tasks | "
          "estimated speed-up on 2 idle cores |")
    print("|---|---|---|---|---|")
    main(sys.argv[1:])
