"""Declared post-processing of a release: non-negativity and integrality (free of budget).

``Pipeline(..., postprocess=("nonnegative", "integer"))`` or
``make_algorithm(name, postprocess=("nonnegative", "integer"))``.  Both steps read only the
finalizer's estimate and its public strategy (never the counts, never the kernel), so they are
post-processing (Dwork & Roth 2014, Prop. 2.1): the ledger is unchanged.  They are applied in
the order ``nonnegative`` then ``integer`` and recorded in the release
(``Release.postprocess``, with the method each used).

* ``"nonnegative"`` - least squares under non-negativity.  When the finalizer stated a linear
  strategy (``A``, least-squares weights ``W``) over at most :data:`NNLS_COLUMNS` columns: the
  weighted least-squares fit of its measurements with every group total ``>= 0``.  Its objective
  ``||W^(1/2) (A g - y)||^2`` equals ``(g - g^)^T (A^T W A) (g - g^)`` plus a constant (``g^`` the
  unconstrained solution), so it is solved from the estimate alone: ``nnls(L^T, L^T g^)`` with
  ``A^T W A = L L^T`` (scipy's Lawson-Hanson active set).  Otherwise (no linear statement, more
  columns, or padding columns as Privelet's, whose estimates the release does not keep) the
  Euclidean projection: every negative bin set to 0.  For H, Hay et al.'s zeroing of non-positive subtrees is the
  preset's own ``nonnegative=True``.
* ``"integer"`` - every bin rounded to the nearest integer (``numpy.rint``).

Both are non-linear: the release's statement of its error is then marked
``"before-postprocessing"`` (it describes the linear estimate, no longer exactly the released
values), and both introduce a bias (positive for non-negativity on small counts), measured in
``notebooks/stated-error.ipynb``.
"""
from __future__ import annotations

import numpy as np

from .errors import InvalidParameter

#: the declared options, in the order they are applied
OPTIONS = ("nonnegative", "integer")
#: the weighted non-negative least squares is used up to this many strategy columns (dense nnls)
NNLS_COLUMNS = 1024


def check_options(postprocess) -> tuple[str, ...]:
    """The options as a tuple in application order; an unknown option is named."""
    if postprocess is None:
        return ()
    if isinstance(postprocess, str):
        postprocess = (postprocess,)
    try:
        given = list(postprocess)
    except TypeError:
        raise InvalidParameter(f"postprocess must be a sequence of option names ({', '.join(OPTIONS)}), "
                               f"got {postprocess!r}") from None
    for option in given:
        if option not in OPTIONS:
            raise InvalidParameter(f"unknown post-processing option {option!r}; the options are "
                                   f"{', '.join(map(repr, OPTIONS))}")
    return tuple(o for o in OPTIONS if o in given)


def nonnegative(estimate: np.ndarray, stated, partition) -> tuple[np.ndarray, str]:
    """``(estimate >= 0, method)`` (module docstring)."""
    A = getattr(stated, "A", None)
    if A is not None and stated.n_columns == partition.n_groups and stated.n_columns <= NNLS_COLUMNS:
        from scipy.optimize import nnls
        L = np.tril(stated.cholesky()[0])                       # A^T W A = L L^T
        g_hat = np.zeros(stated.n_columns)
        g_hat[:partition.n_groups] = partition.sums(estimate)
        if np.all(g_hat >= 0):
            return estimate, "weighted non-negative least squares"
        g, _ = nnls(L.T, L.T @ g_hat, maxiter=50 * stated.n_columns)
        return partition.spread(g[:partition.n_groups]), "weighted non-negative least squares"
    return np.maximum(estimate, 0.0), "projection (negative bins set to 0)"


def apply(options: tuple[str, ...], estimate: np.ndarray, stated, partition) -> tuple[np.ndarray, list[dict]]:
    """The post-processed estimate and the record of what was done."""
    record = []
    for option in options:
        if option == "nonnegative":
            estimate, method = nonnegative(estimate, stated, partition)
        else:
            estimate, method = np.rint(estimate), "rounded to the nearest integer"
        record.append({"option": option, "method": method})
    return estimate, record
