"""``mwem.mw``: MWEM over a range workload of the groups in their current order.

Budget of the finalizer's share ``eps_f`` (calibration ``"noisy-total"``, the default):

* ``total_ratio * eps_f`` on the total (``laplace_partition`` over one group, sensitivity 1), unless a
  ``public_total`` is declared; the estimate's total is ``max(noisy total, 1)`` (post-processing:
  multiplicative weights need a positive total);
* the rest, ``eps_mw``, over ``R`` rounds: ``ratio * eps_mw / R`` per exponential-mechanism
  selection (``ctx.data.exponential``, score ``|q(x) - q(A)|``, sensitivity 1) and
  ``(1 - ratio) * eps_mw / R`` per Laplace measurement of the chosen range
  (``ctx.data.laplace_intervals``, sensitivity 1).  Sequential composition: the ledger sums to ``eps_f``.

Why a noisy total.  Hardt, Ligett, McSherry assume the number of records ``n`` is known; DPBench's
``mwemND_engine`` takes ``x.sum()`` from the true data without charging for it.  Multiplicative
weights preserve the total, so that release's total equals the true one exactly: not
differentially private (the privacy auditor catches it; ``tests/test_mwem.py``).  Our default
spends ``total_ratio = 0.1`` of the share on it (noise scale ``10 / eps``, about half of one round's
measurement scale ``10 / (0.5 * 0.9 eps) ~ 22 / eps`` at DPBench's defaults): the share with the lowest
worst cell on DPBench's 1-D benchmark among 0.05, 0.1, 0.2, 0.3 and 0.5 (within 1.18x of the reference
code in every cell, sample 0 of each source; 0.05 reaches 1.24x at 10^3 records, eps = 0.01, where the
total's noise is of the order of the total; ``benchmarks/dpbench_dawa_mwem.py``,
``plugins/mwem/dpbench_grid.csv``, ``notebooks/mwem.ipynb`` Section 4b).  A user who knows the total
publicly declares it with ``public_total`` (no budget spent on it; the guarantee then assumes
that number is public, i.e. not derived from the data).

``calibration="dpbench"`` reproduces the reference code (true total) for comparison with published
numbers: the whole loop runs in a vetted mechanism that declares ``differentially_private = False``;
release mode refuses it and the release carries the warning "not differentially private".
"""
from __future__ import annotations

import numpy as np

from dphist import Finalizer, InvalidParameter, Partition, VettedMechanism
from dphist import workloads as wl
from dphist.components import ReferenceCalibration
from dphist.params import UNIT_SHARE, Interval, Options, Satisfies

from .grid import mwem_grid_loop, rectangle_answers, rectangle_errors
from .weights import effective_rounds, mwem_loop, range_errors

CITATION = ("Hardt, Ligett, McSherry, A Simple and Practical Algorithm for Differentially Private Data Release, "
            "NIPS 2012, Algorithm 1 and Section 3.1 (repeated updates); defaults of DPBench (Hay et al., SIGMOD "
            "2016) mwemND_engine: 10 rounds, ratio 0.5, 100 update passes, prefix workload")
CALIBRATIONS = ("noisy-total", "dpbench")
DEFAULT_TOTAL_RATIO = 0.1
#: DPBench's 2-D workload (Hay et al., SIGMOD 2016: 2,000 random rectangles, RandomRange's seed 9001),
#: which DPBench's mwemND_engine selects from on a grid: the default of the preset MWEM-2D
GRID_WORKLOAD = "dpbench-random-2000"


def is_workload(value) -> bool:
    """A form the ``workload`` parameter takes: a 1-D form of :func:`dphist.workloads.is_spec`, a
    rectangle workload name (``marginals``, ``all-rectangles``) or a :class:`~dphist.workloads.RectangleWorkload`."""
    return (wl.is_spec(value) or isinstance(value, wl.RectangleWorkload)
            or (isinstance(value, str) and value in wl.RECTANGLE_BUILTIN))


