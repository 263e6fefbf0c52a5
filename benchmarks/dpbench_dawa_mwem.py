"""DAWA and MWEM against the DPBench reference code on DPBench's 1-D benchmark, on the same sampled inputs.

Not a speed benchmark (``run.py`` does not pick it up): the study behind the default calibrations of
``dawa.l1`` / the DAWA presets and of ``mwem.mw``.  Its tables are ``plugins/dawa/dpbench_grid.csv`` and
``plugins/mwem/dpbench_grid.csv`` (one row per algorithm, source, scale, epsilon and sample), read by
``notebooks/dawa.ipynb`` and ``notebooks/mwem.ipynb``.

The benchmark (Hay et al., SIGMOD 2016, 1-D): the 18 DPBench sources at 4,096 bins, each sampled to
scales 10^3, 10^5, 10^7 (multinomial on the source's shape: ``dphist.datasets.generator.generate``),
epsilon in {0.01, 0.1, 1}, DPBench's random-range workload (2,000 ranges, length uniform in 1..n, then
the start uniform among the positions where it fits; DPBench's ``RandomRange`` with ``shape_list=None``)
and its scaled per-query L2 error ``||W x - W x_hat||_2 / (|W| scale)``.  Sample ``k`` of a cell uses
data seed ``(k, source, scale)`` and workload seed ``k``; both sides read the same counts and ranges.

Three steps, because the reference code must not be imported next to dphist:

1. ``.venv/bin/python benchmarks/dpbench_dawa_mwem.py inputs OUT.npz [--samples K]`` (dphist side;
   needs the DPBench sources: ``DPHIST_SHARED`` or ``../shared``);
2. in a scratch copy of github:dpcomp-org/dpcomp_core (DAWA's ``cutils`` built with swig; numpy, future):
   ``PYTHONPATH=<scratch> <scratch python> benchmarks/dpbench_dawa_mwem.py reference IN.npz OUT.csv``
   runs ``dawa_engine()`` (1-D defaults: ratio 0.5, power-of-two partition) and ``mwemND_engine()``;
3. ``.venv/bin/python benchmarks/dpbench_dawa_mwem.py dphist IN.npz OUT.csv [--configs a,b]`` runs the
   dphist configurations of :func:`_configs`;
4. ``.venv/bin/python benchmarks/dpbench_dawa_mwem.py collect OUT.csv ...`` writes the plugins' tables;
   ``table OUT.csv ... --reference dpbench-DAWA`` prints the cell ratios.

Steps 2 and 3 append and resume (``--scales``, ``--samples`` restrict them), sample 0 of every source first.

Patches to the scratch copy (none to the algorithms): ``dpcomp_core/algorithm/__init__.py`` emptied (it
imports every algorithm and fails with a circular import); ``query_nd_union.ndRangeUnion.slice`` returns a
tuple (numpy >= 1.23 refuses a list of slices as an index).  Nothing of the reference code is copied here.
"""
from __future__ import annotations

import argparse
import csv
import os
import time
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
N = 4096
SCALES = (10 ** 3, 10 ** 5, 10 ** 7)
EPSILONS = (0.01, 0.1, 1.0)
QUERIES = 2000
FIELDS = ("algorithm", "source", "scale", "epsilon", "sample", "error")


def dpbench_random_ranges(n: int, m: int, rng: np.random.Generator):
    """DPBench's 1-D random ranges: a length uniform in 1..n, then a start uniform in 0..n-length.

    Returns half-open ``(lo, hi)``.  The distribution of DPBench's ``RandomRange(shape_list=None)``
    drawn from numpy's Generator, one workload per sample, so these are not the reference's own draws
    (``dphist.workloads.dpbench_random_ranges`` reproduces those); both sides read these.
    """
    lengths = rng.integers(1, n + 1, size=m)
    lo = rng.integers(0, n - lengths + 1)
    return lo.astype(np.int64), (lo + lengths).astype(np.int64)


