"""Start-up, built-in datasets and sweeps on two workers: what a user feels around the work itself.

* ``dphist --help`` (target 0.3 s) and ``dphist run -a AHP`` on 4,096 bins in release mode with numba's
  cache filled (0.6 s) and empty (2 s): fresh processes, wall clock.  The empty case points
  ``NUMBA_CACHE_DIR`` at a new folder for every run (what a fresh install or CI sees before
  ``dphist warm``).
* a built-in dataset loaded after its first use (target 50 ms): ``flights-dep-delay`` from the binary
  cache, beside the same load parsing the CSV (information);
* a 200-cell sweep (5 presets x 4 epsilons x 10 trials on ``flights-dep-delay``) on the process
  executor with 2 workers against the serial executor (target: serial / 1.8), and beside it the
  machine's ceiling for that work (``_cases.machine_ceiling``: two serial sweeps at once in two forked
  processes against the two one after the other; ``parallel_ceiling.py`` pairs the two round by round).

Absolute targets depend on the machine's load: the runner writes the load average beside every case.

The dphist packages are byte-compiled first (``compileall``), as ``pip install`` leaves them: without
it a shell with ``PYTHONDONTWRITEBYTECODE`` set (CI, these sessions) compiles dphist's modules from
source at every start, about 0.1 s that an installed copy never pays.
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from _cases import machine_ceiling

DPHIST = str(Path(sys.executable).with_name("dphist"))
HERE = Path(tempfile.mkdtemp(prefix="dphist-bench-startup-"))
HIST = HERE / "h4096.npy"
_USER_CACHE = os.environ.get("DPHIST_CACHE_DIR")
np.save(HIST, np.random.default_rng(1).poisson(50, 4096))


def _byte_compile() -> None:
    """Byte-compile the core and every installed dphist plugin package (as an install does)."""
    import compileall
    import importlib.util
    from importlib.metadata import distributions
    names = {"dphist"} | {d.metadata["Name"].replace("-", "_") for d in distributions()
                          if (d.metadata["Name"] or "").startswith("dphist-")}
    for name in sorted(names):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                compileall.compile_dir(folder, quiet=1)


_byte_compile()


def _cli(*args, env=None):
    subprocess.run([DPHIST, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, **(env or {})})


def _run_ahp(env=None):
    _cli("run", "-a", "AHP", "-i", str(HIST), "-e", "1", "-o", str(HERE / "out.npy"), "--force", env=env)


def _empty_cache_setup():
    return ({"NUMBA_CACHE_DIR": tempfile.mkdtemp(prefix="numba-", dir=HERE)},)


def _dataset_setup(cached: bool):
    def setup():
        from dphist.datasets import flights
        if cached:
            flights.departure_delay()   # the first use writes the cache (outside the timing)
        else:
            os.environ["DPHIST_CACHE_DIR"] = tempfile.mkdtemp(prefix="cache-", dir=HERE)
        flights._columns.cache_clear()
        return (flights,)
    return setup


def _load_delay(flights):
    flights._columns.cache_clear()
    flights.departure_delay()


def _sweep_setup():
    from dphist.experiments import SweepConfig
    if _USER_CACHE is None:   # back to the user's cache folder after the parsing case
        os.environ.pop("DPHIST_CACHE_DIR", None)
    else:
        os.environ["DPHIST_CACHE_DIR"] = _USER_CACHE

    def cfg(executor, workers=None):
        return SweepConfig.from_mapping({"algorithms": ["AHP", "H", "DAWA-approx", "GreedyH", "Privelet"],
                                         "datasets": ["flights-dep-delay"], "epsilons": [0.01, 0.1, 1.0, 10.0],
                                         "trials": 10, "executor": executor, "workers": workers,
                                         "workloads": ["identity", "prefix", "all-ranges"], "metrics": ["mse"]})
    return cfg("process", 2), cfg("serial")


def _sweep_setup_2000():
    """The same sweep with 100 trials a cell instead of 10: 2,000 cells (information: the speed-up once the
    pool's start and the last batch's wait are small beside the work)."""
    process_cfg, serial_cfg = _sweep_setup()
    return (dataclasses.replace(process_cfg, trials=100), dataclasses.replace(serial_cfg, trials=100))


def _pool_start_stop():
    """What every process sweep pays before and after its cells: two forked workers started, one empty
    task each, the pool shut down (``dphist.audit.sampling.forked_pool``: the same ProcessPoolExecutor of
    forked workers as the sweep's, in this already-warm process)."""
    from dphist.audit.sampling import forked_pool
    with forked_pool(2) as pool:
        list(pool.map(abs, (1, 2)))


def _workers_ended():
    """Untimed between the paired calls: the process sweep returns at its last result while its forked
    workers are still exiting (the teardown of a large inherited address space, milliseconds of the
    other core), so the serial sweep timed next would share the cores with it."""
    from dphist.experiments.forking import workers_ended
    workers_ended(timeout=5.0)


def _sweep(process_cfg, _serial_cfg):
    from dphist.experiments import run_sweep
    run_sweep(process_cfg, output=False, progress=False)


def _serial(_process_cfg, serial_cfg):
    from dphist.experiments import run_sweep
    run_sweep(serial_cfg, output=False, progress=False)


CASES = [
    dict(name="dphist --help, fresh process (target 0.3 s)", target=0.3, setup=tuple,
         run=lambda: _cli("--help"), repeat=5),
    dict(name="dphist run -a AHP, 4,096 bins, release mode, numba cache filled (target 0.6 s)", target=0.6,
         setup=tuple, run=_run_ahp, repeat=5),
    dict(name="dphist run -a AHP, 4,096 bins, release mode, numba cache empty (target 2 s)", target=2.0,
         setup=_empty_cache_setup, fresh_setup=True, warmup=False, run=_run_ahp, repeat=3),
    dict(name="built-in dataset flights-dep-delay after first use: binary cache (target 0.05 s)", target=0.05,
         setup=_dataset_setup(True), run=_load_delay, repeat=5),
    dict(name="built-in dataset flights-dep-delay parsed from the CSV (information)",
         setup=_dataset_setup(False), fresh_setup=True, run=_load_delay, repeat=3),
    dict(name="200-cell sweep on flights-dep-delay, process executor with 2 workers (target = serial / 1.8)",
         setup=_sweep_setup, reference=_serial, run=_sweep, factor=1 / 1.8, repeat=3, settle=_workers_ended),
    machine_ceiling("the serial 200-cell sweep on flights-dep-delay", _sweep_setup, _serial),
    dict(name="process pool of 2 forked workers: start, one empty task each, shut down (information)",
         setup=tuple, run=_pool_start_stop, repeat=7),
    dict(name="2,000-cell sweep (100 trials a cell) on flights-dep-delay, process executor with 2 workers "
              "(information; the target of the 200-cell case applied: serial / 1.8)",
         setup=_sweep_setup_2000, reference=_serial, run=_sweep, factor=1 / 1.8, repeat=3, settle=_workers_ended),
]
