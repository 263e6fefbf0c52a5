"""Noise sources: the one seam through which the kernel draws private randomness.

Every run has a *mode*, named in its Release, ledger and output files:

* **research** (a seed is given): :class:`SeededLaplace` draws floating-point
  Laplace noise and Gumbel-max choices from a seeded numpy Generator.  Runs
  are reproducible; the output can be rebuilt from the seed and floating-point
  Laplace is attackable (Mironov, CCS 2012), so a research release must never
  be published.
* **release** (no seed): :class:`ExactNoise` draws exact discrete noise with
  random bits from the operating system; nothing that could reproduce the
  noise is kept, printed or exported.

What a source must provide:

``laplace_mechanism(values, sensitivity, epsilon, integral=False, support=None)``
    ``values`` plus noise that makes the vector epsilon-DP when one record
    moves it by at most ``sensitivity`` in L1 and changes at most ``support``
    of its entries (default: all).
``exponential_mechanism(scores, sensitivity, epsilon, monotonic=False)``
    an index drawn with probability proportional to
    ``exp(epsilon * score / (2 * sensitivity))`` (``/ sensitivity`` if monotonic).
``laplace(scale, size)``
    raw float Laplace draws; research mode only (release sources refuse it,
    because raw float noise cannot be made exact after the fact).
``probe()`` (optional)
    a throwaway source of the same kind, seeded with 0, for the kernel's
    probes of user code on the public all-zero histogram (nothing drawn from
    it is published, and the run's own source is not touched).
``laplace_parts(sensitivity, epsilon, cuts)`` (optional)
    the noise of ``laplace_mechanism`` on ``cuts[-1]`` values as parts that
    threads draw at once, the same values and the generator left where one
    call leaves it (:mod:`dphist.kernel.streams`), or None; research mode's
    seeded source only.

Release mode's routes, and why each is epsilon-DP (the proofs behind :class:`ExactNoise`):

* *Integer queries with integer sensitivity* (counts, group sums, interval
  sums, sorted counts): ``values + Z`` with ``Z`` discrete Laplace of scale
  ``>= sensitivity / epsilon`` (CKS 2020, Thm 2.2's discrete analogue of the
  Laplace mechanism: P(z)/P(z + d) <= exp(|d| / scale) for integer d, so an
  integer L1 shift of at most Delta costs at most Delta / scale <= epsilon).
* *Real-valued queries* (weighted strategies, costs): the answers are rounded
  to a grid ``g = 2**(floor(log2 Delta) - 20)``, a power of two, so the
  rounding and the final ``g * k`` are exact in floating point.  One record
  moves each of at most ``support`` rounded answers by at most
  ``|shift| / g + 1`` grid steps, so the rounded vector has integer L1
  sensitivity ``ceil(Delta / g) + support`` in grid units; one more step per
  answer absorbs floating-point error in computing the answers (each below
  half a step while ``|answer| < 2**30 * Delta``).  The integer route above
  then applies, and mapping back by ``* g`` is post-processing.  Values beyond
  ``2**60`` steps are clamped to that bound (1-Lipschitz: sensitivities stand),
  never refused, so that no abort after a charge depends on the data.
* *Exponential mechanism*: scores rounded to the same grid, sensitivity
  widened by two steps as above; epsilon is rounded down to a dyadic rational
  and shrunk by 2**-20 relative, and each candidate's exponent
  ``gamma_i = epsilon' (S_max - S_i) / (c D)`` is rounded *down* to a multiple
  of 2**-24.  Rounding moves each log-probability by less than 2**-24, which
  the shrink of epsilon covers (the loss is at most 2 * 2**-24 <= 2**-20 * epsilon
  for epsilon >= 2**-3; smaller epsilons shrink by 2**-23 absolute instead).
  The draw is exact (:func:`dphist.kernel.exact.exponential_mechanism`).
"""
from __future__ import annotations

import math
import struct
import sys
from fractions import Fraction
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import InvalidParameter, PrivacyViolation
from ..partition import gather_run, scatter_run
from . import exact

MODES = ("research", "release")

