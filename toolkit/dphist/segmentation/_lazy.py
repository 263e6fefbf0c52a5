"""The compiled kernels (:mod:`.kernels`, and numba with them) imported on first use, not with the package.

``import dphist.segmentation`` stays free of numba: AHP's greedy grouping on a few thousand bins runs
interpreted (:mod:`._lookahead`) and a ``dphist run`` of it never imports numba (``tests/test_import_cost.py``).
"""
from __future__ import annotations

import sys


class _Kernels:
    """Stands for :mod:`.kernels`: the first access to a name imports the module and keeps the name."""

    def __getattr__(self, name):
        from . import kernels as module
        value = getattr(module, name)
        setattr(self, name, value)
        return value


kernels = _Kernels()


#: from this many values a compiled loop is worth importing numba for (0.3-0.5 s with its cache filled);
#: below it, numpy, unless numba is imported already (the same threshold as research mode's Laplace draws)
COMPILED_MIN = 1 << 15


def compiled_for(size: int) -> bool:
    """Whether a loop over ``size`` values takes its compiled route (which gives the same numbers)."""
    return size >= COMPILED_MIN or "numba" in sys.modules
