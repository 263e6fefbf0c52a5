"""Release mode's exact samplers against their exact laws (CKS 2020).

Goodness of fit on 10^6 draws (seeded words, so the verdict is fixed), the
impossible-output test of Mironov (2012) on release-mode outputs, the exact
exponential mechanism, and the refill rule that keeps draws exact across
buffer boundaries.
"""
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dphist.kernel import PrivateKernel
from dphist.kernel import exact
from dphist.kernel.noise import ExactNoise


def words(seed):
    return exact.GeneratorWords(np.random.default_rng(seed))


def chi_square_p(draws: np.ndarray, pmf, support: np.ndarray) -> float:
    """Chi-square p-value of integer ``draws`` against ``pmf`` on ``support`` (tails pooled)."""
    lo, hi = support[0], support[-1]
    inside = (draws >= lo) & (draws <= hi)      # support: consecutive integers; one counting pass
    counts = np.append(np.bincount(draws[inside] - lo, minlength=hi - lo + 1), draws.size - inside.sum())
    probs = np.append(pmf(support), 0.0)
    probs[-1] = max(1.0 - probs[:-1].sum(), 0.0)
    expected = probs * draws.size
    keep = expected >= 5
    return float(stats.chisquare(counts[keep], expected[keep] / expected[keep].sum() * counts[keep].sum()).pvalue)


@pytest.mark.parametrize("scale", [0.4, 1.0, 2.5, 10.0])
def test_discrete_laplace_fits_its_pmf_on_a_million_draws(scale):
    # kills: a missing "negative zero" rejection (P(0) doubled), a wrong Bernoulli(exp(-gamma))
    # parity, a scale rounded down instead of up, a biased uniform integer
    t, s = exact.dyadic_scale_at_least(scale)
    assert Fraction(t, s) >= Fraction(scale) and t / s - scale <= scale * 2.0 ** -12
    z = exact.discrete_laplace(t, s, 1_000_000, words(1))
    support = np.arange(-int(12 * scale) - 3, int(12 * scale) + 4)
    p = chi_square_p(z, lambda v: exact.discrete_laplace_pmf(v, t / s), support)
    assert p > 1e-4, f"discrete Laplace({scale}) rejected by chi-square, p = {p:.3g}"
    q = math.exp(-s / t)
    assert z.var() == pytest.approx(2 * q / (1 - q) ** 2, rel=0.01)


def test_os_words_drive_the_same_law():
    t, s = exact.dyadic_scale_at_least(3.0)
    z = exact.discrete_laplace(t, s, 200_000, exact.SystemRandomWords())
    p = chi_square_p(z, lambda v: exact.discrete_laplace_pmf(v, t / s), np.arange(-30, 31))
    assert p > 1e-6


def test_refills_keep_every_draw_exact():
    # a tiny first buffer forces many refills mid-draw; the law must not change
    class TinyFirst(exact.RandomWords):
        name = "tiny"

        def __init__(self):
            self.rng = np.random.default_rng(7)

        def words(self, count):
            return self.rng.integers(0, 2 ** 64 - 1, size=1 if count > 1 else count, dtype=np.uint64,
                                     endpoint=True)

    t, s = exact.dyadic_scale_at_least(2.0)
    z = exact.discrete_laplace(t, s, 20_000, TinyFirst())
    p = chi_square_p(z, lambda v: exact.discrete_laplace_pmf(v, t / s), np.arange(-20, 21))
    assert p > 1e-4


def test_exponential_mechanism_is_exact():
    gamma = np.array([0, 1, 3, 1, 10]) * (1 << 20) // 2   # exponents 0, .5, 1.5, .5, 5
    draws = np.array([exact.exponential_mechanism(gamma, 1 << 20, words(s)) for s in range(40_000)])
    weights = np.exp(-gamma / (1 << 20))
    p = chi_square_p(draws, lambda v: weights[v] / weights.sum(), np.arange(5))
    assert p > 1e-4


