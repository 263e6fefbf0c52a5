"""The 2-D presets of the spatial (QuadTree, KDTree, HybridTree), boost, privelet, dpcube and ahp plugins on 256^2 and 1024^2 cells.

Targets: every 2-D preset under 1 s at 256 x 256 and under 10 s at 1024 x 1024 (2 cores); the histogram
is bench_grids' seeded field (10 records per cell on average), eps = 1.  DAWA-2D is timed with the dawa
plugin (``bench_dawa.py``).  The speed ratio to the DPBench code is measured by ``benchmarks/dpbench_2d.py``
(both sides timed on the same 128^2 inputs).
"""
from bench_grids import grid_setup
from _cases import run_seeded

PRESETS = ("QuadTree", "KDTree", "HybridTree", "HB-2D", "Privelet-2D", "DPCube-2D", "AHP-2D")

CASES = [
    dict(name=f"{alg}, {side}x{side}, eps=1", target=1.0 if side == 256 else 10.0,
         repeat=1 if side == 1024 else 3,
         setup=grid_setup(alg, side, 1.0), run=run_seeded, warmup=side == 256)
    for side in (256, 1024) for alg in PRESETS
]
