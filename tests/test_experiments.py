"""The experiment engine: configs, seeds, executors, resumption, analysis, plots, CLI and bad input."""
from __future__ import annotations

import argparse
import time

import numpy as np
import pytest

import dphist
from dphist import plots
from dphist.components.builtin import GroupMeanFinalizer
from dphist.errors import InvalidParameter, UnknownComponent
from dphist.experiments import Results, SweepConfig, plan, run_sweep
from dphist.experiments import analysis, cli
from dphist.experiments.cells import Cell
from dphist.experiments.demo import plan_demo
from dphist.experiments.executors import ExecutorUnavailable
from dphist.experiments.report import write_report

ZIPF = "synthetic:shape=zipf,n=256,scale=20000"
STEPS = "synthetic:shape=steps,n=128,scale=5000"


def config(**kw) -> SweepConfig:
    base = {"algorithms": ["identity", "uniform"], "datasets": [ZIPF, STEPS], "epsilons": [0.1, 1.0],
            "trials": 3, "workloads": ["identity", "prefix", "all-ranges"], "metrics": ["mse", "scaled-l1", "kl"],
            "executor": "serial"}
    base.update(kw)
    return SweepConfig.from_mapping(base)


def values(results: Results) -> list[tuple]:
    cols = ["algorithm", "dataset", "domain", "scale", "epsilon", "trial", "workload", "metric", "reference", "value"]
    return sorted(zip(*(results[c].tolist() for c in cols)))


# ------------------------------------------------------------------ configs
def test_toml_config_round_trip(tmp_path):
    p = tmp_path / "sweep.toml"
    p.write_text('algorithms = ["identity", {name = "uniform", label = "U"}]\n'
                 'datasets = ["flights-dep-minute", {name = "synthetic", shape = "zipf", n = 64}]\n'
                 'epsilons = [0.1, 1]\nscales = ["original", 1000]\ndomains = ["original"]\ntrials = 2\n'
                 '[limits.U]\ntrials = 1\n')
    cfg = SweepConfig.from_toml(p)
    assert [a.key for a in cfg.algorithms] == ["identity", "U"]
    assert cfg.datasets[1].params == {"shape": "zipf", "n": 64} and cfg.epsilons == [0.1, 1.0]
    assert cfg.scales == [None, 1000] and cfg.limits == {"U": {"trials": 1}}


@pytest.mark.parametrize("text, key", [
    ('algorithms = ["identity"]\ndatasets = ["x"]\nepsilon = [1]\n', "epsilon"),
    ('algorithms = ["identity"]\ndatasets = ["x"]\nepsilons = [-1]\n', "epsilons"),
    ('algorithms = ["identity"]\ndatasets = ["x"]\ntrials = 0\n', "trials"),
    ('algorithms = ["identity"]\ndatasets = ["x"]\nscales = [0]\n', "scales"),
    ('algorithms = ["identity"]\ndatasets = ["x"]\nmetrics = ["rmse"]\n', "metrics"),
    ('algorithms = ["identity"]\ndatasets = ["x"]\nexecutor = "gpu"\n', "executor"),
    ('algorithms = "identity"\ndatasets = ["x"]\n', "algorithms"),
    ('datasets = ["x"]\n', "algorithms"),
    ('algorithms = ["identity"]\ndatasets = ["x"]\n[limits.other]\ntrials = 1\n', "limits.other"),
    ('algorithms = ["identity"\n', "not valid TOML"),
])
def test_malformed_config_names_the_key(tmp_path, text, key):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    with pytest.raises(InvalidParameter, match=key.replace(".", r"\.")):
        SweepConfig.from_toml(p)


# ------------------------------------------------------------------ bad input
def test_unknown_algorithm_and_dataset_suggest_names():
    with pytest.raises(UnknownComponent, match="'identity'"):
        plan(config(algorithms=["identty"]))
    with pytest.raises(UnknownComponent, match="flights-distance"):
        plan(config(datasets=["flights-distanse"]))


def test_domain_reduction_must_divide():
    with pytest.raises(InvalidParameter, match="100 does not divide the source size 256"):
        plan(config(domains=[100]))


