"""The explorer's views: a matplotlib figure of the histograms (PNG) and HTML for the ledger and errors.

Why PNG bytes into an ``ipywidgets.Image`` and HTML strings, not ``ipympl``:
rendering happens in the explorer's worker thread, and setting a widget's
value from a thread is safe where ``display()``/``Output`` capture is not; a
PNG also survives in a committed notebook, in Voila and in a screenshot
without a JavaScript extension.  The ledger and error bars are HTML/CSS
(microseconds to build) so that matplotlib draws only the two histogram
panels, which keeps an update under the 200 ms target (see
``benchmarks/bench_widgets.py``).
"""
from __future__ import annotations

import html
import io
import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .model import SPENDING_STAGES, Snapshot

#: above this many bins the histogram panels show means of consecutive bins (display only)
MAX_DRAWN_BINS = 4096
_TRUE, _RELEASED, _SHADE = "#222222", "#d62728", "#dde6f3"
_PRIMITIVE_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def _block_means(values: np.ndarray, k: int) -> np.ndarray:
    if k <= 1:
        return values
    m = values.size // k * k
    head = values[:m].reshape(-1, k).mean(axis=1)
    return head if m == values.size else np.append(head, values[m:].mean())


def nice_ceiling(v: float) -> float:
    """The smallest of 1, 2, 5 x 10^k at least ``v`` (axis limits that change only in steps)."""
    if v <= 0:
        return 0.0
    k = math.floor(math.log10(v))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * 10.0 ** k >= v * (1 - 1e-12):
            return m * 10.0 ** k
    return 10.0 ** (k + 1)


