"""The kernel's report-noisy-min over segmentations (``DataHandle.noisy_min_segmentation``).

Each test names the mutation it kills.  The proof is in the primitive's docstring; these tests pin
what the proof relies on: noise of scale 2 Delta / epsilon on every candidate, drawn through the
run's noise source (so release mode's exact route applies), the search's argmin, only the cut
points released, every argument checked before the charge.
"""
import itertools

import numpy as np
import pytest

from dphist import InvalidParameter, Partition, Pipeline, Partitioner, PrivacyViolation, segmentation, testing
from dphist.kernel import ExactNoise, PrivateKernel, SeededLaplace
from dphist.kernel.private import _clamped

X = np.array([3, 9, 9, 0, 0, 1, 7, 7, 7, 2], dtype=np.int64)


class Recording(SeededLaplace):
    """Seeded Laplace that records every call's sensitivity, epsilon, support and draws."""

    def __init__(self, seed=0):
        super().__init__(np.random.default_rng(seed))
        self.calls = []

    def laplace_mechanism(self, values, sensitivity, epsilon, **kw):
        out = super().laplace_mechanism(values, sensitivity, epsilon, **kw)
        self.calls.append((sensitivity, epsilon, kw.get("support"), np.asarray(values, dtype=float).copy(),
                           out - np.asarray(values, dtype=float)))
        return out


def handle(x=X, noise=None, budget=1.0):
    k = PrivateKernel(x, noise if noise is not None else SeededLaplace(np.random.default_rng(0)))
    return k, k.handle("test.noisy-min", "partitioner", budget)


def dev(v, a, b):
    seg = np.asarray(v[a:b], dtype=float)
    return float(np.abs(seg - seg.mean()).sum())


@pytest.mark.parametrize("search", ["all", "power-of-two"])
def test_the_release_is_the_argmin_of_the_noisy_costs_with_noise_on_every_candidate(search):
    """Kills: noise on only some candidates (single bins skipped, as the DPBench code does), a scale
    of Delta / epsilon instead of 2 Delta / epsilon, a search that is not the argmin, the public group
    cost dropped."""
    eps, g = 0.7, 1.5
    noise = Recording(3)
    k, h = handle(noise=noise)
    cuts = h.noisy_min_segmentation(segmentation.L1Deviation, eps, search=search, group_cost=g)
    n = X.size
    for sens, e, support, _, _ in noise.calls:
        assert (sens, e, support) == (4.0, eps, 2)        # laplace_mechanism(costs, 2 Delta, eps, support=2)
    lengths = range(1, n + 1) if search == "all" else [1 << j for j in range(int(np.log2(n)) + 1)]
    candidates = ([(a, b) for a in range(n) for b in range(a + 1, n + 1)] if search == "all"
                  else [(a, a + L) for L in lengths for a in range(n - L + 1)])
    flat = np.concatenate([values + draws for *_, values, draws in noise.calls])   # batches in search order
    assert flat.size == len(candidates)                   # every candidate, single bins included, once
    table = dict(zip(candidates, flat + g))
    best, arg = np.inf, None
    for mask in itertools.product([0, 1], repeat=n - 1):
        c = [0] + [i + 1 for i, m in enumerate(mask) if m] + [n]
        if all(p in table for p in zip(c[:-1], c[1:])):
            total = sum(table[p] for p in zip(c[:-1], c[1:]))
            if total < best - 1e-9:
                best, arg = total, c
    assert list(cuts) == arg
    row = k.ledger.entries[-1]
    assert (row.primitive, row.sensitivity, row.answers, row.epsilon) == ("noisy-min.segmentation", 2.0, 1, eps)


def test_the_noise_batches_hold_the_true_deviations():
    """Kills: the cost built on other values than the true counts in the units' order."""
    noise = Recording(1)
    order = np.array([9, 8, 7, 6, 5, 4, 3, 2, 1, 0])
    _, h = handle(noise=noise)
    h.noisy_min_segmentation(segmentation.L1Deviation, 1.0, units=Partition(order, np.arange(11)))
    first_row = noise.calls[0][3]                         # the exact search's first row: groups [0, e)
    v = X[order]
    assert np.allclose(first_row, [dev(v, 0, e) for e in range(1, 11)])


