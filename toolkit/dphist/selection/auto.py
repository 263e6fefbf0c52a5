"""The ``auto`` preset: measure features privately, let the trained tree choose, run the choice.

``make_algorithm("auto", workload="prefix", share=0.1)`` returns an :class:`AutoPipeline`.  A run
with ``epsilon``:

1. checks the input and copies it into the run's kernel once (:meth:`Pipeline.prepare`) and spends
   ``share * epsilon`` on the private features through it (:mod:`dphist.selection.features`: the noisy
   total and three noisy measures of non-uniformity), charged under the stage ``selector``;
2. forms the tree's input from them and the public values (domain size, the epsilon left for the
   chosen preset, the workload picks the tree) and walks the tree (post-processing);
3. runs the chosen preset's stages with ``(1 - share) * epsilon`` on the same kernel
   (:meth:`Pipeline.execute`): no second validation, copy or ledger.

Sequential composition (Dwork & Roth 2014, Thm 3.14) makes the whole run ``epsilon``-DP.  The release
is the chosen preset's, with the ledger of both parts (the features under the stage ``selector``), and
``notes["auto"]`` names the preset, the features, the tree's path and any fallback.  Both parts draw
from the run's one noise source (seeded in research mode, the operating system's in release mode).

The model is a JSON file (:func:`load_model`): one tree per workload, its candidate presets, the
format version and the training configuration.  A leaf whose preset is not installed (its plugin is
missing) falls back to the installed candidate of least training regret in that leaf, with a note.
"""
from __future__ import annotations

import copy
import hashlib
import json
import time
from dataclasses import replace
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
from .features import FEATURE_NAMES, ShapeStatistics, feature_vector, measure
from .regret_tree import RegretTree

#: the JSON format name and version of selector models this code reads
MODEL_FORMAT = "dphist-selector"
MODEL_VERSION = 2
#: the packaged 1-D model and its training configuration (``make selector`` rebuilds it)
DEFAULT_MODEL = Path(__file__).with_name("auto-1d.json")
TRAINING_CONFIG = Path(__file__).with_name("auto-1d.training.toml")
#: the share of epsilon spent on the features (benchmarks/selector_eval.py measures 0.05, 0.1, 0.2)
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
        features = measure(ctx.data, ctx.n, ctx.budget)
        ctx.notes["features"] = features
        return np.full(ctx.n, max(features["total"], 0.0) / ctx.n)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_model(path=None) -> dict:
    """The selector model at ``path`` (default: the packaged one), checked: a clear error when the
    file is missing, not JSON, of another format or version, or malformed."""
    path = DEFAULT_MODEL if path is None else Path(path)
    return _load_model(str(path.resolve()) if path.exists() else str(path))


@lru_cache(maxsize=8)
def _load_model(path: str) -> dict:
    p = Path(path)
    if not p.is_file():
        hint = " (rebuild the packaged one with `make selector`)" if p == DEFAULT_MODEL else ""
        raise InvalidParameter(f"selector model file {p} does not exist{hint}")
    try:
        model = json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        raise InvalidParameter(f"selector model file {p} is not readable JSON: {exc}") from None
    if not isinstance(model, dict) or model.get("format") != MODEL_FORMAT:
        raise InvalidParameter(f"selector model file {p} is not a {MODEL_FORMAT} model")
    if model.get("version") != MODEL_VERSION:
        raise InvalidParameter(f"selector model file {p} has version {model.get('version')!r}; this dphist "
                               f"reads version {MODEL_VERSION} (retrain it with `make selector`)")
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
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidParameter(f"selector model file {p}, workload {wl!r}: malformed ({exc})") from None
        if set(tree.labels) != set(presets) or leaf_regret.shape != (tree.feature.size, len(tree.labels)):
            raise InvalidParameter(f"selector model file {p}, workload {wl!r}: its tree's labels, presets and "
                                   "leaf regrets do not match")
        trees[wl] = {"tree": tree, "presets": presets, "leaf_regret": leaf_regret}
    return {"path": str(p), "sha256": _sha256(p), "trees": trees, "training": model.get("training", {}),
            "share": model.get("share")}


