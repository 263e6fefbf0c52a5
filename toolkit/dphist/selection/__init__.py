"""Private algorithm selection (Pythia, Kotsogiannis, Machanavajjhala, Hay, Miklau, SIGMOD 2017).

* ``features.py``: the private features (the noisy total; three L1 distances to uniform at three
  granularities, ``ShapeStatistics``, and their sensitivities) and the tree's input built from them
  and the public values;
* ``regret_tree.py``: ``RegretTree``, a decision tree fitted to a regret matrix (numpy), its
  prediction and the path of one input;
* ``auto.py``: the ``auto`` preset (``AutoPipeline``), the model file (``load_model``: format,
  version, checks), the public skip rule's lookup (``rule_cell``), ``describe``;
* ``train.py``: the training pipeline (``make selector``): the sweep of ``auto-1d.training.toml``,
  regret per setting, the trees, the skip rule (``skip_cells``), the model JSON.

Importing this package loads no plugin; the preset is registered as ``auto`` under ``dphist.algorithms``.
"""
from .auto import DEFAULT_MODEL, DEFAULT_SHARE, MODEL_VERSION, AutoPipeline, describe, load_model
from .features import (FEATURE_NAMES, ShapeStatistics, coarse_l1, feature_vector, l1_sensitivity, l1_to_uniform,
                       statistic_sensitivities, statistics, within_block_l1)
from .regret_tree import RegretTree, fit

__all__ = ["AutoPipeline", "describe", "load_model", "DEFAULT_MODEL", "DEFAULT_SHARE", "MODEL_VERSION",
           "FEATURE_NAMES", "ShapeStatistics", "feature_vector", "l1_sensitivity", "l1_to_uniform",
           "coarse_l1", "within_block_l1", "statistics", "statistic_sensitivities", "RegretTree", "fit"]