class HistogramFigure:
    """Two panels kept between updates; only the lines and the shading are redrawn (blitting).

    Top: true and released histograms in the original domain order, each group
    of the release's partition shaded alternately.  Bottom: the same in the
    partition's order (the sorter's order), where every group is a run.
    ``data`` holds exactly what was plotted, for tests.

    Speed: axes, ticks and titles are drawn once and kept as a background
    bitmap; an update restores it and draws the data artists only, unless the
    axis limits (rounded to 1-2-5 steps, so they change rarely) or the titles
    changed.  Tick text is most of matplotlib's drawing time.
    """

    def __init__(self, width: float = 9.5, height: float = 4.6, dpi: int = 80):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        self.fig = Figure(figsize=(width, height), dpi=dpi)
        self.canvas = FigureCanvasAgg(self.fig)
        self.fig.subplots_adjust(left=0.07, right=0.985, top=0.91, bottom=0.09, hspace=0.45)
        self.axes = {"original": self.fig.add_subplot(2, 1, 1), "partition": self.fig.add_subplot(2, 1, 2)}
        self.lines, self.shades = {}, {}
        for key, ax in self.axes.items():
            self.shades[key] = ax.imshow(np.zeros((1, 1)), aspect="auto", cmap="Greys", vmin=0, vmax=8,
                                         interpolation="nearest", extent=(0, 1, 0, 1), animated=True,
                                         transform=ax.get_xaxis_transform())
            # antialiasing off: the lines are step traces of thousands of points (3x faster to draw)
            self.lines[key, "true"], = ax.plot([], [], color=_TRUE, lw=0.8, antialiased=False, animated=True)
            self.lines[key, "released"], = ax.plot([], [], color=_RELEASED, lw=0.7, alpha=0.8, antialiased=False,
                                                   animated=True)
            for side in ("low", "high"):    # the stated error's band (Chebyshev, guaranteed for its kind)
                self.lines[key, side], = ax.plot([], [], color=_RELEASED, lw=0.5, alpha=0.45, ls="--",
                                                 antialiased=False, animated=True)
            ax.tick_params(labelsize=8)
            ax.xaxis.set_major_locator(MaxNLocator(6, integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(4))
        from matplotlib.lines import Line2D   # proxies: the legend would skip the animated lines
        self.legend = self.axes["original"].legend(
            [Line2D([], [], color=_TRUE), Line2D([], [], color=_RELEASED),
             Line2D([], [], color=_RELEASED, lw=0.5, alpha=0.45, ls="--")],
            ["true", "released", "95% band (stated error)"], loc="upper right", fontsize=8, ncol=3)
        self.legend.set_animated(True)        # drawn after the shading, which would cover it
        self.axes["partition"].set_xlabel("position", fontsize=8)
        self._background = None
        self._frame_key = None
        self.redraws = 0             #: full redraws (background) so far
        self.data: dict = {}

    def update(self, snap: Snapshot) -> None:
        rel = snap.release
        x = snap.true.astype(float)
        est = rel.estimate
        part = rel.partition
        truth_original = np.sort(x) if rel.unattributed else x
        order = part.order
        # groups shaded alternately; singletons (every bin its own group) are left unshaded
        grouped = part.n_groups < part.n_bins
        shade_original = (part.labels() % 2).astype(float) if grouped else np.zeros(x.size)
        position_group = np.repeat(np.arange(part.n_groups), part.sizes)
        shade_partition = (position_group % 2).astype(float) if grouped else np.zeros(x.size)
        panels = {
            "original": (truth_original, est, shade_original),
            "partition": (truth_original[order], est[order], shade_partition),
        }
        stated = getattr(snap, "stated", None) or {}
        band = (stated["low"], stated["high"]) if "low" in stated else None
        k = max(1, math.ceil(x.size / MAX_DRAWN_BINS))
        self.data = {"block": k, "n_groups": part.n_groups}
        frame = []
        for key, (t, r, s) in panels.items():
            t, r, s = _block_means(t, k), _block_means(r, k), _block_means(s, k)
            pos = np.arange(t.size)
            self.lines[key, "true"].set_data(pos, t)
            self.lines[key, "released"].set_data(pos, r)
            for side, values in zip(("low", "high"), band or (None, None)):
                if values is None:
                    self.lines[key, side].set_data([], [])
                else:
                    b = _block_means(values if key == "original" else values[order], k)
                    self.lines[key, side].set_data(pos, b)
            self.shades[key].set_data(s[None, :] * 2)
            self.shades[key].set_extent((-0.5, t.size - 0.5, 0, 1))
            lo, hi = float(min(t.min(), r.min())), float(max(t.max(), r.max()))
            span = 0.05 * (hi - min(lo, 0.0) or 1.0)
            frame.append((t.size, -nice_ceiling(-lo + span) if lo < 0 else 0.0, nice_ceiling(hi + span)))
            self.data[key] = {"true": t, "released": r, "shade": s}
        sorted_note = "sorted (unattributed release)" if rel.unattributed else "original order"
        block_note = f", means of {k} bins" if k > 1 else ""
        titles = (f"{snap.settings.dataset}: true vs released, {sorted_note}{block_note}; groups shaded",
                  "partition order (the sorter's order; each group is a run)" if not part.is_identity_order()
                  else "partition order (= original order: no sorter)")
        key = (tuple(frame), titles)
        if key != self._frame_key:
            for ax, (size, lo, hi), title in zip(self.axes.values(), frame, titles):
                ax.set_xlim(-0.5, size - 0.5)
                ax.set_ylim(lo, hi if hi > lo else lo + 1.0)
                ax.set_title(title, fontsize=9)
            self.canvas.draw()                      # animated artists are left out of the background
            self._background = self.canvas.copy_from_bbox(self.fig.bbox)
            self._frame_key = key
            self.redraws += 1
        self.canvas.restore_region(self._background)
        for name, ax in self.axes.items():
            ax.draw_artist(self.shades[name])
            ax.draw_artist(self.lines[name, "true"])
            ax.draw_artist(self.lines[name, "released"])
            ax.draw_artist(self.lines[name, "low"])
            ax.draw_artist(self.lines[name, "high"])
        self.axes["original"].draw_artist(self.legend)

    def export(self, fmt: str = "png", dpi: int = 150) -> bytes:
        """The figure as a file (``"png"`` or ``"svg"``), drawn in full at ``dpi``.

        Saving draws every artist, the animated data lines included; the live canvas is untouched.
        """
        if fmt not in ("png", "svg"):
            from ..errors import DPHistError
            raise DPHistError(f"a figure exports as png or svg, not {fmt!r}")
        buf = io.BytesIO()
        self.fig.savefig(buf, format=fmt, dpi=dpi)
        return buf.getvalue()

    def png(self) -> bytes:
        from PIL import Image
        buf = io.BytesIO()
        Image.frombuffer("RGBA", self.canvas.get_width_height(), self.canvas.buffer_rgba(), "raw", "RGBA", 0, 1) \
            .save(buf, format="png", compress_level=1)
        return buf.getvalue()


class GridFigure:
    """A 2-D release: the true grid and the release as heat maps side by side on one symmetric-log colour
    scale (negative noisy cells blue), the release's groups outlined (:func:`dphist.plots.heat_panel`, as
    :func:`dphist.plots.release_heatmap` draws them).  Same interface as :class:`HistogramFigure`
    (``update``, ``png``, ``export``, ``data``).

    Speed (blitting, as :class:`HistogramFigure`): the axes, their ticks, the colour bar and the true grid's
    heat map are drawn once per grid shape, colour scale and true grid and kept as a background bitmap; an
    update sets the released image's data, the outline segments of the one ``LineCollection`` and the
    titles, restores the background and draws only those artists.  Both images share one norm, changed in place (a new norm per image made
    matplotlib redo the colour bar twice per update).  The colour scale's top is the largest absolute
    count of the two grids rounded up to 1, 2 or 5 x 10^k (:func:`nice_ceiling`: the colour bar and its
    ticks change only in steps, like the histogram view's axis limits).  Tick text was most of
    matplotlib's time (``benchmarks/bench_widgets.py``)."""

    def __init__(self, width: float = 9.5, height: float = 4.6, dpi: int = 80):
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        self.fig = Figure(figsize=(width, height), dpi=dpi)
        self.canvas = FigureCanvasAgg(self.fig)
        self.fig.subplots_adjust(left=0.06, right=0.9, top=0.9, bottom=0.1, wspace=0.25)
        self.axes = {"truth": self.fig.add_subplot(1, 2, 1), "released": self.fig.add_subplot(1, 2, 2)}
        self.colorbar_axes = self.fig.add_axes((0.92, 0.15, 0.015, 0.7))
        self.images: dict = {}
        self.outlines = None         #: the groups' LineCollection (one, its segments replaced per update)
        self._norm = None
        self._frame_key = None       #: (shape, colour-scale top) the background was drawn for
        self._truth = None           #: the true grid the background shows
        self._background = None
        self._colorbar = None
        self.redraws = 0             #: full redraws (background) so far
        self.data: dict = {}

    def _build(self, shape, truth, released, top) -> None:
        """Axes, images and colour bar for a grid of ``shape`` (the images animated: not in the background)."""
        from matplotlib.collections import LineCollection

        from ..plots import heat_panel
        for ax in self.axes.values():
            ax.clear()
            ax.tick_params(labelsize=8)
        self.images = {key: heat_panel(self.axes[key], grid, None, True, top)[0]
                       for key, grid in (("truth", truth), ("released", released))}
        self._norm = self.images["released"].norm
        self.images["truth"].set_norm(self._norm)
        self.images["released"].set_animated(True)
        self.outlines = LineCollection([], colors="black", linewidths=0.6, label="groups", animated=True)
        self.axes["released"].add_collection(self.outlines, autolim=False)
        for ax in self.axes.values():
            ax.title.set_animated(True)
        self.colorbar_axes.clear()
        self._colorbar = self.fig.colorbar(self.images["released"], cax=self.colorbar_axes)
        self._colorbar.ax.tick_params(labelsize=7)

    def update(self, snap: Snapshot) -> None:
        from ..plots import MAX_OUTLINED_GROUPS, group_outlines
        rel = snap.release
        truth, released = np.asarray(snap.true).reshape(rel.shape), rel.grid
        top = nice_ceiling(max(float(np.abs(truth).max()), float(np.abs(released).max()), 1.0))
        if rel.shape != self._shape_drawn:
            self._build(rel.shape, truth, released, top)
            self._frame_key = None
        same_truth = self._truth is not None and np.array_equal(self._truth, truth)
        self.images["released"].set_data(released)
        groups = rel.partition.n_groups
        if groups > MAX_OUTLINED_GROUPS:
            self.outlines.set_segments([])
            note = f" ({groups} groups, not outlined)"
        else:
            self.outlines.set_segments(group_outlines(rel.partition.labels().reshape(rel.shape)))
            note = f" ({groups} groups)"
        shape = " x ".join(map(str, rel.shape))
        self.axes["truth"].set_title(f"{snap.settings.dataset}: true counts ({shape} grid)", fontsize=9)
        self.axes["released"].set_title(f"released{note}", fontsize=9)
        if (rel.shape, top) != self._frame_key or not same_truth:
            self.images["truth"].set_data(truth)
            self._truth = truth.copy()
            with self._norm.callbacks.blocked():
                self._norm.vmin, self._norm.vmax = -top, top
            self._colorbar.update_normal(self.images["released"])
            spines = self.axes["released"].spines.values()
            for spine in spines:                    # drawn over the image at every update instead
                spine.set_visible(False)
            self.canvas.draw()                      # animated artists are left out of the background
            self._background = self.canvas.copy_from_bbox(self.fig.bbox)
            for spine in spines:
                spine.set_visible(True)
            self._frame_key = (rel.shape, top)
            self.redraws += 1
        self.canvas.restore_region(self._background)
        self.axes["released"].draw_artist(self.images["released"])
        for ax in self.axes.values():
            ax.draw_artist(ax.title)
        released_axes = self.axes["released"]
        released_axes.draw_artist(self.outlines)
        for spine in released_axes.spines.values():   # the frame over the image, as a full drawing has it
            released_axes.draw_artist(spine)
        self.data = {"truth": truth, "released": released, "n_groups": groups, "top": top,
                     "outline_segments": len(self.outlines.get_segments())}

    @property
    def _shape_drawn(self):
        return self._frame_key[0] if self._frame_key else None

    export = HistogramFigure.export
    png = HistogramFigure.png


def figure_for(snap: Snapshot, figures: dict):
    """The figure that draws ``snap``'s release (a :class:`GridFigure` for a grid, else the
    :class:`HistogramFigure`), made on first use and kept in ``figures`` by number of axes."""
    dims = 2 if len(snap.release.shape) == 2 else 1
    if dims not in figures:
        figures[dims] = GridFigure() if dims == 2 else HistogramFigure()
    return figures[dims]


# ------------------------------------------------------------------- HTML views
def _fmt(v: float) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.4g}"