def test_release_mode_outputs_are_never_impossible_under_the_neighbour():
    # Mironov (2012): float Laplace outputs for a count of 0 are often impossible for a count of 1.
    # Release-mode outputs are integers, and the discrete Laplace gives every integer positive
    # probability, so the fraction of impossible outputs is exactly the fraction of non-integers.
    n = 1_000_000
    zero = PrivateKernel(np.zeros(n, dtype=np.int64), ExactNoise()).handle("t", "finalizer", 1.0)
    out = zero.laplace_identity(1.0)
    assert np.mean(out != np.round(out)) == 0.0
    one = PrivateKernel(np.ones(n, dtype=np.int64), ExactNoise(words(3))).handle("t", "finalizer", 1.0)
    out1 = one.laplace_identity(1.0)
    # the empirical privacy loss on well-populated outputs stays within epsilon = 1 (+ sampling slack)
    values, c0 = np.unique(out, return_counts=True)
    c1 = np.array([np.sum(out1 == v) for v in values])
    solid = (c0 > 2000) & (c1 > 2000)
    loss = np.abs(np.log(c0[solid] / c1[solid]))
    assert solid.sum() >= 8 and loss.max() < 1.0 + 0.1


def test_exact_noise_refuses_raw_float_draws_in_release_mode():
    from dphist import PrivacyViolation
    with pytest.raises(PrivacyViolation, match="release mode"):
        ExactNoise().laplace(1.0, 3)


def test_real_valued_route_is_on_a_power_of_two_grid():
    noise = ExactNoise(words(4))
    values = np.array([0.3, 1.7, -2.25])
    out = noise.laplace_mechanism(values, 0.75, 1.0, support=3)
    g = 2.0 ** (math.floor(math.log2(0.75)) - 20)
    assert np.all(out / g == np.round(out / g))
    many = noise.laplace_mechanism(np.zeros(200_000), 0.75, 1.0, support=1)
    # scale (ceil(0.75/g) + 2) g  ~ 0.75 (1 + 2^-18): variance 2 b^2 within sampling error
    assert many.var() == pytest.approx(2 * 0.75 ** 2, rel=0.02)


def test_kernel_exponential_mechanism_in_exact_mode_follows_its_law():
    # scores 0, 1, 2 with sensitivity 1 at epsilon 2: P(i) proportional to exp(score_i)
    # (the grid and the 2^-20 shrink of epsilon move these probabilities by < 1e-5)
    k = PrivateKernel(np.zeros(3, dtype=np.int64), ExactNoise(words(11)))
    h = k.handle("t", "partitioner", 2.0 * 20_001)
    scores = np.array([0.0, 1.0, 2.0])
    draws = np.array([h.exponential(lambda c: scores, 3, 1.0, 2.0) for _ in range(20_000)])
    weights = np.exp(scores)
    p = chi_square_p(draws, lambda v: weights[v] / weights.sum(), np.arange(3))
    assert p > 1e-4


@pytest.mark.parametrize("table, route", [(False, "compiled"), (True, "compiled"), (False, "interpreted")])
def test_draws_match_the_recorded_bit_by_bit_sampler(monkeypatch, table, route):
    """The sampler's draws on seeded words equal those recorded with its one-bit-at-a-time loops
    (``tests/make_exact_draws_fixture.py``), with and without the draw table forced on every call, and
    with the loop compiled by numba or run by the interpreter (what a small call does before numba is
    imported).  Kills (the first and the last checked by hand): a lookup advancing by a wrong count of bits,
    a table entry differing from the loop's value, a change in the words a call requests (later calls on
    the same source differ), the interpreted route's bit position not handed back after a refill."""
    import sys
    from pathlib import Path
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    try:
        import make_exact_draws_fixture as maker
    finally:
        sys.path.remove(str(here))
    monkeypatch.setattr(exact, "_runs_interpreted", lambda size: route == "interpreted")
    if table:   # every call, every scale (a table with no entries for the large ones)
        monkeypatch.setattr(exact, "TABLE_MIN_DRAWS", 1)
        monkeypatch.setattr(exact, "TABLE_MIN_HIT", 0.0)
        exact._draw_table.cache_clear()
    fixture = np.load(maker.OUT)
    mismatched = [name for name, args in maker.cases().items() if not np.array_equal(fixture[name], maker.draws(*args))]
    exact._draw_table.cache_clear()
    assert mismatched == []
    assert exact._draw_table(1, 1).size == 1 << exact.TABLE_BITS   # epsilon 1, sensitivity 1 takes the table


