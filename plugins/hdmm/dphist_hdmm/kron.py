"""Kronecker strategies over grids: HDMM's OPT_x (per-axis p-Identity strategies), written from the paper.

McKenna, Miklau, Hay, Machanavajjhala, PVLDB 11(10) 2018, Section 6 (Kronecker products of
strategies for workloads built from products of per-attribute queries).  Derivations and checks in
``notebooks/hdmm.ipynb`` (Section 6); the formulas below are written here from the definitions.

Workloads.  A *Kronecker workload* over a grid of shape ``(n_1, ..., n_d)`` (cells in row-major
order) is a union of terms ``W^t = W^t_1 (x) ... (x) W^t_d``, each ``W^t_k`` a 1-D range workload on
axis ``k`` (:class:`KroneckerWorkload`):

* ``"prefix"``: prefix (x) prefix (every rectangle ``[0, i)``, :func:`dphist.workloads.prefix_rectangles`);
* ``"all-rectangles"``: all ranges (x) all ranges;
* ``"identity"``: identity (x) identity;
* ``"marginals"``: the union ``(I (x) 1^T) u (1^T (x) I)`` (row sums, column sums; ``1^T`` the one
  range ``[0, n)``);
* ``"dpbench-random-<m>"``: DPBench's ``m`` random rectangles are not a Kronecker product; they are
  *approximated* by one term ``R_1 (x) R_2`` whose factor ``R_k`` holds the axis-``k`` ranges of
  the ``m`` rectangles (its Gram matrix ``R_k^T R_k`` is the sum over the rectangles of their
  axis-``k`` indicator outer products).  Axes are drawn independently per rectangle, so the
  expected Gram matrix of the rectangles, ``m E[u u^T] (x) E[v v^T]``, equals that of the surrogate
  up to the scale ``m`` (which no optimiser sees) and the ``m`` diagonal pairs.  Only the
  optimisation uses the surrogate: stated variances are those of the real rectangles;
* a tuple of 1-D workload specs, one per axis (one term), or a list of such tuples (a union);
* a :class:`dphist.workloads.RectangleWorkload` whose rectangles are exactly the product of its
  axis ranges (checked; any other is refused, naming :func:`kronecker_surrogate`).

Error of a Kronecker strategy.  For ``A = A_1 (x) ... (x) A_d``:

* ``||A||_1 = prod_k ||A_k||_1`` (a column of ``A`` is a product of columns, and the L1 norm of
  ``a (x) b`` is ``||a||_1 ||b||_1``; the largest is the product of the largest);
* ``A^T A = (x)_k A_k^T A_k``, so ``(A^T A)^{-1} = (x)_k (A_k^T A_k)^{-1}`` and ``A^+ = (x)_k A_k^+``;
* with ``G^t = (x)_k G^t_k`` (``G^t_k = W^{tT}_k W^t_k``) and ``tr(P (x) Q) = tr(P) tr(Q)``:

      E ||W x_hat - W x||^2 = s^2 sum_t prod_k tr(G^t_k (A_k^T A_k)^{-1})
                          = s^2 sum_t prod_k f(Theta_k; G^t_k)

  with ``f`` the 1-D OPT_0 objective (``dphist_hdmm.objective``; every p-Identity factor has
  ``||A_k||_1 = 1``, so the product has sensitivity 1) and ``s^2`` the noise variance per answer.

One term: the factors' objectives are positive functions of separate parameters, so the product
is minimised by minimising each factor: the 1-D optimiser per axis (sharing its cache: a square
prefix grid optimises one 1-D strategy).  A union: ``F = sum_t prod_k f^t_k`` minimised jointly by
L-BFGS-B over all ``Theta_k`` with ``dF/dTheta_k = sum_t (prod_{j != k} f^t_j) grad f^t_k``.

Release.  The kernel measures :class:`dphist.kernel.KroneckerQueries` (the factors as sparse
matrices; it computes the sensitivity as the product of the factors' and applies them axis by axis:
no ``N x N`` matrix).  The least-squares estimate is ``(x)_k A_k^+`` applied axis by axis
(:meth:`KroneckerStrategy.reconstruct`); its covariance is ``s^2 (x)_k C_k`` with
``C_k = (A_k^T A_k)^{-1}``, so a rectangle ``u_1 (x) ... (x) u_d`` has variance
``s^2 prod_k u_k^T C_k u_k`` (the 1-D range variances multiplied), a cell
``s^2 prod_k (C_k)_{jj}``, and any query ``w`` ``s^2 w^T ((x)_k C_k) w`` (:class:`KroneckerStatedError`).

SVD bound (:func:`kronecker_svd_bound`).  The singular values of a Kronecker product are the
products of the factors', so for one term ``(sum sigma)^2 / N = prod_k (sum sigma_k)^2 / n_k``: the
1-D bounds multiply.  For a union ``G = sum_t (x)_k G^t_k`` whose per-axis Gram matrices commute
(marginals: ``I`` and ``1 1^T``), a common eigenbasis per axis gives ``G``'s eigenvalues as
``sum_t prod_k lambda^t_k(i_k)``; other unions are refused above 4,096 cells (dense otherwise).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from dphist import workloads as wl
from dphist.errors import InvalidParameter

from .gram import Gram
from .objective import objective_and_gradient
from .strategy import (DEFAULT_ITERATIONS, VERSION, Strategy, _start, default_p, fingerprint, keep, lookup,
                       optimize)

#: grid workloads by name (``dpbench-random-<m>`` too)
GRID_NAMES = ("prefix", "all-rectangles", "identity", "marginals")
GRID_FORMS = ("a grid workload name (prefix, all-rectangles, identity, marginals, dpbench-random-<m>), a tuple of "
              "1-D workloads (one per axis), a list of such tuples (a union), a KroneckerWorkload, or a "
              "RectangleWorkload whose rectangles are the product of their axis ranges")
#: largest grid whose non-commuting union gets a dense eigendecomposition for its SVD bound
MAX_DENSE_CELLS = 4096


def total_range(n: int) -> wl.RangeWorkload:
    """The one range ``[0, n)`` (``1^T``: the total along an axis)."""
    return wl.RangeWorkload(int(n), [0], [int(n)], "total")


@dataclass(frozen=True, eq=False)
class KroneckerWorkload:
    """A union of Kronecker terms over a grid: ``terms[t][k]`` is the 1-D range workload of term ``t``
    on axis ``k``.  ``rectangles``: the rectangles a surrogate stands for (None when the terms are
    the workload itself)."""

    shape: tuple
    terms: tuple
    name: str
    rectangles: object = None

    @property
    def surrogate(self) -> bool:
        return self.rectangles is not None

    def fingerprint(self) -> str:
        """A public identifier of the terms (the cache key's workload part)."""
        return "kron[" + ";".join(",".join(fingerprint(w) for w in term) for term in self.terms) + "]"

    def __len__(self) -> int:
        if self.rectangles is not None:
            return len(self.rectangles)
        return int(sum(np.prod([len(w) for w in term]) for term in self.terms))

    def __repr__(self) -> str:
        kind = ", surrogate" if self.surrogate else ""
        return f"KroneckerWorkload({self.name!r}, shape={self.shape}, terms={len(self.terms)}{kind})"


def kronecker_surrogate(rectangles: wl.RectangleWorkload, name: str | None = None) -> KroneckerWorkload:
    """One Kronecker term whose axis-``k`` factor holds the axis-``k`` ranges of the rectangles
    (module docstring: the surrogate of a workload that is not a product)."""
    shape = tuple(rectangles.shape)
    term = tuple(wl.RangeWorkload(n, rectangles.lo[:, k], rectangles.hi[:, k], f"{rectangles.name}-axis{k}")
                 for k, n in enumerate(shape))
    return KroneckerWorkload(shape, (term,), name or rectangles.name, rectangles)


def _product_terms(rect: wl.RectangleWorkload, who: str) -> tuple:
    """The one Kronecker term of a rectangle workload that is the product of its axis ranges, or an error."""
    d = len(rect.shape)
    axes = []
    index = []
    for k in range(d):
        pairs, inverse = np.unique(np.stack([rect.lo[:, k], rect.hi[:, k]], axis=1), axis=0, return_inverse=True)
        axes.append(pairs)
        index.append(np.asarray(inverse).ravel())
    sizes = [a.shape[0] for a in axes]
    flat = np.ravel_multi_index(tuple(index), tuple(sizes))
    if len(rect) != int(np.prod(sizes)) or np.unique(flat).size != len(rect):
        raise InvalidParameter(
            f"{who}: the workload {rect.name!r} ({len(rect)} rectangles) is not a Kronecker product: its axes hold "
            f"{' x '.join(map(str, sizes))} distinct ranges, whose product has {int(np.prod(sizes))} rectangles "
            "(or some repeat). Give dphist_hdmm.kronecker_surrogate(workload) to optimise for its Kronecker "
            "surrogate, or a 1-D workload per axis")
    return (tuple(wl.RangeWorkload(n, axes[k][:, 0], axes[k][:, 1], f"{rect.name}-axis{k}")
                  for k, n in enumerate(rect.shape)),)


def is_grid_spec(value) -> bool:
    """Whether ``value`` has one of the forms :func:`resolve_grid` takes (checked fully against a shape)."""
    if isinstance(value, (KroneckerWorkload, wl.RectangleWorkload)):
        return True
    if isinstance(value, str):
        return True            # names are checked by check_grid_spec, whose error lists the known ones
    return isinstance(value, (tuple, list)) and len(value) > 0


def check_grid_spec(spec, who: str) -> None:
    """Refuse, without a shape, what can never be a grid workload (an unknown name, an empty list)."""
    if not is_grid_spec(spec):
        raise InvalidParameter(f"{who}: cannot read {spec!r} as a grid workload; give {GRID_FORMS}")
    if isinstance(spec, str):
        if spec not in GRID_NAMES and wl._dpbench_random(spec) is None:
            raise InvalidParameter(f"{who}: unknown grid workload {spec!r}; known: {', '.join(GRID_NAMES)}, "
                                   "dpbench-random-<m>")


def _term(spec, shape, who: str) -> tuple:
    if not isinstance(spec, (tuple, list)) or len(spec) != len(shape):
        raise InvalidParameter(f"{who}: a Kronecker term is one 1-D workload per axis ({len(shape)} for a grid of "
                               f"shape {tuple(shape)}), got {spec!r}")
    return tuple(wl.resolve(s, n, f"{who} (axis {k})") for k, (s, n) in enumerate(zip(spec, shape)))


def resolve_grid(spec, shape, who: str = "workload") -> KroneckerWorkload:
    """A grid workload (module docstring's forms) over ``shape`` as a :class:`KroneckerWorkload`;
    errors name the problem (a non-product workload, a shape mismatch, an unknown name)."""
    shape = tuple(int(s) for s in shape)
    check_grid_spec(spec, who)
    if isinstance(spec, KroneckerWorkload):
        if tuple(spec.shape) != shape:
            raise InvalidParameter(f"{who}: the workload {spec.name!r} is over a grid of shape {tuple(spec.shape)}, "
                                   f"the histogram has shape {shape}")
        return spec
    if isinstance(spec, wl.RectangleWorkload):
        if tuple(spec.shape) != shape:
            raise InvalidParameter(f"{who}: the workload {spec.name!r} is over a grid of shape {tuple(spec.shape)}, "
                                   f"the histogram has shape {shape}")
        if isinstance(spec, wl.AllRectangles):
            return resolve_grid("all-rectangles", shape, who)
        return KroneckerWorkload(shape, _product_terms(spec, who), spec.name)
    if isinstance(spec, str):
        if spec == "prefix":
            return KroneckerWorkload(shape, (tuple(wl.prefix(n) for n in shape),), spec)
        if spec == "all-rectangles":
            return KroneckerWorkload(shape, (tuple(wl.all_ranges(n) for n in shape),), spec)
        if spec == "identity":
            return KroneckerWorkload(shape, (tuple(wl.identity(n) for n in shape),), spec)
        if spec == "marginals":
            terms = tuple(tuple(wl.identity(n) if j == k else total_range(n) for j, n in enumerate(shape))
                          for k in range(len(shape)))
            return KroneckerWorkload(shape, terms, spec)
        return kronecker_surrogate(wl.make_rectangles(spec, shape), spec)
    # a tuple of per-axis specs (one term) or a list of them (a union)
    if isinstance(spec, list) and all(isinstance(t, (tuple, list)) and not isinstance(t, str) and len(t) == len(shape)
                                      and not all(isinstance(v, (int, np.integer)) for v in t) for t in spec):
        terms = tuple(_term(t, shape, who) for t in spec)
        return KroneckerWorkload(shape, terms, f"union of {len(terms)} Kronecker terms")
    term = _term(spec, shape, who)
    return KroneckerWorkload(shape, (term,), " x ".join(w.name for w in term))


# ------------------------------------------------------------------ applying per-axis maps

def along(y: np.ndarray, axis: int, fn) -> np.ndarray:
    """``fn`` (an ``(n, k) -> (m, k)`` map) applied along ``axis`` of the array ``y``."""
    moved = np.moveaxis(y, axis, 0)
    rest = moved.shape[1:]
    out = np.asarray(fn(moved.reshape(moved.shape[0], -1)))
    return np.moveaxis(out.reshape((out.shape[0],) + rest), 0, axis)


@dataclass(eq=False)
class KroneckerStrategy:
    """``A = A_1 (x) ... (x) A_d``, each ``A_k`` an optimised p-Identity strategy (:class:`Strategy`).

    ``objective``: the expected total squared error on ``workload`` per unit noise variance
    (sensitivity 1), ``sum_t prod_k f(Theta_k; G^t_k)`` (for a surrogate: on the real rectangles).
    """

    factors: tuple
    workload: KroneckerWorkload
    objective: float

    @property
    def shape(self) -> tuple:
        return tuple(f.n for f in self.factors)

    @property
    def n(self) -> int:
        return int(np.prod(self.shape))

    @property
    def rows(self) -> int:
        return int(np.prod([f.n + f.p for f in self.factors]))

    def queries(self):
        """What the kernel measures: :class:`dphist.kernel.KroneckerQueries` of the factors' sparse matrices."""
        from dphist.kernel import KroneckerQueries
        return KroneckerQueries(tuple(f.queries() for f in self.factors))

    def dense(self) -> np.ndarray:
        """``A`` as a dense matrix (small grids, tests)."""
        out = np.ones((1, 1))
        for f in self.factors:
            out = np.kron(out, f.strategy)
        return out

    def reconstruct(self, answers) -> np.ndarray:
        """The least-squares estimate ``((x)_k A_k^+) y`` (row-major cells), axis by axis."""
        y = np.asarray(answers, dtype=float)
        m = tuple(f.n + f.p for f in self.factors)
        if y.shape != (int(np.prod(m)),):
            raise InvalidParameter(f"a Kronecker strategy of {' x '.join(map(str, m))} rows needs {int(np.prod(m))} "
                                   f"answers, got shape {y.shape}")
        y = y.reshape(m)
        for axis, f in enumerate(self.factors):
            y = along(y, axis, f.reconstruct)
        return y.reshape(-1)

    def inverse_gram(self, U) -> np.ndarray:
        """``(A^T A)^{-1} U = ((x)_k C_k) U`` for ``U`` of shape ``(N,)`` or ``(N, q)``."""
        U = np.asarray(U, dtype=float)
        q = U.shape[1:]
        y = U.reshape(self.shape + q)
        for axis, f in enumerate(self.factors):
            y = along(y, axis, f.inverse_gram)
        return y.reshape(U.shape)

    def bin_variances(self, noise_variance: float = 1.0) -> np.ndarray:
        """Per-cell variances ``s^2 prod_k (C_k)_{jj}`` (row-major)."""
        out = np.ones(())
        for f in self.factors:
            out = np.multiply.outer(out, f.bin_variances(1.0))
        return noise_variance * out.reshape(-1)

    def rectangle_variances(self, rectangles: wl.RectangleWorkload, noise_variance: float = 1.0) -> np.ndarray:
        """Variances of rectangles: ``s^2 prod_k`` (the axis-``k`` range's 1-D variance), O(m p)."""
        if tuple(rectangles.shape) != self.shape:
            raise InvalidParameter(f"rectangles over a grid of shape {tuple(rectangles.shape)} for a strategy over "
                                   f"{self.shape}")
        out = np.full(len(rectangles), float(noise_variance))
        for k, f in enumerate(self.factors):
            out *= f.query_variances(wl.RangeWorkload(f.n, rectangles.lo[:, k], rectangles.hi[:, k]), 1.0)
        return out

    def total_variance(self, workload=None, noise_variance: float = 1.0) -> float:
        """``s^2 sum_t prod_k tr(G^t_k C_k)``: the expected total squared error on ``workload`` (default the
        strategy's own; a surrogate's real rectangles are summed one by one)."""
        w = self.workload if workload is None else resolve_grid(workload, self.shape, "total_variance")
        if w.surrogate:
            return float(self.rectangle_variances(w.rectangles, noise_variance).sum())
        return noise_variance * _union_value([[f.theta for f in self.factors]], w)[0]


def _union_value(thetas_list, workload: KroneckerWorkload, grams=None, gradient=False):
    """``F = sum_t prod_k f(Theta_k; G^t_k)`` (and its gradient per axis) for one set of ``Theta_k``."""
    thetas = thetas_list[0]
    grams = grams or [[Gram(w) for w in term] for term in workload.terms]
    d = len(thetas)
    F = 0.0
    grads = [np.zeros_like(t) for t in thetas] if gradient else None
    for term in grams:
        vals, gs = [], []
        for k in range(d):
            f, g = objective_and_gradient(thetas[k], term[k], gradient=gradient)
            vals.append(f)
            gs.append(g)
        F += float(np.prod(vals))
        if gradient:
            for k in range(d):
                grads[k] += float(np.prod(vals[:k] + vals[k + 1:])) * gs[k]
    return F, grads


def _minimize_union(workload: KroneckerWorkload, ps, seed: int, iterations: int) -> list:
    """L-BFGS-B over every axis's ``Theta_k`` at once on ``F`` (module docstring), ``Theta >= 0``."""
    from scipy.optimize import minimize
    shape = workload.shape
    grams = [[Gram(w) for w in term] for term in workload.terms]
    sizes = [p * n for p, n in zip(ps, shape)]
    cuts = np.cumsum([0] + sizes)

    def split(z):
        return [z[cuts[k]:cuts[k + 1]].reshape(ps[k], shape[k]) for k in range(len(shape))]

    def fun(z):
        F, grads = _union_value([split(z)], workload, grams, gradient=True)
        return F, np.concatenate([g.ravel() for g in grads])

    z0 = np.concatenate([_start(p, n, seed).ravel() for p, n in zip(ps, shape)])
    if z0.size == 0:
        return split(z0)
    res = minimize(fun, z0, jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * z0.size,
                   options=dict(maxiter=int(iterations), gtol=0.0, ftol=0.0))
    return [np.clip(t, 0.0, None) for t in split(res.x)]


def optimize_kron(workload, shape, p: int | None = None, seed: int = 0, iterations: int = DEFAULT_ITERATIONS,
                  cache: bool = True) -> KroneckerStrategy:
    """The optimised Kronecker strategy for a grid ``workload`` over ``shape`` (cached by workload and shape).

    ``p``: rows of every axis's ``Theta`` (None: :func:`default_p` of the axis's length).  One term:
    the 1-D optimiser per axis (its cache); a union: joint optimisation, each axis's ``Theta`` stored
    in the same cache under the union's fingerprint, the grid's shape and the axis.
    """
    shape = tuple(int(s) for s in shape)
    w = resolve_grid(workload, shape, "hdmm.kronecker")
    if p is not None and int(p) < 0 or int(iterations) < 1 or int(seed) < 0:
        raise InvalidParameter(f"hdmm: p must be >= 0, iterations >= 1 and seed >= 0 (got {p}, {iterations}, {seed})")
    ps = [default_p(n) if p is None else min(int(p), n) for n in shape]
    if len(w.terms) == 1:
        factors = tuple(optimize(axis_w, n, p=pk, seed=seed, iterations=iterations, cache=cache)
                        for axis_w, n, pk in zip(w.terms[0], shape, ps))
    else:
        union = hashlib.sha256(w.fingerprint().encode()).hexdigest()[:32]
        keys = [dict(version=VERSION, workload=f"kron-{union}-shape-{'x'.join(map(str, shape))}-axis{k}", n=n, p=pk,
                     seed=int(seed), iterations=int(iterations)) for k, (n, pk) in enumerate(zip(shape, ps))]
        found = [lookup(k) for k in keys] if cache else [None]
        if any(f is None for f in found):
            thetas = _minimize_union(w, ps, int(seed), int(iterations))
            F = _union_value([thetas], w)[0]
            found = [Strategy(theta, key, F) for key, theta in zip(keys, thetas)]   # each axis records the union's F
            for f in found if cache else ():
                keep(f)
        factors = tuple(found)
    total = _union_value([[f.theta for f in factors]], w)[0] if not w.surrogate else \
        float(np.sum(KroneckerStrategy(factors, w, 0.0).rectangle_variances(w.rectangles)))
    return KroneckerStrategy(factors, w, total)


# ------------------------------------------------------------------ the SVD bound

def kronecker_svd_bound(workload, shape) -> float:
    """``(sum_i sigma_i)^2 / N`` of a grid workload (module docstring): the 1-D bounds multiplied for
    one term; a common eigenbasis per axis for a union of commuting terms (marginals); a dense
    eigendecomposition up to :data:`MAX_DENSE_CELLS` cells otherwise (a surrogate: its real rectangles)."""
    from .bounds import svd_bound
    shape = tuple(int(s) for s in shape)
    w = resolve_grid(workload, shape, "svd_bound")
    N = int(np.prod(shape))
    if w.surrogate:
        _check_dense(N, w.name)
        return float(np.linalg.svd(w.rectangles.matrix(), compute_uv=False).sum() ** 2 / N)
    if len(w.terms) == 1:
        return float(np.prod([svd_bound(a, n) for a, n in zip(w.terms[0], shape)]))
    lam = _commuting_eigenvalues(w)
    if lam is None:
        _check_dense(N, w.name)
        G = sum(_kron_all([Gram(a).dense() for a in term]) for term in w.terms)
        lam = np.linalg.eigvalsh(G)
    return float(np.sqrt(np.clip(np.ravel(lam), 0.0, None)).sum() ** 2 / N)


def _commuting_eigenvalues(w: KroneckerWorkload):
    """Eigenvalues ``sum_t prod_k lambda^t_k`` of ``sum_t (x)_k G^t_k`` when, on every axis, the terms'
    Gram matrices share an eigenbasis (found from a generic combination of them); None otherwise."""
    per_axis = []
    for k in range(len(w.shape)):
        gs = [Gram(term[k]).dense() for term in w.terms]
        _, U = np.linalg.eigh(sum((1.0 + 0.618 * t) * g for t, g in enumerate(gs)))
        diags = []
        for g in gs:
            D = U.T @ g @ U
            if np.abs(D - np.diag(np.diag(D))).max() > 1e-8 * max(np.abs(D).max(), 1.0):
                return None
            diags.append(np.diag(D))
        per_axis.append(diags)
    lam = 0.0
    for t in range(len(w.terms)):
        term = np.ones(())
        for k in range(len(w.shape)):
            term = np.multiply.outer(term, per_axis[k][t])
        lam = lam + term
    return lam


def _kron_all(mats) -> np.ndarray:
    out = np.ones((1, 1))
    for m in mats:
        out = np.kron(out, m)
    return out


def _check_dense(N: int, name: str) -> None:
    if N > MAX_DENSE_CELLS:
        raise InvalidParameter(f"the SVD bound of {name!r} needs a dense decomposition over {N} cells "
                               f"(limit {MAX_DENSE_CELLS})")
