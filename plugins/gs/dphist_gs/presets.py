"""GS (Kellaris & Papadopoulos, PVLDB 2013) as a dphist preset (reconstruction; see dphist_gs.grouping)."""
from __future__ import annotations

import math

from dphist import InvalidParameter, Pipeline, preset

from .grouping import CITATION, FixedWidthPartitioner


@preset("GS", citation=CITATION)
def gs(ratio: float = 0.5, w: int | None = None, corrected: bool = False) -> Pipeline:
    """GS: Laplace H~ (share ``ratio``), descending noisy sort, groups of w, Laplace group averages.

    ``ratio`` [choice]: the share of epsilon spent on H~ (0.5; the paper's sampling rate is not
    available to us; notebooks/gs.ipynb measures the trade-off on synthetic data)."""
    try:
        r = float(ratio)
    except (TypeError, ValueError):
        raise InvalidParameter(f"GS: ratio must be a number in (0, 1), got {ratio!r}") from None
    if isinstance(ratio, bool) or not math.isfinite(r) or not 0 < r < 1:
        raise InvalidParameter(f"GS: ratio (the share of epsilon spent on H~) must lie strictly between 0 and 1, "
                               f"got {ratio!r}")
    return Pipeline("laplace", ("noisy-count", {"descending": True}), FixedWidthPartitioner(w=w, corrected=corrected),
                    "group-mean", (r, 0.0, 1.0 - r))
