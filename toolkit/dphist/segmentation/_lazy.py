"""The compiled kernels (:mod:`.kernels`, and numba with them) imported on first use, not with the package.

``import dphist.segmentation`` stays free of numba: AHP's greedy grouping on a few thousand bins runs
interpreted (:mod:`._lookahead`) and a ``dphist run`` of it never imports numba (``tests/test_import_cost.py``).
"""
from __future__ import annotations


class _Kernels:
    """Stands for :mod:`.kernels`: the first access to a name imports the module and keeps the name."""

    def __getattr__(self, name):
        from . import kernels as module
        value = getattr(module, name)
        setattr(self, name, value)
        return value


kernels = _Kernels()
