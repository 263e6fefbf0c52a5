"""The ``auto`` preset: measure features privately, let the trained tree choose, run the choice.

``make_algorithm("auto", workload="prefix")`` returns an :class:`AutoPipeline`.  Its feature share is the
model's for the workload (the packaged 1-D model's: identity 0.02, prefix 0.05, dpbench-random-2000 0.05, each
the share of least regret on nested training folds; the grid model's 0.1 for each), or ``share=`` when given.
A run with ``epsilon``:

1. checks the input and copies it into the run's kernel once (:meth:`Pipeline.prepare`) and spends
   ``share * epsilon`` on the private features through it (:mod:`dphist.selection.features`: the noisy
   total and three noisy measures of non-uniformity), charged under the stage ``selector``;
2. forms the tree's input from them and the public values (domain size, the epsilon left for the
   chosen preset, the workload picks the tree) and walks the tree (post-processing);
3. runs the chosen preset's stages with ``(1 - share) * epsilon`` on the same kernel
   (:meth:`Pipeline.execute`): no second validation, copy or ledger.

Before step 1, the model's public skip rule (:func:`rule_cell`, learned by
:func:`dphist.selection.train.skip_cells`) is looked up from public values alone: the domain size and
``epsilon``.  Where training found a candidate run with the *whole* epsilon better (lower mean training
regret) than the tree run with ``(1 - share) epsilon``, that candidate runs with the whole epsilon: no
feature is measured, the ledger has the chosen preset's stages only, and ``notes["auto"]["rule"]`` gives
the cell and the training regrets that justified it.

Sequential composition (Dwork & Roth 2014, Thm 3.14) makes the whole run ``epsilon``-DP.  The release
is the chosen preset's, with the ledger of both parts (the features under the stage ``selector``), and
``notes["auto"]`` names the preset, the features, the tree's path and any fallback.  Both parts draw
from the run's one noise source (seeded in research mode, the operating system's in release mode).

On a grid (2-D, the shape public) the same steps run with the grid's features (the statistics over
blocks of the grid, :func:`dphist.selection.features.grid_statistics`) and the 2-D model
(``auto-2d.json``: trees over the ten presets of DPBench's 2-D sweep, the linearised AHP-2D and DAWA-2D included, trained on
the DPBench 2-D sources; the workload names the rectangles of that name, :func:`dphist.workloads.make_rectangles`).

A model is a JSON file (:func:`load_model`): one tree per workload, its candidate presets, its skip rule
(per domain size or cell count and epsilon of the training sweep, with every candidate's and the tree's
training regret), its feature share (the share its tree and skip rule were trained at: ``auto``'s default for
the workload), the number of axes it serves (``dims``), the format version and the training configuration.  A
leaf whose preset is not installed (its plugin is missing) falls back to the installed candidate of least training regret in that leaf, with a note.
"""
from __future__ import annotations

import copy
import hashlib
import json
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..components.base import Context, Finalizer
from ..errors import InvalidParameter, PrivacyViolation
from ..params import UNIT_SHARE, InstanceOf
from ..partition import Partition
from ..pipeline import Pipeline, Release
from ..presets import make_algorithm, preset
from ..registry import default_registry
from .features import FEATURE_NAMES, ShapeStatistics, feature_row, measure
from .regret_tree import LEAF, RegretTree

#: the JSON format name and version of selector models this code reads
MODEL_FORMAT = "dphist-selector"
MODEL_VERSION = 4
#: the packaged 1-D model and its training configuration (``make selector`` rebuilds it)
DEFAULT_MODEL = Path(__file__).with_name("auto-1d.json")
TRAINING_CONFIG = Path(__file__).with_name("auto-1d.training.toml")
#: the packaged 2-D model (grids) and its training configuration
DEFAULT_MODEL_2D = Path(__file__).with_name("auto-2d.json")
TRAINING_CONFIG_2D = Path(__file__).with_name("auto-2d.training.toml")
#: the share of epsilon spent on the features where a model does not name its own: the grid model's
#: (``share=None``, auto's default, takes each workload's share from the model: the packaged 1-D model's are
#: identity 0.02, prefix 0.05, random ranges 0.05, :data:`dphist.selection.train.SHARES_1D`)
DEFAULT_SHARE = 0.1
#: the ledger's stage of the feature measurements
SELECTOR_STAGE = "selector"


