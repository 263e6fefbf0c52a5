"""The discrete Laplace sampler's loop (CKS 2020, Algorithm 2 with Algorithm 1), as plain Python.

One source, two ways to run it.  :mod:`._exact_jit` compiles :func:`discrete_laplace_fill` with numba
for arrays of ``uint64`` words (the three bit readers below get typed overloads there).  The same
function runs interpreted on a list of Python ints (:func:`dphist.kernel.exact.discrete_laplace`
does so for a few thousand draws while numba is not imported: a ``dphist run`` of AHP on 4,096 bins
then never imports it).  A draw is a function of the bits it reads; both ways read the same bits in
the same order and return the same draws (a test compares them, across buffer refills).

The compiled fills (:func:`discrete_laplace_fill`, :func:`split_fill`) release the GIL: release mode draws
a large call on several threads, each filling its own slice of the output from its own words
(:func:`dphist.kernel.exact._run_fill`).  numba's cache of a compiled function is keyed to this file's
content and not to the compile options, so a change of options goes with a change here.

This module imports no numba.
"""
from __future__ import annotations

import numpy as np


def read_bit(words, pos):
    """Bit ``pos`` of the stream (bit 0 = least significant bit of ``words[0]``)."""
    return (words[pos >> 6] >> (pos & 63)) & 1


def read_bits(words, pos, n):
    """The ``n <= 62`` bits from ``pos`` as an integer (least significant first); the caller
    checks that they lie in the buffer."""
    w = pos >> 6
    o = pos & 63
    v = words[w] >> o
    if o + n > 64:
        v |= words[w + 1] << (64 - o)
    return v & ((1 << n) - 1)


def expansion_bit(e1, j):
    """Digit ``j`` after the point of the binary expansion in ``e1`` (most significant first)."""
    return (e1[j >> 6] >> (63 - (j & 63))) & 1


def table_entry(table, pattern):
    """``table[pattern]`` as a (64-bit) integer."""
    return int(table[pattern])


#: the largest int64: every integer of the loop stays at or below it (``t k``, ``u + t v``).  A draw that
#: would pass it is not computed and the fill returns -3 (the caller raises); for the numerators
#: :func:`dphist.kernel.exact.discrete_laplace` accepts (``t <= 2^56``) that takes ``k > 128`` or
#: ``v > 127``, probability below ``exp(-127)`` (about ``2^-183``) per draw
INT_LIMIT = (1 << 63) - 1

#: digits compared at a time (the chunk) by the lazy comparisons of a uniform with a binary expansion
CHUNK = 8
#: a denominator at or above this is compared one digit at a time (``r * 2^CHUNK`` stays below 2^62)
CHUNK_MAX_DEN = 1 << (62 - CHUNK)


def reverse8(q):
    """The 8-bit ``q`` with its bit order reversed (most significant digit first -> stream order)."""
    return ((q * 0x0202020202) & 0x010884422010) % 1023


def first_difference(diff):
    """``j >= 1`` for the lowest set bit ``2^(j-1)`` of ``diff > 0``."""
    return (diff & -diff).bit_length()


def chunk_difference(words, pos, digits):
    """The count of bits read up to and including the first of the ``CHUNK`` bits from ``pos`` that differs
    from its digit in ``digits`` (stream order); ``CHUNK + 1`` when none does (no branch)."""
    return first_difference((read_bits(words, pos, CHUNK) ^ digits) | (1 << CHUNK))


def expansion_byte(e1, j):
    """Digits ``j .. j + 7`` (``j`` a multiple of 8) of the expansion in ``e1`` in stream order: digit
    ``j + i`` at bit ``i``."""
    return reverse8((e1[j >> 6] >> (56 - (j & 63))) & 255)


