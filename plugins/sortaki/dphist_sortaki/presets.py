"""The configurations of SORTaki Table II as named presets, and the TABLE_II map.

Acronyms (SORTaki Section VII, Table II):

* ``[G|D]X`` - the greedy (GP, Algorithm 5) or dynamic-programming (DPP,
  Algorithm 6) partitioner with algorithm X's error formula and finalizer:
  X = AHP: AHP's error formula + AHP's finalizer (the core's ``group-mean``);
  X = WF (the paper's WAF): UEE (Equation 5) + the WAF finalizer (Algorithm 4).
* ``s`` - sorting by noisy average frequency: the core's ``noisy-count``
  sorter (descending, stable), which is exactly SORTaki's sorter.
* ``t`` - AHP's thresholding initializer (``ahp.threshold`` from the ahp
  plugin) instead of the basic Laplace initializer.
* ``DPC`` / ``sDPC`` - DPCube's kd-tree partitioner (threshold xi = 2/eps^2)
  + WAF finalizer.  ``sDAWA`` - DAWA's partitioner (``dawa.l1`` from the dawa
  plugin) with budget 0.25 (1 - gamma_in) eps + WAF with the rest.

This plugin depends on the core only: the ``t`` presets need the ahp plugin
(``dphist-ahp``) and ``sDAWA`` the dawa plugin (``dphist-dawa``), named in the
pipelines by registry name and declared with ``requires=``; without the plugin
they are listed as unavailable, with the reason (``dphist list``), and
``make_algorithm`` says which plugin to install.

``Identity`` is the core's ``identity`` preset and ``DAWA`` the dawa plugin's
``DAWA`` preset; they are not registered again here (:data:`TABLE_II` maps
every row to its registry name).

Budget: gamma_in goes to the initializer, the rest to the finalizer (gamma_p = 0
for GP, DPP and DPCube, which decide on H~).  Defaults follow Section VII-A:
"the error is minimized when gamma_in is 0.9" for the DP, DPCube and DAWA
partitioners, "while for the greedy partitioner is 0.7" - so the ``G``
presets default to 0.7 and all others to 0.9 (:data:`GREEDY_GAMMA_IN`,
:data:`DEFAULT_GAMMA_IN`).  Smaller gamma_in is better for small domains at
small eps (Section VII-C); pass ``gamma_in=`` to change it.  "D" presets use
the power-of-two DPP by default (the variant the paper runs on 500,000 bins);
``dp_variant="exact"`` gives Algorithm 6 in full.

Why the greedy AHP presets collapse at gamma_in = 0.9 (measured in
``notebooks/sortaki.ipynb``, "GAHP and sGAHP at gamma_in = 0.9"): AHP's error
formula charges a singleton 2/eps_f^2 and ignores H~, so GP (Algorithm 5)
merges the next bin while the increase of the noisy SSE stays below about
2/eps_f^2 - 20,000 at eps = 0.1 with gamma_f = 0.1.  On a smooth histogram whose
counts lie within ~sqrt(2)/eps_f = 141 of each other the whole sorted domain
becomes one or two groups and the release is ``uniform``'s.  This is the
paper's own configuration, not a defect of the port: its Table III shows
sGAHP and GAHP at gamma_in = 0.9 far above Identity (e.g. sGAHP 2.89 vs 0.27
at eps = 1), which is why it recommends 0.7 for the greedy partitioner.
"""
from __future__ import annotations

from dphist import Pipeline, preset
from dphist.errors import InvalidParameter
from dphist.params import UNIT_SHARE, ComponentParameter, Options

from .dpcube import DPCubePartitioner
from .segmentation import VARIANTS

_CITE = "Doudalis & Mehrotra, SORTaki, Table II"

#: Section VII-A: the best gamma_in for the DP, DPCube and DAWA partitioners ...
DEFAULT_GAMMA_IN = 0.9
#: ... and for the greedy partitioner (GP, the ``G`` presets).
GREEDY_GAMMA_IN = 0.7

#: Every row of SORTaki Table II -> the registry name of its preset.
TABLE_II = {
    "Identity": "identity", "GAHP": "GAHP", "sGAHP": "sGAHP", "stGAHP": "stGAHP",
    "sDAHP": "sDAHP", "sDWF": "sDWF", "DPC": "DPC", "sDPC": "sDPC", "DAWA": "DAWA", "sDAWA": "sDAWA",
}


#: gamma_in lies strictly between 0 and 1: the initializer and the finalizer both need budget
_GAMMA_IN = {"gamma_in": UNIT_SHARE}
_DP = {**_GAMMA_IN, "dp_variant": Options(*VARIANTS)}
_DPC = {**_GAMMA_IN, **DPCubePartitioner.param_constraints}


def _family_pipeline(acronym: str, gamma_in, dp_variant: str = "power-of-two") -> Pipeline:
    """The pipeline of an acronym ``[s][t][G|D][AHP|WF]``."""
    g = float(gamma_in)
    rest = acronym
    sort = rest.startswith("s")
    rest = rest[1:] if sort else rest
    threshold = rest.startswith("t")
    rest = rest[1:] if threshold else rest
    method, flavour = rest[0], rest[1:]
    ef, finalizer = {"AHP": ("ahp", "group-mean"), "WF": ("uee", "sortaki.waf")}[flavour]
    if method == "G":
        partitioner = ("sortaki.greedy", {"ef": ef})
    else:
        partitioner = ("sortaki.dp", {"ef": ef, "variant": dp_variant})
    initializer = "ahp.threshold" if threshold else "laplace"
    return Pipeline(initializer, "noisy-count" if sort else None, partitioner, finalizer, (g, 0.0, 1.0 - g))


