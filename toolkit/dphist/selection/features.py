"""The selector's features: private ones measured through the kernel, public ones from the request.

Pythia (Kotsogiannis, Machanavajjhala, Hay, Miklau, SIGMOD 2017) spends a small share of epsilon on
low-sensitivity properties of the input and adds the public ones (domain size, epsilon, the task);
a tree trained offline maps them to an algorithm.  The private features here:

* **the noisy total** ``T~ = sum(x) + Laplace(1/eps_T)``: the interval ``[0, n)`` through the kernel's
  ``laplace_intervals`` (L1 sensitivity 1: one record moves the total by one);
* **the noisy L1 distance to uniform** ``D~ = D(x) + Laplace(s_n/eps_D)`` with
  ``D(x) = sum_i |x_i - T/n|``, measured unnormalised by the vetted mechanism
  :class:`L1ToUniform`.  Sensitivity: adding one record to bin ``j`` moves the mean ``T/n`` by ``1/n``,
  so each of the other ``n - 1`` terms moves by at most ``1/n`` and the term of bin ``j`` (``x_j`` up by
  1, its mean by ``1/n``) by at most ``1 - 1/n``: ``|D(x') - D(x)| <= (n - 1)/n + (n - 1)/n =
  2 (1 - 1/n) = s_n`` (removing a record is the same pair read backwards).  The bound is attained
  (all records in one bin, one more added there), so it is the sensitivity, not just a bound
  (``tests/test_selection.py`` checks it by brute force on neighbouring pairs).  Normalising by the
  true total first would make the sensitivity depend on the data (``D / T`` changes by up to ``~2/T``,
  unbounded at small ``T``); dividing by the *noisy* total afterwards is post-processing:
  ``tvd~ = D~ / (2 max(T~, 1))`` clipped to ``[0, 1]`` (the total-variation distance of the shape to
  uniform).

The budget of the features, ``share * eps``, is split evenly between the two measurements.  On one
bin ``D`` is identically 0 (public), so only the total is measured, with the whole feature budget.

The tree sees derived values (:func:`feature_vector`), all functions of ``T~``, ``D~`` and public
numbers: ``log10 T~``, ``log10 (T~ eps_run)`` (signal against the chosen algorithm's noise),
``log10 (T~ eps_run / n)`` (per bin), ``tvd~``, ``log2 n`` and ``log10 eps_run``, where ``eps_run``
is the epsilon the chosen preset runs with.  2-D inputs slot in through the same path: more public
features (the grid's shape) and the same private measurements over the flattened grid.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidParameter
from ..kernel.private import VettedMechanism

#: names of the tree's inputs, in the order of :func:`feature_vector`
FEATURE_NAMES = ("log10_total", "log10_total_eps", "log10_total_eps_per_bin", "tvd", "log2_domain", "log10_eps")


def l1_to_uniform(counts) -> float:
    """``D(x) = sum_i |x_i - T/n|``: the unnormalised L1 distance of a histogram to the uniform one of
    the same total (public helper; the private measurement is :class:`L1ToUniform`)."""
    x = np.asarray(counts, dtype=float)
    return float(np.abs(x - x.sum() / x.size).sum())


def l1_sensitivity(n: int) -> float:
    """The L1 distance to uniform's sensitivity on ``n`` bins, ``2 (1 - 1/n)`` (module docstring)."""
    return 2.0 * (1.0 - 1.0 / n)


class L1ToUniform(VettedMechanism):
    """``D(x) + Laplace(s_n / eps)``: the noisy L1 distance to uniform on ``n >= 2`` bins."""

    name = "selection.l1-to-uniform"
    proof = ("Laplace mechanism on D(x) = sum_i |x_i - sum(x)/n|, whose sensitivity is 2(1 - 1/n) "
             "(dphist.selection.features, module docstring)")

    def __init__(self, n: int):
        if n < 2:
            raise InvalidParameter("the L1 distance to uniform is identically 0 on one bin; it is not measured")
        self.n = int(n)
        self.sensitivity = l1_sensitivity(self.n)

    def check(self, n: int, **arguments) -> dict:
        if n != self.n:
            raise InvalidParameter(f"{self.name} was built for {self.n} bins, the data has {n}")
        return arguments

    def answers(self, n: int, **arguments) -> int:
        return 1

    def run(self, counts, epsilon, noise, **arguments):
        d = np.array([l1_to_uniform(counts)])
        return noise.laplace_mechanism(d, self.sensitivity, epsilon)


def measure(data, n: int, epsilon: float) -> dict:
    """``{"total": T~, "l1": D~}`` measured through ``data`` (a kernel handle) with ``epsilon`` in all."""
    if n < 2:
        total = data.laplace_intervals(np.array([0]), np.array([n]), epsilon)
        return {"total": float(total[0]), "l1": 0.0}
    total = data.laplace_intervals(np.array([0]), np.array([n]), epsilon / 2)
    l1 = data.custom(L1ToUniform(n), epsilon / 2)
    return {"total": float(total[0]), "l1": float(np.asarray(l1).ravel()[0])}


def feature_vector(total: float, l1: float, n: int, eps_run: float) -> np.ndarray:
    """The tree's input (:data:`FEATURE_NAMES`) from the measured ``T~``, ``D~`` and public values."""
    t = max(float(total), 1.0)
    tvd = min(max(float(l1) / (2.0 * t), 0.0), 1.0)
    return np.array([math.log10(t), math.log10(t * eps_run), math.log10(t * eps_run / n), tvd,
                     math.log2(n), math.log10(eps_run)])


def feature_matrix(total, l1, n, eps_run) -> np.ndarray:
    """:func:`feature_vector` for arrays of cells (training): one row per cell."""
    t = np.maximum(np.asarray(total, dtype=float), 1.0)
    n = np.asarray(n, dtype=float)
    e = np.asarray(eps_run, dtype=float)
    tvd = np.clip(np.asarray(l1, dtype=float) / (2.0 * t), 0.0, 1.0)
    return np.column_stack([np.log10(t), np.log10(t * e), np.log10(t * e / n), tvd, np.log2(n),
                            np.log10(e) * np.ones_like(t)])