def _bit_by_bit_draws(t, s, words_array, size, limit=None):
    """CKS Algorithm 2 (Algorithm 1 inside), one random bit at a time, written plainly as the reference for
    the sampler's chunked comparisons: the same stream (bit 0 = least significant bit of the first word)
    read in the same order.  Returns the draws and the bits read; with ``limit``, OverflowError as soon
    as ``t k`` or ``u + t v`` passes it (Python integers never overflow)."""
    stream = [(int(w) >> i) & 1 for w in words_array for i in range(64)]
    e1 = [(int(w) >> (63 - i)) & 1 for w in exact._E1_BITS for i in range(64)]
    pos = 0

    def bit():
        nonlocal pos
        pos += 1
        return stream[pos - 1]

    def bernoulli_fraction(num, den):          # U < num / den, digit by digit
        r = num
        while True:
            r *= 2
            digit = int(r >= den)
            r -= digit * den
            if bit() != digit:
                return digit

    def bernoulli_exp_minus_one():             # U < exp(-1), digit by digit
        j = 0
        while True:
            if bit() != e1[j]:
                return e1[j]
            j += 1

    nbits = max(t - 1, 0).bit_length()
    out = []
    while len(out) < size:
        u = sum(bit() << i for i in range(nbits))
        if u >= t:
            continue
        k = 1
        while bernoulli_fraction(u, t * k):
            k += 1
            if limit is not None and t * k > limit:
                raise OverflowError(k)
        if k % 2 == 0:
            continue
        v = 0
        while bernoulli_exp_minus_one():
            v += 1
        if limit is not None and u + t * v > limit:
            raise OverflowError(v)
        y = (u + t * v) // s
        negative = bit()
        if negative and y == 0:
            continue
        out.append(-y if negative else y)
    return np.array(out, dtype=np.int64), pos


#: scales around the chunked comparisons' limits: denominators t k just below and above 2^(62 - CHUNK)
#: (digit by digit above it), numerators of 1 to 62 bits, and the scale of H's levels at 2^20 bins
_CHUNK_SCALES = ([(1, 1), (5377, 256), (2, 5), (3, 1), (255, 256), (257, 1)]
                 + [((1 << 53) - 1, 1), ((1 << 53) + 1, 3), ((1 << 54) - 3, 1 << 20), ((1 << 54) + 5, 1 << 30),
                    ((1 << 60) + 1, 1 << 40)]
                 + [(int(t), int(s)) for t, s in zip(np.random.default_rng(25).integers(1, 1 << 40, 12),
                                                     np.random.default_rng(26).integers(1, 1 << 12, 12))])


def _fill(monkeypatch, route, t, s, w, size):
    """The sampler's loop, compiled or interpreted, without a table: ``(draws, returned, bit position)``."""
    monkeypatch.setattr(exact, "_runs_interpreted", lambda n: route == "interpreted")
    out = np.empty(size, dtype=np.int64)
    state = np.zeros(1, dtype=np.int64)
    fill = exact._interpreted_fill if route == "interpreted" else exact._compiled().discrete_laplace_fill
    return out, fill(out, 0, t, s, w, state, exact._E1_BITS, exact._NO_TABLE, 0), state


def test_chunked_comparisons_read_the_bits_of_the_bit_by_bit_sampler(monkeypatch):
    """On 23 scales the sampler (digits compared CHUNK at a time), compiled and interpreted, returns the
    draws of the plain bit-by-bit reference above on the same words and stops on the same bit.  Kills
    (each checked by hand): an off-by-one in the chunk comparison (the digit returned one position off;
    one bit fewer consumed at exp(-1)'s first difference), a chunk taken for a denominator past its limit
    (int64 overflow: the compiled route only)."""
    for t, s in _CHUNK_SCALES:
        w = exact.GeneratorWords(np.random.default_rng(t % 1000)).words(200)
        expected, bits_read = _bit_by_bit_draws(t, s, w, 40)
        for route in ("compiled", "interpreted"):
            out, done, state = _fill(monkeypatch, route, t, s, w, 40)
            assert (done, int(state[0])) == (40, bits_read), (t, s, route)
            np.testing.assert_array_equal(out, expected, err_msg=f"t={t}, s={s}, {route}")