def _family(acronym: str, greedy: bool):
    parts = []
    if acronym.startswith("s"):
        parts.append("sorting by noisy frequency")
    if "t" in acronym[:2]:
        parts.append("AHP's thresholding initializer")
    parts.append("greedy partitioner (Alg. 5)" if greedy else "DP partitioner (Alg. 6)")
    parts.append("AHP's error formula and finalizer" if acronym.endswith("AHP") else "UEE (Eq. 5) and WAF (Alg. 4)")
    summary = f"{acronym}: " + ", ".join(parts)
    if "t" in acronym[:2]:
        summary += " (needs the ahp plugin, dphist-ahp)"
    # the "t" presets use ahp.threshold, a component of the ahp plugin
    requires = ("initializer:ahp.threshold",) if "t" in acronym[:2] else ()
    if greedy:
        @preset(acronym, citation=_CITE, summary=summary, params=_GAMMA_IN, requires=requires)
        def factory(gamma_in: float = GREEDY_GAMMA_IN) -> Pipeline:
            return _family_pipeline(acronym, gamma_in)
    else:
        @preset(acronym, citation=_CITE, summary=summary, params=_DP, requires=requires)
        def factory(gamma_in: float = DEFAULT_GAMMA_IN, dp_variant: str = "power-of-two") -> Pipeline:
            return _family_pipeline(acronym, gamma_in, dp_variant)
    factory.__name__ = factory.__qualname__ = acronym
    factory.__doc__ = summary
    return factory


GAHP, sGAHP, tGAHP, stGAHP = (_family(a, True) for a in ("GAHP", "sGAHP", "tGAHP", "stGAHP"))
GWF, sGWF, tGWF, stGWF = (_family(a, True) for a in ("GWF", "sGWF", "tGWF", "stGWF"))
DAHP, sDAHP, tDAHP, stDAHP = (_family(a, False) for a in ("DAHP", "sDAHP", "tDAHP", "stDAHP"))
DWF, sDWF, tDWF, stDWF = (_family(a, False) for a in ("DWF", "sDWF", "tDWF", "stDWF"))

FAMILY = ("GAHP", "sGAHP", "tGAHP", "stGAHP", "GWF", "sGWF", "tGWF", "stGWF",
          "DAHP", "sDAHP", "tDAHP", "stDAHP", "DWF", "sDWF", "tDWF", "stDWF")


def _dpcube(acronym: str, sort: bool, gamma_in, threshold, split) -> Pipeline:
    g = float(gamma_in)
    return Pipeline("laplace", "noisy-count" if sort else None,
                    ("sortaki.dpcube", {"threshold": threshold, "split": split}), "sortaki.waf", (g, 0.0, 1.0 - g))


@preset("DPC", citation=_CITE + " (DPC); Xiao et al. 2010 (DPCube)", params=_DPC)
def DPC(gamma_in: float = DEFAULT_GAMMA_IN, threshold="sortaki", split: str = "median") -> Pipeline:
    """DPC: DPCube's kd-tree partitioner on H~ (xi = 2/eps^2) + WAF finalizer, no sorting."""
    return _dpcube("DPC", False, gamma_in, threshold, split)


@preset("sDPC", citation=_CITE + " (sDPC); Xiao et al. 2010 (DPCube)", params=_DPC)
def sDPC(gamma_in: float = DEFAULT_GAMMA_IN, threshold="sortaki", split: str = "median") -> Pipeline:
    """sDPC: sorting + DPCube's kd-tree partitioner (xi = 2/eps^2) + WAF finalizer."""
    return _dpcube("sDPC", True, gamma_in, threshold, split)


@preset("sDAWA", citation=_CITE + " (sDAWA); Li et al., DAWA, PVLDB 2014",
        params={**_GAMMA_IN, "gamma_p": [None, UNIT_SHARE],
                "dawa_variant": ComponentParameter("partitioner", "dawa.l1", "variant"),
                "calibration": ComponentParameter("partitioner", "dawa.l1", "calibration")},
        requires=("partitioner:dawa.l1",))
def sDAWA(gamma_in: float = DEFAULT_GAMMA_IN, gamma_p: float | None = None, dawa_variant: str = "power-of-two",
          calibration: str = "postprocess") -> Pipeline:
    """sDAWA: sorting + DAWA's L1 partitioner with 0.25 (1 - gamma_in) eps + WAF finalizer (needs dphist-dawa).

    ``calibration`` is passed to ``dawa.l1``: ``"postprocess"`` (default, eps-DP) or
    ``"noisy-min"``; ``"dpbench"`` is the DPBench/ektelo code's calibration, NOT
    differentially private (release mode refuses it; the release carries a warning).

    ``gamma_p`` defaults to the paper's 0.25 (1 - gamma_in); given explicitly,
    gamma_in + gamma_p must stay below 1 (the finalizer needs budget).
    ``dawa_variant`` is passed to ``dawa.l1`` (power-of-two by default: the
    exact O(n^2) search is infeasible on the paper's 500,000-bin domains).
    """
    g = float(gamma_in)
    if gamma_p is None:
        gp = 0.25 * (1.0 - g)
    else:
        gp = float(gamma_p)
        if g + gp >= 1.0:
            raise InvalidParameter(f"sDAWA: gamma_in + gamma_p = {g} + {gp} >= 1 leaves the finalizer no budget")
    return Pipeline("laplace", "noisy-count", ("dawa.l1", {"variant": dawa_variant, "calibration": calibration}),
                    "sortaki.waf",
                    (g, gp, 1.0 - g - gp))
