"""One seeded stream of float Laplace draws cut into consecutive parts that threads draw at once.

``Generator.laplace(0.0, scale, size=total)`` on a ``PCG64`` bit generator reads one 64-bit word per
value, in order (numpy's ``random_laplace``: ``U = next_double()``; ``U == 0`` is rejected and the
next word read, probability 2^-53 per value), and the value depends on the words it reads alone.  So
the values ``[lo, hi)`` of that call are what a copy of the bit generator *advanced* by ``lo`` words
(``PCG64.advance``: the same stream, moved on; ``PCG64.jumped`` is another stream) draws, as long as
no value before ``lo`` read a second word.  :class:`LaplaceParts` draws every part from such a copy
on the threads of :func:`dphist.segmentation.parallel.run_all` (numpy releases the GIL while it
fills the array), then checks the assumption exactly: part ``i`` ended on the word where part
``i + 1`` started.  Where it did not (a rejected zero), the parts from ``i + 1`` on are drawn again,
in order, from part ``i``'s copy, which is where the serial call stood.  The caller's generator is
then moved to the end of the stream.  Values, their order and the generator's state afterwards are
those of the single serial call, bit for bit; the number of threads changes only who draws what.

Research mode only (:class:`dphist.kernel.noise.SeededLaplace`): release mode draws exact noise
from the operating system, which has no stream to cut.
"""
from __future__ import annotations

import numpy as np


def splittable(rng) -> bool:
    """Whether ``rng``'s draws can be cut into parts: a :class:`numpy.random.Generator` on exactly
    :class:`numpy.random.PCG64` (one word per double; ``advance`` moves along the same stream)."""
    return isinstance(rng, np.random.Generator) and type(rng.bit_generator) is np.random.PCG64


class LaplaceParts:
    """``rng.laplace(0.0, scale, size=cuts[-1])`` cut at ``cuts`` (``0 = cuts[0] < ... < cuts[-1]``),
    each part handed to ``work`` as it is drawn (module docstring).  ``rng`` must be
    :func:`splittable`."""

    def __init__(self, rng: np.random.Generator, scale: float, cuts, spare: list | None = None):
        self.rng, self.scale = rng, scale
        self.cuts = [int(c) for c in cuts]
        if self.cuts[0] != 0 or any(b <= a for a, b in zip(self.cuts, self.cuts[1:])):
            raise ValueError("cuts must increase strictly from 0")
        # bit generators to overwrite (a new PCG64 costs an entropy read, 5x setting a state): the caller's
        # list, kept between calls by one source and never used by two calls at once
        self.spare = [] if spare is None else spare

    def _copies(self):
        state = self.rng.bit_generator.state
        while len(self.spare) < len(self.cuts) - 1:
            self.spare.append(np.random.PCG64(0))
        copies, starts = [], []
        for lo, bg in zip(self.cuts[:-1], self.spare):
            bg.state = state
            bg.advance(lo)
            starts.append(bg.state["state"]["state"])
            copies.append(np.random.Generator(bg))
        return copies, starts

    def prepare(self) -> None:
        """Set up the parts' bit generators for :meth:`fill` (the caller's generator stays where it is)."""
        from . import noise
        self._parts = self._copies()
        # the compiled loops give numpy's values from the uniforms (checked once per process), else numpy's own
        self._sampler = noise._SAMPLER if noise._compiled(noise.COMPILED_IMPORT_DRAWS) else None
        self._zeros = [0] * (len(self.cuts) - 1)

    def fill(self, i: int, out: np.ndarray) -> None:
        """Part ``i``'s values into ``out`` (a contiguous float64 array of its length), on any thread, after
        :meth:`prepare`; the values are final once :meth:`settle` has run."""
        copy = self._parts[0][i]
        if self._sampler is not None:      # the uniforms drawn into out, each turned into its Laplace value
            copy.random(out=out)
            self._zeros[i] = self._sampler.laplace_into(out, self.scale, out)
        else:
            out[:] = copy.laplace(0.0, self.scale, size=out.size)

    def settle(self, out: np.ndarray) -> None:
        """After every part's :meth:`fill` into ``out[cuts[i]:cuts[i + 1]]``: the values of the serial call,
        and the caller's generator where that call leaves it.  A uniform equal to 0 (numpy rejects it and
        reads the next word, probability 2^-53 a value) shifts every later value: the whole stream is then
        drawn again by numpy from the caller's generator, which has not moved."""
        copies, starts = self._parts
        last = copies[-1]
        if self._sampler is not None:
            if any(self._zeros):
                out[:] = self.rng.laplace(0.0, self.scale, size=out.size)
                return
        else:
            for i in range(len(copies) - 1):
                if copies[i].bit_generator.state["state"]["state"] != starts[i + 1]:
                    out[self.cuts[i + 1]:] = copies[i].laplace(0.0, self.scale, size=out.size - self.cuts[i + 1])
                    last = copies[i]
                    break
        self._moved_to(last)

    def _moved_to(self, last) -> None:
        state = self.rng.bit_generator.state       # keeps the caller's buffered 32-bit half word
        state["state"]["state"] = last.bit_generator.state["state"]["state"]
        self.rng.bit_generator.state = state

    def run(self, work, threads: int) -> None:
        """``work(i, lo, hi, draws)`` for every part ``i`` (``draws``: the values ``[lo, hi)`` of the
        serial call, a new array ``work`` may keep or change), on up to ``threads`` threads; a part
        redrawn after a rejected zero is handed to ``work`` again, with its true values, before this
        returns.  Afterwards ``rng`` stands where the serial call leaves it."""
        from ..segmentation.parallel import run_all
        copies, starts = self._copies()
        cuts, scale = self.cuts, self.scale

        def part(i):
            work(i, cuts[i], cuts[i + 1], copies[i].laplace(0.0, scale, size=cuts[i + 1] - cuts[i]))

        run_all([lambda i=i: part(i) for i in range(len(copies))], threads)
        last = copies[-1]
        for i in range(len(copies) - 1):
            if copies[i].bit_generator.state["state"]["state"] != starts[i + 1]:
                # part i read more words than values: every later part started too early; continue from part i
                for j in range(i + 1, len(copies)):
                    work(j, cuts[j], cuts[j + 1], copies[i].laplace(0.0, scale, size=cuts[j + 1] - cuts[j]))
                last = copies[i]
                break
        self._moved_to(last)
