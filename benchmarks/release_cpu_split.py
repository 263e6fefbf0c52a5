"""Release mode's time on two idle cores estimated from CPU time, for a machine that other processes keep
busy (``python benchmarks/release_cpu_split.py``; not part of ``make bench``).

Release mode draws a large call's exact noise on threads (:func:`dphist.kernel.exact.discrete_laplace`):
each call's parts are filled by the threads of ``dphist.segmentation.parallel.run_all``, taken in turn.
On a loaded machine (and with the kernel's autogroup scheduling, one share per session however many
threads it runs) the wall-clock ratios of ``bench_release.py`` show little of that, so this script
measures CPU time: research mode's run (``seed=1``), release mode's run on 1 thread, and release mode's
run on 2 threads split into the CPU time of each part's fill (``time.thread_time`` on the thread that
filled it) and the rest (serial: the calling thread).  Each threaded call is replayed with its parts'
measured CPU times on two idle threads taking the parts in order (what ``run_all`` does); the estimate of
the 2-thread run on two idle cores is ``serial + the sum of those replays' finishing times``, and the
estimated ratio is that over research mode's CPU time.  Estimates only: CPU time itself grows under load.

``--repeat R`` (default 5): each side timed R times, alternating, the least CPU time kept (CPU time only
grows under load: the least is the closest to an idle machine's).
"""
import argparse
import threading
import time

import numpy as np

import dphist
from dphist.kernel import exact
from dphist.segmentation import parallel

N = 2 ** 20
PRESETS = ("identity", "H", "AHP")
_parts: list = []        # (call number, first address of the part, CPU seconds) of every fill
_calls = [0]


def _install_spies():
    run_fill, fill_part = exact._run_fill, exact._fill_part

    def spy_run_fill(*args, **kwargs):
        _calls[0] += 1
        return run_fill(*args, **kwargs)

    def spy_fill_part(fill, out, per_draw, source):
        start = time.thread_time()
        fill_part(fill, out, per_draw, source)
        _parts.append((_calls[0], out.__array_interface__["data"][0], time.thread_time() - start,
                       threading.current_thread().name))

    exact._run_fill, exact._fill_part = spy_run_fill, spy_fill_part


def _replayed(parts) -> float:
    """The finishing time of ``parts`` (CPU seconds, in task order) on two idle threads taking them in turn."""
    finish = [0.0, 0.0]
    for cpu in parts:
        i = int(finish[1] < finish[0])
        finish[i] += cpu
    return max(finish)


def measure(preset: str, repeat: int) -> dict:
    pipe = dphist.make_algorithm(preset)
    x = np.random.default_rng(0).integers(0, 1000, N)
    pipe.run(x, 1.0, seed=1)
    pipe.run(x, 1.0)
    best = {"research": np.inf, "release, 1 thread": np.inf, "release, 2 threads": np.inf}
    split = None
    for _ in range(repeat):
        for side in best:
            parallel.set_threads(1 if side.endswith("1 thread") else 2)
            _parts.clear()
            start = time.process_time()
            pipe.run(x, 1.0, seed=1) if side == "research" else pipe.run(x, 1.0)
            cpu = time.process_time() - start
            if cpu < best[side]:
                best[side] = cpu
                if side.endswith("2 threads"):
                    fills = sum(p[2] for p in _parts)
                    calls = {}
                    for call, address, c, _ in sorted(_parts):
                        calls.setdefault(call, []).append(c)
                    per_thread = {}
                    for p in _parts:
                        per_thread[p[3]] = per_thread.get(p[3], 0.0) + p[2]
                    split = dict(serial=cpu - fills, fills=fills, per_thread=per_thread,
                                 replayed=sum(_replayed(parts) for parts in calls.values()))
    parallel.set_threads(None)
    estimate = split["serial"] + split["replayed"]
    return dict(best, **split, estimate=estimate)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    _install_spies()
    for preset in PRESETS:
        r = measure(preset, args.repeat)
        threads = ", ".join(f"{name} {cpu:.4f}" for name, cpu in sorted(r["per_thread"].items()))
        print(f"{preset} at 2^20: CPU s research {r['research']:.4f}, release on 1 thread {r['release, 1 thread']:.4f}"
              f" ({r['release, 1 thread'] / r['research']:.2f}x), on 2 threads {r['release, 2 threads']:.4f} = serial "
              f"{r['serial']:.4f} + fills {r['fills']:.4f} ({threads}); estimate on two idle cores "
              f"{r['estimate']:.4f} = {r['estimate'] / r['research']:.2f}x research")


if __name__ == "__main__":
    main()
