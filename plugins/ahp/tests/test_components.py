"""AHP's components and presets: conformance, privacy accounting, faithful finalizer, bad input."""
import math
import weakref

import numpy as np
import pytest

from dphist import Context, InvalidParameter, Partition, Pipeline, make_algorithm, testing
from dphist.kernel import PrivateKernel
from dphist.components.builtin import GroupMeanFinalizer
from dphist_ahp.partitioners import EmpiricalPartitioner, GreedyPartitioner, OptimalPartitioner
from dphist_ahp.threshold import ThresholdInitializer, apply_threshold, threshold_value

PRESETS = ["AHP", "AHP-optimal", "AHP-empirical", "AHP-2D"]


@pytest.mark.parametrize("cls", [ThresholdInitializer, GreedyPartitioner, OptimalPartitioner, EmpiricalPartitioner])
def test_conformance(cls):
    testing.check_component(cls)


@pytest.mark.parametrize("name", PRESETS)
def test_preset_conformance(name):
    testing.check_algorithm(name)


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("gamma_in", [0.85, 0.3])
def test_ledger_eps1_plus_eps2_is_eps(name, gamma_in):
    x = np.random.default_rng(0).poisson(30, 300)
    r = make_algorithm(name, gamma_in=gamma_in).run(x, 0.7, seed=1)
    rows = [(e.stage, e.primitive, e.epsilon) for e in r.ledger]
    assert [(s, p) for s, p, _ in rows] == [("initializer", "laplace.identity"), ("finalizer", "laplace.partition")]
    assert rows[0][2] == pytest.approx(gamma_in * 0.7) and rows[1][2] == pytest.approx((1 - gamma_in) * 0.7)
    assert r.ledger.total == pytest.approx(0.7, rel=1e-12)


class RecordingHandle:
    """Stands in for the kernel's DataHandle: no route to true data, only a prescribed noisy answer."""

    def __init__(self, answer, budget):
        self.answer, self.budget, self.calls = np.asarray(answer, float), budget, []

    def laplace_identity(self, epsilon):
        self.calls.append(("laplace_identity", epsilon))
        return self.answer.copy()


def test_threshold_runs_on_the_noisy_answer_only():
    noisy = np.array([-3.0, 0.5, 2.0, 10.0, 4.0, 100.0, 1.0, 7.0])
    eps = 0.5
    handle = RecordingHandle(noisy, budget=eps)
    ctx = Context(n=8, epsilon=1.0, gamma_in=0.5, gamma_p=0.0, gamma_f=0.5,
                  rng=np.random.default_rng(0), data=handle)
    out = ThresholdInitializer(eta=0.35).initialize(ctx)
    assert handle.calls == [("laplace_identity", eps)]          # whole share, one measurement
    theta = 0.35 * math.log(8) / eps
    np.testing.assert_array_equal(out, np.where(noisy >= theta, noisy, 0.0))
    assert 0 < np.count_nonzero(out == 0) < 8                    # the threshold did act


class WatchingHandle(RecordingHandle):
    """Answers with a fresh array it watches through a weak reference only (no reference of its own)."""

    def laplace_identity(self, epsilon):
        self.calls.append(("laplace_identity", epsilon))
        answer = self.answer.copy()
        self.watched = weakref.ref(answer)
        return answer


class KeepingHandle(RecordingHandle):
    """Answers with an array it keeps a reference to (a noise source may)."""

    def laplace_identity(self, epsilon):
        self.calls.append(("laplace_identity", epsilon))
        self.kept = self.answer.copy()
        return self.kept


def test_threshold_is_written_over_the_answer_only_when_nothing_else_holds_it():
    """The initializer thresholds the kernel's answer in place when it owns it alone (the same floats as
    ``apply_threshold``: NaN, -0.0 and values just below theta become +0.0, theta itself stays), and leaves an
    answer that another object references untouched.  Kills: the threshold written in place without the
    ownership test (the kept array changes), an ownership test that never holds (a fresh answer copied: the
    returned array is not the watched answer), ``noisy < theta`` for ``not noisy >= theta`` (NaN kept), a
    zero written as ``noisy * 0`` (-0.0 for negatives)."""
    from dphist_ahp.threshold import threshold_in_place
    eps = 0.5
    theta = 0.35 * math.log(8) / eps
    noisy = np.array([-3.0, np.nan, -0.0, theta, np.nextafter(theta, 0), 100.0, 1.0, 7.0])
    want = np.where(noisy >= theta, noisy, 0.0)
    for handle_cls in (RecordingHandle, WatchingHandle, KeepingHandle):
        handle = handle_cls(noisy, budget=eps)
        ctx = Context(n=8, epsilon=1.0, gamma_in=0.5, gamma_p=0.0, gamma_f=0.5,
                      rng=np.random.default_rng(0), data=handle)
        out = ThresholdInitializer(eta=0.35).initialize(ctx)
        assert out.tobytes() == want.tobytes()
        if handle_cls is KeepingHandle:
            assert out is not handle.kept and handle.kept.tobytes() == noisy.tobytes()
        if handle_cls is WatchingHandle:                 # nothing else held it: thresholded where it is
            assert out is handle.watched()
    copy = noisy.copy()
    assert threshold_in_place(copy, 8, 0.35, eps) is copy and copy.tobytes() == want.tobytes()


