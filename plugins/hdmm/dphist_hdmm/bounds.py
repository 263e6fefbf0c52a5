"""The SVD lower bound on the error of any linear (matrix-mechanism) strategy for a workload.

Li and Miklau (ICDT 2013, "Optimal error of query sets under the differentially-private matrix
mechanism"): for a
workload ``W`` over ``n`` bins with singular values ``sigma_1..sigma_n`` (``sigma_i^2`` the
eigenvalues of ``G = W^T W``), every full-column-rank strategy ``A`` satisfies

    ||A||_2^2 ||W A^+||_F^2  >=  (sigma_1 + ... + sigma_n)^2 / n,                      (SVDB)

where ``||A||_2`` is the largest column L2 norm (the L2 sensitivity).  Proof sketch (the notebook
has it in full): ``||W A^+||_F^2 = tr(G (A^T A)^{-1})``; write ``S = A^T A`` with
``tr(S) = sum_j ||A e_j||_2^2 <= n ||A||_2^2``; the Cauchy-Schwarz inequality for the Frobenius
inner product of ``S^{1/2}`` and ``S^{-1/2} G^{1/2}`` gives
``(tr G^{1/2})^2 <= tr(S) tr(G^{1/2} S^{-1} G^{1/2}) = tr(S) tr(G S^{-1})``, so
``tr(G S^{-1}) >= (tr G^{1/2})^2 / (n ||A||_2^2)``, and ``tr G^{1/2} = sum_i sigma_i``.

Gaussian noise (L2 sensitivity): the matrix mechanism's error is proportional to the left side, and
the bound is attained by ``S = c G^{1/2}`` whenever ``G^{1/2}`` has a constant diagonal; otherwise
it is a lower bound only (``S = G^{1/2}`` is within 2 times it on prefix and all ranges at 64 bins).

Laplace noise (L1 sensitivity, what dphist's kernel uses): every column's L1 norm is at least its
L2 norm, so ``||A||_1 >= ||A||_2`` and the same right side bounds
``||A||_1^2 ||W A^+||_F^2``.  With Laplace(``||A||_1 / eps``) noise (variance ``2 ||A||_1^2 / eps^2``)
and least-squares reconstruction (the best linear unbiased one for i.i.d. noise), the expected total
squared error of *any* linear strategy on ``W`` is at least

    (2 / eps^2) (sigma_1 + ... + sigma_n)^2 / n.

The factor relating the sensitivities is 1 in this direction, but the bound is loose under L1: the
strategy ``S = G^{1/2}`` (the L2 optimum when its diagonal is constant) has column L1 norms far above
its L2 norms; the best L1
strategies stay well above it (``notebooks/hdmm.ipynb`` and BENCHMARKS.md measure the gap: the
optimised strategies are 3.9 to 7.1 times the bound on prefix and all ranges at 256 to 4,096 bins,
H, Hb, Privelet and GreedyH more).  Under Gaussian noise the same optimiser with columns of L2 norm 1
(``optimize(..., norm="l2")``, an analysis option) comes within 1.5 times it (``benchmarks/results/hdmm-l2.md``).
:func:`l2_dual_bound` is a tighter lower bound, valid for L1 strategies too (2 to 6 % above the SVD
bound on prefix and all ranges); no bound specific to L1 sensitivity is computed here.
"""
from __future__ import annotations

import numpy as np

from dphist import workloads as wl

from .gram import Gram


def svd_bound(workload, n: int) -> float:
    """``(sum_i sigma_i)^2 / n``: the least ``||A||^2 ||W A^+||_F^2`` of any strategy (L2 or L1 norm);
    closed forms for prefix and all ranges, a dense eigendecomposition otherwise (up to 4,096 bins)."""
    w = wl.resolve(workload, int(n), "svd_bound")
    sigma = np.sqrt(Gram(w).eigenvalues())
    return float(sigma.sum() ** 2 / w.n)


def laplace_error_bound(workload, n: int, epsilon: float) -> float:
    """Lower bound on the expected total squared error of any linear strategy with Laplace noise and
    least-squares reconstruction: ``(2 / eps^2) svd_bound``."""
    return 2.0 / float(epsilon) ** 2 * svd_bound(workload, n)


def l2_dual_bound(workload, n: int, iterations: int = 60) -> float:
    """A lower bound on ``||A||^2 ||W A^+||_F^2`` for every strategy, at least the SVD bound and tighter when
    ``G^{1/2}`` has an unequal diagonal: the Lagrange dual of the L2 problem
    ``min tr(G S^{-1})`` over ``S = A^T A / ||A||_2^2`` (``diag(S) <= 1``).

    For any ``lambda >= 0`` (``Lambda = diag(lambda)``) and any such ``S``,
    ``tr(G S^{-1}) >= tr(G S^{-1}) + tr(Lambda S) - sum(lambda) >= 2 tr((Lambda^{1/2} G Lambda^{1/2})^{1/2}) - sum(lambda)``
    (the middle term's minimum over all ``S > 0`` is at ``S = Lambda^{-1/2} (Lambda^{1/2} G Lambda^{1/2})^{1/2}
    Lambda^{-1/2}``).  Every ``lambda`` gives a valid bound (weak duality); ``lambda = c 1`` at its best ``c``
    gives the SVD bound, so the value returned (the best of L-BFGS-B's steps on ``mu = sqrt(lambda)`` from
    there, gradient ``2 (K^{1/2})_jj / mu_j - 2 mu_j`` with ``K = M G M``, ``M = diag(mu)``) is never below it.
    It bounds L1 strategies too, as ``||A||_1 >= ||A||_2`` column by column.  Dense: ``n <= 4,096`` (one
    ``n x n`` eigendecomposition per step)."""
    from scipy.optimize import minimize
    w = wl.resolve(workload, int(n), "l2_dual_bound")
    G = Gram(w).dense()
    sigma_sum = float(np.sqrt(np.clip(np.linalg.eigvalsh(G), 0.0, None)).sum())
    best = [sigma_sum ** 2 / w.n]

    def neg_dual(mu):
        K = mu[:, None] * G * mu[None, :]
        lam, U = np.linalg.eigh(K)
        root = (U * np.sqrt(np.clip(lam, 0.0, None))) @ U.T
        value = 2.0 * float(np.trace(root)) - float(mu @ mu)
        best[0] = max(best[0], value)
        return -value, -(2.0 * np.diag(root) / mu - 2.0 * mu)

    mu0 = np.full(w.n, sigma_sum / w.n)
    minimize(neg_dual, mu0, jac=True, method="L-BFGS-B", bounds=[(1e-9, None)] * w.n,
             options=dict(maxiter=int(iterations)))
    return float(best[0])
