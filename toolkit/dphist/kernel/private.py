"""The private kernel: the only object that holds the true counts.

Components receive a :class:`DataHandle`.  Its methods are the *only* routes
to the data.  Every primitive follows one order:

1. **validate** every argument (partitions and intervals are re-checked here,
   on private copies, whatever the caller claims);
2. **charge** the budget and write the ledger row (a refused call, for a bad
   argument or a budget overrun, spends nothing and writes nothing);
3. **measure**: read the counts, compute the exact answer, add noise through
   the run's :class:`~dphist.kernel.noise.NoiseSource`.

The counts are readable only while a primitive is running (the *gate*): a
component that calls the kernel's private reader itself gets a
:class:`~dphist.errors.PrivacyViolation`, and the kernel remembers it.  An
exception escaping user code inside a primitive (a score function, a vetted
mechanism) is replaced by a :class:`PrivacyViolation` that carries neither
the original exception nor its frames, which held the counts.

What this guarantees: an honest component cannot leak by mistake; every
epsilon it spends is in the ledger with the sensitivity the kernel computed.
What it cannot: Python cannot hide memory from code determined to cheat
(closures, ``gc``, ``ctypes``).  The conformance kit and the privacy auditor
check that components stay on the documented routes.
"""
from __future__ import annotations

import contextvars
import math
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Callable

import numpy as np

from ..errors import BudgetExceeded, InvalidHistogram, InvalidParameter, PrivacyViolation
from ..partition import Partition
from ..validation import are_strict_bounds, is_permutation
from .ledger import Ledger, LedgerEntry
from .noise import NoiseSource
from .persons import PersonLevelNoise, check_contributions, unit_text
from .queries import check_intervals, check_order, check_queries, max_interval_coverage

# Relative slack for floating-point sums of budget shares (0.1 + 0.2 + 0.7 != 1.0).
_BUDGET_SLACK = 1e-9

# Set by the conformance kit: a list receiving (mechanism, epsilon, arguments) of every custom call.
_CUSTOM_CALLS: contextvars.ContextVar[list | None] = contextvars.ContextVar("dphist_custom_calls", default=None)


@contextmanager
def recording_custom_calls():
    """Collect the vetted mechanisms run inside the block (for the conformance kit's replay)."""
    calls: list = []
    token = _CUSTOM_CALLS.set(calls)
    try:
        yield calls
    finally:
        _CUSTOM_CALLS.reset(token)


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
        if np.abs(arr).max() >= 2.0 ** 62:
            raise InvalidHistogram("counts must be below 2**62")
    elif arr.dtype.kind not in "iu":
        raise InvalidHistogram(f"histogram counts must be integers, got dtype {arr.dtype}")
    if arr.min() < 0:
        i = int(np.argmin(arr))
        raise InvalidHistogram(f"count at bin {i} is {arr[i]}; counts must be non-negative")
    if arr.dtype == np.uint64 and arr.max() >= 2 ** 62:
        raise InvalidHistogram("counts must be below 2**62")
    return arr.astype(np.int64, copy=False)


