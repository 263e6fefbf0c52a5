"""Input validation shared by the core: what a vector, a permutation or a run of group bounds must be.

One definition of each rule, used wherever the rule is checked (the kernel's gate, ``Partition``,
the segmentation engine); each caller raises :class:`~dphist.errors.InvalidParameter` with its own
message naming the parameter, so the predicates here return booleans or validated copies.  This
module imports only numpy and :mod:`dphist.errors`: the kernel can use it without depending on the
modelling layer.

What stays in the kernel, and why: :func:`dphist.kernel.validate_counts` (the private histogram)
and :func:`dphist.kernel.positive_number` / ``validate_epsilon`` (budgets, sensitivities).  They
define what the kernel accepts at its trust boundary - its stable contract, the first thing a
privacy review reads in ``kernel/`` - and every other layer already reaches them there (pipeline,
datasets, io, plugins).  The rules below are structural (shapes, orders, bounds) and are shared by
the kernel and the layers above it.
"""
from __future__ import annotations

import sys
import weakref

import numpy as np

from .errors import InvalidParameter


#: block length of :func:`is_identity`'s comparison, and the block ``0, 1, ..., _BLOCK - 1`` it compares with
_BLOCK = 1 << 16
_STEPS = np.arange(_BLOCK, dtype=np.int64)
_STEPS.setflags(write=False)


def frozen_int64(values) -> np.ndarray:
    """An int64 copy of ``values`` that nothing can change: a read-only array over the bytes of a Python
    ``bytes`` object (immutable memory; ``setflags(write=True)`` is refused for it and for every view of
    it).  One copy, as ``np.array(values, dtype=np.int64)``.  The kernel keeps the arrays it checked in
    this form and recognises them later by identity (the object it checked is still what it checked)."""
    return np.frombuffer(np.ascontiguousarray(values, dtype=np.int64).tobytes(), dtype=np.int64)


def sole_float_vector(arr, holders: int) -> bool:
    """Whether ``arr`` is a writeable, C-contiguous float64 vector (exactly ``numpy.ndarray``) that owns its
    memory and that nothing references but the caller's ``holders`` references (its variables and slots
    holding it; ``sys.getrefcount`` also counts this call's argument and its own).  Every other holder of
    the memory (a variable, an attribute, a view, a buffer export) holds a reference, so such an array may be
    written over in place: the same floats as a copy's, without a second vector.  An interpreter that counts
    more references only makes this answer False (the caller then copies)."""
    return (type(arr) is np.ndarray and arr.dtype == np.float64 and arr.ndim == 1 and arr.base is None
            and arr.flags.owndata and arr.flags.c_contiguous and arr.flags.writeable
            and sys.getrefcount(arr) <= holders + 2)


def frozen_taken(owner: np.ndarray) -> np.ndarray:
    """``owner``'s memory as an int64 vector that nothing can change, without a copy: for an array whose
    caller holds the only reference (the kernel proves it by reference counts before it takes a sorter's
    fresh order, :func:`dphist.kernel.private.taken_order`).  ``owner`` is made read-only and kept alive,
    unreachable, for as long as the returned vector or any view of it lives (a finalizer of the vector, whose
    views and buffer exports all hold it).  The vector is built on a read-only ``memoryview`` that names no
    object (``memoryview.obj`` is None), so ``setflags(write=True)`` is refused for it and every view of it,
    as for :func:`frozen_int64`'s bytes.  ``PyMemoryView_FromMemory`` (the CPython C API) builds that
    memoryview over the owner's bytes."""
    owner.setflags(write=False)
    frozen = np.frombuffer(_from_memory()(owner.__array_interface__["data"][0], owner.nbytes, _PYBUF_READ),
                           dtype=np.int64)
    # every view of the vector and every buffer exported from it holds the vector: owner freed with the last
    weakref.finalize(frozen, _keep, owner).atexit = False
    return frozen


#: ``PyBUF_READ`` of CPython's ``PyMemoryView_FromMemory``: a read-only memoryview
_PYBUF_READ = 0x100
_FROM_MEMORY: list = []


def _from_memory():
    """``ctypes.pythonapi.PyMemoryView_FromMemory`` with its signature, made once (``ctypes`` imported on first
    use: ``import dphist`` does not need it)."""
    if not _FROM_MEMORY:
        import ctypes
        function = ctypes.pythonapi.PyMemoryView_FromMemory
        function.restype = ctypes.py_object
        function.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int)
        _FROM_MEMORY.append(function)
    return _FROM_MEMORY[0]


