"""dphist-hdmm on grids (Kronecker strategies, HDMM's OPT_x): the factorised objective against a dense
brute force, the union's gradient, the kernel's Kronecker queries, reconstruction and stated variances
(against the dense covariance and against simulation), the cache by (workload, shape), the SVD bound,
the kit, release mode, the audit, the ledger and bad input.  Each test names the mutation it kills."""
import numpy as np
import pytest

from dphist import InvalidParameter, make_algorithm, testing
from dphist import workloads as wl
from dphist.kernel import KroneckerQueries, PrivateKernel, SeededLaplace
from dphist.kernel.private import DataHandle
from dphist_hdmm import (KroneckerFinalizer, clear_memory_cache, kronecker_surrogate, kronecker_svd_bound,
                         optimize_kron, resolve_grid, svd_bound)
from dphist_hdmm import kron as kron_module
from dphist_hdmm import strategy as strategy_module
from dphist_hdmm.kron import _union_value, along


SHAPE = (4, 8)


def _dense_gram(w):
    """``sum_t (x)_k W_k^T W_k`` from the dense per-axis query matrices (or the real rectangles of a surrogate)."""
    if w.surrogate:
        W = w.rectangles.matrix()
        return W.T @ W
    G = 0.0
    for term in w.terms:
        g = np.ones((1, 1))
        for a in term:
            M = wl.RangeWorkload(a.n, a.lo, a.hi).matrix()
            g = np.kron(g, M.T @ M)
        G = G + g
    return G


def _grid_workloads(shape):
    rect = wl.RectangleWorkload(shape, [[0, 1], [1, 1], [0, 1], [1, 1]], [[2, 3], [3, 3], [2, 8], [3, 8]])
    return ["prefix", "all-rectangles", "identity", "marginals", "dpbench-random-40",
            [("prefix", "identity"), ("all-ranges", [(0, 3)])], rect]


# ------------------------------------------------------------------ the factorised objective

@pytest.mark.parametrize("spec", _grid_workloads(SHAPE), ids=lambda s: s if isinstance(s, str) else type(s).__name__)
def test_factorised_objective_equals_the_dense_brute_force(spec):
    """Kills: a sum of the axes' traces instead of their product, a union term dropped, the axes of a term
    swapped (4 x 8 is not square), a surrogate's objective taken on the surrogate instead of its real
    rectangles, a Kronecker sensitivity other than 1: the strategy's objective must equal
    ||A||_1^2 tr(G (A^T A)^{-1}) of the dense Kronecker product, and the SVD bound the dense one."""
    w = resolve_grid(spec, SHAPE)
    s = optimize_kron(spec, SHAPE, p=2, iterations=25)
    A = s.dense()
    G = _dense_gram(w)
    brute = np.abs(A).sum(axis=0).max() ** 2 * np.trace(G @ np.linalg.inv(A.T @ A))
    assert s.objective == pytest.approx(brute, rel=1e-6)
    assert s.total_variance(noise_variance=3.0) == pytest.approx(3.0 * brute, rel=1e-6)
    sigma = np.sqrt(np.clip(np.linalg.eigvalsh(G), 0, None))
    assert kronecker_svd_bound(spec, SHAPE) == pytest.approx(sigma.sum() ** 2 / G.shape[0], rel=1e-7)
    assert kronecker_svd_bound(spec, SHAPE) <= s.objective


def test_union_gradient_matches_finite_differences():
    """Kills: a union gradient without the other axes' factors (grad f_k alone) or with them from the
    wrong term, on marginals over a 5 x 7 grid."""
    w = resolve_grid("marginals", (5, 7))
    rng = np.random.default_rng(1)
    thetas = [rng.random((2, 5)), rng.random((3, 7))]
    _, grads = _union_value([thetas], w, gradient=True)
    h = 1e-6
    for k in range(2):
        for (i, j) in ((0, 0), (1, 3)):
            plus = [t.copy() for t in thetas]
            minus = [t.copy() for t in thetas]
            plus[k][i, j] += h
            minus[k][i, j] -= h
            fd = (_union_value([plus], w)[0] - _union_value([minus], w)[0]) / (2 * h)
            assert grads[k][i, j] == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_optimiser_beats_identity_and_single_term_is_per_axis():
    """Kills: an optimiser that does not move (the union's L-BFGS-B never run) or a single term optimised
    otherwise than axis by axis (the product of two positive functions of separate parameters is
    minimised by minimising each: the factors are the 1-D strategies)."""
    from dphist_hdmm import optimize
    s = optimize_kron("prefix", (16, 12), iterations=60)
    assert np.array_equal(s.factors[0].theta, optimize("prefix", 16, iterations=60).theta)
    assert np.array_equal(s.factors[1].theta, optimize("prefix", 12, iterations=60).theta)
    identity = 16 * 17 // 2 * 12 * 13 // 2          # sum of the prefix rectangles' sizes
    assert s.objective < 0.8 * identity
    m = optimize_kron("marginals", (16, 16), p=4, iterations=40)
    start = _union_value([[strategy_module._start(4, 16, 0)] * 2], resolve_grid("marginals", (16, 16)))[0]
    assert m.objective < start


