"""The OPT_0 objective of a p-Identity strategy and its analytic gradient.

A p-Identity strategy (McKenna, Miklau, Hay, Machanavajjhala, PVLDB 2018, the parameterisation of
their OPT_0) has ``n`` identity rows plus ``p`` rows ``Theta`` (non-negative, ``p x n``), every
column rescaled to L1 norm 1:

    A(Theta) = [I; Theta] D,     D = diag(1 / d),   d = 1 + 1_p^T Theta   (column sums).

So its L1 sensitivity is 1 for every Theta, and with Laplace(1/eps) noise on every answer and
least-squares reconstruction the expected total squared error on a workload ``W`` is

    E ||W x_hat - W x||^2 = (2 / eps^2) ||A||_1^2 tr(W (A^T A)^{-1} W^T) = (2 / eps^2) f(Theta),
    f(Theta) = tr(G (A^T A)^{-1}) = tr(Dt X Dt G),   X = (I + Theta^T Theta)^{-1},  Dt = diag(d),

with ``G = W^T W`` (``dphist_hdmm.gram``).  The ``n x n`` inverse is never formed: with
``M = I_p + Theta Theta^T`` (``p x p``) Woodbury gives ``X = I - Theta^T M^{-1} Theta``, and with
``B = Theta Dt`` and ``C = B G`` (``p x n``, one application of ``G`` to ``p`` vectors):

    f = sum_j d_j^2 G_jj - tr(M^{-1} C B^T).

Gradient (derived in ``notebooks/hdmm.ipynb``, checked there and in the tests against finite
differences): with ``dX = -X (dTheta^T Theta + Theta^T dTheta) X`` and ``d(d_j) = sum_i dTheta_ij``,

    grad f = -2 Theta X Dt G Dt X  +  2 * 1_p v^T,     v_j = (G Dt X)_jj,

and, by ``Theta X = M^{-1} Theta``,

    Theta X Dt G Dt X = M^{-1} (C Dt - (C B^T) M^{-1} Theta),
    v = d * diag(G) - colsum(C * (M^{-1} Theta)).

Cost per evaluation: O(p^2 n + p^3) plus one application of ``G`` (O(n p) for prefix and all
ranges).  The formulas are written here from the definitions above, not from HDMM's code.

The L2 mode (``norm="l2"``: Gaussian noise, L2 sensitivity; an analysis option, dphist's releases
stay pure epsilon-DP with Laplace noise) rescales every column of ``[I; Theta]`` to L2 norm 1
instead: ``d_j = sqrt(1 + sum_i Theta_ij^2)``.  ``A^T A = D (I + Theta^T Theta) D`` has the same
form, so ``f`` is the same expression in the new ``d``; only the derivative of ``d`` changes,
``d(d_j) / d(Theta_ij) = Theta_ij / d_j``, so the second gradient term becomes
``2 Theta * (v / d)`` (column ``j`` scaled by ``v_j / d_j``).  Its value is the expected total
squared error per unit noise variance of a strategy of L2 sensitivity 1: the quantity the SVD bound
(``dphist_hdmm.bounds``) bounds from below, and attainable there.
"""
from __future__ import annotations

import numpy as np


def inverse_m(theta: np.ndarray) -> np.ndarray:
    """``M^{-1}`` with ``M = I_p + Theta Theta^T`` (``p x p``, symmetric positive definite), by Cholesky."""
    from scipy.linalg import cho_factor, cho_solve
    M = theta @ theta.T
    M[np.diag_indices_from(M)] += 1.0
    return cho_solve(cho_factor(M, lower=True, check_finite=False), np.eye(M.shape[0]), check_finite=False)


NORMS = ("l1", "l2")


def column_norms(theta: np.ndarray, norm: str = "l1") -> np.ndarray:
    """``d``: the L1 (``1 + 1^T Theta``) or L2 (``sqrt(1 + 1^T Theta^2)``) norm of each column of ``[I; Theta]``."""
    if norm == "l1":
        return 1.0 + theta.sum(axis=0)
    if norm == "l2":
        return np.sqrt(1.0 + np.einsum("ij,ij->j", theta, theta))
    from dphist.errors import InvalidParameter
    raise InvalidParameter(f"hdmm: norm must be one of {NORMS} (got {norm!r})")


def objective(theta: np.ndarray, gram, norm: str = "l1") -> float:
    """``f(Theta) = tr(G (A^T A)^{-1})`` (``||A||_1 = 1``, or ``||A||_2 = 1`` with ``norm="l2"``)."""
    return objective_and_gradient(theta, gram, gradient=False, norm=norm)[0]


def objective_and_gradient(theta: np.ndarray, gram, gradient: bool = True, norm: str = "l1"):
    """``(f(Theta), grad f(Theta))`` (the gradient is None when ``gradient`` is False); ``norm``: the
    column norm the strategy is scaled by, ``"l1"`` (Laplace noise, the default) or ``"l2"`` (Gaussian)."""
    theta = np.asarray(theta, dtype=float)
    d = column_norms(theta, norm)
    gdiag = gram.diag_cached()
    if theta.shape[0] == 0:
        return float(np.dot(d * d, gdiag)), (np.zeros_like(theta) if gradient else None)
    B = theta * d
    C = gram.rmatmat(B)                       # B G  (p x n)
    Mi = inverse_m(theta)
    CBt = C @ B.T                             # p x p
    f = float(np.dot(d * d, gdiag) - np.einsum("ij,ji->", Mi, CBt))
    if not gradient:
        return f, None
    MiTheta = Mi @ theta
    part = Mi @ (C * d - CBt @ MiTheta)
    v = d * gdiag - np.einsum("ij,ij->j", C, MiTheta)
    if norm == "l1":
        return f, -2.0 * part + 2.0 * v[None, :]
    return f, -2.0 * part + 2.0 * theta * (v / d)[None, :]