def _keep(owner) -> None:
    """The finalizer of :func:`frozen_taken`'s memoryview: holds ``owner`` until it runs, then nothing."""


#: the immutable vectors ``0, 1, ..., n-1`` handed out by :func:`identity_vector`: n -> weak reference, while
#: in use (a plain dictionary read in one lookup; an entry is dropped when its vector is freed)
_IDENTITIES: dict = {}
#: the pairs of the last :data:`_KEEP` sizes of at most :data:`_KEEP_MAX_N` bins made, held strongly (at most
#: 32 MiB): repeated runs on one domain (a benchmark, the auditor) find them in the dictionary above
_RECENT: list = []
_KEEP, _KEEP_MAX_N = 4, 1 << 20
#: from this many bins :func:`identity_vectors` makes its fresh ``arange`` immutable in place
_TAKE_IDENTITY_MIN = 1 << 16


def _forget(n: int, ref) -> None:
    if _IDENTITIES.get(n) is ref:
        del _IDENTITIES[n]


def shared_identity(n: int):
    """The shared ``0, 1, ..., n-1`` (:func:`identity_vectors`) if one is in use, else None (O(1))."""
    ref = _IDENTITIES.get(n)
    return None if ref is None else ref()


def identity_vectors(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``0, 1, ..., n-1`` and ``0, 1, ..., n`` as immutable int64 vectors (a singleton partition's order and
    bounds in domain order), one shared object per length while anything holds it: a pipeline builds
    several such partitions per run.  A new pair is two views of one immutable ``arange(n + 1)`` (one
    allocation; no view of it can be made writable): from :data:`_TAKE_IDENTITY_MIN` bins the fresh arange's
    own memory (:func:`frozen_taken`), below it :func:`frozen_int64`'s copy.  :func:`is_identity` recognises them by
    identity, without reading them."""
    n = int(n)
    order, bounds = shared_identity(n), shared_identity(n + 1)
    if order is None or bounds is None:
        base = np.arange(n + 1, dtype=np.int64)
        # the fresh arange is referenced by nothing else: made immutable where it is (no copy, whose fresh
        # pages cost a fault each at large n); small ones copied (ctypes stays unimported for small runs)
        base = frozen_taken(base) if n >= _TAKE_IDENTITY_MIN else frozen_int64(base)
        order = base[:n] if order is None else order
        bounds = base[:] if bounds is None else bounds
        for size, vector in ((n, order), (n + 1, bounds)):
            _IDENTITIES[size] = weakref.ref(vector, lambda ref, size=size: _forget(size, ref))
        if n <= _KEEP_MAX_N:   # kept alive between runs: a loop of small runs builds no arange per run
            _RECENT.append((order, bounds))
            del _RECENT[:-_KEEP]
    return order, bounds


def identity_vector(n: int) -> np.ndarray:
    """``0, 1, ..., n-1``, immutable and shared (see :func:`identity_vectors`)."""
    found = shared_identity(int(n))
    return identity_vectors(n)[0] if found is None else found


def is_shared_identity(order, n: int) -> bool:
    """Whether ``order`` is :func:`identity_vectors`' shared ``0, 1, ..., n-1``: then it is the identity, and
    stays it (its memory is immutable: :func:`frozen_int64`).  O(1): one dictionary lookup."""
    ref = _IDENTITIES.get(n)
    return ref is not None and order is ref()


def keep_recent(kept: dict, key, value, keep: int) -> None:
    """Store ``kept[key] = value`` and drop the oldest entries beyond ``keep`` (insertion order).  Safe when
    threads share ``kept``: an entry another thread dropped first, or a change of the dictionary under the
    eviction, leaves it to the next call (these dictionaries are caches of immutable values)."""
    kept[key] = value
    while len(kept) > keep:
        try:
            del kept[next(iter(kept))]
        except (KeyError, RuntimeError, StopIteration):
            break


#: the immutable bounds ``[0, n]`` of one group of ``n`` bins (:func:`whole_bounds`), for the last sizes asked
_WHOLE: dict = {}
_WHOLE_KEEP = 8


def whole_bounds(n: int) -> np.ndarray:
    """``[0, n]`` as an immutable int64 vector (:func:`frozen_int64`), one shared object per size while
    kept: the bounds of ``Partition.whole(n)``, which the kernel then recognises by identity
    (:func:`is_whole_bounds`) without reading them."""
    found = _WHOLE.get(n)
    if found is None:
        found = frozen_int64(np.array([0, n], dtype=np.int64))
        keep_recent(_WHOLE, n, found, _WHOLE_KEEP)
    return found


def is_whole_bounds(bounds, n: int) -> bool:
    """Whether ``bounds`` is :func:`whole_bounds`' shared ``[0, n]`` (O(1): one dictionary lookup; its memory
    is immutable, so it stays ``[0, n]``)."""
    return bounds is _WHOLE.get(n)


def is_identity(order: np.ndarray, n: int) -> bool:
    """Whether the vector ``order`` is ``0, 1, ..., n-1``: one comparison pass, block by block against
    a fixed block of steps (no ``arange(n)`` is built: O(1) extra memory), stopping at the first
    block that differs; no pass for :func:`identity_vector`'s (immutable) object.  The common case of singleton bins in domain order needs
    none of :func:`is_permutation`'s counting."""
    if is_shared_identity(order, n):
        return True
    if order.shape != (n,) or n == 0:
        return False
    if order[0] != 0 or order[-1] != n - 1:   # most other orders fail here, in O(1)
        return False
    if n > 2 and (order[n // 2] != n // 2 or order[1] != 1):   # most of the rest here (e.g. grid blocks)
        return False
    for start in range(0, n, _BLOCK):
        block = order[start:start + _BLOCK]
        if not np.array_equal(block, _STEPS[:block.size] + start if start else _STEPS[:block.size]):
            return False
    return True


#: orders of at least this many bins are checked by the compiled bitmap pass (numba is imported by then)
_COMPILED_PERMUTATION = 1 << 16


def is_permutation(order: np.ndarray, n: int) -> bool:
    """Whether the int64 vector ``order`` lists every integer in ``range(n)`` exactly once.

    O(n), no sort and no counts: ``n`` entries, all in ``range(n)`` (the minimum and the maximum), that
    reach every position (one scatter into ``n`` booleans of positions seen) hold no value twice, by
    pigeonhole.  The seen flags are one byte per bin (an eighth of int64 counts), and the scatter is
    about twice as fast as ``bincount`` and its maximum (2^20 to 2^22 bins, measured)."""
    if is_identity(order, n):
        return True
    if n >= _COMPILED_PERMUTATION and order.dtype == np.int64 and order.ndim == 1:
        # a bitmap in one compiled pass (dphist._order_jit): about a third of the time of the byte scatter
        # below from 2^16 bins on, where a sorted partition's order is a cache miss per entry
        from ._order_jit import is_permutation_bits
        return bool(is_permutation_bits(order, n))
    # min and max by the ufuncs themselves (ndarray.min's Python-level wrapper is a measurable part at 2^14);
    # checked before the scatter, which would wrap a negative index
    if not (order.shape == (n,) and n > 0 and int(np.minimum.reduce(order)) >= 0
            and int(np.maximum.reduce(order)) < n):
        return False
    seen = np.zeros(n, dtype=bool)
    seen[order] = True
    return bool(np.logical_and.reduce(seen))


def are_strict_bounds(bounds: np.ndarray, n: int) -> bool:
    """Whether the int64 vector ``bounds`` runs strictly upwards from 0 to ``n`` (group boundaries)."""
    if bounds.ndim != 1 or bounds.size < 2 or int(bounds[0]) != 0 or int(bounds[-1]) != n:
        return False
    if bounds.size == n + 1:    # n + 1 strictly increasing integers from 0 to n are 0, 1, ..., n
        return is_identity(bounds, n + 1)
    return bool(np.all(bounds[1:] > bounds[:-1]))


def finite_vector(values, what: str) -> np.ndarray:
    """``values`` as a contiguous float vector: non-empty, 1-D, every entry finite; else
    :class:`InvalidParameter` naming ``what``."""
    x = np.ascontiguousarray(values, dtype=float)
    if x.ndim != 1 or x.size == 0:
        raise InvalidParameter(f"{what} must be a non-empty 1-D vector, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise InvalidParameter(f"{what} must be finite")
    return x
