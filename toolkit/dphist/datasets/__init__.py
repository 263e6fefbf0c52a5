"""Datasets: named histograms with a documented public domain.

``load(name)`` finds a dataset in the ``dphist.datasets`` registry group
(built-ins register there like any plugin) or among the ``.npy`` files of the
external data directories (``DPHIST_DATA``, see :mod:`.files`).  The DPBench
generator (shape, scale, domain size as independent knobs) is
:func:`.generator.generate`; synthetic shapes are in :mod:`.synthetic`.
"""
from .dataset import Dataset
from .lookup import load, names
from .files import add_data_dir, data_dirs, dpbench, load_file
from .generator import generate, population_error, reduce_domain, shape_of
from .synthetic import SHAPES, synthetic

__all__ = ["SHAPES", "Dataset", "add_data_dir", "data_dirs", "dpbench", "generate", "load", "load_file",
           "names", "population_error", "reduce_domain", "shape_of", "synthetic"]
