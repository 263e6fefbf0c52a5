"""What the explorer computes for one setting of its controls: no widgets, no plotting.

:func:`evaluate` turns a :class:`Settings` into a :class:`Snapshot` (the
release, the Laplace baseline, the errors, the ledger bars, the formula's
prediction) or into a message saying why the setting is impossible.  It never
raises: the explorer shows the message in the widget instead of a traceback in
the notebook.  Keeping this part free of ipywidgets lets the tests and the
latency benchmark drive it directly.

Privacy notes
-------------
* The explorer is a teaching and research tool that shows the TRUE histogram
  next to the release; nothing it displays is a publication.
* With a seed it runs in research mode (reproducible, seeded noise); a seeded
  release must never be published.  With the seed empty it runs
  ``Pipeline.run(..., seed=None)``: release mode.
* The Laplace baseline is a second, independent run on the same data: it is
  there to compare errors and is not part of the release's ledger (publishing
  both would spend 2 eps).
* Errors, the Laplace closed form and the error formula's prediction are
  post-processing: the prediction uses H~ (the initializer's noisy output)
  only, never the true counts, so it costs nothing.
"""
from __future__ import annotations

import importlib
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import metrics, workloads
from ..datasets import Dataset, load as load_dataset
from ..errors import DPHistError
from ..intervals import centred_prefix_sums
from ..pipeline import STAGES, Pipeline, Release
from ..presets import make_algorithm
from ..registry import default_registry

CUSTOM = "custom"
NONE = "(none)"
ARRAY = "(array passed in)"
WORKLOADS = ("identity", "prefix", "all-ranges", "small-ranges", "big-ranges", "ranges-10%")
METRICS = ("mse", "scaled-l1")
SPENDING_STAGES = ("initializer", "partitioner", "finalizer")


@dataclass(frozen=True)
class Settings:
    """The explorer's controls as plain values (what :func:`evaluate` needs)."""

    dataset: str = "flights-dep-delay"
    algorithm: str = "identity"                 #: a preset name, or ``"custom"``
    components: tuple = ("(none)", "(none)", "singleton", "group-mean")   #: one name per stage
    shares: tuple = (0.0, 0.0, 1.0)             #: gamma_in, gamma_p, gamma_f
    epsilon: Any = 0.1
    seed: str = "1"                             #: "" = release mode
    workload: str = "prefix"
    base: str = ""                              #: for ``"custom"``: the preset whose parameters are kept


@dataclass
class Snapshot:
    """Everything the views show for one setting (or only ``message`` when it is impossible)."""

    settings: Settings
    message: str = ""
    true: np.ndarray | None = None             #: true counts, original order
    release: Release | None = None
    laplace: Release | None = None             #: the identity preset at the same eps (baseline)
    errors: dict = field(default_factory=dict)          #: {"release"|"laplace": {workload: {metric: v}}}
    laplace_expected_mse: float = math.nan     #: 2 mean(|q|) / eps^2 on the chosen workload
    prediction: dict | None = None             #: the error formula's prediction, when there is one
    ledger_bars: dict = field(default_factory=dict)     #: stage -> [(primitive, component, eps)]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.message


class DataCache:
    """Datasets loaded by name, kept (a few) so moving epsilon does not reload them.

    Thread-safe: the explorer's update worker and its comparison jobs share one cache.
    """

    def __init__(self, data=None, size: int = 4):
        self.array = None
        if data is not None:
            ds = data if isinstance(data, Dataset) else Dataset(ARRAY, np.asarray(data), "array passed in",
                                                               "bins 0..n-1")
            self.array = ds
        self._cache: OrderedDict[str, Dataset] = OrderedDict()
        self._lock = threading.Lock()
        self.size = size

    def get(self, name: str) -> Dataset:
        if name == ARRAY and self.array is not None:
            return self.array
        with self._lock:
            if name in self._cache:
                self._cache.move_to_end(name)
                return self._cache[name]
        ds = load_dataset(name)           # outside the lock: a slow load must not stall the other thread
        with self._lock:
            self._cache[name] = ds
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return ds


def preset_stage_names(algorithm: str) -> tuple[tuple, tuple]:
    """The component names (NONE for an empty slot) and shares of a preset."""
    pipe = make_algorithm(algorithm)
    names = tuple(NONE if getattr(pipe, s) is None else getattr(pipe, s).name for s in STAGES)
    return names, tuple(pipe.shares)


def build_pipeline(settings: Settings) -> Pipeline:
    """The preset itself when the controls still match it; otherwise the four dropdowns and shares.

    A custom pipeline keeps a preset's parameters for every stage whose component is unchanged
    (e.g. the error formula of ``sortaki.dp``), and uses default parameters for the others.
    """
    preset = None
    source = settings.algorithm if settings.algorithm != CUSTOM else settings.base
    if source:
        preset = make_algorithm(source)
        names = tuple(NONE if getattr(preset, s) is None else getattr(preset, s).name for s in STAGES)
        if (settings.algorithm != CUSTOM and names == tuple(settings.components)
                and _same_shares(preset.shares, settings.shares)):
            return preset
    parts = []
    for stage, name in zip(STAGES, settings.components):
        if name in (None, "", NONE):
            parts.append(None)
            continue
        kept = getattr(preset, stage) if preset is not None else None
        parts.append(kept if kept is not None and kept.name == name else name)
    return Pipeline(*parts, shares=settings.shares, name=CUSTOM)


