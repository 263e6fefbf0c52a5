"""Exact samplers for release mode: discrete Laplace and the exponential mechanism.

Floating-point Laplace noise leaks (Mironov, CCS 2012): at epsilon = 1 most
float outputs for a count of 0 are impossible under a count of 1.  The
samplers here draw from the exact distributions using only random *bits*,
following Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential
Privacy", NeurIPS 2020 (CKS):

* Bernoulli(p) for a rational p = a/b compares random bits with the binary
  expansion of a/b and stops at the first difference (2 bits expected);
* Bernoulli(exp(-gamma)) for rational gamma is CKS Algorithm 1;
* :func:`discrete_laplace` - P(z) proportional to exp(-|z| / scale) on the
  integers, for a rational scale ``t / s``, is CKS Algorithm 2;
* :func:`exponential_mechanism` - index i with probability proportional to
  exp(-gamma_i), by rejection from the uniform proposal: accept i with
  probability exp(-gamma_i); the best candidate (gamma 0) is always accepted,
  so at most ``len(gamma)`` proposals are expected.

CKS's loops are sequential (a geometric number of rounds per draw), so they are
compiled with numba; about 8 random bytes are consumed per discrete Laplace draw.
A call of a few thousand draws made before numba is imported runs the same loop
interpreted (:mod:`._exact_loop`, one source for both; the same bits read, the same
draws): importing numba and loading its cache would take longer than the draws.
A draw is a function of the bits it reads, so a large call first tabulates, per
scale, the draw for every pattern of the next 16 bits (by running the sampler on
it; :func:`_draw_table`) and looks up the draws that read no more: the same bits
are read and the same values returned as by the loops, only faster.

Randomness: a :class:`RandomWords` source hands out uniform 64-bit words.
:class:`SystemRandomWords` reads the operating system's CSPRNG (``os.urandom``)
and is release mode's only source; :class:`GeneratorWords` wraps a seeded numpy
Generator so that tests can check the samplers' exactness reproducibly.

Exactness across buffer refills: the compiled sampler works on a finite buffer
of words.  When a draw runs out of bits, the sampler stops *at the start of
that draw*; the caller appends fresh words to the unread tail and the draw is
redone from the same bits.  Every draw therefore sees one unbounded stream of
independent bits, exactly as the algorithms assume; nothing is discarded.

Scales are rational.  :func:`dyadic_scale_at_least` rounds a real scale *up*
to a rational ``t / s`` with relative excess below 2^-12: more noise than asked,
never less, so the requested privacy guarantee holds.
"""
from __future__ import annotations

import math
import os
import sys
from fractions import Fraction
from functools import lru_cache

import numpy as np

from . import _exact_loop

#: largest integer the compiled samplers handle in a numerator or denominator
MAX_INT = 1 << 62
#: largest numerator t of a discrete Laplace scale t / s: the loop's integers (t k, u + t v) then stay in
#: int64 except with probability below 2^-183 per draw (reported, never a wrong draw:
#: :data:`._exact_loop.INT_LIMIT`).  Scale 2^56 is epsilon about 1.4e-17 at sensitivity 1.
DISCRETE_LAPLACE_MAX_T = 1 << 56


class RandomWords:
    """Uniform, independent 64-bit words: the only randomness the exact samplers use."""

    name = "abstract"

    def words(self, count: int) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError


class SystemRandomWords(RandomWords):
    """Words from the operating system's CSPRNG (``os.urandom``); no state is kept."""

    name = "os-urandom"

    def words(self, count: int) -> np.ndarray:
        # a writable array (over a bytearray), as the refilled buffers and GeneratorWords' words are: the
        # compiled sampler then has one signature, not a second compile for read-only words
        return np.frombuffer(bytearray(os.urandom(8 * int(count))), dtype=np.uint64)


class GeneratorWords(RandomWords):
    """Words from a seeded numpy Generator: reproducible, for tests and research only."""

    name = "numpy-generator"

    def __init__(self, rng: np.random.Generator):
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"GeneratorWords needs a numpy.random.Generator, got {type(rng).__name__}")
        self.rng = rng

    def words(self, count: int) -> np.ndarray:
        return self.rng.integers(0, np.iinfo(np.uint64).max, size=int(count), dtype=np.uint64,
                                 endpoint=True)


