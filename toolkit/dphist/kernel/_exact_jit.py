"""The compiled loops of :mod:`dphist.kernel.exact` (CKS 2020, Algorithms 1 and 2).

Imported lazily, on the first release-mode draw, so that ``import dphist``
does not pay for numba.  Every function reads bits from ``words`` at position
``st[0]`` and returns -1 when the buffer runs out (the caller refills and
redoes the draw from its first bit; see :mod:`dphist.kernel.exact`).
"""
import numpy as np
from numba import njit


@njit(cache=True)
def bit(words, st):
    p = st[0]
    if p >= words.size * 64:
        return -1
    st[0] = p + 1
    return np.int64((words[p >> 6] >> np.uint64(p & 63)) & np.uint64(1))

@njit(cache=True)
def bernoulli_rational(a, b, words, st):
    # U < a/b for U = 0.u1u2... uniform: compare bit by bit with a/b's expansion
    r = a
    while True:
        r = 2 * r
        pb = 1 if r >= b else 0
        if pb == 1:
            r -= b
        u = bit(words, st)
        if u < 0:
            return -1
        if u != pb:
            return pb

@njit(cache=True)
def bernoulli_exp_unit(a, b, words, st):
    # CKS Algorithm 1, gamma = a/b in [0, 1]: K odd where K is the first failure
    k = 1
    while True:
        x = bernoulli_rational(a, b * k, words, st)
        if x < 0:
            return -1
        if x == 0:
            return k % 2
        k += 1

@njit(cache=True)
def bernoulli_exp(a, b, words, st):
    # gamma = a/b >= 0: floor(gamma) factors exp(-1), then exp(-frac); stop at a failure
    whole = a // b
    x = bernoulli_exp_unit(a - whole * b, b, words, st)
    if x <= 0:
        return x
    for _ in range(whole):
        x = bernoulli_exp_unit(1, 1, words, st)
        if x <= 0:
            return x
    return 1

@njit(cache=True)
def chunk(words, st, n):
    # the next n <= 62 bits as an integer (least significant first)
    p = st[0]
    if p + n > words.size * 64:
        return -1
    st[0] = p + n
    w, o = p >> 6, p & 63
    v = words[w] >> np.uint64(o)
    if o + n > 64:
        v |= words[w + 1] << np.uint64(64 - o)
    return np.int64(v & ((np.uint64(1) << np.uint64(n)) - np.uint64(1)))

@njit(cache=True)
def uniform_below(t, words, st):
    # rejection from the smallest power of two >= t (fewer than 2 tries expected)
    nbits = 0
    while (np.int64(1) << nbits) < t:
        nbits += 1
    if nbits == 0:
        return 0
    while True:
        v = chunk(words, st, nbits)
        if v < t:
            return v