#: grid step of release mode's real-valued route, relative to the sensitivity
GRID_BITS = 20


@runtime_checkable
class NoiseSource(Protocol):
    """What the kernel needs from a source of private randomness."""

    name: str  #: short name recorded in every release
    mode: str  #: "research" or "release"

    def laplace_mechanism(self, values: np.ndarray, sensitivity: float, epsilon: float, *,
                          integral: bool = False, support: int | None = None) -> np.ndarray: ...

    def exponential_mechanism(self, scores: np.ndarray, sensitivity: float, epsilon: float, *,
                              monotonic: bool = False) -> int: ...

    def laplace(self, scale, size: int) -> np.ndarray: ...


def check_mode(mode) -> str:
    if mode not in MODES:
        raise InvalidParameter(f"unknown mode {mode!r}; the modes are 'research' (seeded, reproducible, not for "
                               "publication) and 'release' (exact noise from the operating system)")
    return mode


class SeededLaplace:
    """Research mode: float Laplace noise from a seeded :class:`numpy.random.Generator`."""

    name = "seeded-float-laplace"
    mode = "research"

    def __init__(self, rng: np.random.Generator):
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"SeededLaplace needs a numpy.random.Generator, got {type(rng).__name__}")
        self.rng = rng

    def laplace(self, scale, size):
        if type(self.rng) is np.random.Generator and np.ndim(scale) == 0 and 0.0 <= scale < math.inf:
            shape = (size,) if isinstance(size, (int, np.integer)) else size
            if isinstance(shape, tuple) and _compiled(math.prod(shape)):
                return _compiled_laplace(self.rng, float(scale), shape)
        return self.rng.laplace(0.0, scale, size=size)

    def probe(self) -> "SeededLaplace":
        return _ProbeLaplace()

    def laplace_mechanism(self, values, sensitivity, epsilon, *, integral=False, support=None):
        if type(values) is not np.ndarray:   # an ndarray (the kernel's answers) as it is: asarray's identity
            values = np.asarray(values)
        if values.dtype.kind not in "iuf":
            values = np.asarray(values, dtype=float)
        scale = float(sensitivity) / float(epsilon)
        if type(self.rng) is np.random.Generator and 0.0 <= scale < math.inf and _compiled(values.size):
            return _compiled_laplace(self.rng, scale, values.shape, values)
        noisy = self.rng.laplace(0.0, scale, size=values.shape)
        noisy += values      # noise + value in place: the floats of value + noise (addition commutes exactly)
        return noisy

    def laplace_mechanism_taken(self, values, index, sensitivity, epsilon, *, integral=False, support=None):
        """:meth:`laplace_mechanism` of ``values[index]`` (int64 values, a checked int64 index), the same floats
        and the same state of ``rng``: on the compiled route ``values[index]`` is gathered a block at a time
        into the draws' own buffer (no gathered copy of N values beside the noise: memory)."""
        scale = float(sensitivity) / float(epsilon)
        if (type(self.rng) is np.random.Generator and 0.0 <= scale < math.inf and values.dtype == np.int64
                and index.ndim == 1 and _compiled(index.size)):
            return _compiled_laplace_taken(self.rng, scale, values, index)
        return self.laplace_mechanism(values[index], sensitivity, epsilon, integral=integral, support=support)

    def laplace_mechanism_spread(self, values, index, sensitivity, epsilon, *, consume=False, integral=False,
                                 support=None):
        """``out`` with ``out[index] = laplace_mechanism(values[index])``: the noisy values of the bins listed in
        ``index`` (a checked permutation) put back in domain order, the same floats and the same state of
        ``rng``.  On the compiled route the draws are added to the bins' values where the bins are
        (``draw + value``: a block of bins gathered, ``laplace_add_into``, put back), uniforms drawn a block
        at a time; with ``consume`` (int64 ``values`` the caller hands over) in the values' own memory: no array
        of N floats beside them.  A uniform equal to 0 stops the loop: the values before it are numpy's (the
        same stream), and numpy's ``laplace`` draws the rest from just after that uniform, as its one call
        does."""
        scale = float(sensitivity) / float(epsilon)
        if (type(self.rng) is np.random.Generator and 0.0 <= scale < math.inf and values.dtype == np.int64
                and index.ndim == 1 and _compiled(index.size)):
            return _compiled_laplace_spread(self.rng, scale, values, index, consume)
        noisy = self.laplace_mechanism(values[index], sensitivity, epsilon, integral=integral, support=support)
        out = np.empty_like(noisy)
        out[index] = noisy
        return out

    def exponential_mechanism(self, scores, sensitivity, epsilon, *, monotonic=False):
        # Gumbel-max: argmax(c * s + Gumbel) is distributed as the exponential mechanism.
        factor = 1.0 if monotonic else 2.0
        logits = float(epsilon) / (factor * float(sensitivity)) * np.asarray(scores, dtype=float)
        return int(np.argmax(logits + self.rng.gumbel(size=logits.shape)))

    def laplace_parts(self, sensitivity, epsilon, cuts):
        """The noise of ``laplace_mechanism`` on ``cuts[-1]`` values, cut at ``cuts`` so that threads can
        draw the parts at once (:class:`dphist.kernel.streams.LaplaceParts`: the same values, the generator
        left where that call leaves it), or None when this generator's stream cannot be cut."""
        from .streams import LaplaceParts, splittable
        if not splittable(self.rng):
            return None
        spare = self.__dict__.setdefault("_spare_bit_generators", [])
        return LaplaceParts(self.rng, float(sensitivity) / float(epsilon), cuts, spare)


