"""Research mode's compiled Laplace sampler (``dphist.kernel._laplace_jit``) gives numpy's draws bit for bit.

Each test names the mutation of ``dphist/kernel/noise.py`` or ``_laplace_jit.py`` it kills.
"""
import numpy as np
import pytest

from dphist.kernel import noise
from dphist.kernel.noise import COMPILED_DRAWS, SeededLaplace

#: PCG64's default multiplier (numpy's ``pcg64.h``): the state before a chosen output is computable
_PCG_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645


@pytest.fixture(scope="module", autouse=True)
def sampler():
    """The compiled loops, checked on this machine.  Kills: any change of the loops' arithmetic (the check
    then refuses them; only numba's vector math library, SVML, is a reason for that, and skips)."""
    if not noise._compiled(noise.COMPILED_IMPORT_DRAWS):
        import numba
        if numba.config.USING_SVML:
            pytest.skip("numba vectorises log with SVML here: numpy's own sampler is used (the same draws)")
        pytest.fail("the compiled Laplace loops do not give numpy's Generator.laplace bit for bit")
    return noise._SAMPLER


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.int32, np.uint8])
def test_same_floats_and_state_as_numpy(dtype):
    """Kills: a branch of the formula changed (``0.0 + log`` for the upper half, ``U + U - 2.0``), the
    operands of ``(2 - U) - U`` regrouped, the scale applied after the sign, the values added twice or not
    at all, a draw more or fewer than numpy's (the generator's state after the call)."""
    values = np.random.default_rng(3).integers(0, 200, (2, 2600)).astype(dtype)
    for seed, scale in ((0, 1.0), (1, 0.37), (2, 1234.5)):
        ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        got = SeededLaplace(ours).laplace_mechanism(values, scale, 1.0)
        want = theirs.laplace(0.0, scale, size=values.shape)
        want += values
        assert got.dtype == np.float64 and got.shape == values.shape
        assert got.tobytes() == want.tobytes()
        raw = SeededLaplace(ours).laplace(scale, COMPILED_DRAWS + 3)
        assert raw.tobytes() == theirs.laplace(0.0, scale, size=COMPILED_DRAWS + 3).tobytes()
        assert ours.bit_generator.state == theirs.bit_generator.state


def _at_zero_first():
    """A Generator whose next uniform is exactly 0.0."""
    g = np.random.Generator(np.random.PCG64(5))
    state = g.bit_generator.state
    word = 0x0123456789ABCDEF
    after = (word << 64) | word            # PCG64's output of this state is hi ^ lo = 0, so U = 0.0
    state["state"]["state"] = ((after - state["state"]["inc"]) * pow(_PCG_MULTIPLIER, -1, 1 << 128)) % (1 << 128)
    g.bit_generator.state = state
    return g


def test_a_zero_uniform_is_redrawn_as_numpy_does():
    """numpy rejects a uniform of exactly 0 and draws again.  Kills: the fallback dropped (``if zeros:``
    never taken: the first value would be -inf and every later draw shifted), or the state not restored
    before numpy's redraw."""
    assert _at_zero_first().random() == 0.0
    values = np.arange(COMPILED_DRAWS + 10)
    ours, theirs = _at_zero_first(), _at_zero_first()
    got = SeededLaplace(ours).laplace_mechanism(values, 1.0, 2.0)
    want = theirs.laplace(0.0, 0.5, size=values.size) + values
    assert np.isfinite(got).all() and got.tobytes() == want.tobytes()
    assert ours.bit_generator.state == theirs.bit_generator.state


def test_gathered_measurement_equals_the_gathered_copy(monkeypatch):
    """``laplace_mechanism_taken(values, index)`` (the kernel's singleton groups in a sorted order) gives the
    floats and the generator state of ``laplace_mechanism(values[index])``, over several gather blocks (blocks
    of 1,000 here, the last one short), and after a zero uniform.  Kills: a block's gather shifted
    (``index[lo + 1:...]``), a block skipped or the loop stopping before the last short block, the values read in
    domain order instead of through ``index``, the zero-uniform fallback dropped or run without restoring the
    state."""
    monkeypatch.setattr(noise, "_TAKE_BLOCK", 1000)
    n = COMPILED_DRAWS + 1237
    values = np.random.default_rng(4).integers(0, 500, n).astype(np.int64)
    index = np.random.default_rng(5).permutation(n)
    for make in (lambda: np.random.default_rng(11), _at_zero_first):
        ours, theirs = make(), make()
        got = SeededLaplace(ours).laplace_mechanism_taken(values, index, 1.0, 0.5, integral=True, support=1)
        want = SeededLaplace(theirs).laplace_mechanism(values[index], 1.0, 0.5, integral=True, support=1)
        assert np.isfinite(got).all() and got.tobytes() == want.tobytes()
        assert ours.bit_generator.state == theirs.bit_generator.state


