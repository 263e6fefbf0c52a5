"""``Explorer``: the interactive explorer (ipywidgets) over :mod:`.model` and :mod:`.render`.

Threading: every control change takes a snapshot of the controls (cheap, on
the kernel's thread) and hands it to one worker thread, which computes and
renders and then sets the views' values.  Changes that arrive while the worker
is busy are coalesced: it always computes the newest settings next and skips
the ones in between, so dragging the epsilon slider never queues stale work and
never blocks the kernel.  :meth:`Explorer.wait` blocks until the views show the
latest settings (for code and tests).  Comparisons run on a second thread.
"""
from __future__ import annotations

import dataclasses
import io
import threading
from contextlib import contextmanager

import ipywidgets as W
import numpy as np

from ..datasets import add_data_dir, names as dataset_names
from ..errors import DPHistError
from ..pipeline import STAGES
from ..presets import make_algorithm
from ..registry import default_registry
from . import model, render
from .model import ARRAY, CUSTOM, NONE, WORKLOADS, DataCache, Settings, Snapshot

EPS_MIN_EXP, EPS_MAX_EXP = -3, 1
DEFAULT_DATASET = "flights-dep-delay"
DEFAULT_COMPARE = ("identity", "uniform", "Hb", "DAWA", "AHP", "sDAWA")
SWEEP_EPSILONS = (0.01, 0.03, 0.1, 0.3, 1.0)
SEED_HELP = ("Seed: empty = release mode (fresh OS randomness). A seed gives research mode: "
             "reproducible, and a seeded release must never be published.")


