"""Run HDMM's own p-Identity optimisation (OPT_0) in HDMM's Python, for ``bench_hdmm.py``'s reference case.

Usage (the reference's Python, ``PYTHONPATH`` = the ``src`` folder of a scratch copy of
github:dpcomp-org/hdmm; never a copy inside this repository: HDMM is AGPL-3.0 and is run, not copied)::

    python hdmm_reference.py WORKLOAD N RESTARTS OUT.npz

It does what ``hdmm.mechanism.HDMM.optimize`` does for a 1-D workload: ``RESTARTS`` times
``templates.PIdentity(max(1, N // 16), N, seed=s).optimize(W)`` (its random start, its L-BFGS-B
settings), keeping the strategy of the lowest loss, with ``W`` = ``workload.Prefix(N)`` or
``workload.AllRange(N)``; seeds ``0 .. RESTARTS - 1`` so a run can be repeated.  It writes HDMM's loss for every
restart, their CPU seconds and the best strategy as the dense matrix HDMM returns (``strategy().dense_matrix()``);
the error of that matrix is computed by dphist's side (``bench_hdmm.reference_table``), not here.
"""
import sys
import time

import numpy as np


def main(workload: str, n: int, restarts: int, out: str) -> None:
    from hdmm import templates
    from hdmm import workload as hw
    W = hw.Prefix(n) if workload == "prefix" else hw.AllRange(n)
    p = max(1, n // 16)
    losses, seconds, best, best_loss = [], [], None, np.inf
    for seed in range(restarts):
        start = time.process_time()
        template = templates.PIdentity(p, n, seed=seed)
        loss = float(template.optimize(W))
        seconds.append(time.process_time() - start)
        losses.append(loss)
        if loss < best_loss:
            best, best_loss = template, loss
    np.savez(out, losses=np.array(losses), seconds=np.array(seconds), p=p,
             strategy=np.asarray(best.strategy().dense_matrix(), dtype=float))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