def test_numerators_past_2_61_read_the_bits_of_the_bit_by_bit_sampler(monkeypatch):
    """Numerators t of 2^61 to 2^62 (``t k`` past 2^62 for k >= 2, ``2 r`` past int64 in the digit
    comparison, ``t v`` past int64 for small v): the fill, compiled and interpreted, returns the
    reference's draws and stops on its bit, or returns -3 exactly where the reference's integers pass
    int64; never a wrong draw.  Kills: the digit comparison written as ``r = 2 r`` (int64 overflow, the
    compiled route's draws differ at t = 2^61 + 1), a missing guard on ``t k`` or ``u + t v`` (a wrapped
    draw).  Checked by hand: fails on the loop before the guards (draws differ from the reference)."""
    compared = guarded = 0
    for t, s in [((1 << 61) + 1, 1), ((1 << 61) + 12345, 1 << 30), ((1 << 62) - 1, 7), (3 << 60, 1 << 40)]:
        for seed in range(4):
            w = exact.GeneratorWords(np.random.default_rng(seed)).words(40)
            try:
                expected, bits_read = _bit_by_bit_draws(t, s, w, 12, limit=(1 << 63) - 1)
            except OverflowError:
                expected = None
            for route in ("compiled", "interpreted"):
                out, done, state = _fill(monkeypatch, route, t, s, w, 12)
                if expected is None:
                    assert done == -3, (t, s, seed, route)
                    guarded += 1
                else:
                    assert (done, int(state[0])) == (12, bits_read), (t, s, seed, route)
                    np.testing.assert_array_equal(out, expected, err_msg=f"t={t}, s={s}, {route}")
                    compared += 1
    assert compared >= 6 and guarded >= 6      # both outcomes are exercised


def test_discrete_laplace_refuses_numerators_past_its_limit():
    """A scale whose numerator passes 2^56 is refused with an error naming the limit (the sampler and
    the rounding of a scale, which the command line uses to check epsilon before anything runs);
    2^56 itself is drawn.  Kills: the old limit of 2^62 (draws at t >= 2^61 came out wrong), an
    off-by-one at the limit."""
    from dphist.errors import InvalidParameter
    with pytest.raises(ValueError, match=r"2\*\*56"):
        exact.discrete_laplace((1 << 56) + 1, 1, 10, words(1))
    with pytest.raises(InvalidParameter, match=r"too large.*2\*\*56"):
        exact.dyadic_scale_at_least(2.0 ** 57)
    assert exact.dyadic_scale_at_least(2.0 ** 56) == (1 << 56, 1)
    assert exact.discrete_laplace(1 << 56, 1, 10, words(1)).shape == (10,)


# ------------------------------------------------------------------ the split sampler (release mode)
#: scales of the split sampler's tests: epsilon 1 at sensitivity 1, H's levels at 2^20 bins (t / s = 5,377 / 256,
#: one chunk), a scale of two chunks, and one below 1 (no chunk; A's exponent past 1)
_SPLIT_SCALES = [1.0, 21.000000000000004, 1000.0, 0.4]


def _split_law(t, s, exponents_of=lambda plan: plan[4], window=60):
    """P(Z = z) for ``|z| <= window`` of the split sampler at scale ``t / s``, computed from its plan alone:
    each chunk's value c with probability p_c / sum p (rejection keeps c with p_c = exp(-r_c) of the plan's
    exponent r_c), A geometric of ratio rho = exp(-r_A), N = A 2^k + sum_j c_j 2^shifts[j], a sign with the
    negative zero redrawn."""
    plan = exact._split_plan(t, s)
    k, widths, shifts, offsets = plan[:4]
    rates = [math.exp(-a / b) for a, b in exponents_of(plan)]
    rho = rates[-1]
    n = np.arange(window + 1)
    p_n = (1 - rho) * rho ** (n >> k)
    for w, h, o in zip(widths.tolist(), shifts.tolist(), offsets.tolist()):
        p = np.array(rates[o:o + (1 << w)])
        p_n = p_n * (p / p.sum())[(n >> h) & ((1 << w) - 1)]
    p0 = p_n[0]
    z = np.arange(-window, window + 1)
    return z, p_n[np.abs(z)] / 2 / (1 - p0 / 2)    # z = 0: only its positive sign is kept


@pytest.mark.parametrize("scale", _SPLIT_SCALES)
def test_split_plan_gives_the_discrete_laplace_law_exactly(scale):
    """The split's law computed from its plan (chunk widths, shifts and exponents; A's exponent) equals
    exp(-|z| s / t) normalised on a window, to rounding.  Kills: a chunk's shift or unit off by a factor of
    two, the largest block 2^k above the scale, A's exponent without the 2^k (checked by hand: A's exponent
    s 2^k replaced by s 2^(k + 1))."""
    t, s = exact.dyadic_scale_at_least(scale)
    z, law = _split_law(t, s, window=int(8 * scale) + 8)
    np.testing.assert_allclose(law, exact.discrete_laplace_pmf(z, t / s), rtol=1e-9, atol=1e-15)


