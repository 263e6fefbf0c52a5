"""Failures that carry no information: every foreseeable failure happens before the charge, on public
input only; counts and grid values are clamped instead of refused; release exports carry no timings.

Each test names the mutation it kills.  What stays unprotected (user code that fails only on some
histograms) is tested too, as the documented abort after a charge.
"""
import json

import numpy as np
import pytest

import dphist
from dphist import InvalidParameter, Partition, PrivacyViolation, VettedMechanism
from dphist.kernel import COUNT_CAP, ExactNoise, PrivateKernel, SeededLaplace
from dphist.kernel.private import count_cap

X = np.array([3, 1, 2, 0, 5])


def fresh(x=X, noise=None, vetted=(), budget=1.0):
    k = PrivateKernel(x, noise if noise is not None else SeededLaplace(np.random.default_rng(0)))
    return k, k.handle("t", "finalizer", budget, vetted=vetted)


class Mech(VettedMechanism):
    """A vetted Laplace mechanism whose output ``run`` can be replaced per test."""

    name = "test.mech"
    proof = "test"

    def __init__(self, run):
        self._run = run

    def run(self, counts, epsilon, noise):
        return self._run(counts, epsilon, noise)


def laplace(c, e, noise):
    return noise.laplace_mechanism(c.astype(float), 1.0, e)


REFUSED = [
    # (what, call, error, words); every one of them is refused before the charge
    ("exponential: score raises on the probe", lambda h: h.exponential(lambda c: c[99], 5, 1.0, 0.5),
     InvalidParameter, "IndexError"),
    ("exponential: wrong length on the probe", lambda h: h.exponential(lambda c: c[:3], 5, 1.0, 0.5),
     InvalidParameter, "one per candidate"),
    ("exponential: non-finite on the probe", lambda h: h.exponential(lambda c: c / c.sum(), 5, 1.0, 0.5),
     InvalidParameter, "non-finite"),
    ("custom: not declared", lambda h: h.custom(Mech(laplace), 0.5), InvalidParameter, "without opting in"),
    ("custom: raises on the probe", lambda h: h.custom(Mech(lambda c, e, n: c[99]), 0.5, ),
     InvalidParameter, "IndexError"),
    ("custom: non-finite on the probe", lambda h: h.custom(Mech(lambda c, e, n: c / c.sum()), 0.5),
     InvalidParameter, "non-finite"),
    ("linear: answers could overflow a float", lambda h: h.laplace_linear(np.full((1, 5), 1e290), 0.5),
     InvalidParameter, "overflow"),
]


