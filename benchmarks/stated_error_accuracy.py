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

``python benchmarks/stated_error_accuracy.py RUNS grids`` checks the 2-D presets' statements
(``benchmarks/results/stated_error_grids.md``).
``python benchmarks/stated_error_accuracy.py RUNS repeat PRESET [SEED ...]`` re-measures one
data-dependent preset on several structures (the preset's seeds, default 5 to 8), each with ``RUNS``
runs of its finalizer alone, and the pooled ratio over the structures with its standard error
(``benchmarks/results/stated_error_repeat.md``): the decision between sampling error and a wrong
statement when one structure's ratio misses 3 % by a few standard errors.
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


def repeat(runs: int, name: str, seeds) -> int:
    """One preset's finalizer alone on several structures, ``runs`` runs each: per structure the summed
    ratio and its standard error, then the ratios pooled (inverse-variance weights) with theirs."""
    from dphist.testing.stated import finalizer_alone
    counts = load("synthetic", shape="zipf", n=N, scale=20 * N, seed=1).counts
    Q = queries(N)
    lines = ["| structure (preset seed) | groups | runs | simulated / stated (sum) | std. error | deviation "
             "(std. errors) | worst group (std. errors) | seconds |", "|---|---|---|---|---|---|---|---|"]
    ratios, ses = [], []
    for seed in seeds:
        t = time.perf_counter()
        release, est, stated = finalizer_alone(name, counts, EPS, runs, seed=int(seed))
        secs = time.perf_counter() - t
        dev = (est - est.mean(axis=0)) * np.sqrt(runs / (runs - 1))
        e = dev @ Q.T
        stated_q = stated.variance(Q)
        total = (e ** 2).sum(axis=1)
        ratio, se = total.mean() / stated_q.sum(), total.std() / np.sqrt(runs) / stated_q.sum()
        p = release.partition
        member = np.zeros((p.n_groups, p.n_bins))
        member[p.labels(), np.arange(p.n_bins)] = 1.0
        g = dev @ member.T
        gm2 = (g ** 2).mean(axis=0)
        gse = np.sqrt(((g ** 4).mean(axis=0) - gm2 ** 2) / runs)
        worst_group = float(np.max(np.abs(gm2 - stated.variance(member)) / gse))
        ratios.append(ratio)
        ses.append(se)
        lines.append(f"| {seed} | {p.n_groups} | {runs:,} | {ratio:.4f} | {se:.4f} | {(ratio - 1) / se:+.2f} | "
                     f"{worst_group:.2f} | {secs:.0f} |")
        print(lines[-1], flush=True)
    w = 1.0 / np.square(ses)
    pooled, pooled_se = float(np.sum(w * np.array(ratios)) / w.sum()), float(1.0 / np.sqrt(w.sum()))
    lines.append(f"| pooled ({len(ratios)} structures) | - | {runs * len(ratios):,} | {pooled:.4f} | {pooled_se:.4f} | "
                 f"{(pooled - 1) / pooled_se:+.2f} | - | - |")
    print(lines[-1], flush=True)
    _write(f"stated error accuracy, {name} repeated", "stated_error_repeat",
           f"{name}'s finalizer alone on several structures (its release at the seeds listed), {runs:,} runs each; "
           "the simulated variance around the simulated mean; the pooled ratio weights each structure by the inverse "
           "of its squared standard error. Target: within 3 %; a wrong statement shows as a deviation of the same "
           "sign on every structure.", lines)
    return 0 if abs(pooled - 1) <= 0.03 else 1


GRIDS = [("HB-2D", 1.0), ("QuadTree", 1.0), ("Privelet-2D", 1.0), ("UG", 0.1), ("AG", 0.1), ("KDTree", 1.0),
         ("HybridTree", 1.0)]
SIDE = 32


def grids(runs: int) -> int:
    """The 2-D presets that state their error, each's finalizer alone ``runs`` times on its structure
    (a 32 x 32 grid with one bump; UG and AG at eps = 0.1 so their blocks hold several cells): the cells
    and 32 random rectangles, summed simulated variance (around the simulated mean) over the stated."""
    from dphist.testing.stated import finalizer_alone
    i, j = np.indices((SIDE, SIDE))
    x = np.random.default_rng(0).poisson(1 + 20 * np.exp(-((i - 9.0) ** 2 + (j - 20.0) ** 2) / 40))
    rng = np.random.default_rng(3)
    rects = []
    for _ in range(32):
        r0, c0 = rng.integers(0, SIDE, 2)
        r1, c1 = r0 + 1 + rng.integers(0, SIDE - r0), c0 + 1 + rng.integers(0, SIDE - c0)
        q = np.zeros((SIDE, SIDE))
        q[r0:r1, c0:c1] = 1.0
        rects.append(q.ravel())
    Q = np.vstack([np.eye(SIDE * SIDE)] + [np.array(rects)])
    lines = [HEADER[0] + " kind | groups | eps |", HEADER[1] + "---|---|---|"]
    failed = 0
    for name, eps in GRIDS:
        t = time.perf_counter()
        release, est, stated = finalizer_alone(name, x, eps, runs)
        secs = time.perf_counter() - t
        dev = (est - est.mean(axis=0)) * np.sqrt(runs / (runs - 1))
        row, ok = _row(name, "float", runs, dev @ Q.T, stated.variance(Q), secs)
        failed += not ok
        lines.append(f"{row} {stated.kind} | {release.partition.n_groups} | {eps} |")
        print(lines[-1], flush=True)
    _write("stated error accuracy, grids", "stated_error_grids",
           "Each preset's finalizer alone on its structure (`dphist.testing.stated.finalizer_alone`: AG's level 1 "
           "and the kd trees' median draws held fixed); the simulated variance around the simulated mean. Target: "
           "the summed simulated variance "
           "within 3 % of the summed stated variance.", lines,
           setup=f"the 2-D presets on a {SIDE} x {SIDE} grid (one bump, {int(x.sum())} records), eps as listed; "
                 "queries: the cells and 32 random rectangles.")
    return 1 if failed else 0


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


def _write(heading: str, topic: str, target: str, lines: list[str], setup: str | None = None) -> None:
    load_avg = os.getloadavg()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    text = (f"### {heading}\n\nMeasured {stamp} on {machine}, load average "
            f"{load_avg[0]:.1f} / {load_avg[1]:.1f} / {load_avg[2]:.1f} (accuracy, not speed: the load does not "
            f"change the numbers).  `benchmarks/stated_error_accuracy.py`: "
            + (setup or f"n = {N}, eps = {EPS}, a zipf histogram; queries: the {N} bins, the {N} prefixes and 32 random "
               "ranges.") + f" {target}\n\n" + "\n".join(lines) + "\n")
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
    if len(sys.argv) > 2 and sys.argv[2] == "grids":
        sys.exit(grids(int(sys.argv[1])))
    if len(sys.argv) > 3 and sys.argv[2] == "repeat":
        sys.exit(repeat(int(sys.argv[1]), sys.argv[3], [int(a) for a in sys.argv[4:]] or [5, 6, 7, 8]))
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000, sys.argv[2] if len(sys.argv) > 2 else "all"))