def _twin_exponents(plan):
    """A broken twin's exponents: A's ratio exp(-1.02 r_A) (2 % too little noise in the high part)."""
    a, b = plan[4][-1]
    return plan[4][:-1] + ((a * 51, b * 50),)


def _split_fit(z, t, s):
    """``(chi-square p-value, variance / the law's)`` of split draws ``z`` at scale ``t / s``: they fit when
    ``p > 1e-4`` and the variance is within 1.5 % (2 x 10^5 draws: about 3 standard errors)."""
    half = int(6 * t / s) + 3
    p = chi_square_p(z, lambda v: exact.discrete_laplace_pmf(v, t / s), np.arange(-half, half + 1))
    q = math.exp(-s / t)
    return p, z.var() / (2 * q / (1 - q) ** 2)


def test_split_checks_reject_a_twin_with_a_slightly_wrong_ratio():
    """The broken twin (A's exponent 2 % too large: 3.8 % too little variance at scale 21) fails both checks:
    its law on the window, and the fit of 2 x 10^5 of its draws (the real fill run on the twin's digits)."""
    t, s = exact.dyadic_scale_at_least(21.000000000000004)
    z, law = _split_law(t, s, exponents_of=_twin_exponents)
    assert not np.allclose(law, exact.discrete_laplace_pmf(z, t / s), rtol=1e-3, atol=1e-9)
    k, widths, shifts, offsets, exponents = exact._split_plan(t, s)
    twin = np.array([exact._exp_digits(a, b, 2) if a else [0, 0] for a, b in _twin_exponents(exact._split_plan(t, s))],
                    dtype=np.uint64).ravel()
    twin.setflags(write=False)
    out, state = np.empty(200_000, dtype=np.int64), np.zeros(1, dtype=np.int64)
    assert exact._compiled().split_fill(out, 0, k, widths, shifts, offsets, twin, 128, words(5).words(1 << 16), state,
                                        exact._NO_TABLES, 0, exact._NO_TABLE, 0) == out.size
    p, var_ratio = _split_fit(out, t, s)
    assert not (p > 1e-4 and abs(var_ratio - 1) < 0.015), (p, var_ratio)


def test_split_digits_are_those_of_exp():
    """The stored digits of every probability of the split's plans equal exp(-r)'s, computed independently
    with :mod:`decimal` (correctly rounded at 70 significant digits, about 232 bits).  Kills: an error bound
    of the fixed-point series too small (digits off in the last places), words in the wrong order."""
    import decimal
    ctx = decimal.Context(prec=70)
    for scale in _SPLIT_SCALES + [3.0, 1e6]:
        t, s = exact.dyadic_scale_at_least(scale)
        exponents = exact._split_plan(t, s)[4]
        digits = exact._split_digits(t, s, 2).reshape(-1, 2)
        for (a, b), row in zip(exponents, digits):
            if a == 0:
                continue
            value = ctx.exp(ctx.divide(decimal.Decimal(-a), decimal.Decimal(b)))
            lo, hi = (int(ctx.multiply(ctx.add(value, d), decimal.Decimal(1 << 128)))
                      for d in (decimal.Decimal("-1e-68"), decimal.Decimal("1e-68")))
            assert lo == hi, (a, b)
            assert (int(row[0]) << 64 | int(row[1])) == lo, (scale, a, b)


def test_comparison_with_stored_digits_has_the_exact_probability():
    """Over all 2^16 patterns of 16 bits, ``bernoulli_expansion`` returns 1 on exactly floor(p 2^16) of them and
    asks for more bits on one (a uniform below p has probability p: the truncation to 16 digits is exact).
    Kills: the digit returned one position off in the chunked comparison, a chunk compared against the wrong
    digits (checked by hand: ``(digits >> m) & 1``)."""
    from dphist.kernel import _exact_loop
    t, s = exact.dyadic_scale_at_least(21.000000000000004)
    digits = exact._split_digits(t, s, 2).reshape(-1, 2)
    for row in (digits[3], digits[-1]):
        ones = undecided = 0
        for p in range(1 << 16):
            res, pos = _exact_loop.bernoulli_expansion(row.tolist(), 0, 128, [p], 0, 16)
            ones += res == 1
            undecided += res == -1
        assert (ones, undecided) == (int(row[0]) >> 48, 1)


