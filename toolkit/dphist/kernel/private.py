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

Failures that carry no information.  An abort *after* a charge would publish
one bit about the data (the run stopped, or it did not).  So every failure the
kernel can foresee happens before the charge, on public inputs only:

* arguments are validated (partitions, intervals, orders, query matrices,
  sensitivities, the opt-in of a vetted mechanism);
* user callables are run first on a public *probe* histogram (all zeros over
  the domain): an ``exponential`` score must return one finite number per
  candidate, a segmentation cost must build and give finite costs, a vetted
  mechanism must run and return a finite output; what the probe returns is
  thrown away, and a failure there is an :class:`InvalidParameter` that
  spends nothing (a vetted mechanism declared ``probe_once``, whose probe is
  fixed by the domain size, epsilon and the kind of noise source, is probed
  the first time per object and those, and the structure of its output kept);
* counts are clamped at :data:`COUNT_CAP` (2**40, lower on domains above
  2**22 bins so that no int64 sum can overflow): clamping is 1-Lipschitz, so
  one record still moves a clamped count by at most 1 and every sensitivity
  stands; a linear query whose answers could overflow a float on clamped
  counts is refused before the charge;
* release mode's exact samplers clamp out-of-range grid values instead of
  raising (:mod:`dphist.kernel.noise`), and a segmentation cost is clamped to
  ``+-2**40`` times its sensitivity (NaN to the top) before its noise.

What remains unprotected, exactly: user code that behaves differently on the
true counts than on the probe.  A score function or a segmentation cost that
raises, or returns the wrong number of values, only on some histograms; a
vetted mechanism that raises, or returns an output of another type, rank or
(for real-valued outputs) shape, or a non-finite value, only on some
histograms (or, declared ``probe_once`` falsely, on a later probe than its
first).  Each of these stops the run with a :class:`PrivacyViolation`
*after* the charge, and whether it stops depends on the data: that is one bit
the kernel cannot withhold.  Non-finite scores of the exponential mechanism
are mapped to finite ones instead (see :meth:`DataHandle.exponential`); time
is not metered (a run's duration depends on the data; release-mode exports
carry no timings, but a caller holding a stopwatch sees it).

Vetted mechanisms (:class:`VettedMechanism`) are an explicit opt-in, in the
spirit of OpenDP's ``enable_features("honest-but-curious")``: their privacy
rests on a proof the kernel cannot check.  :meth:`DataHandle.custom` runs one
only when the calling component declares the mechanism's name in its class
attribute ``vetted_mechanisms``, or when :func:`enable_vetted_mechanisms` was
called (for prototypes and notebooks).  The conformance kit reports every
declared use as a warning and fails a component that relies on the global
switch without declaring.  Private segmentation needs no vetted mechanism:
:meth:`DataHandle.noisy_min_segmentation` carries its proof here.

