"""``dphist.widgets``: the interactive explorer for notebooks (and, through Voila, a web page).

    from dphist.widgets import Explorer
    ex = Explorer(algorithm="sDAWA", seed=1)
    ex                      # the widget
    ex.epsilon.value = 1.0  # drive it from code
    ex.wait().errors        # what the views show

``import dphist`` does not import this package (nor ipywidgets); importing it
does.  The computation (:mod:`.model`) is separate from the widgets so tests
and benchmarks can use it without a browser.
"""
from .explorer import Explorer
from .model import Settings, Snapshot, evaluate

__all__ = ["Explorer", "Settings", "Snapshot", "evaluate"]
