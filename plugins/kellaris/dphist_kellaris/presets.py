"""The 15 schemes of Table 1 (Kellaris, Papadopoulos, Papadias, TKDE, Sections 4-7).

Every scheme is a pipeline of the four basic components of Section 4:

============  =====================================================================================
component     registry name (parameters)
============  =====================================================================================
S_1           ``dawa.l1`` (variant "exact"): DAWA's private L1 grouping, Eq. (1)       [dawa plugin]
S~            ``dawa.l1`` (variant "power-of-two"): its approximation                   [dawa plugin]
S_2           ``kellaris.s2`` (mode "optimal"): Eq. (2) with the bias correction (Section 5.1)
O             the core's ``laplace`` initializer + ``noisy-count`` sorter (descending)
MM            ``dawa.greedy-h`` (workload "all-ranges"): DAWA's matrix mechanism     [dawa plugin]
PMM           ``dawa.greedy-h`` (workload "prefix"): the prefix workload (Section 5.2) [dawa plugin]
H             ``boost.hierarchical`` (branching 16, uniform budgets, Hay's inference) [boost plugin]
S_1 + H       ``dawa.l1`` (variant "tree", branching 16) + ``kellaris.pruned-tree``    [dawa plugin]
S_2 + H       ``kellaris.s2`` (mode "tree", branching 16) + ``kellaris.pruned-tree``
============  =====================================================================================

Smoothing alone publishes with the core's ``group-mean`` (each group's total + Lap(1/eps_2),
spread evenly: noise scale 1/(eps_2 |g|) per bin, Section 4).

Budgets (Section 7.1): smoothing, smoothing + fixed queries and hierarchical smoothing give
eps_1 = 0.25 eps to grouping and eps_2 = 0.75 eps to publishing; ordering and smoothing give
eps_1 = 0.65 eps "for ordering and grouping" and eps_2 = 0.35 eps to publishing.  The paper does not
split eps_1 between ordering and grouping: O + S_2 is AHP with S_2 (Section 7.1), which sorts and
groups the SAME noisy vector, so all 0.65 eps goes to it (``kellaris.s2-initial``); DAWA's grouping
draws its own noisy counts, so O + S_1 and O + S~ split eps_1 evenly (0.325 eps each; our choice).
H spends all of eps on the tree.  ``ratio`` (eps_1 / eps) and, for the O schemes, ``order_share``
change these.

Ordering cannot be combined with MM, PMM or H (Section 6, last paragraph; Section 7.1): those
answer intervals from consecutive bins.  :func:`scheme` refuses such labels with a clear error, and
the components refuse a sorted order themselves.
"""
from __future__ import annotations

from dphist import InvalidParameter, Pipeline, preset
from dphist.params import UNIT_SHARE, check_value

from .pruned_tree import PrunedTreeFinalizer
from .s2 import S2OnInitialPartitioner, S2Partitioner

_PAPER = "Kellaris, Papadopoulos, Papadias, Engineering Methods for Differentially Private Histograms, TKDE"
SMOOTHING = ("S1", "S~", "S2")
PUBLISHING = (None, "MM", "PMM", "H")
FANOUT = 16                      #: footnote 1: f = 16 is optimal for interval queries (Qardaji et al.)
SMOOTH_RATIO = 0.25              #: eps_1 / eps for S, S + MM/PMM, S + H (Section 7.1)
ORDER_RATIO = 0.65               #: eps_1 / eps for O + S (Section 7.1)

#: paper label (Table 1) -> registry name of the preset
TABLE_1 = {label: f"kellaris.{label}" for label in (
    "S1", "S~", "S2", "O+S1", "O+S~", "O+S2", "S1+MM", "S~+MM", "S2+MM",
    "S1+PMM", "S~+PMM", "S2+PMM", "H", "S1+H", "S2+H")}


def _share(value, name: str) -> float:
    """A budget share in (0, 1) (the presets declare the same constraint, ``UNIT_SHARE``)."""
    check_value("kellaris scheme", name, value, (UNIT_SHARE,))
    return float(value)


_RATIO = {"ratio": UNIT_SHARE}
_ORDERED = {"ratio": UNIT_SHARE, "order_share": UNIT_SHARE}