def test_unwritable_output_is_refused_before_running(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(InvalidParameter, match="not writable"):
        run_sweep(config(), output=blocker / "out", progress=False)


def test_unreachable_dask_scheduler_fails_fast_naming_it(tmp_path):
    pytest.importorskip("distributed")
    t = time.perf_counter()
    with pytest.raises(ExecutorUnavailable, match="tcp://127.0.0.1:1"):
        run_sweep(config(executor="dask", scheduler="tcp://127.0.0.1:1"), output=tmp_path / "out", progress=False)
    assert time.perf_counter() - t < 10
    assert not (tmp_path / "out").exists()          # nothing half-written


# ------------------------------------------------------------------ seeds and executors
def test_cell_seeds_come_from_coordinates():
    a = Cell("identity", "d", 16, 100, True, 0.1, 2, 0)
    b = Cell("identity", "d", 16, 100, True, 0.1, 2, 0)
    assert a.algorithm_seed() == b.algorithm_seed()
    others = [Cell("uniform", "d", 16, 100, True, 0.1, 2, 0), Cell("identity", "d", 16, 100, True, 1.0, 2, 0),
              Cell("identity", "d", 16, 100, True, 0.1, 3, 0), Cell("identity", "d", 16, 100, True, 0.1, 2, 1)]
    assert len({a.algorithm_seed(), *(c.algorithm_seed() for c in others)}) == 5
    # data streams are shared by the algorithms and epsilons of a trial (common random data)
    assert a.data_seed().entropy == others[0].data_seed().entropy
    np.testing.assert_array_equal(a.data_seed().generate_state(4), others[1].data_seed().generate_state(4))


def test_same_numbers_serial_process_and_dask(monkeypatch):
    """The process run's 48 cells go in shrinking batches (8, 7, ..., 3, 3, 2 cells): kills a split that
    loses, repeats or misplaces a cell's rows (e.g. a batch's rows matched to the wrong cells)."""
    pytest.importorskip("distributed")
    from dask.distributed import Client, LocalCluster
    from dphist.experiments import engine
    cfg = config(scales=[None, 3000], population=True)
    serial = run_sweep(cfg, output=False, progress=False).results
    cfg.executor, cfg.workers = "process", 2
    monkeypatch.setattr(engine, "BATCHES_PER_WORKER", 2)
    assert engine._batch_sizes(48, 2, "process") == [8, 7, 6, 5, 4, 3, 3, 2, 2, 2, 2, 2, 2]
    process = run_sweep(cfg, output=False, progress=False).results
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        cfg.executor = "dask"
        dask = run_sweep(cfg, output=False, progress=False, client=client).results
    assert len(serial) == 2 * 2 * 2 * 2 * 3 * (3 * 2 + 1) * 1.5    # algs x data x scales x eps x trials x rows
    assert values(serial) == values(process) == values(dask)


def _worker_blas_state():
    from dphist.experiments.executors import blas_thread_counts, limit_blas_threads
    return blas_thread_counts(), limit_blas_threads(1)


@pytest.fixture
def two_blas_threads():
    """Start from 2 BLAS threads whatever the environment (`make test` sets OPENBLAS_NUM_THREADS=1)."""
    import threadpoolctl
    from dphist.experiments.executors import blas_thread_counts
    limits = threadpoolctl.threadpool_limits(limits=2, user_api="blas")
    counts = blas_thread_counts()
    assert counts and counts == [2] * len(counts), "numpy's BLAS was not found in this process"
    yield len(counts)
    limits.restore_original_limits()


def test_blas_threads_limited_in_the_block_and_restored(two_blas_threads):
    from dphist.experiments.executors import blas_thread_counts, blas_threads_limited
    assert blas_thread_counts() == [2] * two_blas_threads
    with blas_threads_limited(1):
        assert blas_thread_counts() == [1] * two_blas_threads
    assert blas_thread_counts() == [2] * two_blas_threads


def test_limit_blas_threads_pins_only_what_is_above(two_blas_threads):
    from dphist.experiments.executors import blas_thread_counts, limit_blas_threads
    assert limit_blas_threads(1) == two_blas_threads
    assert blas_thread_counts() == [1] * two_blas_threads
    assert limit_blas_threads(1) == 0


def test_forked_workers_inherit_the_blas_limit_without_repinning(two_blas_threads):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from dphist.experiments.executors import blas_threads_limited
    if multiprocessing.get_start_method() != "fork":
        pytest.skip("workers inherit the parent's BLAS limit only when forked")
    with ProcessPoolExecutor(1) as pool:      # without the limit a worker inherits the parent's 2 threads
        counts, _ = pool.submit(_worker_blas_state).result()
    assert counts == [2] * two_blas_threads
    with blas_threads_limited(1), ProcessPoolExecutor(1) as pool:
        counts, repinned = pool.submit(_worker_blas_state).result()
    assert counts == [1] * two_blas_threads and repinned == 0


def test_a_forking_block_leaves_no_idle_blas_threads_behind(two_blas_threads):
    """Kills: the limit restored after a fork without ending the OpenBLAS threads the restore starts
    (they busy-wait ~0.1 s each, taken from whatever runs next: the serial sweep timed after a process
    sweep in the benchmark's pair); checked by hand: without the call of `blas_thread_shutdown_` the
    process has one more thread per OpenBLAS library after the block."""
    import os
    import threadpoolctl
    from dphist.experiments.executors import blas_thread_counts, blas_threads_limited
    if not any(i["internal_api"] == "openblas" for i in threadpoolctl.threadpool_info()):
        pytest.skip("the restarted threads are OpenBLAS's")

    def threads():
        return len(os.listdir("/proc/self/task"))
    with blas_threads_limited(1):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        inside = threads()            # the fork ended OpenBLAS's threads
    assert blas_thread_counts() == [2] * two_blas_threads and threads() == inside


def _worker_state(cells):
    """A stand-in for a worker's batch: one row per cell saying where and how it ran."""
    import gc
    import os
    from dphist.experiments.executors import blas_thread_counts
    return [{"pid": os.getpid(), "frozen": gc.get_freeze_count(), "blas": blas_thread_counts()} for _ in cells], False


def test_forked_workers_run_apart_with_the_parents_heap_frozen_and_one_blas_thread(two_blas_threads, monkeypatch):
    """Kills: the process executor running the batches in the parent (a silent fall-back to serial),
    forking its workers without freezing the parent's heap (a full collection in a worker then walks
    and copies every inherited page), the parent's heap left frozen afterwards, and a forked worker
    left with the parent's 2 BLAS threads (forked workers do not check it themselves; checked by hand:
    `heap_frozen(False)` fails on `frozen`, the pool outside `blas_threads_limited` on `blas`)."""
    import gc
    import multiprocessing
    import os
    from dphist.experiments import executors
    from dphist.experiments.cells import Job
    if multiprocessing.get_start_method() != "fork":
        pytest.skip("the heap is inherited only by forked workers")
    from dphist.experiments import forking
    monkeypatch.setattr(forking, "run_cells", lambda cells, job, stop_on_interrupt: _worker_state(cells))
    job = Job({}, {}, (), ("kl",), False)     # one row per cell
    cells = [Cell("identity", "d", 16, 100, False, 0.1, t, 0) for t in range(4)]
    rows = [r for _, batch_rows in executors.run_processes([cells[:2], cells[2:]], job, workers=2)
            for r in batch_rows]
    assert len(rows) == 4 and all(r["pid"] != os.getpid() for r in rows)
    assert all(r["frozen"] > 10_000 for r in rows), [r["frozen"] for r in rows]
    assert all(r["blas"] == [1] * two_blas_threads for r in rows)
    assert gc.get_freeze_count() == 0


def test_parallel_batches_cover_the_cells_once_and_shrink_at_the_end():
    """Kills: a split that drops or repeats a cell or reorders them (the data caches rely on the order),
    even batches to the end (a last batch of 9 cells on one worker while the other waits), and a tail rule that also enlarges or shrinks the first batches (a time budget
    admits batch by batch)."""
    from dphist.experiments import engine
    cells = [Cell(a, "d", 64, 100, False, e, t, 0) for a in ("identity", "uniform") for e in (0.1, 1.0, 10.0)
             for t in range(34)]                                  # 204 cells
    for workers in (2, 3):
        batches = engine._batches(cells, workers, "process")
        flat = [c for b in batches for c in b]
        assert len(flat) == len(cells) and set(flat) == set(cells)
        assert flat == sorted(cells, key=lambda c: (c.algorithm, c.epsilon, c.trial))
        sizes = [len(b) for b in batches]
        even = -(-len(cells) // (12 * workers))
        assert sizes[0] == even and sizes == sorted(sizes, reverse=True)
        assert all(s <= 2 for s in sizes[-2 * workers:]) and sum(s == even for s in sizes) >= len(sizes) // 2
    assert [len(b) for b in engine._batches(cells, 2, "serial")] == [16] * 12 + [12]


def test_a_label_given_to_another_preset_in_a_later_sweep_runs_that_preset():
    """Kills: the per-process pipeline cache keyed by the label alone (the second sweep below reran
    `identity` under the label "X" and reported its numbers as `uniform`'s)."""
    def run(name):
        cfg = config(algorithms=[{"name": name, "label": "X"}], datasets=[ZIPF], epsilons=[1.0], trials=1,
                     metrics=["mse"], workloads=["identity"])
        return run_sweep(cfg, output=False, progress=False).results["value"].tolist()
    alone = run("uniform")
    assert run("identity") != alone and run("uniform") == alone


def test_rows_are_tidy_and_scored_with_the_metrics():
    out = run_sweep(config(algorithms=["identity"], datasets=[ZIPF], epsilons=[1.0], trials=1,
                           metrics=["mse"], workloads=["identity"]), output=False, progress=False)
    (row,) = out.results.rows()
    assert row["metric"] == "mse" and row["workload"] == "identity" and row["reference"] == "sample"
    assert row["time_total"] >= row["time_finalizer"] > 0
    assert 0.5 < row["value"] / 2.0 < 1.6        # Laplace(1/eps): variance 2 per bin at eps = 1, 256 bins


def test_algorithm_seconds_sum_each_cells_pipeline_time_once():
    cfg = config(scales=[None, 3000], population=True)      # 1 or 2 references per cell: rows per cell vary
    out = run_sweep(cfg, output=False, progress=False)
    per_cell = {}
    for r in out.results.rows():
        per_cell[(r["algorithm"], r["dataset"], r["scale"], r["epsilon"], r["trial"])] = r["time_total"]
    assert len(per_cell) == out.cells_run == 2 * 2 * 2 * 2 * 3
    assert out.algorithm_seconds == pytest.approx(sum(per_cell.values()), rel=1e-12)
    assert 0 < out.algorithm_seconds < out.wall_seconds


@pytest.mark.parametrize("where", ["pipeline", "scoring"])
def test_a_failing_cell_is_named(monkeypatch, where):
    from dphist.experiments import cells
    from dphist.experiments.cells import CellFailed

    def boom(*args, **kwargs):
        raise ValueError("boom")

    class Broken:
        run = staticmethod(boom)

    if where == "pipeline":
        monkeypatch.setattr(cells, "_pipeline", lambda label, spec: Broken())
    else:
        monkeypatch.setattr(cells, "evaluate_workloads", boom)
    p = plan(config(algorithms=["identity"], datasets=[ZIPF], epsilons=[0.1], trials=1))
    with pytest.raises(CellFailed, match=r"identity on .*epsilon 0\.1, trial 0\) failed: ValueError: boom"):
        cells.run_batch(p.cells, p.job)


def test_per_algorithm_limits():
    cfg = config(limits={"uniform": {"trials": 1, "max_domain": 128}})
    p = plan(cfg)
    uni = [c for c in p.cells if c.algorithm == "uniform"]
    assert {c.domain for c in uni} == {128} and {c.trial for c in uni} == {0}
    assert any("max_domain" in s["reason"] for s in p.skipped)


# ------------------------------------------------------------------ resumption
def test_resume_skips_finished_cells_and_reruns_partial_ones(tmp_path):
    cfg = config(output=str(tmp_path / "sweep"))
    full = run_sweep(cfg, output=tmp_path / "reference", progress=False)
    first = run_sweep(config(trials=2), output=tmp_path / "sweep", progress=False)
    assert first.cells_run == 2 * 2 * 2 * 2
    csv = tmp_path / "sweep" / "results.csv"
    lines = csv.read_text().splitlines(keepends=True)
    csv.write_text("".join(lines[:-3]) + lines[-3][:20])     # a crash: last cell cut mid-line
    again = run_sweep(cfg, output=tmp_path / "sweep", progress=False)
    assert again.cells_resumed == 2 * 2 * 2 * 2 - 1
    assert again.cells_run == 2 * 2 * 2 + 1                   # the new trial, and the cut cell
    assert values(again.results) == values(full.results)
    assert run_sweep(cfg, output=tmp_path / "sweep", progress=False).cells_run == 0
    assert run_sweep(cfg, output=tmp_path / "sweep", progress=False, force=True).cells_run == len(plan(cfg).cells)
    assert (tmp_path / "sweep" / "results.json").exists() and (tmp_path / "sweep" / "config.json").exists()


# ------------------------------------------------------------------ unattributed releases
class SortedMean(GroupMeanFinalizer):
    """Group means, published sorted (post-processing): an unattributed release for the test."""
    name = "test.sorted-mean"
    unattributed = True

    def finalize(self, bins, ctx):
        return np.sort(super().finalize(bins, ctx))


def _sweep_with_sorted_preset(**kw):
    """A sweep of ``kw`` plus the unattributed preset ``test-sorted`` (registered only for the sweep)."""
    dphist.register(SortedMean, replace=True)

    @dphist.preset("test-sorted")
    def sorted_preset():
        return dphist.Pipeline(None, None, "singleton", "test.sorted-mean", (0, 0, 1))
    dphist.default_registry.register(sorted_preset, kind="algorithm", replace=True)
    try:
        return run_sweep(config(**kw), output=False, progress=False)
    finally:
        dphist.default_registry.unregister("algorithm", "test-sorted")
        dphist.default_registry.unregister("finalizer", "test.sorted-mean")


def test_unattributed_releases_are_scored_against_sorted_truth():
    out = _sweep_with_sorted_preset(algorithms=["identity", "test-sorted"], datasets=[STEPS], epsilons=[1.0],
                                    metrics=["mse"], workloads=["identity"])
    srt = out.results.filter(algorithm="test-sorted")
    assert srt["unattributed"].all()
    # sorting noisy counts against sorted truth cannot do worse than the Laplace mechanism per bin
    assert srt["value"].mean() < out.results.filter(algorithm="identity")["value"].mean()


def test_unattributed_releases_are_never_ranked_with_attributed_ones(tmp_path):
    # Kills: dropping the comparability filter from regret, time_error_points (skyline), the error
    # tables/figures or the report; the sorted preset scored against sorted truth would then win
    # (its error is far below the Laplace mechanism's) and sit in the attributed rankings.
    out = _sweep_with_sorted_preset(algorithms=["identity", "uniform", "test-sorted"], datasets=[STEPS],
                                    epsilons=[0.1, 1.0], trials=2, metrics=["mse"], workloads=["prefix"])
    r = out.results
    assert analysis.unattributed_algorithms(r) == ["test-sorted"]
    attributed = {"identity", "uniform"}
    assert set(analysis.regret(r, "mse", "prefix")) == attributed
    assert set(analysis.regret(r, "mse", "prefix", unattributed=True)) == {"test-sorted"}
    assert analysis.regret(r, "mse", "prefix", unattributed=True)["test-sorted"]["max"] == 1.0
    for eps in (0.1, 1.0):
        assert set(analysis.time_error_points(r, "mse", "prefix", epsilon=eps)) == attributed
        assert set(plots.error_table_data(r, "mse", "prefix", eps)[0]) == attributed
    # the figures that put methods side by side draw only the attributed class
    labels = {t.get_text() for ax in plots.skyline(r, "mse", "prefix", 1.0).axes for t in ax.texts}
    assert labels == attributed
    legend = {ln.get_label() for ax in plots.error_vs_epsilon(r, "mse", "prefix").axes for ln in ax.containers}
    assert "test-sorted" not in str(legend)
    text = write_report(r, tmp_path).read_text()
    head, _, tail = text.partition("## Unattributed releases")
    assert tail, "the unattributed preset has a section of its own"
    rankings = head[head.index("## Mean mse on prefix"):]        # tables, regret, skyline of the attributed
    assert "identity" in rankings and "test-sorted" not in rankings
    assert any(ln.startswith("| test-sorted") for ln in tail.splitlines())
    assert "nothing to rank it against" in tail and not (tmp_path / "figures" / "unattributed-skyline.png").exists()


def test_an_algorithm_with_both_kinds_of_release_cannot_be_ranked():
    out = _sweep_with_sorted_preset(algorithms=["identity", "test-sorted"], datasets=[STEPS], epsilons=[1.0],
                                    trials=1, metrics=["mse"], workloads=["prefix"])
    cols = dict(out.results.columns)
    cols["algorithm"] = np.array(["same"] * len(out.results), dtype=object)
    with pytest.raises(InvalidParameter, match="both attributed and unattributed"):
        analysis.regret(Results(cols), "mse", "prefix")


# ------------------------------------------------------------------ analysis
def test_skyline_marks_dominated_methods():
    on = analysis.skyline({"fast": (1, 10), "accurate": (10, 1), "both-worse": (11, 11), "tie": (1, 10)})
    assert on == {"fast": True, "accurate": True, "both-worse": False, "tie": True}


def test_skyline_names_stay_inside_their_panel():
    """Kills: names of the slowest presets drawn to the right of their point, off the panel (the
    README's demo figure cut "kellaris.O+S1" at the edge)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = plots.skyline(_points_results({"fast": (1e-4, 10.0), "middle": (1e-2, 5.0),
                                         "a-very-long-preset-name.S1+PMM": (1.0, 1.0),
                                         "another-long-dominated-name": (0.9, 20.0)}), epsilon=0.1)
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    right = ax.get_window_extent(renderer).x1
    names = {t.get_text(): t for t in ax.texts}
    assert set(names) == {"fast", "middle", "a-very-long-preset-name.S1+PMM", "another-long-dominated-name"}
    for name, text in names.items():
        assert text.get_window_extent(renderer).x1 <= right, name


def test_regret_is_ratio_to_best_per_setting():
    rows = []
    for alg, errs in {"a": (1.0, 4.0), "b": (2.0, 2.0)}.items():
        for eps, e in zip((0.1, 1.0), errs):
            rows.append({"algorithm": alg, "dataset": "d", "domain": 4, "scale": 10, "epsilon": eps, "trial": 0,
                         "seed": 0, "sampled": False, "unattributed": False, "workload": "prefix", "metric": "mse",
                         "reference": "sample", "value": e, **{c: 0.0 for c in
                         ("time_total", "time_initializer", "time_sorter", "time_partitioner", "time_finalizer")}})
    reg = analysis.regret(Results.from_rows(rows), "mse", "prefix")
    assert reg["a"]["mean"] == pytest.approx(1.5) and reg["a"]["max"] == 2.0
    assert reg["b"]["mean"] == pytest.approx(1.5) and reg["b"]["max"] == 2.0


def test_laplace_is_scale_epsilon_exchangeable():
    cfg = config(algorithms=["identity"], datasets=[ZIPF], scales=[1000, 10_000], epsilons=[0.1, 1.0],
                 trials=20, metrics=["scaled-l1"], workloads=["prefix"])
    res = run_sweep(cfg, output=False, progress=False).results
    (check,) = analysis.exchangeability(res, "identity", "scaled-l1", "prefix")   # 1000 x 1 = 10000 x 0.1
    assert check["product"] == 1000.0
    assert abs(np.log(check["spread"])) < 4 * check["relative_se"] + 0.02


# ------------------------------------------------------------------ plots and report
def test_plots_and_report(tmp_path):
    cfg = config(workloads=["prefix", "all-ranges", "ranges-10%", "ranges-50%"], scales=[None, 2000])
    out = run_sweep(cfg, output=tmp_path, progress=False)
    r = out.results
    assert len(plots.error_vs_epsilon(r).axes) >= 2
    assert plots.error_vs_range_length(r, epsilon=1.0).axes[0].lines
    assert plots.skyline(r, epsilon=0.1).axes[0].collections
    plots.save(plots.error_table(r, epsilon=1.0), tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    report = write_report(r, tmp_path, meta={"wall_seconds": out.wall_seconds})
    text = report.read_text()
    for section in ("## Mean mse on all-ranges", "## Regret (DPBench)", "## Skyline", "figures/skyline.png",
                    "figures/error-vs-scale.png"):
        assert section in text
    assert (tmp_path / "figures" / "regret.png").exists()
    assert not (tmp_path / "figures" / "skyline-by-family.png").exists()   # only when families are given
    text = write_report(r, tmp_path / "fam", families={"mine": [r.unique("algorithm")[0]]}).read_text()
    assert "figures/skyline-by-family.png" in text and (tmp_path / "fam" / "figures" / "skyline-by-family.png").exists()


def _points_results(points):
    rows = []
    for alg, (t, e) in points.items():
        rows.append({"algorithm": alg, "dataset": "d", "domain": 4, "scale": 10, "epsilon": 0.1, "trial": 0,
                     "seed": 0, "sampled": False, "unattributed": False, "workload": "all-ranges", "metric": "mse",
                     "reference": "sample", "value": e, "time_total": t,
                     **{c: 0.0 for c in ("time_initializer", "time_sorter", "time_partitioner", "time_finalizer")}})
    return Results.from_rows(rows)


def test_skyline_by_family_draws_each_family_against_the_skyline_of_all():
    """Kills: a method left out because no family lists it, a name drawn in another family's panel,
    the skyline taken within a family (``b1`` is best of its family but dominated by ``a1``: hollow)."""
    r = _points_results({"a1": (1e-3, 1.0), "a2": (1e-1, 0.5), "b1": (1e-2, 2.0), "loose": (1e-4, 50.0)})
    fig = plots.skyline_by_family(r, {"A": ["a1", "a2"], "B": ["b1", "not-run"]}, epsilon=0.1)
    panels = {ax.get_title(): ax for ax in fig.axes if ax.get_visible()}
    assert list(panels) == ["A", "B", "other"]
    assert {t.get_text() for t in panels["A"].texts} == {"a1", "a2"}
    assert {t.get_text() for t in panels["B"].texts} == {"b1"}
    assert {t.get_text() for t in panels["other"].texts} == {"loose"}
    from matplotlib.collections import PathCollection   # the points; their error bars are LineCollections
    filled = lambda ax: [bool(len(c.get_facecolors())) and c.get_facecolors()[0][3] > 0
                        for c in ax.collections[1:] if isinstance(c, PathCollection) and len(c.get_offsets()) == 1]
    assert filled(panels["A"]) == [True, True] and filled(panels["B"]) == [False] and filled(panels["other"]) == [True]
    with pytest.raises(InvalidParameter, match="no results for dataset 'nope'"):
        plots.skyline_by_family(r, {}, dataset="nope")


def test_preset_families_follow_the_registering_distribution():
    """Kills: a plugin's preset filed under the core, "dphist-" left in the panel names, core not first."""
    from dphist.experiments.demo import preset_families
    fams = preset_families(["AHP", "identity", "uniform", "DAWA", "kellaris.S1"])
    assert list(fams)[0] == "core" and fams["core"] == ["identity", "uniform"]
    assert fams["ahp"] == ["AHP"] and fams["dawa"] == ["DAWA"] and fams["kellaris"] == ["kellaris.S1"]


# ------------------------------------------------------------------ demo planning
def test_demo_budget_reduces_slow_presets_and_says_so():
    sizes = {"small": 100, "big": 1000}
    probes = {"cheap": {"times": {"small": 0.001, "big": 0.01}, "predicted": {}},
              "slow": {"times": {"small": 0.5}, "predicted": {"big": 50.0}},
              "broken": {"error": "ValueError: no"}}
    chosen, limits, notes = plan_demo(sizes, ["cheap", "slow", "broken"], budget=20, workers=2, probes=probes)
    assert chosen == ["cheap", "slow"] and "cheap" not in limits
    assert limits["slow"]["max_domain"] == 100 and 3 <= limits["slow"]["trials"] <= 10
    assert any("broken" in n and "left out" in n for n in notes) and any("slow: not run on big" in n for n in notes)


# ------------------------------------------------------------------ CLI hooks
def _parse(configure, argv):
    p = argparse.ArgumentParser()
    configure(p)
    return p.parse_args(argv)


def test_cli_bench_with_flags(tmp_path, capsys):
    args = _parse(cli.configure_bench, ["--algorithms", "identity,uniform", "--datasets", ZIPF,
                                        "--epsilons", "0.1", "1", "--trials", "2", "--executor", "serial",
                                        "--output", str(tmp_path), "--no-progress", "--seed", "5"])
    assert cli.bench(args) == 0
    out = capsys.readouterr().out
    assert "report.md" in out and (tmp_path / "results.csv").exists()
    assert set(Results.read_csv(tmp_path / "results.csv")["seed"]) == {5}


def test_cli_bench_bad_input_exit_code(tmp_path, capsys):
    (tmp_path / "c.toml").write_text('algorithms = ["identity"]\ndatasets = ["x"]\ntrails = 3\n')
    assert cli.bench(_parse(cli.configure_bench, [str(tmp_path / "c.toml")])) == 2
    assert "trails" in capsys.readouterr().err
    assert cli.bench(_parse(cli.configure_bench, ["--datasets", ZIPF])) == 2
    assert "--algorithms" in capsys.readouterr().err


def test_cli_demo_refuses_an_unwritable_folder(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert cli.demo(_parse(cli.configure_demo, ["--output", str(blocker / "report"), "--no-progress"])) == 2
    assert "not writable" in capsys.readouterr().err




def test_mean_confidence_interval_is_the_student_t_interval():
    # catches a normal quantile (1.96) in place of t's 4.303 on 2 degrees of freedom, or ddof=0
    from dphist.experiments.results import mean_confidence_interval
    mean, half = mean_confidence_interval([1.0, 2.0, 3.0])
    assert mean == 2.0
    assert half == pytest.approx(4.302652729749464 / np.sqrt(3), rel=1e-9)
    assert mean_confidence_interval([5.0]) == (5.0, float("inf"))
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(InvalidParameter, match="confidence level"):
            mean_confidence_interval([1.0, 2.0], level=bad)


def test_aggregate_carries_the_confidence_interval():
    res = Results({"algorithm": np.array(["a"] * 3, dtype=object), "value": np.array([1.0, 2.0, 3.0])})
    s = res.aggregate(["algorithm"])[("a",)]
    assert s["ci_low"] == pytest.approx(2.0 - 4.302652729749464 / np.sqrt(3))
    assert s["ci_high"] == pytest.approx(2.0 + 4.302652729749464 / np.sqrt(3))


def test_dpbench_1d_sweep_configuration_and_its_fallback(monkeypatch, tmp_path):
    """benchmarks/dpbench-1d.toml is DPBench's 1-D grid and benchmarks/dpbench_1d.py falls back to
    built-in shapes without the shared sources.  Kills: a grid key drifting from DPBench's (sources,
    scales, epsilons, domain, workload, metric), a workload-aware algorithm not given the benchmark's
    workload, or a fallback that keeps the absent DPBench names (the sweep would fail to plan)."""
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "dpbench_1d.py"
    spec = importlib.util.spec_from_file_location("dpbench_1d_under_test", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    full = SweepConfig.from_toml(bench.CONFIG)
    assert len(full.datasets) == 18 and full.domains == [4096] and full.scales == [1000, 100000, 10000000]
    assert full.epsilons == [0.01, 0.1, 1.0] and full.workloads == ["dpbench-random-2000"]
    assert full.metrics == ["scaled-l2"] and len(full.algorithms) == 13
    aware = {a.key: a.params for a in full.algorithms if a.name in ("GreedyH", "MWEM", "DAWA")}
    assert len(aware) == 3 and all(p["workload"] == "dpbench-random-2000" for p in aware.values())
    # DAWA pinned to the configuration the notebook's findings were recorded with (not the presets' default)
    assert aware["DAWA"] == {"workload": "dpbench-random-2000", "ratio": 0.25, "calibration": "postprocess"}
    monkeypatch.setenv("DPHIST_SHARED", str(tmp_path))          # a shared folder without the sources
    assert bench.dpbench_dir() is None
    config, what = bench.load_config(None)
    assert "built-in" in what and all(d.name == "synthetic" for d in config.datasets)
    small = bench.reduced(config, on_dpbench=False)
    small.algorithms = small.algorithms[:2]
    planned = plan(small)
    assert len(planned.cells) == 2 * 4 * 3 * 1 * bench.REDUCED["trials"]
