"""Stated variances against simulation, 10^4 runs per linear preset (issue target: within 3 %).

``python benchmarks/stated_error_accuracy.py [runs]`` (default 10,000).  For every linear preset at
n = 64 (a seeded synthetic histogram), the release's stated variances (:meth:`dphist.Release.variance`)
of the 64 bins, the 64 prefixes and 32 random ranges, against the mean squared error of ``runs``
seeded releases (research mode, float Laplace; ``identity`` and ``H`` also in exact discrete noise,
seeded); BENCHMARKS.md gets this section in place.  Per preset: the ratio simulated / stated of the summed variances (the 3 % target), the
largest per-query deviation in percent and in standard errors of the simulation
(``sqrt((m4 - m2^2) / runs)``: with 10^4 runs one query's simulated variance has a standard error of
about 2 %, so single queries are judged in standard errors, the preset in the sum).  Writes
``benchmarks/results/stated_error_accuracy.md`` and its section of BENCHMARKS.md.
"""
from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import dphist
from dphist.datasets import load

HERE = Path(__file__).resolve().parent
PRESETS = [("identity", {}, None), ("identity", {}, "exact"), ("H", {}, None), ("H", {}, "exact"),
           ("H", {"level_budgets": "geometric"}, None), ("H", {"branching": 4}, None), ("Hb", {}, None),
           ("H-tilde", {}, None), ("Privelet", {}, None), ("GreedyH", {}, None),
           ("GreedyH", {"finalizer__workload": "all-ranges"}, None)]
N, EPS = 64, 0.5


def queries(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    lo = rng.integers(0, n - 1, 32)
    hi = lo + 1 + rng.integers(0, n - lo)
    rows = [np.eye(n), np.tril(np.ones((n, n)))]
    ranges = np.zeros((32, n))
    for i, (a, b) in enumerate(zip(lo, hi)):
        ranges[i, a:b] = 1.0
    return np.vstack(rows + [ranges])


def main(runs: int) -> int:
    counts = load("synthetic", shape="zipf", n=N, scale=20 * N, seed=1).counts
    Q = queries(N)
    lines = ["| preset | noise | runs | simulated / stated (sum) | worst query (%) | worst query (std. errors) | seconds |",
             "|---|---|---|---|---|---|---|"]
    failed = 0
    for name, params, noise in PRESETS:
        pipe = dphist.make_algorithm(name, **params)
        kw = {} if noise is None else {"noise": noise}
        t = time.perf_counter()
        errors = np.empty((runs, N))
        for s in range(runs):
            errors[s] = pipe.run(counts, EPS, seed=s, **kw).estimate - counts
        secs = time.perf_counter() - t
        stated = pipe.run(counts, EPS, seed=0, **kw).variance(Q)
        e = errors @ Q.T
        m2 = (e ** 2).mean(axis=0)
        se = np.sqrt(((e ** 4).mean(axis=0) - m2 ** 2) / runs)
        ratio = m2.sum() / stated.sum()
        worst_pct = 100 * np.max(np.abs(m2 / stated - 1))
        worst_z = np.max(np.abs(m2 - stated) / se)
        ok = abs(ratio - 1) <= 0.03
        failed += not ok
        label = name + ("" if not params else " " + ", ".join(f"{k}={v}" for k, v in params.items()))
        lines.append(f"| {label} | {noise or 'float'} | {runs:,} | {ratio:.4f} {'ok' if ok else 'MISSED'} | "
                     f"{worst_pct:.1f} | {worst_z:.2f} | {secs:.0f} |")
        print(lines[-1], flush=True)
    load_avg = os.getloadavg()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    text = (f"### stated error accuracy\n\nMeasured {stamp} on {machine}, load average "
            f"{load_avg[0]:.1f} / {load_avg[1]:.1f} / {load_avg[2]:.1f} (accuracy, not speed: the load does not "
            f"change the numbers).  `benchmarks/stated_error_accuracy.py`: n = {N}, eps = {EPS}, a zipf histogram; "
            f"queries: the {N} bins, the {N} prefixes and 32 random ranges. Target: the summed simulated variance "
            "within 3 % of the summed stated variance for every linear preset; single queries in standard errors of "
            "the simulation (about 2 % each at 10^4 runs).\n\n" + "\n".join(lines) + "\n")
    (HERE / "results" / "stated_error_accuracy.md").write_text(text)
    _replace_section(HERE.parent / "BENCHMARKS.md", text)
    return 1 if failed else 0


def _replace_section(path: Path, text: str) -> None:
    """Put this section into BENCHMARKS.md in place (or before the next topic in name order), leaving
    every other section as it is (``benchmarks/run.py`` rebuilds the whole file from the results)."""
    import re
    doc = path.read_text()
    start = doc.find("### stated error accuracy")
    if start >= 0:
        nxt = doc.find("\n### ", start + 1)
        doc = doc[:start] + text + ("" if nxt < 0 else doc[nxt:])
    else:
        later = [m.start() for m in re.finditer(r"^### (\S+)", doc, re.M) if m.group(1) > "stated"]
        at = later[0] if later else len(doc)
        doc = doc[:at] + text + "\n" + doc[at:]
    path.write_text(doc)


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
