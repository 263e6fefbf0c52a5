"""The discrete Laplace sampler's loop (CKS 2020, Algorithm 2 with Algorithm 1), as plain Python.

One source, two ways to run it.  :mod:`._exact_jit` compiles :func:`discrete_laplace_fill` with numba
for arrays of ``uint64`` words (the three bit readers below get typed overloads there).  The same
function runs interpreted on a list of Python ints (:func:`dphist.kernel.exact.discrete_laplace`
does so for a few thousand draws while numba is not imported: a ``dphist run`` of AHP on 4,096 bins
then never imports it).  A draw is a function of the bits it reads; both ways read the same bits in
the same order and return the same draws (a test compares them, across buffer refills).

This module imports no numba.
"""
from __future__ import annotations


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