#: research-mode calls of at least this many draws use the compiled sampler (:mod:`._laplace_jit`) once
#: numba is imported; below it numpy's own ``Generator.laplace`` (the same values)
COMPILED_DRAWS = 4096
#: from this many draws the compiled sampler is used even if numba must be imported for it (once per
#: process, a few tenths of a second: research mode runs many times in one process; release mode never)
COMPILED_IMPORT_DRAWS = 32768
#: the loops of :mod:`._laplace_jit` after their check on this machine, or False (not the same bits:
#: numpy's sampler is used); None until the first call that could use them
_SAMPLER = None


def _compiled(size: int) -> bool:
    """Whether a call of ``size`` draws uses the compiled sampler (see :data:`COMPILED_DRAWS`); the first
    call that may use it imports and checks it (``dphist warm`` compiles it with
    ``_compiled(COMPILED_IMPORT_DRAWS)``)."""
    global _SAMPLER
    if size < COMPILED_DRAWS or _SAMPLER is False:
        return False
    if _SAMPLER is None:
        if size < COMPILED_IMPORT_DRAWS and "numba" not in sys.modules:
            return False
        _SAMPLER = _checked_sampler()
    return _SAMPLER is not False


def _checked_sampler():
    """The compiled loops if they give numpy's ``Generator.laplace`` bit for bit here, else False.

    Checked once per process on 8,192 draws from a fixed stream at four scales, and on the uniforms at
    the branch's edges (the smallest, 0.5 and the largest below 1): a different ``log`` (a vector math
    library, another C library) shows in a fraction of the values, so a rare difference is not
    missed by chance.  Draws of a run are then the same whichever sampler makes them."""
    try:
        from . import _laplace_jit
    except ImportError:    # pragma: no cover - numba is a dependency
        return False
    edges = np.array([2.0 ** -53, 0.25, 0.5 - 2.0 ** -54, 0.5, 0.5 + 2.0 ** -53, 0.75, 1.0 - 2.0 ** -53])
    for scale in (1.0, 0.37, 3.0e5, 2.0 ** -30):
        expected = np.random.Generator(np.random.PCG64(20261127)).laplace(0.0, scale, 8192)
        u = np.random.Generator(np.random.PCG64(20261127)).random(8192)
        got = np.empty(u.size)
        if _laplace_jit.laplace_into(u, scale, got) or got.tobytes() != expected.tobytes():
            return False
        for values in (np.arange(u.size, dtype=np.int64), np.linspace(-3.0, 1e6, u.size)):
            _laplace_jit.laplace_add_into(u, scale, values, got)
            if got.tobytes() != (expected + values).tobytes():
                return False
        # the edges through numpy's C expression on Python floats (math.log is the C library's log)
        _laplace_jit.laplace_into(edges, scale, got[:edges.size])
        for U, g in zip(edges.tolist(), got[:edges.size].tolist()):
            want = 0.0 - scale * math.log(2.0 - U - U) if U >= 0.5 else 0.0 + scale * math.log(U + U)
            if struct.pack("<d", want) != struct.pack("<d", g):
                return False
    return _laplace_jit


