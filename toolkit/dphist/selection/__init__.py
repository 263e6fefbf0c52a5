"""Private algorithm selection (Pythia, Kotsogiannis, Machanavajjhala, Hay, Miklau, SIGMOD 2017).

* ``features.py``: the private features (the noisy total; the noisy L1 distance to uniform,
  ``L1ToUniform``, and its sensitivity) and the tree's input built from them and the public values;
* ``regret_tree.py``: ``RegretTree``, a decision tree fitted to a regret matrix (numpy), its
  prediction and the path of one input;
* ``auto.py``: the ``auto`` preset (``AutoPipeline``), the model file (``load_model``: format,
  version, checks), ``describe``;
* ``train.py``: the training pipeline (``make selector``): the sweep of ``auto-1d.training.toml``,
  regret per setting, the trees, the model JSON.

Importing this package loads no plugin; the preset is registered as ``auto`` under ``dphist.algorithms``.
"""
from .auto import DEFAULT_MODEL, DEFAULT_SHARE, MODEL_VERSION, AutoPipeline, describe, load_model
from .features import FEATURE_NAMES, L1ToUniform, feature_vector, l1_sensitivity, l1_to_uniform
from .regret_tree import RegretTree, fit

__all__ = ["AutoPipeline", "describe", "load_model", "DEFAULT_MODEL", "DEFAULT_SHARE", "MODEL_VERSION",
           "FEATURE_NAMES", "L1ToUniform", "feature_vector", "l1_sensitivity", "l1_to_uniform", "RegretTree", "fit"]
