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

The request loop is :func:`_timer_protocol.serve`'s (shared with ``dpbench_timer.py``): one JSON request
per line on stdin, one JSON answer per line; this file names ektelo's plans, its workload and how the
counts are read (as int64: ektelo's DAWA asserts an integer vector).

Plans and their parameters (ektelo's standalone plans take them explicitly; the values are the
published defaults that dphist's presets also use): AHP eta = 0.35 and ratio 0.85; DAWA ratio 0.25,
approximate or exact L1 partition; MWEM ratio 0.5, 10 rounds, history on, the scale it is given
(the true total: a timing run, not a release).  DAWA, GreedyH and MWEM read ektelo's implicit 1-D
prefix workload.
"""
from __future__ import annotations

import sys

from _timer_protocol import serve


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


def prefix_workload(n: int):
    from ektelo import workload
    return workload.Prefix(n)


def load_counts(path: str):
    import numpy as np
    return np.load(path).astype(np.int64)


if __name__ == "__main__":
    sys.exit(serve(lambda name, x: plan(name, int(x.size), float(x.sum())), prefix_workload, load_counts))
