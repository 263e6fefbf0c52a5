"""research mode's Laplace stream cut into parts drawn by threads (dphist.kernel.streams) gives the serial
draws, bit for bit, and leaves the generator where the serial call does.  Each test names the mutation it
kills (checked by hand: the advance by ``lo - 1``, the skipped repair, the state not moved on)."""
import numpy as np
import pytest

from dphist.kernel import streams
from dphist.kernel.noise import SeededLaplace
from dphist.kernel.persons import PersonLevelNoise

#: PCG64's 128-bit multiplier (O'Neill's PCG_DEFAULT_MULTIPLIER_128, numpy's pcg64.h)
_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645


def _zero_at(position: int, seed: int = 3) -> np.random.Generator:
    """A PCG64 generator whose word number ``position`` (from 0) is 0: a uniform of 0, which numpy's
    Laplace rejects, reading one more word for that value."""
    bg = np.random.PCG64(seed)
    state = bg.state
    inc, inverse, modulus = state["state"]["inc"], pow(_MULTIPLIER, -1, 1 << 128), 1 << 128
    s = (0x0123456789ABCDEF << 64) | 0x0123456789ABCDEF   # high word == low word: XSL-RR outputs 0
    for _ in range(position + 1):
        s = ((s - inc) * inverse) % modulus
    state["state"]["state"] = s
    bg.state = state
    assert bg.random_raw(position + 1)[-1] == 0
    bg.state = state
    return np.random.Generator(bg)


def _drawn(rng, scale, cuts, threads):
    """The values handed to ``work`` (the last time for each part) and how often each part was handed."""
    out = np.full(cuts[-1], np.nan)
    calls = [0] * (len(cuts) - 1)

    def work(i, lo, hi, draws):
        assert (lo, hi) == (cuts[i], cuts[i + 1])
        out[lo:hi] = draws
        calls[i] += 1
    streams.LaplaceParts(rng, scale, cuts).run(work, threads)
    return out, calls


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("cuts", [[0, 1], [0, 7, 8, 30, 31, 64], [0, 500, 1000, 1001]])
def test_parts_are_the_serial_draws(threads, cuts):
    """Every value and the generator's next draws equal one serial call's, each part drawn once.  Kills: a
    copy advanced by one word too few or too many (the check then redraws every later part), parts written to another part's place, the caller's generator left
    where it was (or moved to the end of the first part)."""
    serial, split = np.random.default_rng(11), np.random.default_rng(11)
    serial.random(dtype=np.float32)                    # a buffered 32-bit half word on both sides
    split.random(dtype=np.float32)
    expected = serial.laplace(0.0, 2.5, size=cuts[-1])
    drawn, calls = _drawn(split, 2.5, cuts, threads)
    assert np.array_equal(drawn, expected)
    assert calls == [1] * (len(cuts) - 1)              # no part drawn twice: every copy started on its word
    assert np.array_equal(split.random(5, dtype=np.float32), serial.random(5, dtype=np.float32))
    assert np.array_equal(split.laplace(0.0, 1.0, 9), serial.laplace(0.0, 1.0, 9))


@pytest.mark.parametrize("zero", [0, 5, 9, 10, 30])
def test_a_rejected_zero_is_repaired(zero):
    """A uniform of exactly 0 (one value reads two words) inside a part, at its end or in the last
    part: the later parts are drawn again from where the serial call stood.  Kills: no repair (every
    value after the zero one word early), a repair that restarts at the wrong part, the generator
    moved to the end as if no word had been rejected."""
    cuts = [0, 10, 11, 25, 40]
    expected = _zero_at(zero).laplace(0.0, 3.0, size=40)
    serial = _zero_at(zero)
    serial.laplace(0.0, 3.0, size=40)
    split = _zero_at(zero)
    drawn, calls = _drawn(split, 3.0, cuts, 2)
    assert np.array_equal(drawn, expected)
    first = int(np.searchsorted(cuts, zero, side="right"))      # the parts after the zero's are drawn again
    assert calls == [1] * first + [2] * (len(cuts) - 1 - first)
    assert split.bit_generator.state == serial.bit_generator.state


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("zero", [None, 0, 9, 10, 39])
def test_filled_parts_are_the_serial_draws(monkeypatch, compiled, zero):
    """``prepare``, ``fill`` of every part (in any order: threads) and ``settle`` leave the serial call's
    values in the buffer and the generator where that call leaves it, with the compiled loops or numpy's
    own draws, a uniform of 0 anywhere or none.  Kills: a part filled from another part's copy, the
    rejected zero not repaired (every later value one word early), the generator not moved on."""
    from dphist.kernel import noise
    if not compiled:
        monkeypatch.setattr(noise, "_compiled", lambda size: False)
    cuts = [0, 10, 11, 25, 40]
    make = (lambda: np.random.default_rng(11)) if zero is None else (lambda: _zero_at(zero))
    serial, split = make(), make()
    expected = serial.laplace(0.0, 3.0, size=40)
    parts = streams.LaplaceParts(split, 3.0, cuts)
    parts.prepare()
    out = np.full(40, np.nan)
    for i in (3, 1, 0, 2):
        parts.fill(i, out[cuts[i]:cuts[i + 1]])
    parts.settle(out)
    assert np.array_equal(out, expected)
    assert split.bit_generator.state == serial.bit_generator.state


def test_sources_that_cannot_cut_their_stream_say_so():
    """Only a Generator on PCG64 is cut (another bit generator's words per double and ``advance`` differ);
    a person-level source forwards at k times the sensitivity.  Kills: parts offered for MT19937 (wrong
    draws), the person-level scale not multiplied by k."""
    assert SeededLaplace(np.random.Generator(np.random.MT19937(1))).laplace_parts(1.0, 1.0, [0, 5]) is None
    assert SeededLaplace(np.random.default_rng(1)).probe().laplace_parts(1.0, 1.0, [0, 5]) is None
    person = PersonLevelNoise(SeededLaplace(np.random.default_rng(4)), 3)
    parts = person.laplace_parts(2.0, 0.5, [0, 4, 9])
    assert parts.scale == 2.0 * 3 / 0.5
    with pytest.raises(ValueError):
        streams.LaplaceParts(np.random.default_rng(1), 1.0, [0, 3, 3])
