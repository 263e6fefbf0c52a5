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
queries, written to ``benchmarks/results/stated_error_data_dependent.md``.
``python benchmarks/stated_error_accuracy.py [runs] [linear|data-dependent]`` runs one part.
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
    """The second table: each data-dependent preset's finalizer alone on its fixed structure, with the
    standard error of the summed ratio (a structure of few large groups puts most of the summed variance
    on a few noise terms: then 10^4 runs measure the sum to about 1 %, and 3 % is about 3 standard errors)
    and the groups' own check (every group total's simulated variance in standard errors)."""
    from dphist.testing.stated import finalizer_alone
    lines = [HEADER[0] + " std. error of the ratio | groups | worst group (std. errors) |",
             HEADER[1] + "---|---|---|"]
    failed = 0
    for name in DATA_DEPENDENT:
        t = time.perf_counter()
        release, est, stated = finalizer_alone(name, counts, EPS, runs)
        secs = time.perf_counter() - t
        dev = (est - est.mean(axis=0)) * np.sqrt(runs / (runs - 1))
        e = dev @ Q.T
        stated_q = stated.variance(Q)
        row, ok = _row(f"{name} ({stated.kind})", "float", runs, e, stated_q, secs)
        ratio_se = ((e ** 2).sum(axis=1)).std() / np.sqrt(runs) / stated_q.sum()
        p = release.partition
        member = np.zeros((p.n_groups, p.n_bins))
        member[p.labels(), np.arange(p.n_bins)] = 1.0      # each group's total (a query over its bins)
        g = dev @ member.T
        gm2 = (g ** 2).mean(axis=0)
        gse = np.sqrt(((g ** 4).mean(axis=0) - gm2 ** 2) / runs)
        worst_group = float(np.max(np.abs(gm2 - stated.variance(member)) / gse))
        failed += not ok
        lines.append(f"{row} {ratio_se:.4f} | {p.n_groups} | {worst_group:.2f} |")
        print(lines[-1], flush=True)
    return lines, failed


def main(runs: int, part: str = "all") -> int:
    counts = load("synthetic", shape="zipf", n=N, scale=20 * N, seed=1).counts
    Q = queries(N)
    if part not in ("all", "linear", "data-dependent"):
        raise SystemExit(f"unknown part {part!r}: all, linear or data-dependent")
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
    if part in ("all", "linear"):
        _write("stated error accuracy", "stated_error_accuracy",
               "Target: the summed simulated variance within 3 % of the summed stated variance for every linear "
               "preset; single queries in standard errors of the simulation (about 2 % each at 10^4 runs).", lines)
    if part in ("all", "data-dependent"):
        dd_lines, dd_failed = data_dependent(runs, counts, Q)
        failed += dd_failed
        _write("stated error accuracy, data-dependent", "stated_error_data_dependent",
               "Each data-dependent preset that states its noise runs once (its groups, H~ and, for EFPA, its K), "
               "then its finalizer alone on that structure (`dphist.testing.stated.finalizer_alone`); the simulated "
               "variance is taken around the simulated mean: the noise part only, the bias is not stated. Target: "
               "the summed simulated variance within 3 % of the summed stated variance.", dd_lines)
    return 1 if failed else 0


def _write(heading: str, topic: str, target: str, lines: list[str]) -> None:
    load_avg = os.getloadavg()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    text = (f"### {heading}\n\nMeasured {stamp} on {machine}, load average "
            f"{load_avg[0]:.1f} / {load_avg[1]:.1f} / {load_avg[2]:.1f} (accuracy, not speed: the load does not "
            f"change the numbers).  `benchmarks/stated_error_accuracy.py`: n = {N}, eps = {EPS}, a zipf histogram; "
            f"queries: the {N} bins, the {N} prefixes and 32 random ranges. {target}\n\n" + "\n".join(lines) + "\n")
    (HERE / "results" / f"{topic}.md").write_text(text)
    _replace_section(HERE.parent / "BENCHMARKS.md", heading, text)


def _replace_section(path: Path, heading: str, text: str) -> None:
    """Put this section into BENCHMARKS.md in place (or before the next topic in name order), leaving
    every other section as it is (``benchmarks/run.py`` rebuilds the whole file from the results)."""
    import re
    doc = path.read_text()
    start = doc.find(f"### {heading}\n")
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