@njit(cache=True)
def discrete_laplace_fill(out, start, t, s, words, st, e1, table, kbits):
    """CKS Algorithm 2 (scale t/s) into ``out[start:]``; returns the first index not filled.

    The same steps as the helpers above (uniform U, Bernoulli(exp(-U/t)) by
    Algorithm 1, V as a run of Bernoulli(exp(-1)), sign), written out in one
    loop with the bit position in a register: the hot path of release mode.

    A draw is a function of the bits it reads.  With a table of ``kbits``
    (see :func:`draw_table`: for every pattern of the next ``kbits`` bits, the
    draw and the bits it read when it reads no more than those; 0 when it
    reads more), a draw whose
    pattern is in the table is looked up; the others, and every draw within
    ``kbits`` of the buffer's end, run the loop.  Either way the same bits are
    read and the same value returned.  ``kbits = 0``: no table.
    """
    nbits = 0
    while (np.int64(1) << nbits) < t:
        nbits += 1
    total = words.size * 64
    pos = st[0]
    mask = (np.uint64(1) << np.uint64(kbits)) - np.uint64(1)
    for i in range(start, out.size):
        if kbits > 0 and pos + 64 <= total:
            w = pos >> 6
            o = pos & 63
            v = words[w] >> np.uint64(o)
            if o > 0:
                v |= words[w + 1] << np.uint64(64 - o)
            entry = np.int64(table[np.int64(v & mask)])
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
                w = pos >> 6
                o = pos & 63
                v = words[w] >> np.uint64(o)
                if o + nbits > 64:
                    v |= words[w + 1] << np.uint64(64 - o)
                pos += nbits
                u = np.int64(v & ((np.uint64(1) << np.uint64(nbits)) - np.uint64(1))) if nbits > 0 else 0
                if u < t:
                    break
            if not ok: break
            # D = Bernoulli(exp(-u/t)): gamma in [0,1)
            k = 1
            d = -1
            while d < 0:
                # Bernoulli(u / (t k)) lazily
                r = u
                b = t * k
                res = -1
                while True:
                    if pos >= total:
                        ok = False
                        break
                    r = 2 * r
                    dig = 0
                    if r >= b:
                        dig = 1
                        r -= b
                    bit = np.int64((words[pos >> 6] >> np.uint64(pos & 63)) & np.uint64(1))
                    pos += 1
                    if bit != dig:
                        res = dig; break
                if not ok: break
                if res == 0:
                    d = k % 2
                else:
                    k += 1
            if not ok: break
            if d == 0:
                continue
            vv = 0
            while True:
                # Bernoulli(exp(-1)) by comparing U bit by bit with exp(-1)'s binary expansion
                # (E1_BITS, exact to 1024 bits; a tie that long, probability 2^-1024, is reported)
                a = -1
                j = 0
                while a < 0:
                    if pos >= total:
                        ok = False
                        break
                    if j >= 1024:
                        st[0] = begin
                        return -2
                    c = np.int64((e1[j >> 6] >> np.uint64(63 - (j & 63))) & np.uint64(1))
                    bit = np.int64((words[pos >> 6] >> np.uint64(pos & 63)) & np.uint64(1))
                    pos += 1
                    j += 1
                    if bit != c:
                        a = c
                if not ok:
                    break
                if a == 0:
                    break
                vv += 1
            if not ok: break
            y = (u + t * vv) // s
            if pos >= total:
                ok = False
                break
            neg = np.int64((words[pos >> 6] >> np.uint64(pos & 63)) & np.uint64(1))
            pos += 1
            if neg == 1 and y == 0:
                continue
            out[i] = -y if neg == 1 else y
            break
        if not ok:
            st[0] = begin
            return i
    st[0] = pos
    return out.size


@njit(cache=True)
def exponential_draw(gamma, den, words, st):
    begin = st[0]
    m = gamma.size
    while True:
        i = uniform_below(m, words, st)
        if i < 0:
            st[0] = begin
            return -1
        x = bernoulli_exp(gamma[i], den, words, st)
        if x < 0:
            st[0] = begin
            return -1
        if x == 1:
            return i



@njit(cache=True)
def draw_table(t, s, e1, kbits):
    """For every pattern ``p`` of ``kbits`` bits (first bit = least significant): ``draw * 256 + bits read``
    of :func:`discrete_laplace_fill` on a stream starting with ``p``, when it reads at most ``kbits`` bits
    (and ``|draw| < 2^23``), else 0 (not in the table).

    Computed by the sampler itself on a one-word stream whose first ``kbits`` bits are ``p``: a draw that
    stops within them never saw the rest, so the table entry is exactly what the loop returns.
    """
    n = 1 << kbits
    table = np.zeros(n, dtype=np.int32)
    buf = np.zeros(1, dtype=np.uint64)
    one = np.zeros(1, dtype=np.int64)
    st = np.zeros(1, dtype=np.int64)
    no_table = np.zeros(0, dtype=np.int32)
    for p in range(n):
        buf[0] = np.uint64(p)
        st[0] = 0
        if (discrete_laplace_fill(one, 0, t, s, buf, st, e1, no_table, 0) == 1 and st[0] <= kbits
                and abs(one[0]) < (1 << 23)):
            table[p] = one[0] * 256 + st[0]
    return table
