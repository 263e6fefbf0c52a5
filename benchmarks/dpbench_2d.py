"""Fidelity of dphist's 2-D presets against the DPBench code, on the same sampled 2-D inputs.

Three steps, because the reference code needs the ``future`` package and must not be imported next
to dphist:

1. ``.venv/bin/python benchmarks/dpbench_2d.py inputs /tmp/ref2d/inputs.npz``: DPBench's 2-D sources
   (``$DPHIST_SHARED/datasets/peer-dpbench/2D``) reduced to ``DOMAIN`` by merging cells, sampled at
   each scale (a seeded multinomial draw of ``scale`` records from the source's shape), and the
   ``QUERIES`` random rectangles of DPBench's ``RandomRange`` (``dphist.workloads.dpbench_random_rectangles``,
   the reference's draws);
2. in a scratch copy of github:dpcomp-org/dpcomp_core (numpy, future; DAWA's ``cutils`` built with
   swig, AHP's ``ahp_fast`` with ``cythonize -2``):
   ``PYTHONPATH=<scratch> <scratch python> benchmarks/dpbench_2d.py reference /tmp/ref2d/inputs.npz
   /tmp/ref2d/reference.csv``;
3. ``.venv/bin/python benchmarks/dpbench_2d.py ours /tmp/ref2d/inputs.npz /tmp/ref2d/ours.csv`` and
   ``... table /tmp/ref2d/reference.csv /tmp/ref2d/ours.csv`` (the ratios, Markdown).

Patches to the scratch copy (none to the algorithms): ``dpcomp_core/algorithm/__init__.py`` emptied
(it imports every algorithm and fails with a circular import); ``query_nd_union.ndRangeUnion.slice``
returns a tuple (numpy >= 1.23 refuses a list of slices as an index).  Nothing of the reference code
is copied here: it is imported from the scratch copy.

Error: DPBench's ``L2`` per-query error on the rectangles, ``||W x - W x^||_2 / m``, averaged over
``TRIALS`` seeds (the scale divides both sides alike, so the ratio is unchanged).
"""
from __future__ import annotations

import csv
import os
import sys
import time
from pathlib import Path

SOURCES = ("BeijingTaxiE", "checkin", "twitter")
DOMAIN = 128
SCALES = (10_000, 1_000_000)
EPSILONS = (0.1, 1.0)
QUERIES = 2000
TRIALS = int(os.environ.get("DPBENCH_2D_TRIALS", 10))   # DAWA-2D's reference takes ~1 min a run at 10^6 records
#: the 2-D presets compared, each with its DPBench engine (``dpbench_timer.ENGINES``: module, class,
#: attributes; the 2-D engines take none)
REFERENCE = ("QuadTree", "HB-2D", "Privelet-2D", "DAWA-2D", "AHP-2D", "DPCube-2D", "MWEM-2D")


def reference_engine(alg: str):
    """DPBench's engine for ``alg``, built in the reference's Python (``dpbench_timer`` names it)."""
    from dpbench_timer import engine
    return engine(alg)


def source_path(name: str):
    import os
    root = Path(os.environ.get("DPHIST_SHARED", ROOT.parent / "shared")) / "datasets" / "peer-dpbench" / "2D"
    return next(root.glob(f"{name}_*.npy"))


ROOT = Path(__file__).resolve().parent.parent


def reduce_domain(x, n: int):
    """Merge blocks of cells down to ``n x n`` (DPBench's domain reduction)."""
    f = x.shape[0] // n
    return x.reshape(n, f, n, f).sum(axis=(1, 3))


def rect_answers(x, lo, hi):
    """Rectangle sums (inclusive corners) from a summed-area table, for the reference step, which cannot
    import dphist (dphist's side uses ``dphist.workloads.RectangleWorkload.answer``)."""
    import numpy as np
    s = np.zeros((x.shape[0] + 1, x.shape[1] + 1))
    s[1:, 1:] = np.cumsum(np.cumsum(np.asarray(x, dtype=float), 0), 1)
    r0, c0, r1, c1 = lo[:, 0], lo[:, 1], hi[:, 0] + 1, hi[:, 1] + 1
    return s[r1, c1] - s[r0, c1] - s[r1, c0] + s[r0, c0]


def l2_error(x, estimate, lo, hi) -> float:
    import numpy as np
    d = rect_answers(estimate, lo, hi) - rect_answers(x, lo, hi)
    return float(np.linalg.norm(d) / d.size)


def write_inputs(path: str) -> None:
    import numpy as np
    arrays = {}
    for i, name in enumerate(SOURCES):
        shape = reduce_domain(np.load(source_path(name)), DOMAIN).astype(float)
        for j, scale in enumerate(SCALES):
            rng = np.random.default_rng([i, j])
            arrays[f"{name}-{scale}"] = rng.multinomial(scale, (shape / shape.sum()).ravel()).reshape(shape.shape)
    from dphist.workloads import dpbench_random_rectangles
    rects = dpbench_random_rectangles((DOMAIN, DOMAIN), QUERIES)      # DPBench's own draws (seed 9001)
    arrays["lo"], arrays["hi"] = rects.lo, rects.hi - 1                # inclusive upper corners, as DPBench's
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **arrays)


def cases(data):
    for name in SOURCES:
        for scale in SCALES:
            for eps in EPSILONS:
                yield name, scale, eps, data[f"{name}-{scale}"]


