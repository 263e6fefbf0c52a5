"""A complete (if naive) partitioner and its preset, as a model for plugins.

The equi-width histogram: merge every ``width`` consecutive bins of the
current order.  It decides nothing from data, so it spends no budget.
"""
import numpy as np

from dphist import Partitioner, Pipeline, preset
from dphist.params import Interval


class FixedWidthPartitioner(Partitioner):
    """Groups of ``width`` consecutive bins (the last may be shorter)."""

    name = "template.fixed-width"
    citation = "textbook equi-width histogram (template example)"
    spends = False
    #: every constructor parameter says what it accepts (dphist.params); construction checks it
    #: and raises InvalidParameter naming the class, the parameter and the value - before any run
    param_constraints = {"width": Interval(int, 1, None)}

    def __init__(self, width: int = 8):
        self.width = width

    def partition(self, bins, ctx):
        return bins.merge(np.arange(0, bins.n_groups, int(self.width)))


@preset("template-equiwidth", citation="template example",
        params={"width": FixedWidthPartitioner.param_constraints["width"]})
def equiwidth(width: int = 8) -> Pipeline:
    """Equi-width groups of ``width`` bins, each measured with Laplace noise."""
    return Pipeline(None, None, FixedWidthPartitioner(width), "group-mean", (0.0, 0.0, 1.0))
