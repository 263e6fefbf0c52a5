"""Record GreedyH's strategy, DAWA's window costs and the DAWA presets' releases at the speed-relevant sizes.

Run once BEFORE a change to the speed of ``dawa.greedy-h``, ``dphist_dawa.hierarchy`` or the power-of-two
L1 windows (``python plugins/dawa/tests/make_speed_fixture.py``); ``test_speed_fixture.py`` then checks
that every recorded array and release stays bit-identical.  Written on 2026-11-26 from branch
speed-linear2 at d32ece8, before the compiled GreedyH sweep and the counting windows of L1Deviation.

Recorded: the greedy weights and expected error for prefix, all-ranges and explicit range workloads
over uneven groups (branching 2, 3 and 9: 9 children take numpy's pairwise sums); ``L1Deviation``
windows of every power-of-two length on integer values (singleton and multi-bin units) and on
non-integer values; the power-of-two search with DAWA's debiased costs; releases of GreedyH, DAWA
and DAWA-approx (calibration ``select``, the presets' default, and ``postprocess``) on the small
histograms and on one of 2^14 bins.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dphist import make_algorithm, release_records, segmentation
from dphist import workloads as wl
from dphist.datasets import load

OUT = Path(__file__).resolve().parent / "fixtures" / "speed.npz"


def algorithms() -> dict:
    return {"GreedyH": make_algorithm("GreedyH"),
            "GreedyH-all-ranges-b3": make_algorithm("GreedyH", workload="all-ranges", branching=3),
            "DAWA-select": make_algorithm("DAWA", calibration="select"),
            "DAWA-approx-select": make_algorithm("DAWA-approx", calibration="select"),
            "DAWA-approx-postprocess": make_algorithm("DAWA-approx", calibration="postprocess")}


def big_histogram() -> dict[str, np.ndarray]:
    return {"zipf-16384": load("synthetic", shape="zipf", n=2 ** 14, scale=10 * 2 ** 14, seed=1).counts}


def big_algorithms() -> dict:
    names = ("GreedyH", "DAWA-approx-select", "DAWA-approx-postprocess")
    return {k: v for k, v in algorithms().items() if k in names}


def _groups(rng, n, k):
    cuts = np.sort(rng.choice(np.arange(1, n), k - 1, replace=False))
    return np.concatenate(([0], cuts, [n])).astype(np.int64)


def record_arrays() -> dict[str, np.ndarray]:
    from dphist_dawa.hierarchy import greedy_weights
    from dphist_dawa.l1_partition import DebiasedCosts
    rng = np.random.default_rng(2026)
    out = {}
    n = 6_000
    bounds = _groups(rng, n, 2_300)
    lo = rng.integers(0, n - 1, 700)
    hi = lo + 1 + rng.integers(0, n - lo - 1 + 1) % (n - lo)
    workloads = {"prefix": wl.prefix(n), "all-ranges": wl.all_ranges(n), "ranges": wl.RangeWorkload(n, lo, hi)}
    for wname, workload in workloads.items():
        for branching in (2, 3, 9):
            for b_name, b in (("groups", bounds), ("bins", np.arange(n + 1))):
                tree = greedy_weights(workload, b, branching)
                key = f"array|greedy|{wname}|{branching}|{b_name}"
                out[key + "|weights"] = np.concatenate(tree.weights)
                out[key + "|error"] = np.array([tree.expected_error])
    x = np.round(load("synthetic", shape="zipf", n=5_000, scale=80_000, seed=3).counts + rng.laplace(0, 3, 5_000))
    units = _groups(rng, x.size, 1_700)
    for vname, values in (("integer", x), ("float", x + rng.random(x.size))):
        for u_name, u in (("bins", np.arange(x.size + 1)), ("units", units)):
            cost = segmentation.L1Deviation(values)
            k = u.size - 1
            for j in range(int(np.log2(k)) + 1):
                out[f"array|windows|{vname}|{u_name}|{j}"] = cost.windows(1 << j, u)
            costs = DebiasedCosts(1 / 0.75, 1 / 0.75 + 4.0 / 0.75, 1.0)
            seg = segmentation.optimal(segmentation.L1Deviation(values).then(costs), u, lengths="power-of-two")
            out[f"array|power-of-two|{vname}|{u_name}"] = seg.bounds
    return out


def write() -> None:
    out = release_records.record(algorithms())
    out.update(release_records.record(big_algorithms(), big_histogram(), epsilons=(1.0,), seeds=(7,)))
    out.update(record_arrays())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **out)


if __name__ == "__main__":
    write()