class FeatureFinalizer(Finalizer):
    """Measures the selector's private features with the whole budget it is given; publishes the
    noisy total spread evenly (the uniform estimate), the features go to ``ctx.notes["features"]``."""

    name = "selection.features"
    citation = "Kotsogiannis, Machanavajjhala, Hay, Miklau, SIGMOD 2017 (Pythia's feature extraction)"
    vetted_mechanisms = (ShapeStatistics.name,)

    def finalize(self, bins: Partition, ctx: Context) -> np.ndarray:
        features = measure(ctx.data, ctx.n, ctx.budget, ctx.shape)
        ctx.notes["features"] = features
        return np.full(ctx.n, max(features["total"], 0.0) / ctx.n)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_model(path=None, dims: int = 1) -> dict:
    """The selector model at ``path`` (default: the packaged one for ``dims`` axes), checked: a clear
    error when the file is missing, not JSON, of another format or version, malformed, or made for
    another number of axes."""
    default = DEFAULT_MODEL if dims == 1 else DEFAULT_MODEL_2D
    path = default if path is None else Path(path)
    try:    # read and checked once per file version: the cache key holds its modification time and size
        st = path.stat()
        version = (st.st_mtime_ns, st.st_size)
    except OSError:
        version = None
    model = _load_model(str(path.resolve()) if version is not None else str(path), version)
    if model["dims"] != dims:
        raise InvalidParameter(f"selector model file {model['path']} serves {model['dims']}-D histograms, "
                               f"not {dims}-D (give it as {'model' if model['dims'] == 1 else 'grid_model'}=)")
    return model


@lru_cache(maxsize=8)
def _load_model(path: str, version=None) -> dict:
    p = Path(path)
    if not p.is_file():
        hint = " (rebuild the packaged one with `make selector`)" if p in (DEFAULT_MODEL, DEFAULT_MODEL_2D) else ""
        raise InvalidParameter(f"selector model file {p} does not exist{hint}")
    try:
        model = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidParameter(f"selector model file {p} is not readable JSON: {exc}") from None
    if not isinstance(model, dict) or model.get("format") != MODEL_FORMAT:
        raise InvalidParameter(f"selector model file {p} is not a {MODEL_FORMAT} model")
    if model.get("version") != MODEL_VERSION:
        raise InvalidParameter(f"selector model file {p} has version {model.get('version')!r}; this dphist "
                               f"reads version {MODEL_VERSION} (each workload's feature share stored in the "
                               f"model; retrain it with `make selector`)")
    if list(model.get("feature_names", ())) != list(FEATURE_NAMES):
        raise InvalidParameter(f"selector model file {p} was trained on features {model.get('feature_names')}, "
                               f"this dphist measures {list(FEATURE_NAMES)}")
    workloads = model.get("workloads")
    if not isinstance(workloads, dict) or not workloads:
        raise InvalidParameter(f"selector model file {p} has no trees")
    trees = {}
    for wl, entry in workloads.items():
        try:
            tree = RegretTree.from_dict(entry["tree"])
            presets = {label: (spec["name"], dict(spec.get("params", {}))) for label, spec in entry["presets"].items()}
            leaf_regret = np.asarray(entry["leaf_regret"], dtype=float)
            share = entry["share"]
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidParameter(f"selector model file {p}, workload {wl!r}: malformed ({exc})") from None
        if set(tree.labels) != set(presets) or leaf_regret.shape != (tree.feature.size, len(tree.labels)):
            raise InvalidParameter(f"selector model file {p}, workload {wl!r}: its tree's labels, presets and "
                                   "leaf regrets do not match")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
            raise InvalidParameter(f"selector model file {p}, workload {wl!r}: its feature share must be a "
                                   f"number strictly between 0 and 1, got {share!r}")
        trees[wl] = {"tree": tree, "presets": presets, "leaf_regret": leaf_regret, "explain": _Explainer(tree),
                     "share": float(share),
                     "skip": _skip_rule(entry.get("skip"), tree.labels, f"selector model file {p}, workload {wl!r}")}
    dims = model.get("dims", 1)
    if dims not in (1, 2):
        raise InvalidParameter(f"selector model file {p}: dims must be 1 or 2, got {dims!r}")
    return {"path": str(p), "sha256": _sha256(p), "trees": trees, "training": model.get("training", {}),
            "dims": dims}


