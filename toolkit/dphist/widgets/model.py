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

import dataclasses
import importlib
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import metrics, workloads
from ..datasets import Dataset, load as load_dataset
from ..errors import DPHistError, InvalidParameter
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
    #: parameter controls: ``((owner, name), value)`` pairs, owner ``"preset"`` or a stage
    params: tuple = ()


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
    #: the release's stated error (:func:`stated_summary`): kind, per-bin band, expected MSE on the workload
    stated: dict = field(default_factory=dict)
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
        self.uploads: dict[str, Dataset] = {}     #: uploaded files by name (kept, never evicted)

    def add(self, ds: Dataset) -> None:
        """Keep an uploaded dataset under its name (a later upload of the same name replaces it)."""
        with self._lock:
            self.uploads[ds.name] = ds

    def get(self, name: str) -> Dataset:
        if name == ARRAY and self.array is not None:
            return self.array
        if name in self.uploads:
            return self.uploads[name]
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


def preset_stage_names(algorithm: str, **params) -> tuple[tuple, tuple]:
    """The component names (NONE for an empty slot) and shares of a preset (with its own ``params``)."""
    pipe = make_algorithm(algorithm, **params)
    names = tuple(NONE if getattr(pipe, s) is None else getattr(pipe, s).name for s in STAGES)
    return names, tuple(pipe.shares)


def _split_params(settings: Settings) -> tuple[dict, dict]:
    """``(preset parameters, {stage: component parameters})`` from the parameter controls."""
    own, per_stage = {}, {}
    for (owner, name), value in settings.params:
        if owner == "preset":
            own[name] = value
        else:
            per_stage.setdefault(owner, {})[name] = value
    return own, per_stage


def _changed(component, params: dict) -> dict:
    """The declared parameters of ``params`` whose value differs from the component's."""
    declared = type(component).declared_constraints()
    current = component.get_params()
    return {k: v for k, v in params.items() if k in declared and not _equal(current.get(k), v)}