def installed_labels(presets: dict, registry=None) -> list[str]:
    """The candidate labels whose preset is registered and available (its plugins installed)."""
    registry = registry or default_registry
    available = set(registry.available_names("algorithm"))
    return [label for label, (name, _) in presets.items() if name in available]


class AutoPipeline(Pipeline):
    """Features with ``share * epsilon``, the tree's choice, the chosen preset with the rest."""

    def __init__(self, workload: str = "prefix", share: float = DEFAULT_SHARE, model=None, registry=None):
        self.model = load_model(model)
        trees = self.model["trees"]
        if workload not in trees:
            raise InvalidParameter(f"auto: unknown workload {workload!r}; the selector model has trees for "
                                   f"{', '.join(sorted(trees))}")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
            raise InvalidParameter(f"auto: share must be a number strictly between 0 and 1, got {share!r}")
        self.workload, self.share = workload, float(share)
        entry = trees[workload]
        self.tree, self.presets, self.leaf_regret = entry["tree"], entry["presets"], entry["leaf_regret"]
        self.registry = registry or default_registry
        self.installed = installed_labels(self.presets, self.registry)
        if not self.installed:
            raise InvalidParameter(f"auto: none of the selector's presets for {workload!r} is installed "
                                   f"({', '.join(sorted({n for n, _ in self.presets.values()}))}); install their "
                                   "plugins (dphist list shows what is missing)")
        self._chosen: dict = {}
        super().__init__(None, None, "singleton", FeatureFinalizer(), (0.0, 0.0, 1.0), name="auto")

    #: the stages are the chosen preset's, per run (``dphist describe``, stage overrides refused)
    chooses_per_run = True

    def describe_candidates(self) -> str:
        return f"workload {self.workload}, candidates " + ", ".join(sorted({n for n, _ in self.presets.values()}))

    @property
    def spec(self):
        return {"name": "auto", "workload": self.workload, "share": self.share,
                "model": {"sha256": self.model["sha256"], "version": MODEL_VERSION}}

    def with_shares(self, shares):
        raise InvalidParameter("auto chooses its preset (and that preset's shares) per run; give share= instead")

    # ------------------------------------------------------------------ choice
    def choose(self, total: float, stats, n: int, eps_run: float) -> dict:
        """The tree's choice for measured features (post-processing only): label, preset, path, note."""
        x = feature_vector(total, stats, n, eps_run)
        leaf = int(self.tree.leaves(x)[0])
        label = self.tree.labels[self.tree.label[leaf]]
        note = ""
        if label not in self.installed:
            order = np.argsort(self.leaf_regret[leaf], kind="stable")
            fallback = next(self.tree.labels[i] for i in order if self.tree.labels[i] in self.installed)
            note = (f"the tree chose {label}, whose preset {self.presets[label][0]} is not installed; ran "
                    f"{fallback}, the installed candidate of least training regret in that leaf")
            label = fallback
        name, params = self.presets[label]
        return {"label": label, "preset": name, "params": params, "leaf": leaf,
                "path": self.tree.path(x), "features": dict(zip(FEATURE_NAMES, (float(v) for v in x))),
                "note": note}

    def chosen_pipeline(self, choice: dict) -> Pipeline:
        """The chosen preset's pipeline (built once per label, then reused).  It runs on the kernel of
        ``auto``'s run (:meth:`Pipeline.execute`), so it must be a plain :class:`Pipeline`."""
        pipe = self._chosen.get(choice["label"])
        if pipe is None:
            pipe = make_algorithm(choice["preset"], registry=self.registry, **choice["params"])
            if type(pipe).execute is not Pipeline.execute or type(pipe).run is not Pipeline.run:
                raise InvalidParameter(f"auto: the selector's preset {choice['preset']} is a {type(pipe).__name__}, "
                                       "which runs its own way; auto runs plain pipelines only")
            self._chosen[choice["label"]] = pipe
        return pipe

    def books(self, release: Release) -> dict[str, float]:
        """The epsilon each ledger stage must be charged in ``release`` (the kit's ledger check)."""
        from ..testing import expected_books
        choice = release.notes["auto"]
        eps_run = release.epsilon * (1 - self.share)
        out = expected_books(self.chosen_pipeline(choice), eps_run)
        out[SELECTOR_STAGE] = release.epsilon * self.share
        return out

    # --------------------------------------------------------------------- run
    def select(self, histogram, epsilon, seed=None, noise=None, mode=None, contributions=None):
        """The first part alone: ``(prepared run, choice)``.  The input is checked and copied into the
        run's kernel once (:meth:`Pipeline.prepare`), the features are measured through it with
        ``share * epsilon`` under the stage ``selector``, and the tree chooses."""
        prepared = self.prepare(histogram, epsilon, seed, noise, mode, contributions)
        eps = prepared.epsilon
        data = prepared.kernel.handle(FeatureFinalizer.name, SELECTOR_STAGE, eps * self.share,
                                      vetted=FeatureFinalizer.vetted_mechanisms)
        measured = measure(data, prepared.kernel.n, eps * self.share)
        return prepared, self.choose(measured["total"], measured["stats"], prepared.kernel.n, eps * (1 - self.share))

    def run(self, histogram, epsilon, seed=None, noise=None, mode=None, contributions=None) -> Release:
        t = time.perf_counter()
        prepared, choice = self.select(histogram, epsilon, seed, noise, mode, contributions)
        chosen = self.chosen_pipeline(choice)
        elapsed = time.perf_counter() - t
        eps = prepared.epsilon
        eps_features, eps_run = eps * self.share, eps * (1 - self.share)
        # the same kernel: one validation, one copy, one ledger; each stage is held to its share of
        # eps_run, the whole ledger (features included) to eps
        second = chosen.execute(prepared, eps_run)
        if second.ledger.total > eps * (1 + 1e-9) + 1e-15:
            raise PrivacyViolation(f"auto: the ledger totals {second.ledger.total:.6g}, more than epsilon = {eps:.6g}")
        notes = dict(second.notes)
        notes["auto"] = {"workload": self.workload, "share": self.share, "epsilon_features": eps_features,
                         "epsilon_chosen": eps_run, **choice, "model_sha256": self.model["sha256"]}
        warnings = list(second.warnings) + ([choice["note"]] if choice["note"] else [])
        return replace(second, epsilon=eps, notes=notes, warnings=warnings,
                       spec={**self.spec, "chosen": second.spec},
                       timings={SELECTOR_STAGE: elapsed, **second.timings},
                       pipeline=self if second.mode == "research" else None)

    def __repr__(self) -> str:
        return f"AutoPipeline(workload={self.workload!r}, share={self.share}, model={self.model['path']!r})"

    def at_contributions(self, k: int) -> "AutoPipeline":
        from ..kernel.persons import check_contributions
        other = copy.copy(self)
        other.contributions = check_contributions(k)
        return other