@pytest.mark.parametrize("scale", [1.0, 21.000000000000004, 1000.0])
def test_split_draws_fit_the_law(scale):
    """2 x 10^5 split draws (with the stage and draw tables: calls of 2^16) fit the discrete Laplace's pmf
    (chi-square) and its variance (:func:`_split_fit`).  Kills: the fill's stage values combined at a wrong
    shift, a table entry's bit count off (draws not independent), the negative zero not redrawn (checked by
    hand: that one and the bit count)."""
    t, s = exact.dyadic_scale_at_least(scale)
    src = words(17)
    z = np.concatenate([exact.discrete_laplace(t, s, 1 << 16, src, method="split") for _ in range(3)])
    p, var_ratio = _split_fit(z, t, s)
    assert p > 1e-4 and abs(var_ratio - 1) < 0.015, (scale, p, var_ratio)


@pytest.mark.parametrize("scale", [1.0, 21.000000000000004, 1000.0])
def test_split_tables_and_routes_return_the_same_draws(monkeypatch, scale):
    """On the same words the split fill returns the same draws and stops on the same bit with its stage and
    draw tables, without them, and interpreted (the tables and the route change the speed only).  Kills: a
    table entry advancing by a wrong count of bits, a whole-try entry's value or done flag wrong, the
    interpreted route's position not handed back (checked by hand: ``pos += (entry & 255) + 1``)."""
    from dphist.kernel import _exact_loop
    t, s = exact.dyadic_scale_at_least(scale)
    k, widths, shifts, offsets, _ = exact._split_plan(t, s)
    ex = exact._split_digits(t, s, exact.SPLIT_WORDS)
    w = words(int(scale) + 1).words(4096)
    runs = []
    tables, draws = exact._split_tables(t, s)
    assert draws.size == 1 << exact.TABLE_BITS or scale > 21    # whole draws tabled at scales 1 and 21
    for tables, draws in [(tables, draws), (tables, exact._NO_TABLE), (exact._NO_TABLES, exact._NO_TABLE)]:
        out, state = np.empty(3000, dtype=np.int64), np.zeros(1, dtype=np.int64)
        done = exact._compiled().split_fill(out, 0, k, widths, shifts, offsets, ex, 64 * exact.SPLIT_WORDS, w, state,
                                            tables, exact.TABLE_BITS if tables.size else 0,
                                            draws, exact.TABLE_BITS if draws.size else 0)
        runs.append((done, int(state[0]), out.tolist()))
    out, state = np.empty(300, dtype=np.int64), np.zeros(1, dtype=np.int64)
    done = exact._interpreted_split_fill(out, 0, k, widths, shifts, offsets, ex, 64 * exact.SPLIT_WORDS, w[:512],
                                         state, exact._NO_TABLES, 0, exact._NO_TABLE, 0)
    assert runs[0] == runs[1] == runs[2] and runs[0][0] == 3000
    assert done > 100 and out[:done].tolist() == runs[0][2][:done]


def test_split_redoes_a_draw_that_needs_more_digits():
    """A stream whose first 64 bits equal A's probability's first 64 digits (scale 1: the draw starts with A's
    trial) exhausts one stored word: the fill reports it, and ``discrete_laplace`` redoes the draw from its
    first bit with more digits, returning what a fill with two words returns.  Kills: the redo starting past
    the draw's first bit, no redo (an ArithmeticError)."""
    t, s = 1, 1
    k, widths, shifts, offsets, _ = exact._split_plan(t, s)
    first = int(exact._split_digits(t, s, 1)[-1])
    stream_word = int(f"{first:064b}"[::-1], 2)          # digit i of p at stream bit i
    rest = words(2).words(64)

    class Crafted(exact.RandomWords):
        name = "crafted"

        def __init__(self):
            self.calls = 0

        def words(self, count):
            self.calls += 1
            return np.concatenate(([np.uint64(stream_word)], rest))[:max(count, 65)].astype(np.uint64)

    out, state = np.empty(5, dtype=np.int64), np.zeros(1, dtype=np.int64)
    crafted = np.concatenate(([np.uint64(stream_word)], rest))
    assert exact._compiled().split_fill(out, 0, k, widths, shifts, offsets, exact._split_digits(t, s, 1), 64, crafted,
                                        state, exact._NO_TABLES, 0, exact._NO_TABLE, 0) == -2 and state[0] == 0
    assert exact._compiled().split_fill(out, 0, k, widths, shifts, offsets, exact._split_digits(t, s, 2), 128, crafted,
                                        state, exact._NO_TABLES, 0, exact._NO_TABLE, 0) == 5
    np.testing.assert_array_equal(exact.discrete_laplace(t, s, 5, Crafted(), method="split"), out)