def grid_workload(spec, shape, who: str = "mwem.mw") -> wl.RectangleWorkload:
    """The workload over the cells of a grid: a name (:func:`dphist.workloads.make_rectangles`:
    identity, prefix, marginals, dpbench-random-<m>; all-rectangles up to 10^5 of them) or a
    :class:`~dphist.workloads.RectangleWorkload` over that grid.  InvalidParameter naming the problem
    otherwise."""
    shape = tuple(int(s) for s in shape)
    if isinstance(spec, wl.RectangleWorkload) and not isinstance(spec, wl.AllRectangles):
        if tuple(spec.shape) != shape:
            raise InvalidParameter(f"{who}: workload {spec.name!r} is over a grid of shape {spec.shape}, "
                                   f"the histogram has shape {shape}")
        return spec
    name = spec.name if isinstance(spec, wl.AllRectangles) else spec
    if not isinstance(name, str):
        raise InvalidParameter(f"{who}: on a {len(shape)}-D histogram the workload is a name (identity, prefix, "
                               "marginals, all-rectangles, dpbench-random-<m>) or a dphist.workloads."
                               f"RectangleWorkload; got {type(spec).__name__} (ranges over a 1-D domain)")
    try:
        out = wl.make_rectangles(name, shape)
    except InvalidParameter as exc:
        raise InvalidParameter(f"{who}: {exc}") from None
    if isinstance(out, wl.AllRectangles):
        if len(out) > 100_000:
            raise InvalidParameter(f"{who}: 'all-rectangles' on a grid of shape {shape} has {len(out):,} queries; "
                                   "MWEM scores every one each round: use dpbench-random-<m> or a RectangleWorkload")
        out = wl.RectangleWorkload(shape, out.lo, out.hi, out.name)
    return out


def _unit_sums(counts, order, bounds) -> np.ndarray:
    x = np.asarray(counts, dtype=np.float64)
    if order is not None:
        x = x[order]
    return x if bounds is None or bounds.size == x.size + 1 else np.add.reduceat(x, bounds[:-1])


class DPBenchMWEM(VettedMechanism):
    """The DPBench code's MWEM: starts from the TRUE total.  NOT differentially private.

    Kept to reproduce published numbers; ``mwem.mw`` with ``calibration="dpbench"`` declares
    ``differentially_private = False``.
    """

    name = "mwem.dpbench"
    sensitivity = 1.0   #: nominal: every selection and measurement has sensitivity 1; the total has none
    differentially_private = False
    proof = ("NOT differentially private: DPBench's mwemND_engine starts from the true total x.sum() without "
             "noise; multiplicative weights keep it, so the released estimate's sum is the true count of "
             "records (a neighbour differs by exactly 1 with probability 1). The selections "
             "(exponential mechanism, ratio * eps / R each) and measurements (Laplace, (1 - ratio) * eps / R "
             "each) are as in Hardt et al. NIPS 2012. For reproducing published numbers only; release mode "
             "refuses it.")

    def answers(self, n: int, order=None, bounds=None, **_) -> int:
        return n if bounds is None else len(bounds) - 1

    def run(self, counts, epsilon, noise, order=None, bounds=None, lo=None, hi=None, rounds=10, ratio=0.5,
            updates=100):
        x = _unit_sums(counts, order, bounds)
        eps_select = ratio * epsilon / rounds
        eps_measure = (1.0 - ratio) * epsilon / rounds
        prefix = np.concatenate(([0.0], np.cumsum(x)))

        def select(estimate, candidates):
            scores = range_errors(x, estimate, lo[candidates], hi[candidates])
            return noise.exponential_mechanism(scores, 1.0, eps_select)

        def measure(a, b):
            return float(noise.laplace_mechanism(np.array([prefix[b] - prefix[a]]), 1.0, eps_measure)[0])

        return mwem_loop(x.size, float(x.sum()), lo, hi, rounds, updates, select, measure)