@preset("auto", citation="Kotsogiannis, Machanavajjhala, Hay, Miklau, SIGMOD 2017 (Pythia)",
        params={"workload": InstanceOf(str, "a workload name the selector model has a tree for"),
                "share": UNIT_SHARE,
                "model": InstanceOf((str, Path, type(None)), "a path to a selector model JSON, or None")})
def auto(workload: str = "prefix", share: float = DEFAULT_SHARE, model=None) -> Pipeline:
    """Private algorithm selection: features with share * eps, a trained tree picks the preset."""
    return AutoPipeline(workload=workload, share=share, model=model)


def describe(release: Release) -> str:
    """Which preset a release of ``auto`` ran and why, as text."""
    a = release.notes.get("auto")
    if a is None:
        raise InvalidParameter("this release was not made by the auto preset")
    lines = [f"auto chose {a['preset']} ({a['label']}) for workload {a['workload']}: "
             f"{a['epsilon_features']:.4g} on features, {a['epsilon_chosen']:.4g} on the preset"]
    lines += [f"  {step}" for step in a["path"]]
    if a["note"]:
        lines.append(f"  note: {a['note']}")
    return "\n".join(lines)


__all__ = ["AutoPipeline", "FeatureFinalizer", "load_model", "describe", "DEFAULT_MODEL", "DEFAULT_SHARE",
           "MODEL_VERSION", "TRAINING_CONFIG"]