def _compiled_laplace(rng: np.random.Generator, scale: float, shape: tuple, values=None) -> np.ndarray:
    """``rng.laplace(0.0, scale, shape)`` (plus ``values``), the same floats and the same state of ``rng``
    after the call, from ``rng.random`` and the compiled loops: a fresh array (the uniforms' own buffer)."""
    state = rng.bit_generator.state       # a uniform equal to 0 (numpy redraws it): drawn again by numpy
    out = rng.random(shape)
    flat = out.reshape(-1)
    if values is None:
        zeros = _SAMPLER.laplace_into(flat, scale, flat)
    elif values.dtype in (np.int64, np.float64):
        zeros = _SAMPLER.laplace_add_into(flat, scale, np.ascontiguousarray(values).reshape(-1), flat)
    else:
        zeros = _SAMPLER.laplace_into(flat, scale, flat)
        out += values
    if zeros:
        rng.bit_generator.state = state
        out = rng.laplace(0.0, scale, size=shape)
        if values is not None:
            out += values
    return out


#: values gathered per block by :func:`_compiled_laplace_taken` (half a megabyte of int64)
_TAKE_BLOCK = 1 << 16


def _compiled_laplace_taken(rng: np.random.Generator, scale: float, values: np.ndarray,
                            index: np.ndarray) -> np.ndarray:
    """:func:`_compiled_laplace` of ``values[index]``: the uniforms drawn at once, then each block's draws
    turned into Laplace noise plus ``values[index[block]]``, gathered into one reused buffer by the compiled
    gather (:func:`dphist.partition.gather_run`); ``laplace_add_into`` works element by element, so the blocks
    give the floats of one call on the whole gathered vector."""
    state = rng.bit_generator.state
    out = rng.random(index.shape)
    zeros = 0
    gathered = np.empty(min(_TAKE_BLOCK, index.size), dtype=values.dtype)
    for lo in range(0, index.size, _TAKE_BLOCK):
        block = out[lo:lo + _TAKE_BLOCK]
        zeros += _SAMPLER.laplace_add_into(block, scale, gather_run(values, index, lo, gathered[:block.size]), block)
    if zeros:                    # a uniform equal to 0 (numpy redraws it): drawn again by numpy, as there
        rng.bit_generator.state = state
        out = rng.laplace(0.0, scale, size=index.shape)
        out += values[index]
    return out


def _compiled_laplace_spread(rng: np.random.Generator, scale: float, values: np.ndarray, index: np.ndarray,
                             consume: bool) -> np.ndarray:
    """:meth:`SeededLaplace.laplace_mechanism_spread` on the compiled route (see there).  Each block of bins
    is gathered from the int64 values, turned into ``draw + value`` and put back as floats, the gather and
    the scatter by the compiled loops (:func:`dphist.partition.gather_run`, ``scatter_run``) through reused
    buffers: with ``consume`` into the values' own memory viewed as float64 (the index is a permutation,
    so every bin is read as an integer before its float is written)."""
    n = index.size
    out = values.view(np.float64) if consume and values.flags.c_contiguous else np.empty(n)
    size = min(_TAKE_BLOCK, n)
    uniforms, gathered, noisy = np.empty(size), np.empty(size, dtype=values.dtype), np.empty(size)
    for lo in range(0, n, _TAKE_BLOCK):
        state = rng.bit_generator.state
        m = min(_TAKE_BLOCK, n - lo)
        u, block = uniforms[:m], noisy[:m]
        rng.random(out=u)
        if _SAMPLER.laplace_add_into(u, scale, gather_run(values, index, lo, gathered[:m]), block):
            # a uniform equal to 0: numpy redraws it, and the rest of its stream shifts
            first = int(np.flatnonzero(u == 0.0)[0])
            scatter_run(block[:first], index, lo, out)
            rng.bit_generator.state = state
            rng.random(first + 1)
            rest = index[lo + first:]
            out[rest] = rng.laplace(0.0, scale, size=rest.size) + values[rest]
            break
        scatter_run(block, index, lo, out)
    return out