def test_the_check_refuses_loops_that_differ(monkeypatch, sampler):
    """A ``log`` that differs in one last bit (a vector math library) must send every draw back to numpy.
    Kills: ``_checked_sampler`` returning the loops without comparing them with ``Generator.laplace``."""
    class OneUlpOff:
        @staticmethod
        def laplace_into(u, scale, out):
            zeros = sampler.laplace_into(u, scale, out)
            out[u.size // 2] = np.nextafter(out[u.size // 2], np.inf)
            return zeros

        laplace_add_into = staticmethod(sampler.laplace_add_into)

    import dphist.kernel as kernel_package     # ``from . import _laplace_jit`` reads the package's attribute
    monkeypatch.setattr(kernel_package, "_laplace_jit", OneUlpOff)
    assert noise._checked_sampler() is False


def test_large_calls_take_the_compiled_loops(monkeypatch, sampler):
    """Kills: ``_compiled`` answering False always (numpy's sampler everywhere: the same bits, the speed
    of ``benchmarks/run.py peers`` lost) or the threshold moved above the sizes it is documented for."""
    calls = []

    class Spy:
        @staticmethod
        def laplace_add_into(u, scale, values, out):
            calls.append(u.size)
            return sampler.laplace_add_into(u, scale, values, out)

    monkeypatch.setattr(noise, "_SAMPLER", Spy)
    SeededLaplace(np.random.default_rng(0)).laplace_mechanism(np.zeros(COMPILED_DRAWS, dtype=np.int64), 1.0, 1.0)
    SeededLaplace(np.random.default_rng(0)).laplace_mechanism(np.zeros(COMPILED_DRAWS - 1, dtype=np.int64), 1.0, 1.0)
    assert calls == [COMPILED_DRAWS]


def test_a_scale_numpy_refuses_is_still_refused():
    """numpy's ``Generator.laplace`` refuses a negative scale (and draws NaN at a NaN scale); the compiled
    route must not draw with either.  Kills: the route taken whatever the scale (a negative scale flips
    every draw, silently)."""
    for call in (lambda s: SeededLaplace(np.random.default_rng(0)).laplace(s, COMPILED_DRAWS),
                 lambda s: SeededLaplace(np.random.default_rng(0)).laplace_mechanism(np.zeros(COMPILED_DRAWS), s, 1.0)):
        with pytest.raises(ValueError):
            call(-1.0)
        assert np.isnan(call(float("nan"))).all()


def _zero_at(k):
    """A Generator whose ``k``-th next uniform (from 0) is exactly 0.0."""
    g = _at_zero_first()
    g.bit_generator.advance((1 << 128) - k)
    return g


@pytest.mark.parametrize("consume", [False, True])
def test_spread_measurement_equals_the_gathered_measurement_put_back(monkeypatch, consume):
    """``laplace_mechanism_spread(values, index)`` gives ``out[index] = laplace_mechanism(values[index])``, the
    same floats and the same generator state, over several blocks (1,000 here, the last one short), with a
    uniform equal to 0 in the first block, in a later one and as the last draw; with ``consume`` in the
    values' own memory.  Kills: the draws added in domain order instead of at ``index``, a block skipped or
    the last short block dropped, the zero-uniform fallback dropped or run from the first block's state, and
    ``consume`` ignored (a new array)."""
    monkeypatch.setattr(noise, "_TAKE_BLOCK", 1000)
    n = COMPILED_DRAWS + 1237
    values = np.random.default_rng(4).integers(0, 500, n).astype(np.int64)
    index = np.random.default_rng(5).permutation(n)
    makes = [lambda: np.random.default_rng(11), _at_zero_first] + [lambda k=k: _zero_at(k) for k in (2500, n - 1)]
    for make in makes:
        ours, theirs = make(), make()
        mine = values.copy()
        got = SeededLaplace(ours).laplace_mechanism_spread(mine, index, 1.0, 0.5, consume=consume, integral=True,
                                                            support=1)
        want = np.empty(n)
        want[index] = SeededLaplace(theirs).laplace_mechanism(values[index], 1.0, 0.5, integral=True, support=1)
        assert np.isfinite(got).all() and got.tobytes() == want.tobytes()
        assert ours.bit_generator.state == theirs.bit_generator.state
        assert np.shares_memory(got, mine) == consume


def test_spread_measurement_of_other_inputs_takes_the_generic_route(monkeypatch):
    """Values that are not int64 and a call below the compiled size give the generic route's floats (the
    gathered measurement put back) without the compiled loops.  Kills: the compiled route taken for float
    values (the compiled route gathers int64) or for every size."""
    calls = []
    monkeypatch.setattr(noise, "_compiled_laplace_spread", lambda *a: calls.append(a))
    for values in (np.arange(COMPILED_DRAWS, dtype=float), np.arange(COMPILED_DRAWS - 1, dtype=np.int64)):
        index = np.random.default_rng(6).permutation(values.size)
        got = SeededLaplace(np.random.default_rng(1)).laplace_mechanism_spread(values, index, 1.0, 1.0)
        want = np.empty(values.size)
        want[index] = SeededLaplace(np.random.default_rng(1)).laplace_mechanism(values[index], 1.0, 1.0)
        assert got.tobytes() == want.tobytes()
    assert calls == []
