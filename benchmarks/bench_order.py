"""The building blocks under the sorted presets at large N: passes through an order and the kernel's copy of
the counts, each against the numpy route it replaced (paired cases, alternated in one process).

* gather of N float64 values through a random permutation, 2^16 positions at a time into one reused
  buffer: ``dphist.partition.gather_run`` (a compiled loop) against numpy's fancy indexing of the same
  block (target: at least as fast);
* the permutation check of a random order (``dphist.validation.is_permutation``: a bitmap set in one
  compiled pass from 2^16 bins) against the byte scatter it replaced (``seen[order] = True`` and its
  reductions; target: at least as fast);
* the kernel's checked copy of N int64 counts (``CheckedCounts``: up to 2^22 counts one whole copy, then
  one unsigned reduction over it) against the copy in 256 KiB blocks, each reduced while in cache, that it
  replaced there (target: at least as fast at 2^16 and 2^20; above 2^22 ``CheckedCounts`` copies in those
  blocks itself, so there is nothing to compare).

The speed of a block copy on this machine depends on where its source and destination lie (glibc's
``memcpy`` copies 256 KiB by ``rep movsb``): the blocked copy reads 1x-7x the whole one between runs.
"""
from __future__ import annotations

import numpy as np

from dphist.kernel.private import CheckedCounts
from dphist.partition import gather_run
from dphist.validation import is_permutation

BLOCK = 1 << 16
_SIGN_BLOCK = 1 << 15


def _gather_setup(n):
    def setup():
        rng = np.random.default_rng(1)
        return rng.random(n), rng.permutation(n), np.empty(BLOCK)
    return setup


def _compiled_gather(values, order, buffer):
    for lo in range(0, order.size, BLOCK):
        gather_run(values, order, lo, buffer[:min(BLOCK, order.size - lo)])


def _fancy_gather(values, order, buffer):
    for lo in range(0, order.size, BLOCK):
        buffer[:min(BLOCK, order.size - lo)] = values[order[lo:lo + BLOCK]]


def _order_setup(n):
    return lambda: (np.random.default_rng(2).permutation(n), n)


def _byte_scatter(order, n):
    """The permutation check before the bitmap: range by two reductions, then one byte per bin scattered."""
    if not (int(np.minimum.reduce(order)) >= 0 and int(np.maximum.reduce(order)) < n):
        return False
    seen = np.zeros(n, dtype=bool)
    seen[order] = True
    return bool(np.logical_and.reduce(seen))


def _counts_setup(n):
    return lambda: (np.random.default_rng(3).integers(0, 1000, n),)


def _blocked_copy(counts):
    """The kernel's copy before: 256 KiB blocks copied by ``copyto``, each block's bits reduced as unsigned."""
    private = np.empty(counts.size, dtype=np.int64)
    bits = private.view(np.uint64)
    largest = 0
    for a in range(0, counts.size, _SIGN_BLOCK):
        np.copyto(private[a:a + _SIGN_BLOCK], counts[a:a + _SIGN_BLOCK])
        largest = max(largest, int(np.maximum.reduce(bits[a:a + _SIGN_BLOCK])))
    return private


CASES = [
    dict(name=f"gather of N = 2^{k} floats through a random order, 2^16 at a time: compiled / numpy fancy indexing",
         setup=_gather_setup(1 << k), run=_compiled_gather, reference=_fancy_gather, factor=1.0,
         repeat=5 if k < 24 else 3)
    for k in (20, 24)
] + [
    dict(name=f"permutation check of a random order, N = 2^{k}: bitmap / byte scatter",
         setup=_order_setup(1 << k), run=is_permutation, reference=_byte_scatter, factor=1.0,
         repeat=7 if k < 24 else 3)
    for k in (16, 20, 24)
] + [
    dict(name=f"kernel's checked copy of N = 2^{k} int64 counts: CheckedCounts / copy in 256 KiB blocks",
         setup=_counts_setup(1 << k), run=CheckedCounts, reference=_blocked_copy, factor=1.0, repeat=15)
    for k in (16, 20)
]