def scaled_l2(lo, hi, x, estimate) -> float:
    """DPBench's scaled per-query L2 error on ranges ``[lo, hi)``."""
    d = np.concatenate(([0.0], np.cumsum(np.asarray(estimate, dtype=float) - x)))
    return float(np.linalg.norm(d[hi] - d[lo]) / (lo.size * float(np.sum(x))))


def source_dir() -> Path:
    shared = Path(os.environ.get("DPHIST_SHARED", ROOT.parent / "shared"))
    return shared / "datasets" / "peer-dpbench" / "1D"


def sources(folder: Path | None = None) -> list[Path]:
    """The 18 DPBench 1-D source files, sorted (their index seeds the samples)."""
    files = sorted((folder or source_dir()).glob("*.npy"))
    if len(files) != 18:
        raise SystemExit(f"expected the 18 DPBench 1-D sources in {folder or source_dir()}, found {len(files)}")
    return files


def workload_ranges(k: int):
    """Sample ``k``'s DPBench random-range workload, ``(lo, hi)``."""
    return dpbench_random_ranges(N, QUERIES, np.random.default_rng([k, 9001]))


def one_input(files, stem: str, scale: int, k: int) -> np.ndarray:
    """Sample ``k`` of source ``stem`` at ``scale`` records (the counts :func:`write_inputs` stores)."""
    from dphist.datasets.generator import generate
    s = [f.stem for f in files].index(stem)
    return generate(np.load(files[s]), scale=scale, seed=np.random.SeedSequence([k, s, scale])).counts.astype(np.int64)


def write_inputs(path: str, samples: int) -> None:
    files = sources()
    arrays = {}
    for k in range(samples):
        arrays[f"W|{k}"] = np.stack(workload_ranges(k))
        for f in files:
            for scale in SCALES:
                arrays[f"{f.stem}|{scale}|{k}"] = one_input(files, f.stem, scale, k)
    np.savez_compressed(path, **arrays)


def inputs_of(path: str, done=frozenset(), scales=SCALES, samples=None):
    """Every input at ``scales``, sample by sample (all sources and scales of sample 0 first, the
    smallest scale first, so that a partial run covers whole cells); inputs whose
    ``(source, scale, sample)`` is in ``done`` are skipped."""
    data = np.load(path)
    keys = [k.split("|") for k in data.files if not k.startswith("W|")]
    for source, scale, k in sorted(keys, key=lambda t: (int(t[2]), int(t[1]), t[0])):
        if (source, int(scale), int(k)) in done or int(scale) not in scales or (samples and int(k) >= samples):
            continue
        lo, hi = data[f"W|{k}"]
        yield source, int(scale), int(k), data[f"{source}|{scale}|{k}"], lo, hi


def finished(path: str, algorithms) -> frozenset:
    """``(source, scale, sample)`` already in the CSV ``path`` for every algorithm and epsilon (resumption)."""
    if not Path(path).exists():
        return frozenset()
    seen = {}
    for r in csv.DictReader(open(path)):
        if r["algorithm"] in algorithms:
            seen.setdefault((r["source"], int(float(r["scale"])), int(r["sample"])), set()).add(
                (r["algorithm"], float(r["epsilon"])))
    return frozenset(key for key, v in seen.items() if len(v) == len(algorithms) * len(EPSILONS))


def _append(path: str, rows) -> None:
    new = not Path(path).exists()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def run_reference(inp: str, out: str, scales=SCALES, samples=None, names=("dpbench-DAWA", "dpbench-MWEM")) -> None:
    from dpcomp_core import workload
    from dpcomp_core.algorithm import dawa, mwemND
    from dpcomp_core.query_nd_union import ndRangeUnion
    engines = {"dpbench-DAWA": dawa.dawa_engine, "dpbench-MWEM": mwemND.mwemND_engine}
    engines = {name: engines[name] for name in names}
    cache = {}
    for source, scale, k, x, lo, hi in inputs_of(inp, finished(out, list(engines)), scales, samples):
        if k not in cache:
            cache[k] = workload.Workload([ndRangeUnion().add1DRange(int(a), int(b) - 1, 1.0)
                                          for a, b in zip(lo, hi)], (N,))
        rows = []
        for name, engine in engines.items():
            for eps in EPSILONS:
                seed = int(np.random.SeedSequence([k, scale, int(eps * 1000), zlib.crc32(source.encode())]).generate_state(1)[0] % 500000)
                est = engine().Run(cache[k], x.astype(int), eps, seed)
                rows.append(dict(algorithm=name, source=source, scale=scale, epsilon=eps, sample=k,
                                 error=scaled_l2(lo, hi, x, est)))
        _append(out, rows)
        print(source, scale, k, flush=True)


