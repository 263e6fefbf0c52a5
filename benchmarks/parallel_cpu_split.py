"""The 2-core speed-up of the threaded dynamic programs estimated from CPU time, for a machine that
other processes keep busy (``python benchmarks/parallel_cpu_split.py``; not part of ``make bench``).

On a loaded machine a process's threads share the cores with every other runnable thread (and, with
the kernel's autogroup scheduling, the process's session gets one share however many threads it
runs), so the wall-clock ratio of ``bench_parallel.py`` then shows little of the speed-up.  This
script times each of its cases on 1 thread and on 2, and splits the 2-thread run's CPU time into
the part outside the threaded tasks (serial: the calling thread alone) and the tasks' CPU time (on
all threads, per-thread ``time.thread_time``).  On two otherwise idle cores the run would take
about ``serial + tasks / 2`` if the tasks always split evenly; the first estimate is
``1-thread CPU time / (serial + tasks / 2)``.  The second also charges the waits at every join: each
call of ``parallel.run_all`` is replayed with its tasks' measured CPU times on two idle threads taking
the tasks in their order (what ``run_all`` does), and its time is the last thread's finish (its
critical path), so a join where one thread idles while the other finishes a long task counts (a call
of ``parallel.run_graph`` likewise: its nodes' measured CPU times replayed on two idle threads taking
the ready nodes in its order); the
estimate is ``1-thread CPU time / (serial + sum of those times)``.  Both are estimates: CPU time itself
grows under load (shared caches), which is why the 1-thread and 2-thread CPU times are printed beside them.

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
_SPANS: list[float] = []        # per run_all call: the tasks' critical path on 2 idle threads
_INSIDE = threading.local()
_run_all = parallel.run_all


def _span(durations, workers: int) -> float:
    """The finish of the last task when ``workers`` threads take the tasks in order, each the next one
    as soon as it is free (list scheduling, as parallel.run_all's threads do)."""
    free = [0.0] * max(1, workers)
    for d in durations:
        i = free.index(min(free))
        free[i] += d
    return max(free)


def _timed(call, name, durations) -> None:
    """``call()``, its CPU time kept as ``durations[name]`` and added to this thread's total."""
    _INSIDE.depth = 1
    start = time.thread_time()
    try:
        call()
    finally:
        spent = time.thread_time() - start
        _INSIDE.depth = 0
        durations[name] = spent
        me = threading.get_ident()
        _CPU[me] = _CPU.get(me, 0.0) + spent


def _timed_run_all(tasks, threads=None):
    if getattr(_INSIDE, "depth", 0):              # a call from inside a task: counted in that task
        return _run_all(tasks, threads)
    tasks = list(tasks)
    durations = [0.0] * len(tasks)
    out = _run_all([lambda i=i, t=t: _timed(t, i, durations) for i, t in enumerate(tasks)], threads)
    workers = min(len(tasks), len(tasks) if threads is None else threads)
    _SPANS.append(_span(durations, min(workers, 2)))
    return out


_run_graph = parallel.run_graph


def _graph_span(needs, durations, key, workers: int) -> float:
    """The finish of the last node when ``workers`` idle threads run the graph as ``parallel.run_graph``
    does: a free thread takes the least ready node by ``key``; a node is ready once its needs are done."""
    import heapq
    key = (lambda node: node) if key is None else key
    order = {node: i for i, node in enumerate(needs)}
    pending = {node: len(before) for node, before in needs.items()}
    after = {node: [] for node in needs}
    for node, before in needs.items():
        for other in before:
            after[other].append(node)
    ready = [(key(n), order[n], n) for n in needs if not pending[n]]
    heapq.heapify(ready)
    running, now, free = [], 0.0, workers           # running: (finish time, order, node)
    while ready or running:
        while ready and free:
            node = heapq.heappop(ready)[2]
            heapq.heappush(running, (now + durations[node], order[node], node))
            free -= 1
        now, _, node = heapq.heappop(running)
        free += 1
        for other in after[node]:
            pending[other] -= 1
            if not pending[other]:
                heapq.heappush(ready, (key(other), order[other], other))
    return now


def _timed_run_graph(work, needs, threads, key=None):
    if getattr(_INSIDE, "depth", 0):
        return _run_graph(work, needs, threads, key)
    durations = {}
    out = _run_graph(lambda node: _timed(lambda: work(node), node, durations), needs, threads, key)
    _SPANS.append(_graph_span(needs, durations, key, min(threads, 2)))
    return out


def _one(case, args) -> float:
    start = time.thread_time()
    case["reference"](*args)
    return time.thread_time() - start


def _two(case, args) -> tuple[float, float, float]:
    _CPU.clear()
    _SPANS.clear()
    start = time.thread_time()
    case["run"](*args)
    calling = time.thread_time() - start
    serial = calling - _CPU.get(threading.get_ident(), 0.0)
    return serial, sum(_CPU.values()), sum(_SPANS)


def main(argv: list[str]) -> None:
    only, repeat = None, 3
    if "--only" in argv:
        only = [part for part in argv[argv.index("--only") + 1].split("|") if part]
    if "--repeat" in argv:
        repeat = max(1, int(argv[argv.index("--repeat") + 1]))
    parallel.run_all = _timed_run_all
    parallel.run_graph = _timed_run_graph
    for case in bench_parallel.CASES:
        if case.get("factor") is None:   # the machine's ceiling (two processes): no threads to split
            continue
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
        serial, tasks, spans = min(twos, key=lambda t: t[0] + t[1])
        print(f"| {case['name'].split(' (target')[0]} | {one:.3f} | {serial:.3f} | {tasks:.3f} | "
              f"{one / (serial + tasks / 2):.2f} | {one / (serial + spans):.2f} |", flush=True)


if __name__ == "__main__":
    print("| case | 1 thread: CPU s | 2 threads: serial CPU s | 2 threads: CPU s in threaded tasks | "
          "estimated speed-up on 2 idle cores, tasks split evenly | the same, joins replayed |")
    print("|---|---|---|---|---|---|")
    main(sys.argv[1:])