def dyadic_scale_at_least(scale) -> tuple[int, int]:
    """``(t, s)`` with ``t / s >= scale`` and ``t / s - scale <= 2**-12 * scale``: the cheapest such.

    A small exact representation is tried first (``s <= 64`` with ``t / s``
    within 2**-20 of the scale, as for epsilon = 1, 0.1, 0.5, 0.01 whose float
    scales sit just below 1, 10, 2, 100): a small ``t`` means fewer random bits
    per draw.  Otherwise ``s = 2**k`` with ``t`` about 2**12 (relative excess
    below 2**-12, i.e. at most 0.025 % more noise).  ``scale`` may be a float or a :class:`fractions.Fraction`;
    floats are exact binary rationals, so the rounding up happens here only.
    """
    return _scale_fraction(Fraction(scale))


@lru_cache(maxsize=256)
def _scale_fraction(q: Fraction) -> tuple[int, int]:
    if q <= 0:
        raise ValueError(f"scale must be positive, got {q}")
    for s in range(1, 65):
        t = math.ceil(q * s)
        if (Fraction(t, s) - q) <= q * Fraction(1, 1 << 20):
            break
    else:
        k = max(0, 12 - math.floor(math.log2(q)))
        s = 1 << k
        t = math.ceil(q * s)
    if t > DISCRETE_LAPLACE_MAX_T:
        from ..errors import InvalidParameter   # a ValueError: epsilon too small for the exact samplers
        raise InvalidParameter(f"Laplace scale {float(q):.3g} is too large for the exact sampler "
                               f"(epsilon too small: the scale's numerator must be at most 2**56)")
    return t, s