def parse_label(label: str) -> tuple[bool, str | None, str | None]:
    """``"O+S~"`` -> (ordering, smoothing, publishing) = (True, "S~", None); ``"H"`` -> (False, None, "H").

    Raises InvalidParameter for an unknown label and for ordering with MM, PMM or H.
    """
    if not isinstance(label, str):
        raise InvalidParameter(f"label must be a string such as 'S1+PMM', got {label!r}")
    parts = label.split("+")
    ordering = parts[0] == "O"
    if ordering:
        parts = parts[1:]
    if parts == ["H"]:
        smoothing, publishing = None, "H"
    elif len(parts) in (1, 2) and parts[0] in SMOOTHING and (len(parts) == 1 or parts[1] in PUBLISHING[1:]):
        smoothing, publishing = parts[0], (parts[1] if len(parts) == 2 else None)
    else:
        raise InvalidParameter(f"unknown scheme {label!r}: use [O+]S1|S~|S2[+MM|+PMM|+H] or H (Table 1)")
    if ordering and publishing is not None:
        raise InvalidParameter(
            f"scheme {label!r}: ordering (O) cannot be combined with {publishing} - the "
            f"{'hierarchical' if publishing == 'H' else 'fixed queries'} component answers intervals from "
            "consecutive bins and ordering permutes them (Kellaris et al., Sections 6 and 7.1)")
    if publishing == "H" and smoothing == "S~":
        raise InvalidParameter("scheme 'S~+H' is not in Table 1: hierarchical smoothing groups full subtrees "
                               "(use S1+H or S2+H)")
    return ordering, smoothing, publishing


def _grouping(smoothing: str, tree: bool, order_share: float | None = None, publish_cost: str = "flat"):
    if smoothing == "S2":
        if order_share is not None:
            return S2OnInitialPartitioner("optimal", FANOUT)
        return S2Partitioner("tree" if tree else "optimal", FANOUT, publish_cost=publish_cost)
    variant = "tree" if tree else ("exact" if smoothing == "S1" else "power-of-two")
    return ("dawa.l1", {"variant": variant, "branching": FANOUT} if tree else {"variant": variant})


def scheme(label: str, ratio: float | None = None, order_share: float | None = None,
           publish_cost: str = "flat") -> Pipeline:
    """The pipeline of a Table 1 label (see the module docstring for components and budgets).

    ``ratio``: eps_1 / eps (default 0.25, or 0.65 with ordering).  ``order_share``: for O + S_1 and
    O + S~, the ordering's part of eps_1 (default 0.5); O + S_2 sorts and groups one vector.
    ``publish_cost``: S_2 + H only, the grouping's publishing term (``kellaris.s2``'s parameter).
    """
    ordering, smoothing, publishing = parse_label(label)
    if publish_cost != "flat" and label != "S2+H":
        raise InvalidParameter(f"scheme {label!r}: publish_cost applies to S2+H only (the pruned tree's noise)")
    if publishing == "H" and smoothing is None:
        if ratio is not None:
            raise InvalidParameter("scheme 'H' has no grouping: ratio does not apply")
        return Pipeline(None, None, "singleton", ("boost.hierarchical", {"branching": FANOUT}), (0.0, 0.0, 1.0))
    r = _share(ORDER_RATIO if ratio is None and ordering else SMOOTH_RATIO if ratio is None else ratio, "ratio")
    if not ordering:
        if order_share is not None:
            raise InvalidParameter(f"scheme {label!r} has no ordering: order_share does not apply")
        finalizer = {None: "group-mean",
                     "MM": ("dawa.greedy-h", {"workload": "all-ranges"}),
                     "PMM": ("dawa.greedy-h", {"workload": "prefix"}),
                     "H": PrunedTreeFinalizer(FANOUT)}[publishing]
        return Pipeline(None, None, _grouping(smoothing, publishing == "H", publish_cost=publish_cost), finalizer,
                        (0.0, r, 1.0 - r))
    if smoothing == "S2":
        if order_share is not None:
            raise InvalidParameter("O+S2 sorts and groups one noisy vector (AHP): order_share does not apply")
        return Pipeline("laplace", "noisy-count", _grouping("S2", False, order_share=1.0), "group-mean",
                        (r, 0.0, 1.0 - r))
    o = _share(0.5 if order_share is None else order_share, "order_share")
    return Pipeline("laplace", "noisy-count", _grouping(smoothing, False), "group-mean",
                    (r * o, r * (1.0 - o), 1.0 - r))


