"""Parameter checks shared by the plugin's components (clear errors naming the parameter)."""
from __future__ import annotations

import math

import numpy as np

from dphist import InvalidParameter


def positive(owner: str, label: str, value, *, allow_none: bool = False):
    """A finite number > 0 (or None when allowed)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameter(f"{owner}: {label} must be a number > 0, got {value!r}")
    if not math.isfinite(float(value)) or float(value) <= 0:
        raise InvalidParameter(f"{owner}: {label} must be a finite number > 0, got {value!r}")
    return float(value)


def ratio(owner: str, label: str, value) -> float:
    """A number strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidParameter(f"{owner}: {label} must be a number in (0, 1), got {value!r}")
    if not 0 < float(value) < 1:
        raise InvalidParameter(f"{owner}: {label} must lie strictly between 0 and 1, got {value!r}")
    return float(value)


def groups(owner: str, label: str, value, *, allow_none: bool = True):
    """A number of groups: an integer >= 1 (or None)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidParameter(f"{owner}: {label} must be an integer >= 1, got {value!r}")
    return int(value)


def choice(owner: str, label: str, value, options) -> str:
    if value not in options:
        raise InvalidParameter(f"{owner}: unknown {label} {value!r}; use one of {', '.join(map(repr, options))}")
    return value
