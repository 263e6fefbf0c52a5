"""The experiment engine: sweeps over algorithms x datasets x epsilon x scale x domain x trials.

>>> from dphist.experiments import SweepConfig, run_sweep
>>> cfg = SweepConfig.from_mapping({"algorithms": ["identity"], "datasets": ["flights-dep-minute"],
...                                 "epsilons": [0.1], "trials": 2, "executor": "serial"})
>>> outcome = run_sweep(cfg, output=False, progress=False)

See :mod:`.engine` (planning, resumption), :mod:`.cells` (seeds), :mod:`.executors`,
:mod:`.analysis` (regret, skyline, exchangeability) and :mod:`.report`.
"""
from .cells import Cell
from .config import AlgorithmSpec, DatasetSpec, SweepConfig
from .engine import SweepOutcome, plan, run_sweep
from .results import Results

__all__ = ["AlgorithmSpec", "Cell", "DatasetSpec", "Results", "SweepConfig", "SweepOutcome", "plan", "run_sweep"]
