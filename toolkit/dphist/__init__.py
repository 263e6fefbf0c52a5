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
from .cache import configure_numba

configure_numba()   # numba's kernels cached in a per-user folder (before any module imports numba)

from .errors import (BrokenPlugin, BudgetExceeded, DPHistError, DuplicateComponent, InputFileError,  # noqa: E402
                     InvalidHistogram, InvalidParameter, PrivacyViolation, UnknownComponent)

#: the rest of the public surface, imported on first access (PEP 562): ``import dphist`` and
#: ``dphist --help`` stay light; ``dphist.make_algorithm`` or ``from dphist import Pipeline`` load what they name
_LAZY = {
    "Component": "components", "Context": "components", "Finalizer": "components", "Initializer": "components",
    "Partitioner": "components", "Sorter": "components",
    "Ledger": "kernel", "VettedMechanism": "kernel",
    "Partition": "partition",
    "Pipeline": "pipeline", "Release": "pipeline",
    "make_algorithm": "presets", "preset": "presets",
    "Histogram": "records", "histogram": "records",
    "Registry": "registry", "default_registry": "registry", "register": "registry",
}


def __getattr__(name):
    from importlib import import_module
    from importlib.util import find_spec
    module = _LAZY.get(name)
    if module is None:   # a submodule (``dphist.kernel.PrivateKernel`` after ``import dphist``), as before
        if name.startswith("_") or find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module 'dphist' has no attribute {name!r}")
        return import_module(f".{name}", __name__)
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value   # later accesses skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "BrokenPlugin", "BudgetExceeded", "Component", "Context", "DPHistError",
    "DuplicateComponent", "Finalizer", "Histogram", "Initializer", "InputFileError", "InvalidHistogram",
    "InvalidParameter", "Ledger", "Partition", "Partitioner", "Pipeline",
    "PrivacyViolation", "Registry", "Release", "Sorter",
    "UnknownComponent", "VettedMechanism", "default_registry", "histogram", "make_algorithm", "preset", "register",
]