class _Explainer:
    """A tree's choice for one input and its path text, as :meth:`RegretTree.walk` gives them: the leaf
    found by comparisons alone, the text from each leaf's steps kept once per loaded tree (every leaf
    has one path: the features, the tests and the thresholds' text; only the input's values are
    formatted per run)."""

    def __init__(self, tree: RegretTree):
        self.nodes = (tree.feature.tolist(), tree.threshold.tolist(), tree.left.tolist(), tree.right.tolist())
        feature, threshold, left, right = self.nodes
        self.steps: dict[int, tuple] = {}
        stack = [(0, ())]
        while stack:
            node, steps = stack.pop()
            f = feature[node]
            if f == LEAF:
                self.steps[node] = (steps, f"leaf {node}: {tree.labels[tree.label[node]]} (training regret "
                                           f"{tree.regret[node]:.3g} over {tree.cells[node]} training rows)")
                continue
            head, t = f"{tree.feature_names[f]} = ", threshold[node]
            stack.append((left[node], steps + ((f, head, f" <= {t:.4g}"),)))
            stack.append((right[node], steps + ((f, head, f" > {t:.4g}"),)))

    def __call__(self, x) -> tuple[int, list[str]]:
        """``(leaf, path)`` of the input ``x`` (a list of floats, :data:`FEATURE_NAMES`)."""
        feature, threshold, left, right = self.nodes
        node = 0
        while feature[node] != LEAF:
            node = left[node] if x[feature[node]] <= threshold[node] else right[node]
        steps, last = self.steps[node]
        return node, [head + format(x[f], ".4g") + tail for f, head, tail in steps] + [last]


def _leaf_choices(entry: dict, installed) -> dict:
    """Per leaf of a loaded tree: ``(label, preset, params, note)``, the leaf's candidate if its preset is
    installed, else the installed candidate of least training regret in that leaf, with the note saying so
    (the same for every input reaching the leaf: kept per pipeline, whose installed presets are fixed)."""
    tree, presets, out = entry["tree"], entry["presets"], {}
    for leaf in np.flatnonzero(tree.feature == LEAF).tolist():
        label, note = tree.labels[tree.label[leaf]], ""
        if label not in installed:
            order = np.argsort(entry["leaf_regret"][leaf], kind="stable")
            fallback = next(tree.labels[i] for i in order if tree.labels[i] in installed)
            note = (f"the tree chose {label}, whose preset {presets[label][0]} is not installed; ran "
                    f"{fallback}, the installed candidate of least training regret in that leaf")
            label = fallback
        out[leaf] = (label, *presets[label], note)
    return out


def _skip_rule(rule, labels, where: str):
    """The public skip rule of a model entry, checked: ``None`` (no rule) or ``{"domains", "epsilons"}``
    (the training grid, increasing) and ``"cells"`` keyed by ``(domain, epsilon)``."""
    if rule is None:
        return None
    try:
        domains = [int(d) for d in rule["domains"]]
        epsilons = [float(e) for e in rule["epsilons"]]
        cells = {}
        for c in rule["cells"]:
            regret = [float(r) for r in c["regret"]]
            cell = {"domain": int(c["domain"]), "epsilon": float(c["epsilon"]), "settings": int(c["settings"]),
                    "tree_regret": float(c["tree_regret"]), "regret": regret, "label": c["label"]}
            if (cell["domain"] not in domains or cell["epsilon"] not in epsilons or len(regret) != len(labels)
                    or (cell["label"] is not None and cell["label"] not in labels)):
                raise ValueError(f"cell {cell['domain']}:{cell['epsilon']:g} does not match the grid or the labels")
            cells[(cell["domain"], cell["epsilon"])] = cell
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidParameter(f"{where}: malformed skip rule ({exc})") from None
    if not domains or not epsilons or min(domains) < 1 or min(epsilons) <= 0 \
            or any(a >= b for a, b in zip(domains, domains[1:])) or any(a >= b for a, b in zip(epsilons, epsilons[1:])):
        raise InvalidParameter(f"{where}: the skip rule's domains and epsilons must be positive and increasing")
    return {"domains": domains, "epsilons": epsilons, "cells": cells}