def ledger_html(snap: Snapshot) -> str:
    """The ledger as one stacked bar per stage (segments: primitive and component, width = eps)."""
    rel = snap.release
    eps = rel.epsilon
    colours: dict[str, str] = {}
    rows = []
    for stage in SPENDING_STAGES:
        segs = snap.ledger_bars.get(stage, [])
        cells = []
        for primitive, component, e in segs:
            colour = colours.setdefault(primitive, _PRIMITIVE_COLOURS[len(colours) % len(_PRIMITIVE_COLOURS)])
            title = html.escape(f"{component}: {primitive}, eps = {e:.6g}")
            cells.append(f'<div title="{title}" style="width:{100 * e / eps:.3f}%;background:{colour};'
                         f'height:18px;color:white;font-size:10px;overflow:hidden;white-space:nowrap">'
                         f'&nbsp;{html.escape(primitive)}</div>')
        spent = sum(e for _, _, e in segs)
        rows.append(f'<tr><td style="padding-right:6px">{stage}</td>'
                    f'<td style="width:360px"><div style="display:flex;background:#f1f1f1;width:100%">'
                    f'{"".join(cells)}</div></td><td class="dphist-ledger-eps" style="padding-left:6px">'
                    f'{spent:.4g}</td></tr>')
    legend = " ".join(f'<span style="color:{c}">&#9632;</span>&nbsp;{html.escape(p)}' for p, c in colours.items())
    total = rel.ledger.total
    return (f'<div class="dphist-ledger"><b>Ledger</b> (bar width = share of eps = {eps:.6g}; '
            f'charged {total:.6g}, {len(rel.ledger)} measurement(s))'
            f'<table style="font-size:12px;line-height:1.4">{"".join(rows)}</table><div style="font-size:11px">{legend}</div></div>')


