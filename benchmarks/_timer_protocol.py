"""The request loop the peer timers share (``dpbench_timer.py``, ``ektelo_timer.py``).

Runs in the *peer's* Python (the timer's folder on ``sys.path``, so the timers import it as
``_timer_protocol``); it imports nothing of dphist.  One JSON request per line on stdin,
``{"algorithm": NAME, "input": PATH.npy, "epsilon": EPS, "seed": SEED}``: the counts are loaded (once
per file), the workload of their length is built (once per length, for the engines in ``uses``), the
engine is built, its ``Run(workload or None, counts, epsilon, seed)`` is timed (a grid's workload is made
from its shape, a vector's from its length), and one JSON line
answers, ``{"seconds": wall-clock of Run}`` or ``{"error": ...}``.  With ``"prepare": true`` only the
counts, the workload and the engine are made and the answer is ``{"ready": true}``: the caller gives
that step a long timeout and the run its own.  The address space is capped
(``DPBENCH_TIMER_MEMORY_GB``, default 8) so an engine that would need more memory than the machine has
fails at once instead of swapping.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time

#: the engines whose Run reads the workload (the peers' 1-D prefix workload; on a grid, DPBench's random
#: rectangles)
USE_WORKLOAD = frozenset({"DAWA-approx", "DAWA", "GreedyH", "MWEM", "DAWA-2D", "MWEM-2D"})


def serve(make_engine, make_workload, load=None, uses=USE_WORKLOAD) -> int:
    """Answer requests until stdin ends.

    ``make_engine(name, counts)``: the peer's engine for preset ``name`` on these counts (anything with
    ``Run``); ``make_workload(n)``: its workload over ``n`` bins (an int) or over a grid of shape ``n`` (a tuple); ``load(path)``: the counts of a request's
    ``.npy`` file (``numpy.load`` unless given).
    """
    import numpy as np
    limit = int(float(os.environ.get("DPBENCH_TIMER_MEMORY_GB", "8")) * 2 ** 30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    load = load or np.load
    inputs, workloads = {}, {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            x = inputs.get(request["input"])
            if x is None:
                x = inputs[request["input"]] = load(request["input"])
            n = int(x.size) if x.ndim == 1 else tuple(int(d) for d in x.shape)   # a grid's workload by shape
            uses_workload = request["algorithm"] in uses
            if uses_workload and n not in workloads:
                workloads[n] = make_workload(n)
            engine = make_engine(request["algorithm"], x)
            if request.get("prepare"):
                answer = {"ready": True}
            else:
                start = time.perf_counter()
                engine.Run(workloads[n] if uses_workload else None, x, float(request["epsilon"]),
                           int(request["seed"]))
                answer = {"seconds": time.perf_counter() - start}
        except (Exception, MemoryError) as exc:   # noqa: BLE001 - reported to the benchmark, which says so
            answer = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        print(json.dumps(answer), flush=True)
    return 0