def requirements(label: str) -> tuple[str, ...]:
    """The other plugins' components a Table 1 scheme uses (``kind:name``, for ``@preset(requires=...)``):
    without them installed the preset is listed as unavailable, with the reason."""
    ordering, smoothing, publishing = parse_label(label)
    needed = []
    if smoothing in ("S1", "S~"):
        needed.append("partitioner:dawa.l1")
    if publishing in ("MM", "PMM"):
        needed.append("finalizer:dawa.greedy-h")
    if publishing == "H" and smoothing is None:
        needed.append("finalizer:boost.hierarchical")
    return tuple(needed)


_NEEDS_DAWA = " Needs the dawa plugin (components by registry name)."


def _documented(text: str):
    """Set a factory's docstring before ``@preset`` reads its first line as the summary."""
    def wrap(factory):
        factory.__doc__ = text + " Budgets and components: dphist_kellaris.presets module docstring (Section 7.1)."
        return factory
    return wrap


@preset("kellaris.S1", requires=requirements("S1"), citation=_PAPER + ", Section 4 (S_1, Eq. (1)); Li et al. PVLDB 2014 (DAWA)", params=_RATIO)
@_documented("S_1: DAWA's exact L1 grouping (0.25 eps), group means with 0.75 eps." + _NEEDS_DAWA)
def s1(ratio: float = SMOOTH_RATIO) -> Pipeline:
    return scheme("S1", ratio)



@preset("kellaris.S~", requires=requirements("S~"), citation=_PAPER + ", Section 4 (approximate smoothing); Li et al. PVLDB 2014", params=_RATIO)
@_documented("S~: DAWA's power-of-two grouping (0.25 eps), group means with 0.75 eps." + _NEEDS_DAWA)
def s_tilde(ratio: float = SMOOTH_RATIO) -> Pipeline:
    return scheme("S~", ratio)



@preset("kellaris.S2", requires=requirements("S2"), citation=_PAPER + ", Section 5.1 (S_2 with bias correction)", params=_RATIO)
def s2(ratio: float = SMOOTH_RATIO) -> Pipeline:
    """S_2: Laplace counts (0.25 eps), O(N^2) squared-error grouping with the bias correction, group
    means with 0.75 eps. Budgets: dphist_kellaris.presets module docstring (Section 7.1)."""
    return scheme("S2", ratio)


@preset("kellaris.O+S1", requires=requirements("O+S1"), citation=_PAPER + ", Sections 4 and 7.1 (O + S_1)", params=_ORDERED)
@_documented("O + S_1: noisy counts sorted descending (0.325 eps), DAWA's exact grouping on the sorted "
                    "bins (0.325 eps), group means (0.35 eps)." + _NEEDS_DAWA)
def o_s1(ratio: float = ORDER_RATIO, order_share: float = 0.5) -> Pipeline:
    return scheme("O+S1", ratio, order_share)



@preset("kellaris.O+S~", requires=requirements("O+S~"), citation=_PAPER + ", Sections 4 and 7.1 (O + S~)", params=_ORDERED)
@_documented("O + S~: noisy counts sorted descending (0.325 eps), DAWA's power-of-two grouping "
                         "(0.325 eps), group means (0.35 eps)." + _NEEDS_DAWA)
def o_s_tilde(ratio: float = ORDER_RATIO, order_share: float = 0.5) -> Pipeline:
    return scheme("O+S~", ratio, order_share)



@preset("kellaris.O+S2", requires=requirements("O+S2"), citation=_PAPER + ", Section 7.1 (O + S_2: AHP with S_2); Zhang et al. SDM 2014",
        params=_RATIO)
def o_s2(ratio: float = ORDER_RATIO) -> Pipeline:
    """O + S_2: one Laplace vector (0.65 eps) sorted descending and grouped by S_2 (AHP's design),
    group means (0.35 eps). Budgets: dphist_kellaris.presets module docstring (Section 7.1)."""
    return scheme("O+S2", ratio)