def errors_html(snap: Snapshot) -> str:
    """Errors on the chosen workload (and identity), next to the Laplace mechanism's and the predictions."""
    w = snap.settings.workload
    rows = [("this release", snap.errors["release"]), ("Laplace mechanism (same eps)", snap.errors["laplace"])]
    mse_values = [r[w]["mse"] for _, r in rows] + [snap.laplace_expected_mse]
    top = max(v for v in mse_values if np.isfinite(v)) or 1.0

    def bar(v):
        width = 0 if not np.isfinite(v) else 120 * v / top
        return f'<div style="background:#888;height:10px;width:{width:.1f}px"></div>'

    body = []
    for label, r in rows:
        body.append(f"<tr><td>{label}</td><td>{_fmt(r[w]['mse'])}</td><td>{bar(r[w]['mse'])}</td>"
                    f"<td>{_fmt(r[w]['scaled-l1'])}</td><td>{_fmt(r['identity']['mse'])}</td></tr>")
    body.append(f"<tr><td>Laplace, expected (2 mean|q| / eps&sup2;)</td><td>{_fmt(snap.laplace_expected_mse)}</td>"
                f"<td>{bar(snap.laplace_expected_mse)}</td><td>-</td>"
                f"<td>{_fmt(2 / snap.release.epsilon ** 2)}</td></tr>")
    if snap.prediction:
        p = snap.prediction
        shown = _fmt(p["mse"])
        if p.get("clamped"):
            shown = (f'<span class="dphist-prediction-clamped" title="{html.escape(p["note"])}">'
                     f'0 (estimate {_fmt(p["raw_mse"])} &lt; 0: biased low, see note)</span>')
        body.append(f"<tr><td title='{html.escape(p.get('note', ''))}'>"
                    f"error formula <code>{html.escape(str(p['formula']))}</code> ({html.escape(p['component'])}, "
                    f"on H~, prediction)</td><td>-</td><td></td><td>-</td><td>{shown}</td></tr>")
    stated = getattr(snap, "stated", None) or {}
    if "mse" in stated:
        kind = {"exact": "exact", "noise-only": "noise only, bias unknown",
                "before-postprocessing": "before post-processing"}.get(stated["kind"], stated["kind"])
        body.append(f"<tr><td title='{html.escape(stated.get('bias', ''))}'>stated by the release "
                    f"(noise variance, {html.escape(kind)})</td><td>{_fmt(stated['mse'])}</td>"
                    f"<td>{bar(stated['mse'])}</td><td>-</td><td>-</td></tr>")
    note = " (against the sorted true counts: unattributed release)" if snap.release.unattributed else ""
    footnote = ""
    if stated.get("reason"):
        footnote += (f'<div class="dphist-stated-note" style="font-size:11px;max-width:600px;white-space:normal">'
                     f'Stated error: {html.escape(stated["reason"])}</div>')
    if snap.prediction and snap.prediction.get("clamped"):
        footnote += f'<div class="dphist-prediction-note" style="font-size:11px;max-width:600px;white-space:normal">' \
                   f'Note: {html.escape(snap.prediction["note"])}</div>'
    return (f'<div class="dphist-errors"><b>Error</b> on workload <code>{html.escape(w)}</code>{note}'
            f'<table style="font-size:12px;line-height:1.4;white-space:nowrap"><tr><th></th><th>MSE</th><th></th>'
            f'<th>scaled L1</th><th>identity MSE</th></tr>{"".join(body)}</table>{footnote}</div>')