def discrete_laplace_fill(out, start, t, s, words, st, e1, table, kbits):
    """CKS Algorithm 2 (scale t/s) into ``out[start:]``; returns the first index not filled.

    The steps: a uniform U below t, Bernoulli(exp(-U/t)) by Algorithm 1, V as a run of
    Bernoulli(exp(-1)), then the sign; written out in one loop with the bit position in a local:
    the hot path of release mode.

    A draw is a function of the bits it reads.  With a table of ``kbits``
    (see :func:`dphist.kernel._exact_jit.draw_table`: for every pattern of the next ``kbits`` bits,
    the draw and the bits it read when it reads no more than those; 0 when it reads more), a draw
    whose pattern is in the table is looked up; the others, and every draw within 64 bits of the
    buffer's end, run the loop.  Either way the same bits are read and the same value returned.
    ``kbits = 0``: no table.  ``st[0]`` is the bit position (a one-element array when compiled, a
    one-element list of a Python int when interpreted).  When the buffer runs out inside a draw, ``st[0]`` is set to the
    draw's first bit and its index returned (the caller refills and redoes it); -2 reports a
    1024-bit tie with exp(-1) (probability 2^-1024), -3 a draw whose integers would pass
    :data:`INT_LIMIT` (see there).
    """
    nbits = 0
    while (1 << nbits) < t:
        nbits += 1
    # the loop's integers stay in int64: b = t k for k <= kmax, u + t v for v <= vmax; past them the
    # draw is not computed, -3 is returned (see INT_LIMIT); vmax holds for every u < t
    kmax = INT_LIMIT // t
    vmax = (INT_LIMIT - (t - 1)) // t
    total = len(words) * 64
    pos = st[0]
    for i in range(start, len(out)):
        if kbits > 0 and pos + 64 <= total:
            entry = table_entry(table, read_bits(words, pos, kbits))
            if entry != 0:
                out[i] = entry >> 8
                pos += entry & 255
                continue
        begin = pos
        ok = True
        while True:
            # U
            while True:
                if pos + nbits > total:
                    ok = False
                    break
                u = read_bits(words, pos, nbits)
                pos += nbits
                if u < t:
                    break
            if not ok:
                break
            # D = Bernoulli(exp(-u/t)): gamma in [0,1)
            k = 1
            d = -1
            while d < 0:
                # Bernoulli(u / (t k)) lazily
                if k > kmax:
                    st[0] = begin
                    return -3
                r = u
                b = t * k
                res = -1
                while True:
                    if pos + CHUNK <= total and b < CHUNK_MAX_DEN:
                        # the next CHUNK digits of r / b at once, against the next CHUNK bits
                        x = r << CHUNK
                        q = x // b
                        r = x - q * b
                        digits = reverse8(q)
                        m = chunk_difference(words, pos, digits)
                        if m > CHUNK:
                            pos += CHUNK
                            continue
                        pos += m
                        res = (digits >> (m - 1)) & 1
                        break
                    if pos >= total:
                        ok = False
                        break
                    # the next digit of r / b: 2 r >= b, written r >= b - r (2 r may pass int64 when b
                    # is past 2^62); the remainder 2 r - b as r - (b - r)
                    dig = 0
                    if r >= b - r:
                        dig = 1
                        r -= b - r
                    else:
                        r += r
                    bit = read_bit(words, pos)
                    pos += 1
                    if bit != dig:
                        res = dig
                        break
                if not ok:
                    break
                if res == 0:
                    d = k % 2
                else:
                    k += 1
            if not ok:
                break
            if d == 0:
                continue
            vv = 0
            while True:
                # Bernoulli(exp(-1)) by comparing U bit by bit with exp(-1)'s binary expansion
                # (e1, exact to 1024 bits; a tie that long, probability 2^-1024, is reported)
                a = -1
                j = 0
                while a < 0:
                    if pos + CHUNK <= total and (j & 7) == 0 and j < 1024:
                        digits = expansion_byte(e1, j)
                        m = chunk_difference(words, pos, digits)
                        if m > CHUNK:
                            pos += CHUNK
                            j += CHUNK
                            continue
                        pos += m
                        a = (digits >> (m - 1)) & 1
                        break
                    if pos >= total:
                        ok = False
                        break
                    if j >= 1024:
                        st[0] = begin
                        return -2
                    c = expansion_bit(e1, j)
                    bit = read_bit(words, pos)
                    pos += 1
                    j += 1
                    if bit != c:
                        a = c
                if not ok:
                    break
                if a == 0:
                    break
                vv += 1
            if not ok:
                break
            if vv > vmax and vv > (INT_LIMIT - u) // t:    # u + t v > INT_LIMIT
                st[0] = begin
                return -3
            y = (u + t * vv) // s
            if pos >= total:
                ok = False
                break
            neg = read_bit(words, pos)
            pos += 1
            if neg == 1 and y == 0:
                continue
            out[i] = -y if neg == 1 else y
            break
        if not ok:
            st[0] = begin
            return i
    st[0] = pos
    return len(out)