def test_release_mode_draws_with_the_split_sampler_and_research_mode_with_cks():
    """Release mode (OS words, and the audit's seeded release-mode source) uses the split sampler; research
    mode's exact noise (seeded words) keeps CKS's, so its recorded releases stay bit-identical
    (``test_linear_releases.py``).  Kills: the choice inverted or made by the words' type."""
    from dphist.audit.harness import ReleaseNoise
    assert ExactNoise().method == "split" and ReleaseNoise(np.random.default_rng(0)).method == "split"
    assert ExactNoise(words(0)).method == "cks"
    with pytest.raises(ValueError, match="unknown discrete Laplace method"):
        exact.discrete_laplace(1, 1, 3, words(0), method="fast")


# ------------------------------------------------- release mode's large calls on threads
class SeededParts(exact.GeneratorWords):
    """Seeded words whose :meth:`parts` are independent seeded streams (``SeedSequence`` children): the threaded
    route, reproducibly.  ``same=True`` is the broken twin that hands every thread the same words."""

    name = "seeded-parts"

    def __init__(self, seed, same=False):
        super().__init__(np.random.default_rng(seed))
        self.seed, self.same, self.asked = seed, same, []

    def children(self, count):
        seqs = np.random.SeedSequence(self.seed).spawn(count)
        return [seqs[0]] * count if self.same else seqs

    def parts(self, count):
        self.asked.append(count)
        return [exact.GeneratorWords(np.random.default_rng(q)) for q in self.children(count)]


def _parts_look_independent(z, parts):
    """Whether ``parts`` consecutive near-equal slices of ``z`` are pairwise unequal and uncorrelated
    (|r| < 5 / sqrt(slice), about 5 standard errors) - what independent words per thread give."""
    from dphist.segmentation.parallel import split
    slices = [z[lo:hi] for lo, hi in split(0, z.size, parts)]
    m = min(x.size for x in slices)
    for i in range(len(slices) - 1):
        a, b = slices[i][:m], slices[i + 1][:m]
        if np.array_equal(a, b) or abs(np.corrcoef(a, b)[0, 1]) >= 5 / math.sqrt(m):
            return False
    return True


@pytest.fixture
def small_threaded_calls(monkeypatch):
    """Calls of 4,096 draws or more take the threaded route (cheap tests of it)."""
    monkeypatch.setattr(exact, "THREAD_MIN_DRAWS", 1 << 12)


@pytest.mark.parametrize("method", ["split", "cks"])
def test_threaded_draws_are_each_parts_own_serial_draws_and_fit_the_law(small_threaded_calls, method):
    """A call on 2 threads cuts its output into 8 parts, each drawn from its own source of ``parts``: the draws
    are, part by part, the serial draws of that part's words (so the law of every draw is the serial law:
    proven exact by the tests above), they fit the law (chi-square and variance) and the parts look independent.
    Kills: a part's slice shifted or the parts' order swapped, a part reading another part's words or a shared
    stream, the refill of one part's buffer from another's source (checked by hand: ``src=sources[0]``)."""
    from dphist.segmentation.parallel import split
    t, s = exact.dyadic_scale_at_least(21.000000000000004)
    size = 200_000
    source = SeededParts(11)
    z = exact.discrete_laplace(t, s, size, source, method=method, threads=2)
    assert source.asked == [2 * exact.PARTS_PER_THREAD]
    cuts = split(0, size, 2 * exact.PARTS_PER_THREAD)
    serial = [exact.discrete_laplace(t, s, hi - lo, exact.GeneratorWords(np.random.default_rng(q)), method=method,
                                     threads=1) for (lo, hi), q in zip(cuts, source.children(len(cuts)))]
    np.testing.assert_array_equal(z, np.concatenate(serial))
    p, var_ratio = _split_fit(z, t, s)
    assert p > 1e-4 and abs(var_ratio - 1) < 0.015, (p, var_ratio)
    assert _parts_look_independent(z, len(cuts))