def _nearest_on_grid(grid, value: float):
    """The value of ``grid`` (increasing, positive) nearest ``value`` in log scale (a value at a geometric
    midpoint goes to the lower one), or None outside ``[grid[0], grid[-1]]`` (relative tolerance 1e-9)."""
    if not grid[0] * (1 - 1e-9) <= value <= grid[-1] * (1 + 1e-9):
        return None
    return grid[int(np.searchsorted(_log_midpoints(tuple(grid)), np.log(value), side="left"))]


@lru_cache(maxsize=32)
def _log_midpoints(grid: tuple) -> np.ndarray:
    """The geometric midpoints of neighbouring values of ``grid``, as logs (per grid: public)."""
    logs = np.log(np.asarray(grid, dtype=float))
    return (logs[:-1] + logs[1:]) / 2


def rule_cell(rule, n: int, epsilon: float):
    """The training cell of the skip rule ``rule`` (a loaded model entry's ``"skip"``) that covers a run on
    ``n`` bins (cells) with ``epsilon``, or None.

    A cell covers the domain sizes and epsilons nearest its own in log scale, the ranges split at the
    geometric midpoints of neighbouring grid values (the training grid is geometric: 256 / 1,024 / 4,096
    bins, epsilon 0.01 / 0.1 / 1); outside the trained range of either no cell does, and the tree
    chooses.  Why: a rule replaces the tree's data-dependent choice by a fixed preset on the strength of
    the training settings in its cell alone; inside the grid the nearest cell's trade-off (the features'
    cost against what the tree's choice gains) is the one measured closest, while beyond its ends nothing
    brackets the value and the balance moves with the signal (scale x epsilon) and the domain size, so
    ``auto`` keeps its measured default there."""
    if rule is None:
        return None
    d = _nearest_on_grid(rule["domains"], n)
    e = None if d is None else _nearest_on_grid(rule["epsilons"], epsilon)
    if e is None:
        return None
    return rule["cells"].get((d, e))


def runs_on_a_prepared_kernel(pipe) -> bool:
    """Can ``auto`` run ``pipe`` on its own kernel (:meth:`Pipeline.execute` after the features)?  Plain
    pipelines, and linearised 1-D pipelines on a grid (:meth:`dphist.linearise.Linearised.execute`
    reorders the kernel's cells, same noise source and ledger)."""
    from ..linearise import Linearised
    if type(pipe) is Linearised:
        return True
    return type(pipe).execute is Pipeline.execute and type(pipe).run is Pipeline.run


def installed_labels(presets: dict, registry=None) -> list[str]:
    """The candidate labels whose preset is registered and available (its plugins installed)."""
    registry = registry or default_registry
    available = set(registry.available_names("algorithm"))
    return [label for label, (name, _) in presets.items() if name in available]


