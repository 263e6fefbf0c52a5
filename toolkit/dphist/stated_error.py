"""How wrong may a release be: the stated error of a release's noise.

A release ``x^`` of a *linear* algorithm (identity, H, Hb, Privelet, GreedyH, any
strategy-plus-least-squares finalizer) is ``x^ = E R y`` where ``y = A x + Z`` are the noisy
answers of the strategy ``A`` (over the groups the finalizer measured), ``R`` the finalizer's
reconstruction (least squares weighted by ``W``: ``R = (A^T W A)^{-1} A^T W``) and ``E`` the
public spreading of each group's total evenly over its bins.  ``R A = I``, so ``x^`` is unbiased
and the error of any linear query ``w . x^`` is ``w^T E R Z``: a fixed linear form in independent
noise terms.  Its variance is exact:

    Var(w . x^) = sum_i sigma_i^2 t_i^2,   t = W A s,   s = (A^T W A)^{-1} E^T w,

with ``sigma_i^2`` the variance of the noise the run's noise source adds to answer ``i`` (the
*noise law*, :func:`noise_law`): ``2 b^2`` for float Laplace of scale ``b = Delta / eps``; for
release mode's exact discrete Laplace of scale ``tau`` (``tau >= Delta / eps``, dyadic)
``2 q / (1 - q)^2`` with ``q = exp(-1 / tau)`` - up to 8 % below ``2 b^2`` at ``b = 1``, which is
why the statement asks the noise source rather than assuming ``2 b^2``.  When ``W`` is the
inverse of the noise variances (up to one constant) the sandwich reduces to
``c (A^T W A)^{-1}``; the general form is kept so that a finalizer whose weights differ from
the true variances (e.g. float weights under discrete noise) is still stated exactly.

Why it is free.  ``A``, ``W``, the sensitivities and the epsilons are the finalizer's public
choices; the partition ``E`` is a published output; the noise law is a property of the noise
source (no random state).  Nothing here reads the counts, the noise drawn, or the kernel: the
statement is post-processing of public quantities, so it costs no budget and, in release mode,
carries nothing that reproduces the noise.

Kinds of statement (:attr:`StatedError.kind`):

* ``"exact"`` - a data-independent linear algorithm: the variance is exact, the estimate is
  unbiased.
* ``"noise-only"`` - the partition (or order) was chosen from the data (DAWA, AHP, ...): the
  variance is that of the finalizer's fresh noise *given the published structure* (``given``: the
  released partition; for WAF also H~, for EFPA the number of kept coefficients), exact for that
  structure; the bias (averaging within groups, H~'s share in WAF, EFPA's dropped frequencies)
  depends on the true counts and is **unknown**: the statement names it and gives no number, and an
  interval covers the noise part only.  A finalizer that estimates every bin without bias given the
  groups (SF's trees) states over the bins and stays ``"exact"`` (``conditional``: given the groups).
* ``"before-postprocessing"`` - a non-linear post-processing (non-negativity, integrality) was
  applied after the linear estimate: the variance describes the linear estimate before it; the
  released values are biased by the post-processing and no longer follow that variance.

Confidence intervals (:meth:`StatedError.intervals`): *exact* when the query's error is one
noise term (a bin of the identity release, a group total of a group-mean release): the Laplace
quantile ``b ln(1 / (1 - level))``, or the discrete Laplace quantile (the smallest integer ``m``
with ``P(|Z| <= m) >= level``) in release mode.  Otherwise Chebyshev's inequality
(``sd / sqrt(1 - level)``, guaranteed, conservative) by default, or a normal approximation
(``z sd``, not guaranteed: sums of few Laplace terms have heavier tails) on request.  Every
result names its method and whether its coverage is guaranteed.

The hook (:meth:`dphist.Finalizer.stated_error`).  A finalizer states its error by returning a
:class:`LinearStrategy` (its measurements over the groups: matrix, sensitivity, epsilon, the
weight its least squares gives them) - the generic route, turned into a
:class:`LinearStatedError` by the pipeline with the run's noise law - or any
:class:`StatedError` it builds itself (``ctx.noise_law`` gives the variances), e.g. one that
exploits its structure (:class:`GroupNoiseStatedError`; EFPA's ``FourierStatedError``), or an
:class:`Unstated` with the reason no part of its error can be stated (MWEM, NoiseFirst).  Its contract: the finalizer's estimate over the strategy's columns is
the weighted least-squares solution ``(A^T W A)^{-1} A^T W y`` (an exact inverse when ``A`` is
square), and the first ``n_groups`` columns are the groups of the partition in its order (more
columns are padding whose true value is 0).  ``tests/test_stated_error.py`` checks every
linear preset's statement against the release itself (probing ``R`` through a noise source
that adds unit vectors) and against simulation.

Solving with ``A^T W A``: the strategy's own ``inverse_gram`` when it gives one (H: the tree's two
least-squares passes on answers that are ``u / eps_0^2`` on the leaves and 0 elsewhere, O(G) per
query; Privelet: orthogonal rows, O(N log N)); a diagonal Gram matrix (disjoint measurements) directly; dense Cholesky
up to :data:`DENSE_SOLVE_COLUMNS` columns; otherwise a sparse LU of the augmented system
``[[W^-1, A], [A^T, 0]]`` (no dense Gram matrix: a tree's Gram matrix is dense, its augmented
system is not).  One query costs one solve: O(fill of the factor).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from .errors import InvalidParameter

#: per-bin variances of strategies with at most this many columns come from a dense Cholesky
#: factor (the diagonal of the inverse: k^3 flops, ~4 s at 4,096 on one loaded core); beyond, one
#: solve per column
DENSE_COLUMNS = 4096
#: queries on strategies with at most this many columns are solved with the dense Cholesky factor;
#: beyond, with a sparse LU of the augmented system (0.2 s to factor for a binary tree at 4,096)
DENSE_SOLVE_COLUMNS = 1024
#: queries are turned into column coordinates (a dense block) this many at a time
QUERY_BLOCK = 256
#: a workload handed to ``variance`` may hold at most this many non-zeros once expanded
MAX_QUERY_ENTRIES = 50_000_000

KINDS = ("exact", "noise-only", "before-postprocessing")
BIAS_UNKNOWN = ("unknown: the partition was chosen from the data; averaging within a group is biased "
                "by the spread of the true counts in it, which is private and not stated")
#: interval methods: "auto" is exact where the noise law is known for the query, else Chebyshev
INTERVAL_METHODS = ("auto", "exact", "chebyshev", "normal")


# ----------------------------------------------------------------------------- noise laws
class NoiseLaw:
    """The distribution of the noise a noise source adds to one answer (public, no random state)."""

    name = "unknown"

    def variance(self, sensitivity: float, epsilon: float, integral: bool = True, support: int | None = None) -> float:
        raise NotImplementedError

    def half_width(self, sensitivity: float, epsilon: float, level: float, integral: bool = True,
                   support: int | None = None) -> float:
        """``h`` with ``P(|Z| <= h) >= level`` for one noise term (exact quantile)."""
        raise NotImplementedError


class LaplaceLaw(NoiseLaw):
    """Float Laplace of scale ``b = k Delta / eps`` (research mode's ``SeededLaplace``): variance ``2 b^2``."""

    name = "laplace"

    def __init__(self, contributions: int = 1):
        self.k = int(contributions)

    def variance(self, sensitivity, epsilon, integral=True, support=None):
        b = self.k * float(sensitivity) / float(epsilon)
        return 2.0 * b * b

    def half_width(self, sensitivity, epsilon, level, integral=True, support=None):
        b = self.k * float(sensitivity) / float(epsilon)
        return b * math.log(1.0 / (1.0 - level))   # P(|Z| > h) = exp(-h / b)


def _discrete_q(tau: float) -> tuple[float, float]:
    """``q = exp(-1/tau)`` and ``1 - q`` (accurate for large ``tau``)."""
    return math.exp(-1.0 / tau), -math.expm1(-1.0 / tau)


class DiscreteLaplaceLaw(NoiseLaw):
    """Release mode's exact discrete Laplace (:class:`dphist.kernel.noise.ExactNoise`).

    Integer route: integer noise of scale ``tau = t / s >= k Delta / eps`` (the sampler's dyadic
    scale), variance ``2 q / (1 - q)^2``, ``q = exp(-1 / tau)``.  Real-valued route: the answer is
    rounded to the grid ``g`` and discrete noise of scale ``(ceil(k Delta / g) + 2 k support) / eps``
    grid steps is added; variance ``g^2 2 q / (1 - q)^2``.  (The rounding to the grid moves an
    answer by at most ``g / 2 = 2^-21 Delta``: a bound, not noise, left out of the variance.)
    """

    name = "discrete-laplace"

    def __init__(self, contributions: int = 1):
        self.k = int(contributions)

    def _scale(self, sensitivity, epsilon, integral, support) -> tuple[float, float]:
        from fractions import Fraction

        from .kernel.exact import dyadic_scale_at_least
        from .kernel.noise import _grid
        sens = self.k * float(sensitivity)
        if integral and sens == round(sens):
            t, s = dyadic_scale_at_least(Fraction(int(sens)) / Fraction(float(epsilon)))
            return t / s, 1.0
        g = _grid(sens)
        supp = 1 if support is None else max(int(support), 1)
        grid_sens = Fraction(math.ceil(sens / g)) + 2 * supp * self.k
        t, s = dyadic_scale_at_least(grid_sens / Fraction(float(epsilon)))
        return t / s, g

    def variance(self, sensitivity, epsilon, integral=True, support=None):
        tau, g = self._scale(sensitivity, epsilon, integral, support)
        q, one_minus_q = _discrete_q(tau)
        return g * g * 2.0 * q / (one_minus_q * one_minus_q)

    def half_width(self, sensitivity, epsilon, level, integral=True, support=None):
        tau, g = self._scale(sensitivity, epsilon, integral, support)
        q, _ = _discrete_q(tau)
        # P(|Z| <= m) = 1 - 2 q^(m+1) / (1 + q); the smallest integer m reaching the level
        m = max(0, math.ceil(math.log((1.0 - level) * (1.0 + q) / 2.0) / math.log(q) - 1.0 - 1e-12))
        while 1.0 - 2.0 * q ** (m + 1) / (1.0 + q) < level:
            m += 1
        return g * m


@functools.lru_cache(maxsize=1)
def _noise_classes() -> tuple:
    """The kernel's noise source classes (imported on first use: this module loads without the kernel's
    noise module; every release asks, so the import statements run once)."""
    from .kernel.noise import ExactNoise, SeededLaplace
    from .kernel.persons import PersonLevelNoise
    return ExactNoise, SeededLaplace, PersonLevelNoise


def noise_law(noise) -> NoiseLaw | None:
    """The law of the noise ``noise`` (a kernel noise source) adds, or None when it is not known
    (a user's own source: its releases state no variance, and say why)."""
    ExactNoise, SeededLaplace, PersonLevelNoise = _noise_classes()
    k = 1
    if isinstance(noise, PersonLevelNoise):
        noise, k = noise.inner, noise.k
    law = getattr(noise, "noise_law", None)
    if callable(law):           # a user's source may describe itself
        out = law()
        return out if k == 1 or out is None else None
    if isinstance(noise, SeededLaplace):
        return LaplaceLaw(k)
    if isinstance(noise, ExactNoise):
        return DiscreteLaplaceLaw(k)
    return None


# ----------------------------------------------------------------------------- the hook's types
@dataclass(frozen=True)
class Measurement:
    """One block of a finalizer's strategy: ``matrix @ groups + noise`` (one call of a primitive).

    ``matrix``: rows = answers, columns = the strategy's columns (dense or scipy.sparse), or a
    function returning it (built on first use: a statement nobody asks for costs nothing);
    ``sensitivity``: its L1 sensitivity (per record; the pipeline's ``k`` is applied by the law);
    ``epsilon``: the budget of the call; ``integral``: the kernel's integer route (integer
    queries, integer sensitivity) or the real-valued grid route; ``support``: the most answers
    one record moves (the grid route's widening); ``weight``: the weight the finalizer's least
    squares gives each row (default ``(eps / Delta)^2``, inverse to the Laplace variance).
    """

    matrix: Any
    sensitivity: float
    epsilon: float
    integral: bool = True
    support: int | None = None
    weight: float | None = None
    #: answers known exactly (no noise: e.g. a tree's slots past a group, entered as zeros whose true
    #: value is 0): variance 0, but they still enter the least squares with ``weight``
    noiseless: bool = False

    @property
    def row_weight(self) -> float:
        return (float(self.epsilon) / float(self.sensitivity)) ** 2 if self.weight is None else float(self.weight)


@dataclass(frozen=True)
class LinearStrategy:
    """What a linear finalizer declares: its measurements over ``n_columns`` columns (the first
    ``n_groups`` are the partition's groups in its order; any further ones are padding, true value
    0), a name for the reconstruction, and the non-linear steps it applied after the least squares
    (``postprocess``, e.g. H's zeroing: the statement is then marked ``"before-postprocessing"``)."""

    measurements: Sequence[Measurement]
    n_columns: int
    reconstruction: str = "weighted least squares"
    postprocess: tuple = ()
    #: optional ``U -> (A^T W A)^{-1} U`` exploiting the strategy's structure (e.g. Privelet's orthogonal
    #: rows: ``A A^T`` diagonal, so ``(A^T A)^{-1} = A^T (A A^T)^{-2} A``); the generic solvers otherwise
    inverse_gram: Callable | None = None


# ----------------------------------------------------------------------------- intervals
@dataclass(frozen=True)
class ConfidenceInterval:
    """Intervals for one or more queries: ``low <= true answer <= high`` with probability >= ``level``
    when ``guaranteed`` (for the stated kind: given the partition, before any post-processing)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: float
    method: str        #: "exact (...)", "chebyshev" or "normal approximation"
    guaranteed: bool   #: False for the normal approximation and after non-linear post-processing
    note: str = ""

    def __iter__(self):   # lo, hi = release.confidence_interval(...)
        return iter((self.low, self.high))


def check_level(level) -> float:
    """A confidence level in (0, 1), or InvalidParameter naming it."""
    if isinstance(level, bool) or not isinstance(level, (int, float, np.floating)) or not (0.0 < float(level) < 1.0):
        raise InvalidParameter(f"a confidence level must be a number strictly between 0 and 1, got {level!r}")
    return float(level)


# ----------------------------------------------------------------------------- statements
class StatedError:
    """A release's statement of its error (base class and protocol).

    ``kind`` (module docstring), ``bias`` (None when unbiased, else what is unknown),
    ``law_name`` (the noise law's name).  A subclass gives :meth:`group_variance` (the variance
    of ``u . g^`` for rows ``u`` over the columns: one solve of its structure per query) and may
    give :meth:`single_half_widths` (exact intervals) and a faster :meth:`group_diagonal`.
    """

    kind: str = "exact"
    bias: str | None = None
    law_name: str = "unknown"
    postprocess: tuple = ()
    #: True when the partition (or order) was chosen from the data; the variance is then given it
    conditional: bool = False
    #: what the statement is conditional on, when ``conditional`` (a finalizer whose fresh noise is
    #: combined with earlier outputs names them: "the released partition and H~", "the number K of
    #: kept Fourier coefficients")
    given: str | None = None

    @property
    def given_text(self) -> str:
        return self.given or "the released partition"

    def __init__(self, partition, n_columns: int | None = None):
        self.partition = partition
        self.n_columns = partition.n_groups if n_columns is None else int(n_columns)

    # --- to implement
    def group_variance(self, U: np.ndarray) -> np.ndarray:
        """Variances of ``u . g^`` for the rows ``u`` of ``U`` (q x n_columns)."""
        raise NotImplementedError

    def single_half_widths(self, U: np.ndarray, level: float) -> np.ndarray | None:
        """Exact half-widths at ``level`` when every query's error is one noise term, else None."""
        return None

    # --- shared
    @property
    def exact(self) -> bool:
        """Whether the variance is the exact variance of the released estimate's error."""
        return self.kind == "exact"

    def to_group(self, Q) -> np.ndarray:
        """Bin queries (rows of ``Q``, dense or sparse, q x n_bins) in column coordinates:
        ``u = E^T w`` with ``E`` the even spreading of each group's total (``u_g = sum_{i in g} w_i / |g|``)."""
        p = self.partition
        labels = p.labels()
        inv_size = 1.0 / p.sizes
        if hasattr(Q, "tocsr"):
            import scipy.sparse as sp
            Q = Q.tocsr()
            Eg = sp.csr_matrix((inv_size[labels], (np.arange(p.n_bins), labels)), shape=(p.n_bins, self.n_columns))
            return np.asarray((Q @ Eg).toarray())
        Q = np.asarray(Q, dtype=float)
        out = np.zeros((Q.shape[0], self.n_columns))
        np.add.at(out.T, labels, (Q * inv_size[labels]).T)
        return out

    def variance(self, Q) -> np.ndarray:
        """Variances of the queries (rows of ``Q`` over the bins), :data:`QUERY_BLOCK` rows at a time."""
        return np.concatenate([self.group_variance(self.to_group(Q[a:a + QUERY_BLOCK]))
                               for a in range(0, Q.shape[0], QUERY_BLOCK)])

    def bin_variances(self) -> np.ndarray:
        """Per-bin variance (original domain order): a group's variance over its size squared."""
        p = self.partition
        gv = self.group_diagonal()[:p.n_groups]
        return (gv / p.sizes.astype(float) ** 2)[p.labels()]

    def group_diagonal(self) -> np.ndarray:
        """Variance of every column's estimate (by default one solve per column, in blocks)."""
        out = np.empty(self.n_columns)
        for a in range(0, self.n_columns, 256):
            b = min(a + 256, self.n_columns)
            U = np.zeros((b - a, self.n_columns))
            U[np.arange(b - a), np.arange(a, b)] = 1.0
            out[a:b] = self.group_variance(U)
        return out

    def intervals(self, Q, estimates, level: float, method: str = "auto") -> ConfidenceInterval:
        level = check_level(level)
        if method not in INTERVAL_METHODS:
            raise InvalidParameter(f"unknown interval method {method!r}; choose one of {', '.join(INTERVAL_METHODS)}")
        sd = np.sqrt(self.variance(Q))
        est = np.asarray(estimates, dtype=float)
        exact_half = None
        if method in ("auto", "exact"):
            parts = [self.single_half_widths(self.to_group(Q[a:a + QUERY_BLOCK]), level)
                     for a in range(0, Q.shape[0], QUERY_BLOCK)]
            exact_half = None if any(p is None for p in parts) else np.concatenate(parts)
        if method == "exact" and exact_half is None:
            raise InvalidParameter("an exact interval needs a query whose error is a single noise term (e.g. one bin "
                                   "of the identity release); use method='chebyshev' (guaranteed) or 'normal'")
        if exact_half is not None:
            half = exact_half
            name, guaranteed = f"exact ({self.law_name} quantile)", True
        elif method == "normal":
            from statistics import NormalDist
            half = NormalDist().inv_cdf(0.5 + level / 2.0) * sd
            name, guaranteed = "normal approximation", False
        else:
            half = sd / math.sqrt(1.0 - level)
            name, guaranteed = "chebyshev", True
        note = ""
        if self.kind == "noise-only":
            note = (f"covers the noise part only: the estimate's mean given {self.given_text}; the bias is "
                    + (self.bias or BIAS_UNKNOWN))
        elif self.kind == "before-postprocessing":
            guaranteed = False
            note = (f"stated for the linear estimate before {', '.join(self.postprocess)}; the released values "
                    "are biased by that post-processing: coverage is not guaranteed")
        return ConfidenceInterval(est, est - half, est + half, level, name, guaranteed, note)

    def describe(self) -> dict[str, Any]:
        """A plain-data summary (release exports): nothing in it reproduces the noise."""
        return {"kind": self.kind, "exact": self.exact, "noise_law": self.law_name,
                "given": self.given_text if self.conditional else "nothing (data-independent)",
                "bias": self.bias or "none (unbiased)", "postprocess": list(self.postprocess)}

    def marked(self, kind: str, bias: str | None = None, postprocess: tuple = ()) -> "StatedError":
        """This statement re-labelled (data-dependent partition, post-processing)."""
        import copy
        out = copy.copy(self)
        out.kind = kind
        if bias is not None:
            out.bias = bias
        if postprocess:
            out.postprocess = tuple(postprocess)
        return out


class LinearStatedError(StatedError):
    """The generic statement of a strategy-plus-least-squares finalizer (module docstring)."""

    def __init__(self, strategy: LinearStrategy, law: NoiseLaw, partition):
        super().__init__(partition, strategy.n_columns)
        if strategy.n_columns < partition.n_groups:
            raise InvalidParameter(f"the strategy has {strategy.n_columns} columns for {partition.n_groups} groups")
        self.strategy = strategy
        self.law = law
        self.law_name = law.name
        self.reconstruction = strategy.reconstruction
        self._A = None        # built on first use: a release that is never asked pays nothing
        self._solver = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_solver"] = None          # factors are rebuilt on use (a function is not picklable)
        state.pop("_cholesky", None)
        return state

    def _build(self) -> None:
        import scipy.sparse as sp
        blocks, var, w, laws = [], [], [], []
        for m in self.strategy.measurements:
            A = sp.csr_matrix(m.matrix() if callable(m.matrix) else m.matrix, dtype=float)
            if A.shape[1] != self.n_columns:
                raise InvalidParameter(f"a measurement has {A.shape[1]} columns, the strategy {self.n_columns}")
            rows = A.shape[0]
            blocks.append(A)
            var.append(np.full(rows, 0.0 if m.noiseless else
                                self.law.variance(m.sensitivity, m.epsilon, m.integral, m.support)))
            w.append(np.full(rows, m.row_weight))
            laws.append(np.full(rows, len(laws)))
        self._A = sp.vstack(blocks, format="csr")
        self.row_variance = np.concatenate(var)
        self.row_weight = np.concatenate(w)
        self._row_block = np.concatenate(laws)
        ratio = self.row_weight * self.row_variance
        self._proportional = bool(np.allclose(ratio, ratio[0], rtol=1e-12, atol=0))

    @property
    def A(self):
        """The strategy matrix (all measurements stacked, sparse)."""
        if self._A is None:
            self._build()
        return self._A

    # Gram solves ------------------------------------------------------------
    def _solve(self, U: np.ndarray) -> np.ndarray:
        """``(A^T W A)^{-1} U`` for columns ``U`` (n_columns x q)."""
        if self._A is None:
            self._build()
        if self._solver is None:
            self._solver = self._factor()
        return self._solver(U)

    def _gram(self):
        import scipy.sparse as sp
        return (self.A.T @ sp.diags(self.row_weight) @ self.A).tocsr()

    @property
    def diagonal_gram(self) -> bool:
        """Whether ``A^T W A`` is diagonal (every answer reads one column: identity, group means)."""
        return bool(np.all(np.diff(self.A.indptr) <= 1))

    def cholesky(self):
        """The dense Cholesky factor of ``A^T W A`` (lower), computed once (k^3 / 3 flops)."""
        if getattr(self, "_cholesky", None) is None:
            from scipy.linalg import cho_factor
            self._cholesky = cho_factor(self._gram().toarray(), lower=True, check_finite=False)
        return self._cholesky

    def _factor(self):
        import scipy.sparse as sp
        k = self.n_columns
        if self.strategy.inverse_gram is not None:             # the finalizer's own structure
            return self.strategy.inverse_gram
        if self.diagonal_gram:                                 # disjoint measurements: a diagonal Gram
            d = self._gram().diagonal()
            return lambda U: U / d.reshape((-1,) + (1,) * (np.ndim(U) - 1))
        if k <= DENSE_SOLVE_COLUMNS or getattr(self, "_cholesky", None) is not None:
            from scipy.linalg import cho_solve
            c = self.cholesky()
            return lambda U: cho_solve(c, U, check_finite=False)
        from scipy.sparse.linalg import splu
        r = self.A.shape[0]
        K = sp.bmat([[sp.diags(1.0 / self.row_weight), self.A], [self.A.T, None]], format="csc")
        lu = splu(K)

        def solve(U):
            rhs = np.zeros((r + k,) + U.shape[1:])
            rhs[r:] = U
            return -lu.solve(rhs)[r:]
        return solve

    def error_terms(self, U) -> np.ndarray:
        """``T`` (rows x q): the weight of every noise term in each query's error, ``u^T R``."""
        U = np.atleast_2d(np.asarray(U, dtype=float))
        S = self._solve(U.T)                                         # n_columns x q
        return self.row_weight[:, None] * np.asarray(self.A @ S)

    def group_variance(self, U):
        T = self.error_terms(U)
        return self.row_variance @ (T * T)

    def single_half_widths(self, U, level):
        T = np.abs(self.error_terms(U)) * (self.row_variance > 0)[:, None]   # noiseless rows add nothing
        nz = T > 1e-9 * T.max(axis=0, initial=0.0)
        if not np.all(nz.sum(axis=0) == 1):
            return None
        rows = np.argmax(nz, axis=0)
        blocks = self.strategy.measurements
        return np.array([T[r, j] * self.law.half_width(blocks[self._row_block[r]].sensitivity,
                                                         blocks[self._row_block[r]].epsilon, level,
                                                         blocks[self._row_block[r]].integral,
                                                         blocks[self._row_block[r]].support)
                         for j, r in enumerate(rows)])

    def group_diagonal(self):
        k = self.n_columns
        self.A  # noqa: B018 - builds the rows' variances
        if self.diagonal_gram:                                 # c / M_gg, or the sandwich's diagonal
            return super().group_diagonal() if not self._proportional else \
                self.row_weight[0] * self.row_variance[0] / self._gram().diagonal()
        if k <= DENSE_COLUMNS and self._proportional and self.strategy.inverse_gram is None:
            from scipy.linalg import solve_triangular
            L = self.cholesky()[0]
            Li = solve_triangular(L, np.eye(k), lower=True, check_finite=False)
            c = self.row_weight[0] * self.row_variance[0]      # W Sigma = c I: the sandwich is c M^-1
            return c * np.einsum("ij,ij->j", Li, Li)
        return super().group_diagonal()


class GroupNoiseStatedError(StatedError):
    """Group totals whose noise is ``scale_g Z_g`` with ``Z_g`` independent draws of one call's law
    (sensitivity, epsilon, integral route, support): a group-mean release (``scale = 1``) or one whose
    fresh group totals are mixed with earlier outputs held fixed (WAF: ``scale = a2``, the weight of the
    fresh mean).  The error of ``u . g^`` is ``sum_g u_g scale_g Z_g``: variance
    ``sum_g u_g^2 scale_g^2 sigma^2``, exactly; a query that reads one group has the exact quantile."""

    def __init__(self, partition, scale, law: NoiseLaw, sensitivity: float, epsilon: float,
                 integral: bool = True, support: int | None = None):
        super().__init__(partition)
        self.scale = np.broadcast_to(np.asarray(scale, dtype=float), (partition.n_groups,)).copy()
        self.law, self.law_name = law, law.name
        self.call = (float(sensitivity), float(epsilon), bool(integral), support)
        self.unit_variance = law.variance(*self.call)

    def group_variance(self, U):
        U = np.atleast_2d(np.asarray(U, dtype=float))
        return (U * U) @ (self.scale * self.scale * self.unit_variance)

    def group_diagonal(self):
        return self.scale * self.scale * self.unit_variance

    def single_half_widths(self, U, level):
        T = np.abs(np.atleast_2d(np.asarray(U, dtype=float)) * self.scale)
        nz = T > 1e-12 * T.max(axis=1, initial=0.0)[:, None]
        if not np.all(nz.sum(axis=1) == 1):
            return None
        s, e, integral, support = self.call
        return T.max(axis=1) * self.law.half_width(s, e, level, integral, support)


@dataclass(frozen=True)
class Unstated:
    """What a finalizer's :meth:`~dphist.Finalizer.stated_error` returns when no part of its error can be
    stated exactly, with the reason (the release's ``stated_reason``): e.g. an estimate that is not a
    linear function of noise independent of the published structure (MWEM's multiplicative weights;
    NoiseFirst's means of H~ over groups chosen from H~ itself)."""

    reason: str


def query_matrix(query, n: int):
    """Bin queries as a matrix (q x n, dense or sparse) and whether one query was given.

    Accepts a vector of ``n`` weights (one query), a 2-D array or scipy.sparse matrix (one query
    per row), a range ``(lo, hi)`` of two integers (half-open), or any workload form of
    :func:`dphist.workloads.resolve` (a name such as ``"prefix"``, ``(starts, ends)``, a list of
    ``(lo, hi)`` pairs, a RangeWorkload).  Errors name what is wrong (a query outside the domain,
    a wrong width, non-finite weights)."""
    from . import workloads as wl
    if isinstance(query, tuple) and len(query) == 2 and all(isinstance(v, (int, np.integer)) for v in query):
        lo, hi = int(query[0]), int(query[1])
        if not (0 <= lo < hi <= n):
            raise InvalidParameter(f"the range [{lo}, {hi}) is outside the domain of {n} bins or empty "
                                   f"(a range is half-open [lo, hi) with 0 <= lo < hi <= {n})")
        q = np.zeros((1, n))
        q[0, lo:hi] = 1.0
        return q, True
    if hasattr(query, "tocsr"):
        if query.shape[1] != n:
            raise InvalidParameter(f"a query matrix needs {n} columns (one per bin), got {query.shape[1]}")
        csr = query.tocsr()
        if not np.all(np.isfinite(csr.data)):
            raise InvalidParameter("the query weights must be finite numbers")
        return csr, False
    if isinstance(query, np.ndarray) or (isinstance(query, list) and query and not isinstance(query[0], (tuple, list))):
        arr = np.asarray(query)
        if arr.dtype == object or arr.dtype.kind not in "biuf":
            raise InvalidParameter(f"query weights must be numbers, got {arr.dtype}")
        arr = arr.astype(float)
        if arr.ndim not in (1, 2) or arr.shape[-1] != n:
            raise InvalidParameter(f"a query is a vector of {n} weights (one per bin) or a matrix with {n} columns, "
                                   f"got shape {arr.shape}: it is outside the domain of {n} bins")
        if not np.all(np.isfinite(arr)):
            raise InvalidParameter("the query weights must be finite numbers")
        return (arr[None, :], True) if arr.ndim == 1 else (arr, False)
    if not wl.is_spec(query):
        raise InvalidParameter(f"cannot read {query!r} as a query: give a vector of {n} weights, a matrix, "
                               "a range (lo, hi), or a workload (a name, (starts, ends), (lo, hi) pairs)")
    workload = wl.resolve(query, n, "query")
    lo, hi = np.asarray(workload.lo), np.asarray(workload.hi)
    total = int((hi - lo).sum())
    if total > MAX_QUERY_ENTRIES:
        raise InvalidParameter(f"the workload {workload.name!r} has {total:,} bin entries, more than "
                               f"{MAX_QUERY_ENTRIES:,}; ask for a subset of its queries")
    import scipy.sparse as sp
    lengths = hi - lo
    rows = np.repeat(np.arange(lo.size), lengths)
    cols = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths) + np.repeat(lo, lengths)
    return sp.csr_matrix((np.ones(total), (rows, cols)), shape=(lo.size, n)), False


def group_mean_strategy(n_groups: int, epsilon: float, postprocess: tuple = ()) -> LinearStrategy:
    """One noisy total per group (``laplace_partition``: identity over the groups, sensitivity 1, the
    integer route, one answer per record), the group-mean finalizer's strategy."""
    k = int(n_groups)
    return LinearStrategy([Measurement(identity_matrix(k), 1.0, epsilon, integral=True, support=1)], k,
                          reconstruction="the noisy group totals themselves", postprocess=tuple(postprocess))


def identity_matrix(k: int):
    """The ``k x k`` identity as a sparse matrix (a strategy measuring every column once)."""
    import scipy.sparse as sp
    return sp.identity(int(k), format="csr")
