"""Optimised p-Identity strategies: the optimiser, the on-disk cache, least-squares reconstruction and
the exact variances of a release.

``optimize(workload, n, p, seed)`` returns a :class:`Strategy`: the non-negative ``p x n`` matrix
``Theta`` minimising ``f(Theta) = tr(G (A^T A)^{-1})`` (``dphist_hdmm.objective``) by scipy's
L-BFGS-B with the analytic gradient and the bounds ``Theta >= 0``.  It depends on the public
workload only (never on data), so it is computed once and reused:

* in memory, per process, by key;
* on disk, in dphist's per-user cache folder (:mod:`dphist.cache`: ``$DPHIST_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/dphist``, else ``~/.cache/dphist``; sub-folder ``hdmm``), one ``.npz`` per key.  The key is (format version,
  workload fingerprint, n, p, seed, iterations).  A file is used only if its stored key equals the
  requested one, ``Theta`` has the right shape, is finite and non-negative and matches its stored
  SHA-256; anything else (a stale version, a truncated or edited file) is refused and rebuilt.

Choices where the paper leaves freedom (stated, measured in ``notebooks/hdmm.ipynb``):

* ``p``: HDMM suggests ``p`` about ``n / 16``; the default here is ``c + c // 8 + c // 64 + ...``
  with ``c = min(ceil(n / 16), 64)`` (73 rows at 4,096 bins), so that the optimisation at 4,096 bins
  fits its time target (the cost per step is O(p^2 n)).
* the start: HDMM starts from a random ``Theta``; here ``Theta`` starts as a hierarchy of blocks of
  consecutive bins over the identity (``c`` blocks, then ``c // 8`` blocks, ...; weight 1;
  :func:`block_levels`) plus seeded uniform jitter of 0.01.  Measured at 4,096 bins on all ranges:
  a random start (32 rows, 300 steps) and one level of 64 blocks (150 steps) both stayed above Hb's
  error; this start (64 + 8 + 1 rows, 150 steps) ended 15 % below it.
* a fixed budget of L-BFGS-B steps (``iterations``, 150 by default) with its tolerances at zero,
  so the result is the same on every machine with the same BLAS.

Release (:meth:`Strategy.reconstruct`): with answers ``y = [y1; y2]`` of ``A = [I; Theta] D``,
the least-squares estimate is

    x_hat = (A^T A)^{-1} A^T y = Dt X (y1 + Theta^T y2),   X = (I + Theta^T Theta)^{-1},  Dt = diag(d),

applied as ``X v = v - Theta^T M^{-1} (Theta v)`` with the cached ``p x p`` matrix ``M^{-1}``: O(n p).
Its covariance under i.i.d. noise of variance ``s^2`` per answer is ``s^2 Dt X Dt``
(:meth:`Strategy.covariance`), so a workload ``W`` has per-query variances
``s^2 diag(W Dt X Dt W^T)`` (:meth:`Strategy.query_variances`) and total ``s^2 f(Theta)``.
For the kernel's Laplace noise of scale ``Delta / eps`` (``Delta = 1``, computed by the kernel),
``s^2 = 2 Delta^2 / eps^2`` in research mode; release mode's discrete (grid) Laplace noise has a
slightly different variance (``dphist.kernel.exact``), not accounted for here.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dphist import workloads as wl
from dphist.errors import InvalidParameter

from .gram import Gram
from .objective import NORMS, column_norms, inverse_m, objective_and_gradient

#: format version of the optimiser and of the cache files: a change of either refuses old files
VERSION = 1
#: default L-BFGS-B steps
DEFAULT_ITERATIONS = 150
#: largest first level of the default start (the optimisation costs O(p^2 n) per step)
MAX_DEFAULT_P = 64
#: jitter of the starting Theta
JITTER = 0.01

_MEMORY: dict[str, "Strategy"] = {}


def block_levels(p: int) -> list[int]:
    """Rows per level of the start: ``[c, c // 8, c // 64, ...]`` (levels of at least one row) summing to ``p``."""
    p = int(p)
    c = p
    while c > 1 and sum(_geometric(c - 1)) >= p:
        c -= 1
    sizes = _geometric(c)
    sizes[0] += p - sum(sizes)
    return sizes


def _geometric(c: int) -> list[int]:
    sizes = [c]
    while sizes[-1] // 8 >= 1:
        sizes.append(sizes[-1] // 8)
    return sizes


def default_p(n: int) -> int:
    """The rows of a start of ``c = min(ceil(n / 16), 64)`` blocks, then ``c // 8`` blocks, ... (73 at 4,096 bins)."""
    return sum(_geometric(max(1, min(MAX_DEFAULT_P, math.ceil(int(n) / 16)))))


def fingerprint(workload: wl.RangeWorkload) -> str:
    """A public identifier of the workload's queries: its kind for prefix, all ranges and identity,
    else the SHA-256 of its ranges."""
    if isinstance(workload, wl.AllRanges):
        return "all-ranges"
    if isinstance(workload, wl.PrefixWorkload):
        return "prefix"
    if isinstance(workload, wl.IdentityWorkload):
        return "identity"
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(workload.lo, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(workload.hi, dtype=np.int64).tobytes())
    return "ranges-" + h.hexdigest()[:32]


def cache_dir() -> Path:
    """The folder of cached strategies: ``hdmm`` in dphist's per-user cache (:func:`dphist.cache.cache_dir`)."""
    from dphist.cache import cache_dir as dphist_cache
    return Path(dphist_cache()) / "hdmm"


@dataclass(eq=False)
class Strategy:
    """An optimised p-Identity strategy ``A = [I; Theta] D`` for one workload over ``n`` bins
    (columns of L1 norm 1; of L2 norm 1 for an analysis strategy optimised with ``norm="l2"``).

    Public: it depends on the workload, ``n``, ``p``, the seed and the optimiser only.
    ``objective`` is ``f(Theta) = tr(G (A^T A)^{-1})``: the expected total squared error on the
    workload per unit noise variance (``||A||_1 = 1``).
    """

    theta: np.ndarray
    key: dict
    objective: float
    _minv: np.ndarray | None = field(default=None, repr=False)
    _queries: object = field(default=None, repr=False)

    @property
    def n(self) -> int:
        return int(self.theta.shape[1])

    @property
    def p(self) -> int:
        return int(self.theta.shape[0])

    @property
    def norm(self) -> str:
        """``"l1"`` (Laplace noise: what the finalizer measures) or ``"l2"`` (Gaussian noise: analysis only)."""
        return str(self.key.get("norm", "l1"))

    @property
    def column_norms(self) -> np.ndarray:
        """``d``: the norm of each column of ``[I; Theta]``, ``1 + 1^T Theta`` (L1) or
        ``sqrt(1 + 1^T Theta^2)`` (L2), so that every column of ``A`` has norm 1."""
        return column_norms(self.theta, self.norm)

    @property
    def strategy(self) -> np.ndarray:
        """The strategy matrix ``A = [I; Theta] D`` (dense, ``(n + p) x n``; small domains)."""
        return np.vstack([np.eye(self.n), self.theta]) / self.column_norms

    def queries(self):
        """``A`` as a ``scipy.sparse`` matrix: what the kernel measures (it computes the sensitivity, 1)."""
        if self._queries is None:
            import scipy.sparse as sp
            inv_d = 1.0 / self.column_norms
            self._queries = sp.vstack([sp.diags(inv_d), sp.csr_matrix(self.theta * inv_d)], format="csr")
        return self._queries

    @property
    def minv(self) -> np.ndarray:
        """``M^{-1} = (I_p + Theta Theta^T)^{-1}`` (computed once)."""
        if self._minv is None:
            self._minv = inverse_m(self.theta)
        return self._minv

    def _x_apply(self, v: np.ndarray) -> np.ndarray:
        """``X v = (I + Theta^T Theta)^{-1} v`` for ``v`` of shape ``(n,)`` or ``(n, k)``."""
        return v - self.theta.T @ (self.minv @ (self.theta @ v))

    def reconstruct(self, answers) -> np.ndarray:
        """The least-squares estimate ``(A^T A)^{-1} A^T y`` from the ``n + p`` answers ``y``
        (or one estimate per column of an ``(n + p) x k`` block)."""
        y = np.asarray(answers, dtype=float)
        if y.shape[:1] != (self.n + self.p,) or y.ndim > 2:
            raise InvalidParameter(f"a strategy of {self.n} + {self.p} rows needs {self.n + self.p} answers, "
                                   f"got shape {y.shape}")
        d = self.column_norms.reshape((-1,) + (1,) * (y.ndim - 1))
        return d * self._x_apply(y[:self.n] + self.theta.T @ y[self.n:])

    def inverse_gram(self, U) -> np.ndarray:
        """``(A^T A)^{-1} U = Dt X Dt U`` for ``U`` of shape ``(n,)`` or ``(n, k)``, in O(n p k)."""
        U = np.asarray(U, dtype=float)
        d = self.column_norms.reshape((-1,) + (1,) * (U.ndim - 1))
        return d * self._x_apply(d * U)

    def covariance(self, noise_variance: float = 1.0) -> np.ndarray:
        """Covariance of the estimate, ``s^2 Dt X Dt`` (dense ``n x n``; small domains)."""
        d = self.column_norms
        return noise_variance * d[:, None] * self._x_apply(np.diag(d))

    def bin_variances(self, noise_variance: float = 1.0) -> np.ndarray:
        """Per-bin variances of the estimate: ``s^2 d_j^2 (1 - ||L^{-1} Theta_j||^2)`` in O(n p)."""
        d = self.column_norms
        q = np.einsum("ij,ij->j", self.theta, self.minv @ self.theta)
        return noise_variance * d * d * (1.0 - q)

    def query_variances(self, workload, noise_variance: float = 1.0) -> np.ndarray:
        """Per-query variances ``s^2 diag(W Dt X Dt W^T)`` of the ranges of ``workload`` (a form
        :func:`dphist.workloads.resolve` takes; all ranges only up to 4,096 bins), in O(m p)."""
        w = wl.resolve(workload, self.n, "query_variances")
        lo, hi = np.asarray(w.lo), np.asarray(w.hi)
        d = self.column_norms
        sq = np.concatenate(([0.0], np.cumsum(d * d)))
        pb = np.zeros((self.p, self.n + 1))
        np.cumsum(self.theta * d, axis=1, out=pb[:, 1:])
        u = pb[:, hi] - pb[:, lo]                         # Theta Dt w, one column per query
        return noise_variance * ((sq[hi] - sq[lo]) - np.einsum("iq,iq->q", u, self.minv @ u))

    def total_variance(self, workload=None, noise_variance: float = 1.0) -> float:
        """``s^2 f(Theta)``: the expected total squared error on ``workload`` (default: the strategy's own)."""
        if workload is None:
            return noise_variance * self.objective
        w = wl.resolve(workload, self.n, "total_variance")
        return noise_variance * objective_and_gradient(self.theta, Gram(w), gradient=False, norm=self.norm)[0]


def _start(p: int, n: int, seed: int) -> np.ndarray:
    """Blocks of consecutive bins, level by level (:func:`block_levels`), weight 1, plus seeded jitter."""
    rows = []
    bins = np.arange(n)
    for c in block_levels(p):
        level = np.zeros((c, n))
        level[(bins * c) // n, bins] = 1.0
        rows.append(level)
    return np.vstack(rows) + JITTER * np.random.default_rng(seed).random((p, n))


def _minimize(gram: Gram, p: int, n: int, seed: int, iterations: int, norm: str = "l1") -> tuple[np.ndarray, float]:
    from scipy.optimize import minimize
    if p == 0:
        return np.zeros((0, n)), objective_and_gradient(np.zeros((0, n)), gram, gradient=False, norm=norm)[0]

    def fun(z):
        f, g = objective_and_gradient(z.reshape(p, n), gram, norm=norm)
        return f, g.ravel()

    res = minimize(fun, _start(p, n, seed).ravel(), jac=True, method="L-BFGS-B",
                   bounds=[(0.0, None)] * (p * n),
                   options=dict(maxiter=int(iterations), gtol=0.0, ftol=0.0))
    theta = np.clip(res.x.reshape(p, n), 0.0, None)
    return theta, objective_and_gradient(theta, gram, gradient=False, norm=norm)[0]


def _checksum(theta: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(theta, dtype=np.float64).tobytes()).hexdigest()


def _load(path: Path, key: dict) -> Strategy | None:
    """The cached strategy at ``path`` if it is whole and made for ``key``; None otherwise."""
    try:
        with np.load(path, allow_pickle=False) as z:
            stored_key = json.loads(str(z["key"]))
            theta = np.array(z["theta"], dtype=np.float64)
            checksum = str(z["checksum"])
            objective = float(z["objective"])
    except Exception:   # noqa: BLE001 - a corrupt or foreign file: rebuilt
        return None
    if (stored_key != key or theta.shape != (key["p"], key["n"]) or not np.all(np.isfinite(theta))
            or np.any(theta < 0) or checksum != _checksum(theta) or not math.isfinite(objective)):
        return None
    return Strategy(theta, key, objective)


def _store(path: Path, strategy: Strategy) -> None:
    from dphist.io import atomic_write
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda fh: np.savez(fh, theta=strategy.theta, key=json.dumps(strategy.key, sort_keys=True),
                                               checksum=_checksum(strategy.theta),
                                               objective=strategy.objective))
    except OSError:     # a read-only home: the memory cache still holds it
        pass


def strategy_key(workload: wl.RangeWorkload, p: int, seed: int, iterations: int, norm: str = "l1") -> dict:
    key = dict(version=VERSION, workload=fingerprint(workload), n=int(workload.n), p=int(p), seed=int(seed),
               iterations=int(iterations))
    if norm != "l1":        # the L1 keys (and their cached files) stay as they were
        key["norm"] = norm
    return key


def optimize(workload, n: int, p: int | None = None, seed: int = 0, iterations: int = DEFAULT_ITERATIONS,
             cache: bool = True, norm: str = "l1") -> Strategy:
    """The optimised p-Identity strategy for ``workload`` over ``n`` bins (cached in memory and on disk).

    ``workload``: any form :func:`dphist.workloads.resolve` takes (errors name the problem).
    ``p``: extra rows (None: :func:`default_p`); 0 gives the identity strategy.
    ``norm``: ``"l1"`` (Laplace noise, L1 sensitivity: what the finalizer measures) or ``"l2"``
    (Gaussian noise, L2 sensitivity: an analysis option, the setting in which the SVD bound is
    attainable; dphist releases no Gaussian-noise answers).
    """
    w = wl.resolve(workload, int(n), "hdmm")
    p = default_p(w.n) if p is None else int(p)
    if p < 0 or int(iterations) < 1 or int(seed) < 0:
        raise InvalidParameter(f"hdmm: p must be >= 0, iterations >= 1 and seed >= 0 (got {p}, {iterations}, {seed})")
    if norm not in NORMS:
        raise InvalidParameter(f"hdmm: norm must be one of {NORMS} (got {norm!r})")
    key = strategy_key(w, p, seed, iterations, norm)
    found = lookup(key) if cache else None
    if found is None:
        theta, f = _minimize(Gram(w), p, w.n, int(seed), int(iterations), norm)
        found = Strategy(theta, key, f)
        if cache:
            keep(found)
    return found


def _key_name(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:40]


def lookup(key: dict) -> Strategy | None:
    """The strategy stored under ``key`` (memory, then the disk cache, checked by :func:`_load`), or None."""
    name = _key_name(key)
    if name in _MEMORY:
        return _MEMORY[name]
    path = cache_dir() / f"{name}.npz"
    found = _load(path, key) if path.exists() else None
    if found is not None:
        _MEMORY[name] = found
    return found


def keep(strategy: Strategy) -> None:
    """Store ``strategy`` under its key, in memory and on disk."""
    name = _key_name(strategy.key)
    _store(cache_dir() / f"{name}.npz", strategy)
    _MEMORY[name] = strategy


def clear_memory_cache() -> None:
    """Forget the strategies held in memory (the disk cache stays)."""
    _MEMORY.clear()
