"""Shared pieces of the benchmark modules (imported by them; not a topic of its own)."""
from dphist import make_algorithm
from dphist.datasets import load


def synthetic_setup(algorithm, shape, n, scale, epsilon=1.0, **params):
    """A case's ``setup``: the preset and a seeded synthetic histogram (``shape``, ``n`` bins, ``scale`` records)."""
    def setup():
        counts = load("synthetic", shape=shape, n=n, scale=scale, seed=1).counts
        return make_algorithm(algorithm, **params), counts, epsilon
    return setup


def run_seeded(pipeline, counts, epsilon):
    """A case's ``run``: one research-mode run (seeded, as every benchmark times)."""
    pipeline.run(counts, epsilon, seed=7)


def _in_forked_children(copies_per_child: list[int], work, args) -> None:
    """Fork one child per entry of ``copies_per_child``, all at once; child ``i`` runs ``work(*args)``
    ``copies_per_child[i]`` times on one BLAS thread and one search thread, as a sweep's worker does.
    Returns when every child has ended; a child that failed raises here."""
    import os
    from dphist.experiments.executors import forks_prepared, one_search_thread
    pids = []
    with forks_prepared() as first:
        for copies in copies_per_child:
            pid = os.fork()
            if pid == 0:
                status = 1
                try:
                    if first is not None:
                        first()
                    one_search_thread()
                    for _ in range(copies):
                        work(*args)
                    status = 0
                finally:
                    os._exit(status)
            pids.append(pid)
    failed = [pid for pid in pids if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0]
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(pids)} forked children failed")


def machine_ceiling(name: str, setup, work) -> dict:
    """A paired information case: two copies of ``work`` at once in two forked processes against the
    same two copies one after the other in one forked process.  Nothing is shared between the two
    processes, so the ratio is the least any two-core code doing this work can read on this machine in
    these minutes (0.5 on two idle cores of their own; above it when the host, other load, shared
    caches or memory slow one core's work while the other core works)."""
    return dict(name=f"machine ceiling: {name}, 2 copies in 2 processes at once / one after the other "
                     "(information: 0.5 on two idle cores)",
                setup=setup, factor=None, repeat=3,
                reference=lambda *a: _in_forked_children([2], work, a),
                run=lambda *a: _in_forked_children([1, 1], work, a))
