"""Times DPBench's algorithms for ``bench_peers.py``: runs in the *reference's* Python, not dphist's.

Started by :class:`bench_peers.Reference` as ``<python> dpbench_timer.py`` with ``PYTHONPATH`` set
to a scratch copy of github:dpcomp-org/dpcomp_core (its C extensions built; its
``dpcomp_core/algorithm/__init__.py`` emptied, as ``dpbench_privelet_mwem.py`` explains; nothing of
the reference code is copied here: it is imported from the scratch copy).  The request loop (one JSON
request per line on stdin, the engine's ``Run`` timed, one JSON answer per line; the ``prepare`` step; the
memory cap) is :func:`_timer_protocol.serve`'s; this file names DPBench's engines and its workload.  The
engines that read a workload (DAWA, GreedyH, MWEM and their 2-D forms: the others get None) get DPBench's 1-D
prefix workload of the counts' length (built once per length, in the ``prepare`` step; at 2^20 this alone
takes minutes), or on a grid DPBench's 2,000 random rectangles.
"""
from __future__ import annotations

import importlib
import sys

from _timer_protocol import serve

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
    "QuadTree": ("dpcomp_core.algorithm.QuadTree", "QuadTree_engine", {}),
    "HB-2D": ("dpcomp_core.algorithm.HB2D", "HB2D_engine", {}),
    "Privelet-2D": ("dpcomp_core.algorithm.privelet2D", "privelet2D_engine", {}),
    "DPCube-2D": ("dpcomp_core.algorithm.DPcube", "DPcube_engine", {}),
    "AHP-2D": ("dpcomp_core.algorithm.ahp", "ahpND_engine", {}),
    "DAWA-2D": ("dpcomp_core.algorithm.dawa", "dawa2D_engine", {}),
    "MWEM-2D": ("dpcomp_core.algorithm.mwemND", "mwemND_engine", {}),
}


def engine(name: str, counts=None):
    module, cls, attributes = ENGINES[name]
    eng = getattr(importlib.import_module(module), cls)()
    for key, value in attributes.items():
        if value == "exact":   # DAWA with the exact L1 partition instead of the approximate one
            from dpcomp_core.algorithm.dawa.partition_engines import l1partition
            value = l1partition.l1partition_engine()
        setattr(eng, key, value)
    return eng


def prefix_workload(n):
    """DPBench's prefix workload over ``n`` bins, or its 2,000 random rectangles (its own seed) on a grid
    of shape ``n``, the workload dphist's 2-D benchmarks use."""
    from dpcomp_core import workload
    if isinstance(n, tuple):
        return workload.RandomRange(None, n, 2000)
    return workload.Prefix1D(domain_shape_int=n)


if __name__ == "__main__":
    sys.exit(serve(engine, prefix_workload))