class Explorer:
    """An interactive explorer of DP histogram algorithms.

    >>> ex = Explorer(algorithm="identity", seed=1)   # doctest: +SKIP
    >>> ex.epsilon.value = 1.0; ex.wait(); ex.release.ledger.total   # doctest: +SKIP

    Controls (ipywidgets, attributes): ``dataset`` (a choice list of the
    registered datasets, data folders and uploads), ``upload`` (a counts file:
    ``.npy``, or ``.csv``/``.txt`` with one count per line), ``data_dir``,
    ``algorithm`` (presets, or ``custom``),
    ``initializer``/``sorter``/``partitioner``/``finalizer`` (every registered
    component, runtime registrations included: see :meth:`refresh`),
    ``param_controls`` (``{(owner, name): widget}``: one control per declared
    parameter of the preset and of its components, generated from
    :mod:`dphist.params`: an interval with both ends is a slider, a one-sided
    one a bounded box, ``Options`` a dropdown, ``bool`` a checkbox),
    ``gamma_in``/``gamma_p``/``gamma_f`` (budget shares: moving one rescales
    the other two so that they always sum to 1), ``epsilon`` (log slider) and
    ``epsilon_text`` (typed), ``seed`` (text; empty = release mode),
    ``workload``, ``export_format`` and ``export_button`` (a download link for
    the release, the ledger or the figure).  Views: ``histogram`` (PNG image),
    ``ledger`` and ``errors`` (HTML), ``status``, ``message``, ``download``.
    The latest :class:`~dphist.Release` is ``release``; the latest
    :class:`.model.Snapshot` is ``snapshot``.  Impossible settings leave
    ``release`` as it was and show ``message`` instead of raising.
    """

    def __init__(self, data=None, algorithm: str = "identity", *, dataset: str | None = None,
                 epsilon: float = 0.1, seed=None, workload: str = "prefix", compare=DEFAULT_COMPARE):
        self._data = DataCache(data)
        self.release = None
        self.snapshot: Snapshot | None = None
        self.comparison: dict = {}
        self._syncing = False
        self._base = ""
        self._cond = threading.Condition()
        self._requested = 0          # generation of the newest settings
        self._shown = 0              # generation the views show
        self._pending: Settings | None = None
        self._closed = False
        self.updates = 0             # settings evaluated (fewer than changes: intermediate ones are skipped)
        self.param_controls: dict = {}
        self.exports: dict = {}      # (what, format) -> bytes of the last export
        self.figure = render.HistogramFigure()          #: the figure shown last (a GridFigure for a grid)
        self._figures = {1: self.figure}
        self._build_controls(dataset, epsilon, seed, workload, compare)
        self._build_views()
        self._worker = threading.Thread(target=self._loop, name="dphist-explorer", daemon=True)
        self._worker.start()
        self._jobs = None
        self._select_algorithm(algorithm)
        self._watch()
        self._schedule()

    # ------------------------------------------------------------ building
    def _build_controls(self, dataset, epsilon, seed, workload, compare):
        small = W.Layout(width="150px")
        names = self._dataset_options()
        if dataset is None:
            dataset = ARRAY if self._data.array is not None else DEFAULT_DATASET
        if dataset not in names:           # e.g. a DPBench name: listed, and loaded (or refused) on first use
            names = names + [str(dataset)]
        self.dataset = W.Dropdown(value=str(dataset), options=names, description="dataset")
        self.upload = W.FileUpload(accept=",".join(model.UPLOAD_SUFFIXES), multiple=False,
                                   description="upload counts", layout=W.Layout(width="150px"))
        self.data_dir = W.Text(value="", description="data dir", placeholder="folder of .npy histograms")
        self.add_dir = W.Button(description="add folder", layout=W.Layout(width="100px"))
        self.algorithm = W.Dropdown(options=[CUSTOM] + default_registry.available_names("algorithm"), description="algorithm")
        self.components = {}
        for stage in STAGES:
            self.components[stage] = W.Dropdown(options=self._component_options(stage), description=stage)
        self.initializer, self.sorter = self.components["initializer"], self.components["sorter"]
        self.partitioner, self.finalizer = self.components["partitioner"], self.components["finalizer"]
        self.gamma_in = W.BoundedFloatText(value=0.0, min=0.0, max=1.0, step=0.05, description="gamma_in",
                                           layout=small)
        self.gamma_p = W.BoundedFloatText(value=0.0, min=0.0, max=1.0, step=0.05, description="gamma_p",
                                          layout=small)
        self.gamma_f = W.BoundedFloatText(value=1.0, min=0.0, max=1.0, step=0.05, description="gamma_f",
                                          layout=small)
        self.shares = (self.gamma_in, self.gamma_p, self.gamma_f)
        self.epsilon = W.FloatLogSlider(value=_clamp_eps(epsilon), base=10, min=EPS_MIN_EXP, max=EPS_MAX_EXP,
                                        step=0.05, description="epsilon", readout_format=".3g",
                                        continuous_update=True, layout=W.Layout(width="420px"))
        self.epsilon_text = W.FloatText(value=float(epsilon), description="typed eps", layout=W.Layout(width="180px"))
        self.seed = W.Text(value="" if seed is None else str(seed), description="seed",
                           placeholder="empty = release mode", layout=W.Layout(width="220px"))
        self.workload = W.Dropdown(options=list(WORKLOADS), value=workload if workload in WORKLOADS else "prefix",
                                   description="workload")
        self.param_box = W.VBox([], layout=W.Layout(flex_flow="row wrap"))
        self.export_format = W.Dropdown(options=[f"{what} ({fmt})" for what, fmts in model.EXPORT_FORMATS.items()
                                                 for fmt in fmts], value="release (csv)", description="export",
                                        layout=W.Layout(width="230px"))
        self.export_button = W.Button(description="prepare download", layout=W.Layout(width="150px"))
        self.refresh_button = W.Button(description="refresh components", layout=W.Layout(width="160px"),
                                       tooltip="re-read the registry (components registered at runtime)")
        presets = default_registry.available_names("algorithm")
        self.compare_presets = W.SelectMultiple(options=presets, value=[p for p in compare if p in presets],
                                                description="presets", rows=8)
        self.trials = W.BoundedIntText(value=5, min=1, max=200, description="trials", layout=small,
                                       tooltip="independent runs per preset (and per eps in the sweep)")
        self.compare_button = W.Button(description="compare at this eps", layout=W.Layout(width="170px"))
        self.sweep_button = W.Button(description="error vs eps", layout=W.Layout(width="170px"))

    def _build_views(self):
        self.message = W.HTML(value="")
        self.status = W.HTML(value="")
        width = int(self.figure.fig.get_figwidth() * self.figure.fig.dpi)
        self.histogram = W.Image(format="png", width=width, layout=W.Layout(width=f"{width}px", max_width="100%"))
        self.ledger = W.HTML(value="", layout=W.Layout(width="480px"))
        self.errors = W.HTML(value="", layout=W.Layout(width="600px"))
        self.comparison_status = W.HTML(value="")
        self.progress = W.Box([])
        self.comparison_view = W.Image(format="png", layout=W.Layout(max_width="100%"))
        self.download = W.HTML(value="")
        # CSS classes: stable handles for the browser test and for styling in Voila
        for widget, css in ((self.epsilon, "dphist-epsilon"), (self.histogram, "dphist-histogram"),
                            (self.ledger, "dphist-ledger-view"), (self.errors, "dphist-errors-view"),
                            (self.message, "dphist-message-view"), (self.status, "dphist-status-view"),
                            (self.comparison_view, "dphist-comparison"),
                            (self.comparison_status, "dphist-comparison-status"), (self.upload, "dphist-upload"),
                            (self.param_box, "dphist-params"), (self.export_format, "dphist-export-format"),
                            (self.export_button, "dphist-export-button"), (self.download, "dphist-download"),
                            (self.trials, "dphist-trials"), (self.gamma_in, "dphist-gamma-in"),
                            (self.gamma_p, "dphist-gamma-p"), (self.gamma_f, "dphist-gamma-f"),
                            (self.dataset, "dphist-dataset"), (self.algorithm, "dphist-algorithm")):
            widget.add_class(css)
        seed_row = W.HBox([self.seed, W.HTML(f'<span style="font-size:11px;color:#a05a00">{SEED_HELP}</span>',
                                             layout=W.Layout(width="520px"))])
        controls = W.VBox([
            W.HBox([self.dataset, self.upload, self.data_dir, self.add_dir]),
            W.HBox([self.algorithm, self.workload, self.refresh_button]),
            W.HBox([self.initializer, self.sorter]), W.HBox([self.partitioner, self.finalizer]),
            self.param_box,
            W.HBox([self.gamma_in, self.gamma_p, self.gamma_f,
                    W.HTML('<span style="font-size:11px">moving one share rescales the others (sum 1)</span>')]),
            W.HBox([self.epsilon, self.epsilon_text]), seed_row,
        ])
        exports = W.HBox([self.export_format, self.export_button, self.download])
        main = W.VBox([controls, self.message, self.status, self.histogram, W.HBox([self.ledger, self.errors]),
                       exports])
        compare = W.VBox([W.HBox([self.compare_presets, W.VBox([self.trials, self.compare_button, self.sweep_button])]),
                          self.progress, self.comparison_status, self.comparison_view])
        self.widget = W.Tab(children=[main, compare])
        self.widget.set_title(0, "explore")
        self.widget.set_title(1, "compare")

    def _ipython_display_(self):
        from IPython.display import display
        display(self.widget)

    # ------------------------------------------------------------ options
    def _dataset_options(self) -> list[str]:
        try:
            found = dataset_names()
        except DPHistError:          # e.g. DPHIST_DATA names a missing folder: listed names only
            found = default_registry.names("dataset")
        return ([ARRAY] if self._data.array is not None else []) + found + list(self._data.uploads)

    def _component_options(self, stage: str) -> list[str]:
        found = default_registry.names(stage)
        return [NONE] + found if stage in ("initializer", "sorter") else found

    def refresh(self) -> None:
        """Re-read the registry and data folders: components, presets and datasets registered since."""
        with self._quiet():
            for stage, dd in self.components.items():
                _set_options(dd, self._component_options(stage))
            _set_options(self.algorithm, [CUSTOM] + default_registry.available_names("algorithm"))
            _set_options(self.dataset, self._dataset_options())
            presets = default_registry.available_names("algorithm")
            keep = [p for p in self.compare_presets.value if p in presets]
            self.compare_presets.options = presets
            self.compare_presets.value = keep

    # ------------------------------------------------------------ wiring
    @contextmanager
    def _quiet(self):
        """Set controls from code without their observers reacting (one update is scheduled after)."""
        self._syncing = True
        try:
            yield
        finally:
            self._syncing = False

    def _watch(self):
        self.algorithm.observe(self._on_algorithm, names="value")
        for dd in self.components.values():
            dd.observe(self._on_component, names="value")
        for share in self.shares:
            share.observe(self._on_share, names="value")
        self.epsilon.observe(self._on_slider, names="value")
        self.epsilon_text.observe(self._on_eps_text, names="value")
        for w in (self.dataset, self.seed, self.workload):
            w.observe(self._on_change, names="value")
        self.add_dir.on_click(self._on_add_dir)
        self.upload.observe(self._on_upload, names="value")
        self.export_button.on_click(lambda _: self.export())
        self.refresh_button.on_click(lambda _: (self.refresh(), self._schedule()))
        self.compare_button.on_click(lambda _: self.compare())
        self.sweep_button.on_click(lambda _: self.error_vs_epsilon())

    def _select_algorithm(self, name: str) -> None:
        """Set the four dropdowns and the shares from the preset ``name`` (message if unknown)."""
        if name == CUSTOM:
            return
        try:
            stages, shares = model.preset_stage_names(name)
        except DPHistError as exc:
            self._pending_message = str(exc)
            return
        with self._quiet():
            if name not in self.algorithm.options:
                self.algorithm.options = list(self.algorithm.options) + [name]
            self.algorithm.value = name
            self._base = name
            for stage, comp in zip(STAGES, stages):
                dd = self.components[stage]
                if comp not in dd.options:
                    dd.options = list(dd.options) + [comp]
                dd.value = comp
            for w, s in zip(self.shares, shares):
                w.value = round(s, 12)        # 0.1, not 0.09999999999999998 (matched with tolerance)
        self._build_param_controls(keep_preset=False)

    # ------------------------------------------------------------ parameter controls
    def _build_param_controls(self, keep_preset: bool = True) -> None:
        """One control per declared parameter of the preset (unless custom) and of the chosen components.

        ``keep_preset`` keeps the preset parameters' current values (they rebuild the components, whose
        controls then show the values the preset gave them).  An impossible setting keeps the old controls.
        """
        kept = {k: v for k, v in self._param_values().items() if k[0] == "preset"} if keep_preset else {}
        settings = self.settings()
        try:
            specs = model.param_specs(dataclasses.replace(settings, params=tuple(kept.items())))
        except DPHistError:
            return
        controls = {}
        for spec in specs:
            widget = _param_widget(spec)
            if spec.key in kept:
                widget.value = kept[spec.key]
            widget.observe(lambda change, key=spec.key: self._on_param(key, change), names="value")
            controls[spec.key] = widget
        old = list(self.param_controls.values())
        self.param_controls = controls
        groups = {}
        for (owner, _), widget in controls.items():
            groups.setdefault(owner, []).append(widget)
        self.param_box.children = [W.HBox([W.HTML(f"<b>{owner}</b>", layout=W.Layout(width="80px"))] + ws,
                                          layout=W.Layout(flex_flow="row wrap"))
                                   for owner, ws in groups.items()]
        for widget in old:
            widget.close()

    def _param_values(self) -> dict:
        return {key: w.value for key, w in self.param_controls.items()}

    def _on_param(self, key, change):
        if self._syncing:
            return
        if key[0] == "preset" and self.algorithm.value != CUSTOM:
            # a preset parameter may change the shares (DAWA's ratio) and the components' values
            own = {k[1]: v for k, v in self._param_values().items() if k[0] == "preset"}
            try:
                _, shares = model.preset_stage_names(self.algorithm.value, **own)
            except DPHistError as exc:
                self._pending_message = str(exc)
            else:
                with self._quiet():
                    for w, s in zip(self.shares, shares):
                        w.value = round(s, 12)
                    self._build_param_controls(keep_preset=True)
        self._schedule()

    def _on_share(self, change):
        if self._syncing:
            return
        index = self.shares.index(change["owner"])
        new = model.renormalise_shares([w.value for w in self.shares], index, change["new"])
        with self._quiet():
            for w, s in zip(self.shares, new):
                w.value = s
        self._on_component(change)

    def _on_algorithm(self, change):
        if self._syncing:
            return
        self._select_algorithm(change["new"])
        self._schedule()

    def _on_component(self, change):
        if self._syncing:
            return
        if self.algorithm.value != CUSTOM:
            with self._quiet():
                self.algorithm.value = CUSTOM     # keeps _base: the preset's parameters stay
        if change.get("owner") in self.components.values():
            with self._quiet():
                self._build_param_controls()
        self._schedule()

    def _on_slider(self, change):
        if self._syncing:
            return
        with self._quiet():
            self.epsilon_text.value = float(change["new"])
        self._schedule()

    def _on_eps_text(self, change):
        if self._syncing:
            return
        value = change["new"]
        if value is not None and value > 0:
            with self._quiet():
                self.epsilon.value = _clamp_eps(value)   # the slider shows the nearest value it can
        self._schedule()

    def _on_change(self, change):
        if not self._syncing:
            self._schedule()

    def _on_upload(self, change):
        """A counts file from the browser becomes a dataset (listed and chosen); a bad file, a message."""
        files = change["new"]
        if not files:
            return
        item = files[0]
        try:
            ds = model.dataset_from_upload(item["name"], bytes(item["content"]))
        except DPHistError as exc:
            self.message.value = render.message_html(str(exc), head="Cannot use this file")
            return
        except Exception as exc:          # never a traceback in the page
            self.message.value = render.message_html(f"could not read {item.get('name')!r} "
                                                     f"({type(exc).__name__}: {exc})", head="Cannot use this file")
            return
        self._data.add(ds)
        self.message.value = ""
        with self._quiet():
            _set_options(self.dataset, self._dataset_options())
            self.dataset.value = ds.name
        self._schedule()

    def _on_add_dir(self, _):
        try:
            add_data_dir(self.data_dir.value)
            _set_options(self.dataset, self._dataset_options())
            self.message.value = ""
        except DPHistError as exc:
            self.message.value = render.message_html(str(exc))

    # ------------------------------------------------------------ updates
    def settings(self) -> Settings:
        """The controls as a :class:`.model.Settings` (the epsilon used is the typed one)."""
        return Settings(dataset=self.dataset.value, algorithm=self.algorithm.value,
                        components=tuple(self.components[s].value for s in STAGES),
                        shares=tuple(float(w.value) for w in self.shares), epsilon=self.epsilon_text.value,
                        seed=self.seed.value, workload=self.workload.value, base=self._base,
                        params=tuple(self._param_values().items()))

    _pending_message = ""

    def _schedule(self) -> None:
        settings = self.settings()
        with self._cond:
            self._requested += 1
            self._pending = settings
            self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                settings, generation = self._pending, self._requested
                self._pending = None
            try:
                self.updates += 1
                self._show(model.evaluate(settings, self._data))
            except Exception as exc:    # rendering must not kill the worker; say what happened
                self.message.value = render.message_html(f"internal error ({type(exc).__name__}): {exc}")
            with self._cond:
                self._shown = generation
                self._cond.notify_all()

    def _show(self, snap: Snapshot) -> None:
        if self._pending_message:        # e.g. an unknown algorithm given to the constructor
            snap = Snapshot(snap.settings, message=self._pending_message)
            self._pending_message = ""
        self.snapshot = snap
        if not snap.ok:
            self.message.value = render.message_html(snap.message)
            return
        self.release = snap.release
        self.figure = render.figure_for(snap, self._figures)   # heat maps for a grid, lines for a vector
        self.figure.update(snap)
        self.histogram.value = self.figure.png()
        self.ledger.value = render.ledger_html(snap)
        self.errors.value = render.errors_html(snap)
        self.status.value = render.status_html(snap)
        self.message.value = ""

    def export(self, choice: str | None = None) -> bytes | None:
        """The latest release, ledger or figure as a file (``"release (csv)"``, ``"release (npy)"``,
        ``"ledger (json)"``, ``"figure (png)"``, ``"figure (svg)"``), offered as a download link in
        ``download``; returns the bytes (None, with a message, when there is nothing to export).

        Release mode exports carry no seed (nothing that reproduces the noise); research mode's name
        their seed and say not to publish.
        """
        import base64
        import html as _html
        choice = choice or self.export_format.value
        what, fmt = choice.replace(")", "").split(" (")
        snap = self.snapshot
        if snap is None or not snap.ok or self.release is None:
            self.download.value = render.message_html("nothing to export: no release is shown")
            return None
        rel = self.release
        if what == "release":
            data = model.export_release(rel, fmt)
        elif what == "ledger":
            data = model.export_ledger(rel)
        else:
            data = self.figure.export(fmt)
        self.exports[what, fmt] = data
        mime = {"csv": "text/csv", "npy": "application/octet-stream", "json": "application/json",
                "png": "image/png", "svg": "image/svg+xml"}[fmt]
        name = f"dphist-{rel.spec.get('name', 'release')}-eps{rel.epsilon:g}-{rel.mode}-{what}.{fmt}"
        href = f"data:{mime};base64,{base64.b64encode(data).decode()}"
        self.download.value = (f'<a class="dphist-download-link" download="{_html.escape(name)}" '
                               f'href="{href}">download {_html.escape(name)}</a> ({len(data):,} bytes)')
        return data

    def wait(self, timeout: float = 30.0) -> Snapshot | None:
        """Block until the views show the latest settings; the latest snapshot (None on timeout)."""
        with self._cond:
            done = self._cond.wait_for(lambda: self._shown >= self._requested or self._closed, timeout)
        return self.snapshot if done else None

    def close(self) -> None:
        """Stop the worker thread and close the widgets."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._jobs is not None:
            self._jobs.shutdown(wait=False)
        for widget in _descendants(self.widget):   # every control and view: no comm left open
            widget.close()
        for widget in self.param_controls.values():
            widget.close()

    # ------------------------------------------------------------ comparison
    def _job(self, fn):
        from concurrent.futures import ThreadPoolExecutor
        if self._jobs is None:
            self._jobs = ThreadPoolExecutor(1, thread_name_prefix="dphist-explorer-compare")

        def guarded():
            try:
                return fn()
            except DPHistError as exc:
                self.comparison_status.value = render.message_html(str(exc))
            except Exception as exc:
                self.comparison_status.value = render.message_html(f"internal error ({type(exc).__name__}): {exc}")
        return self._jobs.submit(guarded)

    def compare(self):
        """The chosen presets side by side at the current eps (runs on a thread; returns a Future)."""
        settings, names = self.settings(), list(self.compare_presets.value)
        return self._job(lambda: self._compare(settings, names))

    def _compare(self, settings: Settings, names: list[str]):
        from . import compare
        self.comparison_status.value = "running..."
        result = compare.presets_at_epsilon(names, settings, self._data, trials=int(self.trials.value))
        self.comparison = result
        self.comparison_view.value = result["png"]
        self.comparison_status.value = result["html"]
        return result

    def error_vs_epsilon(self, epsilons=SWEEP_EPSILONS):
        """Error against eps for the chosen presets through the experiment engine (a thread; a Future)."""
        settings, names, trials = self.settings(), list(self.compare_presets.value), int(self.trials.value)
        return self._job(lambda: self._sweep(settings, names, trials, epsilons))

    def _sweep(self, settings, names, trials, epsilons):
        from . import compare
        self.comparison_status.value = "running the sweep..."

        def bar(**kwargs):                     # the engine's tqdm bar, as a widget we place ourselves
            from tqdm.notebook import tqdm
            b = tqdm(display=False, **kwargs)
            self.progress.children = [b.container]
            return b
        result = compare.sweep(names, settings, self._data, trials, epsilons, progress=bar)
        self.comparison = result
        self.comparison_view.value = result["png"]
        self.comparison_status.value = result["html"]
        return result


def _param_widget(spec: model.ParamSpec) -> W.Widget:
    """The ipywidget for one declared parameter (see :func:`.model.spec_for`)."""
    label = dict(description=spec.name, style={"description_width": "initial"})
    if spec.control == "checkbox":
        widget = W.Checkbox(value=bool(spec.value), indent=False, **label)
    elif spec.control == "dropdown":
        widget = W.Dropdown(options=list(spec.options), value=spec.value, layout=W.Layout(width="230px"), **label)
    elif spec.control == "slider":
        cls = W.IntSlider if spec.kind is int else W.FloatSlider
        widget = cls(value=spec.value, min=spec.low, max=spec.high, step=1 if spec.kind is int else 0.01,
                     continuous_update=False, layout=W.Layout(width="300px"), **label)
    else:
        cls = W.BoundedIntText if spec.kind is int else W.BoundedFloatText
        widget = cls(value=spec.value, min=spec.low, max=spec.high, layout=W.Layout(width="190px"), **label)
    widget.add_class(f"dphist-param-{spec.owner}-{spec.name}")
    return widget


def _descendants(widget: W.Widget) -> list[W.Widget]:
    out = [widget]
    for child in getattr(widget, "children", ()):
        out += _descendants(child)
    return out


def _clamp_eps(value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return 0.1
    if not np.isfinite(v) or v <= 0:
        return 10.0 ** EPS_MIN_EXP
    return float(min(max(v, 10.0 ** EPS_MIN_EXP), 10.0 ** EPS_MAX_EXP))


def _set_options(dropdown: W.Dropdown, options: list[str]) -> None:
    """New options, keeping the current value (added when it is no longer listed)."""
    value = dropdown.value
    if list(dropdown.options) == options:
        return
    if value is not None and value not in options:
        options = options + [value]
    dropdown.options = options
    dropdown.value = value


def figure_png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    return buf.getvalue()