def status_html(snap: Snapshot) -> str:
    """Mode, seed warning, timing, and the release's warnings."""
    rel = snap.release
    mode = getattr(rel, "mode", None) or ("research" if snap.settings.seed.strip() else "release")
    if snap.settings.seed.strip():
        head = (f'<span style="color:#a05a00"><b>research mode</b> (seed {html.escape(snap.settings.seed.strip())}): '
                "reproducible; a seeded release must never be published</span>")
    else:
        head = f"<b>{html.escape(mode)} mode</b> (no seed: fresh randomness at every update)"
    warnings = "".join(f'<div style="color:#a00">warning: {html.escape(w)}</div>'
                       for w in getattr(rel, "warnings", []) or [])
    return (f'<div class="dphist-status">{head}; algorithm <code>{html.escape(rel.spec.get("name", ""))}</code>, '
            f"eps = {rel.epsilon:.4g}, {rel.partition.n_groups} group(s), noise {html.escape(str(rel.noise))}, computed in {1000 * snap.seconds:.0f} ms{warnings}</div>")


def message_html(message: str, head: str = "Cannot run this setting") -> str:
    return (f'<div class="dphist-message" style="color:#a00;border:1px solid #a00;padding:4px">'
            f"<b>{html.escape(head)}:</b> {html.escape(message)}</div>")