#: the most draws a probe source makes per call; a larger call repeats them (see :class:`_ProbeLaplace`)
PROBE_DRAWS = 4096


class _TiledDraws:
    """The Generator methods :class:`SeededLaplace` calls, answered from the first :data:`PROBE_DRAWS`
    draws of a Generator seeded with 0, repeated cyclically to the size asked for."""

    _draws: tuple | None = None   # (laplace, gumbel), read-only, drawn once per process

    def __init__(self):
        # a probe runs before every charge: drawing 2 x 4,096 values each time cost more than a small run
        if _TiledDraws._draws is None:
            rng = np.random.default_rng(0)
            laplace, gumbel = rng.laplace(size=PROBE_DRAWS), rng.gumbel(size=PROBE_DRAWS)
            laplace.setflags(write=False)
            gumbel.setflags(write=False)
            _TiledDraws._draws = (laplace, gumbel)
        self._laplace, self._gumbel = _TiledDraws._draws

    def laplace(self, loc=0.0, scale=1.0, size=None):
        if isinstance(size, tuple) and len(size) == 1 and 0 <= size[0] <= PROBE_DRAWS:
            out = self._laplace[:size[0]] * scale    # what np.resize's copy then *= scale gives, in one step
        else:
            out = np.resize(self._laplace, size)
            out *= scale
        out += loc
        return out

    def gumbel(self, size=None):
        shape = (size,) if isinstance(size, (int, np.integer)) else size
        if isinstance(shape, tuple) and len(shape) == 1 and 0 <= shape[0] <= PROBE_DRAWS:
            return self._gumbel[:shape[0]].copy()     # np.resize's copy of the first values, without its reshapes
        return np.resize(self._gumbel, size)


class _ProbeLaplace(SeededLaplace):
    """Research mode's probe source (``SeededLaplace.probe()``): float Laplace noise whose draws repeat
    with period :data:`PROBE_DRAWS`.  The kernel's probes run user code on the public all-zero histogram
    to check what it returns (structure, finiteness) before anything is charged; nothing drawn here is
    published, so the probe need not pay for a full generator stream (at 2^20 bins that was the cost
    of the mechanism's own noise a second time)."""

    def __init__(self):
        self.rng = _TiledDraws()


def _grid(sensitivity: float) -> float:
    return math.ldexp(1.0, math.floor(math.log2(sensitivity)) - GRID_BITS)


#: grid values are clamped to +- this many steps (the exact samplers' integers stay below 2**62)
GRID_CAP = float(2 ** 60)


def _grid_units(values: np.ndarray, g: float) -> np.ndarray:
    """``values / g`` rounded to integers, clamped to ``+-GRID_CAP``.

    Clamping each coordinate to a fixed interval is 1-Lipschitz, so it keeps every sensitivity:
    an out-of-range value is published as the bound instead of stopping the run, which would
    tell whether the data produced it.  (Kernel primitives cannot reach the bound: counts are
    clamped at 2**40 and segmentation costs at 2**40 sensitivities.)
    """
    return np.rint(np.clip(values / g, -GRID_CAP, GRID_CAP)).astype(np.int64)