def _configs():
    """dphist configurations by name: ``workload -> Pipeline`` (imported lazily: step 2 has no dphist)."""
    import dphist
    mk = dphist.make_algorithm
    mwem_shares = {f"MWEM-total{t:g}": (lambda t: lambda w: mk("MWEM", workload=w, total_ratio=t))(t)
                   for t in (0.05, 0.1, 0.2, 0.3, 0.5)}
    return {
        **mwem_shares,
        # the defaults of the presets (ratio, partition and calibration as shipped)
        "DAWA": lambda w: mk("DAWA", workload=w),
        "DAWA-approx": lambda w: mk("DAWA-approx", workload=w),
        # the reference's configuration and calibration (not DP): the sanity row
        "DAWA-approx-dpbench": lambda w: mk("DAWA-approx", workload=w, ratio=0.5, calibration="dpbench"),
        # the former default configuration, postprocess calibration
        "DAWA-r0.25-exact-postprocess": lambda w: mk("DAWA", workload=w, ratio=0.25, calibration="postprocess"),
        "DAWA-r0.5-approx-postprocess": lambda w: mk("DAWA-approx", workload=w, ratio=0.5, calibration="postprocess"),
        "DAWA-r0.25-approx-postprocess": lambda w: mk("DAWA-approx", workload=w, ratio=0.25,
                                                       calibration="postprocess"),
        "DAWA-r0.25-exact-select": lambda w: mk("DAWA", workload=w, ratio=0.25, calibration="select"),
        "DAWA-r0.5-exact-select": lambda w: mk("DAWA", workload=w, ratio=0.5, calibration="select"),
        "DAWA-r0.5-approx-select": lambda w: mk("DAWA-approx", workload=w, ratio=0.5, calibration="select"),
        "DAWA-r0.25-approx-select": lambda w: mk("DAWA-approx", workload=w, ratio=0.25, calibration="select"),
        "MWEM": lambda w: mk("MWEM", workload=w),
        "MWEM-dpbench": lambda w: mk("MWEM", workload=w, calibration="dpbench"),
    }


def run_dphist(inp: str, out: str, names, scales=SCALES, samples=None) -> None:
    from dphist import workloads as wl
    configs = _configs()
    unknown = [c for c in names if c not in configs]
    if unknown:
        raise SystemExit(f"unknown configurations {unknown}; known: {', '.join(configs)}")
    cache = {}
    for source, scale, k, x, lo, hi in inputs_of(inp, finished(out, names), scales, samples):
        if k not in cache:
            cache[k] = wl.RangeWorkload(N, lo, hi, f"dpbench-random-{k}")
        rows = []
        for name in names:
            pipe = configs[name](cache[k])
            for eps in EPSILONS:
                rows.append(dict(algorithm=name, source=source, scale=scale, epsilon=eps, sample=k,
                                 error=dphist_error(pipe, x, lo, hi, source, scale, k, eps)))
        _append(out, rows)


def run_seed(source: str, scale: int, k: int, eps: float) -> int:
    """The research-mode seed of one dphist run of the grid."""
    return int(np.random.SeedSequence([k, scale, int(eps * 1000), zlib.crc32(source.encode()), 1]).generate_state(1)[0])


def dphist_error(pipe, x, lo, hi, source: str, scale: int, k: int, eps: float) -> float:
    """One dphist row of the grid: ``pipe`` on sample ``k`` at ``eps`` with the grid's seed."""
    return scaled_l2(lo, hi, x, pipe.run(x, eps, seed=run_seed(source, scale, k, eps)).estimate)