What this guarantees: an honest component cannot leak by mistake; every
epsilon it spends is in the ledger with the sensitivity the kernel computed.
What it cannot: Python cannot hide memory from code determined to cheat
(closures, ``gc``, ``ctypes``).  The conformance kit and the privacy auditor
check that components stay on the documented routes.
"""
from __future__ import annotations

import contextvars
import math
import re
import sys
import weakref
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache, partial
from typing import Callable

import numpy as np

from ..errors import BudgetExceeded, InvalidHistogram, InvalidParameter, PrivacyViolation
from ..partition import ORDER_BLOCK, Partition, PlainPartition, SingletonPartition, gather_run, order_blocks
from ..partition_blocks import BlockPartition, block_sums, checked_block_partition
from ..validation import (are_strict_bounds, frozen_int64, frozen_taken, identity_vectors, is_identity, is_permutation,
                          is_shared_identity, is_whole_bounds)
from .ledger import Ledger, LedgerEntry
from .noise import NoiseSource
from .persons import PersonLevelNoise, check_contributions, unit_text
from .queries import (IntervalQueries, KroneckerQueries, check_intervals, check_order, check_queries,
                      max_interval_coverage)

# Relative slack for floating-point sums of budget shares (0.1 + 0.2 + 0.7 != 1.0).
_BUDGET_SLACK = 1e-9

#: counts above this are measured as this (clamping keeps every sensitivity; module docstring)
COUNT_CAP = 1 << 40
#: a segmentation cost is clamped to +- this many times its declared sensitivity before its noise
COST_CAP = float(1 << 40)

# Set by the conformance kit: a list receiving (mechanism, epsilon, arguments) of every custom call.
_CUSTOM_CALLS: contextvars.ContextVar[list | None] = contextvars.ContextVar("dphist_custom_calls", default=None)
# Set by the conformance kit: a list receiving a KernelCall for every primitive that runs user code.
_KERNEL_CALLS: contextvars.ContextVar[list | None] = contextvars.ContextVar("dphist_kernel_calls", default=None)
_VETTED = {"enabled": False}


def enable_vetted_mechanisms(enabled: bool = True) -> None:
    """Let every component of this process run :class:`VettedMechanism` objects it did not declare.

    The opt-in switch for prototypes and notebooks (OpenDP's ``enable_features("honest-but-curious")``
    is the model): a vetted mechanism's privacy rests on its own proof, which the kernel cannot check.
    A component that ships declares the names instead (``vetted_mechanisms = ("my.mechanism",)``);
    the conformance kit fails one that relies on this switch.  ``enable_vetted_mechanisms(False)``
    turns it off again.
    """
    _VETTED["enabled"] = bool(enabled)


def vetted_mechanisms_enabled() -> bool:
    """Whether :func:`enable_vetted_mechanisms` is on."""
    return _VETTED["enabled"]


@contextmanager
def _recording(var: contextvars.ContextVar):
    calls: list = []
    token = var.set(calls)
    try:
        yield calls
    finally:
        var.reset(token)


def recording_custom_calls():
    """Collect the vetted mechanisms run inside the block (for the conformance kit's replay)."""
    return _recording(_CUSTOM_CALLS)


class KernelCall:
    """One call of a primitive that runs user code, as the conformance kit sees it: ``primitive``
    (``"exponential"``, ``"noisy-min"``, ``"custom"``), the calling ``component`` and its ``stage``,
    ``epsilon``, and ``details`` (the callable, the declared sensitivity, the public arguments)."""

    __slots__ = ("primitive", "component", "stage", "epsilon", "details")

    def __init__(self, primitive, component, stage, epsilon, details):
        self.primitive, self.component, self.stage = primitive, component, stage
        self.epsilon, self.details = epsilon, details

    def __repr__(self) -> str:
        return f"KernelCall({self.primitive!r}, {self.component!r}, epsilon={self.epsilon:g})"


def recording_kernel_calls():
    """Collect a :class:`KernelCall` for every ``exponential``, ``noisy_min_segmentation`` and
    ``custom`` call inside the block (the conformance kit's sensitivity checks and opt-in report)."""
    return _recording(_KERNEL_CALLS)


def _record(primitive: str, component: str, stage: str, epsilon: float, details) -> None:
    """A :class:`KernelCall` for the conformance kit, built only while it records (a run builds nothing;
    ``details``, a callable returning the dict, is called only then)."""
    recorder = _KERNEL_CALLS.get()
    if recorder is not None:
        recorder.append(KernelCall(primitive, component, stage, epsilon, details()))


def count_cap(n: int) -> int:
    """The clamp of the counts on a domain of ``n`` bins: 2**40, or less when ``n`` exceeds 2**22,
    so that the sum of all clamped counts stays below 2**62 (public: it depends on ``n`` only)."""
    return int(min(COUNT_CAP, (1 << 62) // max(int(n), 1)))


def validate_counts(counts, *, sign: bool = True) -> np.ndarray:
    """Return ``counts`` as an int64 vector or raise :class:`InvalidHistogram` naming the fault.

    ``sign=False``: int64 counts are returned without their check for negative counts, which the caller
    makes itself (:class:`CheckedCounts`: fused with its copy, the same error)."""
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
    if (sign or arr.dtype != np.int64) and np.minimum.reduce(arr, axis=None) < 0:   # arr.min(), no wrapper
        raise _negative_count(arr)
    if arr.dtype == np.uint64 and np.maximum.reduce(arr, axis=None) >= 2 ** 62:
        raise InvalidHistogram("counts must be below 2**62")
    return arr.astype(np.int64, copy=False)


def _negative_count(arr: np.ndarray) -> InvalidHistogram:
    """The error of a histogram with a negative count (the first smallest one named)."""
    i = int(np.argmin(arr))
    return InvalidHistogram(f"count at bin {i} is {arr[i]}; counts must be non-negative")


def validate_grid(counts, *, sign: bool = True) -> tuple[np.ndarray, tuple[int, ...]]:
    """``(flat int64 counts, shape)`` of a histogram of any dimension, or :class:`InvalidHistogram`.

    A d-dimensional histogram (a grid of cells, d >= 1) is kept as its cells flattened in row-major
    (C) order plus its public ``shape``; the counts' checks are :func:`validate_counts`'s, on the
    flattened cells (a fault names the cell's grid index).  Ragged nested lists (rows of different
    lengths) and empty axes are refused by name.
    """
    if isinstance(counts, np.ndarray):
        arr = counts
    else:
        try:
            arr = np.asarray(counts)
        except ValueError as exc:   # numpy >= 1.24 refuses inhomogeneous nested sequences
            raise InvalidHistogram(f"the histogram is ragged (rows of different lengths): {exc}") from None
    if arr.dtype == object and arr.ndim >= 1 and arr.size and any(np.ndim(v) for v in arr.ravel()[:64]):
        raise InvalidHistogram("the histogram is ragged (rows of different lengths); a d-dimensional "
                               "histogram is a rectangular grid of counts")
    if arr.ndim == 0:
        raise InvalidHistogram("a histogram is an array of counts with at least one dimension; got a scalar")
    shape = arr.shape      # a tuple of Python ints
    if 0 in shape:
        raise InvalidHistogram(f"the histogram is empty (shape {shape}: an axis of length 0)")
    if arr.ndim == 1:
        return validate_counts(arr, sign=sign), shape
    try:
        flat = validate_counts(arr.reshape(-1), sign=sign)
    except InvalidHistogram as exc:
        raise InvalidHistogram(_grid_message(str(exc), shape)) from None
    return flat, shape


#: counts per block of the blocked copies' fused copy, clamp and sign check (256 KiB: in cache)
_SIGN_BLOCK = 1 << 15
#: counts copied whole by :class:`CheckedCounts` (at most 32 MiB: the copy and its reduction stay in cache);
#: larger ones are copied in blocks (:func:`_checked_copy` says why)
_WHOLE_COPY_CELLS = 1 << 22
#: numpy's native int64 dtype: an int64 array's ``dtype`` is this very object (CheckedCounts' common case)
_INT64 = np.dtype(np.int64)
#: the unsigned view's dtype (an instance: ``view`` takes it without converting a type)
_UINT64 = np.dtype(np.uint64)


class CheckedCounts:
    """A histogram checked and copied by the kernel, once: ``counts``, a private read-only int64 copy of
    its cells (flattened in row-major order) clamped at :func:`count_cap`, and its ``shape``.

    Made only by its constructor, which runs :func:`validate_grid` (its generic checks skipped for a native
    int64 ndarray), copies the counts and checks the copy in one reduction (:func:`_checked_copy`);
    :class:`PrivateKernel` takes one as it is (no second check, no second copy).  The pipeline checks
    its input this way before it chooses the mode and the noise, then hands it to the kernel.
    """

    __slots__ = ("counts", "shape")

    def __init__(self, counts):
        if type(counts) is np.ndarray and counts.dtype is _INT64 and counts.size > 0 and counts.shape:
            # the common input (a non-empty native int64 ndarray with at least one axis, so none of length 0):
            # what validate_grid would do for it, without its generic checks; any other input takes
            # validate_grid (tests/test_pipeline_fixed_cost.py)
            object.__setattr__(self, "counts", _checked_copy(counts, counts.shape))
            object.__setattr__(self, "shape", counts.shape)
            return
        flat, shape = validate_grid(counts, sign=False)
        # a new array (never the caller's), clamped at the cap (1-Lipschitz)
        if flat.dtype == np.int64:
            private = _checked_copy(flat, shape)
        else:
            private = np.minimum(flat, count_cap(flat.size))
            private.setflags(write=False)
        object.__setattr__(self, "counts", private)
        object.__setattr__(self, "shape", shape)

    def __setattr__(self, name, value):
        raise AttributeError("CheckedCounts is read-only")


def _checked_copy(counts: np.ndarray, shape) -> np.ndarray:
    """A new read-only int64 vector of the int64 ``counts`` (any rank, flattened in row-major order) when every
    count is in ``[0, cap)``; else the fused clamp and sign check (:func:`_clamped_int64`: the same copy, the
    same errors).  The copy's bits are reduced as unsigned (a negative count reads 2**63 or more), so the
    largest is below the cap only if every count is in range, and then the clamp changes nothing.

    Up to :data:`_WHOLE_COPY_CELLS` counts the copy is made whole, by one call, then reduced: copying in blocks
    that stay in cache for the reduction was up to 7x slower on this machine at 2^16-2^20 bins (each 256 KiB
    block copied by ``memcpy``'s ``rep movsb``, whose speed depends on where the two blocks lie).  Above it the
    copy streams from memory, and contiguous counts are copied 256 KiB at a time, each block reduced while in
    cache, which saves the reduction's second read (``BENCHMARKS.md``, order)."""
    cap = count_cap(counts.size)
    if counts.size > _WHOLE_COPY_CELLS and counts.flags.c_contiguous:
        flat = counts.reshape(-1)
        private = np.empty(flat.size, dtype=np.int64)
        bits = private.view(_UINT64)
        largest = 0
        for a in range(0, flat.size, _SIGN_BLOCK):
            np.copyto(private[a:a + _SIGN_BLOCK], flat[a:a + _SIGN_BLOCK])
            largest = max(largest, int(np.maximum.reduce(bits[a:a + _SIGN_BLOCK])))
    else:
        private = counts.flatten()
        bits = private.view(_UINT64)
        largest = int(bits[bits.argmax()])   # argmax: numpy's shorter route for small arrays
    if largest >= cap:
        private = _clamped_int64(counts.reshape(-1), cap, shape)
    private.setflags(write=False)
    return private


def _clamped_int64(flat: np.ndarray, cap: int, shape) -> np.ndarray:
    """A new array of the int64 ``flat`` clamped at ``cap``, refused by name if a count is negative: the copy
    and the clamp in one pass, checked for negative counts block by block while the block is in cache (the
    clamp keeps every negative count: the copy's minimum is the counts' when it is negative)."""
    private = np.empty(flat.size, dtype=np.int64)
    smallest = 0
    for a in range(0, flat.size, _SIGN_BLOCK):
        block = private[a:a + _SIGN_BLOCK]
        np.minimum(flat[a:a + _SIGN_BLOCK], cap, out=block)
        smallest = min(smallest, np.minimum.reduce(block))
    if smallest < 0:
        exc = _negative_count(flat)
        raise (InvalidHistogram(_grid_message(str(exc), shape)) if len(shape) > 1 else exc) from None
    return private


def _grid_message(message: str, shape: tuple[int, ...]) -> str:
    """A flattened-cell error message with the cell's grid index (``bin 7`` -> ``cell (1, 3)``)."""
    m = re.search(r"bin (\d+)", message)
    if not m:
        return message
    cell = tuple(int(i) for i in np.unravel_index(int(m.group(1)), shape))
    return message.replace(m.group(0), f"cell {cell}")


def check_shape(shape, n: int) -> tuple[int, ...]:
    """A public grid shape for ``n`` flattened cells: positive integers whose product is ``n``."""
    if shape is None:
        return (int(n),)
    try:
        out = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise InvalidParameter(f"a shape is a tuple of positive integers, got {shape!r}") from None
    if not out or any(s < 1 for s in out) or math.prod(out) != n:
        raise InvalidParameter(f"shape {shape!r} does not describe {n} cells (a tuple of positive integers "
                               f"whose product is {n})")
    return out


def positive_number(value, what: str) -> float:
    """``value`` as a positive finite float, or :class:`InvalidParameter` naming ``what``."""
    if type(value) is float and 0.0 < value < math.inf:   # a positive finite float (NaN fails both tests)
        return value
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


def is_plain_partition(partition, n: int) -> bool:
    """Whether ``partition`` is the singleton partition of ``n`` bins in domain order: integer arrays
    equal to ``0..n-1`` and ``0..n`` (the kernel's own check, one comparison pass each; valid by
    itself, so :func:`checked_partition`'s counting is not needed).  Reads the arrays once and keeps
    nothing of them: what is measured after a True cannot depend on later changes to the object.  A
    :class:`~dphist.partition.PlainPartition` (immutable, exactly that class) is recognised by its size,
    in O(1), without building its arrays."""
    if type(partition) is PlainPartition:
        return partition.n_bins == n
    if type(partition) is SingletonPartition:   # singletons whatever the order: only the order is read
        order = partition.order
        return isinstance(order, np.ndarray) and order.dtype.kind in "iu" and is_identity(order, n)
    if not isinstance(partition, Partition):
        return False
    order, bounds = partition.order, partition.bounds
    if is_shared_identity(order, n) and is_shared_identity(bounds, n + 1):   # the shared vectors: O(1)
        return True
    return (isinstance(order, np.ndarray) and isinstance(bounds, np.ndarray)
            and order.dtype.kind in "iu" and bounds.dtype.kind in "iu"
            and bounds.shape == (n + 1,) and is_identity(order, n)
            and is_identity(bounds, n + 1))


def is_whole_partition(partition, n: int) -> bool:
    """Whether ``partition`` is one group of all ``n`` bins in domain order (``Partition.whole(n)``):
    bounds ``[0, n]`` and the order ``0..n-1`` (recognised in O(1) when both are the shared immutable
    vectors of ``Partition.whole(n)``, :func:`dphist.validation.whole_bounds` and ``identity_vector``; else
    one comparison pass of the order).  Valid by itself; its one sum is the total of the counts, whatever the order
    of a permutation, so nothing of the arrays is kept or read again.  A :class:`~dphist.partition.
    PlainPartition` is one group only for one bin (O(1), its arrays not built)."""
    if type(partition) is PlainPartition:
        return n == 1 and partition.n_bins == 1
    if type(partition) is SingletonPartition:   # one group only for one bin: the order is [0]
        return n == 1 and is_plain_partition(partition, 1)
    if not isinstance(partition, Partition):
        return False
    order, bounds = partition.order, partition.bounds
    if is_whole_bounds(bounds, n) and is_shared_identity(order, n):   # Partition.whole(n)'s shared vectors: O(1)
        return True
    return (isinstance(order, np.ndarray) and isinstance(bounds, np.ndarray)
            and order.dtype.kind in "iu" and bounds.dtype.kind in "iu" and bounds.shape == (2,)
            and int(bounds[0]) == 0 and int(bounds[1]) == n and is_identity(order, n))


def checked_partition(partition, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's own copies of a partition's ``order`` and ``bounds``, validated by the kernel itself.

    The caller's object is only read once: a partition built with ``validate=False``, or whose arrays
    were reassigned, is checked here, and later changes to it cannot change what is measured.  The
    copies are immutable (:func:`dphist.validation.frozen_int64`: bytes that no view can make
    writable), so they may be handed on and recognised later by identity; the one array not copied is
    the shared domain order (:func:`dphist.validation.is_shared_identity`), immutable as well.
    """
    return checked_partition_in_order(partition, n)[:2]


def checked_partition_in_order(partition, n: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """:func:`checked_partition` and whether the checked order is the domain order (found by the check
    itself: no second pass)."""
    order, bounds, in_order = _checked_against(partition, n, None)[:3]
    return order, (identity_vectors(n)[1] if bounds is None else bounds), in_order


#: from this many bins the kernel's check takes a partition's fresh order (:func:`taken_order`) instead of
#: copying it
TAKE_MIN_BINS = 1 << 16


def taken_order(partition, n: int) -> np.ndarray | None:
    """The kernel's immutable checked order made of ``partition``'s own order array, without a copy, when
    nothing else can reach that array's memory; else None (the caller copies it, :func:`_frozen_copy`).

    Taken: a C-contiguous int64 vector of ``n`` bins (``n`` at least :data:`TAKE_MIN_BINS`), writeable, held
    by the slot of a :class:`~dphist.partition.Partition` or :class:`~dphist.partition.SingletonPartition`
    (exactly these classes: no property can hand out another array) and by nothing else: it owns its memory
    and its only references are that slot and this function's (``sys.getrefcount``), or it is the one view
    of the whole memory of an array that owns it and is referenced by that view alone (a sorter's order read
    out in place of its sort's words, :func:`dphist.partition.packed_stable_argsort`).  Every other holder
    of the memory (a variable, a view, a buffer export, another slot) holds a reference, so the counts prove
    that no component can write the order after its check.  The memory is then made immutable in place
    (:func:`dphist.validation.frozen_taken`) and the partition's slot set to the immutable vector: the caller
    sees the same values, read-only.  (Python 3.11's reference counts; an interpreter that counts fewer
    references gets the copy.)"""
    if n < TAKE_MIN_BINS or type(partition) not in (Partition, SingletonPartition):
        return None
    arr = partition.order
    if not (type(arr) is np.ndarray and arr.dtype == np.int64 and arr.shape == (n,)
            and arr.flags.c_contiguous and arr.flags.writeable) or sys.getrefcount(arr) != _ORDER_REFS:
        return None
    owner = arr.base
    if owner is None:
        if not arr.flags.owndata:
            return None
        owner = arr
    elif not (type(owner) is np.ndarray and owner.base is None and owner.flags.owndata
              and owner.flags.writeable and owner.flags.c_contiguous and owner.nbytes == arr.nbytes
              and owner.__array_interface__["data"][0] == arr.__array_interface__["data"][0]
              and sys.getrefcount(owner) == _OWNER_REFS):
        return None
    frozen = frozen_taken(owner)
    del owner, arr
    partition.order = frozen
    return frozen


#: the references of a taken order inside :func:`taken_order`: the partition's slot, ``arr`` and
#: ``sys.getrefcount``'s argument; of the array owning a view's memory: the view's base, ``owner``, the argument
_ORDER_REFS = 3
_OWNER_REFS = 3


def _bounds_of(partition):
    """``partition.bounds``, or None for a :class:`~dphist.partition.SingletonPartition` (singleton bounds
    ``0..n``, not built)."""
    return None if type(partition) is SingletonPartition else partition.bounds


def _is_known(partition, known, n: int) -> bool:
    """Whether ``partition`` holds the very arrays of the remembered ``(order, bounds, in_order)`` (O(1)):
    the kernel's immutable copies (:func:`dphist.validation.frozen_int64`, :func:`dphist.validation.
    frozen_taken`) or the shared domain order, which cannot have changed since they were checked; remembered
    bounds None (singletons) are those of a :class:`~dphist.partition.SingletonPartition`."""
    return (known is not None and isinstance(partition, Partition) and _bounds_of(partition) is known[1]
            and (partition.order is known[0] if known[0] is not None else is_shared_identity(partition.order, n)))


def _bounds_equal(bounds, known_bounds, n: int) -> bool:
    """Whether integer ``bounds`` (None: singletons) equal the remembered ones (None: singletons, ``0..n``)."""
    if known_bounds is None:
        return bounds is None or (bounds.shape == (n + 1,) and is_identity(bounds, n + 1))
    if bounds is None:
        return known_bounds.shape == (n + 1,) and is_identity(known_bounds, n + 1)
    return bounds.shape == known_bounds.shape and bool((bounds == known_bounds).all())


def _equals_known(partition, known, n: int) -> bool:
    """Whether ``partition``'s integer arrays equal the remembered ``(order, bounds, in_order)`` element by
    element (read in place, nothing copied; the remembered arrays are immutable)."""
    if not isinstance(partition, Partition):
        return False
    order, bounds = partition.order, _bounds_of(partition)
    return (isinstance(order, np.ndarray) and (bounds is None or isinstance(bounds, np.ndarray))
            and order.dtype.kind in "iu" and (bounds is None or bounds.dtype.kind in "iu")
            and order.shape == (n,) and _bounds_equal(bounds, known[1], n)
            and (is_identity(order, n) if known[0] is None else bool((order == known[0]).all())))


def _frozen_copy(values) -> np.ndarray:
    """An immutable int64 copy of a vector (:func:`dphist.validation.frozen_int64`, one copy); an array of
    another rank is copied as it is, so that the shape checks that follow refuse it by name."""
    arr = np.asarray(values)
    return frozen_int64(arr) if arr.ndim == 1 else np.array(arr, dtype=np.int64, copy=True)


def _checked_against(partition, n: int, known) -> tuple[np.ndarray, np.ndarray, bool, bool]:
    """:func:`checked_partition_in_order` and whether the partition is ``known``: ``(order, bounds,
    in_order)`` of a partition this check passed before, held by the caller (:meth:`PrivateKernel.
    _checked_partition`).  A partition holding those very arrays (immutable) is that partition (O(1)); one
    whose arrays equal them element by element (one comparison pass) is too: then the permutation's
    counting pass is skipped."""
    if not isinstance(partition, Partition):
        raise InvalidParameter(f"expected a Partition, got {type(partition).__name__}")
    if _is_known(partition, known, n):
        return partition.order, known[1], known[2], True
    # the remembered order itself (the kernel's immutable checked copy) with other bounds: a partitioner
    # that merged the checked partition's groups (``Partition.merge`` keeps the order).  That order is a
    # permutation and cannot have changed: neither copied nor counted again, only the bounds are checked
    same_order = known is not None and known[0] is not None and partition.order is known[0]
    try:
        # a fresh order nothing else reaches is made immutable where it is (no copy: taken_order)
        order = None if same_order or is_shared_identity(partition.order, n) else taken_order(partition, n)
        if order is None:
            order = partition.order
            if not same_order and not is_shared_identity(order, n):
                order = _frozen_copy(order)
        bounds = _bounds_of(partition)      # None: a SingletonPartition's 0..n, not built
        if bounds is not None and not is_shared_identity(bounds, n + 1):
            bounds = _frozen_copy(bounds)
    except (TypeError, ValueError, OverflowError):
        raise InvalidParameter("partition order and bounds must be integer arrays") from None
    if order.shape != (n,):
        raise InvalidParameter(f"partition covers {order.size} bins, the domain has {n}")
    # element by element against the remembered arrays (both orders have shape (n,): no array_equal
    # checks); a remembered domain order (None) is checked as one
    if (known is not None and _bounds_equal(bounds, known[1], n)
            and (is_identity(order, n) if known[0] is None else bool((order == known[0]).all()))):
        return (order if known[0] is None else known[0]), known[1], known[2], True
    in_order = known[2] if same_order else is_identity(order, n)
    if not in_order and not same_order and not is_permutation(order, n):
        inside = order[(order >= 0) & (order < n)]
        seen = np.bincount(inside, minlength=n) if n else np.zeros(0, dtype=np.int64)
        what = (f"bin {int(np.flatnonzero(seen > 1)[0])} appears twice" if (seen > 1).any() else
                "a bin outside the domain" if inside.size < order.size else "some bin is missing")
        raise InvalidParameter(f"partition order is not a permutation: {what}")
    if bounds is not None and not are_strict_bounds(bounds, n):
        raise InvalidParameter(f"partition bounds must increase strictly from 0 to {n}")
    if bounds is not None and bounds.size == n + 1:     # valid singleton bounds are 0..n: None, not a copy
        bounds = None
    return order, bounds, in_order, False


class _Gate:
    """The kernel's gate as a context manager: open (``__enter__``) while one primitive runs, closed on
    its way out, by an exception too (the counts are readable only inside; :meth:`PrivateKernel.
    _true_counts`).  Re-entrant: it counts.  It holds no reference to its kernel (no cycle: a finished
    run's kernel and its copy of the counts are freed at once, not by the cyclic collector).  The one
    exception: ``on_close``, set by :meth:`PrivateKernel._charge` once the run's last stage has spent its
    share (:meth:`PrivateKernel._frees_counts_after`), is called when the gate closes and then dropped."""

    __slots__ = ("depth", "on_close")

    def __init__(self):
        self.depth = 0
        self.on_close = None

    def __enter__(self):
        self.depth += 1

    def __exit__(self, *exc):
        self.depth -= 1
        if self.on_close is not None and self.depth <= 0:
            close, self.on_close = self.on_close, None
            close()
        return False


class PrivateKernel:
    """Holds the true histogram (a private copy), the noise source and the ledger of one run.

    The kernel, not the handles, keeps the accounting: a handle's ``budget``
    and ``spent`` are read-only views of the kernel's books.
    """

    def __init__(self, counts, noise: NoiseSource, ledger: Ledger | None = None, contributions: int = 1,
                 shape=None):
        checked = counts if type(counts) is CheckedCounts else CheckedCounts(counts)   # never the caller's array
        counts, grid_shape = checked.counts, checked.shape
        #: the histogram's public shape (d axes); the counts are kept flattened in row-major order
        self.shape = check_shape(shape, counts.size) if shape is not None else grid_shape
        if shape is not None and len(grid_shape) > 1 and tuple(grid_shape) != self.shape:
            raise InvalidParameter(f"shape {self.shape} given for a histogram of shape {grid_shape}")
        self.__counts = counts
        self.__n = int(counts.size)
        self.__budgets: list[float] = []
        self.__spent: list[float] = []
        self.violations: list[str] = []
        # person-level privacy (kernel/persons.py): k records per person scale every sensitivity, here only
        self.contributions = check_contributions(contributions)
        self.noise = noise if self.contributions == 1 else PersonLevelNoise(noise, self.contributions)
        self.ledger = ledger if ledger is not None else Ledger()
        self.ledger.mode = getattr(noise, "mode", "unknown")
        self.ledger.contributions = self.contributions
        self._gate = _Gate()                 # `with kernel._gate:` opens the counts to one primitive
        self.__prefix: tuple | None = None   # (order or None, prefix sums): see _prefix_sums
        self.__checked: tuple | None = None  # the last partition checked in full: see _checked_partition
        self.__blocks: BlockPartition | None = None   # the last block partition checked: see _checked_blocks
        self.__level_sums: tuple | None = None   # (bounds or None, width, sums): see _block_sums
        self.__last_account: int | None = None   # the run's last stage: see _frees_counts_after

    @property
    def n(self) -> int:
        """Domain size (public)."""
        return self.__n

    def reordered(self, order) -> "PrivateKernel":
        """A kernel over the cells listed in the public ``order`` (a permutation of ``0..n-1``), as a
        vector of ``n`` bins, sharing this kernel's noise source and ledger (every charge of either lands
        in the one ledger; the run's total is audited on it).  What a linearisation runs on when
        another part of the run already measured through this kernel (the ``auto`` preset on a grid:
        :meth:`dphist.linearise.Linearised.execute`).  The order is checked; nothing is spent."""
        order = np.asarray(order)
        if order.shape != (self.__n,) or order.dtype.kind not in "iu" or not is_permutation(order, self.__n):
            raise InvalidParameter(f"a kernel can be reordered only by a permutation of its {self.__n} bins")
        noise = self.noise.inner if isinstance(self.noise, PersonLevelNoise) else self.noise
        child = PrivateKernel(self.__counts[order], noise, ledger=self.ledger, contributions=self.contributions)
        child.violations = self.violations       # one list: a violation in either part fails the run
        return child

    def _checked_partition(self, partition, *, kernel_use: bool = False) -> tuple[np.ndarray, np.ndarray, bool]:
        """:func:`checked_partition_in_order` against this kernel's domain, remembering the last partition
        checked in full (its immutable checked arrays, :func:`dphist.validation.frozen_int64`): the
        pipeline checks each stage's partition and hands on a partition of exactly those arrays, and the
        finalizer's measurement of it is then recognised by their identity, in O(1) (validated once, not
        twice); a partition of other arrays equal to them by one comparison pass.

        The bounds are None for singleton groups (``0..n``, valid by themselves: not built or kept; a
        :class:`~dphist.partition.SingletonPartition` of the order hands them on).  ``kernel_use``: the
        arrays are read by a primitive and dropped, never handed to other code: a
        partition equal to the remembered one is then compared in place (the caller's integer arrays read
        once, no copies) and answered with the remembered arrays themselves (the order is None when it is
        the domain order, which such a caller does not read)."""
        known = self.__checked
        if kernel_use and known is not None and (_is_known(partition, known, self.__n)
                                                 or _equals_known(partition, known, self.__n)):
            return known
        order, bounds, in_order, known = _checked_against(partition, self.__n, known)
        if not known:
            # an order found to be the domain order is remembered as that fact (its next check is
            # is_identity's, O(1) for the shared vector), not as an n-element array
            self.__checked = (None if in_order else order, bounds, in_order)
        return order, bounds, in_order

    def _checked_blocks(self, partition) -> BlockPartition:
        """The kernel's own checked copy of a :class:`~dphist.partition_blocks.BlockPartition` over this
        kernel's grid (:func:`~dphist.partition_blocks.checked_block_partition`: its description read once,
        copied immutable, validated in O(blocks)); the last one is remembered, so the pipeline's check of a
        stage's partition and the next stage's measurement of that very object validate once."""
        if partition is self.__blocks:
            return partition
        checked = checked_block_partition(partition, self.shape)
        self.__blocks = checked
        return checked

    def handle(self, component: str, stage: str, budget: float, *, vetted=()) -> "DataHandle":
        """A metered view of the data for one component with ``budget`` epsilon.

        ``vetted``: the names of the :class:`VettedMechanism` objects the component declared
        (its ``vetted_mechanisms``); :meth:`DataHandle.custom` runs no other unless
        :func:`enable_vetted_mechanisms` is on.
        """
        budget = float(budget)
        if not math.isfinite(budget) or budget < 0:
            raise InvalidParameter(f"a budget must be a non-negative number, got {budget}")
        if type(vetted) is not tuple or vetted:   # () (most components): nothing to check or copy
            if isinstance(vetted, str) or (vetted and not all(isinstance(v, str) for v in vetted)):
                raise InvalidParameter(f"vetted must be a tuple of mechanism names, got {vetted!r}")
            vetted = tuple(vetted)
        self.__budgets.append(budget)
        self.__spent.append(0.0)
        return DataHandle(self, len(self.__budgets) - 1, component, stage, vetted)

    # ----------------------------------------------------------- books
    def _budget(self, account: int) -> float:
        return self.__budgets[account]

    def _spent(self, account: int) -> float:
        return self.__spent[account]

    def _frees_counts_after(self, handle: "DataHandle") -> None:
        """Free the kernel's copy of the counts (and the sums kept from it) once ``handle``, the run's last
        stage, has spent its share: the measurement that spends it returns first (the gate's close), and
        from then on no primitive of any handle can read the counts (each charge is refused before it is
        booked, :meth:`_charge`).  What the last stage computes after its measurements (H's inference,
        Privelet's inverse transform) then runs without an input's worth of private memory beside it.
        Called by :meth:`dphist.Pipeline.run` for its finalizer, whose run owns the kernel."""
        if handle._kernel is not self:
            raise InvalidParameter("a handle of another kernel")
        self.__last_account = handle._account

    def _counts_to_consume(self) -> tuple[np.ndarray, bool]:
        """The counts for a measurement that may write over them, and whether it may: the kernel's own copy
        itself (made writeable), dropped by the kernel, when this read is the run's last (the last share is
        charged: the gate frees the counts when it closes, and every later charge is refused) and nothing but
        the kernel references the copy (``sys.getrefcount``: the kernel's slot, the local and the argument);
        else the counts, not to be written.  Read through the gate like :meth:`_true_counts`."""
        counts = self._true_counts()
        if (self._gate.on_close is not None and type(counts) is np.ndarray and counts.base is None
                and counts.flags.owndata and sys.getrefcount(counts) == 3):
            self.__counts = None      # the run's last read: the copy is the caller's from here
            counts.setflags(write=True)      # the kernel's read-only copy: its own memory, no one else's
            self.__prefix = None
            self.__level_sums = None
            return counts, True
        return counts, False

    def _free_counts(self) -> None:
        self.__counts = None
        self.__prefix = None
        self.__level_sums = None

    def _charge(self, account: int, entry: LedgerEntry) -> None:
        if self.__counts is None:
            raise InvalidParameter(f"{entry.component} ({entry.stage}) asked for {entry.primitive} after the run's "
                                   "last stage spent its share: the kernel has freed the counts; nothing was "
                                   "charged")
        budget, spent = self.__budgets[account], self.__spent[account]
        if spent + entry.epsilon > budget * (1 + _BUDGET_SLACK) + 1e-15:
            raise BudgetExceeded(
                f"{entry.component} ({entry.stage}) asked for epsilon={entry.epsilon:.6g} via {entry.primitive} "
                f"but only {max(budget - spent, 0.0):.6g} of its share {budget:.6g} is left")
        self.__spent[account] = spent + entry.epsilon
        if account == self.__last_account and spent + entry.epsilon >= budget * (1 - _BUDGET_SLACK):
            self._gate.on_close = self._free_counts      # the last share spent: freed once this measurement returns
        if self.contributions != 1:  # the noise source scales the draws; the books say so
            k = self.contributions
            entry = replace(entry, sensitivity=entry.sensitivity * k,
                            note="; ".join(filter(None, (unit_text(k), entry.note))))
        self.ledger.record(entry)

    # ------------------------------------------------------------ gate
    def _prefix_sums(self, order: np.ndarray | None) -> np.ndarray:
        """``[0, x_0, x_0 + x_1, ...]`` of the counts arranged in ``order`` (a checked private copy;
        None is domain order), int64 and exact (clamped counts sum below 2**62).  The last one is
        kept: the levels of a tree, measured one ``laplace_intervals`` call each, share one pass.
        Read through the gate like the counts themselves."""
        counts = self._true_counts()
        if order is not None and is_identity(order, self.__n):
            order = None
        if self.__prefix is not None:
            kept_order, prefix = self.__prefix
            if (kept_order is None) == (order is None) and (order is None or np.array_equal(order, kept_order)):
                return prefix
        prefix = np.empty(self.__n + 1, dtype=np.int64)
        prefix[0] = 0
        np.cumsum(counts if order is None else counts[order], out=prefix[1:])
        prefix.setflags(write=False)
        self.__prefix = (order, prefix)
        return prefix

    def _block_sums(self, bounds: np.ndarray | None, width: int) -> np.ndarray:
        """The sums of runs of ``width`` consecutive groups in domain order (``bounds``: the kernel's own
        checked group bounds, or None for singleton bins), int64 and exact.  The last answer is kept:
        the next level of a tree (a multiple of its width, the same groups) sums runs of the kept sums
        instead of the counts, so a tree's levels read the counts once, not once per level.  Read
        through the gate like the counts themselves."""
        counts = self._true_counts()
        kept = self.__level_sums
        if kept is not None and kept[0] is bounds and width % kept[1] == 0:
            sums = _run_sums(kept[2], width // kept[1])
        elif bounds is None:
            sums = _run_sums(counts, width)
        else:
            sums = _coarsened_sums(kept, bounds[0:bounds.size - 1:width])
            if sums is None:
                sums = np.add.reduceat(counts, bounds[0:bounds.size - 1:width])
        sums.setflags(write=False)
        self.__level_sums = (bounds, width, sums)   # holds ``bounds``: its identity cannot be reused
        return sums

    def _true_counts(self) -> np.ndarray:
        if self._gate.depth <= 0:
            self.violations.append("the true counts were read outside a kernel primitive")
            raise PrivacyViolation("the true counts can only be read by a kernel primitive; "
                                   "measure them through ctx.data")
        return self.__counts


#: from this many kept group sums the kernel's level sums are coarsened by a compiled walk (numba's import
#: is worth it), or from any number once numba is imported; below, the counts are summed by ``add.reduceat``
COARSENED_MIN = 1 << 15


def _coarsened_sums(kept, starts: np.ndarray) -> np.ndarray | None:
    """The sums of the counts over ``[starts[i], starts[i + 1])`` (the last up to n) from the kept sums of a
    finer partition in domain order (``kept``: its checked bounds, width 1, int64 sums) when each start is
    one of its bounds: the groups each run covers summed (integers: exact, the sums ``add.reduceat`` of the
    counts gives), one walk over the kept groups instead of a pass over the n counts (the levels of the pruned
    tree: each level a coarsening of the one below).  None when nothing fine is kept, below
    :data:`COARSENED_MIN` kept sums before numba is imported, or when a start is no kept bound."""
    if kept is None or kept[0] is None or kept[1] != 1:
        return None
    fine, sums = kept[0], kept[2]
    if not (sums.size >= COARSENED_MIN or "numba" in sys.modules) or starts.size >= fine.size - 1:
        return None
    from ._sums_jit import coarsened_sums
    out = np.empty(starts.size, dtype=np.int64)
    return out if coarsened_sums(fine, sums, np.ascontiguousarray(starts), out) else None


#: the widest runs :func:`_run_sums` sums by strided adds (CPU over 2^24 int64 counts, one process: strided
#: 0.077 / 0.072 / 0.058 / 0.070 / 0.084 / 0.101 s at widths 2 / 3 / 4 / 5 / 8 / 11, ``add.reduceat``
#: 0.127 / 0.074 / 0.065 / 0.041 / 0.028 / 0.021 s)
STRIDED_MAX_WIDTH = 4


def _run_sums(values: np.ndarray, width: int) -> np.ndarray:
    """Sums of runs of ``width`` consecutive integers (the last run may be shorter): ``add.reduceat`` at
    ``0, width, 2 width, ...``; runs of 2 to ``STRIDED_MAX_WIDTH`` values by strided adds, without its index
    array (faster there; one pass per position in a run, so ``reduceat`` beyond: the same integers, exactly)."""
    if width == 1:
        return values
    if width > STRIDED_MAX_WIDTH:
        return np.add.reduceat(values, np.arange(0, values.size, width))
    sums = values[::width].copy()
    for i in range(1, width):
        part = values[i::width]
        sums[:part.size] += part
    return sums


def _group_sums_gathered(counts: np.ndarray, order: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``add.reduceat(counts[order], bounds[:-1])`` for int64 counts, gathered a block of positions at a
    time (:func:`~dphist.partition.order_blocks`, gathered by :func:`~dphist.partition.gather_run` into one
    reused buffer): each block's part of every group it meets summed by
    ``reduceat`` and added to that group's sum.  Integer sums do not depend on the order of their additions (wrapping included), so these are the same
    integers, without a gathered copy of all the counts beside the kernel's own (one input of memory at
    the peak of a sorted partition's measurement).  ``bounds`` is the checked partition's: strictly
    increasing from 0 to ``order.size``."""
    sums = np.zeros(bounds.size - 1, dtype=np.int64)
    gathered = np.empty(min(ORDER_BLOCK, order.size), dtype=counts.dtype)
    for lo, hi, first, stop in order_blocks(bounds, order.size):
        starts = bounds[first:stop] - lo
        starts[0] = 0                                  # group ``first`` holds position lo
        sums[first:stop] += np.add.reduceat(gather_run(counts, order, lo, gathered[:hi - lo]), starts)
    return sums


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


#: probe histograms of at most this many bins are kept for the next probe; larger ones are made per probe
#: (``np.zeros``: the operating system's zero pages, nearly free) and freed with it, so that a run's
#: measurement never holds a probe as large as the input beside it (memory)
PROBE_KEPT_MAX = 1 << 16


def _probe_counts(n: int, any_layout: bool = False) -> np.ndarray:
    """The public probe histogram: all zeros over the domain (read-only; one per domain size up to
    :data:`PROBE_KEPT_MAX`, kept for the next probe: a run probes its mechanisms on the same size).  Above
    that size, for a mechanism declared :attr:`VettedMechanism.probe_any_layout`, one zero broadcast over
    the domain (the same values, read-only, of stride 0: no memory of the domain's size beside the run's)."""
    if n <= PROBE_KEPT_MAX:
        return _kept_probe_counts(n)
    return np.broadcast_to(_ZERO, (n,)) if any_layout else _zeros_read_only(n)


_ZERO = np.zeros((), dtype=np.int64)
_ZERO.setflags(write=False)


def _zeros_read_only(n: int) -> np.ndarray:
    probe = np.zeros(n, dtype=np.int64)
    probe.setflags(write=False)
    return probe


_kept_probe_counts = lru_cache(maxsize=4)(_zeros_read_only)


def _probe_noise(noise: NoiseSource) -> NoiseSource:
    """A throwaway source of the run's kind for a probe (its draws are never published; the run's
    own source is not touched): the source's ``probe()``, else research mode's probe source."""
    probe = getattr(noise, "probe", None)
    if callable(probe):
        return probe()
    from .noise import _ProbeLaplace
    return _ProbeLaplace()


#: the probe's result (the output's structure, :func:`_signature`) of each vetted mechanism declared
#: ``probe_once``: by the object's id, ``(weak reference to it, {key: structure})``, the entry dropped when
#: the object is freed; at most :data:`PROBES_KEPT` keys per object (the oldest dropped)
_PROBED: dict[int, tuple] = {}
PROBES_KEPT = 16


def _probe_key(mechanism: "VettedMechanism", n: int, eps: float, noise, arguments: dict):
    """The key of a probe whose result the kernel may keep (:attr:`VettedMechanism.probe_once`, no
    arguments), or None: the domain size, epsilon and the kind of the run's noise source, which makes the
    probe's source (:func:`_probe_noise`: its type; person-level noise, also the inner source's type and
    ``k``), all public."""
    if mechanism.probe_once is not True or arguments:
        return None
    kind = type(noise)
    if kind is PersonLevelNoise:
        kind = (kind, type(noise.inner), noise.k)
    return n, eps, kind


def _probed(mechanism: "VettedMechanism", key):
    """The kept probe result of ``mechanism`` under ``key``, or None (probe it)."""
    if key is None:
        return None
    kept = _PROBED.get(id(mechanism))
    return kept[1].get(key) if kept is not None and kept[0]() is mechanism else None


def _remember_probe(mechanism: "VettedMechanism", key, shape) -> None:
    if key is None:
        return
    i = id(mechanism)
    kept = _PROBED.get(i)
    if kept is None or kept[0]() is not mechanism:
        try:
            ref = weakref.ref(mechanism, lambda r, i=i: _PROBED.pop(i) if _PROBED.get(i, (None,))[0] is r else None)
        except TypeError:       # not weakly referable: probed every time
            return
        kept = _PROBED[i] = (ref, {})
    if len(kept[1]) >= PROBES_KEPT:
        kept[1].pop(next(iter(kept[1])), None)
    kept[1][key] = shape


def _refused_on_probe(what: str, exc: Exception) -> Exception:
    """A failure of user code on the public probe: safe to report in full (no data was read).  A
    :class:`PrivacyViolation` (e.g. raw float noise asked for in release mode) stays one."""
    cls = PrivacyViolation if isinstance(exc, PrivacyViolation) else InvalidParameter
    return cls(f"{what} failed on the public probe histogram (all zeros, before anything "
               f"was spent): {type(exc).__name__}: {exc}")


def _signature(out) -> tuple:
    """The structure a vetted mechanism's output must keep from the probe to the data: its type,
    and for arrays the rank and kind, plus the shape of a real-valued one (integer outputs such as
    cut points may change length with the data)."""
    if type(out) is np.ndarray and out.dtype.kind in "fc":     # the common case, as below
        return ("ndarray", out.ndim, out.dtype.kind, out.shape)
    if isinstance(out, Partition):
        return ("Partition", out.n_bins)
    if isinstance(out, (tuple, list)):
        return (type(out).__name__,) + tuple(_signature(v) for v in out)
    if isinstance(out, dict):
        return ("dict",) + tuple((k, _signature(out[k])) for k in sorted(out, key=str))
    arr = np.asarray(out)
    if arr.dtype == object:
        return ("object", type(out).__name__)
    kind = "i" if arr.dtype.kind in "iub" else arr.dtype.kind
    return (type(out).__name__, arr.ndim, kind, arr.shape if kind in "fc" else None)


#: a float array of at most this many values is checked for finiteness value by value (``math.isfinite``
#: on its Python floats: the same test as ``np.isfinite``, without a ufunc's and a reduction's set-up)
_FEW_VALUES = 64


def _keeps_structure(out, shape: tuple) -> bool:
    """Whether a vetted mechanism's output on the data has the structure ``shape`` its probe had
    (:func:`_signature`) and only finite values (:func:`_all_finite`); a small float array, the common
    output of a mechanism releasing a few numbers, is checked without building its signature."""
    if type(out) is np.ndarray and out.dtype.kind == "f" and out.size <= _FEW_VALUES:
        return shape == ("ndarray", out.ndim, "f", out.shape) and all(map(math.isfinite, out.ravel().tolist()))
    return _signature(out) == shape and _all_finite(out)


def _all_finite(out) -> bool:
    if type(out) is np.ndarray and out.dtype.kind in "fc":     # the common case, as below
        return bool(np.isfinite(out).all())
    if isinstance(out, Partition):
        return True
    if isinstance(out, (tuple, list)):
        return all(_all_finite(v) for v in out)
    if isinstance(out, dict):
        return all(_all_finite(v) for v in out.values())
    arr = np.asarray(out)
    return arr.dtype == object or arr.dtype.kind not in "fc" or bool(np.isfinite(arr).all())


class NoisyRows:
    """Report-noisy-min's transform of the exact search's rows, declared for its compiled route: a
    candidate's cost ``c`` becomes ``(noise + clamp(c, cap)) + g`` (:func:`_clamped`; ``g`` the group cost:
    ``table[size]``, or ``extra`` when ``table`` is None), the noise the next values of the source's
    stream, row after row, end after end (``parts(cuts)``: a :class:`dphist.kernel.streams.LaplaceParts`
    over those values, or None when the stream cannot be cut).  The floats of ``perturb`` on each row in
    turn (:meth:`DataHandle.noisy_min_segmentation`)."""

    def __init__(self, cap: float, extra, table, parts):
        self.cap, self.extra, self.table, self.parts = float(cap), extra, table, parts


def _clamped(costs: np.ndarray, cap: float) -> np.ndarray:
    """Costs clamped to ``[-cap, cap]`` (NaN to ``cap``): 1-Lipschitz, so each candidate's sensitivity stands."""
    costs = np.asarray(costs, dtype=float)
    if np.all(np.abs(costs) <= cap):       # the common case: nothing to change, no copy
        return costs
    return np.clip(np.nan_to_num(costs, nan=cap, posinf=cap, neginf=-cap), -cap, cap)


#: report-noisy-min draws its candidates' noise in parts on threads from this many draws per block of rows
_PARTS_MIN_DRAWS = 1 << 16
#: parts of the noise per thread, taken in turn by the threads (dphist.segmentation.parallel.run_all)
_PARTS_PER_THREAD = 4

#: search modes of :meth:`DataHandle.noisy_min_segmentation`
SEGMENTATION_SEARCHES = ("all", "power-of-two", "tree")


def _withheld(what: str, name: object) -> PrivacyViolation:
    return PrivacyViolation(f"{what} raised {name} while reading the data; the exception is withheld "
                            "because it may depend on the data")


class DataHandle:
    """A component's only access to the data: metered measurement primitives.

    ``n``, ``budget``, ``spent`` and ``remaining`` are read-only.  Every
    primitive takes ``epsilon``, checks its arguments, charges, then answers.
    """

    __slots__ = ("_kernel", "_account", "component", "stage", "_vetted")

    def __init__(self, kernel: PrivateKernel, account: int, component: str, stage: str, vetted=()):
        object.__setattr__(self, "_kernel", kernel)
        object.__setattr__(self, "_account", account)
        object.__setattr__(self, "component", component)
        object.__setattr__(self, "stage", stage)
        object.__setattr__(self, "_vetted", vetted if type(vetted) is tuple else tuple(vetted))

    def __setattr__(self, name, value):
        raise AttributeError(f"DataHandle.{name} is read-only")

    @property
    def n(self) -> int:
        return self._kernel.n

    @property
    def shape(self) -> tuple[int, ...]:
        """The histogram's public shape; primitives index its cells flattened in row-major order."""
        return self._kernel.shape

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
        with self._kernel._gate:
            return self._noisy(self._kernel._true_counts(), 1.0, eps, integral=True, support=1)

    def laplace_partition(self, partition, epsilon) -> np.ndarray:
        """Each group's sum plus Laplace(1/epsilon): the groups are disjoint, so sensitivity 1.

        The partition is re-validated by the kernel (every bin exactly once).  A
        :class:`~dphist.partition_blocks.BlockPartition` (boxes tiling the grid) is validated from its
        description and summed by ``add.reduceat`` along the grid's axes (``block_sums``): no permutation.
        """
        eps = validate_epsilon(epsilon, "epsilon for laplace.partition")
        if isinstance(partition, BlockPartition):   # boxes tiling the grid: checked and summed from their edges
            checked = self._kernel._checked_blocks(partition)
            self._charge("laplace.partition", eps, 1.0, checked.n_groups)
            with self._kernel._gate:
                sums = block_sums(self._kernel._true_counts(), checked)
                return self._noisy(sums, 1.0, eps, integral=True, support=1)
        if is_whole_partition(partition, self.n):   # one group in domain order: its sum is the total
            self._charge("laplace.partition", eps, 1.0, 1)
            with self._kernel._gate:
                total = np.add.reduce(self._kernel._true_counts(), keepdims=True)   # reduceat's [sum], exact
                return self._noisy(total, 1.0, eps, integral=True, support=1)
        if is_plain_partition(partition, self.n):   # singletons in domain order: the sums are the counts
            self._charge("laplace.partition", eps, 1.0, self.n)
            with self._kernel._gate:
                return self._noisy(self._kernel._true_counts(), 1.0, eps, integral=True, support=1)
        order, bounds, in_order = self._kernel._checked_partition(partition, kernel_use=True)   # in domain order: no gather
        self._charge("laplace.partition", eps, 1.0, self.n if bounds is None else bounds.size - 1)
        with self._kernel._gate:
            counts = self._kernel._true_counts()
            taken = getattr(self._kernel.noise, "laplace_mechanism_taken", None)
            if bounds is None and not in_order and taken is not None:
                # checked singleton bounds in another order: the counts gathered by the noise source a block at
                # a time into the noise's buffer (no gathered copy of N counts beside it: memory)
                return taken(counts, order, 1.0, eps, integral=True, support=1)
            if bounds is None:      # checked singleton bounds (None: 0..n): the sums are the counts in order
                sums = counts if in_order else counts[order]
            elif not in_order and counts.dtype == np.int64 and order.size >= ORDER_BLOCK:
                sums = _group_sums_gathered(counts, order, bounds)   # no gathered copy of N counts: memory
            else:
                sums = np.add.reduceat(counts if in_order else counts[order], bounds[:-1])
            del counts
            return self._noisy(sums, 1.0, eps, integral=True, support=1)

    def laplace_partition_spread(self, partition, epsilon) -> np.ndarray:
        """:meth:`laplace_partition`'s answers spread evenly over each group's bins, in domain order
        (``partition.spread`` of them: post-processing of the same measurement, the same ledger row and the
        same floats).  Singleton groups in another order (a :class:`~dphist.partition.SingletonPartition`)
        with a noise source that spreads as it draws (research mode's ``laplace_mechanism_spread``) are
        measured without the answers in the partition's order: each bin's count and its draw added where the
        bin is, in the memory of the kernel's copy of the counts when this read is the run's last
        (:meth:`PrivateKernel._counts_to_consume`).  Anything else: ``partition.spread(laplace_partition)``."""
        spread = getattr(self._kernel.noise, "laplace_mechanism_spread", None)
        if spread is not None and type(partition) is SingletonPartition and not is_plain_partition(partition, self.n):
            eps = validate_epsilon(epsilon, "epsilon for laplace.partition")
            order, bounds, in_order = self._kernel._checked_partition(partition, kernel_use=True)
            if bounds is None and not in_order:
                self._charge("laplace.partition", eps, 1.0, self.n)
                with self._kernel._gate:
                    counts, consume = self._kernel._counts_to_consume()
                    return spread(counts, order, 1.0, eps, consume=consume, integral=True, support=1)
        return partition.spread(self.laplace_partition(partition, epsilon))

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
        with self._kernel._gate:
            prefix = self._kernel._prefix_sums(order)   # one pass per order and run, not per call
            return self._noisy(prefix[ends] - prefix[starts], sens, eps, integral=True, support=max(coverage, 1))

    def laplace_blocks(self, partition, width, epsilon) -> np.ndarray:
        """One level of a tree over a partition's groups: the sums of runs of ``width`` consecutive groups
        (in the partition's order; the last run may be shorter) plus Laplace(1/epsilon).

        The same answers, noise and ledger row as :meth:`laplace_intervals` on the runs' position
        intervals (disjoint: sensitivity 1; recorded as ``laplace.intervals``), described by the
        partition and the width instead of two arrays of interval bounds: no bounds are built or
        copied, and in domain order no prefix sums either (singletons of width 1: the counts
        themselves; wider runs: integer sums of runs, exact, of the kernel's kept sums of the level
        before when the width is a multiple of its width and the groups are the same, else of the
        counts: a tree's levels read the counts once, ``PrivateKernel._block_sums``).  The partition is
        checked by the kernel as in :meth:`laplace_partition`.
        """
        eps = validate_epsilon(epsilon, "epsilon for laplace.intervals")
        if isinstance(width, (bool, np.bool_)) or not isinstance(width, (int, np.integer)) or width < 1:
            raise InvalidParameter(f"laplace_blocks: width must be an integer >= 1, got {width!r}")
        width = int(width)
        n = self.n
        plain = is_plain_partition(partition, n)
        if plain:
            groups, bounds, order, in_order = n, None, None, True
        else:
            order, bounds, in_order = self._kernel._checked_partition(partition, kernel_use=True)
            if bounds is None:    # checked singletons: their bounds 0..n, the shared vector
                bounds = identity_vectors(n)[1]
            groups = bounds.size - 1
        runs = -(-groups // width)
        self._charge("laplace.intervals", eps, 1.0, runs)
        with self._kernel._gate:
            counts = self._kernel._true_counts()
            if plain and width == 1:
                return self._noisy(counts, 1.0, eps, integral=True, support=1)
            if in_order:      # a tree's levels in turn: each from the one before (kept by the kernel)
                sums = self._kernel._block_sums(None if plain else bounds, width)
            else:
                prefix = self._kernel._prefix_sums(order)
                ends = np.empty(runs, dtype=np.int64)
                ends[:-1] = bounds[width:groups:width]
                ends[-1] = n
                sums = prefix[ends]
                sums -= prefix[bounds[0:groups:width]]
                del prefix, ends
            del counts
            return self._noisy(sums, 1.0, eps, integral=True, support=1)

    def laplace_linear(self, queries, epsilon, sensitivity=None) -> np.ndarray:
        """Answers of a query description plus Laplace noise; the kernel computes the sensitivity.

        ``queries``: a dense array, a ``scipy.sparse`` matrix,
        :class:`~dphist.kernel.queries.IntervalQueries`,
        :class:`~dphist.kernel.queries.KroneckerQueries` (one factor per axis of the histogram's
        shape), or an implicit object with ``shape`` and ``matvec`` (probed column by column on
        small domains).  A declared ``sensitivity`` below the computed one is refused.
        """
        eps = validate_epsilon(epsilon, "epsilon for laplace.linear")
        checked = check_queries(queries, self.n)
        if isinstance(queries, KroneckerQueries) and len(self.shape) > 1:
            widths = tuple(int(np.shape(f)[1]) for f in queries.factors)
            if widths != tuple(self.shape):
                raise InvalidParameter(f"a Kronecker product over a grid of shape {widths} measured on a histogram "
                                       f"of shape {tuple(self.shape)}; one factor per axis, in the grid's order")
        if checked.sensitivity <= 0:
            raise InvalidParameter("the query matrix is all zeros; nothing to measure")
        sens = _declared_at_least(sensitivity, checked.sensitivity, "laplace.linear")
        # |answer| <= n * (largest column norm) * (count cap): refuse, before the charge, queries whose
        # answers could overflow a float on some histogram (an abort after it would depend on the data)
        if checked.sensitivity * self.n * float(count_cap(self.n)) >= 2.0 ** 1000:
            raise InvalidParameter("laplace.linear: the query weights are so large that answers could overflow "
                                   "a float; rescale the queries")
        self._charge("laplace.linear", eps, sens, checked.rows)
        with self._kernel._gate:
            x = self._kernel._true_counts()
            # interval queries sum the integer counts as floats themselves (no float copy: memory)
            values = checked.answer(x if isinstance(queries, IntervalQueries) else x.astype(float))
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
        with self._kernel._gate:
            return self._noisy(np.sort(self._kernel._true_counts()), 1.0, eps, integral=True, support=1)

    def exponential(self, score: Callable[[np.ndarray], np.ndarray], n_candidates: int,
                    score_sensitivity: float, epsilon, *, monotonic: bool = False) -> int:
        """Exponential mechanism (McSherry & Talwar 2007): index of the chosen candidate.

        ``score(counts)`` returns one utility per candidate (higher is better);
        its sensitivity ``score_sensitivity`` is declared by the caller (the
        kernel cannot compute it for arbitrary code).  Candidate ``i`` is drawn
        with probability proportional to ``exp(epsilon * score_i / (2 * sensitivity))``
        (``/ sensitivity`` when the score is monotonic in the data).

        The score's contract is checked before the charge, on the public probe
        histogram (all zeros): it must run and return ``n_candidates`` finite
        numbers, else :class:`InvalidParameter` and nothing is spent.  On the
        data, a non-finite score is mapped (NaN and -inf to the lowest finite
        score, +inf to the highest; all zero when none is finite); a score
        function that raises or returns the wrong number of values *only on
        some histograms* ends the run with a :class:`PrivacyViolation`
        carrying no data (after the charge: the one failure the kernel cannot
        make data-independent; module docstring).
        """
        eps = validate_epsilon(epsilon, "epsilon for exponential")
        sens = positive_number(score_sensitivity, "score sensitivity")
        if isinstance(n_candidates, bool) or not isinstance(n_candidates, (int, np.integer)) or n_candidates < 1:
            raise InvalidParameter(f"n_candidates must be a positive integer, got {n_candidates!r}")
        if not callable(score):
            raise InvalidParameter("score must be a callable counts -> one utility per candidate")
        m = int(n_candidates)
        try:
            probed = _score_vector(score, _probe_counts(self.n))
        except Exception as exc:  # noqa: BLE001 - public input: the error may be shown
            raise _refused_on_probe("the score function", exc) from None
        if probed.shape != (m,):
            raise InvalidParameter(f"the score function returned {probed.size} values on the public probe "
                                   f"histogram; it must return one per candidate ({m})")
        if not np.all(np.isfinite(probed)):
            raise InvalidParameter("the score function returned a non-finite value on the public probe histogram "
                                   "(all zeros); scores must be finite numbers")
        self._charge("exponential", eps, sens, 1)
        _record("exponential", self.component, self.stage, eps,
                lambda: {"score": score, "n_candidates": m, "sensitivity": sens, "monotonic": bool(monotonic)})
        with self._kernel._gate:
            x = self._kernel._true_counts()
            ok, scores = _user_code(partial(_score_vector, score, x))
            del x  # no frame of a raised error may hold the counts
        if not ok:
            raise _withheld("the score function", scores)
        if scores.shape != (m,):
            raise PrivacyViolation(f"the score function must return {m} values; the run is stopped")
        scores = _finite_scores(scores)
        return int(self._kernel.noise.exponential_mechanism(scores, sens, eps, monotonic=bool(monotonic)))

    def noisy_min_segmentation(self, cost, epsilon, *, units=None, sensitivity=None, search: str = "all",
                               branching: int = 2, group_cost=0.0) -> np.ndarray:
        """Report-noisy-min over segmentations: the cut points of the least noisy-cost partition.

        The private partition of DAWA (Li, Hay, Miklau, Wang, PVLDB 7(12) 2014, Sections 3-4),
        owned by the kernel: the component names a cost, the kernel builds it on the true
        counts, perturbs the cost of *every* candidate group, runs the search and returns only
        the unit cut points ``0 = c_0 < ... < c_m = k`` (for :meth:`dphist.Partition.merge`).

        Privacy (epsilon-DP; Dwork & Roth 2014, Claim 3.9, report noisy max, and Li et al.'s
        Sec. 3 argument for DAWA's private partition).  Every candidate group ``b`` gets its own
        noise ``Z_b ~ Lap(2 Delta / epsilon)`` on its cost ``c_b(x)``; the search returns a
        least-total segmentation ``B`` under
        ``c_b + Z_b + g(|b|)`` (its tie rule is a fixed function of the candidates, never of the
        data).  Let one record change bin ``i``.  Fix the output ``B`` and every noise value except
        ``Z_{b*}``, ``b*`` the group of ``B`` holding ``i``.  Against a competitor that also holds
        ``b*``, ``B`` is compared through groups that do not hold ``i``: that comparison is the same on
        both histograms.  Against one that does not hold ``b*``, it has exactly one group holding
        ``i``; ``B`` wins iff ``Z_{b*}`` lies below a threshold that moves by at most ``2 Delta``.
        So ``P[B | x'] >= P[Z < T - 2 Delta] >= exp(-epsilon) P[Z < T] = exp(-epsilon) P[B | x]``.
        Costs are clamped to ``+-2**40 Delta`` first (1-Lipschitz: Delta stands).  Release mode:
        the noise is drawn by ``noise.laplace_mechanism(costs, 2 Delta, epsilon, support=2)``, which
        rounds the costs to a grid of step ``g`` and adds discrete Laplace of scale
        ``(ceil(2 Delta / g) + 4) / epsilon`` in steps; one record moves a rounded cost by at most
        ``Delta / g + 2`` steps (one for the rounding, one for floating-point error), so the threshold
        by at most ``2 Delta / g + 4``: covered (:mod:`dphist.kernel.noise`; the discrete Laplace's
        ratio bound holds for integer shifts, and ties fall to the search's fixed rule).

        The cost is built and evaluated once on the public probe (all zeros) before the charge:
        it must build and give finite costs, else :class:`InvalidParameter`, nothing spent.

        Threads: the exact search on threads hands the rows of a block to ``perturb.batches``; in
        research mode their noise is drawn in parts by the threads (:mod:`dphist.kernel.streams`):
        the values of the serial row-by-row draws, in the same order, the generator left where those
        leave it, so the release is the same bits on any number of threads and the proof above is
        untouched (one fresh draw per candidate, the same scale).

        Parameters
        ----------
        cost
            :class:`dphist.segmentation.L1Deviation` (DAWA's ``dev``; the kernel knows its
            sensitivity, 2), or any callable ``values -> dphist.segmentation.Cost`` over the
            positions (then ``sensitivity`` is required).
        epsilon
            the budget charged.
        units
            a :class:`~dphist.Partition` whose groups are the indivisible units, in its order
            (default: single bins in domain order).  Re-validated by the kernel.
        sensitivity
            Delta, the most one record (added or removed) moves the cost of one candidate group.
            Declared for user costs; for ``L1Deviation`` a value below 2 is refused.
        search
            ``"all"`` (every run of units, :func:`dphist.segmentation.optimal`),
            ``"power-of-two"`` (runs of 2^j units) or ``"tree"`` (aligned subtrees, ``branching``).
        group_cost
            public cost added to every candidate group after its noise (a constant, or a callable
            of the groups' sizes in bins): DAWA's ``1/eps_2`` and its per-group penalty.
        """
        from .. import segmentation
        eps = validate_epsilon(epsilon, "epsilon for noisy-min.segmentation")
        if search not in SEGMENTATION_SEARCHES:
            raise InvalidParameter(f"unknown search {search!r}; use one of {', '.join(SEGMENTATION_SEARCHES)}")
        if search == "tree" and (isinstance(branching, bool) or not isinstance(branching, (int, np.integer))
                                 or branching < 2):
            raise InvalidParameter(f"branching must be an integer >= 2, got {branching!r}")
        known = cost is segmentation.L1Deviation
        if not known and not callable(cost):
            raise InvalidParameter("cost must be dphist.segmentation.L1Deviation or a callable values -> Cost")
        if known:
            sens = _declared_at_least(sensitivity, 2.0, "noisy-min.segmentation (L1Deviation)")
        elif sensitivity is None:
            raise InvalidParameter("noisy-min.segmentation: declare the sensitivity of a user cost (the most one "
                                   "record moves one candidate group's cost)")
        else:
            sens = positive_number(sensitivity, "declared sensitivity for noisy-min.segmentation")
        if units is None:
            order, bounds = np.arange(self.n, dtype=np.int64), np.arange(self.n + 1, dtype=np.int64)
        else:
            order, bounds = checked_partition(units, self.n)
        identity = bool(np.array_equal(order, np.arange(self.n)))
        if callable(group_cost):
            try:
                table = np.asarray(group_cost(np.arange(1, self.n + 1)), dtype=float)
            except Exception as exc:  # noqa: BLE001 - public input
                raise _refused_on_probe("group_cost", exc) from None
            if table.shape != (self.n,) or not np.all(np.isfinite(table)):
                raise InvalidParameter(f"group_cost must give one finite cost per group size 1..{self.n}")
            table = np.r_[0.0, table]
            extra = None
        else:
            try:
                extra = float(group_cost)
            except (TypeError, ValueError):
                extra = -1.0
            if isinstance(group_cost, bool) or not math.isfinite(extra) or extra < 0:
                raise InvalidParameter(f"group_cost must be a non-negative number or a callable of the group "
                                       f"sizes, got {group_cost!r}")
        try:    # the cost's contract, on public input, before anything is spent
            probe = cost(np.zeros(self.n, dtype=np.float64))
            if not isinstance(probe, segmentation.Cost) or probe.n != self.n:
                raise InvalidParameter(f"the cost must build a dphist.segmentation.Cost over {self.n} positions")
            probed = np.asarray(probe.intervals(bounds[:-1], bounds[1:]), dtype=float)
            if probed.shape != (bounds.size - 1,) or not np.all(np.isfinite(probed)):
                raise InvalidParameter("the cost must give one finite cost per group")
        except InvalidParameter as exc:
            raise InvalidParameter(f"noisy-min.segmentation on the public probe histogram (all zeros, before "
                                   f"anything was spent): {exc}") from None
        except Exception as exc:  # noqa: BLE001 - public input: the error may be shown
            raise _refused_on_probe("the segmentation cost", exc) from None
        del probe, probed
        self._charge("noisy-min.segmentation", eps, sens, 1, note="report-noisy-min over segmentations "
                     "(kernel/private.py, DataHandle.noisy_min_segmentation)")
        _record("noisy-min", self.component, self.stage, eps,
                lambda: {"cost": cost, "sensitivity": sens, "order": order, "bounds": bounds, "search": search})
        noise, scale, cap = self._kernel.noise, 2.0 * sens, COST_CAP * sens

        def perturb(costs, sizes):
            noisy = noise.laplace_mechanism(_clamped(costs, cap), scale, eps, support=2)
            return noisy + (extra if extra is not None else table[sizes])

        def perturb_batches(costs_list, sizes_list, threads):
            # perturb on each batch in turn, bit for bit: where the source can cut its stream (research mode,
            # dphist.kernel.streams) the noise of runs of whole batches is drawn on threads, the same draws in
            # the same order, and each batch is a view of its run's array (no copy)
            starts = np.r_[0, np.cumsum([c.size for c in costs_list])].astype(np.int64)
            splits = getattr(noise, "laplace_parts", None) if threads > 1 and starts[-1] >= _PARTS_MIN_DRAWS else None
            if splits is not None:      # runs of batches of near-equal size
                at = np.searchsorted(starts, np.linspace(0, starts[-1], _PARTS_PER_THREAD * threads + 1))
                splits = splits(scale, eps, starts[np.unique(at)])
            if splits is None:
                return [perturb(c, z) for c, z in zip(costs_list, sizes_list)]
            out = [None] * len(costs_list)

            def work(_, lo, hi, noisy):
                for r in range(int(np.searchsorted(starts, lo)), int(np.searchsorted(starts, hi))):
                    batch = noisy[starts[r] - lo:starts[r + 1] - lo]
                    batch += _clamped(costs_list[r], cap)
                    batch += extra if extra is not None else table[sizes_list[r]]
                    out[r] = batch

            splits.run(work, threads)
            for r in [r for r, o in enumerate(out) if o is None]:   # empty batches after the last draw
                out[r] = perturb(costs_list[r], sizes_list[r])
            return out

        perturb.batches = perturb_batches
        # the transform in a form the exact search on threads applies in its compiled loop: the candidates'
        # noise drawn in parts on the threads (research mode) into its buffer, clamped costs, group cost
        parts = getattr(noise, "laplace_parts", None)
        if parts is not None:
            perturb.noisy_rows = NoisyRows(cap, extra, table if extra is None else None,
                                           lambda cuts: parts(scale, eps, cuts))

        def search_on(counts):
            values = (counts if identity else counts[order]).astype(np.float64)
            perturbed = cost(values).then(perturb)
            if search == "tree":
                return segmentation.tree(perturbed, bounds, branching=int(branching)).bounds
            lengths = "all" if search == "all" else "power-of-two"
            return segmentation.optimal(perturbed, bounds, lengths=lengths, longest_on_ties=True).bounds

        with self._kernel._gate:
            x = self._kernel._true_counts()
            ok, cuts = _user_code(partial(search_on, x))
            del x  # no frame of a raised error may hold the counts
        if not ok:
            raise _withheld("the segmentation cost", cuts)
        return np.array(cuts, dtype=np.int64, copy=True)

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
        declared = mechanism.name in self._vetted
        if not declared and not vetted_mechanisms_enabled():
            raise InvalidParameter(
                f"{self.component} runs the vetted mechanism {mechanism.name!r} without opting in: its privacy "
                f"rests on its own proof, which the kernel cannot check. Declare it on the component "
                f"(vetted_mechanisms = ({mechanism.name!r},)) or, for a prototype, call "
                "dphist.kernel.enable_vetted_mechanisms()")
        # a positive finite float is its own validated value (positive_number's test, without its messages built)
        eps = epsilon if type(epsilon) is float and 0.0 < epsilon < math.inf else \
            validate_epsilon(epsilon, f"epsilon for custom:{mechanism.name}")
        sens = mechanism.sensitivity
        if not (type(sens) is float and 0.0 < sens < math.inf):
            sens = positive_number(sens, f"{mechanism.name}'s sensitivity")
        kernel = self._kernel
        n, noise = kernel.n, kernel.noise
        arguments = mechanism.check(n, **arguments)
        if not isinstance(arguments, dict):
            raise InvalidParameter(f"{mechanism.name}.check must return the arguments as a dict")
        answers = mechanism.answers(n, **arguments)
        key = _probe_key(mechanism, n, eps, noise, arguments)
        shape = _probed(mechanism, key)
        if shape is None:
            try:    # the output contract, on public input, before anything is spent
                probed = mechanism.run(_probe_counts(n, getattr(mechanism, "probe_any_layout", False) is True),
                                       eps, _probe_noise(noise), **arguments)
            except Exception as exc:  # noqa: BLE001 - public input: the error may be shown
                raise _refused_on_probe(f"vetted mechanism {mechanism.name}", exc) from None
            if not _all_finite(probed):
                raise InvalidParameter(f"vetted mechanism {mechanism.name} returned a non-finite value on the "
                                       "public probe histogram (all zeros); its output must be finite")
            shape = _signature(probed)
            del probed
            _remember_probe(mechanism, key, shape)
        self._charge(f"custom:{mechanism.name}", eps, sens, answers, note=mechanism.proof)
        recorder = _CUSTOM_CALLS.get()
        if recorder is not None:
            recorder.append((mechanism, eps, dict(arguments)))
        if _KERNEL_CALLS.get() is not None:     # _record's test, without building its callable on a run
            _record("custom", self.component, self.stage, eps,
                    lambda: {"mechanism": mechanism, "arguments": dict(arguments), "declared": declared})
        with kernel._gate:
            x = kernel._true_counts()
            ok, out = _user_code(partial(mechanism.run, x, eps, noise, **arguments))
            del x  # no frame of a raised error may hold the counts
        if not ok:
            raise _withheld(f"mechanism {mechanism.name}", out)
        if not _keeps_structure(out, shape):
            raise PrivacyViolation(f"vetted mechanism {mechanism.name} returned an output of another structure "
                                   "than on the public probe, or a non-finite one; the run is stopped")
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
    #: True for a mechanism whose run on the public probe histogram is fixed by the domain size, epsilon and
    #: the kind of noise source alone (an immutable object called without arguments): the kernel probes
    #: it the first time per (object, domain size, epsilon, kind of noise source) and keeps the result, the
    #: structure every later output on the data is still checked against; a failed probe is not kept (it
    #: is refused every time).  False (the default): probed before every charge.
    probe_once: bool = False
    #: True for a mechanism that reads its counts without writing them and accepts any memory layout: above
    #: :data:`PROBE_KEPT_MAX` bins its probe histogram is then one zero broadcast over the domain (a read-only
    #: view of stride 0, no memory of the domain's size: :func:`_probe_counts`), not ``np.zeros(n)``
    probe_any_layout: bool = False

    def check(self, n: int, **arguments) -> dict:
        """Validate (and copy) the arguments; raise InvalidParameter on a bad one."""
        return arguments

    def answers(self, n: int, **arguments) -> int:
        """How many noisy values the mechanism releases (for the ledger)."""
        return n

    def run(self, counts: np.ndarray, epsilon: float, noise: NoiseSource, **arguments):
        raise NotImplementedError