def _same_shares(a, b) -> bool:
    return all(abs(float(x) - float(y)) < 1e-12 for x, y in zip(a, b))


def parse_epsilon(value) -> float:
    try:
        eps = float(value)
    except (TypeError, ValueError):
        raise DPHistError(f"epsilon must be a positive number, got {value!r}") from None
    if not math.isfinite(eps) or eps <= 0:
        raise DPHistError(f"epsilon must be a positive number, got {value!r}: epsilon <= 0 gives no privacy "
                          "guarantee (and infinite noise)")
    return eps


def parse_seed(text) -> int | None:
    text = "" if text is None else str(text).strip()
    if not text:
        return None
    try:
        seed = int(text)
    except ValueError:
        raise DPHistError(f"the seed must be a non-negative whole number or empty (release mode), got {text!r}") \
            from None
    if seed < 0:
        raise DPHistError(f"the seed must be a non-negative whole number or empty (release mode), got {seed}")
    return seed


def laplace_expected_mse(workload, epsilon: float) -> float:
    """Expected per-query MSE of the Laplace mechanism: a range of L bins sums L draws of variance 2/eps^2."""
    n = workload.n
    if isinstance(workload, workloads.AllRanges):
        mean_len = (n + 2) / 3.0     # sum_L L (n - L + 1) / (n (n + 1) / 2)
    else:
        mean_len = float(np.mean(workload.lengths))
    return 2.0 * mean_len / epsilon ** 2


def formula_prediction(release: Release) -> dict | None:
    """The predicted total squared error over bins from a component's error formula, or None.

    A component provides one when it has an ``ef`` attribute: a callable
    ``EF(starts, ends, prefix, prefix_sq, eps_in, eps_f)`` (SORTaki Section V-A)
    or a name its plugin package resolves with ``resolve_error_formula``
    (``dphist_sortaki``: ``uee``, Eq. 5; ``ahp``, Zhang et al. Thm 4.2).  The
    sum of EF over the release's groups is evaluated on H~ in the partition's
    order: post-processing of the initializer's output, no privacy cost.
    Formulas that need the true counts (``needs_true_data``) are not used.
    """
    pipe = release.pipeline
    if pipe is None or release.noisy is None:
        return None
    for stage in STAGES:
        comp = getattr(pipe, stage)
        ef = getattr(comp, "ef", None) if comp is not None else None
        if ef is None:
            continue
        if isinstance(ef, str):
            package = importlib.import_module(type(comp).__module__.split(".")[0])
            resolve = getattr(package, "resolve_error_formula", None)
            if resolve is None:
                continue
            ef = resolve(ef)
        if not callable(ef) or getattr(ef, "needs_true_data", False):
            continue
        g_in, _, g_f = pipe.shares
        eps_in, eps_f = g_in * release.epsilon, g_f * release.epsilon
        if eps_f <= 0:
            continue
        p, p2 = centred_prefix_sums(release.partition.in_order(release.noisy))
        bounds = release.partition.bounds
        total = float(np.sum(ef(bounds[:-1], bounds[1:], p, p2, eps_in, eps_f)))
        return {"formula": getattr(ef, "name", "") or getattr(ef, "__name__", "custom"),
                "component": comp.name, "sse": total, "mse": total / release.estimate.size}
    return None


def ledger_bars(release: Release) -> dict:
    """Stage -> [(primitive, component, eps)], one segment per (component, primitive), in ledger order."""
    bars: dict[str, dict] = {s: {} for s in SPENDING_STAGES}
    for e in release.ledger:
        seg = bars.setdefault(e.stage, {})
        seg[(e.primitive, e.component)] = seg.get((e.primitive, e.component), 0.0) + e.epsilon
    return {s: [(p, c, eps) for (p, c), eps in seg.items()] for s, seg in bars.items()}


def evaluate(settings: Settings, data: DataCache) -> Snapshot:
    """The views' data for ``settings``; an impossible setting gives a Snapshot with only a message."""
    import time
    t0 = time.perf_counter()
    snap = Snapshot(settings)
    try:
        eps = parse_epsilon(settings.epsilon)
        seed = parse_seed(settings.seed)
        try:
            ds = data.get(settings.dataset)
        except DPHistError as exc:
            raise DPHistError(f"unknown dataset {settings.dataset!r}: {exc}") from None
        x = ds.counts
        pipe = build_pipeline(settings)
        release = pipe.run(x, eps, seed=seed)
        laplace = make_algorithm("identity").run(x, eps, seed=seed)
        w = workloads.make(settings.workload, x.size)
        ident = workloads.identity(x.size)
        truth = np.sort(x) if release.unattributed else x   # an unattributed release estimates sorted counts
        snap.errors = {
            "release": metrics.evaluate_workloads({settings.workload: w, "identity": ident}, truth,
                                                  release.estimate, METRICS),
            "laplace": metrics.evaluate_workloads({settings.workload: w, "identity": ident}, x,
                                                  laplace.estimate, METRICS),
        }
        snap.true, snap.release, snap.laplace = x, release, laplace
        snap.laplace_expected_mse = laplace_expected_mse(w, eps)
        snap.prediction = formula_prediction(release)
        snap.ledger_bars = ledger_bars(release)
    except DPHistError as exc:
        snap = Snapshot(settings, message=str(exc))
    except Exception as exc:   # a plugin's bug must not reach the notebook either
        snap = Snapshot(settings, message=f"internal error ({type(exc).__name__}): {exc}")
    snap.seconds = time.perf_counter() - t0
    return snap
