"""The pipelines a component is audited in, and the noise source of release-mode audit runs.

A component alone publishes nothing; the auditor runs it inside pipelines
that exercise what it does (:func:`audit_pipelines`):

==============  =====================================================================
component       pipelines (first: the conformance kit's harness)
==============  =====================================================================
initializer     kit harness (half the budget, then singleton groups and group means);
                the initializer with the WHOLE budget, H~ published as it is
                (:class:`PublishNoisy`), so its own loss is seen undiluted
sorter          kit harness (singletons); the sorter followed by groups of 2 and of 4
                consecutive positions (:class:`FixedWidth`): the sorted order
                decides which bins share a group, so it shows in the output
partitioner     kit harnesses (Laplace initializer, the partitioner, group means;
                also after the noisy-count sorter unless it needs domain order)
finalizer       kit harnesses (singleton groups); multi-bin groups: widths 2 and 4
                and the whole domain without an initializer (the finalizer gets all
                of epsilon), and width 2 after the noisy-count sorter
==============  =====================================================================

Every pipeline is probed once on a public all-zero histogram before the audit
(:func:`runnable`): a pipeline the component cannot run in (e.g. a finalizer
that needs H~ in a pipeline without an initializer) is dropped, a decision made
on public data before any audited run, so the number of tests stays fixed in
advance.

:class:`ReleaseNoise` is release mode's exact sampler with the audit's seeded
random words, declared ``mode = "release"``: ``Pipeline.run`` then runs in
release mode (the mode a component sees in ``ctx.mode`` and
``ctx.data.mode``), so what is published is what is audited, and the audit
stays reproducible from its seed.  (The run's public generator ``ctx.rng`` comes
from the operating system in release mode; no registered component draws from
it.)
"""
from __future__ import annotations

import numpy as np

from ..components.base import Component, Context, Finalizer, Initializer, Partitioner, Sorter
from ..kernel.exact import GeneratorWords
from ..kernel.noise import ExactNoise
from ..partition import Partition
from ..pipeline import Pipeline


class ReleaseNoise(ExactNoise):
    """Release mode's exact samplers on seeded words (audit runs only; never for publication)."""

    def __init__(self, rng: np.random.Generator):
        super().__init__(GeneratorWords(rng))
        self.mode = "release"
        self.name = "exact-discrete-laplace[audit-seeded]"


class FixedWidth(Partitioner):
    """Groups of ``width`` consecutive positions in the current order (public; spends nothing)."""

    name = "audit.fixed-width"
    citation = "dphist.audit harness"
    batch_capable = True
    param_constraints = {"width": int}

    def __init__(self, width: int = 2):
        self.width = width

    def partition(self, bins: Partition, ctx: Context) -> Partition:
        return bins.merge(np.arange(0, bins.n_groups, int(self.width)))


class PublishNoisy(Finalizer):
    """Publishes H~ as it is (post-processing; spends nothing)."""

    name = "audit.publish-noisy"
    citation = "dphist.audit harness"
    batch_capable = True
    spends = False

    def finalize(self, bins: Partition, ctx: Context) -> np.ndarray:
        return ctx.noisy


def audit_pipelines(component: Component) -> list[Pipeline]:
    """The pipelines ``component`` is audited in (the table above), named after their shape."""
    from ..testing import harness_pipelines
    pipes = list(harness_pipelines(component))
    if isinstance(component, Initializer):
        if component.spends:
            pipes.append(Pipeline(component, None, "singleton", PublishNoisy(), (1.0, 0.0, 0.0)))
    elif isinstance(component, Sorter):
        pipes += [Pipeline("laplace", component, FixedWidth(w), "group-mean", (0.5, 0.0, 0.5)) for w in (2, 4)]
    elif isinstance(component, Finalizer):
        shares = (0.0, 0.0, 1.0) if component.spends else None
        if shares is not None:
            pipes += [Pipeline(None, None, FixedWidth(w), component, shares) for w in (2, 4)]
            pipes.append(Pipeline(None, None, "whole", component, shares))
        if not component.requires_domain_order:
            pipes.append(Pipeline("laplace", "noisy-count", FixedWidth(2), component, (0.5, 0.0, 0.5)))
    for p in pipes:
        p.name = describe(p)
    return pipes


def describe(pipe: Pipeline) -> str:
    """``initializer > sorter > partitioner(width) > finalizer`` with the shares."""
    parts = []
    for c in pipe.components():
        label = c.name
        if isinstance(c, FixedWidth):
            label = f"groups of {c.width}"
        parts.append(label)
    return " > ".join(parts) + " " + "/".join(f"{s:g}" for s in pipe.shares)


def runnable(pipe: Pipeline, noise: str) -> str | None:
    """None when ``pipe`` runs on a public all-zero probe in this mode, else the reason it does not."""
    from ..pipeline import supports_dims
    from .sampling import run_once
    probe = np.zeros(8, dtype=np.int64) if supports_dims(pipe.dims, 1) else np.zeros((4, 4), dtype=np.int64)
    try:
        run_once(pipe, probe, 1.0, 0, noise)
    except Exception as exc:  # noqa: BLE001 - the reason is reported, the pipeline dropped
        return f"{type(exc).__name__}: {exc}"
    return None