class ExactNoise:
    """Exact discrete samplers (Canonne, Kamath & Steinke 2020) driven by random words.

    With the default :class:`~dphist.kernel.exact.SystemRandomWords` (the
    operating system's CSPRNG) this is release mode.  Given a seeded
    :class:`~dphist.kernel.exact.GeneratorWords` it runs in research mode:
    exact and reproducible (for tests and audits of the exact samplers).  The mode picks the discrete
    Laplace method (:attr:`method`); the audit's seeded release-mode source draws with release mode's.
    """

    def __init__(self, words: exact.RandomWords | None = None):
        self.words = words if words is not None else exact.SystemRandomWords()
        self.mode = "release" if isinstance(self.words, exact.SystemRandomWords) else "research"
        self.name = f"exact-discrete-laplace[{self.words.name}]"

    def probe(self) -> "ExactNoise":
        return _ProbeExactNoise(exact.GeneratorWords(np.random.default_rng(0)))

    def laplace(self, scale, size):
        raise PrivacyViolation("raw floating-point Laplace noise is not available in release mode; "
                               "use noise.laplace_mechanism(values, sensitivity, epsilon)")

    def _integer_noise(self, size: int, sensitivity: Fraction, epsilon: float) -> np.ndarray:
        t, s = exact.dyadic_scale_at_least(sensitivity / Fraction(epsilon))
        return exact.discrete_laplace(t, s, size, self.words, method=self.method)

    @property
    def method(self) -> str:
        """The discrete Laplace method (:func:`dphist.kernel.exact.discrete_laplace`): ``"split"`` in release
        mode (its cost barely depends on the scale), ``"cks"`` in research mode (seeded runs with exact noise
        keep their recorded releases).  Both are exact samplers of the same law."""
        return "split" if self.mode == "release" else "cks"

    def laplace_mechanism(self, values, sensitivity, epsilon, *, integral=False, support=None):
        values = np.asarray(values)
        sens = float(sensitivity)
        if integral and sens == round(sens) and values.dtype.kind in "iu":
            noisy = self._integer_noise(values.size, Fraction(int(sens)), epsilon)   # a fresh int64 array
            np.add(noisy, values.astype(np.int64, copy=False).reshape(-1), out=noisy)   # value + noise, exact
            return noisy.astype(float).reshape(values.shape)
        values = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(values)):
            raise PrivacyViolation("a measured value is not finite; the run is stopped")
        g = _grid(sens)
        k = _grid_units(values, g)
        support = values.size if support is None else max(int(support), 1)
        grid_sens = Fraction(math.ceil(sens / g)) + 2 * support
        noisy = k + self._integer_noise(values.size, grid_sens, epsilon)
        return (noisy.astype(float) * g).reshape(values.shape)

    def exponential_mechanism(self, scores, sensitivity, epsilon, *, monotonic=False):
        scores = np.asarray(scores, dtype=float)
        sens = float(sensitivity)
        g = _grid(sens)
        k = _grid_units(scores, g)
        d = math.ceil(sens / g) + 2
        factor = 1 if monotonic else 2
        eps = float(epsilon)
        eps_shrunk = eps * (1 - 2.0 ** -20) if eps >= 0.125 else eps - 2.0 ** -23
        if eps_shrunk <= 0:
            raise InvalidParameter(f"epsilon {eps} is too small for the exact exponential mechanism")
        e = Fraction(eps_shrunk)
        # gamma_i * 2**24 = (S_max - S_i) * e / (factor d) * 2**24, rounded down, in exact integers
        diff = (int(k.max()) - k).astype(object)
        num = (diff * (e.numerator << 24)) // (e.denominator * factor * d)
        gamma = np.array([min(int(v), exact.MAX_INT) for v in num], dtype=np.int64)
        return exact.exponential_mechanism(gamma, 1 << 24, self.words)


class _ProbeExactNoise(ExactNoise):
    """Release mode's probe source (``ExactNoise.probe()``): the exact routes (integer, grid, the refusal
    of raw floats) with at most :data:`PROBE_DRAWS` discrete Laplace draws per call from seeded words,
    repeated cyclically to the size asked for (never published; see :class:`_ProbeLaplace`)."""

    def _integer_noise(self, size: int, sensitivity: Fraction, epsilon: float) -> np.ndarray:
        return np.resize(super()._integer_noise(min(size, PROBE_DRAWS), sensitivity, epsilon), size)