class AutoPipeline(Pipeline):
    """Features with ``share * epsilon``, the tree's choice, the chosen preset with the rest; or, where the
    model's public skip rule covers the run, its preset with the whole epsilon and nothing measured."""

    def __init__(self, workload: str = "prefix", share: float | None = None, model=None, registry=None,
                 grid_model=None):
        self.model = load_model(model, dims=1)
        trees = self.model["trees"]
        if workload not in trees:
            raise InvalidParameter(f"auto: unknown workload {workload!r}; the selector model has trees for "
                                   f"{', '.join(sorted(trees))}")
        if share is not None and (isinstance(share, bool) or not isinstance(share, (int, float))
                                  or not 0 < share < 1):
            raise InvalidParameter(f"auto: share must be a number strictly between 0 and 1 (or None: the "
                                   f"model's share for the workload), got {share!r}")
        self.workload = workload
        self.registry = registry or default_registry
        self.entries = {1: self._entry(self.model, workload)}
        if not self.entries[1]["installed"]:
            raise InvalidParameter(f"auto: none of the selector's presets for {workload!r} is installed "
                                   f"({', '.join(sorted({n for n, _ in self.entries[1]['presets'].values()}))}); "
                                   "install their plugins (dphist list shows what is missing)")
        # grids: the packaged 2-D model (or the one given); without a tree for the workload or an installed
        # candidate, auto refuses grids, saying why, before anything is spent
        self.grid_model, self._grid_reason = None, "no 2-D selector model is packaged"
        if grid_model is not None or DEFAULT_MODEL_2D.exists():
            self.grid_model = load_model(grid_model, dims=2)
            entry = self._entry(self.grid_model, workload) if workload in self.grid_model["trees"] else None
            if entry is None:
                self._grid_reason = (f"its 2-D model has trees for {', '.join(sorted(self.grid_model['trees']))}, "
                                     f"not {workload!r}")
            elif not entry["installed"]:
                self._grid_reason = (f"none of the 2-D selector's presets for {workload!r} is installed "
                                     f"({', '.join(sorted({n for n, _ in entry['presets'].values()}))})")
            else:
                self.entries[2] = entry
        # the features' share per number of axes: the one given, else the model's for the workload
        self.feature_shares = {d: float(share) if share is not None else e["share"] for d, e in self.entries.items()}
        self.share = self.feature_shares[1]
        first = self.entries[1]
        self.tree, self.presets, self.leaf_regret = first["tree"], first["presets"], first["leaf_regret"]
        self.installed = first["installed"]
        self._chosen: dict = {}
        super().__init__(None, None, "singleton", FeatureFinalizer(), (0.0, 0.0, 1.0), name="auto",
                         dims=tuple(sorted(self.entries)))

    def _entry(self, model: dict, workload: str) -> dict:
        entry = model["trees"][workload]
        installed = installed_labels(entry["presets"], self.registry)
        return {"tree": entry["tree"], "presets": entry["presets"], "leaf_regret": entry["leaf_regret"],
                "installed": installed, "sha256": model["sha256"], "skip": entry["skip"],
                "explain": entry["explain"], "leaves": _leaf_choices(entry, installed), "share": entry["share"]}

    def check_dims(self, shape) -> None:
        """A grid without a usable 2-D tree is refused with the reason (before anything is spent)."""
        if len(shape) == 2 and 2 not in self.entries:
            raise InvalidParameter(f"'auto' supports 1-D histograms only for workload {self.workload!r}: "
                                   f"{self._grid_reason}; got a grid of shape {tuple(shape)}; nothing was spent")
        super().check_dims(shape)

    #: the stages are the chosen preset's, per run (``dphist describe``, stage overrides refused)
    chooses_per_run = True

    def describe_candidates(self) -> str:
        parts = [f"{d}-D candidates " + ", ".join(sorted({n for n, _ in e["presets"].values()}))
                 for d, e in sorted(self.entries.items())]
        return f"workload {self.workload}, " + "; ".join(parts)

    @property
    def spec(self):
        out = {"name": "auto", "workload": self.workload, "share": self.share,
               "model": {"sha256": self.model["sha256"], "version": MODEL_VERSION}}
        if 2 in self.entries:
            out["grid_model"] = {"sha256": self.grid_model["sha256"], "version": MODEL_VERSION,
                                 "share": self.feature_shares[2]}
        return out

    def with_shares(self, shares):
        raise InvalidParameter("auto chooses its preset (and that preset's shares) per run; give share= instead")

    # ------------------------------------------------------------------ choice
    def choose(self, total: float, stats, n: int, eps_run: float, dims: int = 1, note: str = "") -> dict:
        """The tree's choice for measured features (post-processing only): label, preset, path, note;
        ``dims`` picks the 1-D or the 2-D tree; ``note``: the skip rule's, when its preset is missing."""
        e = self.entries[dims]
        x = feature_row(total, stats, n, eps_run)
        leaf, path = e["explain"](x)
        label, name, params, fallback = e["leaves"][leaf]
        if fallback:
            note = "; ".join(filter(None, [note, fallback]))
        return {"label": label, "preset": name, "params": params, "leaf": leaf, "dims": dims,
                "path": path, "features": dict(zip(FEATURE_NAMES, x)),
                "note": note, "rule": None}

    def rule_choice(self, n: int, epsilon: float, dims: int = 1):
        """The skip rule's choice for a run on ``n`` bins with ``epsilon`` (public values only, before
        anything is measured): a choice as :meth:`choose` gives, with ``"rule"`` (the cell, the training
        regrets) and no features; or ``(None, note)`` where no rule applies (``note``: why the rule's
        preset was passed over, or empty).  A rule naming a preset that is not installed falls back to
        the installed candidate of least full-epsilon training regret in its cell, if that is still below
        the tree's; otherwise the tree chooses, with a note."""
        e = self.entries[dims]
        cell = rule_cell(e["skip"], n, epsilon)
        if cell is None or cell["label"] is None:
            return None, ""
        labels, label, note = e["tree"].labels, cell["label"], ""
        if label not in e["installed"]:
            order = np.argsort(cell["regret"], kind="stable")
            best = next(labels[i] for i in order if labels[i] in e["installed"])
            if cell["regret"][labels.index(best)] < cell["tree_regret"]:
                note = (f"the skip rule names {label}, whose preset {e['presets'][label][0]} is not installed; "
                        f"ran {best}, the installed candidate of least training regret at the whole epsilon in "
                        "that cell")
                label = best
            else:
                return None, (f"the skip rule names {label}, whose preset {e['presets'][label][0]} is not "
                              "installed, and no installed candidate beats the tree's training regret in that "
                              "cell; the tree chose")
        regret = cell["regret"][labels.index(label)]
        rule = {"domain": cell["domain"], "epsilon": cell["epsilon"], "settings": cell["settings"],
                "regret": regret, "tree_regret": cell["tree_regret"]}
        unit = "bins" if dims == 1 else "cells"
        path = [f"public rule: {n:,} {unit} and epsilon {epsilon:.4g} fall in the training cell of "
                f"{cell['domain']:,} {unit} and epsilon {cell['epsilon']:g}, where {label} run with the whole "
                f"epsilon had mean training regret {regret:.3f} against the tree's {cell['tree_regret']:.3f} "
                f"(its choices run with {1 - self.feature_shares[dims]:g} of epsilon) over {cell['settings']} "
                "training settings; no features measured"]
        name, params = e["presets"][label]
        return {"label": label, "preset": name, "params": params, "leaf": None, "dims": dims, "path": path,
                "features": {}, "note": note, "rule": rule}, note

    def chosen_pipeline(self, choice: dict) -> Pipeline:
        """The chosen preset's pipeline (built once per label, then reused).  It runs on the kernel of
        ``auto``'s run (:meth:`Pipeline.execute`), so it must be a plain :class:`Pipeline` or a
        linearised one (:func:`runs_on_a_prepared_kernel`)."""
        key = (choice.get("dims", 1), choice["label"])
        pipe = self._chosen.get(key)
        if pipe is None:
            pipe = make_algorithm(choice["preset"], registry=self.registry, **choice["params"])
            if not runs_on_a_prepared_kernel(pipe):
                raise InvalidParameter(f"auto: the selector's preset {choice['preset']} is a {type(pipe).__name__}, "
                                       "which runs its own way; auto runs plain and linearised pipelines only")
            self._chosen[key] = pipe
        return pipe

    def books(self, release: Release) -> dict[str, float]:
        """The epsilon each ledger stage must be charged in ``release`` (the kit's ledger check)."""
        from ..testing import expected_books
        choice = release.notes["auto"]
        if choice.get("rule"):      # the skip rule: the chosen preset had the whole epsilon, no features
            return expected_books(self.chosen_pipeline(choice), release.epsilon)
        share = self.feature_shares[choice.get("dims", 1)]
        eps_run = release.epsilon * (1 - share)
        out = expected_books(self.chosen_pipeline(choice), eps_run)
        out[SELECTOR_STAGE] = release.epsilon * share
        return out

    # --------------------------------------------------------------------- run
    def select(self, histogram, epsilon, seed=None, noise=None, mode=None, contributions=None):
        """The first part alone: ``(prepared run, choice)``.  The input is checked and copied into the
        run's kernel once (:meth:`Pipeline.prepare`), the features are measured through it with
        ``share * epsilon`` under the stage ``selector``, and the tree chooses; unless the public skip rule
        covers the run (:meth:`rule_choice`: its domain size and epsilon per record, ``epsilon / k`` for
        ``k`` records per person), which chooses before anything is measured."""
        prepared = self.prepare(histogram, epsilon, seed, noise, mode, contributions)
        eps = prepared.epsilon
        ruled, note = self.rule_choice(prepared.kernel.n, eps / prepared.contributions, len(prepared.shape))
        if ruled is not None:
            return prepared, ruled
        shape = prepared.shape
        share = self.feature_shares[len(shape)]
        data = prepared.kernel.handle(FeatureFinalizer.name, SELECTOR_STAGE, eps * share,
                                      vetted=FeatureFinalizer.vetted_mechanisms)
        measured = measure(data, prepared.kernel.n, eps * share, shape)
        return prepared, self.choose(measured["total"], measured["stats"], prepared.kernel.n, eps * (1 - share),
                                     dims=len(shape), note=note)

    def run(self, histogram, epsilon, seed=None, noise=None, mode=None, contributions=None) -> Release:
        t = time.perf_counter()
        prepared, choice = self.select(histogram, epsilon, seed, noise, mode, contributions)
        chosen = self.chosen_pipeline(choice)
        elapsed = time.perf_counter() - t
        eps = prepared.epsilon
        share = self.feature_shares[choice["dims"]]
        eps_features, eps_run = (0.0, eps) if choice["rule"] else (eps * share, eps * (1 - share))
        # the same kernel: one validation, one copy, one ledger; each stage is held to its share of
        # eps_run, the whole ledger (features included) to eps
        second = chosen.execute(prepared, eps_run)
        if second.ledger.total > eps * (1 + 1e-9) + 1e-15:
            raise PrivacyViolation(f"auto: the ledger totals {second.ledger.total:.6g}, more than epsilon = {eps:.6g}")
        notes = dict(second.notes)
        notes["auto"] = {"workload": self.workload, "share": share, "epsilon_features": eps_features,
                         "epsilon_chosen": eps_run, **choice, "model_sha256": self.entries[choice["dims"]]["sha256"]}
        # the chosen part's release, made for this run and held by nobody else, completed in place
        second.warnings = list(second.warnings) + ([choice["note"]] if choice["note"] else [])
        second.epsilon, second.notes, second.spec = eps, notes, {**self.spec, "chosen": second.spec}
        second.timings = {SELECTOR_STAGE: elapsed, **second.timings}
        second.pipeline = self if second.mode == "research" else None
        return second

    def __repr__(self) -> str:
        grid = f", grid_model={self.grid_model['path']!r}" if self.grid_model is not None else ""
        return f"AutoPipeline(workload={self.workload!r}, share={self.share}, model={self.model['path']!r}{grid})"

    def at_contributions(self, k: int) -> "AutoPipeline":
        from ..kernel.persons import check_contributions
        other = copy.copy(self)
        other.contributions = check_contributions(k)
        return other


