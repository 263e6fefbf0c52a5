"""The linear and N log N presets against the yardstick, their growth, and their peak memory.

Yardstick: ``numpy.sort`` of N uniform float64 values (seeded), timed in the same process, the
runner alternating it with the preset's run (paired cases), so a change of load moves both.
Targets: the linear and N log N presets (identity, Privelet, H, Hb, AHP, DPCube, GS, S2+H, S1+H)
within 10x the yardstick at 2^20, 2^22 and 2^24; GreedyH and DAWA-approx within 40x at 2^20.

Slopes: the log-log slope of each linear preset's best time from 2^20 to 2^24 (a least-squares
line through the three sizes; target <= 1.1), from the paired cases' times of this run, and beside them
the yardstick's own slope over the same sizes (information).

Peak memory: one run of the preset in a fresh subprocess (``tracemalloc``: every numpy allocation
is traced), after a warm-up run on an input of the same kind of 1/32 of its size (imports and compilation:
the compiled paths the measured run takes), on the 2^24-bin input (2^20 for GreedyH and DAWA-approx); the peak traced during
the run, the input itself excluded, over the input's size (8N bytes of int64 counts).  Targets:
<= 4 for the linear presets at 2^24, <= 10 for GreedyH and DAWA-approx.

Histograms: dphist's seeded synthetic power law, 10 records per bin on average; epsilon = 1,
research mode (seeded), as every benchmark.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from _cases import run_seeded, synthetic_setup

LINEAR = ("identity", "Privelet", "H", "Hb", "AHP", "DPCube", "GS", "kellaris.S2+H", "kellaris.S1+H")
DATA_DEPENDENT = ("GreedyH", "DAWA-approx")
SIZES = (2 ** 20, 2 ** 22, 2 ** 24)
LINEAR_FACTOR, DATA_FACTOR = 10.0, 40.0
LINEAR_MEMORY, DATA_MEMORY = 4.0, 10.0


def yardstick(pipeline, counts, epsilon):
    """The reference of every paired case: numpy.sort of as many uniform floats as the preset has bins."""
    np.sort(_uniform(counts.size))


_UNIFORM: dict = {}


def _uniform(n: int) -> np.ndarray:
    if n not in _UNIFORM:
        _UNIFORM.clear()
        _UNIFORM[n] = np.random.default_rng(0).random(n)
    return _UNIFORM[n]


def _paired(preset: str, n: int, factor: float, repeat: int = 3) -> dict:
    return dict(name=f"{preset}, N=2^{n.bit_length() - 1}, power law, eps=1: time / numpy.sort's", n=n,
                setup=synthetic_setup(preset, "zipf", n, 10 * n), run=run_seeded, reference=yardstick,
                factor=factor, repeat=repeat if n < 2 ** 24 else 2)


def slope(cases: list[dict]):
    """``measure`` of a slope case: least-squares slope of log(time) on log(N) over ``cases``."""
    def measure():
        return float(np.polyfit(np.log([c["n"] for c in cases]), np.log([c["seconds"] for c in cases]), 1)[0]), 1.1
    return measure


def yardstick_slope(cases: list[dict]):
    """``measure`` of an information case: the yardstick's own log-log slope, from its best time at each N
    over every paired case of that N in this run (a case's yardstick time is its time over its ratio).
    ``numpy.sort`` is N log N and leaves the 32 MiB L3 between 2^20 and 2^24: a preset that sorts its N
    values (GS, S2+H) cannot grow slower than this."""
    def measure():
        sizes = sorted({c["n"] for c in cases})
        best = [min(c["seconds"] / c["ratio"] for c in cases if c["n"] == n and c.get("ratio")) for n in sizes]
        return float(np.polyfit(np.log(sizes), np.log(best), 1)[0]), None
    return measure


_MEMORY_SCRIPT = """
import json, sys, tracemalloc
import numpy as np
from dphist import make_algorithm
from dphist.datasets import load
preset, n = sys.argv[1], int(sys.argv[2])
counts = load("synthetic", shape="zipf", n=n, scale=10 * n, seed=1).counts
pipeline = make_algorithm(preset)
# imports, compilation: not the run's memory.  A warm-up run on an input of the same kind, 1/32 of the size
# (2^19 bins before 2^24, 2^15 before 2^20): non-zero counts and large enough to take the compiled paths the
# measured run takes (research mode's Laplace draws import numba from 32,768 values,
# dphist.kernel.noise.COMPILED_IMPORT_DRAWS; DPCube's kd-tree is compiled from 4,096 cells of 11 bins);
# zeros would make a data-dependent preset's structure trivial and leave those imports to the measured run
warm = n // 32
pipeline.run(load("synthetic", shape="zipf", n=warm, scale=10 * warm, seed=2).counts, 1.0, seed=8)
tracemalloc.start()
pipeline.run(counts, 1.0, seed=7)
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"ratio": peak / counts.nbytes}))
"""


def memory(preset: str, n: int, target: float):
    """``measure`` of a memory case: the traced peak of one run in a fresh process, over the input's size."""
    def measure():
        out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, preset, str(n)], capture_output=True,
                             text=True, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])["ratio"], target
    return measure


_BY_PRESET = {p: [_paired(p, n, LINEAR_FACTOR) for n in SIZES] for p in LINEAR}

CASES = [case for p in LINEAR for case in _BY_PRESET[p]]
CASES += [_paired(p, 2 ** 20, DATA_FACTOR, repeat=2) for p in DATA_DEPENDENT]
CASES += [dict(name=f"{p}: log-log slope of time, N = 2^20 .. 2^24 (no unit)", measure=slope(_BY_PRESET[p]))
          for p in LINEAR]
CASES += [dict(name="numpy.sort (the yardstick): log-log slope of its best time beside the presets above, "
               "N = 2^20 .. 2^24 (no unit; information)", measure=yardstick_slope(CASES[:len(LINEAR) * len(SIZES)]))]
CASES += [dict(name=f"{p}, N=2^24: peak traced memory / input size (no unit)", measure=memory(p, 2 ** 24, LINEAR_MEMORY))
          for p in LINEAR]
CASES += [dict(name=f"{p}, N=2^20: peak traced memory / input size (no unit)", measure=memory(p, 2 ** 20, DATA_MEMORY))
          for p in DATA_DEPENDENT]
