"""``hdmm.p-identity``: measure an optimised p-Identity strategy through the kernel, reconstruct by least squares.

The strategy (``dphist_hdmm.strategy``) is public: it depends on the workload and the domain only.
The finalizer hands the kernel the strategy matrix ``A = [I; Theta] D`` as a ``scipy.sparse``
matrix (``DataHandle.laplace_linear``): the kernel computes its L1 sensitivity (1: every column of
``A`` sums to 1), charges the finalizer's whole share and adds Laplace(sensitivity / share) noise to
every answer.  The least-squares reconstruction is post-processing.

Groups: the strategy is built over the groups of its input partition, which must be runs of
consecutive bins in domain order.  With one bin per group (the presets) the workload is the given
one; otherwise each range is mapped to the groups it touches (a name such as ``"prefix"`` is taken
over the groups), and each group's estimate is spread evenly over its bins.
"""
from __future__ import annotations

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition
from dphist import workloads as wl
from dphist.params import Interval, Satisfies

from .strategy import DEFAULT_ITERATIONS, Strategy, default_p, optimize

CITATION = ("McKenna, Miklau, Hay, Machanavajjhala, Optimizing error of high-dimensional statistical queries "
            "under differential privacy, PVLDB 11(10) 2018 (p-Identity strategies, OPT_0); least squares and the "
            "SVD bound: Li and Miklau, ICDT 2013")

WORKLOAD_FORMS = "a workload name, a RangeWorkload, (starts, ends), a list of (lo, hi) pairs or a 0/1 query matrix"
_NAMED = (wl.AllRanges, wl.PrefixWorkload, wl.IdentityWorkload)


def group_workload(workload: wl.RangeWorkload, bounds: np.ndarray) -> wl.RangeWorkload:
    """``workload`` over the groups ``[bounds[g], bounds[g + 1])``: prefix, all ranges and identity
    by name over the groups; other ranges mapped to the groups they touch."""
    k = bounds.size - 1
    if isinstance(workload, wl.AllRanges):
        return wl.all_ranges(k)
    if isinstance(workload, wl.PrefixWorkload):
        return wl.prefix(k)
    if isinstance(workload, wl.IdentityWorkload):
        return wl.identity(k)
    lo = np.searchsorted(bounds, np.asarray(workload.lo), side="right") - 1
    hi = np.searchsorted(bounds, np.asarray(workload.hi), side="left")
    return wl.RangeWorkload(k, lo, hi, workload.name)


class OptimizedFinalizer(Finalizer):
    """An optimised p-Identity strategy for ``workload``, measured once with the whole share.

    Parameters
    ----------
    workload : a core workload name (``"all-ranges"`` by default, ``"prefix"``, ``"identity"``,
        ``"dpbench-random-<m>"``, ...), a :class:`dphist.workloads.RangeWorkload`, ranges
        ``(starts, ends)``, a list of ``(lo, hi)`` pairs or a 0/1 query matrix of range rows.
    p : rows of ``Theta`` (None: :func:`dphist_hdmm.default_p`, 73 at 4,096 bins; 0: the identity strategy).
    seed : int
        The seed of the optimiser's start (public; part of the cache key).
    iterations : L-BFGS-B steps.
    """

    name = "hdmm.p-identity"
    citation = CITATION
    spends = True
    requires_domain_order = True
    param_constraints = {
        "workload": Satisfies(wl.is_spec, WORKLOAD_FORMS),
        "p": (None, Interval(int, 0, None)),
        "seed": Interval(int, 0, None),
        "iterations": Interval(int, 1, None),
    }

    def __init__(self, workload="all-ranges", p=None, seed: int = 0, iterations: int = DEFAULT_ITERATIONS):
        wl.check_spec(workload, self.name)   # empty, zero-sensitivity or non-range queries: refused here
        self.workload = workload
        self.p = p
        self.seed = seed
        self.iterations = iterations

    def check_input(self, n: int) -> None:
        """The workload against the domain (ranges beyond it, a matrix of another width), before any spending."""
        wl.resolve(self.workload, n, self.name)

    def strategy(self, bins: Partition | int) -> Strategy:
        """The optimised strategy over the groups of ``bins`` (or over ``n`` singleton bins)."""
        if isinstance(bins, (int, np.integer)):
            bins = Partition.singletons(int(bins))
        if not bins.is_identity_order():
            raise InvalidParameter(f"{self.name} measures groups of consecutive bins in domain order; these bins "
                                   "are in a sorted order")
        w = wl.resolve(self.workload, bins.n_bins, self.name)
        k = bins.n_groups
        if k != bins.n_bins:
            w = group_workload(w, np.asarray(bins.bounds))
        p = default_p(k) if self.p is None else min(int(self.p), max(k, 1))
        return optimize(w, k, p=p, seed=int(self.seed), iterations=int(self.iterations))

    def _lifted(self, strategy: Strategy, bins: Partition):
        """The strategy's rows over the bins: group ``g``'s column on each of its bins (as measured)."""
        queries = strategy.queries()
        if bins.n_groups == bins.n_bins:
            return queries
        return queries[:, np.repeat(np.arange(bins.n_groups), np.diff(bins.bounds))]

    def stated_error(self, bins: Partition, ctx):
        """The strategy over the groups with the kernel's own sensitivity, support and route
        (``check_queries`` on what ``finalize`` measures), solved by least squares with unit weights
        (every answer has the same noise); ``(A^T A)^{-1}`` applied by :meth:`Strategy.inverse_gram`."""
        from dphist.kernel.queries import check_queries
        from dphist.stated_error import LinearStrategy, Measurement
        strategy = self.strategy(bins)
        checked = check_queries(self._lifted(strategy, bins), ctx.n)
        integral = checked.integral and checked.sensitivity == round(checked.sensitivity)
        return LinearStrategy([Measurement(strategy.queries, checked.sensitivity, ctx.eps_f, integral=integral,
                                           support=checked.support, weight=1.0)], bins.n_groups,
                              reconstruction="least squares on the optimised p-Identity strategy",
                              inverse_gram=strategy.inverse_gram)

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter(f"{self.name} spends budget: give the finalizer a share gamma_f > 0")
        strategy = self.strategy(bins)                               # public: no data
        answers = ctx.data.laplace_linear(self._lifted(strategy, bins), ctx.budget)
        estimate = strategy.reconstruct(answers)                     # post-processing
        return estimate if bins.n_groups == bins.n_bins else bins.spread(estimate)

    def describe_lines(self) -> list[str]:
        """The SVD lower bound for this workload at a few domain sizes (``dphist describe``)."""
        from .bounds import svd_bound
        if not isinstance(self.workload, str) or self.workload not in ("prefix", "all-ranges", "identity"):
            return ["SVD lower bound: dphist_hdmm.svd_bound(workload, n) (depends on the domain)"]
        lines = [f"SVD lower bound on the expected total squared error of any linear strategy on "
                 f"{self.workload!r}, Laplace noise (x 2/eps^2; per-query RMSE at eps = 1):"]
        for n in (256, 1024, 4096):
            w = wl.make(self.workload, n)
            b = svd_bound(w, n)
            lines.append(f"  n = {n:>5}: {b:.6g} (RMSE per query >= {np.sqrt(2.0 * b / len(w)):.4g})")
        return lines