@pytest.mark.parametrize("sorted_first", [True, False])
def test_greedy_reads_sorted_values_through_the_order_to_the_same_release(monkeypatch, sorted_first):
    """AHP's greedy on singletons reads H~ through the sorted order with its run of zeros left out
    (``greedy_cuts_taken``); its releases (estimate, partition, H~, ledger) equal those of the generic route
    (the gathered copy ``bins.means``), on a power law past the compiled threshold sorted both ways, and in
    domain order without a sorter (a ``PlainPartition``: ``order=None``).  Kills: ``None`` passed for a
    sorted partition's order (its values read in domain order: on 5,000 bins different groups; on 40,000
    they are refused as unsorted and the generic route runs)."""
    import dphist_ahp.partitioners as P
    from dphist.datasets import load
    from dphist.segmentation import search
    monkeypatch.setattr(search, "_runs_interpreted", lambda n: False)
    if sorted_first:
        cases = [(load("synthetic", shape="zipf", n=n, scale=10 * n, seed=3).counts, pipe)
                 for n in (5000, 40000) for pipe in (make_algorithm("AHP"), make_algorithm("AHP", descending=False))]
    else:
        x = np.sort(np.random.default_rng(2).poisson(3, 3000))[::-1]
        cases = [(x, Pipeline("ahp.threshold", None, "ahp.greedy", "group-mean", (0.85, 0, 0.15)))]
    taken = []
    monkeypatch.setattr(P, "greedy_cuts_taken", lambda *a, **k: taken.append(1) or real(*a, **k))
    real = __import__("dphist_ahp.greedy", fromlist=["x"]).greedy_cuts_taken
    for x, pipe in cases:
        for seed in (1, 2):
            got = pipe.run(x, 1.0, seed=seed)
            assert taken, "the taken route ran"
            with monkeypatch.context() as m:
                m.setattr(P, "greedy_cuts_taken", lambda *a, **k: None)
                want = pipe.run(x, 1.0, seed=seed)
            assert got.estimate.tobytes() == want.estimate.tobytes()
            assert got.noisy.tobytes() == want.noisy.tobytes()
            assert np.array_equal(got.partition.order, want.partition.order)
            assert np.array_equal(got.partition.bounds, want.partition.bounds)
            assert got.ledger.to_records() == want.ledger.to_records()
            assert got.partition.n_groups > 1


def test_threshold_value_and_boundary():
    theta = threshold_value(1000, 0.35, 0.2)
    assert theta == pytest.approx(0.35 * math.log(1000) / 0.2)
    out = apply_threshold([theta, np.nextafter(theta, 0), -1.0], 1000, 0.35, 0.2)
    assert out.tolist() == [theta, 0.0, 0.0]


class FixedNoise:
    """A noise source returning prescribed standard draws times the scale (for exact checks)."""

    name = "fixed"
    mode = "research"

    def __init__(self, draws):
        self.draws = np.asarray(draws, float)

    def laplace_mechanism(self, values, sensitivity, epsilon, **_):
        values = np.asarray(values, float)
        return values + self.draws[:values.size] * sensitivity / epsilon