def test_tree_search_and_grouped_units():
    """Kills: units ignored (a cut inside a unit) or the tree search's candidates not aligned."""
    units = Partition.from_sizes([2, 3, 1, 4])
    _, h = handle()
    cuts = h.noisy_min_segmentation(segmentation.L1Deviation, 1.0, units=units, search="tree", branching=2)
    assert cuts[0] == 0 and cuts[-1] == 4 and np.all(np.diff(cuts) > 0)
    merged = units.merge(cuts)
    assert merged.n_bins == X.size


@pytest.mark.parametrize("call, words", [
    (lambda h: h.noisy_min_segmentation(segmentation.L1Deviation, 1.0, search="greedy"), "unknown search"),
    (lambda h: h.noisy_min_segmentation(segmentation.L1Deviation, 1.0, search="tree", branching=1), "branching"),
    (lambda h: h.noisy_min_segmentation(segmentation.L1Deviation, 1.0, sensitivity=1.0), "below the 2"),
    (lambda h: h.noisy_min_segmentation(lambda v: segmentation.RelativeError(v), 1.0), "declare the sensitivity"),
    (lambda h: h.noisy_min_segmentation("L1", 1.0), "callable"),
    (lambda h: h.noisy_min_segmentation(segmentation.L1Deviation, 0.0), "positive"),
    (lambda h: h.noisy_min_segmentation(segmentation.L1Deviation, 1.0, group_cost=-1), "group_cost"),
    (lambda h: h.noisy_min_segmentation(segmentation.L1Deviation, 1.0, group_cost=lambda m: m[:2]), "group_cost"),
    (lambda h: h.noisy_min_segmentation(segmentation.L1Deviation, 1.0,
                                        units=Partition(np.zeros(10, dtype=int), np.arange(11), validate=False)),
     "bin 0 appears twice"),
    (lambda h: h.noisy_min_segmentation(lambda v: segmentation.L1Deviation(v[:3]), 1.0, sensitivity=2), "over 10"),
    (lambda h: h.noisy_min_segmentation(lambda v: 1 / 0, 1.0, sensitivity=2), "ZeroDivisionError"),
    (lambda h: h.noisy_min_segmentation(lambda v: segmentation.IntervalCost(lambda s, e: np.full(s.size, np.inf), 10),
                                        1.0, sensitivity=2), "finite"),
])
def test_refused_calls_spend_nothing(call, words):
    """Kills: any of these checks (search, branching, declared sensitivity, units, group cost, the cost's
    probe on the all-zero histogram) moved after the charge."""
    k, h = handle()
    with pytest.raises(InvalidParameter, match=words):
        call(h)
    assert h.spent == 0.0 and len(k.ledger) == 0


def test_a_cost_failing_only_on_the_data_is_withheld():
    """The documented unprotected case: the probe passes, the data fails; the error carries nothing."""
    def fragile(v):
        if v.any():
            raise ValueError(f"secret {v[1]}")
        return segmentation.L1Deviation(v)
    k, h = handle()
    with pytest.raises(PrivacyViolation) as info:
        h.noisy_min_segmentation(fragile, 1.0, sensitivity=2.0)
    assert "9" not in str(info.value) and info.value.__context__ is None
    assert h.spent == 1.0


def test_release_mode_runs_the_exact_route():
    """Kills: a primitive that bypasses the noise source (raw float noise is refused in release mode)."""
    _, h = handle(noise=ExactNoise())
    cuts = h.noisy_min_segmentation(segmentation.L1Deviation, 1.0, search="power-of-two", group_cost=2.0)
    assert cuts[0] == 0 and cuts[-1] == X.size


def test_costs_are_clamped_without_copying_in_range_values():
    """Kills: a clamp that copies (and may round) in-range costs (the DAWA releases would move), or one
    that leaves NaN or infinities to the exact sampler."""
    costs = np.array([0.5, -3.0, 7.25])
    assert _clamped(costs, 10.0) is costs
    assert np.array_equal(_clamped(np.array([np.nan, np.inf, -np.inf, 20.0]), 10.0), [10.0, 10.0, -10.0, 10.0])


