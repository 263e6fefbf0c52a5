"""dphist: differentially private histograms from pluggable components.

The public surface::

    import dphist
    release = dphist.make_algorithm("identity").run(counts, epsilon=0.1, seed=1)
    release.estimate, release.ledger

See ARCHITECTURE.md for the flow from histogram to release.
"""
from .components import Component, Context, Finalizer, Initializer, Partitioner, Sorter
from .errors import (BrokenPlugin, BudgetExceeded, DPHistError, DuplicateComponent, InputFileError,
                     InvalidHistogram, InvalidParameter, PrivacyViolation, UnknownComponent)
from .kernel import DataHandle, Ledger, NoiseSource, PrivateKernel, SeededLaplace, VettedMechanism
from .partition import Partition
from .pipeline import Pipeline, Release
from .presets import make_algorithm, preset
from .registry import Registry, default_registry, register

__version__ = "0.1.0"

__all__ = [
    "BrokenPlugin", "BudgetExceeded", "Component", "Context", "DPHistError", "DataHandle",
    "DuplicateComponent", "Finalizer", "Initializer", "InputFileError", "InvalidHistogram",
    "InvalidParameter", "Ledger", "NoiseSource", "Partition", "Partitioner", "Pipeline",
    "PrivacyViolation", "PrivateKernel", "Registry", "Release", "SeededLaplace", "Sorter",
    "UnknownComponent", "VettedMechanism", "default_registry", "make_algorithm", "preset", "register",
]