def positive_number(value, what: str) -> float:
    """``value`` as a positive finite float, or :class:`InvalidParameter` naming ``what``."""
    if isinstance(value, bool):
        raise InvalidParameter(f"{what} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidParameter(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise InvalidParameter(f"{what} must be positive and finite, got {value!r}")
    return number


def validate_epsilon(epsilon, what: str = "epsilon") -> float:
    return positive_number(epsilon, what)


def _declared_at_least(declared, computed: float, primitive: str) -> float:
    """The sensitivity to use: the kernel's, or a larger one the caller declares; never a smaller one."""
    if declared is None:
        return computed
    value = positive_number(declared, f"declared sensitivity for {primitive}")
    if value < computed * (1 - 1e-12):
        raise InvalidParameter(f"{primitive}: declared sensitivity {value:g} is below the {computed:g} the "
                               "kernel computes for these queries")
    return value


def checked_partition(partition, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Private copies of a partition's ``order`` and ``bounds``, validated by the kernel itself.

    The caller's object is only read once: a partition built with
    ``validate=False``, or whose arrays were reassigned, is checked here, and
    later changes to it cannot change what is measured.
    """
    if not isinstance(partition, Partition):
        raise InvalidParameter(f"expected a Partition, got {type(partition).__name__}")
    try:
        order = np.array(partition.order, dtype=np.int64, copy=True)
        bounds = np.array(partition.bounds, dtype=np.int64, copy=True)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter("partition order and bounds must be integer arrays") from None
    if order.shape != (n,):
        raise InvalidParameter(f"partition covers {order.size} bins, the domain has {n}")
    if not is_permutation(order, n):
        raise InvalidParameter("partition order is not a permutation: some bin is missing or repeated")
    if not are_strict_bounds(bounds, n):
        raise InvalidParameter(f"partition bounds must increase strictly from 0 to {n}")
    return order, bounds


class PrivateKernel:
    """Holds the true histogram (a private copy), the noise source and the ledger of one run.

    The kernel, not the handles, keeps the accounting: a handle's ``budget``
    and ``spent`` are read-only views of the kernel's books.
    """

    def __init__(self, counts, noise: NoiseSource, ledger: Ledger | None = None, contributions: int = 1):
        counts = np.array(validate_counts(counts), dtype=np.int64, copy=True)  # never the caller's array
        counts.setflags(write=False)
        self.__counts = counts
        self.__n = int(counts.size)
        self.__budgets: list[float] = []
        self.__spent: list[float] = []
        self.__gate = 0
        self.violations: list[str] = []
        # person-level privacy (kernel/persons.py): k records per person scale every sensitivity, here only
        self.contributions = check_contributions(contributions)
        self.noise = noise if self.contributions == 1 else PersonLevelNoise(noise, self.contributions)
        self.ledger = ledger if ledger is not None else Ledger()
        self.ledger.mode = getattr(noise, "mode", "unknown")
        self.ledger.contributions = self.contributions

    @property
    def n(self) -> int:
        """Domain size (public)."""
        return self.__n

    def handle(self, component: str, stage: str, budget: float) -> "DataHandle":
        """A metered view of the data for one component with ``budget`` epsilon."""
        budget = float(budget)
        if not math.isfinite(budget) or budget < 0:
            raise InvalidParameter(f"a budget must be a non-negative number, got {budget}")
        self.__budgets.append(budget)
        self.__spent.append(0.0)
        return DataHandle(self, len(self.__budgets) - 1, component, stage)

    # ----------------------------------------------------------- books
    def _budget(self, account: int) -> float:
        return self.__budgets[account]

    def _spent(self, account: int) -> float:
        return self.__spent[account]

    def _charge(self, account: int, entry: LedgerEntry) -> None:
        budget, spent = self.__budgets[account], self.__spent[account]
        if spent + entry.epsilon > budget * (1 + _BUDGET_SLACK) + 1e-15:
            raise BudgetExceeded(
                f"{entry.component} ({entry.stage}) asked for epsilon={entry.epsilon:.6g} via {entry.primitive} "
                f"but only {max(budget - spent, 0.0):.6g} of its share {budget:.6g} is left")
        self.__spent[account] = spent + entry.epsilon
        if self.contributions != 1:  # the noise source scales the draws; the books say so
            k = self.contributions
            entry = replace(entry, sensitivity=entry.sensitivity * k,
                            note="; ".join(filter(None, (unit_text(k), entry.note))))
        self.ledger.record(entry)

    # ------------------------------------------------------------ gate
    @contextmanager
    def _measuring(self):
        """Open the gate to the counts for the duration of one primitive."""
        self.__gate += 1
        try:
            yield
        finally:
            self.__gate -= 1

    def _true_counts(self) -> np.ndarray:
        if self.__gate <= 0:
            self.violations.append("the true counts were read outside a kernel primitive")
            raise PrivacyViolation("the true counts can only be read by a kernel primitive; "
                                   "measure them through ctx.data")
        return self.__counts


def _user_code(call: Callable) -> tuple[bool, object]:
    """Run code the kernel does not own on the data: ``(True, result)`` or ``(False, error name)``.

    The exception object is dropped here, so its traceback, which holds the
    frames that saw the counts, is gone before the caller raises.
    """
    try:
        return True, call()
    except Exception as exc:  # noqa: BLE001 - any failure must be hidden
        name = type(exc).__name__
        del exc
        return False, name


def _score_vector(score: Callable, counts: np.ndarray) -> np.ndarray:
    return np.array(score(counts), dtype=float).reshape(-1)


def _withheld(what: str, name: object) -> PrivacyViolation:
    return PrivacyViolation(f"{what} raised {name} while reading the data; the exception is withheld "
                            "because it may depend on the data")


class DataHandle:
    """A component's only access to the data: metered measurement primitives.

    ``n``, ``budget``, ``spent`` and ``remaining`` are read-only.  Every
    primitive takes ``epsilon``, checks its arguments, charges, then answers.
    """

    __slots__ = ("_kernel", "_account", "component", "stage")

    def __init__(self, kernel: PrivateKernel, account: int, component: str, stage: str):
        object.__setattr__(self, "_kernel", kernel)
        object.__setattr__(self, "_account", account)
        object.__setattr__(self, "component", component)
        object.__setattr__(self, "stage", stage)

    def __setattr__(self, name, value):
        raise AttributeError(f"DataHandle.{name} is read-only")

    @property
    def n(self) -> int:
        return self._kernel.n

    @property
    def budget(self) -> float:
        return self._kernel._budget(self._account)

    @property
    def spent(self) -> float:
        return self._kernel._spent(self._account)

    @property
    def remaining(self) -> float:
        return max(self.budget - self.spent, 0.0)

    @property
    def mode(self) -> str:
        """``"research"`` or ``"release"``: the run's noise source decides."""
        return self._kernel.noise.mode

    # -------------------------------------------------------------- metering
    def _charge(self, primitive: str, eps: float, sensitivity: float, answers: int, note: str = "") -> None:
        self._kernel._charge(self._account, LedgerEntry(self.component, self.stage, primitive, eps,
                                                        float(sensitivity), int(answers), note))

    def _noisy(self, values: np.ndarray, sensitivity: float, eps: float, *, integral: bool,
               support: int | None = None) -> np.ndarray:
        return self._kernel.noise.laplace_mechanism(values, sensitivity, eps, integral=integral, support=support)

    # ------------------------------------------------------------ primitives
    def laplace_identity(self, epsilon) -> np.ndarray:
        """Every bin's count plus Laplace(1/epsilon) noise (sensitivity 1)."""
        eps = validate_epsilon(epsilon, "epsilon for laplace.identity")
        self._charge("laplace.identity", eps, 1.0, self.n)
        with self._kernel._measuring():
            return self._noisy(self._kernel._true_counts(), 1.0, eps, integral=True, support=1)

    def laplace_partition(self, partition, epsilon) -> np.ndarray:
        """Each group's sum plus Laplace(1/epsilon): the groups are disjoint, so sensitivity 1.

        The partition is re-validated by the kernel (every bin exactly once).
        """
        eps = validate_epsilon(epsilon, "epsilon for laplace.partition")
        order, bounds = checked_partition(partition, self.n)
        self._charge("laplace.partition", eps, 1.0, bounds.size - 1)
        with self._kernel._measuring():
            sums = np.add.reduceat(self._kernel._true_counts()[order], bounds[:-1])
            return self._noisy(sums, 1.0, eps, integral=True, support=1)

    def laplace_intervals(self, starts, ends, epsilon, order=None, sensitivity=None) -> np.ndarray:
        """Sums over position intervals ``[start, end)`` of the bins arranged in ``order``.

        One level of a tree over (possibly sorted) bins is a set of disjoint
        intervals, so its sensitivity is 1; several levels at once, or any
        overlapping set, get the kernel-computed maximum coverage of a bin.
        Empty intervals (padding nodes) are allowed and answered with noise.
        A ``sensitivity`` the caller declares may exceed the computed one
        (more noise); below it, the call is refused.
        """
        eps = validate_epsilon(epsilon, "epsilon for laplace.intervals")
        order = check_order(self.n, order)
        starts, ends = check_intervals(self.n, starts, ends)
        coverage = max_interval_coverage(self.n, starts, ends)
        sens = _declared_at_least(sensitivity, float(max(coverage, 1)), "laplace.intervals")
        self._charge("laplace.intervals", eps, sens, starts.size)
        with self._kernel._measuring():
            x = self._kernel._true_counts()
            if order is not None:
                x = x[order]
            prefix = np.concatenate(([0], np.cumsum(x)))
            return self._noisy(prefix[ends] - prefix[starts], sens, eps, integral=True, support=max(coverage, 1))

    def laplace_linear(self, queries, epsilon, sensitivity=None) -> np.ndarray:
        """Answers of a query description plus Laplace noise; the kernel computes the sensitivity.

        ``queries``: a dense array, a ``scipy.sparse`` matrix,
        :class:`~dphist.kernel.queries.IntervalQueries`, or an implicit object
        with ``shape`` and ``matvec`` (probed column by column on small domains).
        A declared ``sensitivity`` below the computed one is refused.
        """
        eps = validate_epsilon(epsilon, "epsilon for laplace.linear")
        checked = check_queries(queries, self.n)
        if checked.sensitivity <= 0:
            raise InvalidParameter("the query matrix is all zeros; nothing to measure")
        sens = _declared_at_least(sensitivity, checked.sensitivity, "laplace.linear")
        self._charge("laplace.linear", eps, sens, checked.rows)
        with self._kernel._measuring():
            x = self._kernel._true_counts()
            values = checked.answer(x.astype(float))
            if checked.integral:
                values = np.rint(values).astype(np.int64)
            return self._noisy(values, sens, eps, integral=checked.integral and sens == round(sens),
                               support=checked.support)

    def sorted_counts(self, epsilon) -> np.ndarray:
        """The counts sorted ascending plus Laplace(1/epsilon) noise.

        Hay et al. 2010, Section 3: adding or removing a record changes one
        entry of the sorted vector by one, so the sensitivity is 1.  The answer
        is *unattributed*: it says nothing about which bin holds which count.
        """
        eps = validate_epsilon(epsilon, "epsilon for laplace.sorted-counts")
        self._charge("laplace.sorted-counts", eps, 1.0, self.n)
        with self._kernel._measuring():
            return self._noisy(np.sort(self._kernel._true_counts()), 1.0, eps, integral=True, support=1)

    def exponential(self, score: Callable[[np.ndarray], np.ndarray], n_candidates: int,
                    score_sensitivity: float, epsilon, *, monotonic: bool = False) -> int:
        """Exponential mechanism (McSherry & Talwar 2007): index of the chosen candidate.

        ``score(counts)`` returns one utility per candidate (higher is better);
        its sensitivity ``score_sensitivity`` is declared by the caller (the
        kernel cannot compute it for arbitrary code).  Candidate ``i`` is drawn
        with probability proportional to ``exp(epsilon * score_i / (2 * sensitivity))``
        (``/ sensitivity`` when the score is monotonic in the data).

        Data-dependent failures are not observable: a non-finite score is
        mapped (NaN and -inf to the lowest finite score, +inf to the highest;
        all zero when none is finite), and a score function that raises or
        returns the wrong number of values ends the run with a
        :class:`PrivacyViolation` carrying no data.
        """
        eps = validate_epsilon(epsilon, "epsilon for exponential")
        sens = positive_number(score_sensitivity, "score sensitivity")
        if isinstance(n_candidates, bool) or not isinstance(n_candidates, (int, np.integer)) or n_candidates < 1:
            raise InvalidParameter(f"n_candidates must be a positive integer, got {n_candidates!r}")
        if not callable(score):
            raise InvalidParameter("score must be a callable counts -> one utility per candidate")
        m = int(n_candidates)
        self._charge("exponential", eps, sens, 1)
        with self._kernel._measuring():
            x = self._kernel._true_counts()
            ok, scores = _user_code(partial(_score_vector, score, x))
            del x  # no frame of a raised error may hold the counts
        if not ok:
            raise _withheld("the score function", scores)
        if scores.shape != (m,):
            raise PrivacyViolation(f"the score function must return {m} values; the run is stopped")
        scores = _finite_scores(scores)
        return int(self._kernel.noise.exponential_mechanism(scores, sens, eps, monotonic=bool(monotonic)))

    def custom(self, mechanism: "VettedMechanism", epsilon, **arguments):
        """Run a vetted custom mechanism (its privacy proof lives with its plugin).

        Its arguments are checked by :meth:`VettedMechanism.check` before the
        charge; a failure inside :meth:`VettedMechanism.run` becomes a
        :class:`PrivacyViolation` without data.
        """
        if not isinstance(mechanism, VettedMechanism):
            raise InvalidParameter(f"{type(mechanism).__name__} is not a VettedMechanism")
        if not mechanism.proof:
            raise InvalidParameter(f"vetted mechanism {mechanism.name} states no privacy proof")
        eps = validate_epsilon(epsilon, f"epsilon for custom:{mechanism.name}")
        sens = positive_number(mechanism.sensitivity, f"{mechanism.name}'s sensitivity")
        arguments = mechanism.check(self.n, **arguments)
        if not isinstance(arguments, dict):
            raise InvalidParameter(f"{mechanism.name}.check must return the arguments as a dict")
        answers = mechanism.answers(self.n, **arguments)
        self._charge(f"custom:{mechanism.name}", eps, sens, answers, note=mechanism.proof)
        recorder = _CUSTOM_CALLS.get()
        if recorder is not None:
            recorder.append((mechanism, eps, dict(arguments)))
        with self._kernel._measuring():
            x = self._kernel._true_counts()
            noise = self._kernel.noise
            ok, out = _user_code(partial(mechanism.run, x, eps, noise, **arguments))
            del x  # no frame of a raised error may hold the counts
        if not ok:
            raise _withheld(f"mechanism {mechanism.name}", out)
        return out


def _finite_scores(scores: np.ndarray) -> np.ndarray:
    finite = np.isfinite(scores)
    if finite.all():
        return scores
    if not finite.any():
        return np.zeros_like(scores)
    low, high = scores[finite].min(), scores[finite].max()
    out = scores.copy()
    out[np.isnan(out) | (out == -np.inf)] = low
    out[out == np.inf] = high
    return out


class VettedMechanism:
    """Base class of a custom epsilon-DP mechanism whose proof ships with its plugin.

    Subclasses set ``name``, ``proof`` (the theorem and where it is proved) and
    ``sensitivity`` (for the ledger), override :meth:`check` to validate their
    arguments (called before any budget is charged), and implement :meth:`run`,
    which must draw every random value from the ``noise`` source it is given
    (``noise.laplace_mechanism`` / ``noise.exponential_mechanism``, so that
    release mode's exact samplers apply).
    """

    name: str = ""
    proof: str = ""
    sensitivity: float = 1.0

    def check(self, n: int, **arguments) -> dict:
        """Validate (and copy) the arguments; raise InvalidParameter on a bad one."""
        return arguments

    def answers(self, n: int, **arguments) -> int:
        """How many noisy values the mechanism releases (for the ledger)."""
        return n

    def run(self, counts: np.ndarray, epsilon: float, noise: NoiseSource, **arguments):
        raise NotImplementedError