def test_group_mean_finalizer_is_algorithm_1_lines_6_to_9():
    x = np.array([5, 0, 9, 3, 3, 12, 1])
    bins = Partition(np.array([2, 5, 0, 3, 4, 1, 6]), np.array([0, 2, 5, 7]))
    draws = np.array([0.7, -1.3, 2.1])
    eps_2 = 0.4
    kernel = PrivateKernel(x, FixedNoise(draws))
    ctx = Context(n=7, epsilon=1.0, gamma_in=0.6, gamma_p=0.0, gamma_f=0.4, rng=np.random.default_rng(0),
                  data=kernel.handle("group-mean", "finalizer", eps_2))
    out = GroupMeanFinalizer().finalize(bins, ctx)
    expected = np.empty(7)
    for g, members in enumerate(bins.groups()):
        expected[members] = x[members].mean() + (draws[g] / eps_2) / members.size   # C_i mean + Lap(1/eps_2)/|C_i|
    np.testing.assert_allclose(out, expected)


def test_presets_use_the_core_sorter_and_finalizer():
    p = make_algorithm("AHP")
    assert (p.initializer.name, p.sorter.name, p.partitioner.name, p.finalizer.name) == (
        "ahp.threshold", "noisy-count", "ahp.greedy", "group-mean")
    assert p.sorter.descending is True and make_algorithm("AHP", descending=False).sorter.descending is False
    assert p.shares == pytest.approx((0.85, 0.0, 0.15))


def test_sorted_input_reaches_the_partitioner():
    x = np.random.default_rng(2).permutation(np.repeat([0, 10, 200, 1000], 50))
    r = make_algorithm("AHP").run(x, 1.0, seed=3)
    means = r.partition.means(r.noisy)
    assert np.all(np.diff(means) <= 0)                         # groups in descending noisy order
    assert r.partition.n_groups < 20


def test_empirical_single_rule_gives_that_many_groups():
    x = np.random.default_rng(3).poisson(20, 500)
    pipe = make_algorithm("AHP-empirical", rule="sturges")
    r = pipe.run(x, 1.0, seed=0)
    assert r.partition.n_groups == math.ceil(1 + math.log2(500))
    assert r.notes["ahp.empirical.k"] == {"sturges": 10}


@pytest.mark.parametrize("eta", [-0.1, float("nan"), "x"])
def test_bad_eta(eta):
    with pytest.raises(InvalidParameter, match="eta"):
        ThresholdInitializer(eta=eta)
    with pytest.raises(InvalidParameter, match="eta"):
        make_algorithm("AHP", eta=eta)


@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.parametrize("gamma_in", [0.0, 1.0, -0.2, 1.5, float("inf")])
def test_bad_share(name, gamma_in):
    with pytest.raises(InvalidParameter, match="gamma_in"):
        make_algorithm(name, gamma_in=gamma_in)


def test_bad_rule():
    with pytest.raises(InvalidParameter, match="rule"):
        EmpiricalPartitioner(rule="scott")


def test_optimal_beyond_its_limit_names_the_limit_and_suggests_greedy():
    x = np.zeros(32769, dtype=np.int64)
    with pytest.raises(InvalidParameter, match=r"max_bins=32768.*ahp\.greedy"):
        make_algorithm("AHP-optimal").run(x, 1.0, seed=0)
    with pytest.raises(InvalidParameter, match=r"max_bins=65536.*ahp\.greedy"):
        make_algorithm("AHP-empirical").run(np.zeros(65537, dtype=np.int64), 1.0, seed=0)
    unsorted = Pipeline("ahp.threshold", None, "ahp.empirical", "group-mean", (0.5, 0, 0.5))
    with pytest.raises(InvalidParameter, match=r"8192.*noisy-count"):
        unsorted.run(np.random.default_rng(0).poisson(50, 9000), 1.0, seed=0)
    # at the limit it runs
    assert make_algorithm("AHP-optimal", max_bins=64).run(x[:64], 1.0, seed=0).estimate.shape == (64,)


def test_partitioners_need_noisy_values_and_a_final_share():
    with pytest.raises(InvalidParameter, match="H~"):
        Pipeline(None, None, "ahp.greedy", "group-mean", (0, 0, 1)).run(np.arange(10), 1.0, seed=0)


def test_greedy_refuses_large_unsorted_input():
    unsorted = Pipeline("ahp.threshold", None, "ahp.greedy", "group-mean", (0.5, 0, 0.5))
    with pytest.raises(InvalidParameter, match=r"32768.*noisy-count"):
        unsorted.run(np.random.default_rng(0).poisson(50, 40000), 1.0, seed=0)


@pytest.mark.parametrize("cls", [OptimalPartitioner, EmpiricalPartitioner])
@pytest.mark.parametrize("bad", [0, -5, 2.5, "big", True])
def test_bad_max_bins(cls, bad):
    with pytest.raises(InvalidParameter, match="max_bins"):
        cls(max_bins=bad)
