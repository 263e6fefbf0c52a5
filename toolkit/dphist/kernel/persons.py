"""Person-level privacy in the kernel: every primitive's sensitivity times ``k`` records per person.

When each person may contribute up to ``k`` records (after contribution
bounding, :mod:`dphist.records.bounding`), two neighbouring tables differ in
one person's records: up to ``k`` records, so a query whose answer one record
moves by at most ``s`` in L1 moves by at most ``k s``.  The kernel applies this
in one place, the noise seam: :class:`PersonLevelNoise` wraps the run's noise
source and multiplies the sensitivity of every draw by ``k``:

* ``laplace_mechanism(values, s, eps, support=m)`` becomes Laplace with
  sensitivity ``k s``; up to ``k m`` answers may change (``k`` records, each
  changing at most ``m``), which release mode's grid rounding must cover;
* ``exponential_mechanism(scores, s, eps)`` uses score sensitivity ``k s``;
* raw ``laplace(scale, size)`` draws (research mode) get scale ``k * scale``.

Every primitive, and every vetted mechanism (which must draw all its noise
through the source it is given), is thereby calibrated to ``k`` records.  For
the Laplace and exponential mechanisms this is exact: sensitivity ``k s`` at
``eps`` is the same distribution as sensitivity ``s`` at ``eps / k``, which is
``eps``-DP for groups of ``k`` records by group privacy (Dwork & Roth 2014,
Thm 2.2).  The ledger row of each measurement records the scaled sensitivity
and the note "k records per person".
"""
from __future__ import annotations

import numpy as np

from ..errors import InvalidParameter


def check_contributions(k) -> int:
    """``k`` as a positive integer, or :class:`InvalidParameter` naming ``max_contributions``."""
    if type(k) is int and k > 0:   # a positive Python int (not a bool: its type is bool)
        return k
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise InvalidParameter(f"max_contributions must be a positive integer, got {k!r}")
    k = int(k)
    if k <= 0:
        raise InvalidParameter(f"max_contributions must be a positive integer, got {k}")
    return k


def unit_text(k: int, person: bool = False) -> str:
    """The privacy unit in words: ``"1 record"`` (record level) or ``"k records per person"``
    (``person``: bounded by person even at ``k = 1``, ``"1 record per person"``)."""
    if k == 1:
        return "1 record per person" if person else "1 record"
    return f"{k} records per person"


class PersonLevelNoise:
    """A noise source calibrated to ``k`` records per person (module docstring)."""

    def __init__(self, inner, k: int):
        self.inner = inner
        self.k = check_contributions(k)
        self.name = inner.name
        self.mode = inner.mode

    def laplace_mechanism(self, values, sensitivity, epsilon, *, integral=False, support=None):
        support = None if support is None else int(support) * self.k
        return self.inner.laplace_mechanism(values, float(sensitivity) * self.k, epsilon, integral=integral,
                                            support=support)

    def exponential_mechanism(self, scores, sensitivity, epsilon, *, monotonic=False):
        return self.inner.exponential_mechanism(scores, float(sensitivity) * self.k, epsilon, monotonic=monotonic)

    def laplace_parts(self, sensitivity, epsilon, cuts):
        """The inner source's parts (``SeededLaplace.laplace_parts``) at ``k`` times the sensitivity, or None."""
        parts = getattr(self.inner, "laplace_parts", None)
        return None if parts is None else parts(float(sensitivity) * self.k, epsilon, cuts)

    def laplace(self, scale, size):
        return self.inner.laplace(scale * self.k, size)

    def probe(self) -> "PersonLevelNoise":
        """The kernel's throwaway source for probing user code: the inner source's kind, the same k
        (so release mode's refusal of raw float noise shows on the probe, before any charge)."""
        from .private import _probe_noise
        return PersonLevelNoise(_probe_noise(self.inner), self.k)