def _equal(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:      # e.g. arrays
        return False


def build_pipeline(settings: Settings) -> Pipeline:
    """The preset itself when the controls still match it; otherwise the four dropdowns and shares.

    The parameter controls apply on top: the preset's own parameters (``make_algorithm(name, ratio=...)``),
    then each component's declared parameters (a component is rebuilt with the changed values).  A custom
    pipeline keeps a preset's parameters for every stage whose component is unchanged (e.g. the error
    formula of ``sortaki.dp``), and uses default parameters for the others.
    """
    from ..presets import preset_params
    own, per_stage = _split_params(settings)
    preset = None
    source = settings.algorithm if settings.algorithm != CUSTOM else settings.base
    if source:
        accepted = preset_params(default_registry.get("algorithm", source))
        preset = make_algorithm(source, **{k: v for k, v in own.items() if k in accepted})
        names = tuple(NONE if getattr(preset, s) is None else getattr(preset, s).name for s in STAGES)
        if (settings.algorithm != CUSTOM and names == tuple(settings.components)
                and _same_shares(preset.shares, settings.shares)):
            parts = []
            for stage in STAGES:
                comp = getattr(preset, stage)
                changed = _changed(comp, per_stage.get(stage, {})) if comp is not None else {}
                parts.append(comp.clone(**changed) if changed else comp)
            if all(a is getattr(preset, s) for a, s in zip(parts, STAGES)):
                return preset
            return Pipeline(*parts, shares=preset.shares, name=preset.name, dims=preset.dims)
    parts = []
    for stage, name in zip(STAGES, settings.components):
        if name in (None, "", NONE):
            parts.append(None)
            continue
        kept = getattr(preset, stage) if preset is not None else None
        if kept is None or kept.name != name:
            kept = default_registry.get(stage, name)()
        changed = _changed(kept, per_stage.get(stage, {}))
        parts.append(kept.clone(**changed) if changed else kept)
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


#: the workloads the explorer offers that have a form over a grid: single cells and 2-D prefix rectangles
GRID_WORKLOADS = ("identity", "prefix")


def workload_pair(name: str, shape: tuple):
    """The chosen workload and the identity workload over a vector of ``shape[0]`` bins, or their
    rectangle forms over a grid (:data:`GRID_WORKLOADS`; another workload over a grid is refused by name)."""
    if len(shape) == 1:
        return workloads.make(name, shape[0]), workloads.identity(shape[0])
    if name not in GRID_WORKLOADS:
        raise InvalidParameter(f"workload {name!r} is a set of ranges over a vector; on a "
                               f"{' x '.join(map(str, shape))} grid choose {' or '.join(GRID_WORKLOADS)} "
                               "(cells, or 2-D prefix rectangles)")
    return workloads.make_rectangles(name, shape), workloads.make_rectangles("identity", shape)


def _query_sizes(workload) -> np.ndarray:
    """Bins per query: a range's length, or a rectangle's number of cells."""
    sizes = getattr(workload, "lengths", None)
    return np.asarray(workload.sizes if sizes is None else sizes)


def laplace_expected_mse(workload, epsilon: float) -> float:
    """Expected per-query MSE of the Laplace mechanism: a range of L bins (a rectangle of L cells) sums
    L draws of variance 2/eps^2."""
    n = workload.n
    if isinstance(workload, workloads.AllRanges):
        mean_len = (n + 2) / 3.0     # sum_L L (n - L + 1) / (n (n + 1) / 2)
    else:
        mean_len = float(np.mean(_query_sizes(workload)))
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
        raw = total / release.estimate.size
        return {"formula": getattr(ef, "name", "") or getattr(ef, "__name__", "custom"),
                "component": comp.name, "sse": max(total, 0.0), "mse": max(raw, 0.0), "raw_mse": raw,
                "clamped": raw < 0, "note": PREDICTION_NOTE}
    return None


#: why an error formula's prediction is shown as max(0, value), and biased low (measured: see the tests)
PREDICTION_NOTE = (
    "The formula is evaluated on H~, the same noisy counts that chose the order and the groups. An unbiased "
    "estimate such as UEE (SORTaki Eq. 5) subtracts the noise variance; it is unbiased only for groups fixed "
    "independently of H~. Sorting by H~ and minimising the formula over groupings pick groups whose noisy "
    "values agree, so on the chosen groups it is biased low and can fall below 0 although the release's "
    "error is positive. A mean squared error cannot be negative: the prediction is shown as "
    "max(0, estimate), with the raw estimate beside it.")


#: the explorer draws the stated band when the statement is this cheap (columns of a non-diagonal strategy)
BAND_COLUMNS = 1024
#: and states the workload's expected error when queries x columns and the queries' bins are at most this
STATED_WORK = 2_000_000


def stated_summary(release: Release, workload, level: float = 0.95) -> dict:
    """The release's stated error for the views: ``kind``, ``bias``, the per-bin Chebyshev band at
    ``level`` (``low``, ``high``; guaranteed for the stated kind) and ``mse`` (the mean stated variance
    over the workload's queries: the expected MSE when the release is unbiased), or ``reason`` when
    there is none or it would take seconds (a strategy of more than :data:`BAND_COLUMNS` columns)."""
    stated = release.stated
    if stated is None:
        return {"reason": release.stated_reason}
    out = {"kind": stated.kind, "bias": stated.bias or "", "level": level}
    if stated.n_columns > BAND_COLUMNS and not getattr(stated, "diagonal_gram", False):
        out["reason"] = (f"not drawn here: {stated.n_columns:,} strategy columns (per-bin variances take seconds; "
                         "Release.bin_variances() computes them)")
        return out
    from ..plots import release_bands
    (low, high, label), _ = release_bands(release, level)
    out.update(low=low, high=high, label=label)
    if isinstance(workload, workloads.RectangleWorkload):
        out["reason"] = (f"the stated error of the rectangles of {workload.name!r} is not computed here "
                         "(Release.bin_variances() gives the cells' variances)")
    elif max(len(workload) * stated.n_columns, int(np.sum(_query_sizes(workload)))) <= STATED_WORK:
        out["mse"] = float(np.mean(release.variance(workload)))
    else:
        out["reason"] = (f"the stated error of the {len(workload):,} queries of {workload.name!r} over "
                         f"{stated.n_columns:,} columns is not computed here (Release.variance computes it)")
    return out


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
        w, ident = workload_pair(settings.workload, x.shape)
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
        snap.stated = stated_summary(release, w)
    except DPHistError as exc:
        snap = Snapshot(settings, message=str(exc))
    except Exception as exc:   # a plugin's bug must not reach the notebook either
        snap = Snapshot(settings, message=f"internal error ({type(exc).__name__}): {exc}")
    snap.seconds = time.perf_counter() - t0
    return snap


# ------------------------------------------------------------------ parameter controls
@dataclass(frozen=True)
class ParamSpec:
    """One declared parameter as a control: ``control`` is ``"slider"`` (an interval with both ends),
    ``"number"`` (a one-sided interval: a bounded box), ``"dropdown"`` (Options) or ``"checkbox"`` (bool)."""

    owner: str            #: "preset" or a stage
    name: str
    control: str
    kind: type = float    #: int or float for sliders and numbers
    low: float | None = None
    high: float | None = None
    options: tuple = ()
    value: Any = None     #: the current (default or preset) value

    @property
    def key(self) -> tuple[str, str]:
        return self.owner, self.name


#: the widest range a one-sided interval's box offers (a box still refuses what the declaration refuses)
NUMBER_CEILING = 1e9


def spec_for(owner: str, name: str, alternatives, value) -> ParamSpec | None:
    """The control for a declared parameter whose current value is ``value``; None when no control fits
    (a callable, a workload object, None where a number is declared: those keep their value)."""
    from ..params import Interval, Options, _Boolean
    for c in alternatives:
        if not c.accepts(value):
            continue
        if isinstance(c, _Boolean):
            return ParamSpec(owner, name, "checkbox", value=bool(value))
        if isinstance(c, Options):
            options = tuple(v for v in c.values if isinstance(v, (str, int, float, bool)))
            return ParamSpec(owner, name, "dropdown", options=options, value=value) if options else None
        if isinstance(c, Interval):
            step = 1 if c.kind is int else 0.01
            low = c.low if c.low is not None else -NUMBER_CEILING
            high = c.high if c.high is not None else NUMBER_CEILING
            if c.low is not None and c.closed in ("right", "neither"):
                low = c.low + step
            if c.high is not None and c.closed in ("left", "neither"):
                high = c.high - step
            control = "slider" if c.low is not None and c.high is not None else "number"
            return ParamSpec(owner, name, control, kind=c.kind, low=low, high=high,
                             value=c.kind(value))
    return None


def preset_param_specs(algorithm: str) -> list[ParamSpec]:
    """Controls for a preset's own declared parameters (DAWA's ``ratio``, ``branching``, ...), at their defaults."""
    from ..presets import preset_params
    factory = default_registry.get("algorithm", algorithm)
    declared = getattr(factory, "param_constraints", {}) or {}
    defaults = preset_params(factory)
    specs = (spec_for("preset", name, alts, defaults.get(name)) for name, alts in declared.items()
             if name in defaults)
    return [s for s in specs if s is not None]


def component_param_specs(components) -> list[ParamSpec]:
    """Controls for every declared parameter of ``components`` (stage -> component or None), at their values."""
    out = []
    for stage, comp in components.items():
        if comp is None:
            continue
        values = comp.get_params()
        for name, alts in type(comp).declared_constraints().items():
            if name in values:
                spec = spec_for(stage, name, alts, values[name])
                if spec is not None:
                    out.append(spec)
    return out


def param_specs(settings: Settings) -> list[ParamSpec]:
    """The controls of a setting: the preset's own parameters (unless custom), then those of the chosen
    components, valued as the preset (with its parameters) built them, or at their defaults.  The setting
    need not be runnable (e.g. shares not yet moved): only the components are built."""
    from ..presets import preset_params
    own, _ = _split_params(settings)
    specs = [] if settings.algorithm == CUSTOM else preset_param_specs(settings.algorithm)
    source = settings.algorithm if settings.algorithm != CUSTOM else settings.base
    preset = None
    if source:
        accepted = preset_params(default_registry.get("algorithm", source))
        preset = make_algorithm(source, **{k: v for k, v in own.items() if k in accepted})
    components = {}
    for stage, name in zip(STAGES, settings.components):
        if name in (None, "", NONE):
            components[stage] = None
            continue
        kept = getattr(preset, stage) if preset is not None else None
        components[stage] = kept if kept is not None and kept.name == name else default_registry.get(stage, name)()
    return specs + component_param_specs(components)


# ------------------------------------------------------------------ budget shares
def renormalise_shares(shares, index: int, value: float) -> tuple[float, float, float]:
    """Shares after share ``index`` is moved to ``value``: the other two keep their ratio and take 1 - value.

    When the other two are both 0 the rest goes to the finalizer (or, when the finalizer moved, the
    initializer).  The result is three numbers in [0, 1] summing to 1 (up to rounding at 1e-12), so a
    moving share never makes the budget exceed epsilon.
    """
    value = min(max(float(value), 0.0), 1.0)
    others = [i for i in range(3) if i != index]
    rest = 1.0 - value
    weights = [max(float(shares[i]), 0.0) for i in others]
    total = sum(weights)
    out = [0.0, 0.0, 0.0]
    out[index] = value
    if total <= 0:
        out[2 if index != 2 else 0] = rest
    else:
        first = round(rest * weights[0] / total, 12)
        out[others[0]] = first
        out[others[1]] = max(round(rest - first, 12), 0.0)
    return tuple(out)


# ------------------------------------------------------------------ uploaded files
UPLOAD_SUFFIXES = (".npy", ".csv", ".txt")
MAX_UPLOAD_BYTES = 64 * 2 ** 20


def dataset_from_upload(filename: str, content: bytes) -> Dataset:
    """A counts file as :func:`dphist.io.read_histogram` reads it (``.npy``, or ``.csv``/``.txt`` with one count
    per line), from an upload's bytes; a clear DPHistError for anything it cannot use."""
    import os
    import tempfile
    from pathlib import Path
    from ..errors import InputFileError
    from ..io import read_histogram
    name = Path(str(filename)).name
    suffix = Path(name).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise InputFileError(f"{name}: unsupported file type {suffix or '(none)'!r}; upload a counts file "
                             f"({', '.join(UPLOAD_SUFFIXES)}: one count per line, or a .npy array)")
    if len(content) > MAX_UPLOAD_BYTES:
        raise InputFileError(f"{name}: {len(content) / 2 ** 20:.0f} MiB is more than the explorer takes "
                             f"({MAX_UPLOAD_BYTES // 2 ** 20} MiB)")
    with tempfile.TemporaryDirectory(prefix="dphist-upload-") as folder:
        path = Path(folder) / name
        path.write_bytes(bytes(content))
        try:
            counts = read_histogram(path)
        except DPHistError as exc:     # the message names the temporary path: name the upload instead
            text = str(exc).replace(str(path), name).replace(folder + os.sep, "")
            raise type(exc)(text if name in text else f"{name}: {text}") from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise InputFileError(f"{name}: not a counts file ({type(exc).__name__}: {exc})") from None
    return Dataset(f"upload:{name}", counts, f"uploaded file {name}", "bins 0..n-1")


# ------------------------------------------------------------------ exports
EXPORT_FORMATS = {"release": ("csv", "npy"), "ledger": ("json",), "figure": ("png", "svg")}


def export_release(release: Release, fmt: str) -> bytes:
    """The released histogram as CSV (comment header: mode, algorithm, epsilon, warnings) or NPY.

    The header is the command line's (:func:`dphist.cli._output_header`): a seed only in research mode.
    """
    import io as _io
    from ..cli import _output_header
    if fmt == "npy":
        buf = _io.BytesIO()
        np.save(buf, np.asarray(release.estimate))
        return buf.getvalue()
    if fmt == "csv":
        buf = _io.StringIO()
        np.savetxt(buf, release.estimate, fmt="%.10g", header=_output_header(release, release.spec.get("name", "")))
        return buf.getvalue().encode()
    raise DPHistError(f"a release exports as {' or '.join(EXPORT_FORMATS['release'])}, not {fmt!r}")


def export_ledger(release: Release) -> bytes:
    """The ledger as JSON: mode, epsilon, algorithm, warnings and every measurement (no seed in release mode)."""
    import json
    record = release.to_dict()
    record.pop("estimate", None)
    record.pop("timings", None)
    return (json.dumps(record, indent=1, default=_json_default) + "\n").encode()


def _json_default(obj):
    if isinstance(obj, np.generic):
        return obj.item()
    return str(obj)
