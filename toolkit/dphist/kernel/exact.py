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
  integers, for a rational scale ``t / s``: CKS Algorithm 2 (``method="cks"``,
  research mode's exact noise), or the split of its geometric magnitude into
  a geometric high part and independent chunks of low digits, each Bernoulli
  a comparison with exact binary digits (``method="split"``, release mode: its
  cost barely depends on the scale);
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

Threads (release mode): a large call from a source of independent parts (:meth:`RandomWords.parts`: the
OS's words) is cut into consecutive parts drawn at once by threads, each from its own words with its own
buffer and refills (:func:`_run_fill`); a seeded stream is read by one thread, so its draws are the same
for every thread count.

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

    def parts(self, count: int) -> list | None:
        """``count`` sources whose words are independent of each other's and that ``count`` threads may read at
        once (one each), or ``None``: this source is one stream read in order (seeded words: the draws are
        reproducible only when read serially), and a call draws on one thread."""
        return None


class SystemRandomWords(RandomWords):
    """Words from the operating system's CSPRNG (``os.urandom``); no state is kept."""

    name = "os-urandom"

    def parts(self, count: int) -> list:
        # every call of os.urandom returns fresh words, independent of every other call's, and may be made
        # from several threads at once: the one source serves every thread
        return [self] * int(count)

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
_NO_TABLE.setflags(write=False)     # read-only, as the tables are: one compiled signature


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


#: the sampling methods of :func:`discrete_laplace`
METHODS = ("cks", "split")
#: widest chunk of the split sampler's low digits (a chunk's uniform reads this many bits at most)
SPLIT_CHUNK_BITS = 8
_NO_TABLES = np.zeros((0, 0), dtype=np.int32)
_NO_TABLES.setflags(write=False)


@lru_cache(maxsize=256)
def _split_plan(t: int, s: int) -> tuple:
    """``(k, widths, shifts, offsets, exponents)`` of the split sampler at scale ``t / s`` (:func:`discrete_laplace`).

    ``2^k`` is the largest power of two at most the scale (``k = 0`` below 1); the ``k`` low digits of the
    magnitude are cut into chunks of at most :data:`SPLIT_CHUNK_BITS` bits, the highest first: chunk j
    holds digits ``shifts[j] .. shifts[j] + widths[j] - 1``, and its value c has weight
    exp(-c s 2^shifts[j] / t).  ``exponents`` lists, as ``(numerator, denominator)``, the exponent r of each
    probability exp(-r) the sampler compares with: row ``offsets[j] + c`` for chunk j's value c, the last row
    A's ratio exp(-2^k s / t).  A chunk's exponent is below ``2^k s / t <= 1``: at least exp(-1) of its tries
    are kept."""
    k = 0
    while (s << (k + 1)) <= t:
        k += 1
    widths, shifts = [], []
    h = k
    n_chunks = -(-k // SPLIT_CHUNK_BITS)
    for j in range(n_chunks):
        w = -(-h // (n_chunks - j))     # near-equal widths, the highest chunk widest
        h -= w
        widths.append(w)
        shifts.append(h)
    offsets, exponents = [], []
    for w, h in zip(widths, shifts):
        offsets.append(len(exponents))
        exponents.extend((c * (s << h), t) for c in range(1 << w))
    exponents.append((s << k, t))
    arrays = [np.array(a, dtype=np.int64) for a in (widths, shifts, offsets)]
    for a in arrays:
        a.setflags(write=False)
    return (k, *arrays, tuple(exponents))


def _exp_bracket(a: int, b: int, bits: int) -> tuple[int, int]:
    """Integers ``lo <= exp(-a / b) 2^bits <= hi`` (``a >= 0``, ``b > 0``), ``hi - lo`` a few hundred.

    exp(-r) = exp(-1)^w exp(-f) with ``f`` in (0, 1] (``w`` whole units).  exp(-f) = sum (-f)^i / i!: the terms
    T_i = floor(T_(i-1) a' / (b i)) in fixed point lie at most ``i`` units below the true terms (each step
    loses under one unit and the factor f / i <= 1 does not grow the earlier loss), their signed sum is
    within ``I (I + 1) / 2`` of the series up to the last nonzero term I, and the rest of an alternating
    series of decreasing terms is below its first term, under ``I + 2`` units.  The bracket is then
    multiplied by exp(-1)'s, rounding outward."""
    w, f = divmod(a, b)
    if f == 0 and w > 0:
        w, f = w - 1, b
    total, term, i = 0, 1 << bits, 0
    while term:
        total += -term if i % 2 else term
        i += 1
        term = term * f // (b * i)
    err = i * (i + 1) // 2 + i + 2
    lo, hi = total - err, total + err
    if w:
        e_lo, e_hi = _exp_bracket(1, 1, bits)
        for _ in range(w):
            lo, hi = max(lo * e_lo >> bits, 0), -(-hi * e_hi >> bits)
    return lo, hi


def _exp_digits(a: int, b: int, nwords: int) -> list[int]:
    """The first ``64 nwords`` binary digits of exp(-a / b) after the point (``a > 0``: an irrational number
    below 1, so the digits are unique), in 64-bit words, most significant first: the digits both ends of an
    :func:`_exp_bracket` agree on, with guard bits added until they agree."""
    nbits = 64 * nwords
    guard = 64
    while True:
        lo, hi = _exp_bracket(a, b, nbits + guard)
        if lo >> guard == hi >> guard:
            v = lo >> guard
            return [(v >> (nbits - 64 * (i + 1))) & ((1 << 64) - 1) for i in range(nwords)]
        guard *= 2


#: 64-bit words of digits stored per probability of the split sampler at first (2^-128: the chance that a
#: comparison needs more, which are then computed and the draw redone); at most SPLIT_MAX_WORDS
SPLIT_WORDS = 2
SPLIT_MAX_WORDS = 1 << 10


@lru_cache(maxsize=64)
def _split_digits(t: int, s: int, nwords: int) -> np.ndarray:
    """The split sampler's probabilities at scale ``t / s`` (rows as :func:`_split_plan` orders them), each
    to ``64 nwords`` binary digits, the rows one after the other in one array; the row of exponent 0
    (probability 1, never compared) is zero."""
    exponents = _split_plan(t, s)[4]
    ex = np.array([_exp_digits(a, b, nwords) if a else [0] * nwords for a, b in exponents], dtype=np.uint64).ravel()
    ex.setflags(write=False)
    return ex


@lru_cache(maxsize=32)
def _split_tables(t: int, s: int) -> tuple[np.ndarray, np.ndarray]:
    """The split sampler's 16-bit tables at scale ``t / s`` (``_exact_jit.split_tables``): whole tries per
    stage, and whole draws (empty when fewer than :data:`TABLE_MIN_HIT` of the patterns hold one).  A lookup
    returns what the tries or the draw return on the same bits, so the tables change the speed only.  (A try
    decided within 16 bits compared at most 16 digits: the stored digits suffice.)"""
    k, widths, shifts, offsets, _ = _split_plan(t, s)
    tables, draws = _compiled().split_tables(k, widths, shifts, offsets, _split_digits(t, s, SPLIT_WORDS),
                                             64 * SPLIT_WORDS, TABLE_BITS)
    if np.count_nonzero(draws) < TABLE_MIN_HIT * draws.size:
        draws = _NO_TABLE
    for a in (tables, draws):
        a.setflags(write=False)
    return tables, draws


def _interpreted_split_fill(out, start, k, widths, shifts, offsets, ex, nd, words, state, tables, kbits, draws,
                            dbits):
    """:func:`._exact_loop.split_fill` run by the interpreter on Python ints (as :func:`_interpreted_fill`)."""
    pos = [int(state[0])]
    done = _exact_loop.split_fill(out, start, k, widths.tolist(), shifts.tolist(), offsets.tolist(), ex.tolist(),
                                  nd, words.tolist(), pos, tables, kbits, draws, dbits)
    state[0] = pos[0]
    return done


@lru_cache(maxsize=256)
def _split_bits(t: int, s: int) -> float:
    """The bits a split draw reads on average (a comparison with a probability reads 2 on average; a chunk
    takes 1 / (its mean probability of keeping) tries, A 1 / (1 - its ratio) trials, a negative zero redraws):
    the buffer's size, so that few OS bytes go unread (a shortfall costs one refill)."""
    k, widths, shifts, offsets, exponents = _split_plan(t, s)
    bits = 1.0
    for w, o in zip(widths.tolist(), offsets.tolist()):
        keep = [math.exp(-a / b) for a, b in exponents[o:o + (1 << w)]]
        bits += (w + 2 * (1 - 1 / len(keep))) * len(keep) / sum(keep)
    a, b = exponents[-1]
    bits += 2 / -math.expm1(-a / b)
    return bits / (1 + math.expm1(-s / t) / 2)


def _split_filler(t: int, s: int, size: int):
    """The fill function of the split sampler for one call (or one thread's part of a call of ``size`` draws),
    with its plan, digits and tables bound; a draw that needs more digits than stored (status -2) is redone
    from its first bit with twice as many."""
    k, widths, shifts, offsets, _ = _split_plan(t, s)
    tables, draws = _split_tables(t, s) if size >= TABLE_MIN_DRAWS else (_NO_TABLES, _NO_TABLE)
    kbits = TABLE_BITS if tables.size else 0
    dbits = TABLE_BITS if draws.size else 0
    fill = _interpreted_split_fill if _runs_interpreted(size) else _compiled().split_fill
    nwords = SPLIT_WORDS

    def run(out, done, words, state):
        nonlocal nwords
        while True:
            done = fill(out, done, k, widths, shifts, offsets, _split_digits(t, s, nwords), 64 * nwords, words,
                        state, tables, kbits, draws, dbits)
            if done != -2 or nwords >= SPLIT_MAX_WORDS:
                return done
            nwords *= 2
    return run


def discrete_laplace(t: int, s: int, size: int, source: RandomWords, method: str = "cks",
                     threads: int | None = None) -> np.ndarray:
    """``size`` independent draws with P(z) proportional to exp(-|z| s / t), z an integer.

    Two exact methods read the same random words differently (the same law, other draws):

    * ``"cks"``: CKS Algorithm 2: X = U + t V, U uniform below t kept with probability exp(-U / t), V
      geometric of ratio exp(-1), the magnitude ``floor(X / s)``.  U reads ``log2 t`` bits per try, so at a
      scale such as 5,377 / 256 (H's levels at 2^20 bins) a draw reads about 42 bits and its 16-bit table
      rarely applies.  Research mode's exact noise (seeded words) uses it: its recorded releases stay
      bit-identical.
    * ``"split"``: the same decomposition taken on the magnitude itself, in blocks of a power of two
      below the scale (release mode).  The magnitude N of a discrete Laplace of scale ``lam = t / s`` is
      geometric: P(N = n) = (1 - q) q^n with q = exp(-s / t) (a sign bit, a negative zero redrawn, gives
      P(z) proportional to q^|z|).  For m = 2^k, writing n = m a + b (0 <= b < m),
      (1 - q) q^(m a + b) = [(1 - q^m) (q^m)^a] [(1 - q) q^b / (1 - q^m)]: A = N div m is geometric of
      ratio q^m = exp(-2^k s / t) and B = N mod m, independent of A, has P(b) proportional to q^b
      (CKS 2020 split the geometric of ratio exp(-1/t) the same way, as t V + U, in their Algorithm 2).
      B's weight factorises over its binary digits, q^b = prod_i (q^(2^i))^(b_i), so any cut of its k
      digits into chunks gives independent chunks, chunk j (digits from ``shifts[j]``) with
      P(c) proportional to exp(-c s 2^shifts[j] / t).  Each chunk is drawn by rejection: c uniform on its
      ``widths[j] <= 8`` bits, kept with probability p_c = exp(-c s 2^shifts[j] / t) (the exponent is below
      2^k s / t <= 1, so at least exp(-1) of tries are kept); a kept value has probability proportional to
      2^-w p_c, the chunk's law.  A is the count of 1s before the first 0 of Bernoulli(exp(-2^k s / t)).
      Every Bernoulli(p) compares a uniform, read bit by bit, with p's binary digits and stops at the first
      difference (2 bits on average; P(U < p) = p exactly); the digits of each p = exp(-r), r rational, are
      computed exactly (:func:`_exp_digits`: a fixed-point series bracket, its digits kept where both ends
      agree) to 128 places, and a comparison that reaches the last stored digit (probability 2^-128) stops
      the draw, which is redone from its first bit with twice as many digits - exact at any depth.
      With ``2^k <= lam < 2^(k+1)``, A's ratio is at most exp(-1/2) and each stage reads a few bits
      whatever the scale (bits a draw, counted on 10^5 draws: 6.1, 13.3, 25.7 at scales 1, 21, 10^4; CKS's
      9.0, 41.8, 45.9): 16-bit tables of whole tries per stage and of whole draws
      (:func:`_split_tables`) resolve nearly all of them, and the tries they do not hold run the loop the tables were built from.

    Both methods read only the words of ``source`` and use integer arithmetic only; a draw whose integers
    would pass int64, or a tie with every stored digit (1,024 of exp(-1) for ``"cks"``, 65,536 for
    ``"split"``), is reported (``ArithmeticError``, probability below 2^-90 per draw: for ``"split"`` a
    magnitude past 2^62, exp(-2^62 / lam) <= exp(-64)), never returned wrong.

    ``threads``: a call of :data:`THREAD_MIN_DRAWS` draws or more from a source of independent
    :meth:`~RandomWords.parts` (OS words: release mode) is drawn on that many threads (``None``: the
    project's setting, :func:`dphist.segmentation.parallel.default_threads`; 1: serially), each filling its
    own slice of the output from its own words (:func:`_run_fill`).  Seeded words (:class:`GeneratorWords`:
    research mode's exact noise, the audit, tests) are always read serially: the same draws as on one thread.
    """
    t, s, size = int(t), int(s), int(size)
    if not (0 < t <= DISCRETE_LAPLACE_MAX_T and 0 < s < MAX_INT):
        raise ValueError(f"the scale's numerator must be in 1 .. 2**56 and its denominator in 1 .. 2**62 - 1, "
                         f"got t = {t}, s = {s}")
    if method not in METHODS:
        raise ValueError(f"unknown discrete Laplace method {method!r}; the methods are {METHODS}")
    threads = _threads_for(size, source, threads)
    if method == "split":
        return _run_fill(lambda: _split_filler(t, s, size), size, _split_bits(t, s), source, threads)
    table = _draw_table(t, s) if size >= TABLE_MIN_DRAWS else _NO_TABLE
    kbits = TABLE_BITS if table.size else 0
    fill = _interpreted_fill if _runs_interpreted(size) and threads == 1 else _compiled().discrete_laplace_fill
    # ~ 1.6 tries x (bits of U + ~4) + ~8 bits for V and the sign, per draw
    return _run_fill(lambda: lambda out, done, words, state: fill(out, done, t, s, words, state, _E1_BITS, table,
                                                                   kbits),
                     size, 1.6 * (t.bit_length() + 4) + 8, source, threads)


#: the fewest draws of one call drawn on several threads (sources with independent :meth:`RandomWords.parts`
#: only: release mode's OS words)
THREAD_MIN_DRAWS = 1 << 16
#: parts per thread of a threaded call (a thread the system deschedules delays only the part it holds)
PARTS_PER_THREAD = 4


def _threads_for(size: int, source: RandomWords, threads) -> int:
    """The threads a call of ``size`` draws from ``source`` runs on: 1 for a seeded stream (no
    :meth:`~RandomWords.parts`) or a call of fewer than :data:`THREAD_MIN_DRAWS` draws, else ``threads``
    (``None``: ``DPHIST_THREADS``, then ``NUMBA_NUM_THREADS``, else the cores, as the segmentation's
    searches: :func:`dphist.segmentation.parallel.default_threads`); 1 on a thread of the pool itself (noise
    drawn inside a search's threaded step: :func:`~dphist.segmentation.parallel.on_pool_thread`)."""
    if threads is not None or size >= THREAD_MIN_DRAWS:
        from ..segmentation.parallel import on_pool_thread, resolve
        threads = resolve(threads)      # a bad count refused whatever the call's size
        if size >= THREAD_MIN_DRAWS and type(source).parts is not RandomWords.parts and not on_pool_thread():
            return threads
    return 1


def _run_fill(make_fill, size: int, per_draw: float, source: RandomWords, threads: int = 1) -> np.ndarray:
    """``size`` draws of a fill ``make_fill()(out, done, words, state)`` over streams of ``source``'s words,
    each refilled by the exact rule of :class:`_Stream` (``per_draw``: the expected bits of a draw, for the
    buffer sizes).  On ``threads > 1`` the output is cut into consecutive parts, each filled by one thread
    from its own stream of its own source of ``source.parts`` (its own words, never another part's; its
    own fill function, buffer and position): the draws of different parts read different independent
    words, so all are independent draws of the law, as on one thread (the order of the parts and which
    thread fills which change nothing but the time).  The compiled loops release the GIL."""
    out = np.empty(size, dtype=np.int64)
    if threads == 1:
        _fill_part(make_fill(), out, per_draw, source)
        return out
    from ..segmentation.parallel import run_all, split
    cuts = split(0, size, threads * PARTS_PER_THREAD)
    sources = source.parts(len(cuts))
    fills = [make_fill() for _ in cuts]     # plans, digits and tables made here, before the threads start
    tasks = [lambda lo=lo, hi=hi, fill=fill, src=src: _fill_part(fill, out[lo:hi], per_draw, src)
             for (lo, hi), fill, src in zip(cuts, fills, sources)]
    run_all(tasks, threads)
    return out


def _fill_part(fill, out: np.ndarray, per_draw: float, source: RandomWords) -> None:
    """Fill ``out`` (a whole call's output, or one thread's part of it) from one stream of ``source``."""
    size = out.size
    stream = _Stream(source, size * per_draw / 64 * 1.1 + 16)
    done = 0
    while True:
        done = fill(out, done, stream.words, stream.state)
        if done == -3:  # integers past int64: probability below 2^-90 per draw, independent of the data
            raise ArithmeticError("exact sampler: a draw's integers would pass int64")
        if done < 0:  # a 1024-bit tie with exp(-1) (or 65,536 with the split's): probability 2^-1024
            raise ArithmeticError("exact sampler: a probability's binary expansion exhausted")
        if done == size:
            return
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
