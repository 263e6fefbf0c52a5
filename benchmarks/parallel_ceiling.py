"""The two-core targets against this machine's own ceiling, round by round (not part of ``make bench``).

``python benchmarks/parallel_ceiling.py [--rounds R] [--only NAME]``: for each case of
``bench_parallel`` with a ceiling (below) and for the 200-cell sweep of ``bench_startup``, every round
times, one right after the other,

* the case's 2-worker side and its 1-worker side (2 threads / 1 thread, or the process sweep / the
  serial sweep): the target's ratio;
* the same 1-worker work twice at once in two forked processes, and twice one after the other in one
  forked process (``_cases.machine_ceiling``): the ceiling, the least any two-core code doing this
  work reads in that round (0.5 on two idle cores of their own).

It prints both ratios per round and their quotient (the code's ratio over the machine's: 1.0 = the
code loses nothing to its threads or workers beyond what two independent processes lose), with the
load average.  A target of 1/1.7 or 1/1.8 cannot read as met in a round whose ceiling is above it.
"""
from __future__ import annotations

import argparse
import os

import bench_parallel as P
import bench_startup as T
from _cases import _in_forked_children
from run import _timed


def _seconds(fn, *args) -> float:
    return _timed(fn, args)


def _parallel_case(label, setup, call):
    """``call(args, threads)`` as in ``bench_parallel``; the ceiling's work is ``call(args, 1)``."""
    return label, setup, (lambda a: call(a, 2)), (lambda a: call(a, 1)), (lambda *a: call(a, 1)), None


def _cases():
    from dphist import segmentation as S
    optimal = lambda a, t: S.optimal(a[0], threads=t)   # noqa: E731
    sweep_settle = T._workers_ended
    return [
        _parallel_case("NF's search, n=32,768", P._nf(32768), optimal),
        _parallel_case("AHP-optimal's search, n=32,768", P._ahp(32768), optimal),
        _parallel_case("S_2, n=32,768", lambda: (P._noisy(32768),), P._s2),
        _parallel_case("DAWA exact / S_1, n=8,192", lambda: (P._noisy(8192, rounded=True),), P._dawa_exact),
        _parallel_case("SF, power law, n=4,096", P.synthetic_setup("SF", "zipf", 4096, 40960, epsilon=0.1),
                       P._preset),
        ("200-cell sweep", T._sweep_setup, (lambda a: T._sweep(*a)), (lambda a: T._serial(*a)),
         (lambda *a: T._serial(*a)), sweep_settle),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="")
    options = parser.parse_args()
    for label, setup, two, one, work, settle in _cases():
        if options.only and options.only not in label:
            continue
        args = setup()
        settle = settle or (lambda: None)
        for fn in (two, one):          # warm-up: imports, compiles, caches
            fn(args)
            settle()
        print(f"{label}: 2-worker / 1-worker, ceiling (2 processes at once / one after the other), quotient, load")
        for _ in range(options.rounds):
            t2 = _seconds(two, args)
            settle()
            t1 = _seconds(one, args)
            pair = _seconds(_in_forked_children, [1, 1], work, args)
            serial = _seconds(_in_forked_children, [2], work, args)
            code, machine = t2 / t1, pair / serial
            print(f"  {code:.3f}  {machine:.3f}  {code / machine:.2f}  {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