@preset("auto", citation="Kotsogiannis, Machanavajjhala, Hay, Miklau, SIGMOD 2017 (Pythia)",
        params={"workload": InstanceOf(str, "a workload name the selector model has a tree for"),
                "share": (UNIT_SHARE, None),
                "model": InstanceOf((str, Path, type(None)), "a path to a 1-D selector model JSON, or None"),
                "grid_model": InstanceOf((str, Path, type(None)), "a path to a 2-D selector model JSON, or None")},
        dims=(1, 2))
def auto(workload: str = "prefix", share: float | None = None, model=None, grid_model=None) -> Pipeline:
    """Private algorithm selection: a public skip rule (domain size, epsilon), else features with share * eps and
    a trained tree, picks the preset (1-D or grids).  ``share=None``: the model's share for the workload (the
    packaged 1-D model: identity 0.02, prefix 0.05, random ranges 0.05; the grid model 0.1 for each)."""
    return AutoPipeline(workload=workload, share=share, model=model, grid_model=grid_model)


def describe(release: Release) -> str:
    """Which preset a release of ``auto`` ran and why, as text."""
    a = release.notes.get("auto")
    if a is None:
        raise InvalidParameter("this release was not made by the auto preset")
    how = "by its public skip rule" if a.get("rule") else "by its tree"
    lines = [f"auto chose {a['preset']} ({a['label']}) for workload {a['workload']} {how}: "
             f"{a['epsilon_features']:.4g} on features, {a['epsilon_chosen']:.4g} on the preset"]
    lines += [f"  {step}" for step in a["path"]]
    if a["note"]:
        lines.append(f"  note: {a['note']}")
    return "\n".join(lines)


__all__ = ["AutoPipeline", "FeatureFinalizer", "load_model", "describe", "rule_cell", "DEFAULT_MODEL", "DEFAULT_MODEL_2D",
           "DEFAULT_SHARE", "MODEL_VERSION", "TRAINING_CONFIG", "TRAINING_CONFIG_2D"]