# ------------------------------------------------------------------ the kernel's Kronecker queries

def test_kernel_computes_the_kronecker_sensitivity_and_answers_without_the_product():
    """Kills: a Kronecker sensitivity that is the sum (or one factor's) of the factors' column norms, factors
    applied on the wrong axes or transposed, a factor-shape mismatch found after the charge."""
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    A1, A2 = rng.random((5, 3)) - 0.3, sp.csr_matrix(rng.random((4, 2)))
    x = rng.integers(0, 9, (3, 2))
    kernel = PrivateKernel(x, SeededLaplace(np.random.default_rng(1)))
    out = kernel.handle("t", "finalizer", 1e9).laplace_linear(KroneckerQueries((A1, A2)), 1e9)
    K = np.kron(A1, A2.toarray())
    assert np.allclose(out, K @ x.ravel(), atol=1e-5)
    (row,) = list(kernel.ledger)
    assert row.sensitivity == pytest.approx(np.abs(K).sum(axis=0).max()) and row.answers == 20
    flipped = PrivateKernel(x.reshape(2, 3), SeededLaplace(np.random.default_rng(1)))
    handle = flipped.handle("t", "finalizer", 1.0)
    with pytest.raises(InvalidParameter, match=r"shape \(3, 2\) measured on a histogram of shape \(2, 3\)"):
        handle.laplace_linear(KroneckerQueries((A1, A2)), 1.0)
    with pytest.raises(InvalidParameter, match="acts on 6 cells; the domain has 8"):
        PrivateKernel(np.ones((2, 4), dtype=int), SeededLaplace(np.random.default_rng(1))).handle(
            "t", "finalizer", 1.0).laplace_linear(KroneckerQueries((A1, A2)), 1.0)
    assert len(list(flipped.ledger)) == 0


# ------------------------------------------------------------------ reconstruction and stated variances

def test_reconstruction_is_the_kronecker_pseudo_inverse_and_variances_the_covariance():
    """Kills: a reconstruction with the factors' pseudo-inverses on swapped axes or one axis skipped, an
    inverse Gram that is not (x)_k C_k, per-cell or per-rectangle variances that are not the diagonal of
    W ((x)_k C_k) W^T (a missing factor in the product)."""
    s = optimize_kron("all-rectangles", (5, 7), p=2, iterations=20)
    A = s.dense()
    rng = np.random.default_rng(3)
    y = rng.normal(size=A.shape[0])
    assert np.allclose(s.reconstruct(y), np.linalg.lstsq(A, y, rcond=None)[0])
    C = np.linalg.inv(A.T @ A)
    U = rng.normal(size=(35, 4))
    assert np.allclose(s.inverse_gram(U), C @ U)
    assert np.allclose(s.bin_variances(2.0), 2.0 * np.diag(C))
    rect = wl.dpbench_random_rectangles((5, 7), 30, seed=4)
    W = rect.matrix()
    assert np.allclose(s.rectangle_variances(rect, 2.0), 2.0 * np.einsum("ij,jk,ik->i", W, C, W))


