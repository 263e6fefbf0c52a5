"""Named algorithms of the boost plugin (entry points in ``dphist.algorithms``).

The flat baseline L~ of Hay et al. is the core's ``identity`` preset.
"""
from __future__ import annotations

from dphist import Pipeline, preset

from .finalizers import HierarchicalFinalizer, UnattributedFinalizer

_HAY = "Hay, Rastogi, Miklau, Suciu, PVLDB 3(1), 2010"
#: the presets pass their parameters to boost.hierarchical / boost.unattributed unchanged
_H = HierarchicalFinalizer.param_constraints


@preset("H", citation=_HAY + ", Section 4.1 (H-bar, Theorem 3)",
        params={k: _H[k] for k in ("branching", "level_budgets", "nonnegative", "round")})
def hierarchical(branching=2, level_budgets="uniform", nonnegative: bool = False, round: bool = False) -> Pipeline:
    """H-bar: binary tree of Laplace counts with least-squares constrained inference."""
    return Pipeline(None, None, "singleton",
                    HierarchicalFinalizer(branching=branching, level_budgets=level_budgets, inference=True,
                                          nonnegative=nonnegative, round=round),
                    (0.0, 0.0, 1.0))


@preset("H-tilde", citation=_HAY + ", Section 4 (H-tilde, no inference)",
        params={k: _H[k] for k in ("branching", "level_budgets", "round")})
def hierarchical_tilde(branching=2, level_budgets="uniform", round: bool = False) -> Pipeline:
    """H-tilde: the noisy tree without inference; the release is its noisy leaves."""
    return Pipeline(None, None, "singleton",
                    HierarchicalFinalizer(branching=branching, level_budgets=level_budgets, inference=False,
                                          round=round),
                    (0.0, 0.0, 1.0))


@preset("Hb", citation="Qardaji, Yang, Li, PVLDB 6(14), 2013 (branching); " + _HAY + " (inference)",
        params={k: _H[k] for k in ("noisy_root", "nonnegative", "round")})
def hierarchical_b(noisy_root: bool = False, nonnegative: bool = False, round: bool = False) -> Pipeline:
    """Hb: H-bar with Qardaji et al.'s branching factor; the root is not measured by default (ektelo)."""
    return Pipeline(None, None, "singleton",
                    HierarchicalFinalizer(branching="auto", inference=True, nonnegative=nonnegative,
                                          round=round, noisy_root=noisy_root),
                    (0.0, 0.0, 1.0))


@preset("unattributed-S-bar", citation=_HAY + ", Section 3 (S-bar, Theorem 1)",
        params=UnattributedFinalizer.param_constraints)
def unattributed_s_bar(variant: str = "S-bar") -> Pipeline:
    """S-bar: noisy sorted counts made monotone by isotonic regression (an unattributed release)."""
    return Pipeline(None, None, "singleton", UnattributedFinalizer(variant=variant), (0.0, 0.0, 1.0))


@preset("HB-2D", citation="Qardaji, Yang, Li, PVLDB 6(14), 2013, Section 5.1 (multi-dimensional branching); "
        + _HAY + " (inference)", requires=("finalizer:spatial.tree",), dims=(2,))
def hierarchical_b_2d() -> Pipeline:
    """HB on a grid: ``b x b`` splits per level with Qardaji et al.'s branching (the ``b`` minimising
    ``b (n - 1) ceil(log_b n)^2`` on a side of ``n`` cells, as DPBench's ``HB2D``), a uniform budget
    over the levels below the unmeasured root, least-squares inference.  The tree is the spatial
    plugin's ``spatial.tree`` (needs dphist-spatial)."""
    return Pipeline(None, None, "singleton",
                    ("spatial.tree", {"branching": "qardaji", "budget": "uniform", "noisy_root": False}),
                    (0.0, 0.0, 1.0), dims=(2,))