def write_rows(path: str, rows) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def run_reference(path: str, out: str, only=None) -> None:
    import numpy as np
    from dpcomp_core import query_nd_union, workload
    data = np.load(path)
    lo, hi = data["lo"], data["hi"]
    queries = [query_nd_union.ndRangeUnion().addRange(tuple(int(v) for v in a), tuple(int(v) for v in b), 1.0)
               for a, b in zip(lo, hi)]
    W = workload.Workload(queries, (DOMAIN, DOMAIN))
    rows = []
    for alg in REFERENCE:
        if only and alg not in only:
            continue
        engine = reference_engine(alg)
        for name, scale, eps, x in cases(data):
            errors, seconds = [], []
            for t in range(TRIALS):
                t0 = time.perf_counter()
                est = np.asarray(engine.Run(W, x.astype(np.int64) if alg == "DAWA-2D" else x.astype(float), eps,
                                            1000 + t), dtype=float).reshape(x.shape)
                seconds.append(time.perf_counter() - t0)
                errors.append(l2_error(x, est, lo, hi))
            rows.append(dict(algorithm=alg, source=name, scale=scale, epsilon=eps, error=float(np.mean(errors)),
                             seconds=float(np.mean(seconds))))
            print(rows[-1], flush=True)
            write_rows(out, rows)


def run_ours(path: str, out: str, only=None) -> None:
    import numpy as np
    from dphist import make_algorithm
    from dphist.workloads import RectangleWorkload
    data = np.load(path)
    W = RectangleWorkload((DOMAIN, DOMAIN), data["lo"], data["hi"] + 1)
    rows = []
    for alg in REFERENCE:
        if only and alg not in only:
            continue
        pipe = make_algorithm(alg)
        for name, scale, eps, x in cases(data):
            truth = W.answer(x)
            errors, seconds = [], []
            for t in range(TRIALS):
                t0 = time.perf_counter()
                est = pipe.run(x, eps, seed=1000 + t).estimate
                seconds.append(time.perf_counter() - t0)
                d = W.answer(est) - truth
                errors.append(float(np.linalg.norm(d) / d.size))
            rows.append(dict(algorithm=alg, source=name, scale=scale, epsilon=eps, error=float(np.mean(errors)),
                             seconds=float(np.mean(seconds))))
            print(rows[-1], flush=True)
            write_rows(out, rows)


def cell_errors_reference(path: str, alg: str, key: str, eps: float, seeds: int) -> list[float]:
    """One cell (input ``key`` of ``path``, e.g. ``checkin-10000``) run ``seeds`` times by the reference code
    (seeds ``1000 + t``, as :func:`run_reference`): the per-run L2 errors.  Runs in the reference's Python."""
    import numpy as np
    from dpcomp_core import query_nd_union, workload
    data = np.load(path)
    lo, hi, x = data["lo"], data["hi"], data[key]
    queries = [query_nd_union.ndRangeUnion().addRange(tuple(int(v) for v in a), tuple(int(v) for v in b), 1.0)
               for a, b in zip(lo, hi)]
    W = workload.Workload(queries, (DOMAIN, DOMAIN))
    engine = reference_engine(alg)
    return [l2_error(x, np.asarray(engine.Run(W, x.astype(float), eps, 1000 + t), dtype=float).reshape(x.shape),
                     lo, hi) for t in range(seeds)]


def table(reference: str, ours: str) -> str:
    """Markdown: per algorithm, the ratios ours / reference (min, median, max over the cells) and times."""
    import numpy as np
    def read(p):
        with open(p) as fh:
            return {(r["algorithm"], r["source"], r["scale"], r["epsilon"]): r for r in csv.DictReader(fh)}
    ref, own = read(reference), read(ours)
    lines = ["| algorithm | cells | error ratio ours / DPBench: min | median | max | mean time ours / DPBench |",
             "|---|---|---|---|---|---|"]
    for alg in REFERENCE:
        keys = [k for k in own if k[0] == alg and k in ref]
        if not keys:
            continue
        r = np.array([float(own[k]["error"]) / float(ref[k]["error"]) for k in keys])
        t = np.mean([float(own[k]["seconds"]) for k in keys]) / np.mean([float(ref[k]["seconds"]) for k in keys])
        lines.append(f"| {alg} | {len(keys)} | {r.min():.2f} | {np.median(r):.2f} | {r.max():.2f} | {t:.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    step = sys.argv[1]
    if step == "inputs":
        write_inputs(sys.argv[2])
    elif step == "reference":
        run_reference(sys.argv[2], sys.argv[3], sys.argv[4].split(",") if len(sys.argv) > 4 else None)
    elif step == "ours":
        run_ours(sys.argv[2], sys.argv[3], sys.argv[4].split(",") if len(sys.argv) > 4 else None)
    elif step == "cell-reference":   # INPUTS ALG KEY EPS SEEDS OUT.json: one cell's per-seed errors
        import json
        Path(sys.argv[7]).write_text(json.dumps(cell_errors_reference(sys.argv[2], sys.argv[3], sys.argv[4],
                                                                      float(sys.argv[5]), int(sys.argv[6]))))
    elif step == "table":
        print(table(sys.argv[2], sys.argv[3]))
    else:
        raise SystemExit(f"unknown step {step!r}: inputs, reference, ours, cell-reference or table")
