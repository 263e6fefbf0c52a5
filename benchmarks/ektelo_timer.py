"""Times ektelo's standalone plans for ``bench_peers.py``: runs in *ektelo's* Python, not dphist's.

Started by :class:`bench_peers.Reference` as ``<python> ektelo_timer.py`` with ``PYTHONPATH`` set to a
scratch copy of github:ektelo/ektelo (``EKTELO_HOME`` pointing at it and ``EKTELO_DATA`` at any folder,
as ektelo's ``data`` module requires).  Nothing of ektelo is copied here: its plans are imported from
the scratch copy.  The copy needs its three extensions built (DAWA's ``cutils`` with swig, AHP's
``ahp_fast`` and PrivBayes's ``privBayesSelect`` with Cython; the ``ahp_fast`` library placed in
``ektelo/algorithm/ahp/``) and two compatibility patches for numpy 2 and scipy >= 1.9, which touch no
algorithm: ``EkteloMatrix`` subclasses set ``self.dtype = np.dtype(dtype)`` (scipy's ``lsmr`` needs a
dtype instance, ektelo stores the class), and ``measurement.Laplace.sensitivity_L1`` calls the builtin
``abs(A)`` where it called ``np.abs(A)`` (scipy's ``LinearOperator`` now refuses numpy ufuncs; both
call ``EkteloMatrix.__abs__``).

The protocol is ``dpbench_timer.py``'s: one JSON request per line on stdin, ``{"algorithm": NAME,
"input": PATH.npy, "epsilon": EPS, "seed": SEED}`` (with ``"prepare": true`` only the counts and the
workload are loaded), one JSON answer per line, ``{"seconds": wall-clock of Run}`` or ``{"error": ...}``.

Plans and their parameters (ektelo's standalone plans take them explicitly; the values are the
published defaults that dphist's presets also use): AHP eta = 0.35 and ratio 0.85; DAWA ratio 0.25,
approximate or exact L1 partition; MWEM ratio 0.5, 10 rounds, history on, the scale it is given
(the true total: a timing run, not a release).  DAWA, GreedyH and MWEM read ektelo's implicit 1-D
prefix workload.
"""
from __future__ import annotations

import json
import os
import resource
import sys
import time

USE_WORKLOAD = {"DAWA-approx", "DAWA", "GreedyH", "MWEM"}


def plan(name: str, n: int, total: float):
    from ektelo.plans import standalone as s
    plans = {
        "identity": lambda: s.Identity(),
        "uniform": lambda: s.Uniform(),
        "Privelet": lambda: s.Privelet((n,)),
        "H": lambda: s.H2((n,)),
        "Hb": lambda: s.HB((n,)),
        "AHP": lambda: s.Ahp(0.35, 0.85),
        "DAWA-approx": lambda: s.Dawa((n,), 0.25, True),
        "DAWA": lambda: s.Dawa((n,), 0.25, False),
        "GreedyH": lambda: s.GreedyH(),
        "MWEM": lambda: s.Mwem(0.5, 10, total, (n,), True),
    }
    return plans[name]()


def main() -> int:
    import numpy as np
    from ektelo import workload
    limit = int(float(os.environ.get("DPBENCH_TIMER_MEMORY_GB", "8")) * 2 ** 30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    inputs, workloads = {}, {}
    for line in sys.stdin:
        request = json.loads(line)
        try:
            x = inputs.get(request["input"])
            if x is None:   # ektelo's DAWA asserts an integer vector
                x = inputs[request["input"]] = np.load(request["input"]).astype(np.int64)
            n = int(x.size)
            uses = request["algorithm"] in USE_WORKLOAD
            if uses and n not in workloads:
                workloads[n] = workload.Prefix(n)
            runner = plan(request["algorithm"], n, float(x.sum()))
            if request.get("prepare"):
                answer = {"ready": True}
            else:
                start = time.perf_counter()
                runner.Run(workloads[n] if uses else None, x, float(request["epsilon"]), int(request["seed"]))
                answer = {"seconds": time.perf_counter() - start}
        except (Exception, MemoryError) as exc:   # noqa: BLE001 - reported to the benchmark, which says so
            answer = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