# ------------------------------------------------------------------ the split sampler (release mode)
# Status codes: 0 done, -1 out of bits (the caller refills and redoes the draw from its first bit), -2 a
# comparison reached the end of a probability's stored digits (the caller stores more and redoes the draw),
# -3 a magnitude past INT_LIMIT.


def bernoulli_expansion(e, j, nd, words, pos, total):
    """``(digit, pos)``: 1 when a uniform U read from ``pos`` lies below p, whose ``nd - j`` binary digits after
    the point are digits ``j .. nd - 1`` of ``e`` (uint64 words, most significant digit first; ``j`` a
    multiple of 64; p irrational, so U != p), decided at the first bit where U and p differ, CHUNK digits at
    a time; -1 when the buffer runs out, -2 when U agrees with every stored digit (probability
    2^-(nd - j))."""
    while True:
        if pos + CHUNK <= total and j < nd:     # j is a multiple of CHUNK here
            digits = expansion_byte(e, j)
            m = chunk_difference(words, pos, digits)
            if m > CHUNK:
                pos += CHUNK
                j += CHUNK
                continue
            return (digits >> (m - 1)) & 1, pos + m
        if pos >= total:
            return -1, pos
        if j >= nd:
            return -2, pos
        c = expansion_bit(e, j)
        bit = read_bit(words, pos)
        pos += 1
        j += 1
        if bit != c:
            return c, pos


def split_attempt(j, widths, offsets, ex, nd, words, pos, total):
    """``(status, done, value, pos)``: one try of stage ``j`` of a split draw (see :func:`split_fill`).

    ``ex`` holds the probabilities' digits, ``nd`` of each (rows of ``nd / 64`` words, one after the other).
    ``j < len(widths)``: chunk j, by rejection: c uniform on ``widths[j]`` bits, kept (``done = 1``,
    ``value = c``) with probability p = exp(-c units_j / t), row ``offsets[j] + c`` (c = 0: p = 1, no bit
    read), else ``done = 0``.  ``j = len(widths)``: one trial of the geometric A, Bernoulli of the
    last row's probability exp(-2^k s / t): ``done = 1`` on a 0 (A ends), else A grows by one.  Tries are
    independent: each reads its own bits."""
    if j < len(widths):
        w = widths[j]
        if pos + w > total:
            return -1, 0, 0, pos
        c = read_bits(words, pos, w)
        pos += w
        if c == 0:
            return 0, 1, 0, pos
        row = (offsets[j] + c) * nd
        res, pos = bernoulli_expansion(ex, row, row + nd, words, pos, total)
        if res < 0:
            return res, 0, 0, pos
        return 0, res, c, pos
    res, pos = bernoulli_expansion(ex, len(ex) * 64 - nd, len(ex) * 64, words, pos, total)
    if res < 0:
        return res, 0, 0, pos
    return 0, 1 - res, 0, pos


def split_entry1(draws, pattern):
    """``draws[pattern]`` as a (64-bit) integer."""
    return int(draws[pattern])


def split_entry(tables, j, pattern):
    """``tables[j, pattern]`` as a (64-bit) integer."""
    return int(tables[j, pattern])