def test_os_words_on_threads_fit_the_law_and_parts_are_independent(small_threaded_calls):
    """Release mode's own words on 2 threads: the draws fit the law and the parts look independent; the broken
    twin that hands every thread the same words (equal parts) is rejected by that check.  Kills: the threads
    given the same words (the twin), the parts written over one another (checked by hand: each part filled
    into ``out[0:hi - lo]``)."""
    t, s = exact.dyadic_scale_at_least(21.000000000000004)
    z = exact.discrete_laplace(t, s, 200_000, exact.SystemRandomWords(), method="split", threads=2)
    p, var_ratio = _split_fit(z, t, s)
    assert p > 1e-6 and abs(var_ratio - 1) < 0.02, (p, var_ratio)
    assert _parts_look_independent(z, 2 * exact.PARTS_PER_THREAD)
    twin = exact.discrete_laplace(t, s, 200_000, SeededParts(3, same=True), method="split", threads=2)
    assert not _parts_look_independent(twin, 2 * exact.PARTS_PER_THREAD)


def test_threaded_route_taken_for_large_release_calls_only(monkeypatch):
    """Release mode (``ExactNoise()``, OS words) draws a call of ``THREAD_MIN_DRAWS`` values on
    ``DPHIST_THREADS`` threads, a smaller call or one thread serially; the compiled fills release the GIL.
    Kills: the threaded route never taken, the project's thread setting ignored, ``nogil`` dropped (checked by
    hand: ``_threads_for`` returning 1)."""
    asked = []
    monkeypatch.setattr(exact.SystemRandomWords, "parts", lambda self, n: asked.append(n) or [self] * n)
    noise = ExactNoise()
    monkeypatch.setenv("DPHIST_THREADS", "2")
    noise.laplace_mechanism(np.zeros(exact.THREAD_MIN_DRAWS, dtype=np.int64), 1, 1.0, integral=True)
    assert asked == [2 * exact.PARTS_PER_THREAD]
    noise.laplace_mechanism(np.zeros(exact.THREAD_MIN_DRAWS - 1, dtype=np.int64), 1, 1.0, integral=True)
    monkeypatch.setenv("DPHIST_THREADS", "1")
    noise.laplace_mechanism(np.zeros(exact.THREAD_MIN_DRAWS, dtype=np.int64), 1, 1.0, integral=True)
    assert asked == [2 * exact.PARTS_PER_THREAD]
    jit = exact._compiled()
    assert jit.split_fill.targetoptions["nogil"] and jit.discrete_laplace_fill.targetoptions["nogil"]


@pytest.mark.parametrize("method", ["split", "cks"])
def test_seeded_words_are_read_serially_on_any_thread_count(small_threaded_calls, method):
    """Seeded words (research mode's exact noise, the audit's seeded release-mode source, tests) give the same
    draws on 2 threads as on one: they have no independent parts.  Kills: seeded words drawn on threads
    (checked by hand: ``GeneratorWords.parts`` returning ``[self] * n``: other draws)."""
    t, s = exact.dyadic_scale_at_least(3.0)
    one = exact.discrete_laplace(t, s, 50_000, words(4), method=method, threads=1)
    np.testing.assert_array_equal(exact.discrete_laplace(t, s, 50_000, words(4), method=method, threads=2), one)


def test_a_large_call_from_a_pool_thread_draws_serially(small_threaded_calls):
    """Noise drawn inside a threaded step of a search (a task of ``parallel.run_all``) is drawn on that thread
    alone: handing parts to the pool from one of its own threads could wait forever behind that task.  Kills:
    the pool-thread check dropped (checked by hand: the call never returned, the join timed out)."""
    import threading
    from dphist.segmentation import parallel
    t, s = exact.dyadic_scale_at_least(3.0)
    sources, out = [SeededParts(1), SeededParts(2)], [None, None]
    both = threading.Barrier(2, timeout=20)     # the two tasks run at once: one on the pool's thread

    def task(i):
        both.wait()
        out[i] = exact.discrete_laplace(t, s, 20_000, sources[i], method="split", threads=2)

    runner = threading.Thread(target=parallel.run_all, args=([lambda: task(0), lambda: task(1)], 2), daemon=True)
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive() and all(o is not None and o.size == 20_000 for o in out)
    # the task run by the pool's thread drew serially, the other on threads
    assert sorted(src.asked for src in sources) == [[], [2 * exact.PARTS_PER_THREAD]]
