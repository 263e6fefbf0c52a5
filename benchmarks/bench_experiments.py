"""Experiment-engine speed (issue 3): engine overhead, process-executor speed-up, ``make demo``.

Two targets are relative: those cases are *paired* (``reference`` and
``factor``), so the runner alternates the reference and the timed run and
sets the target from the reference's best time (benchmarks/run.py):

* overhead: a serial sweep of 4 presets x 3 epsilons x 20 trials on a
  4,096-bin histogram (DPBench SEARCHLOGS from ../shared when present, else
  a synthetic stand-in) must take under 1.05 x the same pipeline runs done
  bare (same seeds, no engine, no scoring);
* speed-up: the process executor on 2 workers must be at least 1.7 x faster
  than the serial executor on a 120-cell sweep (4 presets x 3 eps x 10 trials).

Presets: the first four installed of ``PREFERRED`` (overhead) and of
``HEAVIER`` (speed-up: a pool pays off only when cells do real work);
``identity``/``uniform`` fill in when the plugins are absent.  The machine is shared with other
developers, so absolute numbers are inflated; the ratios are what is checked.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import dphist
from dphist.datasets.files import add_data_dir
from dphist.experiments import SweepConfig, plan, run_sweep
from dphist.experiments.cells import cell_data

PREFERRED = ["AHP", "H", "GreedyH", "DAWA-approx", "Hb", "AHP-empirical", "identity", "uniform"]
#: heavier presets for the executor comparison (a process pool only pays off on non-trivial cells)
HEAVIER = ["AHP-optimal", "DAWA-approx", "AHP-empirical", "GreedyH", "AHP", "H", "identity", "uniform"]
# a 4,096-bin DPBench source through the data-directory mechanism when ../shared is present (never copied),
# else a synthetic stand-in of the same size
# (the search of tests/conftest.py: DPHIST_SHARED, else the `shared` folder beside the repository)
_SHARED = Path(os.environ.get("DPHIST_SHARED") or Path(__file__).resolve().parents[2] / "shared")
_DPBENCH = _SHARED / "datasets" / "peer-dpbench" / "1D"
if _DPBENCH.is_dir():
    add_data_dir(_DPBENCH)
DATA = "SEARCHLOGS" if _DPBENCH.is_dir() else "synthetic:shape=steps,n=4096,scale=1000000"


def presets(preferred=PREFERRED, k: int = 4) -> list[str]:
    have = set(dphist.default_registry.available_names("algorithm"))
    return [p for p in preferred if p in have][:k]


def sweep_config(trials: int, executor: str, workers: int | None = None, preferred=PREFERRED) -> SweepConfig:
    return SweepConfig.from_mapping({"algorithms": presets(preferred), "datasets": [DATA],
                                     "epsilons": [0.01, 0.1, 1.0],
                                     "trials": trials, "executor": executor, "workers": workers,
                                     "workloads": ["identity", "prefix", "all-ranges"],
                                     "metrics": ["mse", "scaled-l1"]})


def bare_work(cfg: SweepConfig) -> list[tuple]:
    """The sweep's pipeline runs (same data, seeds) as ``(pipeline, counts, epsilon, seed)``, prepared untimed."""
    p = plan(cfg)
    pipes = {a: dphist.make_algorithm(name, **params) for a, (name, params) in p.job.algorithms.items()}
    return [(pipes[c.algorithm], cell_data(c, p.job.sources[c.dataset])[0], c.epsilon, c.algorithm_seed())
            for c in p.cells]


def _bare_runs(_cfg: SweepConfig, work: list[tuple]) -> None:
    """Reference of the overhead case: the same pipeline runs without the engine (no scoring, no table)."""
    for pipe, counts, eps, seed in work:
        pipe.run(counts, eps, seed=seed)


def _sweep(cfg: SweepConfig, *_):
    run_sweep(cfg, output=False, progress=False)


def _overhead_setup():
    cfg = sweep_config(20, "serial")
    return cfg, bare_work(cfg)


def _speedup_setup():
    return sweep_config(10, "process", workers=2, preferred=HEAVIER), sweep_config(10, "serial", preferred=HEAVIER)


def _serial_sweep(_process_cfg, serial_cfg):
    """Reference of the speed-up case: the same sweep on the serial executor."""
    run_sweep(serial_cfg, output=False, progress=False)


def _demo_setup():
    return (Path(tempfile.mkdtemp(prefix="dphist-demo-")),)


def _demo(out: Path):
    dphist_cli = Path(sys.executable).with_name("dphist")
    subprocess.run([str(dphist_cli), "demo", "--output", str(out), "--force", "--no-progress"], check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ})


CASES = [
    dict(name="engine overhead: serial sweep 4 presets x 3 eps x 20 trials, 4,096 bins "
              "(target = 1.05 x bare pipeline runs)",
         setup=_overhead_setup, reference=_bare_runs, run=_sweep, factor=1.05, repeat=7),
    dict(name="process executor, 2 workers, 120 cells of 4,096 bins (target = serial time / 1.7)",
         setup=_speedup_setup, reference=_serial_sweep, run=_sweep, factor=1 / 1.7, repeat=5),
    dict(name="make demo end to end (dphist demo, every installed preset)", target=180.0,
         setup=_demo_setup, run=_demo, repeat=1),
]