class DPBenchMWEMGrid(VettedMechanism):
    """The DPBench code's MWEM on the cells of a 2-D grid with rectangle queries: starts from the
    TRUE total.  NOT differentially private (as :class:`DPBenchMWEM`)."""

    name = "mwem.dpbench-grid"
    sensitivity = 1.0   #: nominal: every selection and measurement has sensitivity 1; the total has none
    differentially_private = False
    proof = DPBenchMWEM.proof

    def answers(self, n: int, **_) -> int:
        return n

    def run(self, counts, epsilon, noise, shape=None, lo=None, hi=None, rounds=10, ratio=0.5, updates=100):
        x = np.asarray(counts, dtype=np.float64)
        eps_select = ratio * epsilon / rounds
        eps_measure = (1.0 - ratio) * epsilon / rounds
        truth = rectangle_answers(wl.summed_area_table(x, shape), lo, hi)

        def select(estimated, candidates):
            scores = np.abs(truth[candidates] - estimated)
            return noise.exponential_mechanism(scores, 1.0, eps_select)

        def measure(j):
            return float(noise.laplace_mechanism(np.array([truth[j]]), 1.0, eps_measure)[0])

        return mwem_grid_loop(shape, float(x.sum()), lo, hi, rounds, updates, select, measure)


class MWEMFinalizer(ReferenceCalibration, Finalizer):
    """``mwem.mw``: MWEM (Hardt et al. 2012) on the groups of its input, in their current order.

    Parameters
    ----------
    rounds : number of rounds ``R`` (DPBench: 10); capped at the workload's size.
    ratio : share of the MW budget spent on the exponential-mechanism selections (DPBench: 0.5;
        the paper splits each round's budget evenly too).
    updates : passes of the multiplicative-weights update over all measurements after each round
        (DPBench's ``updateround``: 100; the paper's Section 3.1 improvement).
    workload : a core workload name, built over the groups (``"prefix"``, DPBench's 1-D workload;
        ``"identity"``, ``"small-ranges"``, ``"ranges-<r>%"``, ...); or, over the bins (every bin its
        own group), a :class:`dphist.workloads.RangeWorkload`, ranges ``(starts, ends)`` (half-open),
        a list of ``(lo, hi)`` pairs, or a query matrix (numpy or scipy.sparse; 0/1 rows over
        consecutive bins), validated by :func:`dphist.workloads.resolve` before anything is spent.  Each round scores every open
        query in O(k + |Q|); ``"all-ranges"`` has k(k+1)/2 queries (materialised), so keep k small.
    calibration : ``"noisy-total"`` (default, differentially private) or ``"dpbench"`` (the reference
        code's true total, **not differentially private**).
    total_ratio : share of the finalizer's budget spent on the noisy total (default 0.1, measured; module
        docstring); ignored with ``public_total`` or ``calibration="dpbench"``.
    public_total : a total the user declares public (not computed from the data): no budget is spent
        on the total.  ``None`` (default): the total is measured.
    """

    name = "mwem.mw"
    citation = CITATION
    #: opt-in to the privacy proofs of vetted mechanisms (the kernel cannot check them)
    vetted_mechanisms = ("mwem.dpbench", "mwem.dpbench-grid")
    dims = (1, 2)   # 1-D: ranges over the groups; a grid: rectangles over its cells (module grid)
    spends = True
    param_constraints = {
        "rounds": Interval(int, 1, None),
        "ratio": UNIT_SHARE,
        "updates": Interval(int, 1, None),
        "workload": Satisfies(is_workload, "a workload name (identity, prefix, all-ranges, small-ranges, "
                                           "big-ranges, ranges-<r>%, dpbench-random-<m>; on a grid also marginals, "
                                           "all-rectangles), a RangeWorkload, (starts, ends), a list of (lo, hi) "
                                           "pairs, a 0/1 query matrix, or a RectangleWorkload"),
        "calibration": Options(*CALIBRATIONS),
        "total_ratio": UNIT_SHARE,
        "public_total": [None, Interval(float, 0, None)],
    }

    def __init__(self, rounds: int = 10, ratio: float = 0.5, updates: int = 100, workload="prefix",
                 calibration: str = "noisy-total", total_ratio: float = DEFAULT_TOTAL_RATIO,
                 public_total: float | None = None):
        # each parameter is checked by its declaration (param_constraints) before this runs;
        # only the relation between two of them is left here
        if public_total is not None and calibration == "dpbench":
            raise InvalidParameter("mwem.mw: public_total and calibration='dpbench' exclude each other "
                                   "(the dpbench calibration reads the true total)")
        if not isinstance(workload, wl.RectangleWorkload) and not (isinstance(workload, str)
                                                                    and workload in wl.RECTANGLE_BUILTIN):
            wl.check_spec(workload, "mwem.mw")   # empty, zero-sensitivity or non-range queries: refused here
        self.rounds = rounds
        self.ratio = ratio
        self.updates = updates
        self.workload = workload
        self.calibration = calibration
        self.total_ratio = total_ratio
        self.public_total = public_total

    def check_input(self, n: int) -> None:
        """An explicit 1-D workload against the domain (ranges beyond it, a matrix of another width),
        before any spending (a grid's workload is checked by :meth:`check_shape`)."""
        if not isinstance(self.workload, (str, wl.RectangleWorkload)):
            wl.resolve(self.workload, n, "mwem.mw")

    def check_shape(self, shape) -> None:
        """The workload against the histogram's shape, before any spending: on a grid, rectangles
        over it (a name it can build, a RectangleWorkload of that shape); on a 1-D histogram, not a
        RectangleWorkload of another domain or a grid-only name."""
        if len(shape) > 1:
            grid_workload(self.workload, shape)
        elif isinstance(self.workload, wl.RectangleWorkload) or (
                isinstance(self.workload, str) and self.workload in wl.RECTANGLE_BUILTIN
                and not wl.is_name(self.workload)):
            raise InvalidParameter(f"mwem.mw: workload {getattr(self.workload, 'name', self.workload)!r} is over a "
                                   "grid; a 1-D histogram takes ranges (a name such as 'prefix', a RangeWorkload, "
                                   "(starts, ends), (lo, hi) pairs or a query matrix)")

    def queries(self, bins: Partition, n: int) -> wl.RangeWorkload:
        """The workload over the units: a name is built over the groups; any other form is over the
        ``n`` bins and needs every bin to be its own group in the original order."""
        if isinstance(self.workload, str):
            return wl.make(self.workload, bins.n_groups)
        if bins.n_groups != n or not bins.is_identity_order():
            raise InvalidParameter("mwem.mw: a workload given as ranges or a matrix is over the bins; it needs "
                                   "every bin in its own group, in the original order (no partitioner or sorter "
                                   "before mwem.mw), or a workload name, which is built over the groups")
        return wl.resolve(self.workload, n, "mwem.mw")

    def finalize(self, bins: Partition, ctx) -> np.ndarray:
        if ctx.data is None or ctx.budget <= 0:
            raise InvalidParameter("mwem.mw spends budget: give the finalizer a share gamma_f > 0")
        shape = tuple(getattr(ctx, "shape", None) or (ctx.n,))
        if len(shape) == 2:
            return self._finalize_grid(bins, ctx, shape)
        k = bins.n_groups
        queries = self.queries(bins, ctx.n)
        lo, hi = np.asarray(queries.lo, dtype=np.int64), np.asarray(queries.hi, dtype=np.int64)
        rounds = effective_rounds(self.rounds, lo.size)
        if self.calibration == "dpbench":
            estimate = ctx.data.custom(DPBenchMWEM(), ctx.budget, order=bins.order, bounds=bins.bounds, lo=lo, hi=hi,
                                       rounds=rounds, ratio=float(self.ratio), updates=int(self.updates))
            return bins.spread(estimate)
        return bins.spread(self._private(bins, ctx, k, lo, hi, rounds))

    def stated_error(self, bins: Partition, ctx):
        """No statement, and why: the estimate is not a linear function of its noise."""
        from dphist.stated_error import Unstated
        return Unstated("MWEM's estimate is a multiplicative-weights fit to noisy answers of queries chosen by "
                        "the exponential mechanism: not a linear function of its noise, so no part of its error "
                        "has an exact variance")

    def _budgets(self, ctx, rounds: int) -> tuple[float, float, float]:
        """``(total, eps_select, eps_measure)``: the noisy total (charged here) or the public one, and
        the per-round budgets of the rest of the share."""
        budget = float(ctx.budget)
        if self.public_total is None:
            eps_total = self.total_ratio * budget
            total = float(ctx.data.laplace_partition(Partition.whole(ctx.n), eps_total)[0])
        else:
            eps_total, total = 0.0, float(self.public_total)
        eps_mw = budget - eps_total
        eps_select = self.ratio * eps_mw / rounds
        return total, eps_select, eps_mw / rounds - eps_select

    def _finalize_grid(self, bins: Partition, ctx, shape) -> np.ndarray:
        """MWEM over the cells of a grid with rectangle queries (module :mod:`.grid`): selection by
        ``ctx.data.exponential`` (score from a summed-area table), measurement by
        ``ctx.data.laplace_linear`` on the chosen rectangle's 0/1 row (sensitivity 1, computed by the
        kernel), the closed-form update.  The rectangles are over the cells whatever the partition:
        with groups of several cells (a partitioner before), each group gets the mean of its cells'
        estimates (post-processing)."""
        queries = grid_workload(self.workload, shape)
        lo, hi = queries.lo, queries.hi
        rounds = effective_rounds(self.rounds, len(queries))
        if self.calibration == "dpbench":
            cells = ctx.data.custom(DPBenchMWEMGrid(), ctx.budget, shape=shape, lo=lo, hi=hi, rounds=rounds,
                                    ratio=float(self.ratio), updates=int(self.updates))
        else:
            total, eps_select, eps_measure = self._budgets(ctx, rounds)

            def select(estimated, candidates):
                def score(counts):   # runs in the kernel; the estimate's answers and the candidates are public
                    return rectangle_errors(counts, shape, estimated, lo, hi, candidates)
                return ctx.data.exponential(score, candidates.size, 1.0, eps_select)

            def measure(j):
                row = np.zeros(shape)
                row[lo[j, 0]:hi[j, 0], lo[j, 1]:hi[j, 1]] = 1.0
                return float(ctx.data.laplace_linear(row.reshape(1, -1), eps_measure)[0])

            cells = mwem_grid_loop(shape, total, lo, hi, rounds, int(self.updates), select, measure)
        if bins.is_plain():
            return cells
        return bins.spread(np.add.reduceat(np.asarray(cells)[bins.order], bins.bounds[:-1]))

    def _private(self, bins: Partition, ctx, k: int, lo, hi, rounds: int) -> np.ndarray:
        total, eps_select, eps_measure = self._budgets(ctx, rounds)
        order, bounds = bins.order, bins.bounds

        def select(estimate, candidates):
            def score(counts):   # runs in the kernel; estimate and candidates are public
                return range_errors(_unit_sums(counts, order, bounds), estimate, lo[candidates], hi[candidates])
            return ctx.data.exponential(score, candidates.size, 1.0, eps_select)

        def measure(a, b):
            return float(ctx.data.laplace_intervals([bounds[a]], [bounds[b]], eps_measure, order=order)[0])

        return mwem_loop(k, total, lo, hi, rounds, int(self.updates), select, measure)
