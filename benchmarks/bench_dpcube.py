"""DPCube (plugin dpcube): the speed target of issue 18.

* ``DPCube`` (DPBench's 1-D DPCube: cells of 11 bins, V-optimal kd-tree on them, region counts) end
  to end at N = 2^20: under 1 s (DPBench's ``DPcube1D_engine``: 65-319 s, a recursive Python loop
  over every bin of every node; measured in a scratch run on this machine under load, uniform data,
  eps = 1: 471 s at 2^20, 8.1 s at 65,536).

Histograms are dphist's seeded synthetic shapes (10 records per bin on average); epsilon = 1 and
0.01.  The tree's work is O(cells x depth), depth being data dependent.  Informational cases: the
paper's options (variance stop, least-squares inference).
"""
from _cases import run_seeded, synthetic_setup

N_BIG = 2 ** 20

CASES = [
    dict(name=f"DPCube, N=2^20, {label}, eps={eps:g}", target=1.0,
         setup=synthetic_setup("DPCube", shape, N_BIG, 10 * N_BIG, epsilon=eps), run=run_seeded)
    for shape, label in [("uniform", "uniform"), ("zipf", "power law"), ("spikes", "sparse spikes")]
    for eps in (1.0, 0.01)
] + [
    dict(name=f"DPCube {label}, N=2^20, uniform, eps=1", target=None,
         setup=synthetic_setup("DPCube", "uniform", N_BIG, 10 * N_BIG, **options), run=run_seeded)
    for label, options in [("stop='variance'", dict(stop="variance")),
                           ("inference='least-squares'", dict(inference="least-squares"))]
]