def _fixed(label, workload, smoothing_doc):
    def factory(ratio: float = SMOOTH_RATIO) -> Pipeline:
        return scheme(label, ratio)
    _documented(f"{label}: {smoothing_doc} (0.25 eps), then DAWA's matrix mechanism (GreedyH) with "
                f"the {workload} workload on the groups (0.75 eps)." + _NEEDS_DAWA)(factory)
    factory.__name__ = factory.__qualname__ = label.replace("+", "_").replace("~", "_tilde").lower()
    return factory


s1_mm = preset("kellaris.S1+MM", requires=requirements("S1+MM"), citation=_PAPER + ", Section 4 (MM); Li et al. PVLDB 2014 (GreedyH)", params=_RATIO)(
    _fixed("S1+MM", "all-ranges", "DAWA's exact L1 grouping"))
s_tilde_mm = preset("kellaris.S~+MM", requires=requirements("S~+MM"), citation=_PAPER + ", Section 4 (MM); Li et al. PVLDB 2014 (GreedyH)",
                    params=_RATIO)(
    _fixed("S~+MM", "all-ranges", "DAWA's power-of-two grouping"))
s2_mm = preset("kellaris.S2+MM", requires=requirements("S2+MM"), citation=_PAPER + ", Sections 4, 5.1 (S_2 + MM)", params=_RATIO)(
    _fixed("S2+MM", "all-ranges", "S_2 grouping"))
s1_pmm = preset("kellaris.S1+PMM", requires=requirements("S1+PMM"), citation=_PAPER + ", Section 5.2 (PMM: the prefix workload)", params=_RATIO)(
    _fixed("S1+PMM", "prefix", "DAWA's exact L1 grouping"))
s_tilde_pmm = preset("kellaris.S~+PMM", requires=requirements("S~+PMM"), citation=_PAPER + ", Section 5.2 (PMM: the prefix workload)", params=_RATIO)(
    _fixed("S~+PMM", "prefix", "DAWA's power-of-two grouping"))
s2_pmm = preset("kellaris.S2+PMM", requires=requirements("S2+PMM"), citation=_PAPER + ", Sections 5.1, 5.2 (S_2 + PMM)", params=_RATIO)(
    _fixed("S2+PMM", "prefix", "S_2 grouping"))


@preset("kellaris.H", requires=requirements("H"), citation=_PAPER + ", Section 4 (H); Hay et al. PVLDB 2010; Qardaji et al. PVLDB 2013")
def h() -> Pipeline:
    """H: the aggregate tree of fan-out 16 (Qardaji et al.), eps split evenly over its levels (root
    measured, as in Figure 1), Hay et al.'s least-squares inference. Needs the boost plugin
    (``boost.hierarchical`` by registry name)."""
    return scheme("H")


@preset("kellaris.S1+H", requires=requirements("S1+H"), citation=_PAPER + ", Section 6 (hierarchical smoothing, absolute error)", params=_RATIO)
@_documented("S_1 + H: DAWA's L1 grouping restricted to full subtrees of the 16-ary tree (0.25 eps; "
                    "the 'tree' variant of dawa.l1), then the pruned tree with averaged group roots and "
                    "least-squares inference (0.75 eps)." + _NEEDS_DAWA)
def s1_h(ratio: float = SMOOTH_RATIO) -> Pipeline:
    return scheme("S1+H", ratio)



@preset("kellaris.S2+H", requires=requirements("S2+H"), citation=_PAPER + ", Section 6 (hierarchical smoothing, squared error)", params={**_RATIO, "publish_cost": S2Partitioner.param_constraints["publish_cost"]})
def s2_h(ratio: float = SMOOTH_RATIO, publish_cost: str = "flat") -> Pipeline:
    """S_2 + H: S_2 restricted to full subtrees of the 16-ary tree (0.25 eps, O(N)), then the pruned
    tree with averaged group roots and least-squares inference (0.75 eps). Budgets:
    dphist_kellaris.presets module docstring (Section 7.1).  ``publish_cost="tree"``: the grouping
    charges each group the pruned tree's noise on its root instead of Eq. (2)'s flat term
    (:func:`dphist_kellaris.s2.s2_penalty`; measured in notebooks/kellaris.ipynb, Section 9)."""
    return scheme("S2+H", ratio, publish_cost=publish_cost)
