"""The private kernel: the only object that holds the true counts.

Components receive a :class:`DataHandle`.  Its methods are the *only* routes
to the data, and each one charges the component's budget (and writes a ledger
row) **before** it computes an answer; a request beyond the share raises
:class:`~dphist.errors.BudgetExceeded` and returns nothing.

This is a discipline boundary, not a sandbox: Python cannot stop a determined
caller from reaching into private attributes.  The conformance kit
(:mod:`dphist.testing`) and the ledger tests check that components stay on
the documented routes.
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..errors import BudgetExceeded, InvalidHistogram, InvalidParameter
from .ledger import Ledger, LedgerEntry
from .noise import NoiseSource
from .queries import apply_linear, check_intervals, linear_sensitivity, max_interval_coverage

# Relative slack for floating-point sums of budget shares (0.1 + 0.2 + 0.7 != 1.0).
_BUDGET_SLACK = 1e-9


def validate_counts(counts) -> np.ndarray:
    """Return ``counts`` as an int64 vector or raise :class:`InvalidHistogram` naming the fault."""
    arr = np.asarray(counts)
    if arr.dtype == object:
        raise InvalidHistogram("histogram counts must be numbers")
    if arr.ndim != 1:
        raise InvalidHistogram(f"a histogram is a 1-D vector of counts; got {arr.ndim} dimensions {arr.shape}")
    if arr.size == 0:
        raise InvalidHistogram("the histogram is empty (0 bins)")
    if arr.dtype.kind == "b":
        raise InvalidHistogram("histogram counts must be integers, not booleans")
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InvalidHistogram(f"count at bin {i} is {arr[i]}; counts must be finite")
        frac = arr != np.round(arr)
        if frac.any():
            i = int(np.flatnonzero(frac)[0])
            raise InvalidHistogram(f"count at bin {i} is {arr[i]}, not an integer")
    elif arr.dtype.kind not in "iu":
        raise InvalidHistogram(f"histogram counts must be integers, got dtype {arr.dtype}")
    if arr.min() < 0:
        i = int(np.argmin(arr))
        raise InvalidHistogram(f"count at bin {i} is {arr[i]}; counts must be non-negative")
    return arr.astype(np.int64, copy=False)


def validate_epsilon(epsilon, what: str = "epsilon") -> float:
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{what} must be a number, got {epsilon!r}") from None
    if not math.isfinite(eps) or eps <= 0:
        raise InvalidParameter(f"{what} must be positive and finite, got {epsilon!r}")
    return eps


class PrivateKernel:
    """Holds the true histogram, the noise source and the ledger for one run."""

    def __init__(self, counts, noise: NoiseSource, ledger: Ledger | None = None):
        self.__counts = validate_counts(counts)
        self.__counts.setflags(write=False)
        self.noise = noise
        self.ledger = ledger if ledger is not None else Ledger()

    @property
    def n(self) -> int:
        """Domain size (public)."""
        return int(self.__counts.size)

    def handle(self, component: str, stage: str, budget: float) -> "DataHandle":
        """A metered view of the data for one component with ``budget`` epsilon."""
        return DataHandle(self, component, stage, float(budget))

    # The handle calls this after it has charged the budget; nothing else does.
    def _true_counts(self) -> np.ndarray:
        return self.__counts


class DataHandle:
    """A component's only access to the data: metered measurement primitives.

    Attributes ``n``, ``budget``, ``spent`` and ``remaining`` are public.
    Every primitive takes ``epsilon`` and charges it first.
    """

    def __init__(self, kernel: PrivateKernel, component: str, stage: str, budget: float):
        self._kernel = kernel
        self.component = component
        self.stage = stage
        self.budget = budget
        self.spent = 0.0

    @property
    def n(self) -> int:
        return self._kernel.n

    @property
    def remaining(self) -> float:
        return max(self.budget - self.spent, 0.0)

    # -------------------------------------------------------------- metering
    def _charge(self, primitive: str, epsilon, sensitivity: float, answers: int, note: str = "") -> float:
        eps = validate_epsilon(epsilon, f"epsilon for {primitive}")
        if self.spent + eps > self.budget * (1 + _BUDGET_SLACK) + 1e-15:
            raise BudgetExceeded(
                f"{self.component} ({self.stage}) asked for epsilon={eps:.6g} via {primitive} "
                f"but only {self.remaining:.6g} of its share {self.budget:.6g} is left")
        self.spent += eps
        self._kernel.ledger.record(LedgerEntry(self.component, self.stage, primitive, eps,
                                               float(sensitivity), int(answers), note))
        return eps

    def _laplace(self, values: np.ndarray, sensitivity: float, eps: float) -> np.ndarray:
        return values + self._kernel.noise.laplace(sensitivity / eps, values.size)

    # ------------------------------------------------------------ primitives
    def laplace_identity(self, epsilon) -> np.ndarray:
        """Every bin's count plus Laplace(1/epsilon) noise (sensitivity 1)."""
        eps = self._charge("laplace.identity", epsilon, 1.0, self.n)
        return self._laplace(self._kernel._true_counts().astype(float), 1.0, eps)

    def laplace_partition(self, partition, epsilon) -> np.ndarray:
        """Each group's sum plus Laplace(1/epsilon): the groups are disjoint, so sensitivity 1."""
        if partition.n_bins != self.n:
            raise InvalidParameter(f"partition covers {partition.n_bins} bins, the domain has {self.n}")
        eps = self._charge("laplace.partition", epsilon, 1.0, partition.n_groups)
        return self._laplace(partition.sums(self._kernel._true_counts()).astype(float), 1.0, eps)

    def laplace_intervals(self, starts, ends, epsilon, order=None) -> np.ndarray:
        """Sums over position intervals ``[start, end)`` of the bins arranged in ``order``.

        One level of a tree over (possibly sorted) bins is a set of disjoint
        intervals, so its sensitivity is 1; several levels at once, or any
        overlapping set, get the kernel-computed maximum coverage of a bin.
        Empty intervals (padding nodes) are allowed and answered with noise.
        """
        starts, ends = check_intervals(self.n, starts, ends)
        sens = float(max_interval_coverage(self.n, starts, ends))
        eps = self._charge("laplace.intervals", epsilon, sens, starts.size)
        x = self._kernel._true_counts()
        if order is not None:
            order = np.asarray(order, dtype=np.int64)
            if order.shape != (self.n,) or np.bincount(order, minlength=self.n).max() != 1:
                raise InvalidParameter("order must be a permutation of the domain")
            x = x[order]
        prefix = np.concatenate(([0], np.cumsum(x)))
        return self._laplace((prefix[ends] - prefix[starts]).astype(float), max(sens, 1.0), eps)

    def laplace_linear(self, queries, epsilon) -> np.ndarray:
        """Answers of a dense, sparse (scipy) or implicit query matrix plus Laplace noise.

        Sensitivity is the largest column L1 norm, computed here.
        """
        sens = linear_sensitivity(queries, self.n)
        if sens <= 0:
            raise InvalidParameter("the query matrix is all zeros; nothing to measure")
        m = int(queries.shape[0])
        eps = self._charge("laplace.linear", epsilon, sens, m)
        return self._laplace(apply_linear(queries, self._kernel._true_counts().astype(float)), sens, eps)

    def sorted_counts(self, epsilon) -> np.ndarray:
        """The counts sorted ascending plus Laplace(1/epsilon) noise.

        Hay et al. 2010, Section 3: adding or removing a record changes one
        entry of the sorted vector by one, so the sensitivity is 1.  The answer
        is *unattributed*: it says nothing about which bin holds which count.
        """
        eps = self._charge("laplace.sorted-counts", epsilon, 1.0, self.n)
        return self._laplace(np.sort(self._kernel._true_counts()).astype(float), 1.0, eps)

    def exponential(self, score: Callable[[np.ndarray], np.ndarray], n_candidates: int,
                    score_sensitivity: float, epsilon, *, monotonic: bool = False) -> int:
        """Exponential mechanism (McSherry & Talwar 2007): index of the chosen candidate.

        ``score(counts)`` returns one utility per candidate (higher is better);
        its sensitivity ``score_sensitivity`` is declared by the caller.  The
        candidate ``i`` is drawn with probability proportional to
        ``exp(epsilon * score_i / (2 * sensitivity))`` (``/ sensitivity`` when
        the score is monotonic in the data).
        """
        sens = float(score_sensitivity)
        if not math.isfinite(sens) or sens <= 0:
            raise InvalidParameter(f"score sensitivity must be positive and finite, got {score_sensitivity!r}")
        if int(n_candidates) < 1:
            raise InvalidParameter("the exponential mechanism needs at least one candidate")
        eps = self._charge("exponential", epsilon, sens, 1)
        scores = np.asarray(score(self._kernel._true_counts()), dtype=float)
        if scores.shape != (int(n_candidates),) or not np.all(np.isfinite(scores)):
            raise InvalidParameter(f"score must return {n_candidates} finite values, got shape {scores.shape}")
        factor = 1.0 if monotonic else 2.0
        return self._kernel.noise.exponential_choice(scores, eps / (factor * sens))

    def custom(self, mechanism: "VettedMechanism", epsilon, **arguments):
        """Run a vetted custom mechanism (its privacy proof lives with its plugin)."""
        if not isinstance(mechanism, VettedMechanism):
            raise InvalidParameter(f"{type(mechanism).__name__} is not a VettedMechanism")
        if not mechanism.proof:
            raise InvalidParameter(f"vetted mechanism {mechanism.name} states no privacy proof")
        eps = self._charge(f"custom:{mechanism.name}", epsilon, mechanism.sensitivity,
                           mechanism.answers(self.n, **arguments), note=mechanism.proof)
        return mechanism.run(self._kernel._true_counts(), eps, self._kernel.noise, **arguments)


class VettedMechanism:
    """Base class of a custom ε-DP mechanism whose proof ships with its plugin.

    Subclasses set ``name``, ``proof`` (the theorem and where it is proved) and
    ``sensitivity`` (for the ledger), and implement :meth:`run`, which must draw
    every random value from the ``noise`` source it is given.
    """

    name: str = ""
    proof: str = ""
    sensitivity: float = 1.0

    def answers(self, n: int, **arguments) -> int:
        """How many noisy values the mechanism releases (for the ledger)."""
        return n

    def run(self, counts: np.ndarray, epsilon: float, noise: NoiseSource, **arguments):
        raise NotImplementedError
