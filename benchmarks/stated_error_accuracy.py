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

The data-dependent presets (second table) state the noise of their last measurement given the
published structure: each runs once (its groups, H~, notes), then its finalizer alone ``runs`` times
on that structure (:func:`dphist.testing.stated.finalizer_alone`: EFPA's K from one fixed generator);
the simulated variance is taken around the simulated mean (the bias is not stated), for the same
queries.  ``python benchmarks/stated_error_accuracy.py [runs] [linear|data-dependent]`` runs one part.
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
#: every 1-D data-dependent preset family that states its noise (README's table), one or two of each form
DATA_DEPENDENT = ["AHP", "DAHP", "sGAHP", "DPCube", "GS", "SReB_GCA", "kellaris.S2", "kellaris.S2+MM", "DAWA",
                  "DWF", "sDWF", "stGWF", "DPC", "EFPA", "SF"]


def queries(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    lo = rng.integers(0, n - 1, 32)
    hi = lo + 1 + rng.integers(0, n - lo)
    rows = [np.eye(n), np.tril(np.ones((n, n)))]
    ranges = np.zeros((32, n))
    for i, (a, b) in enumerate(zip(lo, hi)):
        ranges[i, a:b] = 1.0
    return np.vstack(rows + [ranges])


HEADER = ["| preset | noise | runs | simulated / stated (sum) | worst query (%) | worst query (std. errors) | seconds |",
          "|---|---|---|---|---|---|---|"]


def _row(label, noise, runs, e, stated, secs) -> tuple[str, bool]:
    """One table row from the simulated errors ``e`` (runs x queries) and the stated variances."""
    m2 = (e ** 2).mean(axis=0)
    se = np.sqrt(((e ** 4).mean(axis=0) - m2 ** 2) / runs)
    ratio = m2.sum() / stated.sum()
    worst_pct = 100 * np.max(np.abs(m2 / stated - 1))
    worst_z = np.max(np.abs(m2 - stated) / se)
    ok = abs(ratio - 1) <= 0.03
    return (f"| {label} | {noise} | {runs:,} | {ratio:.4f} {'ok' if ok else 'MISSED'} | "
            f"{worst_pct:.1f} | {worst_z:.2f} | {secs:.0f} |"), ok


def data_dependent(runs: int, counts, Q) -> tuple[list[str], int]:
    """The second table: each data-dependent preset's finalizer alone on its fixed structure."""
    from dphist.testing.stated import finalizer_alone
    lines, failed = list(HEADER), 0
    for name in DATA_DEPENDENT:
        t = time.perf_counter()
        _, est, stated = finalizer_alone(name, counts, EPS, runs)
        secs = time.perf_counter() - t
        e = (est - est.mean(axis=0)) @ Q.T
        row, ok = _row(f"{name} ({stated.kind})", "float", runs, e * np.sqrt(runs / (runs - 1)),
                       stated.variance(Q), secs)
        failed += not ok
        lines.append(row)
        print(row, flush=True)
    return lines, failed


def main(runs: int, part: str = "all") -> int:
    counts = load("synthetic", shape="zipf", n=N, scale=20 * N, seed=1).counts
    Q = queries(N)
    lines = list(HEADER)
    failed = 0
    for name, params, noise in (PRESETS if part in ("all", "linear") else []):
        pipe = dphist.make_algorithm(name, **params)
        kw = {} if noise is None else {"noise": noise}
        t = time.perf_counter()
        errors = np.empty((runs, N))
        for s in range(runs):
            errors[s] = pipe.run(counts, EPS, seed=s, **kw).estimate - counts
        secs = time.perf_counter() - t
        stated = pipe.run(counts, EPS, seed=0, **kw).variance(Q)
        label = name + ("" if not params else " " + ", ".join(f"{k}={v}" for k, v in params.items()))
        row, ok = _row(label, noise or "float", runs, errors @ Q.T, stated, secs)
        failed += not ok
        lines.append(row)
        print(row, flush=True)
    dd_lines, dd_failed = data_dependent(runs, counts, Q) if part in ("all", "data-dependent") else ([], 0)
    failed += dd_failed
    load_avg = os.getloadavg()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    text = (f"### stated error accuracy\n\nMeasured {stamp} on {machine}, load average "
            f"{load_avg[0]:.1f} / {load_avg[1]:.1f} / {load_avg[2]:.1f} (accuracy, not speed: the load does not "
            f"change the numbers).  `benchmarks/stated_error_accuracy.py`: n = {N}, eps = {EPS}, a zipf histogram; "
            f"queries: the {N} bins, the {N} prefixes and 32 random ranges. Target: the summed simulated variance "
            "within 3 % of the summed stated variance for every linear preset; single queries in standard errors of "
            "the simulation (about 2 % each at 10^4 runs).\n\n" + ("\n".join(lines) + "\n" if len(lines) > 2 else "")
            + ("" if not dd_lines else
               "\nData-dependent presets, the structure held fixed (each preset run once, then its finalizer alone "
               "on those groups, that H~ and, for EFPA, that K; variance around the simulated mean: the noise part "
               "only, the bias is not stated):\n\n" + "\n".join(dd_lines) + "\n"))
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
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000, sys.argv[2] if len(sys.argv) > 2 else "all"))