def test_release_states_the_kronecker_covariance_in_both_modes():
    """Kills: a stated error fed another strategy, a noise variance not at the kernel's sensitivity and
    share, or the research law in release mode: the release's per-cell and query variances equal
    s^2 diag(Q C Q^T) with s^2 the run's law (2 / eps^2; the discrete law at the kernel's support in
    release mode).  (Axes of at least 7 cells: below, the 1-D prefix optimum sends Theta to ~1e5 and
    the Woodbury form of C loses digits.)"""
    from dphist.stated_error import DiscreteLaplaceLaw
    shape, eps = (7, 9), 0.7
    x = np.arange(63).reshape(shape)
    pipe = make_algorithm("OPT-2D-prefix")
    strategy = pipe.finalizer.strategy(shape)
    C = np.linalg.inv(strategy.dense().T @ strategy.dense())
    Q = wl.prefix_rectangles(shape).matrix()
    research = pipe.run(x, eps, seed=1)
    assert research.stated.kind == "exact"
    np.testing.assert_allclose(research.bin_variances(), 2 / eps ** 2 * np.diag(C), rtol=1e-9)
    np.testing.assert_allclose(research.variance(Q), 2 / eps ** 2 * np.einsum("ij,jk,ik->i", Q, C, Q), rtol=1e-9)
    release = pipe.run(x, eps)
    assert release.mode == "release" and release.stated.law_name == "discrete-laplace"
    (row,) = list(release.ledger)
    support = int(np.prod([f.p + 1 for f in strategy.factors]))        # non-zeros of a column of the product
    s2 = DiscreteLaplaceLaw().variance(row.sensitivity, eps, False, support)
    assert release.stated.noise_variance == pytest.approx(s2, rel=1e-12)
    np.testing.assert_allclose(release.bin_variances(), s2 * np.diag(C), rtol=1e-9)


def test_stated_variances_match_simulation_within_3_percent():
    """Kills: a stated variance off by more than 3 % (a factor's C_k replaced by its diagonal, a noise
    variance of b^2 instead of 2 b^2): 40,000 draws of the strategy's Laplace noise through the same
    reconstruction the finalizer applies, every prefix rectangle of an 8 x 7 grid within 3 %."""
    eps, runs = 0.5, 40_000
    s = optimize_kron("prefix", (8, 7))
    m = tuple(f.n + f.p for f in s.factors)
    z = np.random.default_rng(11).laplace(scale=1.0 / eps, size=m + (runs,))   # sensitivity 1
    est = along(along(z, 0, s.factors[0].reconstruct), 1, s.factors[1].reconstruct)
    err = np.cumsum(np.cumsum(est, axis=0), axis=1).reshape(56, runs)     # errors of the prefix rectangles
    rel = make_algorithm("OPT-2D-prefix").run(np.zeros((8, 7), dtype=int), eps, seed=0)
    stated = rel.stated.rectangle_variances(wl.prefix_rectangles((8, 7)))
    np.testing.assert_allclose(err.var(axis=1), stated, rtol=0.03)


def test_releases_through_the_kernel_have_the_stated_error():
    """Kills: a noise scale other than sensitivity / eps in the kernel call (e.g. eps counted twice, or the
    Kronecker sensitivity squared): 600 seeded releases of a 4 x 6 grid, mean squared error over all
    rectangles within 12 % of the stated total."""
    eps, runs = 1.0, 600
    x = np.random.default_rng(0).integers(0, 30, (4, 6))
    pipe = make_algorithm("OPT-2D-ranges")
    w = wl.AllRectangles((4, 6))
    total = np.mean([w.sum_squared(pipe.run(x, eps, seed=k).estimate - x.ravel()) for k in range(runs)])
    stated = pipe.finalizer.strategy((4, 6)).total_variance(noise_variance=2 / eps ** 2)
    assert total == pytest.approx(stated, rel=0.12)


# ------------------------------------------------------------------ the cache

def test_cache_is_keyed_by_workload_and_shape(monkeypatch):
    """Kills: a union re-optimised although cached (memory or disk), or a cache that ignores the shape or
    the workload (a 6 x 8 or a prefix union served the 8 x 6 marginals' strategy)."""
    calls = []
    real = kron_module._minimize_union
    monkeypatch.setattr(kron_module, "_minimize_union", lambda *a: calls.append(a) or real(*a))
    first = optimize_kron("marginals", (8, 6), p=2, iterations=15)
    clear_memory_cache()
    again = optimize_kron("marginals", (8, 6), p=2, iterations=15)
    assert len(calls) == 1 and all(np.array_equal(a.theta, b.theta) for a, b in zip(first.factors, again.factors))
    optimize_kron("marginals", (6, 8), p=2, iterations=15)
    optimize_kron([("prefix", "identity"), ("identity", "prefix")], (8, 6), p=2, iterations=15)
    assert len(calls) == 3


# ------------------------------------------------------------------ the kit, release mode, audit, ledger

@pytest.mark.parametrize("name, params", [("OPT-2D-prefix", {}), ("OPT-2D-ranges", {}),
                                          ("OPT-2D", {"workload": "marginals"})])
