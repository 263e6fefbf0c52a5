"""dphist: differentially private histograms from pluggable components.

The public surface::

    import dphist
    release = dphist.make_algorithm("identity").run(counts, epsilon=0.1, seed=1)
    release.estimate, release.ledger

See ARCHITECTURE.md for the flow from histogram to release.  The top level exports the modelling
API (components, pipelines, presets, the registry, errors, and the ``VettedMechanism`` base and
``Ledger`` a release carries); the kernel's internals (``PrivateKernel``, ``DataHandle``, the noise
sources) stay in :mod:`dphist.kernel`, where tests and auditors reach them.
"""
from .components import Component, Context, Finalizer, Initializer, Partitioner, Sorter
from .errors import (BrokenPlugin, BudgetExceeded, DPHistError, DuplicateComponent, InputFileError,
                     InvalidHistogram, InvalidParameter, PrivacyViolation, UnknownComponent)
from .kernel import Ledger, VettedMechanism
from .partition import Partition
from .pipeline import Pipeline, Release
from .presets import make_algorithm, preset
from .records import Histogram, histogram
from .registry import Registry, default_registry, register

__version__ = "0.1.0"

__all__ = [
    "BrokenPlugin", "BudgetExceeded", "Component", "Context", "DPHistError",
    "DuplicateComponent", "Finalizer", "Histogram", "Initializer", "InputFileError", "InvalidHistogram",
    "InvalidParameter", "Ledger", "Partition", "Partitioner", "Pipeline",
    "PrivacyViolation", "Registry", "Release", "Sorter",
    "UnknownComponent", "VettedMechanism", "default_registry", "histogram", "make_algorithm", "preset", "register",
]
