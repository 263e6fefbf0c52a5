"""The 2-D presets against the DPBench code: each at least 10 times faster where that code finishes.

Paired cases (``factor`` 0.1): one dphist run (research mode, seeded) alternating with one run of the
reference's engine, timed in the reference's own process by ``dpbench_timer.py`` (configured as in
``bench_peers.py``: ``DPHIST_DPBENCH`` / ``DPHIST_DPBENCH_PYTHON``), the same counts on both sides:

* the 256 x 256 field of ``bench_grids`` (Gaussian bumps, 10 records per cell), eps = 1;
* that field's shape resampled at 128 x 128 with 10^4 records (DPBench's smallest scale), eps = 0.1,
  where the reference's loops are short and dphist's fixed per-run costs count most.

The engines (DPBench's defaults, as the fidelity runs in ``dpbench_2d.py`` use them): ``QuadTree_engine``,
``HB2D_engine``, ``privelet2D_engine``, ``DPcube_engine``, ``ahpND_engine``, ``dawa2D_engine`` and
``mwemND_engine`` (the last two read DPBench's 2,000 random rectangles of the grid, built in the timer's
untimed ``prepare`` step; dphist's MWEM-2D selects from the same rectangles by default, its DAWA-2D runs with
its default workload, the prefix ranges of the Hilbert curve). UG and AG are paired in ``bench_grids``. A reference stopped after ``bench_peers.TIMEOUT`` seconds is at least that slow.
"""
from __future__ import annotations

from bench_grids import field, paired_with_dpbench, resampled

PRESETS = ("QuadTree", "HB-2D", "Privelet-2D", "DPCube-2D", "AHP-2D", "DAWA-2D", "MWEM-2D")


CASES = [paired_with_dpbench(p, lambda: field(256), "256x256 field", 1.0, repeat=7) for p in PRESETS] + \
        [paired_with_dpbench(p, resampled(128, 10_000), "128x128, 10^4 records", 0.1, repeat=7) for p in PRESETS]