def split_fill(out, start, k, widths, shifts, offsets, ex, nd, words, st, tables, kbits, draws, dbits):
    """Discrete Laplace draws into ``out[start:]`` by the split of the geometric magnitude
    (:func:`dphist.kernel.exact.discrete_laplace`, ``method="split"``, derives it); returns the first
    index not filled, or a negative status code.

    A draw: the chunks c_j of the magnitude's low ``k`` binary digits (stages ``0 .. len(widths) - 1``,
    c_j at bit ``shifts[j]``), the geometric A of its high part (``N = A 2^k + sum_j c_j 2^shifts[j]``),
    then a sign bit; a negative zero restarts the draw.  Each stage is a run of independent tries
    (:func:`split_attempt`) whose probabilities are the rows of ``ex`` (``nd`` digits each).  ``draws`` (empty, or ``2^dbits``
    entries): for every pattern of the next ``dbits`` bits the whole draw and the bits it read when it
    reads no more (``draw * 256 + bits``; 0: it reads more), looked up first.  With ``kbits > 0``,
    ``tables[j]`` holds for every pattern of the next ``kbits`` bits the whole tries of stage j that fit in
    them: ``value * 512 + done * 256 + bits`` (a chunk's value when a try kept it; A's count of 1s; 0: not
    one whole try fits); a lookup moves past those tries, the tries that do not fit run
    :func:`split_attempt`.  The same bits are read and the same value returned either way.  ``st[0]`` is
    the bit position, as in :func:`discrete_laplace_fill`; on a negative status it is the draw's first bit
    (the caller refills the buffer or stores more digits, and redoes the draw)."""
    nchunks = len(widths)
    total = len(words) * 64
    pos = st[0]
    whole = len(draws) > 0
    for i in range(start, len(out)):
        if whole and pos + 64 <= total:
            entry = split_entry1(draws, read_bits(words, pos, dbits))
            if entry != 0:
                out[i] = entry >> 8
                pos += entry & 255
                continue
        begin = pos
        status = 0
        while True:
            n = 0
            for j in range(nchunks + 1):
                v = 0
                done = 0
                while done == 0:
                    if kbits > 0 and pos + 64 <= total:
                        entry = split_entry(tables, j, read_bits(words, pos, kbits))
                        if entry != 0:
                            pos += entry & 255
                            done = (entry >> 8) & 1
                            if j < nchunks:
                                v = entry >> 9
                            else:
                                v += entry >> 9
                            continue
                    status, done, c, pos = split_attempt(j, widths, offsets, ex, nd, words, pos, total)
                    if status < 0:
                        break
                    if j < nchunks:
                        v = c
                    elif done == 0:
                        v += 1
                if status < 0:
                    break
                if j < nchunks:
                    n += v << shifts[j]
                elif v > ((INT_LIMIT - n) >> k):     # A 2^k + n past int64
                    status = -3
                    break
                else:
                    n += v << k
            if status == 0 and pos >= total:
                status = -1
            if status < 0:
                break
            neg = read_bit(words, pos)
            pos += 1
            if neg == 1 and n == 0:
                continue
            out[i] = -n if neg == 1 else n
            break
        if status == -1:
            st[0] = begin
            return i
        if status < 0:
            st[0] = begin
            return status
    st[0] = pos
    return len(out)


def split_tables(k, widths, shifts, offsets, ex, nd, kbits):
    """``(tables, draws)`` of :func:`split_fill` for patterns of ``kbits`` bits.

    ``tables[j, p]``: the whole tries of stage j that fit in pattern ``p`` (``value * 512 + done * 256 +
    bits read``, see there; 0 when not one fits, or A's count reaches 2^21).  ``draws[p]``: ``draw * 256 +
    bits read`` of the fill (with those tables) when the draw reads at most ``kbits`` bits and
    ``|draw| < 2^23``, else 0.  Computed by the tries and the fill themselves on a one-word stream: a try or
    draw that stops within the pattern never saw the rest, so an entry is exactly what they return."""
    n = 1 << kbits
    tables = np.zeros((len(widths) + 1, n), dtype=np.int32)
    buf = np.zeros(1, dtype=np.uint64)
    for j in range(len(widths) + 1):
        for p in range(n):
            buf[0] = np.uint64(p)
            pos = 0
            v = 0
            done = 0
            while done == 0 and v < (1 << 21):
                status, d, c, end = split_attempt(j, widths, offsets, ex, nd, buf, pos, 64)
                if status < 0 or end > kbits:
                    break
                pos = end
                done = d
                if j < len(widths):
                    v = c
                elif d == 0:
                    v += 1
            if pos > 0:
                tables[j, p] = v * 512 + done * 256 + pos
    draws = np.zeros(n, dtype=np.int32)
    one = np.zeros(1, dtype=np.int64)
    st = np.zeros(1, dtype=np.int64)
    no_draws = np.zeros(0, dtype=np.int32)
    for p in range(n):
        buf[0] = np.uint64(p)
        st[0] = 0
        if (split_fill(one, 0, k, widths, shifts, offsets, ex, nd, buf, st, tables, kbits, no_draws, 0) == 1
                and st[0] <= kbits and abs(one[0]) < (1 << 23)):
            draws[p] = one[0] * 256 + st[0]
    return tables, draws