def _exp_minus_one_bits(nbits: int = 1024) -> np.ndarray:
    """The first ``nbits`` binary digits of exp(-1) after the point, most significant first, in uint64 words.

    From the alternating series sum (-1)^k / k!: its partial sums bracket exp(-1), and
    the bracket after 300 terms (width 1/300! < 2^-2000) fixes every one of the digits.
    """
    lo = hi = Fraction(0)
    term = Fraction(1)
    total = Fraction(0)
    for k in range(0, 301):
        if k:
            term /= k
        total += term if k % 2 == 0 else -term
        lo, hi = (total, hi) if k % 2 else (lo, total)
    lo, hi = min(lo, hi), max(lo, hi)
    digits_lo, digits_hi = (lo.numerator << nbits) // lo.denominator, (hi.numerator << nbits) // hi.denominator
    if digits_lo != digits_hi:
        raise ArithmeticError("exp(-1) bracket too wide for the requested digits")
    out = np.empty(nbits // 64, dtype=np.uint64)
    for i in range(out.size):
        out[i] = (digits_lo >> (nbits - 64 * (i + 1))) & ((1 << 64) - 1)
    return out


_E1_BITS = _exp_minus_one_bits()


# ------------------------------------------------------------ compiled core
def _compiled():
    """The numba kernels (compiled once, cached on disk); imported on first use."""
    from . import _exact_jit
    return _exact_jit


class _Stream:
    """A buffer of words with the exact refill rule (unread tail kept, fresh words appended)."""

    def __init__(self, source: RandomWords, expected_words: int):
        self.source = source
        self.words = source.words(max(64, int(expected_words)))
        self.state = np.zeros(1, dtype=np.int64)

    def refill(self, extra_words: int) -> None:
        first = int(self.state[0]) >> 6
        self.words = np.concatenate((self.words[first:], self.source.words(max(64, int(extra_words)))))
        self.state[0] -= first * 64


#: bits of the draw table (:func:`_draw_table`), and the fewest draws of one call that use it
TABLE_BITS = 16
TABLE_MIN_DRAWS = 1 << 15
#: a table is kept when at least this fraction of draws is in it (a draw reads at most TABLE_BITS bits)
TABLE_MIN_HIT = 0.25
_NO_TABLE = np.zeros(0, dtype=np.int32)


@lru_cache(maxsize=32)
def _draw_table(t: int, s: int) -> np.ndarray:
    """The sampler's draws for every pattern of the next :data:`TABLE_BITS` bits (``_exact_jit.draw_table``),
    or an empty array when fewer than :data:`TABLE_MIN_HIT` of the patterns complete a draw (large scales,
    whose uniform U alone reads more bits).  A lookup returns what the loop returns on the same bits, so
    the table changes the speed only: not the bits read, not the draws, not the distribution."""
    table = _compiled().draw_table(t, s, _E1_BITS, TABLE_BITS)
    if np.count_nonzero(table) < TABLE_MIN_HIT * table.size:
        return _NO_TABLE
    table.setflags(write=False)
    return table


#: a call of at most this many draws runs the sampler's loop interpreted while numba is not imported (the
#: same bits read, the same draws; 4,096 draws take 0.04-0.07 s on a loaded machine, less than importing numba)
INTERPRETED_MAX_DRAWS = 8192


def _runs_interpreted(size: int) -> bool:
    return size <= INTERPRETED_MAX_DRAWS and "numba" not in sys.modules


def _interpreted_fill(out, start, t, s, words, state, e1, table, kbits):
    """:func:`._exact_loop.discrete_laplace_fill` run by the interpreter on Python ints (the words as a
    list, the bit position in a one-element list), ``state`` updated as the compiled loop does."""
    pos = [int(state[0])]
    done = _exact_loop.discrete_laplace_fill(out, start, t, s, words.tolist(), pos, e1.tolist(), table, kbits)
    state[0] = pos[0]
    return done


def discrete_laplace(t: int, s: int, size: int, source: RandomWords) -> np.ndarray:
    """``size`` independent draws with P(z) proportional to exp(-|z| s / t), z an integer."""
    t, s, size = int(t), int(s), int(size)
    if not (0 < t <= DISCRETE_LAPLACE_MAX_T and 0 < s < MAX_INT):
        raise ValueError(f"the scale's numerator must be in 1 .. 2**56 and its denominator in 1 .. 2**62 - 1, "
                         f"got t = {t}, s = {s}")
    table = _draw_table(t, s) if size >= TABLE_MIN_DRAWS else _NO_TABLE
    kbits = TABLE_BITS if table.size else 0
    out = np.empty(size, dtype=np.int64)
    # ~ 1.6 tries x (bits of U + ~4) + ~8 bits for V and the sign, per draw
    per_draw = 1.6 * (t.bit_length() + 4) + 8
    stream = _Stream(source, size * per_draw / 64 * 1.1 + 16)
    fill = _interpreted_fill if _runs_interpreted(size) else _compiled().discrete_laplace_fill
    done = 0
    while True:
        done = fill(out, done, t, s, stream.words, stream.state, _E1_BITS, table, kbits)
        if done == -3:  # integers past int64: probability below 2^-183 per draw, independent of the data
            raise ArithmeticError("exact sampler: a draw's integers would pass int64 (t k or u + t v)")
        if done < 0:  # a 1024-bit tie with exp(-1): probability 2^-1024, independent of the data
            raise ArithmeticError("exact sampler: exp(-1) expansion exhausted")
        if done == size:
            return out
        stream.refill((size - done) * per_draw / 64 * 1.1 + 16)


def exponential_mechanism(gamma_num: np.ndarray, gamma_den: int, source: RandomWords) -> int:
    """Index ``i`` with probability proportional to ``exp(-gamma_num[i] / gamma_den)``.

    ``gamma_num`` are integers ``>= 0`` with at least one 0 (the best candidate).
    Values are capped at 2**62: such a candidate is accepted with probability
    below exp(-2**62 / gamma_den), which the cap changes by less than that.
    """
    gamma = np.minimum(np.asarray(gamma_num, dtype=np.int64), MAX_INT)
    if gamma.ndim != 1 or gamma.size == 0 or gamma.min() < 0:
        raise ValueError("gamma numerators must be a non-empty 1-D array of non-negative integers")
    den = int(gamma_den)
    if not 0 < den < MAX_INT // 64:
        raise ValueError("gamma denominator out of range")
    draw = _compiled().exponential_draw
    stream = _Stream(source, 4 * gamma.size + 64)
    while True:
        i = draw(gamma, den, stream.words, stream.state)
        if i >= 0:
            return int(i)
        stream.refill(4 * gamma.size + 64)


def discrete_laplace_pmf(z, scale: float) -> np.ndarray:
    """P(Z = z) of the discrete Laplace with ``scale`` (for tests and notebooks)."""
    q = math.exp(-1.0 / scale)
    return (1 - q) / (1 + q) * q ** np.abs(np.asarray(z, dtype=float))