def test_presets_conform_on_grids(name, params):
    """Kills: a share not spent exactly, a non-reproducible strategy, a release-mode failure, a 2-D preset
    that runs on a 1-D histogram (the kit on example_grids, shapes 1 x 1 to 17 x 16)."""
    testing.check_algorithm(name, **params)


def test_finalizer_conforms():
    """Kills: an undeclared or unstored parameter of hdmm.kronecker, a finalizer reading data outside
    ctx.data, or one that fails on the kit's harness grids (dphist.testing.check_component)."""
    testing.check_component(KroneckerFinalizer)


def test_ledger_is_epsilon_with_the_kernel_computed_sensitivity():
    """Kills: factors whose columns do not sum to 1 (a Kronecker sensitivity != 1), a second charge, a
    partial share, answers other than prod_k (n_k + p_k)."""
    r = make_algorithm("OPT-2D", workload=("prefix", "all-ranges"), p=2).run(np.ones((6, 9), dtype=int), 0.7, seed=2)
    (row,) = list(r.ledger)
    assert row.primitive == "laplace.linear" and row.epsilon == pytest.approx(0.7)
    assert row.sensitivity == pytest.approx(1.0, abs=1e-12) and row.answers == 8 * 11
    assert r.ledger.total == pytest.approx(0.7) and r.grid.shape == (6, 9)


def test_fast_audit_on_2d_pairs():
    """Kills: noise below the sensitivity the kernel computes on grids (a leak above epsilon between
    neighbouring grids): the auditor's fast level on two 2-D pairs finds no loss above epsilon."""
    from dphist.audit import audit
    from dphist.audit.pairs import GRID_FAST_PAIRS
    result = audit("OPT-2D-prefix", level="fast", pairs=GRID_FAST_PAIRS[:2], seed=3)
    assert result.passed and result.pairs == 2, result


def test_describe_prints_the_factorised_svd_bound():
    """Kills: a 2-D bound that adds the axes' 1-D bounds instead of multiplying them."""
    lines = KroneckerFinalizer(workload="prefix").describe_lines()
    assert f"{svd_bound('prefix', 32) ** 2:.6g}" in lines[1]


# ------------------------------------------------------------------ bad input: named, nothing spent

def test_bad_input_is_refused_before_anything_is_spent(monkeypatch):
    """Kills: a non-Kronecker workload optimised anyway (or after the charge), a workload over another grid
    accepted, a 2-D preset run on a 1-D histogram, an unknown name accepted when built."""
    monkeypatch.setattr(DataHandle, "laplace_linear", lambda *a, **k: pytest.fail("charged a refused run"))
    monkeypatch.setattr(kron_module, "_minimize_union", lambda *a: pytest.fail("optimised a refused workload"))
    x = np.ones((8, 8), dtype=int)
    staircase = wl.RectangleWorkload((8, 8), [[0, 0], [1, 1]], [[1, 1], [2, 2]])
    with pytest.raises(InvalidParameter, match="not a Kronecker product.*kronecker_surrogate"):
        make_algorithm("OPT-2D", workload=staircase).run(x, 1.0, seed=1)
    with pytest.raises(InvalidParameter, match=r"grid of shape \(4, 4\) \(16 cells\); the histogram has 64"):
        make_algorithm("OPT-2D", workload=wl.prefix_rectangles((4, 4))).run(x, 1.0, seed=1)
    with pytest.raises(InvalidParameter, match=r"shape \(8, 8\), the histogram has shape \(16, 4\)"):
        make_algorithm("OPT-2D", workload=wl.prefix_rectangles((8, 8))).run(np.ones((16, 4), dtype=int), 1.0, seed=1)
    with pytest.raises(InvalidParameter, match="supports 2-D histograms only"):
        make_algorithm("OPT-2D-prefix").run(np.arange(10), 1.0, seed=1)
    with pytest.raises(InvalidParameter, match="one 1-D workload per axis"):
        make_algorithm("OPT-2D", workload=("prefix", "prefix", "prefix")).run(x, 1.0, seed=1)
    with pytest.raises(InvalidParameter, match="unknown grid workload 'all-ranges'"):
        make_algorithm("OPT-2D", workload="all-ranges")
    surrogate = kronecker_surrogate(staircase)                 # the named way out is accepted
    assert surrogate.surrogate and len(surrogate) == 2