def cell_table(rows, algorithm: str, reference: str):
    """``{(scale, eps): (ratio, n_sources)}``: geometric mean over sources of (mean error of ``algorithm``)
    / (mean error of ``reference``), both over the samples that both have."""
    err = {(r["algorithm"], r["source"], int(float(r["scale"])), float(r["epsilon"]), int(r["sample"])): float(r["error"])
           for r in rows}
    pairs = {}
    for (a, s, scale, eps, k), e in err.items():
        if a == algorithm and (reference, s, scale, eps, k) in err:
            pairs.setdefault((scale, eps, s), []).append((e, err[(reference, s, scale, eps, k)]))
    out = {}
    for scale in SCALES:
        for eps in EPSILONS:
            logs = [np.log(np.mean([a for a, _ in v]) / np.mean([b for _, b in v]))
                    for (sc, e, _), v in pairs.items() if sc == scale and e == eps]
            if logs:
                out[(scale, eps)] = (float(np.exp(np.mean(logs))), len(logs))
    return out


def collect(paths, out_dir: Path = ROOT / "plugins") -> None:
    """The rows of the step-2 and step-3 CSVs ``paths`` (appended to by resumed runs), one row per
    ``(algorithm, source, scale, epsilon, sample)``, into ``plugins/dawa/dpbench_grid.csv`` (DAWA rows)
    and ``plugins/mwem/dpbench_grid.csv`` (MWEM rows)."""
    rows = {}
    for path in paths:
        for r in csv.DictReader(open(path)):
            rows[(r["algorithm"], r["source"], int(float(r["scale"])), float(r["epsilon"]), int(r["sample"]))] = r
    for plugin, word in (("dawa", "DAWA"), ("mwem", "MWEM")):
        keep = [rows[k] for k in sorted(rows) if word in k[0]]
        with open(out_dir / plugin / "dpbench_grid.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(keep)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    a = sub.add_parser("inputs")
    a.add_argument("out")
    a.add_argument("--samples", type=int, default=5)
    b = sub.add_parser("reference")
    b.add_argument("inp")
    b.add_argument("out")
    b.add_argument("--scales", default=",".join(map(str, SCALES)))
    b.add_argument("--samples", type=int, default=None, help="only samples 0 .. S-1")
    b.add_argument("--algorithms", default="dpbench-DAWA,dpbench-MWEM")
    c = sub.add_parser("dphist")
    c.add_argument("inp")
    c.add_argument("out")
    c.add_argument("--configs", default="DAWA,DAWA-approx,MWEM")
    c.add_argument("--scales", default=",".join(map(str, SCALES)))
    c.add_argument("--samples", type=int, default=None, help="only samples 0 .. S-1")
    e = sub.add_parser("collect")
    e.add_argument("csv", nargs="+")
    d = sub.add_parser("table")
    d.add_argument("csv", nargs="+")
    d.add_argument("--reference", default="dpbench-DAWA")
    args = p.parse_args(argv)
    t = time.time()
    if args.step == "inputs":
        write_inputs(args.out, args.samples)
    elif args.step == "reference":
        run_reference(args.inp, args.out, tuple(int(v) for v in args.scales.split(",")), args.samples,
                      args.algorithms.split(","))
    elif args.step == "collect":
        collect(args.csv)
    elif args.step == "dphist":
        run_dphist(args.inp, args.out, args.configs.split(","), tuple(int(v) for v in args.scales.split(",")),
                   args.samples)
    else:
        rows = [r for f in args.csv for r in csv.DictReader(open(f))]
        for algorithm in sorted({r["algorithm"] for r in rows} - {args.reference}):
            table = cell_table(rows, algorithm, args.reference)
            cells = "  ".join(f"{s:.0e}/{e:g}: {v:.2f}({m})" for (s, e), (v, m) in table.items())
            print(f"{algorithm:34s} {cells}")
    print(f"{args.step}: {time.time() - t:.1f} s")


if __name__ == "__main__":
    main()
