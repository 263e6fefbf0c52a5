"""Times DPBench's algorithms for ``bench_peers.py``: runs in the *reference's* Python, not dphist's.

Started by :class:`bench_peers.Reference` as ``<python> dpbench_timer.py`` with ``PYTHONPATH`` set
to a scratch copy of github:dpcomp-org/dpcomp_core (its C extensions built; its
``dpcomp_core/algorithm/__init__.py`` emptied, as ``dpbench_privelet_mwem.py`` explains; nothing of
the reference code is copied here: it is imported from the scratch copy).  It reads one JSON request
per line on stdin, ``{"algorithm": NAME, "input": PATH.npy, "epsilon": EPS, "seed": SEED}``, runs
the engine once on the counts and answers one JSON line, ``{"seconds": wall-clock of Run}`` or
``{"error": ...}``.  With ``"prepare": true`` it only loads the counts and, for the engines that read
a workload (DAWA, GreedyH, MWEM: the others get None), builds DPBench's 1-D prefix workload of their
length (once per length; at 2^20 this alone takes minutes), and answers ``{"ready": true}``: the
caller gives that step a long timeout and the run its own.
Its address space is capped (``DPBENCH_TIMER_MEMORY_GB``, default 8) so an engine that would need
more memory than the machine has fails at once instead of swapping.
"""
from __future__ import annotations

import importlib
import json
import os
import resource
import sys
import time

#: the engines whose Run reads the workload
USE_WORKLOAD = {"DAWA-approx", "DAWA", "GreedyH", "MWEM"}
#: dphist's preset -> (DPBench module, engine class, attributes set on the engine after construction)
ENGINES = {
    "identity": ("dpcomp_core.algorithm.identity", "identity_engine", {}),
    "uniform": ("dpcomp_core.algorithm.uniform", "uniform_noisy_engine", {}),
    "Privelet": ("dpcomp_core.algorithm.privelet", "privelet_engine", {}),
    "H": ("dpcomp_core.algorithm.HB", "H2_engine", {}),
    "Hb": ("dpcomp_core.algorithm.HB", "HB_engine", {}),
    "AHP": ("dpcomp_core.algorithm.ahp", "ahp_engine", {}),
    "DPCube": ("dpcomp_core.algorithm.DPcube1D", "DPcube1D_engine", {}),
    "DAWA-approx": ("dpcomp_core.algorithm.dawa", "dawa_engine", {}),
    "DAWA": ("dpcomp_core.algorithm.dawa", "dawa_engine", {"_partition_engine": "exact"}),
    "GreedyH": ("dpcomp_core.algorithm.dawa", "greedyH_only_engine", {}),
    "MWEM": ("dpcomp_core.algorithm.mwemND", "mwemND_engine", {}),
    "UG": ("dpcomp_core.algorithm.UG", "UG_engine", {}),          # 2-D: the counts file holds the grid
    "AG": ("dpcomp_core.algorithm.AG", "AG_engine", {}),
}


def engine(name: str):
    module, cls, attributes = ENGINES[name]
    eng = getattr(importlib.import_module(module), cls)()
    for key, value in attributes.items():
        if value == "exact":   # DAWA with the exact L1 partition instead of the approximate one
            from dpcomp_core.algorithm.dawa.partition_engines import l1partition
            value = l1partition.l1partition_engine()
        setattr(eng, key, value)
    return eng


def main() -> int:
    import numpy as np
    from dpcomp_core import workload
    limit = int(float(os.environ.get("DPBENCH_TIMER_MEMORY_GB", "8")) * 2 ** 30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    inputs, workloads = {}, {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            x = inputs.get(request["input"])
            if x is None:
                x = inputs[request["input"]] = np.load(request["input"])
            n = int(x.size)
            uses = request["algorithm"] in USE_WORKLOAD
            if uses and n not in workloads:
                workloads[n] = workload.Prefix1D(domain_shape_int=n)
            eng = engine(request["algorithm"])
            if request.get("prepare"):
                answer = {"ready": True}
            else:
                start = time.perf_counter()
                eng.Run(workloads[n] if uses else None, x, float(request["epsilon"]), int(request["seed"]))
                answer = {"seconds": time.perf_counter() - start}
        except (Exception, MemoryError) as exc:   # noqa: BLE001 - reported to the benchmark, which says so
            answer = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
