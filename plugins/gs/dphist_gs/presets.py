"""GS (Kellaris & Papadopoulos, PVLDB 2013) as a dphist preset (reconstruction; see dphist_gs.grouping)."""
from __future__ import annotations

from dphist import Pipeline, preset
from dphist.params import UNIT_SHARE

from .grouping import CITATION, FixedWidthPartitioner


@preset("GS", citation=CITATION, params={"ratio": UNIT_SHARE, **FixedWidthPartitioner.param_constraints})
def gs(ratio: float = 0.5, w: int | None = None, corrected: bool = False) -> Pipeline:
    """GS: Laplace H~ (share ``ratio``), descending noisy sort, groups of w, Laplace group averages.

    ``ratio`` [choice]: the share of epsilon spent on H~ (0.5; the paper's sampling rate is not
    available to us; notebooks/gs.ipynb measures the trade-off on synthetic data)."""
    r = float(ratio)
    return Pipeline("laplace", ("noisy-count", {"descending": True}), FixedWidthPartitioner(w=w, corrected=corrected),
                    "group-mean", (r, 0.0, 1.0 - r))