@pytest.mark.parametrize("what, call, error, words", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_refused_privacy_call_spends_nothing(what, call, error, words):
    """Kills: each check moved after the charge (the probe of the score, of the vetted mechanism's
    output, the opt-in, the overflow bound of a linear query): the refusal would then cost epsilon and
    its happening could depend on the data."""
    vetted = () if "declared" in what else ("test.mech",)
    with np.errstate(divide="ignore", invalid="ignore"):
        k, h = fresh(vetted=vetted)
        with pytest.raises(error, match=words):
            call(h)
    assert h.spent == 0.0 and len(k.ledger) == 0


def test_raw_float_noise_in_release_mode_is_refused_on_the_probe():
    """Kills: the probe using another noise source than the run's kind (release mode's refusal of raw
    float noise would then come after the charge)."""
    k, h = fresh(noise=ExactNoise(), vetted=("test.mech",))
    with pytest.raises(PrivacyViolation, match="public probe"):
        h.custom(Mech(lambda c, e, noise: c + noise.laplace(1 / e, c.size)), 0.5)
    assert h.spent == 0.0 and len(k.ledger) == 0


def test_an_output_that_changes_structure_on_the_data_stops_the_run_after_the_charge():
    """The documented unprotected case: the probe passes, the data gives another structure.  Kills:
    dropping the comparison with the probe's structure (a shape that depends on the data would be
    published)."""
    k, h = fresh(vetted=("test.mech",))
    with pytest.raises(PrivacyViolation, match="another structure"):
        h.custom(Mech(lambda c, e, n: laplace(c, e, n)[:3] if c.any() else laplace(c, e, n)), 0.5)
    assert h.spent == 0.5


def test_counts_are_clamped_at_the_cap_which_keeps_the_sensitivity():
    """Kills: removing the clamp (the answer would be 2**50), or a clamp that changes small counts."""
    x = np.array([2 ** 50, 7, 0])
    _, h = fresh(x=x, budget=1e12)
    out = h.laplace_identity(1e12)
    assert np.allclose(out, [COUNT_CAP, 7, 0], atol=1e-3)
    neighbour = x.copy()
    neighbour[0] += 1          # above the cap, neighbours measure the same count: the shift is at most 1
    _, h2 = fresh(x=neighbour, budget=1e12)
    assert abs(h2.laplace_identity(1e12)[0] - out[0]) <= 1 + 1e-3
    assert count_cap(2 ** 30) == 2 ** 32 and count_cap(10) == COUNT_CAP   # large domains: no int64 overflow


def test_exact_grid_values_are_clamped_not_refused():
    """Kills: restoring the raise on values beyond the exact grid (an abort after the charge whose
    happening depends on the data)."""
    noise = ExactNoise()
    out = noise.laplace_mechanism(np.array([1e40, -1e40, 3.0]), 1.0, 1.0)
    assert np.isfinite(out).all() and out[0] > 1e10 and out[1] < -1e10
    assert 0 <= noise.exponential_mechanism(np.array([1e40, 0.0, -1e40]), 1.0, 1.0) < 3


def test_release_exports_carry_no_timings(tmp_path):
    """Kills: Release.to_dict exporting the stage timings in release mode (a stage's wall time depends
    on the data); research mode keeps them.  The CLI's release-mode output and sidecar carry none."""
    pipe = dphist.make_algorithm("identity")
    released = pipe.run(np.arange(20), 1.0).to_dict()
    assert "timings" not in released and "seed" not in released
    assert set(pipe.run(np.arange(20), 1.0, seed=1).to_dict()["timings"]) == {"initializer", "sorter", "partitioner",
                                                                              "finalizer"}
    from dphist.cli import main
    src = tmp_path / "h.txt"
    src.write_text("\n".join(map(str, range(20))))
    assert main(["run", "-a", "identity", "-i", str(src), "-e", "1", "-o", str(tmp_path / "r.npy")]) == 0
    sidecar = (tmp_path / "r.npy.json").read_text()
    assert "release mode" in sidecar and not any(w in sidecar for w in ("timing", "seconds", "initializer"))
    assert main(["run", "-a", "identity", "-i", str(src), "-e", "1", "-o", str(tmp_path / "r.csv")]) == 0
    text = (tmp_path / "r.csv").read_text()
    assert not any(w in text for w in ("timing", "seconds", "initializer"))
    json.loads(sidecar)


def test_a_partition_argument_is_copied_so_later_changes_cannot_move_the_measurement():
    """Kills: the pipeline handing the component's own Partition object on (a finalizer that edits it
    after the check would be measured on unchecked groups)."""
    from dphist import Finalizer, Partitioner, Pipeline

    class Keeps(Partitioner):
        name = "test.keeps"
        citation = "test"
        kept = []

        def partition(self, bins, ctx):
            out = Partition.from_sizes([2, 3])
            Keeps.kept.append(out)
            return out

    class Edits(Finalizer):
        name = "test.edits"
        citation = "test"

        def finalize(self, bins, ctx):
            Keeps.kept[0].order[1] = 0       # edits the partitioner's object after the pipeline's check
            return bins.spread(ctx.data.laplace_partition(bins, ctx.budget))

    r = Pipeline(None, None, Keeps(), Edits()).run(X, 1.0, seed=1)
    assert sorted(r.partition.order) == list(range(5))


class OnceMech(Mech):
    """:class:`Mech` declared ``probe_once``: its probe is fixed by the domain, epsilon and noise kind."""

    probe_once = True


def test_a_mechanism_declared_probe_once_is_probed_once_per_domain_epsilon_and_noise_kind():
    """``probe_once``: probed the first time per (object, domain size, epsilon, kind of noise source), the
    structure kept and every later output on the data still checked against it; a failed probe is never
    kept (a broken twin is refused on every call, nothing spent); a mechanism not declared is probed every
    call; the entry goes with the object.  Kills: probe_once ignored (probed every call), a key without
    epsilon, domain or noise kind (their first probe skipped), a kept failure or a structure kept before
    the probe passed, the structure check skipped when the probe is kept, the default made True, entries
    held after the object is freed."""
    from dphist.kernel.private import _PROBED
    probes = []

    def run(c, e, noise):
        if not c.any():
            probes.append((c.size, e, type(noise).__name__))
        return laplace(c, e, noise)

    once = OnceMech(run)
    for _ in range(3):
        once_h = fresh(vetted=("test.mech",))[1]
        once_h.custom(once, 0.5)
    assert len(probes) == 1 and once_h.spent == 0.5
    fresh(vetted=("test.mech",))[1].custom(once, 0.25)                     # another epsilon
    fresh(x=np.arange(7), vetted=("test.mech",))[1].custom(once, 0.5)     # another domain
    from dphist.kernel.persons import PersonLevelNoise                     # other kinds of noise source
    for k in (2, 3, 3):
        person = PersonLevelNoise(SeededLaplace(np.random.default_rng(0)), k)
        fresh(noise=person, vetted=("test.mech",))[1].custom(once, 0.5)
    assert len(probes) == 5 and len(set(probes)) == 4
    plain = Mech(run)
    for _ in range(2):                                                    # not declared: every call
        fresh(vetted=("test.mech",))[1].custom(plain, 0.5)
    assert len(probes) == 7
    broken = OnceMech(lambda c, e, n: c[99])                              # fails on the probe, every time
    for _ in range(2):
        k, h = fresh(vetted=("test.mech",))
        with pytest.raises(InvalidParameter, match="IndexError"):
            h.custom(broken, 0.5)
        assert h.spent == 0.0 and len(k.ledger) == 0
    flip = []                                   # a false declaration: the structure changes after the probe
    liar = OnceMech(lambda c, e, n: laplace(c, e, n)[:3] if flip and c.any() else laplace(c, e, n))
    fresh(vetted=("test.mech",))[1].custom(liar, 0.5)
    flip.append(1)
    k, h = fresh(vetted=("test.mech",))
    with pytest.raises(PrivacyViolation, match="another structure"):
        h.custom(liar, 0.5)
    assert VettedMechanism.probe_once is False
    i = id(once)
    assert i in _PROBED
    del once                    # freed here (no cycle holds it), its entry with it
    assert i not in _PROBED


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("probe_once", [False, True])
def test_a_small_float_output_non_finite_on_the_data_stops_the_run(bad, probe_once):
    """A vetted mechanism's output of a few floats (checked value by value, ``_keeps_structure``'s short
    route) finite on the probe and not on the data.  Kills: that route skipping the finiteness test, or
    testing only the first value (the bad one is the last)."""
    mech = (OnceMech if probe_once else Mech)(lambda c, e, n: np.array([0.0, 1.0, 2.0, bad if c.any() else 3.0]))
    k, h = fresh(vetted=("test.mech",))
    with pytest.raises(PrivacyViolation, match="non-finite"):
        h.custom(mech, 0.5)
    assert h.spent == 0.5


@pytest.mark.parametrize("other", [lambda v: v.reshape(2, 2), lambda v: v[:3], lambda v: v.astype(complex),
                                   lambda v: v.tolist(), lambda v: np.append(v, 0.0)])
def test_a_small_float_output_of_another_shape_on_the_data_stops_the_run(other):
    """The short route compares the output's rank, kind and shape with the probe's.  Kills: comparing
    sizes only (a reshape passes), or the kind (a complex output passes), or the type (a list passes)."""
    mech = OnceMech(lambda c, e, n: other(np.arange(4.0)) if c.any() else np.arange(4.0))
    fresh(x=np.zeros(5, dtype=int), vetted=("test.mech",))[1].custom(mech, 0.5)     # the probe's structure kept
    k, h = fresh(vetted=("test.mech",))
    with pytest.raises(PrivacyViolation, match="another structure"):
        h.custom(mech, 0.5)


@pytest.mark.parametrize("eps", [0.0, -1.0, float("inf"), float("nan"), np.float64("nan"), 0, True, "abc"])
def test_custom_refuses_a_bad_epsilon_before_the_charge(eps):
    """``custom`` takes a positive finite Python float as it is, anything else through ``validate_epsilon``.
    Kills: the float shortcut accepting zero, a negative, an infinite or a NaN epsilon."""
    k, h = fresh(vetted=("test.mech",))
    with pytest.raises(InvalidParameter, match="epsilon"):
        h.custom(OnceMech(laplace), eps)
    assert h.spent == 0.0 and len(k.ledger) == 0


@pytest.mark.parametrize("sens", [0.0, -1.0, float("inf"), float("nan"), None, True])
def test_custom_refuses_a_bad_sensitivity_before_the_charge(sens):
    """The mechanism's stated sensitivity, read on every call.  Kills: the float shortcut accepting a
    non-positive or non-finite sensitivity, or the sensitivity validated once per object (changed after a
    first call, it is refused)."""
    mech = OnceMech(laplace)
    fresh(vetted=("test.mech",))[1].custom(mech, 0.5)
    mech.sensitivity = sens
    k, h = fresh(vetted=("test.mech",))
    with pytest.raises(InvalidParameter, match="sensitivity"):
        h.custom(mech, 0.5)
    assert h.spent == 0.0 and len(k.ledger) == 0


def test_custom_calls_are_recorded_for_the_kit_only_while_it_records():
    """Kills: the recording test inverted or dropped (the kit's replay and sensitivity checks would not
    see a vetted mechanism)."""
    from dphist.kernel.private import recording_kernel_calls
    mech = OnceMech(laplace)
    with recording_kernel_calls() as calls:
        fresh(vetted=("test.mech",))[1].custom(mech, 0.5)
    fresh(vetted=("test.mech",))[1].custom(mech, 0.5)
    assert [(c.primitive, c.details["mechanism"], c.details["declared"]) for c in calls] == [("custom", mech, True)]