class L1Noisy(Partitioner):
    """An honest DAWA-style partitioner written against the primitive: no vetted mechanism."""

    name = "test.l1-noisy-min"
    citation = "test"
    spends = True

    def partition(self, bins, ctx):
        return bins.merge(ctx.data.noisy_min_segmentation(segmentation.L1Deviation, ctx.budget, units=bins,
                                                          group_cost=1.0 / ctx.eps_f))


def test_an_honest_noisy_min_partitioner_passes_the_kit_without_opting_in():
    """Kills: a false alarm of the declared-sensitivity check on DAWA's deviation (bound 2), or a
    primitive that needs the vetted-mechanism opt-in."""
    assert L1Noisy.vetted_mechanisms == ()
    testing.check_component(L1Noisy)


def test_dawa_noisy_min_runs_in_release_mode_without_a_vetted_mechanism():
    """Kills: calibration="noisy-min" routed through ctx.data.custom again (its ledger row would name
    the mechanism, and release mode would need the opt-in)."""
    pytest.importorskip("dphist_dawa")
    import dphist
    r = dphist.make_algorithm("DAWA", calibration="noisy-min").run(np.repeat(X, 8), 1.0)
    assert r.mode == "release" and [e.primitive for e in r.ledger][0] == "noisy-min.segmentation"
    assert not any(e.primitive.startswith("custom:") for e in r.ledger)
    p = Pipeline(None, None, ("dawa.l1", {"calibration": "noisy-min", "variant": "tree"}), "group-mean", (0, 0.5, 0.5))
    assert p.run(np.repeat(X, 8), 1.0).partition.n_bins == 80


class RecordingExact(ExactNoise):
    """Release mode's exact noise (seeded words, research mode) recording each call's arguments."""

    def __init__(self):
        from dphist.kernel.exact import GeneratorWords
        super().__init__(GeneratorWords(np.random.default_rng(0)))
        self.calls = []

    def laplace_mechanism(self, values, sensitivity, epsilon, *, integral=False, support=None):
        self.calls.append((float(sensitivity), float(epsilon), support))
        return super().laplace_mechanism(values, sensitivity, epsilon, integral=integral, support=support)


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.5, 1.0, 4.0])
def test_the_exact_route_covers_the_rounded_costs(eps):
    """Why release mode's draws of DAWA's noisy-min changed with the port (research mode's float draws
    did not: plugins/dawa/tests/test_release_fixture.py is bit-identical).  The former vetted mechanism
    called ``laplace_mechanism(dev, 4/eps, 1.0, support=2)``: a grid g of 4/eps and a discrete scale of
    ceil(4 / (eps g)) + 4 steps.  Report-noisy-min on rounded costs moves its threshold by up to
    2 (Delta / g + 2) steps (a rounding step and a floating-point step per cost), so it needs
    (4 / g + 4) / eps steps: 4 / eps - 4 more than the former call gave whenever eps < 1 (about 2^-20
    of the scale: negligible, but not zero).  The kernel calls ``laplace_mechanism(costs, 2 Delta, eps,
    support=2)``: (ceil(4 / g) + 4) / eps steps.  Kills: restoring the former call."""
    import math
    from dphist.kernel.noise import _grid
    noise = RecordingExact()
    _, h = handle(noise=noise, budget=eps)
    h.noisy_min_segmentation(segmentation.L1Deviation, eps, search="power-of-two")
    delta = 2.0
    for sens, e, support in noise.calls:
        g = _grid(sens)
        given = (math.ceil(sens / g) + 2 * support) / e        # discrete Laplace scale, in grid steps
        needed = 2 * (delta / g + 2) / eps
        assert given >= needed * (1 - 1e-12)
    g_old = _grid(4 / eps)
    former = math.ceil((4 / eps) / g_old) + 4
    assert (former >= 2 * (delta / g_old + 2) / eps * (1 - 1e-12)) == (eps >= 1)
