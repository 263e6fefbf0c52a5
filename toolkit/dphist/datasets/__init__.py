"""Datasets: named histograms with a documented public domain.

``load(name)`` finds a dataset in the ``dphist.datasets`` registry group
(built-ins register there like any plugin) or among the ``.npy`` files of the
external data directories (``DPHIST_DATA``, see :mod:`.files`).
"""
from .base import Dataset, load, names
from .files import data_dirs, dpbench

__all__ = ["Dataset", "data_dirs", "dpbench", "load", "names"]
